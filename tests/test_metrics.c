/* tests/test_metrics.c: util/metrics.c against independent computations:
 * quantiles and means from GSL on a double copy sorted by gsl_sort, the radix
 * sort against qsort, the queueing-time histogram against the exact
 * nearest-rank p99 of the same samples, and hand-worked small cases.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_rng.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "util/metrics.h"

#define HIST_REL_ERR (1.0 / 256.0)   /* bound stated in util/metrics.c */

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static void assert_close(double got, double want, double rel)
{
	double tol = rel * fabs(want);
	if (tol < 1e-300)
		tol = 1e-300;
	if (!(fabs(got - want) <= tol))
		fail_msg("got %.17g, want %.17g (rel tol %g)", got, want, rel);
}

/* a mix of wide-range values and many duplicates */
static int64_t draw_latency(gsl_rng *r)
{
	if (gsl_rng_uniform(r) < 0.3)
		return (int64_t)gsl_rng_uniform_int(r, 7) * 1000000;
	return (int64_t)(gsl_rng_uniform(r) * 1e10);
}

static void check_quantiles_for_n(size_t n, unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, seed);
	struct metrics *m = metrics_create(n / 3 + 1);
	assert_non_null(m);
	double *d = malloc(n * sizeof(*d));
	assert_non_null(d);
	for (size_t i = 0; i < n; i++) {
		int64_t v = draw_latency(r);
		d[i] = (double)v;
		assert_int_equal(metrics_record(m, v, 0), 0);
	}
	struct metrics_summary s;
	metrics_finish(m, 5000000, &s);

	gsl_sort(d, 1, n);
	assert_int_equal(s.count, n);
	assert_close(s.mean_ms, gsl_stats_mean(d, 1, n) / 1e6, 1e-12);
	assert_true(s.min_ms == d[0] / 1e6);
	assert_true(s.max_ms == d[n - 1] / 1e6);
	assert_close(s.p50_ms, gsl_stats_quantile_from_sorted_data(d, 1, n, 0.50) / 1e6, 1e-14);
	assert_close(s.p90_ms, gsl_stats_quantile_from_sorted_data(d, 1, n, 0.90) / 1e6, 1e-14);
	assert_close(s.p95_ms, gsl_stats_quantile_from_sorted_data(d, 1, n, 0.95) / 1e6, 1e-14);
	assert_close(s.p99_ms, gsl_stats_quantile_from_sorted_data(d, 1, n, 0.99) / 1e6, 1e-14);
	assert_close(s.p999_ms, gsl_stats_quantile_from_sorted_data(d, 1, n, 0.999) / 1e6, 1e-14);
	for (int i = 0; i < METRICS_CDF_POINTS; i++) {
		double q = (i + 1) / 1000.0;
		assert_close(s.cdf_ms[i], gsl_stats_quantile_from_sorted_data(d, 1, n, q) / 1e6, 1e-14);
	}
	/* violations: samples strictly above 5 ms, counted on the double copy */
	size_t over = 0;
	for (size_t i = 0; i < n; i++)
		over += d[i] > 5e6;
	assert_true(s.sla_violation_rate == (double)over / (double)n);

	free(d);
	metrics_destroy(m);
	gsl_rng_free(r);
}

static void test_quantiles_match_gsl(void **state)
{
	(void)state;
	const size_t ns[] = {1, 2, 3, 1001, 20011};
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		check_quantiles_for_n(ns[i], 17 + i);
}

/* metrics_finish_summary against metrics_finish (itself held to GSL above)
 * on the same samples: every field the same number, the CDF left zero; and
 * metrics_finish afterwards still sees every sample (the selection reorders
 * them, it does not drop any). */
