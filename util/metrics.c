/* util/metrics.c: per-run latency statistics, on the simulator's hot path.
 *
 * End-to-end latencies are kept exactly (uint32 ns while they fit, then
 * int64) and sorted once at the end, in place with no memory beyond 8 bytes
 * each (util/radix_sort.h): several times faster than qsort
 * for millions of samples; a summary without a CDF only selects its
 * quantiles (select_ranks). Quantiles follow gsl_stats_quantile_from_sorted_data (index
 * q*(n-1), linear interpolation) but read the int64 array directly.
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
#include "grow.h"
#include "radix_sort.h"
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#define HIST_SUB_BITS 7           /* mantissa bits kept below the highest set bit */
#define HIST_SUB (1 << HIST_SUB_BITS)
/* bucket index of v = v for v < 256, (e - 6) * 128 + m above; e <= 62 */
#define HIST_BUCKETS METRICS_HIST_BUCKETS
_Static_assert(METRICS_HIST_BUCKETS == (62 - 6) * HIST_SUB + HIST_SUB, "the histogram's size in metrics.h");

#define NS_PER_MS 1e6

/* Latencies are kept in 4 bytes while every one fits (below 2^32 ns, 4.3 s:
 * a served run's), halving the store and the pages a long run touches; the
 * first that does not widens the store to int64 in place. */
#define NARROW_MAX_NS ((int64_t)UINT32_MAX)

struct metrics {
	void *lat;                    /* latency samples, owned: uint32_t ns while narrow, else int64_t */
	size_t n;                     /* samples recorded */
	size_t cap;                   /* capacity of lat, in samples */
	int64_t narrow_max_ns;        /* the largest latency the store takes as it is: NARROW_MAX_NS
	                               * while narrow, -1 once wide (every record then takes record_slow) */
	int sorted;                   /* lat is wide and sorted (no record since the last finish) */
	struct u128 lat_sum;                 /* exact sum of latencies, ns */
	struct metrics_hist queue;    /* queueing times */
	struct metrics_hist *lat_hist;/* owned: a histogram store (metrics_create_histogram) keeps the
	                               * latencies here, none one by one (lat NULL) ... */
	int64_t min_ns;               /* ... with the smallest exactly ... */
	int64_t over_ns;              /* ... and how many exceed over_ns, counted exactly */
	uint64_t over;
};

struct metrics *metrics_create(size_t expected_samples)
{
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m)
		goto fail;
	m->cap = expected_samples > 0 ? expected_samples : 1024;
	m->narrow_max_ns = NARROW_MAX_NS;
	if (m->cap > SIZE_MAX / sizeof(int64_t))
		goto fail;
	m->lat = malloc(m->cap * sizeof(uint32_t));
	if (!m->lat)
		goto fail;
	return m;
fail:
	free(m);
	return NULL;
}

struct metrics *metrics_create_histogram(int64_t over_ns)
{
	struct metrics *m = calloc(1, sizeof(*m));
	if (!m || !(m->lat_hist = calloc(1, sizeof *m->lat_hist))) {
		free(m);
		return NULL;
	}
	m->over_ns = over_ns;
	m->min_ns = INT64_MAX;
	return m;
}

void metrics_destroy(struct metrics *m)
{
	if (!m)
		return;
	free(m->lat);
	free(m->lat_hist);
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


/* metrics_hist_add, inline for metrics_record (every request's queueing time) */
static inline void hist_add(struct metrics_hist *h, int64_t ns)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 0;
	h->count[hist_bucket(v)]++;
	h->n++;
	u128_add(&h->sum, v);
	if ((int64_t)v > h->max_ns)
		h->max_ns = (int64_t)v;
}

static int wide(const struct metrics *m)
{
	return m->narrow_max_ns < 0;
}

static size_t sample_bytes(const struct metrics *m)
{
	return wide(m) ? sizeof(int64_t) : sizeof(uint32_t);
}

static int metrics_grow(struct metrics *m)
{
	if (m->cap > SIZE_MAX / 2 / sizeof(int64_t))   /* the samples may widen to int64 later */
		return -1;
	return grow_array(&m->lat, &m->cap, m->cap + 1, 1024, sample_bytes(m));
}

/* Every sample to int64, in place: from the last, since int64 slot i
 * covers 4-byte slots 2i and 2i + 1, both at or after i and so already read
 * (through memcpy, as the two views overlap). */
