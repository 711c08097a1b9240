/* tests/result_stats.h: a policy statistic of a run's result by name (the
 * test fails when the policy reports none), and two runs' statistics and
 * rows compared. Header-only, for cmocka tests. */
#ifndef SB_TEST_RESULT_STATS_H
#define SB_TEST_RESULT_STATS_H

#include <string.h>
#include "policies/driver.h"

static double stat_of(const struct drv_result *r, const char *name)
{
	for (size_t i = 0; i < r->npolicy_stats; i++)
		if (strcmp(r->policy_stats[i].name, name) == 0)
			return r->policy_stats[i].value;
	fail_msg("no policy stat '%s'", name);
	return -1;
}

/* Two runs of one configuration, a and b (how_a and how_b say how each was run, for the message):
 * the same policy statistics, value for value, and the same request rows. */
static inline void assert_same_stats_and_rows(const struct drv_result *a, const struct drv_result *b,
                                              const char *what, const char *how_a, const char *how_b)
{
	assert_int_equal(a->npolicy_stats, b->npolicy_stats);
	for (size_t k = 0; k < a->npolicy_stats; k++)
		if (a->policy_stats[k].value != b->policy_stats[k].value)
			fail_msg("%s: %s %g %s, %g %s", what, a->policy_stats[k].name, a->policy_stats[k].value, how_a,
			         b->policy_stats[k].value, how_b);
	assert_int_equal(a->nrows, b->nrows);
	assert_memory_equal(a->rows, b->rows, a->nrows * sizeof *a->rows);
}

#endif
