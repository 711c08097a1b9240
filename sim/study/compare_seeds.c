/* sim/study/compare_seeds.c: two configurations compared with the seed as the unit (compare.h,
 * `simbatch compare --by-seed`).
 *
 * The latencies of one run are autocorrelated (a busy spell delays many requests together),
 * so pooling the requests of several runs would overstate the confidence of a difference.
 * Here each selector names a configuration and every run it matches is one observation: each
 * run gives its p50, p90, p99 and p99.9 (from its stored CDF), and the two sides' means are
 * compared by the two-sample Student t-interval with pooled variance (95%, n_b + n_c - 2
 * degrees of freedom). A candidate is worse at a quantile when the whole interval of
 * (candidate - baseline) lies above tolerance x the baseline's mean; better when it lies below
 * minus that. Two runs of one side with the same seed are one simulation twice (runs are
 * deterministic), not two samples, and are refused. */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdio.h>
#include "../store/aggregate.h"
#include "../store/results.h"
#include "compare.h"

/* Reads every run selector matches in db; name ("baseline:", "candidate:") begins its errors. */
static int seeds_load(struct results_db *db, const char *name, const char *selector, struct study_seed_side *s,
                      const char *metric, char *err, size_t errlen)
{
	size_t nmatch;
	double cdf[METRICS_CDF_POINTS];
	if (results_find_runs(db, selector, s->ids, STUDY_SEEDS_MAX, &nmatch, err, errlen) != 0)
		return -1;
	if (nmatch > STUDY_SEEDS_MAX) {
		snprintf(err, errlen, "%s '%s' matches %zu runs; --by-seed takes at most %d", name, selector,
		         nmatch, STUDY_SEEDS_MAX);
		return -1;
	}
	s->n = nmatch;
	if (s->n < 2) {
		snprintf(err, errlen, "%s '%s' matches one run: --by-seed needs at least two seeds a side", name,
		         selector);
		return -1;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct results_run_info info;
		if (results_read_run_info(db, s->ids[i], &info, err, errlen) != 0 ||
		    results_read_metric_cdf(db, s->ids[i], metric, cdf, err, errlen) != 0)
			return -1;
		s->seeds[i] = info.seed;
		for (size_t j = 0; j < i; j++)
			if (s->seeds[j] == info.seed) {
				snprintf(err, errlen, "%s '%s': runs %lld and %lld have the same seed %llu (one simulation "
				         "twice, not two samples); narrow the selector", name, selector,
				         (long long)s->ids[j], (long long)s->ids[i], (unsigned long long)info.seed);
				return -1;
			}
		for (int k = 0; k < CDFC_NQUANTILES; k++)
			s->q[k][i] = cdfc_quantile_ms(cdf, cdfc_points[k].q);
	}
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		struct agg_stats a;
		agg_compute(s->q[k], s->n, &a);       /* sorts the side's values: only their mean and spread are kept */
		s->mean[k] = a.mean;
		s->var[k] = a.sd * a.sd;
	}
	return 0;
}

/* The pooled-variance t-interval of mean(c) - mean(b) at quantile k, and the verdict. */
static struct study_seed_diff seeds_diff(const struct study_seed_side *b, const struct study_seed_side *c, int k,
                                         double tol)
{
	double dof = (double)(b->n + c->n - 2);
	double pooled = ((double)(b->n - 1) * b->var[k] + (double)(c->n - 1) * c->var[k]) / dof;
	double half = gsl_cdf_tdist_Pinv(0.5 + AGG_CONFIDENCE / 2, dof) * sqrt(pooled * (1.0 / (double)b->n +
	                                                                                  1.0 / (double)c->n));
	struct study_seed_diff d = { .diff = c->mean[k] - b->mean[k] };
	d.lo = d.diff - half;
	d.hi = d.diff + half;
	d.worse = d.lo > tol * b->mean[k];
	d.better = d.hi < -tol * b->mean[k];
	return d;
}

int study_compare_seeds(struct results_db *bdb, const char *bsel, struct results_db *cdb, const char *csel,
                        const char *metric, double tol, struct study_compare_result *out, char *err, size_t errlen)
{
	if (seeds_load(bdb, "baseline:", bsel, &out->seed_base, metric, err, errlen) != 0 ||
	    seeds_load(cdb, "candidate:", csel, &out->seed_cand, metric, err, errlen) != 0)
		return -1;
	out->confidence = AGG_CONFIDENCE;
	out->lim.tolerance = tol;
	out->failed = 0;
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		out->seed_diffs[k] = seeds_diff(&out->seed_base, &out->seed_cand, k, tol);
		out->failed |= out->seed_diffs[k].worse;
	}
	return 0;
}
