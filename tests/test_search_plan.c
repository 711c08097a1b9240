/* tests/test_search_plan.c: a configuration search's decisions (sim/study/search_plan.h) driven by a
 * fake measurement over hand-made configurations whose capacities are chosen here, so which are
 * measured, in what order, which are skipped or pruned, the answer and the Pareto front follow by
 * hand from the rules: cheapest first (ties in configuration order); with a target, nothing dearer
 * than an answer found; an N-replica plain fleet whose one-replica sibling saturated at R with
 * N x R below the target is pruned; with a budget, nothing over it. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "sim/study/search_plan.h"

#define NROWS 6

struct fake {
	double capacity[NROWS], saturated[NROWS];   /* what measuring row i finds (capacity 0: infeasible) */
	size_t measured[NROWS], n;
	size_t fail_at;                            /* the measurement (1-based) that fails; 0: none */
};

static int fake_measure(void *ctx, struct study_search_row *w, size_t i, char *err, size_t errlen)
{
	struct fake *f = ctx;
	f->measured[f->n++] = i;
	if (f->fail_at && f->n == f->fail_at) {
		snprintf(err, errlen, "fake: the machine failed");
		return -1;
	}
	w->status = f->capacity[i] > 0 ? STUDY_SR_OK : STUDY_SR_INFEASIBLE;
	w->capacity = f->capacity[i];
	w->saturated_rps = f->saturated[i];
	return 0;
}

static void fake_label(void *ctx, size_t i, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "config%zu", i);
}

/* Six configurations, listed out of cost order:
 *   0: $4, 1 replica of family 7         3: $2, 2 replicas of family 7 (plain)
 *   1: $1, 1 replica of family 9         4: $2, not plain (family 9, e.g. prefix-affinity)
 *   2: $3, 4 replicas of family 9        5: $6, 2 replicas of family 9
 * Cost order: 1 ($1), 3, 4 ($2, index order), 2 ($3), 0 ($4), 5 ($6). */
static void make_rows(struct study_search_row *rows, size_t *order, struct study_search *s)
{
	static const double cost[NROWS] = { 4, 1, 3, 2, 2, 6 };
	static const uint32_t replicas[NROWS] = { 1, 1, 4, 2, 0, 2 };
	static const uint64_t family[NROWS] = { 7, 9, 9, 7, 9, 9 };
	memset(rows, 0, NROWS * sizeof *rows);
	for (size_t i = 0; i < NROWS; i++) {
		rows[i].cost = cost[i];
		rows[i].plain_replicas = replicas[i];
		rows[i].family = family[i];
		rows[i].saturated_rps = NAN;
	}
	*s = (struct study_search){ .rows = rows, .n = NROWS, .order = order, .best_cost = INFINITY,
	                            .label = fake_label };
	study_search_order(s);
}

struct fixture {
	struct study_search_row rows[NROWS];
	size_t order[NROWS];
	struct study_search s;
	struct fake f;
	char err[128];
};

/* The six configurations searched for target (or budget) with the measurements cap and sat: the run's answer. */
static int run_fake(struct fixture *x, double target, double budget, int exhaustive, const double *cap,
                    const double *sat)
{
	make_rows(x->rows, x->order, &x->s);
	x->s.target_rps = target;
	x->s.budget = budget;
	x->s.exhaustive = exhaustive;
	memset(&x->f, 0, sizeof x->f);
	for (size_t i = 0; i < NROWS; i++) {
		x->f.capacity[i] = cap[i];
		x->f.saturated[i] = sat[i];
	}
	return study_search_run(&x->s, fake_measure, &x->f, x->err, sizeof x->err);
}

static const double sat_1_3[NROWS] = { NAN, 2.4, NAN, 9, NAN, NAN };   /* configs 1 and 3 saw saturation */

static void test_order_by_cost(void **state)
{
	(void)state;
	struct study_search_row rows[NROWS];
	size_t order[NROWS];
	struct study_search s;
	make_rows(rows, order, &s);
	const size_t want[NROWS] = { 1, 3, 4, 2, 0, 5 };
	for (size_t k = 0; k < NROWS; k++)
		assert_int_equal(order[k], want[k]);
}

/* Target 10 req/s. Config 1 (1 replica, family 9) measures 3 req/s and saturates at 2.4: the 4-replica
 * sibling 2 can serve at most 9.6 < 10 (pruned), the 2-replica sibling 5 at most 4.8 (but it is dearer than
 * the answer: skipped first). Config 3 (2 replicas of family 7) has no measured one-replica sibling: measured,
 * 8 < 10. Config 4 (not plain) measures 11: the answer at $2, so 2 ($3, pruned before: the bound comes after
 * the cost), 0 ($4) and 5 ($6) cost more and are skipped. */
static void test_target_prunes_and_stops(void **state)
{
	(void)state;
	struct fixture x;
	assert_int_equal(run_fake(&x, 10, 0, 0, (const double[NROWS]){ 20, 3, 40, 8, 11, 30 }, sat_1_3), 0);
	struct study_search_row *rows = x.rows;
	struct study_search s = x.s;
	struct fake f = x.f;
	assert_int_equal(f.n, 3);
	assert_int_equal(f.measured[0], 1);
	assert_int_equal(f.measured[1], 3);
	assert_int_equal(f.measured[2], 4);
	assert_true(s.best_cost == 2);
	assert_int_equal(rows[2].status, STUDY_SR_SKIPPED);     /* $3 > $2: the cost rule comes first */
	assert_int_equal(rows[0].status, STUDY_SR_SKIPPED);
	assert_int_equal(rows[5].status, STUDY_SR_SKIPPED);
	assert_int_equal(study_search_answer(&s), 4);
	size_t front[NROWS];
	assert_int_equal(study_search_pareto(&s, front), 2);     /* 1 ($1, 3); 3 and 4 at $2: 4 (11) takes 3's (8) place */
	assert_int_equal(front[0], 1);
	assert_int_equal(front[1], 4);
}

