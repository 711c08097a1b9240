/* tests/test_capacity_search.c: capacity's search (sim/study/capacity_search.h) driven by fake
 * probes whose answers are known, so the rates it must probe follow from the rule by hand:
 * start at the estimate, double while passing or halve while failing until one rate passes and
 * one fails, then try the midpoint until hi - lo <= tolerance * lo. The rates below are worked
 * out on paper (each exact in 6 significant digits, so the rounding changes none). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "sim/study/capacity_search.h"

#define BOUNDARY_RPS 37.5     /* the fake system keeps up below this rate and is overloaded from it on */

struct fake {
	double rates[64];
	size_t n;
	int fail_at;               /* the call (1-based) that fails with bad input; 0: none */
	int all_fail;              /* every rate misses the SLA */
};

static enum study_cap_status fake_probe(void *ctx, double rate, struct study_cap_measure *m, char *err, size_t errlen)
{
	struct fake *f = ctx;
	f->rates[f->n++] = rate;
	if (f->fail_at && (int)f->n == f->fail_at) {
		snprintf(err, errlen, "fake: bad option");
		return STUDY_CAP_BAD_INPUT;
	}
	m->p99_ms = f->all_fail ? 500 : 10;
	m->violation = 0;
	m->overloaded = rate >= BOUNDARY_RPS;
	return STUDY_CAP_OK;
}

static const struct study_cap_plan node_plan = { .estimate_rps = 80, .tolerance = 0.02, .sla_ms = 100 };

static void test_bisection_rates(void **state)
{
	(void)state;
	static struct study_cap_result res;
	struct fake f = { .n = 0 };
	char err[256] = "";
	assert_int_equal(study_capacity_search(&node_plan, fake_probe, NULL, &f, &res, err, sizeof err), STUDY_CAP_OK);
	/* 80 fails, 40 fails, 20 passes: [20, 40]; then 30 P, 35 P, 37.5 F, 36.25 P, 36.875 P, where
	 * 37.5 - 36.875 = 0.625 <= 0.02 x 36.875 = 0.7375 stops it */
	const double want[] = { 80, 40, 20, 30, 35, 37.5, 36.25, 36.875 };
	const size_t nwant = sizeof want / sizeof want[0];
	assert_int_equal(f.n, nwant);
	assert_int_equal(res.npts, nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert_true(f.rates[i] == want[i]);
		assert_true(res.pts[i].rate_rps == want[i]);
		assert_int_equal(res.pts[i].pass, want[i] < BOUNDARY_RPS);
	}
	double lo = res.pts[res.lo].rate_rps, hi = res.pts[res.hi].rate_rps;
	assert_true(lo == 36.875 && hi == 37.5);
	assert_true(lo < BOUNDARY_RPS && BOUNDARY_RPS <= hi);
	assert_true(hi - lo <= node_plan.tolerance * lo);
}

static void test_no_rate_passes(void **state)
{
	(void)state;
	static struct study_cap_result res;
	struct fake f = { .all_fail = 1 };
	struct study_cap_plan plan = node_plan;
	plan.estimate_rps = 64;
	char err[256] = "";
	assert_int_equal(study_capacity_search(&plan, fake_probe, NULL, &f, &res, err, sizeof err), STUDY_CAP_FAILED);
	/* the estimate, then STUDY_CAP_MAX_STEPS (12) halvings: 64 / 2^12 = 0.015625 last */
	assert_int_equal(f.n, 13);
	for (size_t i = 0; i < 13; i++)
		assert_true(f.rates[i] == ldexp(64, -(int)i));
	/* the message names the last failing rate the bracket holds (the 12th, 0.03125) and its p99 */
	assert_non_null(strstr(err, "no rate meets the SLA: even at 0.03125 req/s"));
	assert_non_null(strstr(err, "the p99 is 500 ms > 100 ms"));
}

static void test_probe_failure_stops(void **state)
{
	(void)state;
	static struct study_cap_result res;
	struct fake f = { .fail_at = 3 };
	char err[256] = "";
	assert_int_equal(study_capacity_search(&node_plan, fake_probe, NULL, &f, &res, err, sizeof err),
	                 STUDY_CAP_BAD_INPUT);
	assert_int_equal(f.n, 3);
	assert_int_equal(res.npts, 2);
	assert_string_equal(err, "fake: bad option");
}

/* An LLM rate: passes when the one-sided upper Clopper-Pearson bound on the missing fraction is
 * within the allowance, the run neither saturated nor overloaded. With no miss in n the bound is
 * 1 - (1 - confidence)^(1/n) (the binomial's zero-count tail). */
static void test_llm_judging(void **state)
{
	(void)state;
	struct study_cap_plan plan = { .llm = 1, .allowed = 0.01, .confidence = 0.95, .sla_ms = 1e9 };
	struct study_cap_measure m = { .p99_ms = 5, .missed = 0, .measured = 1000 };
	struct study_cap_point p;
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(fabs(p.bound - (1 - pow(0.05, 1.0 / 1000))) < 1e-9);
	assert_true(p.violation == 0 && p.pass);
	m.measured = 100;              /* bound 1 - 0.05^(1/100) = 0.0295 > 0.01 */
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(p.bound > 0.029 && p.bound < 0.030 && !p.pass);
	m.measured = 1000;
	m.saturated = 1;
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(p.saturated && !p.pass);
	m.saturated = 0;
	m.overloaded = 1;
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(p.overloaded && !p.pass);
	m.overloaded = 0;
	plan.allowed = 0;               /* an attainment of 1: none may miss */
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(p.pass);
	m.missed = 1;
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(!p.pass && p.violation == 0.001);
	m.missed = m.measured = 0;      /* nothing measured counts as all missing */
	study_cap_judge(&plan, 12, &m, &p);
	assert_true(p.violation == 1.0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bisection_rates),
		cmocka_unit_test(test_no_rate_passes),
		cmocka_unit_test(test_probe_failure_stops),
		cmocka_unit_test(test_llm_judging),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