static void check_summary_selects(const int64_t *v, size_t n, int64_t sla_ns)
{
	struct metrics *sorted = metrics_create(n), *selected = metrics_create(n);
	assert_non_null(sorted);
	assert_non_null(selected);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(metrics_record(sorted, v[i], v[i] / 2), 0);
		assert_int_equal(metrics_record(selected, v[i], v[i] / 2), 0);
	}
	static struct metrics_summary want, got;
	metrics_finish(sorted, sla_ns, &want);
	metrics_finish_summary(selected, sla_ns, &got);
	assert_true(got.count == want.count);
	const double *w[] = { &want.mean_ms, &want.p50_ms, &want.p90_ms, &want.p95_ms, &want.p99_ms, &want.p999_ms,
	                      &want.max_ms, &want.min_ms, &want.queue_mean_ms, &want.queue_p99_ms,
	                      &want.sla_violation_rate };
	const double *g[] = { &got.mean_ms, &got.p50_ms, &got.p90_ms, &got.p95_ms, &got.p99_ms, &got.p999_ms,
	                      &got.max_ms, &got.min_ms, &got.queue_mean_ms, &got.queue_p99_ms,
	                      &got.sla_violation_rate };
	for (size_t k = 0; k < sizeof w / sizeof w[0]; k++)
		if (memcmp(w[k], g[k], sizeof(double)) != 0)
			fail_msg("n %zu, summary field %zu: selected %.17g, sorted %.17g", n, k, *g[k], *w[k]);
	for (int i = 0; i < METRICS_CDF_POINTS; i++)
		assert_true(got.cdf_ms[i] == 0.0);
	metrics_finish(selected, sla_ns, &got);
	assert_memory_equal(got.cdf_ms, want.cdf_ms, sizeof want.cdf_ms);
	metrics_destroy(sorted);
	metrics_destroy(selected);
}

static void test_summary_selects_what_sorting_finds(void **state)
{
	(void)state;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 41);
	size_t cap = 300007;
	int64_t *v = malloc(cap * sizeof *v);
	assert_non_null(v);
	/* with atoms, spanning 0..1e10 ns (widened past 2^32, so sorted) and 0..4e9 (selected, the
	 * buckets searched on three levels of bits) */
	const size_t ns[] = { 1, 2, 3, 1001, 20011, 300007 };
	for (int narrow = 0; narrow < 2; narrow++)
		for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
			for (size_t i = 0; i < ns[k]; i++)
				v[i] = narrow ? draw_latency(r) % 4000000000 : draw_latency(r);
			check_summary_selects(v, ns[k], 5000000);
		}
	/* narrow: a span of 1000 ns, every value a bucket of its own */
	for (size_t i = 0; i < cap; i++)
		v[i] = 660000 + (int64_t)gsl_rng_uniform_int(r, 1000);
	check_summary_selects(v, cap, 660500);
	/* M/D/1-like: 30% exactly the service time, the rest exponential above it; SLA at the atom */
	for (size_t i = 0; i < cap; i++)
		v[i] = 662818 + (gsl_rng_uniform(r) < 0.3 ? 0 : (int64_t)gsl_ran_exponential(r, 8e5));
	check_summary_selects(v, cap, 662818);
	/* one value at every rank but the last few: the quantiles' buckets hold nearly all */
	for (size_t i = 0; i < cap; i++)
		v[i] = i < cap - 5 ? 1000000 : 1000000 + (int64_t)i * 977;
	check_summary_selects(v, cap, 1000000);
	/* all equal */
	for (size_t i = 0; i < cap; i++)
		v[i] = 123456789;
	check_summary_selects(v, cap, 0);
	free(v);
	gsl_rng_free(r);
}

