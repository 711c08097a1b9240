/* sim/cli/capacity_search.h: capacity's search state, its measured points, and its report
 * (capacity_report.c): what cmd_capacity.c finds (by sim/study/capacity_search.h) and prints. */
#ifndef SB_CAPACITY_SEARCH_H
#define SB_CAPACITY_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../study/capacity_search.h"

struct cap_search {
	const char *exe;
	char **run_args;          /* pass-through run options (not owned) */
	size_t nrun_args;
	uint64_t requests, warmup, seed0, nseeds;
	double sla_ms;
	unsigned jobs;
	int quiet;
	/* an LLM's targets (llm): pass when the bound on the missing fraction is within allowed */
	int llm;
	double allowed, confidence;
	double ttft_slo_ms, tpot_slo_ms;   /* the targets (0: none) */
	uint64_t sum_missed, sum_measured;
	int any_saturated;
	int any_overloaded;       /* a seed's run named an overload window */
	double hw_error_p90;      /* the measured GPU's error (a fraction), from a probe's JSON; -1 when none */
	/* an LLM given no lengths: its probes serve the default mix (default_load.h), --trace=TABLE here */
	int default_lengths;
	char mix_trace_arg[4200];
	/* the rate being measured */
	char rate_arg[64];
	uint64_t next_seed;
	double sum_p99, sum_viol;
	uint64_t nok;
	char failure[1024];
	int bad_input;            /* a run exited 2: the options are wrong, not the search */
	char *argv_store[64 + 16];
	char fixed_args[5][96];
	size_t nfixed;
	struct study_cap_result res;   /* the rates measured, in order, and the bracket */
};

struct opt_set;
struct study_cap_names;
/* The search's probe (ctx: the cap_search): every seed simulated at rate, on s->jobs processes,
 * into *m; STUDY_CAP_OK, or a failure status with err. */
enum study_cap_status cap_probe(void *ctx, double rate, struct study_cap_measure *m, char *err, size_t errlen);
/* The search's progress (ctx: the cap_search): a rate's judgement on stderr unless quiet. */
void cap_progress(void *ctx, const struct study_cap_point *p);
/* An LLM's targets into s (and a preset's into the probes' options), or a node-level model's
 * quantile: 0, or -1 with err. */
int cap_targets(const struct opt_set *o, const struct opt_set *ro, struct cap_search *s, char *err, size_t errlen);
/* The band the measured GPU's error puts on the bracket [lo, hi], to first order: 1 with it in
 * band[2], or 0 where the hardware has none. */
int cap_hw_band(const struct cap_search *s, const struct study_cap_point *lo, const struct study_cap_point *hi,
                double band[2]);
/* The result as one JSON object on f, no newline; capacity_id < 0: not stored (left out). */
void cap_write_json(FILE *f, const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm,
                    double est, const struct study_cap_point *lo, const struct study_cap_point *hi,
                    int64_t capacity_id);
/* The result: one JSON object, or two lines of text, on stdout; capacity_id < 0: not stored. */
void cap_print(const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm, double est,
               const struct study_cap_point *lo, const struct study_cap_point *hi, int64_t capacity_id);
/* Stores the answer into the open database db (results_db) in one transaction: 0 with its id, or -1 with err. */
struct results_db;
int cap_store(struct results_db *db, const struct opt_set *o, const struct cap_search *s,
              const struct study_cap_names *nm, double est, const struct study_cap_point *lo,
              const struct study_cap_point *hi, int64_t *capacity_id, char *err, size_t errlen);

#endif
