/* util/overload.c: judging a window of arrivals (the criterion is in overload.h). */
#include "overload.h"

void ovl_init(struct ovl_detector *o, uint32_t devices)
{
	*o = (struct ovl_detector){ .window_len = (uint64_t)OVL_WINDOW_PER_DEVICE * (devices ? devices : 1) };
	o->found.window_arrivals = o->window_len;
}

/* Whether the last OVL_SPAN floors (oldest first in f) trend upward: Mann-Kendall's S. */
static int ovl_trend(const uint64_t *f)
{
	int s = 0;
	for (int a = 0; a < OVL_SPAN; a++)
		for (int b = a + 1; b < OVL_SPAN; b++)
			s += (f[b] > f[a]) - (f[b] < f[a]);
	return s >= OVL_TREND_PAIRS;
}

/* ... and grew enough to flag: at least doubled, and by K / OVL_GROWTH_DIVISOR or more. */
static int ovl_grew(const uint64_t *f, uint64_t window_len)
{
	uint64_t first = f[0], last = f[OVL_SPAN - 1];
	return last >= first && last - first >= first && last - first >= window_len / OVL_GROWTH_DIVISOR;
}

void ovl_window_end(struct ovl_detector *o)
{
	o->in_window = 0;
	uint64_t w = o->windows++;
	o->floors[w % OVL_SPAN] = o->floor;
	o->starts_ns[w % OVL_SPAN] = o->window_start_ns;
	if (o->windows < OVL_SPAN || (o->found.flagged && !o->extending))
		return;
	uint64_t f[OVL_SPAN];
	int64_t start[OVL_SPAN];
	for (int k = 0; k < OVL_SPAN; k++) {       /* oldest first */
		f[k] = o->floors[(w + 1 + (uint64_t)k) % OVL_SPAN];
		start[k] = o->starts_ns[(w + 1 + (uint64_t)k) % OVL_SPAN];
	}
	int trend = ovl_trend(f);
	if (o->extending) {
		/* the flagged rise goes on while its spans keep the trend and the floor stays above their first half */
		uint64_t early = 0;
		for (int k = 0; k < OVL_SPAN / 2; k++)
			early = f[k] > early ? f[k] : early;
		o->extending = trend && o->floor > early;
		if (o->extending) {
			o->found.end_ns = o->last_arrival_ns;
			o->found.floor_to = o->floor;
		}
		return;
	}
	if (!trend || !ovl_grew(f, o->window_len))
		return;
	/* where the rise began: the latest window whose floor was within an eighth of the rise above the lowest */
	uint64_t lowest = f[0];
	for (int k = 1; k < OVL_SPAN; k++)
		lowest = f[k] < lowest ? f[k] : lowest;
	uint64_t near = lowest + (o->floor - lowest) / 8;
	int low = 0;
	for (int k = 0; k < OVL_SPAN; k++)
		if (f[k] <= near)
			low = k;
	o->extending = 1;
	o->found = (struct ovl_found){ .flagged = 1, .start_ns = start[low], .end_ns = o->last_arrival_ns,
		                           .flagged_ns = o->last_arrival_ns, .floor_from = f[low], .floor_to = o->floor,
		                           .window_arrivals = o->window_len };
}
