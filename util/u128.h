/* util/u128.h: exact unsigned 128-bit sums (of nanoseconds; of KV blocks x
 * nanoseconds), where a double's rounding would make a sum depend on the
 * order of its terms, and 64 bits could overflow over a long run. */
#ifndef SB_U128_H
#define SB_U128_H

#include <stdint.h>

struct u128 {
	uint64_t lo, hi;
};

static inline void u128_add(struct u128 *s, uint64_t v)
{
	uint64_t sum = s->lo + v;
	s->hi += sum < s->lo;
	s->lo = sum;
}

/* s += a x b, exactly: the four products of the 32-bit halves. */
static inline void u128_add_mul(struct u128 *s, uint64_t a, uint64_t b)
{
	uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
	uint64_t mid1 = a1 * b0, mid2 = a0 * b1;
	u128_add(s, a0 * b0);
	u128_add(s, mid1 << 32);
	u128_add(s, mid2 << 32);
	s->hi += a1 * b1 + (mid1 >> 32) + (mid2 >> 32);
}

static inline long double u128_value(struct u128 s)
{
	return (long double)s.hi * 18446744073709551616.0L + (long double)s.lo;
}

#endif