/* quantiles of 1..5 ms worked by hand: index q*(n-1) = 4q */
static void test_quantiles_by_hand(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(2);
	const int64_t v[] = {5000000, 1000000, 4000000, 2000000, 3000000};
	for (int i = 0; i < 5; i++)
		assert_int_equal(metrics_record(m, v[i], 0), 0);
	struct metrics_summary s;
	metrics_finish(m, 0, &s);
	assert_close(s.p50_ms, 3.0, 1e-14);     /* index 2 */
	assert_close(s.p90_ms, 4.6, 1e-14);     /* index 3.6: 4 + 0.6 */
	assert_close(s.p95_ms, 4.8, 1e-14);
	assert_close(s.p99_ms, 4.96, 1e-14);
	assert_close(s.p999_ms, 4.996, 1e-14);
	assert_close(s.cdf_ms[0], 1.004, 1e-14); /* q = 0.001: index 0.004 */
	assert_true(s.cdf_ms[999] == 5.0);
	assert_true(s.mean_ms == 3.0);
	metrics_destroy(m);
}

static void check_sort(int64_t *v, size_t n)
{
	int64_t *ref = malloc((n ? n : 1) * sizeof(*ref));
	assert_non_null(ref);
	memcpy(ref, v, n * sizeof(*v));
	qsort(ref, n, sizeof(*ref), cmp_i64);
	metrics_sort_ns(v, n);
	if (n)
		assert_memory_equal(v, ref, n * sizeof(*v));
	free(ref);
}

static void test_radix_sort_matches_qsort(void **state)
{
	(void)state;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 99);
	const size_t n = 100003;
	int64_t *v = malloc(n * sizeof(*v));
	assert_non_null(v);

	/* full 64-bit range, negatives included */
	for (size_t i = 0; i < n; i++)
		v[i] = (int64_t)(((uint64_t)gsl_rng_get(r) << 32) ^ gsl_rng_get(r));
	check_sort(v, n);
	/* huge non-negative values near INT64_MAX, with heavy duplication */
	for (size_t i = 0; i < n; i++)
		v[i] = INT64_MAX - (int64_t)gsl_rng_uniform_int(r, 50);
	check_sort(v, n);
	/* only the top digit varies: every pass but the last is skipped */
	for (size_t i = 0; i < n; i++)
		v[i] = (int64_t)gsl_rng_uniform_int(r, 7) << 56;
	check_sort(v, n);
	/* only the lowest digit varies: a single pass, result lands in scratch */
	for (size_t i = 0; i < n; i++)
		v[i] = 123456789000 + (int64_t)gsl_rng_uniform_int(r, 2048);
	check_sort(v, n);
	/* spans within 32 bits take 1, 2 or 3 digits (lsd_digits), so the sorted keys end
	 * in the scratch half or in place, and are unpacked from either */
	const uint64_t spans[] = { 1u << 20, 1u << 26, UINT32_MAX };
	for (size_t k = 0; k < sizeof spans / sizeof spans[0]; k++) {
		for (size_t i = 0; i < n; i++)
			v[i] = 5000000 + (int64_t)gsl_rng_uniform_int(r, spans[k]);
		v[n / 2] = 5000000 + (int64_t)(spans[k] - 1);   /* the span's top bit set */
		check_sort(v, n);
	}
	/* three 9-bit digits whose middle one never varies: two passes */
	for (size_t i = 0; i < n; i++)
		v[i] = 77 + (int64_t)(gsl_rng_uniform_int(r, 512) | gsl_rng_uniform_int(r, 256) << 18);
	v[0] = 77 + (int64_t)(255u << 18);
	check_sort(v, n);
	/* all equal: no pass at all */
	for (size_t i = 0; i < n; i++)
		v[i] = 42;
	check_sort(v, n);
	/* tiny sizes */
	v[0] = 3;
	v[1] = -1;
	check_sort(v, 2);
	check_sort(v, 1);
	check_sort(v, 0);

	/* through the metrics object: latencies as the engine records them */
	struct metrics *m = metrics_create(16);
	int64_t *ref = malloc(n * sizeof(*ref));
	assert_non_null(ref);
	for (size_t i = 0; i < n; i++) {
		ref[i] = i % 5 == 0 ? INT64_MAX - (int64_t)(i % 3) : (int64_t)gsl_rng_uniform_int(r, 1000000);
		assert_int_equal(metrics_record(m, ref[i], 0), 0);
	}
	struct metrics_summary s;
	metrics_finish(m, 0, &s);
	qsort(ref, n, sizeof(*ref), cmp_i64);
	size_t got_n = 0;
	const int64_t *got = metrics_sorted_ns(m, &got_n);
	assert_int_equal(got_n, n);
	assert_memory_equal(got, ref, n * sizeof(*ref));

	free(ref);
	metrics_destroy(m);
	free(v);
	gsl_rng_free(r);
}

