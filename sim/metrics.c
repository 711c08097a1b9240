/* sim/metrics.c: per-run latency statistics, on the simulator's hot path.
 *
 * End-to-end latencies are kept exactly (int64 ns, 8 bytes each) and sorted
 * once at the end with an LSD radix sort (16-bit digits, passes whose digit
 * is the same in every sample skipped), several times faster than qsort for
 * millions of samples. Quantiles follow gsl_stats_quantile_from_sorted_data
 * (index q*(n-1), linear interpolation) but read the int64 array directly.
 *
 * Queueing time is not kept per request: an exact running sum gives the mean
 * and a log-linear histogram gives the p99. A value v >= 256 ns falls in the
 * bucket (e, m) where e is the index of its highest set bit and m the next 7
 * bits, so a bucket spans 2^(e-7) ns starting at >= 2^e: relative width
 * <= 1/128. Reporting the bucket's midpoint bounds the relative error by
 * 1/256 (< 0.4%); values 0..255 have one-value buckets and are exact. The
 * histogram's p99 is the nearest-rank sample (rank ceil(0.99 n), 1-based),
 * since an interpolated quantile is not defined on bucketed data.
 */
#include "metrics.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* 16-bit digits: measured faster here than 11-bit ones per pass, and latencies
 * below 2^32 ns (4.3 s) need only two passes instead of three */
#define RADIX_BITS 16
#define RADIX_SIZE (1u << RADIX_BITS)

#define HIST_SUB_BITS 7           /* mantissa bits kept below the highest set bit */
#define HIST_SUB (1 << HIST_SUB_BITS)
/* bucket index of v = v for v < 256, (e - 6) * 128 + m above; e <= 62 */
#define HIST_BUCKETS ((62 - 6) * HIST_SUB + HIST_SUB)

#define NS_PER_MS 1e6

struct metrics {
	int64_t *lat_ns;              /* latency samples, owned; sorted after finish */
	size_t n;                     /* samples recorded */
	size_t cap;                   /* capacity of lat_ns, in samples */
	int sorted;                   /* lat_ns is sorted (no record since the last finish) */
	uint64_t lat_sum_lo, lat_sum_hi;     /* exact 128-bit sum of latencies, ns */
	uint64_t queue_sum_lo, queue_sum_hi; /* exact 128-bit sum of queueing times, ns */
	uint64_t queue_hist[HIST_BUCKETS];   /* queueing-time counts per log-linear bucket */
};

struct metrics *metrics_create(size_t expected_samples)
{
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m)
		goto fail;
	m->cap = expected_samples > 0 ? expected_samples : 1024;
	if (m->cap > SIZE_MAX / sizeof(*m->lat_ns))
		goto fail;
	m->lat_ns = malloc(m->cap * sizeof(*m->lat_ns));
	if (!m->lat_ns)
		goto fail;
	return m;
fail:
	free(m);
	return NULL;
}

void metrics_destroy(struct metrics *m)
{
	if (!m)
		return;
	free(m->lat_ns);
	free(m);
}

static inline unsigned hist_bucket(uint64_t v)
{
	if (v < 2 * HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v);
	unsigned sub = (unsigned)(v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1);
	return (e - (HIST_SUB_BITS - 1)) * HIST_SUB + sub;
}

/* midpoint of the integers a bucket holds, in ns */
static double hist_bucket_mid_ns(unsigned b)
{
	if (b < 2 * HIST_SUB)
		return (double)b;
	unsigned e = b / HIST_SUB + (HIST_SUB_BITS - 1);
	unsigned sub = b % HIST_SUB;
	uint64_t width = 1ull << (e - HIST_SUB_BITS);
	uint64_t lo = (1ull << e) + (uint64_t)sub * width;
	return (double)lo + (double)(width - 1) / 2.0;
}

static inline void sum128_add(uint64_t *lo, uint64_t *hi, uint64_t v)
{
	uint64_t s = *lo + v;
	*hi += s < *lo;
	*lo = s;
}

static long double sum128_value(uint64_t lo, uint64_t hi)
{
	return (long double)hi * 18446744073709551616.0L + (long double)lo;
}

static int metrics_grow(struct metrics *m)
{
	size_t cap = m->cap * 2;
	if (cap < m->cap || cap > SIZE_MAX / sizeof(*m->lat_ns))
		return -1;
	int64_t *p = realloc(m->lat_ns, cap * sizeof(*p));
	if (!p)
		return -1;
	m->lat_ns = p;
	m->cap = cap;
	return 0;
}

int metrics_record(struct metrics *m, int64_t latency_ns, int64_t queue_ns)
{
	assert(latency_ns >= 0 && queue_ns >= 0);
	if (m->n == m->cap && metrics_grow(m) < 0)
		return -1;
	m->lat_ns[m->n++] = latency_ns;
	m->sorted = 0;
	/* a negative time is a caller bug; counting it as 0 keeps release builds sane */
	uint64_t q = queue_ns > 0 ? (uint64_t)queue_ns : 0;
	uint64_t l = latency_ns > 0 ? (uint64_t)latency_ns : 0;
	sum128_add(&m->lat_sum_lo, &m->lat_sum_hi, l);
	sum128_add(&m->queue_sum_lo, &m->queue_sum_hi, q);
	m->queue_hist[hist_bucket(q)]++;
	return 0;
}

/* Flipping the sign bit maps int64 order onto uint64 order, so negative values
 * sort correctly too although latencies never are. */
static inline unsigned radix_digit(int64_t v, unsigned shift)
{
	uint64_t u = (uint64_t)v ^ (1ull << 63);
	return (unsigned)(u >> shift) & (RADIX_SIZE - 1);
}