/* The bound alone: config 4 infeasible, so nothing meets the target at $2 and config 2 ($3, 4 x 2.4 = 9.6 < 10)
 * is pruned with its reason naming the saturated sibling; 0 ($4) then measures 20 and answers; 5 is skipped. */
static void test_bound_prunes(void **state)
{
	(void)state;
	struct fixture x;
	assert_int_equal(run_fake(&x, 10, 0, 0, (const double[NROWS]){ 20, 3, 40, 8, 0, 30 }, sat_1_3), 0);
	struct study_search_row *rows = x.rows;
	struct fake f = x.f;
	assert_int_equal(f.n, 4);
	assert_int_equal(f.measured[3], 0);
	assert_int_equal(rows[4].status, STUDY_SR_INFEASIBLE);
	assert_int_equal(rows[2].status, STUDY_SR_PRUNED);
	assert_string_equal(rows[2].reason, "4 replicas cannot serve 10 req/s: one saturated at 2.4 req/s (config1)");
	assert_int_equal(rows[5].status, STUDY_SR_SKIPPED);
	/* 4 x 2.6 = 10.4 >= 10: no bound */
	rows[1].saturated_rps = 2.6;
	assert_int_equal(study_search_bounded(&x.s, 2), 0);
	assert_int_equal(study_search_answer(&x.s), 0);
}

/* --exhaustive: every configuration, cheapest first; the answer is the same, and the front is 1 (3), 4 (11),
 * 0 ($4, 20), 2 is $3 with 40: 1, 4, 2 (0 and 5 serve less than 40). */
static void test_exhaustive(void **state)
{
	(void)state;
	struct fixture x;
	assert_int_equal(run_fake(&x, 10, 0, 1, (const double[NROWS]){ 20, 3, 40, 8, 11, 30 }, sat_1_3), 0);
	assert_int_equal(x.f.n, NROWS);
	for (size_t k = 0; k < NROWS; k++)
		assert_int_equal(x.f.measured[k], x.order[k]);
	assert_int_equal(study_search_answer(&x.s), 4);
	size_t front[NROWS];
	assert_int_equal(study_search_pareto(&x.s, front), 3);
	assert_int_equal(front[0], 1);
	assert_int_equal(front[1], 4);
	assert_int_equal(front[2], 2);
}

/* A budget of $3.5: the most capacity within it; 0 ($4) and 5 ($6) are skipped, the bound does not apply
 * (no target). The answer is 2 (40 req/s for $3). A tie in capacity goes to the cheaper. */
static void test_budget(void **state)
{
	(void)state;
	struct fixture x;
	assert_int_equal(run_fake(&x, 0, 3.5, 0, (const double[NROWS]){ 20, 3, 40, 40, 11, 30 }, sat_1_3), 0);
	assert_int_equal(x.f.n, 4);
	assert_int_equal(x.rows[0].status, STUDY_SR_SKIPPED);
	assert_int_equal(x.rows[5].status, STUDY_SR_SKIPPED);
	assert_int_equal(study_search_answer(&x.s), 3);           /* 40 for $2 beats 40 for $3 */
}

/* --part=2/3: only configurations 1 and 4 (i % 3 == 1), in cost order; a failing measurement stops the search. */
static void test_part_and_failure(void **state)
{
	(void)state;
	struct study_search_row rows[NROWS];
	size_t order[NROWS];
	struct study_search s;
	make_rows(rows, order, &s);
	s.exhaustive = 1;
	s.part_i = 2;
	s.part_n = 3;
	struct fake f = { .capacity = { 1, 1, 1, 1, 1, 1 }, .saturated = { NAN, NAN, NAN, NAN, NAN, NAN } };
	char err[128] = "";
	assert_int_equal(study_search_run(&s, fake_measure, &f, err, sizeof err), 0);
	assert_int_equal(f.n, 2);
	assert_int_equal(f.measured[0], 1);
	assert_int_equal(f.measured[1], 4);
	make_rows(rows, order, &s);
	s.exhaustive = 1;
	f = (struct fake){ .capacity = { 1, 1, 1, 1, 1, 1 }, .fail_at = 2 };
	assert_int_equal(study_search_run(&s, fake_measure, &f, err, sizeof err), -1);
	assert_string_equal(err, "fake: the machine failed");
	assert_int_equal(f.n, 2);
	assert_int_equal(study_search_next(&s), 4);             /* the search goes on where it stopped */
}

/* The tokens front: (user, GPU) points (10, 5), (8, 6), (8, 5), (12, 1), (10, 5): (8, 5) is beaten by both
 * (10, 5)s; the two equal points stay (neither has more of one). */
static void test_front_mark(void **state)
{
	(void)state;
	const double user[5] = { 10, 8, 8, 12, 10 }, gpu[5] = { 5, 6, 5, 1, 5 };
	int on[5];
	study_front_mark(user, gpu, 5, on);
	const int want[5] = { 1, 1, 0, 1, 1 };
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(on[i], want[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_by_cost),
		cmocka_unit_test(test_target_prunes_and_stops),
		cmocka_unit_test(test_bound_prunes),
		cmocka_unit_test(test_exhaustive),
		cmocka_unit_test(test_budget),
		cmocka_unit_test(test_part_and_failure),
		cmocka_unit_test(test_front_mark),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