static int metrics_widen(struct metrics *m)
{
	unsigned char *bytes = realloc(m->lat, m->cap * sizeof(int64_t));
	if (!bytes)
		return -1;
	for (size_t i = m->n; i-- > 0;) {
		uint32_t w;
		memcpy(&w, bytes + i * 4, 4);
		int64_t x = w;
		memcpy(bytes + i * 8, &x, 8);
	}
	m->lat = bytes;
	m->narrow_max_ns = -1;
	return 0;
}

/* A record the narrow store cannot take as it is: full, or too long for it, or wide. */
static __attribute__((noinline)) int record_slow(struct metrics *m, int64_t latency_ns)
{
	if (m->n == m->cap && metrics_grow(m) < 0)
		return -1;
	if (!wide(m) && latency_ns > NARROW_MAX_NS && metrics_widen(m) < 0)
		return -1;
	if (wide(m))
		((int64_t *)m->lat)[m->n++] = latency_ns;
	else
		((uint32_t *)m->lat)[m->n++] = (uint32_t)latency_ns;
	return 0;
}

int metrics_record(struct metrics *m, int64_t latency_ns, int64_t queue_ns)
{
	assert(latency_ns >= 0 && queue_ns >= 0);
	/* a negative time is a caller bug; counting it as 0 keeps release builds sane */
	uint64_t q = queue_ns > 0 ? (uint64_t)queue_ns : 0;
	uint64_t l = latency_ns > 0 ? (uint64_t)latency_ns : 0;
	if (m->lat_hist) {
		hist_add(m->lat_hist, (int64_t)l);
		m->n++;
		m->min_ns = (int64_t)l < m->min_ns ? (int64_t)l : m->min_ns;
		m->over += (int64_t)l > m->over_ns;
	} else if (m->n < m->cap && (int64_t)l <= m->narrow_max_ns)
		((uint32_t *)m->lat)[m->n++] = (uint32_t)l;
	else if (record_slow(m, (int64_t)l) != 0)
		return -1;
	m->sorted = 0;
	u128_add(&m->lat_sum, l);
	hist_add(&m->queue, (int64_t)q);
	return 0;
}

void metrics_sort_ns(int64_t *v, size_t n)
{
	if (n >= 2)
		radix_sort_i64(v, n);
}

/* The narrow store sorted into a wide one: the buffer doubled to 8 bytes a
 * sample, then radix_sort_narrow (its second half the scratch). */
static int sort_narrow(struct metrics *m)
{
	unsigned char *bytes = realloc(m->lat, m->cap * sizeof(int64_t));
	if (!bytes)
		return -1;
	m->lat = bytes;
	m->narrow_max_ns = -1;
	radix_sort_narrow(bytes, m->n);
	return 0;
}

/* Leaves the samples (at least one) wide and sorted. 0, or -1 when
 * widening them runs out of memory. */
static int metrics_sort(struct metrics *m)
{
	assert(m->n >= 1);
	if (m->sorted)
		return 0;
	if (!wide(m)) {
		if (sort_narrow(m) != 0)
			return -1;
	} else if (m->n >= 2) {
		radix_sort_i64(m->lat, m->n);
	}
	m->sorted = 1;
	return 0;
}

/* The values at the given ranks of v (ascending ranks < n), as v sorted
 * would hold them, without sorting v: counted by the leading SELECT_BITS
 * bits in which its samples differ, only the buckets that hold a wanted
 * rank are gathered, each to its own stretch at the front, and searched the
 * same way on the bits below (for a summary's quantiles a few thousand
 * samples of millions; at most three levels for 32 bits). v is reordered,
 * every sample kept. lo, hi: v's least and greatest values. */
#define SELECT_BITS 11
#define SELECT_MAX_RANKS 16