/* Sorts v[0..n) using tmp[0..n) as scratch; returns the buffer that holds the
 * sorted values (v or tmp, depending on how many passes ran), or NULL when
 * the digit counters cannot be allocated. */
static int64_t *radix_sort(int64_t *v, int64_t *tmp, size_t n)
{
	/* bits that differ between some two values; a digit with none of them is
	 * the same in every value and its pass would not change the order */
	uint64_t or_bits = 0, and_bits = ~0ull;
	for (size_t i = 0; i < n; i++) {
		or_bits |= (uint64_t)v[i];
		and_bits &= (uint64_t)v[i];
	}
	uint64_t varying = or_bits ^ and_bits;
	size_t *count = malloc(RADIX_SIZE * sizeof(*count));
	if (!count)
		return NULL;
	int64_t *src = v, *dst = tmp;
	for (unsigned shift = 0; shift < 64; shift += RADIX_BITS) {
		if (((varying >> shift) & (RADIX_SIZE - 1)) == 0)
			continue;
		memset(count, 0, RADIX_SIZE * sizeof(*count));
		for (size_t i = 0; i < n; i++)
			count[radix_digit(src[i], shift)]++;
		size_t off = 0;
		for (unsigned d = 0; d < RADIX_SIZE; d++) {
			size_t c = count[d];
			count[d] = off;
			off += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[radix_digit(src[i], shift)]++] = src[i];
		int64_t *t = src;
		src = dst;
		dst = t;
	}
	free(count);
	return src;
}

static int cmp_int64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int metrics_sort_ns(int64_t *v, size_t n)
{
	if (n < 2)
		return 0;
	int64_t *tmp = malloc(n * sizeof(*tmp));
	if (!tmp)
		return -1;
	int64_t *out = radix_sort(v, tmp, n);
	if (!out) {
		free(tmp);
		return -1;
	}
	if (out != v)
		memcpy(v, out, n * sizeof(*v));
	free(tmp);
	return 0;
}

static void metrics_sort(struct metrics *m)
{
	if (m->sorted)
		return;
	m->sorted = 1;
	if (m->n < 2)
		return;
	int64_t *tmp = malloc(m->n * sizeof(*tmp));
	int64_t *out = tmp ? radix_sort(m->lat_ns, tmp, m->n) : NULL;
	if (!out) {
		/* finish cannot fail: without scratch memory, sort in place */
		free(tmp);
		qsort(m->lat_ns, m->n, sizeof(*m->lat_ns), cmp_int64);
		return;
	}
	if (out == tmp) {
		/* keep the buffer that holds the result rather than copying back */
		free(m->lat_ns);
		m->lat_ns = tmp;
		m->cap = m->n;
	} else {
		free(tmp);
	}
}

/* gsl_stats_quantile_from_sorted_data's rule, on int64 samples; ns */
static double quantile_ns(const int64_t *x, size_t n, double q)
{
	if (n == 0)
		return 0.0;
	const double index = q * (double)(n - 1);
	const size_t lhs = (size_t)index;
	const double delta = index - (double)lhs;
	if (lhs >= n - 1)
		return (double)x[n - 1];
	return (1 - delta) * (double)x[lhs] + delta * (double)x[lhs + 1];
}

/* first index whose value exceeds t, in a sorted array */
static size_t upper_bound(const int64_t *x, size_t n, int64_t t)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (x[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static double queue_p99_ns(const struct metrics *m)
{
	/* nearest rank, 1-based: ceil(0.99 n) in integers to avoid rounding at exact multiples */
	uint64_t n = m->n;
	uint64_t rank = n / 100 * 99 + ((n % 100) * 99 + 99) / 100;
	uint64_t cum = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		cum += m->queue_hist[b];
		if (cum >= rank)
			return hist_bucket_mid_ns(b);
	}
	return 0.0;
}

void metrics_finish(struct metrics *m, int64_t sla_ns, struct metrics_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->count = m->n;
	if (m->n == 0)
		return;
	metrics_sort(m);
	const int64_t *x = m->lat_ns;
	size_t n = m->n;
	s->mean_ms = (double)(sum128_value(m->lat_sum_lo, m->lat_sum_hi) / (long double)n) / NS_PER_MS;
	s->p50_ms = quantile_ns(x, n, 0.50) / NS_PER_MS;
	s->p90_ms = quantile_ns(x, n, 0.90) / NS_PER_MS;
	s->p95_ms = quantile_ns(x, n, 0.95) / NS_PER_MS;
	s->p99_ms = quantile_ns(x, n, 0.99) / NS_PER_MS;
	s->p999_ms = quantile_ns(x, n, 0.999) / NS_PER_MS;
	s->max_ms = (double)x[n - 1] / NS_PER_MS;
	s->min_ms = (double)x[0] / NS_PER_MS;
	s->queue_mean_ms = (double)(sum128_value(m->queue_sum_lo, m->queue_sum_hi) / (long double)n) / NS_PER_MS;
	s->queue_p99_ms = queue_p99_ns(m) / NS_PER_MS;
	s->sla_violation_rate = (double)(n - upper_bound(x, n, sla_ns)) / (double)n;
	for (size_t i = 0; i < METRICS_CDF_POINTS; i++)
		s->cdf_ms[i] = quantile_ns(x, n, (double)(i + 1) / METRICS_CDF_POINTS) / NS_PER_MS;
}

const int64_t *metrics_sorted_ns(const struct metrics *m, size_t *n)
{
	assert(m->sorted || m->n < 2);
	*n = m->n;
	return m->lat_ns;
}

size_t metrics_memory_bytes(const struct metrics *m)
{
	return sizeof(*m) + m->cap * sizeof(*m->lat_ns);
}
