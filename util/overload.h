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
 *  - Windows a..b rise when f_a < f_a+1 < ... < f_b. The run is overloaded
 *    within a window when such a rise spans b - a >= OVL_RISES windows and
 *    its floor at least doubled and grew by at least K / OVL_GROWTH_DIVISOR
 *    requests: f_b - f_a >= max(f_a, K / 8).
 *  - In a stable queue the floors are a stationary series; were they
 *    independent, OVL_RISES rises in a row at one place would have the
 *    chance 1 / (OVL_RISES + 1)! = 1 / 5040 (ties, as at floor 0, only
 *    lower it), and the doubling asks more. Under an excess eps of arrivals
 *    over service the floor rises by about K eps / (1 + eps) a window.
 *  - Reported: the first such rise, to the last window it keeps rising in.
 *
 * Contract: O(1) a call, no allocation; results depend only on the calls
 * (times in ns, counts), so equal runs give equal answers. */
#ifndef SB_OVERLOAD_H
#define SB_OVERLOAD_H

#include <stdint.h>

#define OVL_WINDOW_PER_DEVICE 256   /* arrivals a window, per device */
#define OVL_RISES 6                 /* windows the floor must rise in a row */
#define OVL_GROWTH_DIVISOR 8        /* the floor must gain at least K / 8 requests */

struct ovl_found {
	int flagged;                    /* 1: overloaded within the window below */
	int64_t start_ns, end_ns;       /* the first arrival of the rise's first window, the last of its last */
	int64_t flagged_ns;             /* the last arrival of the window in which the criterion first held */
	uint64_t floor_from, floor_to;  /* the floor of the rise's first window and of its last */
	uint64_t window_arrivals;       /* K */
};

struct ovl_detector {
	uint64_t window_len;            /* K */
	uint64_t in_window;             /* arrivals so far in the current window */
	uint64_t floor;                 /* the current window's least n so far */
	int64_t window_start_ns, last_arrival_ns;
	int have_previous;              /* a window has been judged */
	uint64_t previous_floor;
	uint64_t rise_floor;            /* the floor of the current rise's first window */
	int64_t rise_start_ns;
	uint64_t rise_windows;          /* windows after the rise's first */
	int rising_flagged;             /* the current rise is the flagged one, still rising */
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
