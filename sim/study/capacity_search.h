/* sim/study/capacity_search.h: capacity's search as a function over values (capacity_search.c):
 * from the estimate, doubling or halving the rate until one rate passes and one fails, then
 * bisection to the tolerance; and the judging of one rate's measurement (the p99 against the SLA,
 * or an LLM's bound on the fraction missing a token target; saturation; overload). The rates are
 * measured by the caller's probe (the CLI runs `simbatch run` children); this never prints, exits
 * or keeps state of its own: a status and one line in err. */
#ifndef SB_STUDY_CAPACITY_SEARCH_H
#define SB_STUDY_CAPACITY_SEARCH_H

#include <stddef.h>
#include <stdint.h>

#define STUDY_CAP_MAX_POINTS 200
#define STUDY_CAP_MAX_STEPS 12   /* doublings / halvings before giving up: at 1/4096 of the estimate
                                    queueing is negligible, so a p99 over the SLA there is the unloaded
                                    latency's */

enum study_cap_status {
	STUDY_CAP_OK = 0,
	STUDY_CAP_FAILED,        /* no answer (no rate passes, or none fails), or a probe failed (the machine) */
	STUDY_CAP_BAD_INPUT,     /* a probe refused its options: the user's input */
};

/* What a probe measures at one rate, over every seed. */
struct study_cap_measure {
	double p99_ms;           /* mean of the seeds' p99 latencies */
	double violation;        /* mean of the seeds' SLA violation rates */
	uint64_t missed, measured;   /* LLM: requests missing a token target, of those measured, summed over seeds */
	int saturated;           /* LLM: a seed's run could not keep up with the rate */
	int overloaded;          /* a seed's run was overloaded within a window (util/overload.h) */
};

/* One rate measured and judged. */
struct study_cap_point {
	double rate_rps;
	double p99_ms;            /* mean over seeds */
	double violation;         /* node-level: mean SLA violation rate; LLM: the fraction missing a token target */
	double bound;             /* LLM: the upper bound on that fraction */
	uint64_t missed, measured;   /* LLM: the counts the fraction is of */
	int saturated;
	int overloaded;
	int pass;
};

struct study_cap_plan {
	double estimate_rps;      /* the first rate tried (rounded to 6 significant digits) */
	double tolerance;         /* stop when hi - lo <= tolerance * lo */
	int llm;                  /* judged on the bound on the missing fraction, not the p99 */
	double sla_ms;            /* node-level: the p99 must not exceed it */
	double allowed;           /* LLM: the most the bound may be (0: none may miss) */
	double confidence;        /* LLM: the bound's confidence */
};

struct study_cap_result {
	struct study_cap_point pts[STUDY_CAP_MAX_POINTS];   /* in the order probed */
	size_t npts;
	size_t lo, hi;            /* the bracket: pts[lo] passes, pts[hi] fails */
};

/* Measures one rate into *m: STUDY_CAP_OK, or a failure status with err. */
typedef enum study_cap_status (*study_cap_probe_fn)(void *ctx, double rate, struct study_cap_measure *m, char *err,
                                                    size_t errlen);
/* Told each point as it is judged (progress); may be NULL. */
typedef void (*study_cap_point_fn)(void *ctx, const struct study_cap_point *p);

/* A rate rounded to 6 significant digits, so the printed rate is exactly the one simulated. */
double study_cap_round(double rate);
/* The point a measurement at rate makes under plan: its numbers and whether it passes. */
void study_cap_judge(const struct study_cap_plan *plan, double rate, const struct study_cap_measure *m,
                     struct study_cap_point *p);
/* The search: STUDY_CAP_OK with the points and bracket in *out, or a failure status with err (the
 * points measured so far stay in *out). */
enum study_cap_status study_capacity_search(const struct study_cap_plan *plan, study_cap_probe_fn probe,
                                            study_cap_point_fn progress, void *ctx, struct study_cap_result *out,
                                            char *err, size_t errlen);

#endif