/* exact nearest-rank p99 (rank ceil(0.99 n), 1-based) of queue samples */
static double exact_queue_p99_ns(int64_t *q, size_t n)
{
	qsort(q, n, sizeof(*q), cmp_i64);
	size_t rank = (size_t)ceil(0.99 * (double)n - 1e-9);
	return (double)q[rank - 1];
}

static void check_queue_hist(int64_t (*draw)(gsl_rng *), size_t n, unsigned long seed, int exact)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, seed);
	struct metrics *m = metrics_create(n);
	int64_t *q = malloc(n * sizeof(*q));
	double *qd = malloc(n * sizeof(*qd));
	assert_true(m && q && qd);
	for (size_t i = 0; i < n; i++) {
		q[i] = draw(r);
		qd[i] = (double)q[i];
		assert_int_equal(metrics_record(m, 1000, q[i]), 0);
	}
	struct metrics_summary s;
	metrics_finish(m, 0, &s);
	double want = exact_queue_p99_ns(q, n);
	if (exact) {
		assert_true(s.queue_p99_ms == want / 1e6);
	} else {
		double rel = fabs(s.queue_p99_ms * 1e6 - want) / want;
		if (rel > HIST_REL_ERR)
			fail_msg("queue p99 %.17g ns vs exact %.17g ns: rel err %g", s.queue_p99_ms * 1e6, want, rel);
		assert_true(rel < 0.004);
	}
	assert_close(s.queue_mean_ms, gsl_stats_mean(qd, 1, n) / 1e6, 1e-12);
	free(qd);
	free(q);
	metrics_destroy(m);
	gsl_rng_free(r);
}

static int64_t draw_exponential(gsl_rng *r) { return (int64_t)gsl_ran_exponential(r, 2e6); }
static int64_t draw_log_uniform(gsl_rng *r) { return (int64_t)exp(gsl_rng_uniform(r) * log(1e13)); }
static int64_t draw_small(gsl_rng *r) { return (int64_t)gsl_rng_uniform_int(r, 256); }

static void test_queue_histogram_p99(void **state)
{
	(void)state;
	check_queue_hist(draw_exponential, 50000, 5, 0);
	check_queue_hist(draw_exponential, 777, 6, 0);
	check_queue_hist(draw_log_uniform, 50000, 7, 0);
	check_queue_hist(draw_small, 10000, 8, 1);
}

static void test_queue_histogram_by_hand(void **state)
{
	(void)state;
	struct metrics_summary s;
	/* 1000 ns: highest bit 9 (512..1023), width 2^(9-7) = 4, bucket 1000..1003 */
	struct metrics *m = metrics_create(1);
	assert_int_equal(metrics_record(m, 5, 1000), 0);
	metrics_finish(m, 0, &s);
	assert_true(s.queue_p99_ms == 1001.5 / 1e6);
	assert_true(s.queue_mean_ms == 1000 / 1e6);
	metrics_destroy(m);

	/* 1..100 ns: rank ceil(99) = 99 -> 99 ns, exact below 256 */
	m = metrics_create(100);
	for (int i = 100; i >= 1; i--)
		assert_int_equal(metrics_record(m, i, i), 0);
	metrics_finish(m, 0, &s);
	assert_true(s.queue_p99_ms == 99 / 1e6);
	assert_true(s.queue_mean_ms == 50.5 / 1e6);
	metrics_destroy(m);
}

