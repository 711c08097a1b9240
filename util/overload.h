/* util/overload.h: overload inside a run, seen where it happens (issue 46).
 * The whole run's throughput against the offered rate (report_saturated)
 * misses a stage or a burst that the server cannot serve when the rest of
 * the run is light; this detector finds the window where the queue grew.
 *
 * The criterion (docs/OVERLOAD.md gives the reasoning and the measurements):
 *  - n_i: the requests in the system (arrived, not finished) just before
 *    arrival i, for every arrival. By Little's law a growing TTFT or latency
 *    is a growing n: one signal serves LLM and node-level models alike.
 *  - Windows of K = OVL_WINDOW_PER_DEVICE x devices consecutive arrivals (a
 *    trailing partial window is not judged); f_j, window j's floor, is the
 *    least n_i in it: a queue that drains, however briefly, pulls it down.
 *  - At each window's end, the last L = OVL_SPAN floors f_1..f_L are tested
 *    for an upward trend with Mann-Kendall's statistic S = sum over pairs
 *    a < b of sign(f_b - f_a). Flagged when S >= OVL_TREND_PAIRS (207 of
 *    the 276 pairs: Kendall's tau >= 0.75; were the floors independent,
 *    z = S / sqrt(L(L-1)(2L+5)/18) = 5.1, one-sided p ~ 1.5e-7 a test; the
 *    floors of a loaded queue are positively correlated, which widens S's
 *    spread, so the level is set far out) and the floor at least doubled
 *    and grew by K / OVL_GROWTH_DIVISOR requests or more across the span:
 *    f_L - f_1 >= max(f_1, K / 8). Under an excess eps of arrivals over
 *    service the floor rises by about K eps / (1 + eps) a window.
 *  - Reported: the first flagged span, from the start of the latest of its
 *    windows whose floor was within an eighth of the rise above the span's
 *    lowest (where the rise began; the lowest alone may lie far back in a
 *    light stage whose floor wanders between 0 and 3) to the end of
 *    the last window after it whose own span still has the trend (S as
 *    above; a queue that keeps growing need not double again) and whose
 *    floor is above every floor in its span's first half (a queue that
 *    drained ends it at once).
 *
 * Contract: O(1) a call (O(L^2) once every K arrivals), no allocation;
 * results depend only on the calls (times in ns, counts), so equal runs give
 * equal answers. */
#ifndef SB_OVERLOAD_H
#define SB_OVERLOAD_H

#include <stdint.h>

#define OVL_WINDOW_PER_DEVICE 128   /* arrivals a window, per device */
#define OVL_SPAN 24                 /* windows the trend test looks at */
#define OVL_TREND_PAIRS 207         /* Mann-Kendall S at least this (tau 0.75 of OVL_SPAN's 276 pairs) */
#define OVL_GROWTH_DIVISOR 8        /* the floor must gain at least K / 8 requests across the span */

struct ovl_found {
	int flagged;                    /* 1: overloaded within the window below */
	int64_t start_ns, end_ns;       /* the first arrival of the rise's first window, the last of its last */
	int64_t flagged_ns;             /* the last arrival of the window in which the criterion first held */
	uint64_t floor_from, floor_to;  /* the floor where the rise began and of its last window */
	uint64_t window_arrivals;       /* K */
};

struct ovl_detector {
	uint64_t window_len;            /* K */
	uint64_t in_window;             /* arrivals so far in the current window */
	uint64_t floor;                 /* the current window's least n so far */
	int64_t window_start_ns, last_arrival_ns;
	uint64_t windows;               /* windows judged */
	uint64_t floors[OVL_SPAN];      /* the last OVL_SPAN windows' floors, a ring: window w at w % OVL_SPAN */
	int64_t starts_ns[OVL_SPAN];    /* their first arrivals */
	int extending;                  /* the flagged span's windows still meet the criterion */
	struct ovl_found found;
};

/* A detector for a run on devices devices (>= 1). */
void ovl_init(struct ovl_detector *o, uint32_t devices);

/* Judges the window just filled (called by ovl_arrival every K arrivals). */
void ovl_window_end(struct ovl_detector *o);

/* Arrival at now_ns found in_system requests arrived and not finished. */
static inline void ovl_arrival(struct ovl_detector *o, int64_t now_ns, uint64_t in_system)
{
	if (o->in_window == 0) {
		o->window_start_ns = now_ns;
		o->floor = in_system;
	} else if (in_system < o->floor) {
		o->floor = in_system;
	}
	o->last_arrival_ns = now_ns;
	if (++o->in_window == o->window_len)
		ovl_window_end(o);
}

#endif
