/* sim/store/cdf_compare.h: compares two latency CDFs stored as quantile functions
 * (METRICS_CDF_POINTS values, value i = quantile (i+1)/1000, as the results
 * database keeps them): Kolmogorov-Smirnov distance, ratios at the tail
 * percentiles, and the regression verdict `simbatch compare` exits with.
 *
 * How the KS distance is computed: each stored quantile function is read as
 * an empirical distribution of its 1000 values, equally weighted, with the
 * right-continuous step CDF F(x) = #{values <= x} / 1000. Both step CDFs are
 * evaluated at every point of the union of the two value sets (a step
 * function's largest gap lies at one of its jumps), in one merge pass. So the
 * distance is a multiple of 1/1000, it is 0 exactly when the two value sets
 * are equal, and it differs from the KS distance of the runs' full samples
 * (n_a and n_b requests) by at most 2/1000 + 1/n_a + 1/n_b: a stored CDF is
 * within 1/1000 + 1/n of its sample's empirical CDF, 1/1000 from the grid of
 * quantiles and 1/n from interpolating between order statistics on the
 * (n-1)-step scale GSL's quantile rule uses.
 *
 * Contract:
 *  - Inputs are non-decreasing arrays of METRICS_CDF_POINTS finite values;
 *    cdfc_compare returns -1 with err when one is not (a damaged CDF), else 0.
 *  - One-sided distances: ks_worse = max over x of F_base(x) - F_cand(x)
 *    (the candidate's CDF lies below the baseline's: more of its requests are
 *    slower than x); ks_better the other way; ks = max of the two.
 *  - Verdict: regression when the candidate's latency at any of p50, p90,
 *    p99, p99.9 exceeds the baseline's times (1 + tolerance), or ks_worse
 *    exceeds ks_tolerance. Improvements never count as a regression; `exact`
 *    mode additionally counts any difference at all (ks > 0) as a change.
 */
#ifndef SB_CDF_COMPARE_H
#define SB_CDF_COMPARE_H

#include <stddef.h>
#include "../../util/metrics.h"

#define CDFC_NQUANTILES 4        /* p50, p90, p99, p99.9 */

struct cdfc_point {
	double q;                    /* 0.5, 0.9, 0.99, 0.999 */
	const char *name;            /* "p50", ... */
};
extern const struct cdfc_point cdfc_points[CDFC_NQUANTILES];   /* the quantiles compared */

struct cdfc_limits {
	double tolerance;            /* allowed relative increase of a quantile, e.g. 0.05 */
	double ks_tolerance;         /* allowed one-sided KS distance (candidate slower) */
	int exact;                   /* 1: any difference is a failure (deterministic CI runs) */
};

struct cdfc_quantile {
	double q;                    /* 0.5, 0.9, 0.99, 0.999 */
	const char *name;            /* "p50", ... (static) */
	double base_ms, cand_ms;
	double ratio;                /* cand / base; 1 when both are 0, +inf when only base is 0 */
	int worse;                   /* ratio above 1 + tolerance */
};

struct cdfc_result {
	struct cdfc_quantile quantiles[CDFC_NQUANTILES];
	double ks;                   /* two-sided KS distance, a multiple of 1/1000 */
	double ks_worse;             /* max F_base - F_cand >= 0 */
	double ks_better;            /* max F_cand - F_base >= 0 */
	double ks_at_ms;             /* a latency where the two-sided distance is reached */
	int ks_exceeded;             /* ks_worse > ks_tolerance */
	int regression;              /* the verdict: 1 = candidate worse beyond the limits */
	int changed;                 /* the CDFs differ at all (a quantile or the KS distance moved), in
	                              * every mode; exact mode makes a change fail */
};

/* The value of quantile q (0 < q <= 1) of a stored CDF: the stored point
 * q*1000 (rounded), which is how metrics_finish placed p50 ... p99.9. */
double cdfc_quantile_ms(const double *cdf_ms, double q);

/* Fills r. Returns 0, or -1 with err naming the first bad value. */
int cdfc_compare(const double *base_ms, const double *cand_ms, const struct cdfc_limits *lim,
                 struct cdfc_result *r, char *err, size_t errlen);

#endif
