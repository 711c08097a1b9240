/* util/sort_small.h: an insertion sort for the short arrays where it beats
 * anything cleverer (a radix sort's small buckets, the oracle's keys of one
 * batch). Ascending, in place. Pure, header-only. */
#ifndef SB_UTIL_SORT_SMALL_H
#define SB_UTIL_SORT_SMALL_H

#include <stddef.h>
#include <stdint.h>

static inline void insertion_sort_u64(uint64_t *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t x = v[i];
		size_t j = i;
		for (; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
}

#endif
