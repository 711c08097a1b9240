/* util/radix_sort.c: the in-place radix sorts of latency samples
 * (radix_sort.h): an LSD sort of 32-bit offsets with half of the samples'
 * own buffer as scratch, and an MSD flag sort for spans past 32 bits. */
#include "radix_sort.h"
#include "sort_small.h"

#include <string.h>

/* In-place MSD radix sort (American flag sort): a 12-bit first digit at the
 * highest bits in which the samples differ, then 8-bit digits; each bucket permuted into place by cycle
 * leading, then sorted recursively on the next byte; small buckets finish
 * with insertion sort. No scratch buffer, so the peak memory of a run stays
 * the 8 bytes per sample (an LSD radix sort needs 8 more at the end). */
#define RADIX_INSERTION_MAX 32
#define RADIX_TOP_BITS 12          /* first digit: 4096 buckets */

#define RADIX_SUB_BITS 8            /* later digits: 256 buckets */

static void flag_sort_u64(uint64_t *v, size_t n, unsigned shift, unsigned bits);

/* Permutes v into the buckets of the digit of `bits` bits at `shift` (count,
 * next and end hold 2^bits entries each, the caller's), then sorts each
 * bucket by the bits below it. */
static void flag_partition_u64(uint64_t *v, size_t n, unsigned shift, unsigned bits,
                               size_t *count, size_t *next, size_t *end)
{
	const unsigned nd = 1u << bits, mask = nd - 1;
	memset(count, 0, nd * sizeof count[0]);
	for (size_t i = 0; i < n; i++)
		count[(v[i] >> shift) & mask]++;
	size_t off = 0;
	for (unsigned d = 0; d < nd; d++) {
		next[d] = off;
		off += count[d];
		end[d] = off;
	}
	for (unsigned d = 0; d < nd; d++) {
		while (next[d] < end[d]) {
			uint64_t x = v[next[d]];
			unsigned k = (unsigned)(x >> shift) & mask;
			while (k != d) {
				uint64_t t = v[next[k]];
				v[next[k]++] = x;
				x = t;
				k = (unsigned)(x >> shift) & mask;
			}
			v[next[d]++] = x;
		}
	}
	if (shift == 0)
		return;
	unsigned sub_bits = shift < RADIX_SUB_BITS ? shift : RADIX_SUB_BITS;
	for (unsigned d = 0; d < nd; d++)
		if (count[d] > 1)
			flag_sort_u64(v + end[d] - count[d], count[d], shift - sub_bits, sub_bits);
}

/* Sorts v by a digit of at most RADIX_SUB_BITS bits at `shift`, then each
 * bucket by the bits below it. Its frame holds 256-entry tables only: the
 * recursion goes up to 7 levels deep, and 4096-entry tables at every level
 * (96 KB a frame) overran a stack held small by a tight address-space limit. */
static void flag_sort_u64(uint64_t *v, size_t n, unsigned shift, unsigned bits)
{
	if (n <= RADIX_INSERTION_MAX) {
		insertion_sort_u64(v, n);
		return;
	}
	size_t count[1u << RADIX_SUB_BITS], next[1u << RADIX_SUB_BITS], end[1u << RADIX_SUB_BITS];
	flag_partition_u64(v, n, shift, bits, count, next, end);
}

/* The first digit, up to RADIX_TOP_BITS wide: the one frame with 4096-entry
 * tables. */
static void flag_sort_u64_top(uint64_t *v, size_t n, unsigned shift, unsigned bits)
{
	if (n <= RADIX_INSERTION_MAX || bits <= RADIX_SUB_BITS) {
		flag_sort_u64(v, n, shift, bits);
		return;
	}
	size_t count[1u << RADIX_TOP_BITS], next[1u << RADIX_TOP_BITS], end[1u << RADIX_TOP_BITS];
	flag_partition_u64(v, n, shift, bits, count, next, end);
}

/* LSD radix sort of 32-bit keys below 2^width: as few digits as cover width,
 * of equal width and at most LSD_DIGIT_MAX bits. Wider digits mean fewer
 * passes, but each pass scatters to 2^bits places at once, and past about
 * 2^11 their open cache lines and pages no longer fit the caches and TLB
 * (a serial run's 10M latencies: three 8-bit passes take 28% less time
 * than two 16-bit ones; bench/README.md). count[k] holds digit k's counts,
 * taken by the caller; a digit all keys share is skipped. Returns the sorted
 * keys: w or scratch. */
#define LSD_DIGIT_MAX 11
#define LSD_DIGITS 3                   /* 3 x 11 >= 32 */

struct lsd_digits {
	unsigned ndigits, bits;
	uint32_t mask;
};

static struct lsd_digits lsd_digits(unsigned width)
{
	struct lsd_digits g = { 0, 0, 0 };
	if (width == 0)
		return g;
	g.ndigits = (width + LSD_DIGIT_MAX - 1) / LSD_DIGIT_MAX;
	g.bits = (width + g.ndigits - 1) / g.ndigits;
	g.mask = (1u << g.bits) - 1;
	return g;
}