/* The one-pass CDF of a histogram against its quantiles read one at a
 * time, and, on values exact below 256 ns, against the sorted values. */
static void test_hist_quantiles_one_pass(void **state)
{
	(void)state;
	static struct metrics_hist h;
	double cdf[1000];
	const uint64_t sizes[] = { 0, 1, 7, 999, 1000, 1001, 50000 };
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 11);
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		memset(&h, 0, sizeof h);
		for (uint64_t i = 0; i < sizes[k]; i++)
			metrics_hist_add(&h, k % 2 ? draw_exponential(r) : draw_log_uniform(r));
		metrics_hist_quantiles_ns(&h, cdf, 1000);
		for (uint64_t i = 0; i < 1000; i++)
			assert_true(cdf[i] == metrics_hist_quantile_ns(&h, i + 1, 1000));
	}
	/* 1..10 ns: quantile i/1000 is value ceil(10 i / 1000) */
	memset(&h, 0, sizeof h);
	for (int v = 10; v >= 1; v--)
		metrics_hist_add(&h, v);
	metrics_hist_quantiles_ns(&h, cdf, 1000);
	for (int i = 1; i <= 1000; i++)
		assert_true(cdf[i - 1] == (double)((10 * i + 999) / 1000));
	gsl_rng_free(r);
}

/* A gap entered with its count is the gap entered that many times: the same
 * buckets, count, maximum and exact 128-bit sum, with values past 2^62 ns so
 * that the sum's high word and the halves' carries are exercised. */
static void test_hist_add_n_is_repeated_add(void **state)
{
	(void)state;
	static struct metrics_hist once, each;
	const int64_t values[] = { -5, 0, 1, 255, 4096, 123456789, (int64_t)1 << 40, ((int64_t)1 << 62) + 12345,
	                           INT64_MAX };
	const uint32_t times[] = { 0, 1, 2, 7, 256, 65535, 3 };
	memset(&once, 0, sizeof once);
	memset(&each, 0, sizeof each);
	for (size_t a = 0; a < sizeof values / sizeof values[0]; a++)
		for (size_t b = 0; b < sizeof times / sizeof times[0]; b++) {
			metrics_hist_add_n(&once, values[a], times[b]);
			for (uint32_t k = 0; k < times[b]; k++)
				metrics_hist_add(&each, values[a]);
		}
	assert_memory_equal(&once, &each, sizeof once);
}

/* u128_add_mul against the compiler's own 128-bit arithmetic (a second
 * implementation), on products whose halves all carry. */
static void test_u128_add_mul(void **state)
{
	(void)state;
	const uint64_t v[] = { 0, 1, 0xffffffffu, 0x100000000u, 123456789012345u, (uint64_t)1 << 63, UINT64_MAX };
	struct u128 s = { 0, 0 };
	__extension__ unsigned __int128 want = 0;
	for (size_t a = 0; a < sizeof v / sizeof v[0]; a++)
		for (size_t b = 0; b < sizeof v / sizeof v[0]; b++) {
			u128_add_mul(&s, v[a], v[b]);
			want += (unsigned __int128)v[a] * v[b];
			assert_true(s.lo == (uint64_t)want && s.hi == (uint64_t)(want >> 64));
		}
}

/* The histogram store against the exact one on the same samples: mean,
 * min and max equal; the violation rate equal at the deadline it counts;
 * each quantile and CDF point within 1/256 of the exact value at a
 * neighbouring rank (nearest rank against GSL's interpolation); its memory
 * the same at 1,000 samples and at 200,000. */
