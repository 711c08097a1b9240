/* tests/test_overload.c: util/overload.c on hand-built series of requests in
 * the system at each arrival. Each series is given as its windows' floors;
 * inside a window the count wanders above the floor and touches it once, so
 * only the least value can decide. Mann-Kendall's S of OVL_SPAN = 24 floors
 * is counted by hand below: strictly increasing floors give all 276 pairs;
 * a group of m tied floors takes C(m, 2) of them away, one floor below n
 * later ones takes 2n away (each +1 becomes -1).
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

/* Floors 50 50 50, then 0 2 4 ... 46 (windows 3..26), 10, 100. Spans
 * judged from window 23 on: ending at 23, three 50s above 21 rising floors:
 * S = 210 - 63 = 147; at 24, 231 - 44 = 187; at 25, 253 - 23 = 230 but its
 * floor 44 is below the first 50, no growth; at 26 (windows 3..26, 0..46)
 * S = 276 and 46 >= max(0, 128 / 8): flagged, the rise from window 5 (the
 * latest floor within (46 - 0) / 8 = 5 of the lowest, 0). At 27 the floor 10 keeps S at 253 + 4 - 18 = 239, but
 * 10 is below the span's first half (up to 24): the window ends at 26.
 * The 100 after it and a trailing partial window change nothing. */
static void test_rise_flagged_with_its_window(void **state)
{
	(void)state;
	uint64_t floors[29] = { 50, 50, 50 };
	for (int k = 3; k <= 26; k++)
		floors[k] = 2 * (uint64_t)(k - 3);
	floors[27] = 10;
	floors[28] = 100;
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, floors, 26, 1, &next);            /* through window 25 */
	assert_false(o.found.flagged);
	feed(&o, floors + 26, 3, 1, &next);
	for (int i = 0; i < K - 1; i++, next++)
		ovl_arrival(&o, at(next), 1000);
	const struct ovl_found *f = &o.found;
	assert_true(f->flagged);
	assert_int_equal(f->start_ns, at(5 * K));
	assert_int_equal(f->flagged_ns, at(27 * K - 1));
	assert_int_equal(f->end_ns, at(27 * K - 1));
	assert_int_equal(f->floor_from, 4);
	assert_int_equal(f->floor_to, 46);
	assert_int_equal(f->window_arrivals, K);
}

/* The trend's level, S >= 207: twelve 10s, three 20s, then 21..29 give
 * S = 276 - C(12,2) - C(3,2) = 207 (and 29 - 10 >= max(10, 16)): flagged,
 * the rise from window 11, the latest floor within 19 / 8 = 2 of 10. Twelve 10s, three 20s, two 21s,
 * then 22..28 give 276 - 66 - 3 - 1 = 206 (and 18 >= 16): not flagged. */
static void test_trend_level(void **state)
{
	(void)state;
	uint64_t yes[OVL_SPAN], no[OVL_SPAN];
	for (int k = 0; k < OVL_SPAN; k++) {
		yes[k] = k < 12 ? 10 : k < 15 ? 20 : 6 + (uint64_t)k;
		no[k] = k < 12 ? 10 : k < 15 ? 20 : k < 17 ? 21 : 5 + (uint64_t)k;
	}
	assert_int_equal(yes[OVL_SPAN - 1], 29);
	assert_int_equal(no[OVL_SPAN - 1], 28);
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, yes, OVL_SPAN, 1, &next);
	assert_true(o.found.flagged);
	assert_int_equal(o.found.start_ns, at(11 * K));
	assert_int_equal(o.found.flagged_ns, at(24 * K - 1));
	assert_int_equal(o.found.floor_from, 10);
	assert_int_equal(o.found.floor_to, 29);
	ovl_init(&o, 1);
	next = 0;
	feed(&o, no, OVL_SPAN, 1, &next);
	assert_false(o.found.flagged);
}

/* The growth's bounds, with S = 276 (strictly rising): 30..52 then 59 grew
 * by 29 < 30, not doubled; then 60 does. From 0 on four devices (K = 512,
 * K / 8 = 64): 0..22 then 63 is short of 64; then 64 is enough. */
static void test_growth_bounds(void **state)
{
	(void)state;
	uint64_t f[OVL_SPAN];
	struct ovl_detector o;
	for (uint64_t last = 59; last <= 60; last++) {
		for (int k = 0; k < OVL_SPAN - 1; k++)
			f[k] = 30 + (uint64_t)k;
		f[OVL_SPAN - 1] = last;
		ovl_init(&o, 1);
		uint64_t next = 0;
		feed(&o, f, OVL_SPAN, 1, &next);
		assert_int_equal(o.found.flagged, last == 60);
	}
	for (uint64_t last = 63; last <= 64; last++) {
		for (int k = 0; k < OVL_SPAN - 1; k++)
			f[k] = (uint64_t)k;
		f[OVL_SPAN - 1] = last;
		ovl_init(&o, 4);
		assert_int_equal(o.window_len, 4 * K);
		uint64_t next = 0;
		feed(&o, f, OVL_SPAN, 4, &next);
		assert_int_equal(o.found.flagged, last == 64);
		if (last == 64) {
			assert_int_equal(o.found.flagged_ns, at(24 * 4 * K - 1));
			assert_int_equal(o.found.window_arrivals, 4 * K);
		}
	}
}

/* A flat queue is never flagged, and only the first overloaded window is
 * named: 30 windows at 7, a rise 0..23 (flagged at its 24th window, ended by
 * the drop to 0 after it; begun at floor 23 / 8 = 2, window 32), 0s, then a
 * larger rise 0, 10, ..., 230. */
static void test_first_rise_named(void **state)
{
	(void)state;
	uint64_t f[30 + 24 + 30 + 24];
	size_t n = 0;
	for (int k = 0; k < 30; k++)
		f[n++] = 7;
	for (int k = 0; k < 24; k++)
		f[n++] = (uint64_t)k;
	for (int k = 0; k < 30; k++)
		f[n++] = 0;
	for (int k = 0; k < 24; k++)
		f[n++] = 10 * (uint64_t)k;
	struct ovl_detector o;
	ovl_init(&o, 1);
	uint64_t next = 0;
	feed(&o, f, 30, 1, &next);
	assert_false(o.found.flagged);
	feed(&o, f + 30, n - 30, 1, &next);
	assert_true(o.found.flagged);
	assert_int_equal(o.found.start_ns, at(32 * K));
	assert_int_equal(o.found.flagged_ns, at(54 * K - 1));
	assert_int_equal(o.found.end_ns, at(54 * K - 1));
	assert_int_equal(o.found.floor_to, 23);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rise_flagged_with_its_window),
		cmocka_unit_test(test_trend_level),
		cmocka_unit_test(test_growth_bounds),
		cmocka_unit_test(test_first_rise_named),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