static uint32_t *lsd_sort_u32(uint32_t *w, uint32_t *scratch, size_t n, struct lsd_digits g,
                              size_t count[LSD_DIGITS][1u << LSD_DIGIT_MAX])
{
	uint32_t *src = w, *dst = scratch;
	for (unsigned k = 0; k < g.ndigits; k++) {
		unsigned shift = k * g.bits;
		size_t *c = count[k];
		if (c[(src[0] >> shift) & g.mask] == n)
			continue;
		size_t off = 0;
		for (uint32_t d = 0; d <= g.mask; d++) {
			size_t m = c[d];
			c[d] = off;
			off += m;
		}
		for (size_t i = 0; i < n; i++)
			dst[c[(src[i] >> shift) & g.mask]++] = src[i];
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/* The sort of radix_sort_i64's usual case, once the samples are packed:
 * n 32-bit offsets from lo in the first half of an 8n-byte buffer, their
 * digits counted, sorted with the second half as scratch and unpacked as
 * int64 values over the whole buffer from whichever half holds them. */
static void sort_packed(unsigned char *bytes, size_t n, int64_t lo, struct lsd_digits g,
                        size_t count[LSD_DIGITS][1u << LSD_DIGIT_MAX])
{
	unsigned char *sorted = (unsigned char *)lsd_sort_u32((uint32_t *)bytes, (uint32_t *)bytes + n, n, g, count);
	if (sorted == bytes) {
		/* from the end: int64 slot i covers 32-bit slots 2i and 2i+1, both >= i, already read */
		for (size_t i = n; i-- > 0;) {
			uint32_t w;
			memcpy(&w, bytes + i * 4, 4);
			int64_t x = (int64_t)((uint64_t)lo + w);
			memcpy(bytes + i * 8, &x, 8);
		}
	} else {
		/* from the start: int64 slot i covers scratch slots 2i - n and 2i - n + 1, both <= i, already read */
		for (size_t i = 0; i < n; i++) {
			uint32_t w;
			memcpy(&w, sorted + i * 4, 4);
			int64_t x = (int64_t)((uint64_t)lo + w);
			memcpy(bytes + i * 8, &x, 8);
		}
	}
}

/* Sorts int64 samples in place, with no memory beyond the samples' own.
 * Usual case: the samples span less than 2^32 ns (4.3 s), so each fits in 32
 * bits as an offset from the minimum; packed into the first half of the
 * buffer (counting their digits on the way) they leave the second half free
 * as scratch for an LSD radix sort, and are unpacked from whichever half
 * holds them. Element moves go through memcpy because the halves overlap the
 * int64 storage (no aliasing assumptions). Otherwise the MSD flag sort runs
 * on the values with the sign bit flipped, which maps int64 order onto
 * uint64 order (negatives sort correctly too, though latencies never are). */
void radix_sort_i64(int64_t *v, size_t n)
{
	int64_t lo = v[0], hi = v[0];
	for (size_t i = 1; i < n; i++) {
		lo = v[i] < lo ? v[i] : lo;
		hi = v[i] > hi ? v[i] : hi;
	}
	unsigned char *bytes = (unsigned char *)v;
	uint64_t span = (uint64_t)hi - (uint64_t)lo;
	if (span <= UINT32_MAX) {
		struct lsd_digits g = lsd_digits(span ? 64 - (unsigned)__builtin_clzll(span) : 0);
		size_t count[LSD_DIGITS][1u << LSD_DIGIT_MAX];
		memset(count, 0, sizeof count);
		/* pack: slot i of the 32-bit array lies at or below int64 slot i, which was read first */
		for (size_t i = 0; i < n; i++) {
			int64_t x;
			memcpy(&x, bytes + i * 8, 8);
			uint32_t w = (uint32_t)((uint64_t)x - (uint64_t)lo);
			memcpy(bytes + i * 4, &w, 4);
			for (unsigned k = 0; k < g.ndigits; k++)
				count[k][(w >> (k * g.bits)) & g.mask]++;
		}
		sort_packed(bytes, n, lo, g, count);
		return;
	}
	uint64_t *u = (uint64_t *)v;
	uint64_t or_bits = 0, and_bits = ~0ull;
	for (size_t i = 0; i < n; i++) {
		u[i] ^= 1ull << 63;
		or_bits |= u[i];
		and_bits &= u[i];
	}
	uint64_t varying = or_bits ^ and_bits;
	if (varying) {
		/* a wide first digit leaves buckets small enough to stay in cache */
		unsigned width = 64 - (unsigned)__builtin_clzll(varying);
		unsigned bits = width < RADIX_TOP_BITS ? width : RADIX_TOP_BITS;
		flag_sort_u64_top(u, n, width - bits, bits);
	}
	for (size_t i = 0; i < n; i++)
		u[i] ^= 1ull << 63;
}

void radix_sort_narrow(unsigned char *bytes, size_t n)
{
	uint32_t *w = (uint32_t *)bytes;
	uint32_t lo = w[0], hi = w[0];
	for (size_t i = 1; i < n; i++) {
		lo = w[i] < lo ? w[i] : lo;
		hi = w[i] > hi ? w[i] : hi;
	}
	struct lsd_digits g = lsd_digits(hi > lo ? 32 - (unsigned)__builtin_clz(hi - lo) : 0);
	size_t count[LSD_DIGITS][1u << LSD_DIGIT_MAX];
	memset(count, 0, sizeof count);
	for (size_t i = 0; i < n; i++) {
		w[i] -= lo;
		for (unsigned k = 0; k < g.ndigits; k++)
			count[k][(w[i] >> (k * g.bits)) & g.mask]++;
	}
	sort_packed(bytes, n, lo, g, count);
}
