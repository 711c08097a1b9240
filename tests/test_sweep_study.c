/* tests/test_sweep_study.c: a sweep as functions over values (sim/study/sweep_plan.h,
 * sweep_stats.h), driven by a spec built by hand: a 2 x 3 grid (policy outermost, then rate)
 * with 2 seeds is 12 points, point i being configuration i / 2 with seed i % 2 + 1, so the keys,
 * a part's points and the one stored point skipped follow from that rule; the statistics over
 * seeds are worked out on paper, the t quantile from Student's t with 2 degrees of freedom in
 * closed form (F(t) = 1/2 + t / (2 sqrt(2 + t^2)), so t^2 = 2a^2 / (1 - a^2) with a = 2p - 1). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "sim/study/sweep_plan.h"
#include "sim/study/sweep_stats.h"

static struct sweep_opt fixed[] = { { "requests", "10", 1 } };
static struct sweep_opt pol_opts[] = { { "policy", "serial", 2 }, { "policy", "graph", 3 } };
static struct sweep_opt rate_opts[] = { { "rate", "100", 4 }, { "rate", "200", 4 }, { "rate", "300", 4 } };
static struct sweep_group pol_values[] = { { "serial", &pol_opts[0], 1, 2 }, { "graph", &pol_opts[1], 1, 3 } };
static struct sweep_group rate_values[] = {
	{ "100", &rate_opts[0], 1, 4 }, { "200", &rate_opts[1], 1, 4 }, { "300", &rate_opts[2], 1, 4 },
};
static struct sweep_axis axes[] = { { "policy", pol_values, 2, 2 }, { "rate", rate_values, 3, 4 } };
static uint64_t seeds[] = { 1, 2 };
static const struct sweep_spec grid = { "grid.sweep", fixed, 1, axes, 2, seeds, 2, 6, 12 };

/* the one point stored: graph at rate 200, seed 2 = configuration 1 * 3 + 1 = 4, point 4 * 2 + 1 = 9 */
#define STORED_KEY "policy=graph rate=200 requests=10 seed=2"

static int fake_stored(void *ud, const char *key, char *err, size_t errlen)
{
	int *asked = ud;
	(*asked)++;
	if (strcmp(key, "broken") == 0) {
		snprintf(err, errlen, "fake: cannot read");
		return -1;
	}
	return strcmp(key, STORED_KEY) == 0;
}

static void test_points_and_keys(void **state)
{
	(void)state;
	static const char *const want[] = {
		"policy=serial rate=100 requests=10 seed=1", "policy=serial rate=100 requests=10 seed=2",
		"policy=serial rate=200 requests=10 seed=1", "policy=serial rate=200 requests=10 seed=2",
		"policy=serial rate=300 requests=10 seed=1", "policy=serial rate=300 requests=10 seed=2",
		"policy=graph rate=100 requests=10 seed=1", "policy=graph rate=100 requests=10 seed=2",
		"policy=graph rate=200 requests=10 seed=1", STORED_KEY,
		"policy=graph rate=300 requests=10 seed=1", "policy=graph rate=300 requests=10 seed=2",
	};
	for (size_t i = 0; i < 12; i++) {
		struct sweep_point p;
		assert_int_equal(sweep_point_make(&grid, i, &p), 0);
		assert_string_equal(p.key, want[i]);
		assert_int_equal(p.config, i / 2);
		assert_int_equal(p.seed, i % 2 + 1);
		assert_int_equal(p.choice[0], i / 6);
		assert_int_equal(p.choice[1], i / 2 % 3);
		assert_int_equal(p.nargs, 4);
		assert_string_equal(p.args[0], i < 6 ? "--policy=serial" : "--policy=graph");
		assert_string_equal(p.args[3], i % 2 ? "--seed=2" : "--seed=1");
		sweep_point_free(&p);
	}
}

