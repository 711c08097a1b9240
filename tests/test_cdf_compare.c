/* tests/test_cdf_compare.c: sim/cdf_compare.c against independent answers:
 * KS distances derived by hand for shifted uniform grids, and a brute-force
 * KS (count the values <= x in each array, for every x of either array) on
 * random CDFs; the tolerance rule at its exact boundary; improvements that
 * are not regressions; exact mode; damaged input.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>

#include "sim/store/cdf_compare.h"

#define N METRICS_CDF_POINTS

static const struct cdfc_limits default_limits = { 0.05, 0.05, 0 };

/* value i (0-based) = i + 1 + shift: a grid shifted right by shift */
static void grid(double *v, double shift)
{
	for (int i = 0; i < N; i++)
		v[i] = i + 1 + shift;
}

static void compare_ok(const double *a, const double *b, const struct cdfc_limits *lim, struct cdfc_result *r)
{
	char err[256] = "";
	if (cdfc_compare(a, b, lim, r, err, sizeof err) != 0)
		fail_msg("cdfc_compare failed: %s", err);
}

/* max over x of (#a <= x) - (#b <= x), by plain counting */
static int brute_one_sided(const double *a, const double *b)
{
	int best = 0;
	for (int k = 0; k < 2 * N; k++) {
		double x = k < N ? a[k] : b[k - N];
		int ca = 0, cb = 0;
		for (int i = 0; i < N; i++) {
			ca += a[i] <= x;
			cb += b[i] <= x;
		}
		if (ca - cb > best)
			best = ca - cb;
	}
	return best;
}

static void test_identical(void **state)
{
	(void)state;
	double a[N], b[N];
	grid(a, 0);
	grid(b, 0);
	struct cdfc_result r;
	struct cdfc_limits exact = { 0, 0, 1 };
	compare_ok(a, b, &exact, &r);
	assert_true(r.ks == 0 && r.ks_worse == 0 && r.ks_better == 0);
	assert_false(r.regression);
	assert_false(r.changed);
	for (int i = 0; i < CDFC_NQUANTILES; i++)
		assert_true(r.quantiles[i].ratio == 1.0);
}

/* Shifting the grid 1..1000 right by s (not an integer) moves ceil(s) values
 * past x = 1000: KS = ceil(s)/1000, all on the "slower" side. */
static void test_shift_right(void **state)
{
	(void)state;
	double a[N], b[N];
	grid(a, 0);
	grid(b, 100.5);
	struct cdfc_result r;
	compare_ok(a, b, &default_limits, &r);
	assert_true(fabs(r.ks - 101.0 / N) < 1e-15);
	assert_true(fabs(r.ks_worse - 101.0 / N) < 1e-15);
	assert_true(r.ks_better == 0);
	assert_true(r.regression);
	assert_true(r.ks_exceeded);
	/* p50 is value 500 of the grid: 500 -> 600.5 */
	assert_true(r.quantiles[0].base_ms == 500 && r.quantiles[0].cand_ms == 600.5);
	assert_true(r.quantiles[0].worse);
	/* p99.9 is value 999: 999 -> 1099.5, a ratio of 1.1006 > 1.05 */
	assert_true(r.quantiles[3].base_ms == 999 && r.quantiles[3].worse);
}

/* The same shift the other way is an improvement: no regression, but a change
 * (in every mode: it moved), which exact mode fails on. */
static void test_improvement(void **state)
{
	(void)state;
	double a[N], b[N];
	grid(a, 0);
	grid(b, -0.25);
	struct cdfc_result r;
	compare_ok(a, b, &default_limits, &r);
	assert_true(fabs(r.ks_better - 1.0 / N) < 1e-15);
	assert_true(r.ks_worse == 0);
	assert_false(r.regression);
	assert_true(r.changed);
	struct cdfc_limits exact = { 0.05, 0.05, 1 };
	compare_ok(a, b, &exact, &r);
	assert_false(r.regression);
	assert_true(r.changed);
}

/* The quantile rule at its boundary: exactly base * (1 + tol) passes, the next
 * double above it fails. Only the p99 point moves, so the KS distance is
 * 1/1000 and stays under its tolerance. */