static void test_histogram_store(void **state)
{
	(void)state;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	gsl_rng_set(r, 3);
	const int64_t sla = 5000000;
	struct metrics *exact = metrics_create(16), *hist = metrics_create_histogram(sla);
	assert_non_null(hist);
	size_t small = 0;
	for (int i = 0; i < 200000; i++) {
		int64_t v = i % 3 ? draw_exponential(r) : draw_log_uniform(r);
		assert_int_equal(metrics_record(exact, v, v / 3), 0);
		assert_int_equal(metrics_record(hist, v, v / 3), 0);
		if (i == 999)
			small = metrics_memory_bytes(hist);
	}
	assert_int_equal(metrics_memory_bytes(hist), small);
	static struct metrics_summary a, b;
	assert_int_equal(metrics_finish(exact, sla, &a), 0);
	assert_int_equal(metrics_finish(hist, sla, &b), 0);
	assert_true(a.count == b.count && a.mean_ms == b.mean_ms && a.min_ms == b.min_ms && a.max_ms == b.max_ms);
	assert_true(a.sla_violation_rate == b.sla_violation_rate);
	assert_true(a.queue_p99_ms == b.queue_p99_ms && a.queue_mean_ms == b.queue_mean_ms);
	size_t n;
	const int64_t *x = metrics_sorted_ns(exact, &n);
	for (int i = 0; i < METRICS_CDF_POINTS; i++) {
		/* nearest rank ceil(n q), 1-based: its value and its neighbours bound what either reports */
		size_t rank = (n * (size_t)(i + 1) + METRICS_CDF_POINTS - 1) / METRICS_CDF_POINTS;
		double lo = (double)x[rank > 1 ? rank - 2 : 0] / 1e6, hi = (double)x[rank < n ? rank : n - 1] / 1e6;
		if (!(b.cdf_ms[i] >= lo * (1 - 1.0 / 256) - 1e-9 && b.cdf_ms[i] <= hi * (1 + 1.0 / 256) + 1e-9))
			fail_msg("CDF point %d: %.9g ms, the exact neighbourhood [%.9g, %.9g]", i, b.cdf_ms[i], lo, hi);
	}
	assert_true(fabs(b.p99_ms - a.p99_ms) <= a.p99_ms / 256 + 1e-6 && fabs(b.p50_ms - a.p50_ms) <= a.p50_ms / 256 + 1e-6);
	/* another deadline than the one counted: by bucket, within the buckets around it */
	assert_int_equal(metrics_finish_summary(hist, 2 * sla, &b), 0);
	assert_int_equal(metrics_finish(exact, 2 * sla, &a), 0);
	assert_true(fabs(b.sla_violation_rate - a.sla_violation_rate) < 0.01);
	metrics_destroy(exact);
	metrics_destroy(hist);
	gsl_rng_free(r);
}

static void test_violation_rate_by_hand(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(8);
	const int64_t v[] = {5000000, 1000000, 4000000, 2000000, 3000000};
	for (int i = 0; i < 5; i++)
		assert_int_equal(metrics_record(m, v[i], 0), 0);
	struct metrics_summary s;
	metrics_finish(m, 3000000, &s);   /* 4 and 5 ms exceed; 3 ms equals: no violation */
	assert_true(s.sla_violation_rate == 2.0 / 5.0);
	metrics_finish(m, 2999999, &s);
	assert_true(s.sla_violation_rate == 3.0 / 5.0);
	metrics_finish(m, 0, &s);
	assert_true(s.sla_violation_rate == 1.0);
	metrics_finish(m, 5000000, &s);
	assert_true(s.sla_violation_rate == 0.0);
	metrics_destroy(m);
}

static void test_empty(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(0);
	assert_non_null(m);
	struct metrics_summary s;
	memset(&s, 0xff, sizeof(s));
	metrics_finish(m, 1000, &s);
	assert_int_equal(s.count, 0);
	const double f[] = {s.mean_ms, s.p50_ms, s.p90_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.max_ms,
	                    s.min_ms, s.queue_mean_ms, s.queue_p99_ms, s.sla_violation_rate};
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		assert_true(f[i] == 0.0);
	for (int i = 0; i < METRICS_CDF_POINTS; i++)
		assert_true(s.cdf_ms[i] == 0.0);
	size_t n = 1;
	metrics_sorted_ns(m, &n);
	assert_int_equal(n, 0);
	metrics_destroy(m);
}

