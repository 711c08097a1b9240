/* sim/study/scenario.h: MLPerf Inference's scenarios by name (--scenario,
 * docs/SCENARIOS.md): the arrival process each sets, and the metric and
 * latency constraint a run under it reports.
 *
 * Source: MLCommons inference_policies, inference_rules.adoc (master at
 * ac93e89, 2026-07-23), section 3 "Scenarios" (query generation, samples
 * per query, tail percentile and metric of each) and section 4.1
 * "Benchmarks" (Llama2-70b: server, "conversational", TTFT/TPOT 2000 ms /
 * 200 ms; interactive 450 ms / 40 ms, both at the 99th percentile). */
#ifndef SB_STUDY_SCENARIO_H
#define SB_STUDY_SCENARIO_H

#include <stddef.h>
#include <stdint.h>

enum study_scenario {
	SCN_NONE = 0,          /* no --scenario: the run's own arrival options */
	SCN_OFFLINE,           /* every sample at 0 s in one query; metric: measured throughput */
	SCN_SERVER,            /* Poisson arrivals at --rate; a p99 constraint (an LLM's TTFT and TPOT) */
	SCN_INTERACTIVE,       /* the server's arrivals under MLPerf's tighter LLM constraints */
	SCN_SINGLE_STREAM,     /* one query of one sample, the next when it is answered; metric: p90 latency */
	SCN_MULTI_STREAM,      /* queries of 8 samples, the next when all are answered; metric: p99 query latency */
};

struct study_scenario_def {
	const char *name;
	enum study_scenario id;
	int llm, node;             /* the model kinds it applies to */
	double percentile;         /* the tail the metric or constraint is read at (0: none, a throughput) */
	double ttft_ms, tpot_ms;   /* an LLM's constraints at that percentile (0: none) */
	const char *metric;        /* what MLPerf reports, in words */
};

#define SCN_MULTI_STREAM_SAMPLES 8   /* MLPerf: samples a multi-stream query holds */

/* The definition of name, or NULL; names every scenario joined by ", " into list (may be NULL). */
const struct study_scenario_def *study_scenario_find(const char *name);
const struct study_scenario_def *study_scenario_of(enum study_scenario id);
void study_scenario_names(char *list, size_t len);

/* The closed-loop clients a scenario runs (0: an open-loop stream) and whether they go in lockstep,
 * for a run of `requests` requests. */
uint32_t study_scenario_clients(enum study_scenario id, uint64_t requests, int *lockstep);

#endif
