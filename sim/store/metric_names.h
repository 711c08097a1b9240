/* sim/store/metric_names.h: the one list of a run's metric names (issue 51). Each metric has one name, the
 * path of its key in the --json summary (DESIGN.md's spelling wins: ttft_ms.p99 is "ttft_ms":{"p99":..}); the
 * text summary's labels, the results database (run_metric_values.metric), sweep --summary --metrics and the
 * pandas reader's columns all use it. docs/METRICS.md documents each once (tests/test_metric_names.py holds
 * the two equal).
 *
 * Contract: metric_names[i].id == i; a name is unique and never an alias of another; which runs have a
 * metric is its `runs` (a node-level run has no METRIC_LLM metric; an LLM run has sla_violation_rate only
 * when --sla was given, and the SLO metrics only when --ttft-slo or --tpot-slo was). */
#ifndef SB_METRIC_NAMES_H
#define SB_METRIC_NAMES_H

#include <stddef.h>

enum metric_id {
	METRIC_LATENCY_MEAN, METRIC_LATENCY_P50, METRIC_LATENCY_P90, METRIC_LATENCY_P95, METRIC_LATENCY_P99,
	METRIC_LATENCY_P999, METRIC_LATENCY_MAX, METRIC_QUEUE_MEAN, METRIC_QUEUE_P99, METRIC_SLA_VIOLATION_RATE,
	METRIC_THROUGHPUT_RPS, METRIC_MEAN_BATCH, METRIC_SATURATED,
	METRIC_TTFT_MEAN, METRIC_TTFT_P50, METRIC_TTFT_P90, METRIC_TTFT_P99,
	METRIC_TPOT_MEAN, METRIC_TPOT_P50, METRIC_TPOT_P90, METRIC_TPOT_P99, METRIC_ITL_P50, METRIC_ITL_P99,
	METRIC_INPUT_TOKENS_PER_S, METRIC_OUTPUT_TOKENS_PER_S, METRIC_INPUT_TOKENS_PER_S_PER_GPU,
	METRIC_OUTPUT_TOKENS_PER_S_PER_GPU, METRIC_USER_TOKENS_PER_S_MEAN, METRIC_USER_TOKENS_PER_S_P50,
	METRIC_GOODPUT_RPS, METRIC_GOODPUT_OUTPUT_TOKENS_PER_S, METRIC_SLO_ATTAINMENT, METRIC_KV_MEAN_FRACTION,
	METRIC_COUNT
};

enum metric_runs {
	METRIC_ALL,        /* every run (an LLM run: sla_violation_rate only with --sla) */
	METRIC_LLM,        /* an LLM run */
	METRIC_LLM_SLO,    /* an LLM run with --ttft-slo or --tpot-slo */
};

struct metric_name {
	enum metric_id id;
	const char *name;          /* the one name */
	const char *unit;          /* ms, req/s, tokens/s, fraction, requests, 0 or 1 */
	enum metric_runs runs;
	const char *alias;         /* the name sweep --metrics knew before schema 6 (still accepted), or NULL */
	const char *text;          /* where the text summary shows it, "LINE: item" (the line's first word), or NULL
	                              where the text does not (the JSON and the database do) */
	const char *meaning;       /* one line */
	const char *v5_sql;        /* where a file of schema 5 or older keeps it (r. runs, m. run_metrics, run_stats
	                              by key), for sweeps reading an older file as it is; NULL: not stored before 6 */
};

extern const struct metric_name metric_names[METRIC_COUNT];

/* The metric called name, or NULL. *by_alias (may be NULL) says it was its old sweep name. */
const struct metric_name *metric_find(const char *name, int *by_alias);
/* "node and LLM", "LLM", "LLM with SLOs": the runs a metric has values for. */
const char *metric_runs_text(enum metric_runs runs);

#endif
