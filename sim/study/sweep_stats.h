/* sim/study/sweep_stats.h: what a sweep decides from measured numbers (sweep_stats.c): a
 * configuration's statistics over its seeds for `sweep --summary` (each metric's mean,
 * quartiles and 95% interval, sim/store/aggregate.h, and how many runs saturated), and the
 * rates `sweep --rates=auto` runs between the synchronous and the saturation rate. The CLI reads
 * the numbers (the results database, its child runs) and prints; this never prints or exits.
 */
#ifndef SB_STUDY_SWEEP_STATS_H
#define SB_STUDY_SWEEP_STATS_H

#include <stddef.h>
#include "../store/aggregate.h"

/* A configuration's runs over its seeds. */
struct sweep_config_stats {
	size_t n;                 /* runs found (seeds stored) */
	size_t saturated;         /* of them, saturated */
	size_t unknown;           /* of them, whose saturation is not recorded (NaN flag) */
};

/* vals holds nm + 1 blocks of stride values, each with the n runs found first: block k < nm is
 * metric k's (sorted in place), block nm the runs' saturation flags (1 saturated, 0 not, NaN
 * not recorded). Fills out and metric[0 .. nm-1]. */
void sweep_config_summarize(double *vals, size_t stride, size_t n, size_t nm, struct sweep_config_stats *out,
                            struct agg_stats *metric);

/* The --rates=auto rates: points (>= 1) rates evenly spaced from the synchronous rate sync (or,
 * when sync is not below the saturation rate sat, from sat / points) up to one step below sat,
 * each rounded to 6 significant digits, the precision the runs are given and the table prints. */
void sweep_auto_rates(double sync, double sat, size_t points, double *rates);

#endif