static void test_todo_skips_stored_and_parts(void **state)
{
	(void)state;
	size_t todo[12], ntodo = 0, stored = 0;
	int asked = 0;
	char err[128] = "";
	assert_int_equal(sweep_plan_todo(&grid, 1, 1, fake_stored, &asked, todo, &ntodo, &stored, err, sizeof err), 12);
	assert_int_equal(asked, 12);
	assert_int_equal(stored, 1);
	assert_int_equal(ntodo, 11);
	for (size_t i = 0; i < ntodo; i++)
		assert_int_equal(todo[i], i < 9 ? i : i + 1);
	/* part 1/3 is points 0, 3, 6, 9 (i % 3 == 0): 9 is stored */
	ntodo = stored = 0;
	assert_int_equal(sweep_plan_todo(&grid, 1, 3, fake_stored, &asked, todo, &ntodo, &stored, err, sizeof err), 4);
	assert_int_equal(stored, 1);
	assert_int_equal(ntodo, 3);
	assert_int_equal(todo[0], 0);
	assert_int_equal(todo[1], 3);
	assert_int_equal(todo[2], 6);
	/* part 2/3 is points 1, 4, 7, 10, none stored; without a database nothing is */
	ntodo = stored = 0;
	assert_int_equal(sweep_plan_todo(&grid, 2, 3, NULL, NULL, todo, &ntodo, &stored, err, sizeof err), 4);
	assert_int_equal(stored, 0);
	assert_int_equal(ntodo, 4);
	assert_int_equal(todo[3], 10);
}

/* A callback's failure stops the plan with its line. */
static int failing_stored(void *ud, const char *key, char *err, size_t errlen)
{
	(void)key;
	return fake_stored(ud, "broken", err, errlen);
}

static void test_todo_error(void **state)
{
	(void)state;
	size_t todo[12], ntodo = 0, stored = 0;
	int asked = 0;
	char err[128] = "";
	assert_int_equal(sweep_plan_todo(&grid, 1, 1, failing_stored, &asked, todo, &ntodo, &stored, err, sizeof err), -1);
	assert_int_equal(asked, 1);
	assert_string_equal(err, "fake: cannot read");
}

static void test_config_summary(void **state)
{
	(void)state;
	/* stride 4, 3 runs found: metric 0 {6, 1, 2}, metric 1 all 5, flags {0, 1, NaN} */
	double vals[12] = { 6, 1, 2, -99, 5, 5, 5, -99, 0, 1, NAN, -99 };
	struct sweep_config_stats cs;
	struct agg_stats st[2];
	sweep_config_summarize(vals, 4, 3, 2, &cs, st);
	assert_int_equal(cs.n, 3);
	assert_int_equal(cs.saturated, 1);
	assert_int_equal(cs.unknown, 1);
	/* mean 3; s^2 = (4 + 1 + 9) / 2 = 7; p25, p75 at rank 0.5 and 1.5 of {1, 2, 6}: 1.5 and 4 */
	double a = 2 * 0.975 - 1, t = sqrt(2 * a * a / (1 - a * a)), half = t * sqrt(7.0) / sqrt(3.0);
	assert_true(fabs(st[0].mean - 3) < 1e-12);
	assert_true(fabs(st[0].sd - sqrt(7.0)) < 1e-12);
	assert_true(fabs(st[0].p25 - 1.5) < 1e-12 && fabs(st[0].p75 - 4) < 1e-12);
	assert_true(fabs(st[0].ci_lo - (3 - half)) < 1e-9 && fabs(st[0].ci_hi - (3 + half)) < 1e-9);
	assert_true(st[1].mean == 5 && st[1].ci_lo == 5 && st[1].ci_hi == 5);
	/* no run found: count 0, NaN statistics, nothing saturated */
	sweep_config_summarize(vals, 4, 0, 2, &cs, st);
	assert_int_equal(cs.n + cs.saturated + cs.unknown, 0);
	assert_int_equal(st[0].count, 0);
	assert_true(isnan(st[0].mean));
}

static void test_auto_rates(void **state)
{
	(void)state;
	double r[4];
	/* from the synchronous rate 100 to one step (400 / 4) below the saturation rate 500 */
	sweep_auto_rates(100, 500, 4, r);
	assert_true(r[0] == 100 && r[1] == 200 && r[2] == 300 && r[3] == 400);
	/* a synchronous rate not below saturation: from 500 / 4 */
	sweep_auto_rates(600, 500, 4, r);
	assert_true(r[0] == 125 && r[1] == 218.75 && r[2] == 312.5 && r[3] == 406.25);
	/* 6 significant digits: 1 + 1/3 and 1 + 2/3 */
	sweep_auto_rates(1, 2, 3, r);
	assert_true(r[0] == 1 && r[1] == 1.33333 && r[2] == 1.66667);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_points_and_keys),
		cmocka_unit_test(test_todo_skips_stored_and_parts),
		cmocka_unit_test(test_todo_error),
		cmocka_unit_test(test_config_summary),
		cmocka_unit_test(test_auto_rates),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
