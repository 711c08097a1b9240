/* util/grow.h: the one way an array grows: its capacity doubled (from a
 * first size) until what is needed fits, so n appends cost O(n) copies.
 * Inline, because the driver and the policies grow arrays on their per-event
 * paths. Every function leaves the array and its capacity as they were when
 * it fails (-1: out of memory, or a size past SIZE_MAX). */
#ifndef SB_GROW_H
#define SB_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The capacity that holds need items of size bytes: cap (first when 0)
 * doubled until it does; 0 when that passes SIZE_MAX bytes. */
static inline size_t grow_capacity(size_t cap, size_t need, size_t first, size_t size)
{
	size_t c = cap ? cap : first;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			return 0;
		c *= 2;
	}
	return c > SIZE_MAX / size ? 0 : c;
}

/* Reallocates the array whose pointer is at items (any object pointer's
 * address) to n items of size bytes; 0, or -1. */
static inline int grow_to(void *items, size_t n, size_t size)
{
	void *old, *p;
	memcpy(&old, items, sizeof old);
	p = realloc(old, n * size);
	if (!p)
		return -1;
	memcpy(items, &p, sizeof p);
	return 0;
}

/* Room for need items in the array at items, of capacity *cap (first when
 * it grows from nothing): the capacity doubled as grow_capacity says. */
static inline int grow_array(void *items, size_t *cap, size_t need, size_t first, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = grow_capacity(*cap, need, first, size);
	if (!c || grow_to(items, c, size) != 0)
		return -1;
	*cap = c;
	return 0;
}

/* grow_array for an array variable and its size_t capacity. */
#define GROW(items, cap, need, first) grow_array(&(items), &(cap), (need), (first), sizeof *(items))

#endif
