/* tests/result_stats.h: a policy statistic of a run's result by name (the
 * test fails when the policy reports none). Header-only, for cmocka tests. */
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

#endif
