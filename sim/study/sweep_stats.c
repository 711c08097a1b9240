/* sim/study/sweep_stats.c: a sweep configuration's statistics over seeds and the automatic
 * sweep's rates (sweep_stats.h). */
#include "sweep_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

void sweep_config_summarize(double *vals, size_t stride, size_t n, size_t nm, struct sweep_config_stats *out,
                            struct agg_stats *metric)
{
	out->n = n;
	out->saturated = out->unknown = 0;
	for (size_t i = 0; i < n; i++) {
		double v = vals[nm * stride + i];
		out->unknown += isnan(v);
		out->saturated += v == 1;
	}
	for (size_t k = 0; k < nm; k++)
		agg_compute(&vals[k * stride], n, &metric[k]);
}

void sweep_auto_rates(double sync, double sat, size_t points, double *rates)
{
	double low = sync < sat ? sync : sat / (double)points;
	for (size_t i = 0; i < points; i++) {
		char buf[32];
		snprintf(buf, sizeof buf, "%.6g", low + (sat - low) * (double)i / (double)points);
		rates[i] = strtod(buf, NULL);   /* the rate as printed is the one run */
	}
}