static void test_growth_and_memory(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(1000);
	size_t base = metrics_memory_bytes(m);
	for (int i = 0; i < 1000; i++)
		assert_int_equal(metrics_record(m, 1000 - i, 0), 0);
	assert_int_equal(metrics_memory_bytes(m), base);           /* no growth within the estimate */
	assert_int_equal(metrics_record(m, 7, 0), 0);
	assert_int_equal(metrics_memory_bytes(m), base + 1000 * 4); /* doubled to 2000 samples of 4 bytes */
	struct metrics_summary s;
	assert_int_equal(metrics_finish(m, 0, &s), 0);
	assert_int_equal(s.count, 1001);
	assert_true(s.min_ms == 1 / 1e6 && s.max_ms == 1000 / 1e6);
	assert_int_equal(metrics_memory_bytes(m), base + 3000 * 4); /* sorted as 8 bytes a sample */
	metrics_destroy(m);
}

/* 2^32 - 1 ns is the narrow store's last value; 2^32 widens it, every
 * sample kept (the quantiles by hand: index q * (n - 1) of 1, 2, 3, 2^32 - 1, 2^32). */
static void test_widening_keeps_samples(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(4);
	size_t base = metrics_memory_bytes(m);
	const int64_t v[] = { 3, 4294967295, 1, 2 };
	for (int i = 0; i < 4; i++)
		assert_int_equal(metrics_record(m, v[i], 0), 0);
	assert_int_equal(metrics_memory_bytes(m), base);              /* 2^32 - 1 fits: still 4 bytes a sample */
	assert_int_equal(metrics_record(m, 4294967296, 0), 0);        /* full and too long: doubled and widened */
	assert_int_equal(metrics_memory_bytes(m), base + 8 * 8 - 4 * 4);
	struct metrics_summary s;
	for (int pass = 0; pass < 2; pass++) {
		assert_int_equal((pass ? metrics_finish : metrics_finish_summary)(m, 4294967295, &s), 0);
		assert_true(s.min_ms == 1e-6 && s.max_ms == 4294967296 / 1e6);
		assert_true(s.p50_ms == 3e-6);                            /* index 2 */
		assert_close(s.p90_ms, (0.4 * 4294967295 + 0.6 * 4294967296) / 1e6, 1e-15);   /* index 3.6 */
		assert_true(s.sla_violation_rate == 0.2);
	}
	metrics_destroy(m);
}

/* MLPerf LoadGen's early-stopping counts, by hand: with none over, the
 * smallest n with 0.99^n <= 0.01 is ceil(ln 0.01 / ln 0.99) = 459, and for a
 * p99.9 ceil(ln 0.01 / ln 0.999) = 4603; with one over, the smallest n with
 * 0.99^n + n 0.01 0.99^(n-1) <= 0.01 is 662 (the figures, MLPerf's
 * table). */
static void test_tail_min_requests(void **state)
{
	(void)state;
	assert_int_equal(metrics_tail_min_requests(0.99, 0, 0.99), 459);
	assert_int_equal(metrics_tail_min_requests(0.99, 1, 0.99), 662);
	assert_int_equal(metrics_tail_min_requests(0.999, 0, 0.99), 4603);
	assert_int_equal((int)ceil(log(0.01) / log(0.99)), 459);
	assert_int_equal((int)ceil(log(0.01) / log(0.999)), 4603);
	/* one fewer does not reach the confidence */
	assert_true(pow(0.99, 458) > 0.01 && pow(0.99, 459) <= 0.01);
	assert_true(pow(0.99, 661) + 661 * 0.01 * pow(0.99, 660) > 0.01);
	assert_true(pow(0.99, 662) + 662 * 0.01 * pow(0.99, 661) <= 0.01);
}

