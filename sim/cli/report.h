/* sim/cli/report.h: what a run prints: the JSON summary of DESIGN.md section 3
 * (the contract other tools read) and a short human-readable summary.
 *
 * Contract: the JSON keys and their meaning are DESIGN.md's (contract-check
 * tests them); numbers print with %.10g, so a value reads back as printed;
 * report_json returns malloc'd text (NULL out of memory), the others write
 * only to the stream they are given.
 */
#ifndef SB_REPORT_H
#define SB_REPORT_H

#include <stdint.h>
#include <stdio.h>
#include "../engine/engine.h"
#include "../store/results.h"
#include "../study/serving.h"

struct gpu_predicted_info;
struct study_load;

struct report_run {
	const char *policy, *model, *hw;
	double rate_rps;            /* offered rate (trace: its mean rate) */
	double arrival_cv;          /* NAN: the arrivals came from a trace */
	uint32_t concurrency;       /* > 0: closed-loop clients sent the requests (rate_rps unused) */
	double think_ms;
	uint64_t seed;
	uint64_t warmup;
	uint32_t workers;
	const struct study_serving *serving;   /* what the header states: TP, replicas, pools, router, engine, GPUs */
	uint32_t max_batch;
	double sla_ms;
	double wall_s;
	int64_t run_id;             /* -1: not stored */
	int live;                   /* 1: a live run (real kernels, the wall clock) */
	const struct drv_result *res;
	const struct mdl_model *model_def;  /* node names for per-node statistics */
	const char *engine_line;            /* --engine: what it set and prices (run_engine.h), else NULL */
	const char *extra_json;             /* members appended to the JSON object ("k":v,...), or NULL (live runs) */
	uint64_t dropped_over_context;      /* LLM: trace rows left out as beyond the model's context */
	uint32_t hw_measured_tokens;        /* LLM on a measured GPU: the largest iteration its profile measured (else 0) */
	uint32_t iter_token_budget;         /* LLM: the most tokens an iteration may run (0: no bound) */
	int sla_given;                      /* --sla was given (an LLM's summary shows the end-to-end SLA only then) */
	double ttft_slo_ms, tpot_slo_ms;    /* LLM: the targets (0: none) */
	double hw_error_median_pct, hw_error_p90_pct;   /* measured GPU: a layer's leave-one-row-out error (-1: unknown) */
	const struct gpu_predicted_info *hw_predicted;  /* node-level on a measured GPU: its GEMMs predicted (else NULL) */
	const struct gpu_moe_stats *moe;    /* a mixture of experts on a measured GPU: its routing figures (else NULL) */
	const char *moe_routing;            /* ... its routing model */
	uint32_t moe_ep;                    /* ... its expert parallelism */
	double router_refresh_ms;           /* a fleet's run (res->nreplicas > 0): the router's scrape interval */
	const struct hw_model *const *replica_hw;   /* a heterogeneous fleet: [replicas] each one's hardware, else NULL */
	const struct study_load *load;      /* an LLM's default load (sim/study/default_load.h), or NULL */
	uint64_t load_pairs;                /* ... the table's pairs it drew from (those within the context) */
	const char *kv_link, *kv_transfer;  /* a disaggregated fleet (res->prefill_replicas > 0): its link's label, when
	                                       KV moves (after, layerwise) */
};

/* The run's statistics as key/value rows (policy counters, tasks, mean batch
 * per node type), for the results database. Fills up to max; returns count.
 * Keys point into static strings or into names[] (caller-provided scratch of
 * max entries). */
size_t report_stats(const struct report_run *r, struct results_stat *out, char (*names)[80], size_t max);

/* The JSON object, one line, no trailing newline; malloc'd (caller frees);
 * NULL on allocation failure. with_run_fields = 0 leaves out wall_s and
 * run_id, the two keys that differ between identical runs. */
char *report_json(const struct report_run *r, int with_run_fields);
/* A fleet's run: each replica's share as key/value rows ("replica.K.NAME"), for
 * the results database; keys in names[] (max entries). Returns count. */
size_t report_replica_stats(const struct report_run *r, struct results_stat *out, char (*names)[80], size_t max);
void report_text(FILE *f, const struct report_run *r);

/* Overloaded: the devices never idled (busy > 99%) and served clearly less
 * than offered (< 95%): the queue grew for the whole run, so its latencies
 * depend on its length. Stored as runs.saturated and in the JSON. */
int report_saturated(const struct report_run *r);
/* What relieves an overloaded run, by its kind (report_overload.c): an LLM's --replicas (or the rate
 * `simbatch capacity` finds), a node-level model's lower --rate or more --workers; a replayed trace,
 * whose arrivals are its own, --trace-speedup below 1 instead of --rate; a closed loop, fewer clients. */
const char *report_lever(const struct report_run *r);
/* The SATURATED and OVERLOADED lines of the text summary, each with report_lever's advice; none when
 * the run was neither. */
void report_overload_text(FILE *f, const struct report_run *r);
/* An LLM's default load (report_load.c): two text lines (its rate and what it is a share of, its
 * lengths and their table), and the JSON's "default_load" member after a comma; nothing otherwise. */
void report_load_text(FILE *f, const struct report_run *r);
void report_load_json(FILE *f, const struct report_run *r);

/* Whether the run measured enough requests to support its p99 and p99.9
 * (metrics_tail_min_requests with none over, MLPerf's 99% confidence). */
struct report_tail {
	int p99, p999;
	uint64_t min_p99, min_p999;
};
struct report_tail report_tail(const struct report_run *r);

#endif
