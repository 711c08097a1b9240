/* sim/store/aggregate.h: statistics of one metric across repeated runs (seeds):
 * the mean, the 25th/75th percentiles (LazyBatching Fig. 12-13 draw these as
 * error bars) and a 95% confidence interval of the mean from Student's t,
 * so a figure says how sure it is.
 *
 * Contract:
 *  - agg_compute never fails and never allocates: it sorts v in place.
 *  - n == 0 gives count 0 and NaN everywhere; n == 1 gives the value as mean
 *    and percentiles, and a NaN interval (one sample says nothing of its
 *    spread).
 *  - Percentiles use GSL's rule (gsl_stats_quantile_from_sorted_data: linear
 *    interpolation between order statistics); the interval is
 *    mean -/+ t(0.975, n-1) * s / sqrt(n) with the sample standard deviation s.
 */
#ifndef SB_AGGREGATE_H
#define SB_AGGREGATE_H

#include <stddef.h>

#define AGG_CONFIDENCE 0.95

struct agg_stats {
	size_t count;
	double mean;
	double p25, p75;
	double sd;                 /* sample standard deviation (n - 1) */
	double ci_lo, ci_hi;       /* AGG_CONFIDENCE interval of the mean */
};

void agg_compute(double *v, size_t n, struct agg_stats *out);

#endif