static void select_ranks(uint32_t *v, size_t n, uint32_t lo, uint32_t hi, const size_t *rank, size_t nrank,
                         uint32_t *out)
{
	assert(nrank <= SELECT_MAX_RANKS);
	if (lo == hi) {
		for (size_t j = 0; j < nrank; j++)
			out[j] = lo;
		return;
	}
	unsigned width = 32 - (unsigned)__builtin_clz(hi - lo);
	unsigned shift = width > SELECT_BITS ? width - SELECT_BITS : 0;
	size_t count[1u << SELECT_BITS] = { 0 };
	for (size_t i = 0; i < n; i++)
		count[(v[i] - lo) >> shift]++;
	/* the wanted buckets, ascending, each with the samples in buckets before it */
	uint32_t bucket[SELECT_MAX_RANKS];
	size_t below[SELECT_MAX_RANKS], nb = 0, b = 0, sum = 0;
	unsigned char wanted[1u << SELECT_BITS] = { 0 };
	for (size_t j = 0; j < nrank; j++) {
		while (sum + count[b] <= rank[j])
			sum += count[b++];
		if (!wanted[b]) {
			wanted[b] = 1;
			bucket[nb] = (uint32_t)b;
			below[nb++] = sum;
		}
	}
	/* swapped to the front, not copied over: v keeps every sample */
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (wanted[(v[i] - lo) >> shift]) {
			uint32_t x = v[i];
			v[i] = v[kept];
			v[kept++] = x;
		}
	size_t start = 0, j = 0;
	for (size_t k = 0; k < nb; k++) {
		/* bucket k's samples to the front of what is gathered, then its ranks among them */
		size_t end = start;
		uint32_t blo = UINT32_MAX, bhi = 0;
		for (size_t i = start; i < kept; i++)
			if ((v[i] - lo) >> shift == bucket[k]) {
				uint32_t x = v[i];
				v[i] = v[end];
				v[end++] = x;
				blo = x < blo ? x : blo;
				bhi = x > bhi ? x : bhi;
			}
		size_t first = j, local[SELECT_MAX_RANKS];
		for (; j < nrank && rank[j] < below[k] + count[bucket[k]]; j++)
			local[j - first] = rank[j] - below[k];
		select_ranks(v + start, end - start, blo, bhi, local, j - first, out + first);
		start = end;
	}
}

/* gsl_stats_quantile_from_sorted_data's rule, on int64 samples: the
 * quantile q of n sorted samples lies between samples lhs and lhs + 1 */
static size_t quantile_lhs(size_t n, double q)
{
	return (size_t)(q * (double)(n - 1));
}

/* ... interpolated between those two samples' values a and b (a alone at the last sample); ns */
static double quantile_mix(size_t n, double q, int64_t a, int64_t b)
{
	const double index = q * (double)(n - 1);
	const size_t lhs = (size_t)index;
	const double delta = index - (double)lhs;
	if (lhs >= n - 1)
		return (double)a;
	return (1 - delta) * (double)a + delta * (double)b;
}

static double quantile_ns(const int64_t *x, size_t n, double q)
{
	if (n == 0)
		return 0.0;
	size_t lhs = quantile_lhs(n, q);
	return quantile_mix(n, q, x[lhs], lhs + 1 < n ? x[lhs + 1] : x[lhs]);
}

/* The summary's quantiles, in the order of its fields p50 ... p999. */
#define SUMMARY_QUANTILES 5
static const double summary_q[SUMMARY_QUANTILES] = { 0.50, 0.90, 0.95, 0.99, 0.999 };

