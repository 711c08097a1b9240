/* sim/store/aggregate.c: across-seed statistics on GSL (aggregate.h). */
#include "aggregate.h"

#include <math.h>
#include <stdlib.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

void agg_compute(double *v, size_t n, struct agg_stats *out)
{
	out->count = n;
	out->mean = out->p25 = out->p75 = out->sd = out->ci_lo = out->ci_hi = NAN;
	if (n == 0)
		return;
	gsl_sort(v, 1, n);
	out->mean = gsl_stats_mean(v, 1, n);
	out->p25 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.25);
	out->p75 = gsl_stats_quantile_from_sorted_data(v, 1, n, 0.75);
	if (n < 2)
		return;
	out->sd = gsl_stats_sd_m(v, 1, n, out->mean);
	double t = gsl_cdf_tdist_Pinv(0.5 + AGG_CONFIDENCE / 2, (double)(n - 1));
	double half = t * out->sd / sqrt((double)n);
	out->ci_lo = out->mean - half;
	out->ci_hi = out->mean + half;
}
