/* tests/test_overload.c: util/overload.c on hand-built series of requests in
 * the system at each arrival. Each series is given as its windows' floors;
 * inside a window the count wanders above the floor and touches it once, so
 * only the least value can decide. The expected windows, times and floors
 * follow from the criterion in util/overload.h by hand (comments below).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/overload.h"

#define K OVL_WINDOW_PER_DEVICE
#define GAP_NS 1000000                 /* one arrival a millisecond: arrival i at i ms */

/* Feeds whole windows of K x devices arrivals, window w's least count floors[w], from arrival *next on. */
static void feed(struct ovl_detector *o, const uint64_t *floors, size_t nwindows, uint32_t devices, uint64_t *next)
{
	uint64_t k = (uint64_t)K * devices;
	for (size_t w = 0; w < nwindows; w++)
		for (uint64_t i = 0; i < k; i++, (*next)++)
			ovl_arrival(o, (int64_t)*next * GAP_NS, floors[w] + (i == k / 3 ? 0 : 1 + i % 7));
}

/* Arrival index i's time. */
static int64_t at(uint64_t i)
{
	return (int64_t)i * GAP_NS;
}

/* Floors 10 5 8 12 20 30 45 70 90 60: window 1 (5, not above 10) starts a
 * rise; windows 2..8 rise. After window 7 the rise is 6 windows long and
 * its floor went 5 -> 70: 65 >= max(5, 256 / 8 = 32), flagged there; window
 * 8 (90) extends it; window 9 (60) ends it. Window 1 opens at arrival K,
 * window 8 closes at 9K - 1, window 7 at 8K - 1. */
static void test_rise_flagged_with_its_window(void **state)
{
	(void)state;
	const uint64_t floors[] = { 10, 5, 8, 12, 20, 30, 45, 70, 90, 60 };
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, floors, 7, 1, &next);             /* through window 6: five rises, not yet */
	assert_false(o.found.flagged);
	feed(&o, floors + 7, 3, 1, &next);
	/* a trailing partial window is not judged, even at a higher floor */
	for (int i = 0; i < K - 1; i++, next++)
		ovl_arrival(&o, at(next), 1000);
	const struct ovl_found *f = &o.found;
	assert_true(f->flagged);
	assert_int_equal(f->start_ns, at(K));
	assert_int_equal(f->end_ns, at(9 * K - 1));
	assert_int_equal(f->flagged_ns, at(8 * K - 1));
	assert_int_equal(f->floor_from, 5);
	assert_int_equal(f->floor_to, 90);
	assert_int_equal(f->window_arrivals, K);
}

/* The margin's boundary: floors 40..45 then 72 are 6 rises but a growth of
 * 32 < max(40, 32); an 80 next is 7 rises and 40 >= 40, flagged at that
 * window (the eighth, index 7: it closes at arrival 8K - 1). */
static void test_doubling_is_the_margin(void **state)
{
	(void)state;
	const uint64_t floors[] = { 40, 41, 42, 43, 44, 45, 72, 80 };
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, floors, 7, 1, &next);
	assert_false(o.found.flagged);
	feed(&o, floors + 7, 1, 1, &next);
	assert_true(o.found.flagged);
	assert_int_equal(o.found.start_ns, at(0));
	assert_int_equal(o.found.flagged_ns, at(8 * K - 1));
	assert_int_equal(o.found.floor_from, 40);
	assert_int_equal(o.found.floor_to, 80);
}

/* From floor 0 the absolute margin decides: 0 1 2 3 4 5 31 is 6 rises of
 * 31 < 32, then 32: flagged. A tie breaks a rise: 0 10 20 20 30 40 50 60 70
 * rises only 5 windows after the second 20, so never. */
static void test_absolute_margin_and_ties(void **state)
{
	(void)state;
	const uint64_t low[] = { 0, 1, 2, 3, 4, 5, 31, 32 };
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, low, 7, 1, &next);
	assert_false(o.found.flagged);
	feed(&o, low + 7, 1, 1, &next);
	assert_true(o.found.flagged);

	const uint64_t tied[] = { 0, 10, 20, 20, 30, 40, 50, 60, 70 };
	ovl_init(&o, 1);
	next = 0;
	feed(&o, tied, 9, 1, &next);
	assert_false(o.found.flagged);
}

/* Only the first overloaded window is named: a second, larger rise after it leaves it as it was. */
static void test_first_rise_named(void **state)
{
	(void)state;
	const uint64_t floors[] = { 0, 40, 80, 120, 160, 200, 240, 0, 100, 200, 300, 400, 500, 600, 700 };
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, floors, 15, 1, &next);
	assert_true(o.found.flagged);
	assert_int_equal(o.found.start_ns, at(0));
	assert_int_equal(o.found.end_ns, at(7 * K - 1));
	assert_int_equal(o.found.floor_to, 240);
}

/* Four devices: windows of 4K arrivals and a margin of 4K / 8 = 128. The
 * floors 0 20 40 60 80 100 120 rise 6 windows by 120 < 128; 128 next flags. */
static void test_window_scales_with_devices(void **state)
{
	(void)state;
	const uint64_t floors[] = { 0, 20, 40, 60, 80, 100, 120, 128 };
	struct ovl_detector o;
	ovl_init(&o, 4);
	assert_int_equal(o.window_len, 4 * K);
	uint64_t next = 0;
	feed(&o, floors, 7, 4, &next);
	assert_false(o.found.flagged);
	feed(&o, floors + 7, 1, 4, &next);
	assert_true(o.found.flagged);
	assert_int_equal(o.found.flagged_ns, at(8 * 4 * K - 1));
	assert_int_equal(o.found.window_arrivals, 4 * K);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rise_flagged_with_its_window),
		cmocka_unit_test(test_doubling_is_the_margin),
		cmocka_unit_test(test_absolute_margin_and_ties),
		cmocka_unit_test(test_first_rise_named),
		cmocka_unit_test(test_window_scales_with_devices),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
