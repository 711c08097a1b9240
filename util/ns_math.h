/* util/ns_math.h: saturating arithmetic on nanosecond durations.
 *
 * Simulated time is int64 nanoseconds (292 years). Sums and products of
 * service times (a graph batch's steps times the longest length, a batch's
 * summed estimates) could pass it with extreme inputs; these stop at
 * NS_SATURATED instead of wrapping, so that the engine, which checks every
 * task end against the clock's range, refuses the run instead of storing
 * negative latencies.
 *
 * Contract: operands are durations >= 0; results are exact when they fit and
 * NS_SATURATED otherwise. Pure, header-only.
 */
#ifndef SB_UTIL_NS_MATH_H
#define SB_UTIL_NS_MATH_H

#include <stdint.h>

#define NS_SATURATED INT64_MAX

static inline int64_t ns_add(int64_t a, int64_t b)
{
	int64_t s;
	return __builtin_add_overflow(a, b, &s) ? NS_SATURATED : s;
}

static inline int64_t ns_mul(int64_t a, int64_t n)
{
	int64_t p;
	return __builtin_mul_overflow(a, n, &p) ? NS_SATURATED : p;
}

#endif
