/* sim/cli/capacity_search.h: capacity's search state, its measured points, and its report
 * (capacity_report.c): what cmd_capacity.c finds and prints. */
#ifndef SB_CAPACITY_SEARCH_H
#define SB_CAPACITY_SEARCH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CAP_MAX_POINTS 200

struct cap_point {
	double rate_rps;
	double p99_ms;            /* mean over seeds (node-level models) */
	double violation;         /* mean SLA violation rate over seeds; an LLM's fraction missing a token target */
	double bound;             /* LLM: the upper bound on that fraction */
	int saturated;            /* LLM: a seed's run could not keep up with the rate */
	int overloaded;           /* a seed's run was overloaded within a window (util/overload.h) */
	int pass;
};

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
	struct cap_point pts[CAP_MAX_POINTS];
	size_t npts;
};

struct opt_set;
struct study_cap_names;
/* Simulates every seed at rate (the probes run on s->jobs processes): 0 with the point recorded
 * in s->pts and *out, or -1 with err. */
int cap_measure(struct cap_search *s, double rate, struct cap_point **out, char *err, size_t errlen);
/* An LLM's targets into s (and a preset's into the probes' options), or a node-level model's
 * quantile: 0, or -1 with err. */
int cap_targets(const struct opt_set *o, const struct opt_set *ro, struct cap_search *s, char *err, size_t errlen);
/* The band the measured GPU's error puts on the bracket [lo, hi], to first order: 1 with it in
 * band[2], or 0 where the hardware has none. */
int cap_hw_band(const struct cap_search *s, const struct cap_point *lo, const struct cap_point *hi, double band[2]);
/* The result as one JSON object on f, no newline; capacity_id < 0: not stored (left out). */
void cap_write_json(FILE *f, const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm,
                    double est, const struct cap_point *lo, const struct cap_point *hi, int64_t capacity_id);
/* The result: one JSON object, or two lines of text, on stdout; capacity_id < 0: not stored. */
void cap_print(const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm, double est,
               const struct cap_point *lo, const struct cap_point *hi, int64_t capacity_id);
/* Stores the answer into the open database db (results_db) in one transaction: 0 with its id, or -1 with err. */
struct results_db;
int cap_store(struct results_db *db, const struct opt_set *o, const struct cap_search *s,
              const struct study_cap_names *nm, double est, const struct cap_point *lo, const struct cap_point *hi,
              int64_t *capacity_id, char *err, size_t errlen);

#endif
