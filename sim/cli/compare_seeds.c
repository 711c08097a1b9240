/* sim/cli/compare_seeds.c: `simbatch compare --by-seed`: two configurations compared with the
 * seed as the unit.
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
#include <stdlib.h>
#include "../../util/json.h"
#include "../../util/errkind.h"
#include "../store/aggregate.h"
#include "../store/cdf_compare.h"
#include "../store/results.h"
#include "cli.h"
#include "compare_seeds.h"

#define SEEDS_MAX 1000
#define SEEDS_CONFIDENCE AGG_CONFIDENCE

struct seed_side {
	const char *name, *selector, *path;
	size_t n;
	int64_t ids[SEEDS_MAX];
	uint64_t seeds[SEEDS_MAX];
	double q[CDFC_NQUANTILES][SEEDS_MAX];    /* each run's quantile, ms (sorted once summarised) */
	double mean[CDFC_NQUANTILES], var[CDFC_NQUANTILES];
};

struct seed_diff {                           /* candidate - baseline at one quantile */
	double diff, lo, hi;
	int worse, better;
};

static int seeds_load(struct results_db *db, struct seed_side *s, const char *metric, char *err, size_t errlen)
{
	size_t nmatch;
	double cdf[METRICS_CDF_POINTS];
	if (results_find_runs(db, s->selector, s->ids, SEEDS_MAX, &nmatch, err, errlen) != 0)
		return -1;
	if (nmatch > SEEDS_MAX) {
		snprintf(err, errlen, "%s '%s' matches %zu runs; --by-seed takes at most %d", s->name, s->selector,
		         nmatch, SEEDS_MAX);
		return -1;
	}
	s->n = nmatch;
	if (s->n < 2) {
		snprintf(err, errlen, "%s '%s' matches one run: --by-seed needs at least two seeds a side", s->name,
		         s->selector);
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
				         "twice, not two samples); narrow the selector", s->name, s->selector,
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
static struct seed_diff seeds_diff(const struct seed_side *b, const struct seed_side *c, int k, double tol)
{
	double dof = (double)(b->n + c->n - 2);
	double pooled = ((double)(b->n - 1) * b->var[k] + (double)(c->n - 1) * c->var[k]) / dof;
	double half = gsl_cdf_tdist_Pinv(0.5 + SEEDS_CONFIDENCE / 2, dof) * sqrt(pooled * (1.0 / (double)b->n +
	                                                                                    1.0 / (double)c->n));
	struct seed_diff d = { .diff = c->mean[k] - b->mean[k] };
	d.lo = d.diff - half;
	d.hi = d.diff + half;
	d.worse = d.lo > tol * b->mean[k];
	d.better = d.hi < -tol * b->mean[k];
	return d;
}

static void seeds_print_side(const struct seed_side *s, int json)
{
	if (json) {
		printf("\"%s\":{\"selector\":", s->name);
		json_write_string(stdout, s->selector);
		printf(",\"source\":");
		json_write_string(stdout, s->path);
		printf(",\"runs\":%zu,\"seeds\":[", s->n);
		for (size_t i = s->n; i-- > 0;)              /* oldest run first */
			printf("%llu%s", (unsigned long long)s->seeds[i], i ? "," : "");
		printf("]},");
		return;
	}
	printf("%-10s %zu runs matching '%s' in %s (seeds", s->name, s->n, s->selector, s->path);
	for (size_t i = s->n; i-- > 0;)
		printf(" %llu", (unsigned long long)s->seeds[i]);
	printf(")\n");
}

int compare_by_seed(struct results_db *bdb, const char *bpath, const char *bsel, struct results_db *cdb,
                    const char *cpath, const char *csel, const char *metric, double tol, int json, char *err,
                    size_t errlen)
{
	struct seed_side *b = calloc(1, sizeof *b), *c = calloc(1, sizeof *c);
	int rc = CLI_BAD_INPUT, worse = 0;
	if (!b || !c) {
		err_memory(err, errlen, "out of memory");
		rc = CLI_FAILED;
		goto out;
	}
	*b = (struct seed_side){ .name = "baseline:", .selector = bsel, .path = bpath };
	*c = (struct seed_side){ .name = "candidate:", .selector = csel, .path = cpath };
	if (seeds_load(bdb, b, metric, err, errlen) != 0 || seeds_load(cdb, c, metric, err, errlen) != 0) {
		rc = cli_exit_status();
		goto out;
	}
	if (json) {
		b->name = "baseline";
		c->name = "candidate";
		printf("{");
		seeds_print_side(b, 1);
		seeds_print_side(c, 1);
		printf("\"metric\":\"%s\",\"unit\":\"seed\",\"confidence\":%g,\"quantiles\":[", metric, SEEDS_CONFIDENCE);
	} else {
		seeds_print_side(b, 0);
		seeds_print_side(c, 0);
		printf("\nthe seed is the unit: each run's quantile is one observation; the difference of the means "
		       "with its %g%% Student t-interval (pooled variance, %zu degrees of freedom)\n",
		       SEEDS_CONFIDENCE * 100, b->n + c->n - 2);
		printf("%-8s %12s %12s %12s %25s\n", "quantile", "baseline_ms", "candidate_ms", "cand-base", "interval");
	}
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		struct seed_diff d = seeds_diff(b, c, k, tol);
		worse |= d.worse;
		if (json)
			printf("%s{\"name\":\"%s\",\"base_mean_ms\":%.17g,\"cand_mean_ms\":%.17g,\"diff_ms\":%.17g,"
			       "\"low_ms\":%.17g,\"high_ms\":%.17g,\"worse\":%s,\"better\":%s}",
			       k ? "," : "", cdfc_points[k].name, b->mean[k], c->mean[k], d.diff, d.lo, d.hi,
			       d.worse ? "true" : "false", d.better ? "true" : "false");
		else
			printf("%-8s %12.6g %12.6g %12.6g   [%10.6g, %10.6g]%s\n", cdfc_points[k].name, b->mean[k],
			       c->mean[k], d.diff, d.lo, d.hi,
			       d.worse ? "  worse" : d.better ? "  better" : "  no difference shown");
	}
	if (json)
		printf("],\"tolerance\":%.15g,\"regression\":%s}\n", tol, worse ? "true" : "false");
	else
		printf("\n%s\n", worse ? "REGRESSION: a quantile's whole interval lies above the tolerance"
		                       : "OK: no quantile's interval lies wholly above the tolerance");
	rc = worse ? CLI_FAILED : CLI_OK;
out:
	free(b);
	free(c);
	return rc;
}