static void test_tolerance_boundary(void **state)
{
	(void)state;
	double a[N], b[N];
	grid(a, 0);
	grid(b, 0);
	const double tol = 0.25;           /* 990 * 1.25 = 1237.5 exactly */
	a[989] = 990;
	for (int i = 990; i < N; i++)
		a[i] = b[i] = 2000 + i;    /* keep both non-decreasing above p99 */
	b[989] = 990 * (1 + tol);
	struct cdfc_limits lim = { tol, 0.05, 0 };
	struct cdfc_result r;
	compare_ok(a, b, &lim, &r);
	assert_false(r.quantiles[2].worse);
	assert_false(r.regression);
	assert_true(fabs(r.ks - 1.0 / N) < 1e-15);
	b[989] = nextafter(990 * (1 + tol), INFINITY);
	compare_ok(a, b, &lim, &r);
	assert_true(r.quantiles[2].worse);
	assert_true(r.regression);
	assert_false(r.ks_exceeded);
}

/* The KS rule alone: a candidate whose body is slower but whose four tail
 * points are unchanged is caught by the one-sided KS distance only. */
static void test_ks_rule_alone(void **state)
{
	(void)state;
	double a[N], b[N];
	grid(a, 0);
	grid(b, 0);
	for (int i = 0; i < 450; i++)
		b[i] = 450;                /* values 1..450 all become 450: F_cand(x) = 0 below 450 */
	struct cdfc_result r;
	compare_ok(a, b, &default_limits, &r);
	for (int i = 0; i < CDFC_NQUANTILES; i++)
		assert_false(r.quantiles[i].worse);
	assert_true(fabs(r.ks_worse - 449.0 / N) < 1e-15);   /* at x = 449: 449 vs 0 */
	assert_true(r.ks_exceeded && r.regression);
	struct cdfc_limits loose = { 0.05, 0.5, 0 };
	compare_ok(a, b, &loose, &r);
	assert_false(r.regression);
}

/* Random CDFs with ties, against the brute-force count. */
static void test_random_against_brute_force(void **state)
{
	(void)state;
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(g, 7);
	double a[N], b[N];
	for (int trial = 0; trial < 20; trial++) {
		double scale = 1 + 0.1 * trial;
		for (int i = 0; i < N; i++) {
			/* rounding to a 0.5 grid makes ties within and across the arrays */
			a[i] = round(2 * gsl_ran_lognormal(g, 2, 0.5)) / 2;
			b[i] = round(2 * scale * gsl_ran_lognormal(g, 2, 0.5)) / 2;
		}
		gsl_sort(a, 1, N);
		gsl_sort(b, 1, N);
		struct cdfc_result r;
		compare_ok(a, b, &default_limits, &r);
		int worse = brute_one_sided(a, b), better = brute_one_sided(b, a);
		assert_true(fabs(r.ks_worse - (double)worse / N) < 1e-15);
		assert_true(fabs(r.ks_better - (double)better / N) < 1e-15);
		assert_true(fabs(r.ks - (double)(worse > better ? worse : better) / N) < 1e-15);
	}
	gsl_rng_free(g);
}

static void test_quantile_points(void **state)
{
	(void)state;
	double a[N];
	grid(a, 0);
	assert_true(cdfc_quantile_ms(a, 0.5) == 500);
	assert_true(cdfc_quantile_ms(a, 0.9) == 900);
	assert_true(cdfc_quantile_ms(a, 0.99) == 990);
	assert_true(cdfc_quantile_ms(a, 0.999) == 999);
	assert_true(cdfc_quantile_ms(a, 1.0) == 1000);
}

static void test_damaged_input(void **state)
{
	(void)state;
	double a[N], b[N];
	char err[256] = "";
	struct cdfc_result r;
	grid(a, 0);
	grid(b, 0);
	b[10] = 5;                         /* decreasing */
	assert_int_equal(cdfc_compare(a, b, &default_limits, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "candidate"));
	b[10] = 11;
	a[3] = NAN;
	assert_int_equal(cdfc_compare(a, b, &default_limits, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "baseline"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identical),
		cmocka_unit_test(test_shift_right),
		cmocka_unit_test(test_improvement),
		cmocka_unit_test(test_tolerance_boundary),
		cmocka_unit_test(test_ks_rule_alone),
		cmocka_unit_test(test_random_against_brute_force),
		cmocka_unit_test(test_quantile_points),
		cmocka_unit_test(test_damaged_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
