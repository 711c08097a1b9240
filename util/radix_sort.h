/* util/radix_sort.h: in-place radix sorts of latency samples, with no memory
 * beyond the samples' own 8 bytes each: several times faster than qsort for
 * millions of samples (bench/README.md). Pure functions; util/metrics sorts
 * a run's latencies with them. */
#ifndef SB_UTIL_RADIX_SORT_H
#define SB_UTIL_RADIX_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts v[0..n) ascending (n >= 2). */
void radix_sort_i64(int64_t *v, size_t n);

/* bytes holds n uint32 values in its first 4n bytes and has room for 8n:
 * leaves there the n values sorted ascending as int64 (n >= 1). */
void radix_sort_narrow(unsigned char *bytes, size_t n);

#endif