/* A stored CDF never decreases: 141 equal samples of 8313818387 ns, where
 * GSL's interpolation gives point 3 one ulp above point 4 (found by search:
 * (1 - d) a + d a != a for some d). */
static void test_cdf_never_decreases(void **state)
{
	(void)state;
	struct metrics *m = metrics_create(141);
	struct metrics_summary s;
	assert_non_null(m);
	for (int i = 0; i < 141; i++)
		assert_int_equal(metrics_record(m, 8313818387, 0), 0);
	assert_int_equal(metrics_finish(m, INT64_MAX, &s), 0);
	double q = 0.003 * 140, d = q - (int)q;   /* point 3 (quantile 0.003), as the finish computes it */
	assert_true((1 - d) * 8313818387.0 + d * 8313818387.0 != 8313818387.0);   /* the case is real */
	for (int i = 1; i < METRICS_CDF_POINTS; i++)
		assert_true(s.cdf_ms[i] >= s.cdf_ms[i - 1]);
	metrics_destroy(m);
}

/* The upper bound on a fraction, by hand: with no event in n trials the f
 * with (1 - f)^n = 1 - conf; with one, the f with (1 - f)^n + n f (1 - f)^(n-1)
 * = 1 - conf, found here by bisection on that sum; all n events: 1. */
static void test_fraction_upper(void **state)
{
	(void)state;
	for (unsigned n = 10; n <= 10000; n *= 10) {
		double zero = 1 - pow(0.05, 1.0 / n);
		assert_true(fabs(metrics_fraction_upper(0, n, 0.95) / zero - 1) < 1e-9);
		double lo = 0, hi = 1;
		for (int i = 0; i < 200; i++) {
			double f = (lo + hi) / 2, p = pow(1 - f, n) + n * f * pow(1 - f, n - 1);
			if (p > 0.05)
				lo = f;
			else
				hi = f;
		}
		assert_true(fabs(metrics_fraction_upper(1, n, 0.95) / lo - 1) < 1e-9);
	}
	assert_true(metrics_fraction_upper(7, 7, 0.95) == 1.0);
	/* 52 of 3200, where GSL's beta inversion gives NaN: the bound is the f at which the binomial
	 * chance of 52 or fewer is 5% (checked on the binomial's own CDF) */
	double f = metrics_fraction_upper(52, 3200, 0.95);
	assert_true(f > 52.0 / 3200 && f < 1);
	assert_true(fabs(gsl_cdf_binomial_P(52, f, 3200) - 0.05) < 1e-9);
	/* enough trials that half the target's events still pass, and not many more */
	uint64_t n = metrics_fraction_min_trials(0.01, 0.95);
	assert_true(metrics_fraction_upper((uint64_t)(n * 0.01 / 2), n, 0.95) <= 0.01);
	assert_true(n > 500 && n < 2000);   /* 967: 4 misses of 967 bound it at 0.95% */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_quantiles_match_gsl),
		cmocka_unit_test(test_quantiles_by_hand),
		cmocka_unit_test(test_summary_selects_what_sorting_finds),
		cmocka_unit_test(test_radix_sort_matches_qsort),
		cmocka_unit_test(test_queue_histogram_p99),
		cmocka_unit_test(test_queue_histogram_by_hand),
		cmocka_unit_test(test_hist_quantiles_one_pass),
		cmocka_unit_test(test_violation_rate_by_hand),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_tail_min_requests),
		cmocka_unit_test(test_fraction_upper),
		cmocka_unit_test(test_cdf_never_decreases),
		cmocka_unit_test(test_growth_and_memory),
		cmocka_unit_test(test_hist_add_n_is_repeated_add),
		cmocka_unit_test(test_u128_add_mul),
		cmocka_unit_test(test_histogram_store),
		cmocka_unit_test(test_widening_keeps_samples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
