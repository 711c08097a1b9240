/* util/overload.c: judging a window of arrivals (the criterion is in overload.h). */
#include "overload.h"

void ovl_init(struct ovl_detector *o, uint32_t devices)
{
	*o = (struct ovl_detector){ .window_len = (uint64_t)OVL_WINDOW_PER_DEVICE * (devices ? devices : 1) };
	o->found.window_arrivals = o->window_len;
}

void ovl_window_end(struct ovl_detector *o)
{
	uint64_t f = o->floor;
	o->in_window = 0;
	if (!o->have_previous || f <= o->previous_floor) {
		/* a new rise may start here; a flagged rise that stops rising is over */
		o->have_previous = 1;
		o->rising_flagged = 0;
		o->rise_floor = f;
		o->rise_start_ns = o->window_start_ns;
		o->rise_windows = 0;
		o->previous_floor = f;
		return;
	}
	o->previous_floor = f;
	o->rise_windows++;
	if (o->rising_flagged) {               /* the flagged rise goes on: its window grows */
		o->found.end_ns = o->last_arrival_ns;
		o->found.floor_to = f;
		return;
	}
	uint64_t growth = f - o->rise_floor, least = o->window_len / OVL_GROWTH_DIVISOR;
	if (o->found.flagged || o->rise_windows < OVL_RISES || growth < o->rise_floor || growth < least)
		return;
	o->rising_flagged = 1;
	o->found = (struct ovl_found){ .flagged = 1, .start_ns = o->rise_start_ns, .end_ns = o->last_arrival_ns,
		                           .flagged_ns = o->last_arrival_ns, .floor_from = o->rise_floor, .floor_to = f,
		                           .window_arrivals = o->window_len };
}