static double *summary_quantile_ms(struct metrics_summary *s, unsigned k)
{
	double *field[SUMMARY_QUANTILES] = { &s->p50_ms, &s->p90_ms, &s->p95_ms, &s->p99_ms, &s->p999_ms };
	return field[k];
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

void metrics_hist_add(struct metrics_hist *h, int64_t ns)
{
	hist_add(h, ns);
}

void metrics_hist_add_n(struct metrics_hist *h, int64_t ns, uint32_t times)
{
	uint64_t v = ns > 0 ? (uint64_t)ns : 0;
	h->count[hist_bucket(v)] += times;
	h->n += times;
	u128_add_mul(&h->sum, v, times);
	if (times && (int64_t)v > h->max_ns)
		h->max_ns = (int64_t)v;
}

double metrics_hist_quantile_ns(const struct metrics_hist *h, uint64_t num, uint64_t den)
{
	/* nearest rank, 1-based: ceil(n num / den) in integers, exact at multiples */
	uint64_t n = h->n;
	uint64_t rank = n / den * num + ((n % den) * num + den - 1) / den;
	uint64_t cum = 0;
	for (unsigned b = 0; b < HIST_BUCKETS; b++) {
		cum += h->count[b];
		if (cum >= rank && cum > 0)
			return hist_bucket_mid_ns(b);
	}
	return 0.0;
}

void metrics_hist_quantiles_ns(const struct metrics_hist *h, double *out, uint64_t npoints)
{
	/* the ranks only grow with i: one pass over the buckets */
	uint64_t n = h->n, cum = 0;
	unsigned b = 0;
	for (uint64_t i = 1; i <= npoints; i++) {
		uint64_t rank = n / npoints * i + ((n % npoints) * i + npoints - 1) / npoints;
		while (b < HIST_BUCKETS && (cum + h->count[b] < rank || cum + h->count[b] == 0))
			cum += h->count[b++];
		out[i - 1] = b < HIST_BUCKETS ? hist_bucket_mid_ns(b) : 0.0;
	}
}

double metrics_hist_mean_ns(const struct metrics_hist *h)
{
	return h->n ? (double)(u128_value(h->sum) / (long double)h->n) : 0.0;
}

/* What the two finishes share: the count, the exact mean and the queueing times. 0 when m has no samples. */
static int finish_common(const struct metrics *m, struct metrics_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->count = m->n;
	if (m->n == 0)
		return 0;
	s->mean_ms = (double)(u128_value(m->lat_sum) / (long double)m->n) / NS_PER_MS;
	s->queue_mean_ms = metrics_hist_mean_ns(&m->queue) / NS_PER_MS;
	s->queue_p99_ms = metrics_hist_quantile_ns(&m->queue, 99, 100) / NS_PER_MS;
	return 1;
}

/* r put in its place among nrank ascending, distinct ranks (unless there);
 * returns their new count. */
static size_t add_rank(size_t *rank, size_t nrank, size_t r)
{
	size_t i = 0;
	while (i < nrank && rank[i] < r)
		i++;
	if (i < nrank && rank[i] == r)
		return nrank;
	memmove(rank + i + 1, rank + i, (nrank - i) * sizeof rank[0]);
	rank[i] = r;
	return nrank + 1;
}

/* Where r is in the nrank ranks of rank (it is). */
static size_t rank_index(const size_t *rank, size_t nrank, size_t r)
{
	size_t i = 0;
	while (i + 1 < nrank && rank[i] != r)
		i++;
	return i;
}

/* The summary's quantiles, min, max and SLA rate from the wide, sorted samples; the CDF too when asked. */
static void finish_sorted(const struct metrics *m, int64_t sla_ns, int with_cdf, struct metrics_summary *s)
{
	const int64_t *x = m->lat;
	size_t n = m->n;
	for (unsigned k = 0; k < SUMMARY_QUANTILES; k++)
		*summary_quantile_ms(s, k) = quantile_ns(x, n, summary_q[k]) / NS_PER_MS;
	s->max_ms = (double)x[n - 1] / NS_PER_MS;
	s->min_ms = (double)x[0] / NS_PER_MS;
	s->sla_violation_rate = (double)(n - upper_bound(x, n, sla_ns)) / (double)n;
	/* GSL's interpolation (1 - d) a + d b need not return a when a == b: 141
	 * samples of 8313818387 ns give a point one ulp above a, then a again.
	 * Each point is held at least at the one before, so a stored CDF never
	 * decreases (the summary's quantiles stay GSL's, bit for bit). */
	for (size_t i = 0; with_cdf && i < METRICS_CDF_POINTS; i++) {
		double v = quantile_ns(x, n, (double)(i + 1) / METRICS_CDF_POINTS) / NS_PER_MS;
		s->cdf_ms[i] = i > 0 && v < s->cdf_ms[i - 1] ? s->cdf_ms[i - 1] : v;
	}
}

/* A histogram store's summary: the quantiles and CDF its buckets' midpoints at the nearest ranks
 * (within 1/256), the mean, min and max exact; the violation rate exact at the threshold counted,
 * else the buckets' (a bucket counts as over when its midpoint is). */
static void finish_histogram(const struct metrics *m, int64_t sla_ns, int with_cdf, struct metrics_summary *s)
{
	const struct metrics_hist *h = m->lat_hist;
	static const uint64_t per_mille[SUMMARY_QUANTILES] = { 500, 900, 950, 990, 999 };
	for (unsigned k = 0; k < SUMMARY_QUANTILES; k++)
		*summary_quantile_ms(s, k) = metrics_hist_quantile_ns(h, per_mille[k], 1000) / NS_PER_MS;
	s->max_ms = (double)h->max_ns / NS_PER_MS;
	s->min_ms = (double)m->min_ns / NS_PER_MS;
	uint64_t over = m->over;
	if (sla_ns != m->over_ns) {
		over = 0;
		for (unsigned b = 0; b < HIST_BUCKETS; b++)
			over += hist_bucket_mid_ns(b) > (double)sla_ns ? h->count[b] : 0;
	}
	s->sla_violation_rate = (double)over / (double)m->n;
	if (with_cdf)
		metrics_hist_quantiles_ns(h, s->cdf_ms, METRICS_CDF_POINTS);
	for (size_t i = 0; with_cdf && i < METRICS_CDF_POINTS; i++)
		s->cdf_ms[i] /= NS_PER_MS;
}

int metrics_finish(struct metrics *m, int64_t sla_ns, struct metrics_summary *s)
{
	if (!finish_common(m, s))
		return 0;
	if (m->lat_hist) {
		finish_histogram(m, sla_ns, 1, s);
		return 0;
	}
	if (metrics_sort(m) != 0)
		return -1;
	finish_sorted(m, sla_ns, 1, s);
	return 0;
}

int metrics_finish_summary(struct metrics *m, int64_t sla_ns, struct metrics_summary *s)
{
	if (!finish_common(m, s))
		return 0;
	if (m->lat_hist) {
		finish_histogram(m, sla_ns, 0, s);
		return 0;
	}
	if (wide(m)) {
		/* a latency past 4.3 s: a saturated run, where the sort is the simple way */
		if (metrics_sort(m) != 0)
			return -1;
		finish_sorted(m, sla_ns, 0, s);
		return 0;
	}
	uint32_t *x = m->lat;
	size_t n = m->n, over = 0;
	uint32_t lo = x[0], hi = x[0];
	for (size_t i = 0; i < n; i++) {
		lo = x[i] < lo ? x[i] : lo;
		hi = x[i] > hi ? x[i] : hi;
		over += x[i] > sla_ns;
	}
	/* the ranks each quantile interpolates between (lhs, lhs + 1), ascending and distinct */
	size_t rank[2 * SUMMARY_QUANTILES], nrank = 0;
	for (unsigned k = 0; k < SUMMARY_QUANTILES; k++) {
		size_t lhs = quantile_lhs(n, summary_q[k]);
		nrank = add_rank(rank, nrank, lhs);
		nrank = add_rank(rank, nrank, lhs + 1 < n ? lhs + 1 : lhs);
	}
	uint32_t at[2 * SUMMARY_QUANTILES];
	select_ranks(x, n, lo, hi, rank, nrank, at);
	m->sorted = 0;                /* select_ranks reordered the samples */
	for (unsigned k = 0; k < SUMMARY_QUANTILES; k++) {
		size_t lhs = quantile_lhs(n, summary_q[k]), rhs = lhs + 1 < n ? lhs + 1 : lhs;
		*summary_quantile_ms(s, k) = quantile_mix(n, summary_q[k], at[rank_index(rank, nrank, lhs)],
		                                          at[rank_index(rank, nrank, rhs)]) / NS_PER_MS;
	}
	s->max_ms = (double)hi / NS_PER_MS;
	s->min_ms = (double)lo / NS_PER_MS;
	s->sla_violation_rate = (double)over / (double)n;
	return 0;
}

const int64_t *metrics_sorted_ns(const struct metrics *m, size_t *n)
{
	assert(m->sorted || m->n == 0);
	*n = m->n;
	return m->lat;
}

size_t metrics_memory_bytes(const struct metrics *m)
{
	return sizeof(*m) + (m->lat_hist ? sizeof *m->lat_hist : m->cap * sample_bytes(m));
}

uint64_t metrics_tail_min_requests(double q, uint64_t over, double conf)
{
	/* P(at most `over` of n requests land above the true q-quantile) falls
	 * with n; the answer is the first n where it is at most 1 - conf */
	double p = 1.0 - q, alpha = 1.0 - conf;
	uint64_t lo = over + 1, hi = over + 1;
	while (gsl_cdf_binomial_P((unsigned)over, p, (unsigned)hi) > alpha)
		hi *= 2;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (gsl_cdf_binomial_P((unsigned)over, p, (unsigned)mid) <= alpha)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

double metrics_fraction_upper(uint64_t events, uint64_t n, double conf)
{
	if (events >= n)
		return 1.0;
	/* the fraction f at which P(at most `events` of n) = 1 - conf is the
	 * conf quantile of Beta(events + 1, n - events) */
	double a = (double)events + 1, b = (double)(n - events);
	gsl_error_handler_t *was = gsl_set_error_handler_off();   /* a failure to converge is handled below */
	double f = gsl_cdf_beta_Pinv(conf, a, b);
	gsl_set_error_handler(was);
	if (f >= 0 && f <= 1)
		return f;
	/* GSL's inversion does not always converge (it gives NaN at 0.95, 53, 3148: 52 of 3200, a
	 * capacity probe's count): the CDF is monotone, so bisect it, to the last bit a double holds */
	double lo = 0, hi = 1;
	for (int i = 0; i < 200 && lo < hi; i++) {
		double mid = lo + (hi - lo) / 2;
		if (mid <= lo || mid >= hi)
			break;
		if (gsl_cdf_beta_P(mid, a, b) < conf)
			lo = mid;
		else
			hi = mid;
	}
	return hi;
}

uint64_t metrics_fraction_min_trials(double target, double conf)
{
	uint64_t n = 1;
	while (metrics_fraction_upper((uint64_t)(n * target / 2), n, conf) > target)
		n = n < 16 ? n + 1 : n + n / 16;    /* 6% steps: the answer need not be the very fewest */
	return n;
}
