/* tests/test_rng.c: util/mt19937.c against GSL's own gsl_rng_mt19937, draw
 * for draw, and against MT19937's published check value; util/rng.c's
 * streams are of that type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "util/mt19937.h"
#include "util/rng.h"

/* 2,000 draws a kind: each kind crosses at least three 624-word state updates */
#define DRAWS 2000

static void check_same_stream(unsigned long seed)
{
	gsl_rng *ours = gsl_rng_alloc(mt19937_type), *gsl = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(ours);
	assert_non_null(gsl);
	gsl_rng_set(ours, seed);
	gsl_rng_set(gsl, seed);
	for (int i = 0; i < DRAWS; i++) {
		unsigned long a = gsl_rng_get(ours), b = gsl_rng_get(gsl);
		if (a != b)
			fail_msg("seed %lu, word %d: %lu, GSL %lu", seed, i, a, b);
	}
	for (int i = 0; i < DRAWS; i++) {
		double a = gsl_rng_uniform(ours), b = gsl_rng_uniform(gsl);
		double c = gsl_rng_uniform_pos(ours), d = gsl_rng_uniform_pos(gsl);
		double e = gsl_ran_exponential(ours, 0.25), f = gsl_ran_exponential(gsl, 0.25);
		if (memcmp(&a, &b, sizeof a) != 0 || memcmp(&c, &d, sizeof c) != 0 || memcmp(&e, &f, sizeof e) != 0)
			fail_msg("seed %lu, draw %d: %.17g %.17g %.17g, GSL %.17g %.17g %.17g", seed, i, a, c, e, b, d, f);
	}
	for (int i = 0; i < DRAWS; i++)
		assert_true(gsl_rng_uniform_int(ours, 1000 + (unsigned long)i) ==
		            gsl_rng_uniform_int(gsl, 1000 + (unsigned long)i));
	gsl_rng_free(ours);
	gsl_rng_free(gsl);
}

static void test_same_numbers_as_gsl(void **state)
{
	(void)state;
	/* 0 means 4357 in both; past 32 bits only the low 32 count (2^32 + 5 seeds word 0 with 5) */
	const unsigned long seeds[] = { 0, 1, 2, 4357, 5489, 0x7fffffffUL, 0xffffffffUL, 0x100000005UL,
	                                2654435761UL, 123456789UL };
	for (size_t k = 0; k < sizeof seeds / sizeof seeds[0]; k++)
		check_same_stream(seeds[k]);
}

/* The 10,000th word from seed 5489, the value C++'s std::mt19937 must give
 * (ISO C++ [rand.predef]): a check independent of GSL. */
static void test_published_check_value(void **state)
{
	(void)state;
	gsl_rng *r = gsl_rng_alloc(mt19937_type);
	assert_non_null(r);
	gsl_rng_set(r, 5489);
	unsigned long w = 0;
	for (int i = 0; i < 10000; i++)
		w = gsl_rng_get(r);
	assert_true(w == 4123659995UL);
	gsl_rng_free(r);
}

/* A copy continues the stream where the original is (the state is plain data). */
static void test_clone_continues(void **state)
{
	(void)state;
	gsl_rng *r = gsl_rng_alloc(mt19937_type);
	assert_non_null(r);
	gsl_rng_set(r, 99);
	for (int i = 0; i < 700; i++)
		(void)gsl_rng_get(r);
	gsl_rng *c = gsl_rng_clone(r);
	assert_non_null(c);
	for (int i = 0; i < DRAWS; i++)
		assert_true(gsl_rng_get(r) == gsl_rng_get(c));
	gsl_rng_free(c);
	gsl_rng_free(r);
}

static void test_run_streams_use_it(void **state)
{
	(void)state;
	gsl_rng *r = rng_create(1, RNG_ARRIVALS);
	assert_non_null(r);
	assert_ptr_equal(r->type, mt19937_type);
	gsl_rng_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_numbers_as_gsl),
		cmocka_unit_test(test_published_check_value),
		cmocka_unit_test(test_clone_continues),
		cmocka_unit_test(test_run_streams_use_it),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
