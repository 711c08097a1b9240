/* tests/test_workload.c: unit tests of traces/ (arrivals, length
 * distributions, trace CSV, corpus tokenizer). Expected values come from
 * closed forms, hand calculation (worked in comments) or an independent
 * computation in this file; statistical checks use 200k draws, a fixed seed
 * and a 5-standard-error tolerance, so they cannot flake.
 */
#define _POSIX_C_SOURCE 200809L   /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "traces/corpus.h"
#include "traces/workload.h"

#define NSAMPLES 200000
#define SIGMAS 5.0

/* ---- helpers ---- */

static char tmp_dir[64];
static char tmp_paths[64][256];
static int tmp_count;

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_workload.XXXXXX");
	return mkdtemp(tmp_dir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	for (int i = 0; i < tmp_count; i++)
		unlink(tmp_paths[i]);
	rmdir(tmp_dir);
	return 0;
}

/* tmp_dir/name, registered for removal at teardown (static storage). */
static const char *tmp_path(const char *name)
{
	assert_true(tmp_count < 64);
	char *path = tmp_paths[tmp_count++];
	snprintf(path, sizeof tmp_paths[0], "%s/%s", tmp_dir, name);
	return path;
}

/* Writes content to tmp_dir/name and returns the path (static storage). */
static const char *write_file(const char *name, const char *content, size_t len)
{
	const char *path = tmp_path(name);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(content, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *write_text(const char *name, const char *content)
{
	return write_file(name, content, strlen(content));
}

static void check_close(double got, double want, double tol, const char *what)
{
	if (!(fabs(got - want) <= tol))
		fail_msg("%s: got %.17g, want %.17g (tolerance %.3g)", what, got, want, tol);
}

static void check_contains(const char *msg, const char *part)
{
	if (!strstr(msg, part))
		fail_msg("message '%s' does not contain '%s'", msg, part);
}

static gsl_rng *rng_seeded(unsigned long seed)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	assert_non_null(r);
	gsl_rng_set(r, seed);
	return r;
}

/* ---- arrivals ---- */

/* Sample mean and CV of NSAMPLES gaps vs 1/rate and cv. The sample mean's
 * standard error is cv / (rate sqrt n). For Gamma(k) gaps the excess
 * kurtosis is 6/k, so Var(s^2)/sigma^4 = (2 + 6/k)/n; by the delta method
 * s/m has relative standard error <= 0.5 sqrt((2 + 6/k)/n) + cv/sqrt(n)
 * (the two errors added, which over- rather than under-states it). */
static void check_gap_stats(double rate_rps, double cv, unsigned long seed)
{
	struct trc_arrivals a;
	char err[256];
	assert_int_equal(trc_arrivals_init(&a, rate_rps, cv, err, sizeof err), 0);
	gsl_rng *r = rng_seeded(seed);
	double sum = 0, sum2 = 0;
	for (int i = 0; i < NSAMPLES; i++) {
		double g = trc_arrivals_next_gap_s(&a, r);
		assert_true(g >= 0);
		sum += g;
		sum2 += g * g;
	}
	gsl_rng_free(r);
	double n = NSAMPLES;
	double mean = sum / n;
	double var = (sum2 - n * mean * mean) / (n - 1);
	double cv_hat = sqrt(var) / mean;
	double k = 1.0 / (cv * cv);
	check_close(mean, 1.0 / rate_rps, SIGMAS * cv / (rate_rps * sqrt(n)), "gap mean");
	double rel_se = 0.5 * sqrt((2 + 6 / k) / n) + cv / sqrt(n);
	check_close(cv_hat, cv, SIGMAS * cv * rel_se, "gap cv");
}

static void test_poisson_gaps(void **state)
{
	(void)state;
	check_gap_stats(1000.0, 1.0, 11);
	check_gap_stats(3.5, 1.0, 12);
}

static void test_gamma_gaps(void **state)
{
	(void)state;
	check_gap_stats(1000.0, 2.0, 13);
	check_gap_stats(250.0, 0.5, 14);
}

/* cv == 1 is the exponential path and other cvs the Gamma(1/cv^2, 1/(rate k))
 * path, draw for draw. */
static void test_gap_paths(void **state)
{
	(void)state;
	struct trc_arrivals a;
	char err[256];
	gsl_rng *r1 = rng_seeded(5), *r2 = rng_seeded(5);
	assert_int_equal(trc_arrivals_init(&a, 200.0, 1.0, err, sizeof err), 0);
	for (int i = 0; i < 1000; i++)
		assert_true(trc_arrivals_next_gap_s(&a, r1) == gsl_ran_exponential(r2, 1.0 / 200.0));
	assert_int_equal(trc_arrivals_init(&a, 200.0, 2.0, err, sizeof err), 0);
	for (int i = 0; i < 1000; i++)
		assert_true(trc_arrivals_next_gap_s(&a, r1) == gsl_ran_gamma(r2, 0.25, 1.0 / (200.0 * 0.25)));
	gsl_rng_free(r1);
	gsl_rng_free(r2);
}

/* Gaps drawn a block at a time are GSL's draws one at a time, bit for bit:
 * blocks of 1, 7 and 64 and one of 1000 against gsl_ran_exponential and
 * gsl_ran_gamma on a second generator of the same seed. */
static void test_gap_blocks(void **state)
{
	(void)state;
	struct trc_arrivals a;
	char err[256];
	const size_t blocks[] = { 1, 7, 64, 1000, 64 };
	double gaps[1000];
	for (int gamma = 0; gamma < 2; gamma++) {
		gsl_rng *r1 = rng_seeded(17), *r2 = rng_seeded(17);
		assert_int_equal(trc_arrivals_init(&a, 1055.0, gamma ? 0.7 : 1.0, err, sizeof err), 0);
		double shape = 1.0 / (0.7 * 0.7);
		for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; b++) {
			trc_arrivals_next_gaps_s(&a, r1, gaps, blocks[b]);
			for (size_t i = 0; i < blocks[b]; i++) {
				double want = gamma ? gsl_ran_gamma(r2, shape, 1.0 / (1055.0 * shape))
				                    : gsl_ran_exponential(r2, 1.0 / 1055.0);
				assert_memory_equal(&gaps[i], &want, sizeof want);
			}
		}
		gsl_rng_free(r1);
		gsl_rng_free(r2);
	}
}

static void test_arrivals_errors(void **state)
{
	(void)state;
	struct trc_arrivals a;
	char err[256];
	const double bad_rates[] = {0.0, -1.0, NAN, INFINITY};
	for (size_t i = 0; i < sizeof bad_rates / sizeof bad_rates[0]; i++) {
		err[0] = '\0';
		assert_int_equal(trc_arrivals_init(&a, bad_rates[i], 1.0, err, sizeof err), -1);
		check_contains(err, "rate must be a positive number of requests per second, got");
	}
	/* 1e-300 made NaN gaps (Gamma shape 1e600) and negative stored latencies */
	const double bad_cvs[] = {0.0, -0.5, NAN, INFINITY, 1e-300, 0.000999, 100.01};
	for (size_t i = 0; i < sizeof bad_cvs / sizeof bad_cvs[0]; i++) {
		err[0] = '\0';
		assert_int_equal(trc_arrivals_init(&a, 10.0, bad_cvs[i], err, sizeof err), -1);
		check_contains(err, "cv must be a number from 0.001 to 100");
	}
	assert_int_equal(trc_arrivals_init(&a, 10.0, 0.3, err, sizeof err), 0);
	assert_true(a.rate_rps == 10.0 && a.cv == 0.3);
	/* at the bounds the gaps are finite and non-negative */
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
	for (int e = 0; e < 2; e++) {
		assert_int_equal(trc_arrivals_init(&a, 10.0, e ? TRC_MAX_CV : TRC_MIN_CV, err, sizeof err), 0);
		for (int i = 0; i < 10000; i++) {
			double g = trc_arrivals_next_gap_s(&a, r);
			assert_true(isfinite(g) && g >= 0);
		}
	}
	gsl_rng_free(r);
}

/* ---- lengths: closed forms ---- */

static struct trc_lengths *parse_ok(const char *spec)
{
	struct trc_lengths *d = NULL;
	char err[512] = "";
	if (trc_lengths_parse(spec, &d, err, sizeof err) != 0)
		fail_msg("spec '%s' refused: %s", spec, err);
	assert_non_null(d);
	return d;
}

/* Sample mean of draws within 5 standard errors of the exact mean. */
static void check_draw_mean(const struct trc_lengths *d, unsigned long seed)
{
	gsl_rng *r = rng_seeded(seed);
	double sum = 0;
	uint32_t max = trc_lengths_max(d);
	for (int i = 0; i < NSAMPLES; i++) {
		uint32_t L = trc_lengths_draw(d, r);
		assert_true(L <= max);
		sum += L;
	}
	gsl_rng_free(r);
	double mean = trc_lengths_mean(d);
	double var = trc_lengths_second_moment(d) - mean * mean;
	check_close(sum / NSAMPLES, mean, SIGMAS * sqrt(var / NSAMPLES) + 1e-12, "draw mean");
}

static void test_fixed(void **state)
{
	(void)state;
	const char *specs[] = {"fixed:7", "7"};
	for (int i = 0; i < 2; i++) {
		struct trc_lengths *d = parse_ok(specs[i]);
		assert_true(trc_lengths_mean(d) == 7.0);
		assert_true(trc_lengths_second_moment(d) == 49.0);
		assert_int_equal(trc_lengths_max(d), 7);
		assert_int_equal(trc_lengths_quantile(d, 0.001), 7);
		assert_int_equal(trc_lengths_quantile(d, 1.0), 7);
		gsl_rng *r = rng_seeded(1);
		for (int k = 0; k < 100; k++)
			assert_int_equal(trc_lengths_draw(d, r), 7);
		gsl_rng_free(r);
		trc_lengths_free(d);
	}
	struct trc_lengths *d = parse_ok("fixed:0");
	assert_true(trc_lengths_mean(d) == 0.0);
	assert_int_equal(trc_lengths_max(d), 0);
	trc_lengths_free(d);
}

/* uniform:3:9 has n = 7 points: mean (3+9)/2 = 6, variance (7^2-1)/12 = 4,
 * so E[L^2] = 4 + 36 = 40. CDF at 3 + k - 1 is k/7. */
static void test_uniform(void **state)
{
	(void)state;
	struct trc_lengths *d = parse_ok("uniform:3:9");
	check_close(trc_lengths_mean(d), 6.0, 1e-15, "uniform mean");
	check_close(trc_lengths_second_moment(d), 40.0, 1e-12, "uniform E[L^2]");
	assert_int_equal(trc_lengths_max(d), 9);
	assert_int_equal(trc_lengths_quantile(d, 1e-9), 3);
	assert_int_equal(trc_lengths_quantile(d, 1.0 / 7.0), 3);
	assert_int_equal(trc_lengths_quantile(d, 1.0 / 7.0 + 1e-12), 4);
	assert_int_equal(trc_lengths_quantile(d, 2.0 / 7.0), 4);
	assert_int_equal(trc_lengths_quantile(d, 0.5), 6);     /* 3.5/7 -> k = 4 */
	assert_int_equal(trc_lengths_quantile(d, 6.0 / 7.0), 8);
	assert_int_equal(trc_lengths_quantile(d, 0.9), 9);     /* 6.3 -> k = 7 */
	assert_int_equal(trc_lengths_quantile(d, 1.0), 9);
	/* every value drawn, none outside */
	gsl_rng *r = rng_seeded(3);
	int seen[10] = {0};
	for (int i = 0; i < 10000; i++) {
		uint32_t L = trc_lengths_draw(d, r);
		assert_true(L >= 3 && L <= 9);
		seen[L] = 1;
	}
	gsl_rng_free(r);
	for (int L = 3; L <= 9; L++)
		assert_true(seen[L]);
	check_draw_mean(d, 4);
	trc_lengths_free(d);

	/* uniform:0:99: E[L^2] = (sum of j^2, j = 0..99) / 100
	 * = (99 * 100 * 199 / 6) / 100 = 3283.5 */
	d = parse_ok("uniform:0:99");
	check_close(trc_lengths_mean(d), 49.5, 1e-15, "uniform:0:99 mean");
	check_close(trc_lengths_second_moment(d), 3283.5, 1e-9, "uniform:0:99 E[L^2]");
	assert_int_equal(trc_lengths_quantile(d, 0.9), 89);
	trc_lengths_free(d);

	d = parse_ok("uniform:5:5");
	assert_true(trc_lengths_mean(d) == 5.0 && trc_lengths_second_moment(d) == 25.0);
	trc_lengths_free(d);
}

/* ---- lengths: lognormal against an independent computation ---- */

/* P(exp(N(mu, sigma^2)) > x), written with libm's erfc (not GSL). */
static double lognormal_tail(double x, double mu, double sigma)
{
	return 0.5 * erfc((log(x) - mu) / (sigma * sqrt(2.0)));
}

/* For L = clamp(round(X), 1, max): P(L > j) = P(X > j + 0.5) for
 * j = 1..max-1, and 1 for j = 0. Tail sums then give the moments without
 * building per-value probabilities at all:
 *   E[L] = sum_{j>=0} P(L > j),  E[L^2] = sum_{j>=0} (2j + 1) P(L > j). */
static void lognormal_moments(double mu, double sigma, uint32_t max, double *m1, double *m2)
{
	*m1 = 1;
	*m2 = 1;
	for (uint32_t j = 1; j < max; j++) {
		double t = lognormal_tail(j + 0.5, mu, sigma);
		*m1 += t;
		*m2 += (2.0 * j + 1) * t;
	}
}

/* Smallest L with P(L' <= L) >= c: P(L' <= L) = P(X < L + 0.5) for L < max,
 * so L = ceil(q - 0.5) with q = exp(mu + sigma z_c), clamped to [1, max]. */
static uint32_t lognormal_quantile(double mu, double sigma, uint32_t max, double z)
{
	double L = ceil(exp(mu + sigma * z) - 0.5);
	if (L < 1)
		L = 1;
	if (L > max)
		L = max;
	return (uint32_t)L;
}

#define Z50 0.0
#define Z90 1.2815515655446004   /* standard normal 0.9 quantile */
#define Z99 2.3263478740408408   /* standard normal 0.99 quantile */

static void check_lognormal(const char *spec, double mu, double sigma, uint32_t max)
{
	struct trc_lengths *d = parse_ok(spec);
	double m1, m2;
	lognormal_moments(mu, sigma, max, &m1, &m2);
	check_close(trc_lengths_mean(d), m1, 1e-10 * m1, "lognormal mean");
	check_close(trc_lengths_second_moment(d), m2, 1e-10 * m2, "lognormal E[L^2]");
	assert_int_equal(trc_lengths_quantile(d, 0.5), lognormal_quantile(mu, sigma, max, Z50));
	assert_int_equal(trc_lengths_quantile(d, 0.9), lognormal_quantile(mu, sigma, max, Z90));
	assert_int_equal(trc_lengths_quantile(d, 0.99), lognormal_quantile(mu, sigma, max, Z99));
	check_draw_mean(d, 21);

	/* The defining process itself, simulated: round(exp(N(mu, sigma^2)))
	 * clamped to [1, max], against the table's mean. */
	gsl_rng *r = rng_seeded(22);
	double sum = 0;
	for (int i = 0; i < NSAMPLES; i++) {
		double L = round(exp(mu + gsl_ran_gaussian(r, sigma)));
		sum += L < 1 ? 1 : (L > max ? max : L);
	}
	gsl_rng_free(r);
	check_close(sum / NSAMPLES, m1, SIGMAS * sqrt((m2 - m1 * m1) / NSAMPLES) + 1e-12, "simulated lognormal mean");
	trc_lengths_free(d);
}

static void test_lognormal(void **state)
{
	(void)state;
	/* the translation models' defaults (LazyBatching max 80 words,
	 * BatchMaker's WMT-15 max 330) */
	check_lognormal("lognormal:2.715:0.535:80", 2.715, 0.535, 80);
	check_lognormal("lognormal:3.035:0.535:330", 3.035, 0.535, 330);
	/* MAX defaults to 1000 */
	check_lognormal("lognormal:3:0.8", 3.0, 0.8, 1000);
	/* heavy clamping at the top: the median e^5 = 148 is far above 50 */
	check_lognormal("lognormal:5:1:50", 5.0, 1.0, 50);
	/* and at the bottom: everything rounds to 0 or 1, so L = 1 always */
	struct trc_lengths *d = parse_ok("lognormal:-3:0.2:10");
	check_close(trc_lengths_mean(d), 1.0, 1e-12, "clamped-low mean");
	assert_int_equal(trc_lengths_quantile(d, 0.999), 1);
	trc_lengths_free(d);
	/* MAX 1: a single value */
	d = parse_ok("lognormal:3:0.5:1");
	assert_true(trc_lengths_mean(d) == 1.0 && trc_lengths_max(d) == 1);
	trc_lengths_free(d);
}

/* ---- lengths: empirical files ---- */

/* Rows (3, 1), (5, 2), (10, 0.5), (5, 0.5) again, (7, 0): total weight 4;
 * P(3) = 1/4, P(5) = 2.5/4, P(10) = 0.5/4, P(7) = 0.
 *   mean   = (3*1 + 5*2.5 + 10*0.5) / 4 = 20.5 / 4  = 5.125
 *   E[L^2] = (9*1 + 25*2.5 + 100*0.5) / 4 = 121.5 / 4 = 30.375
 *   CDF: 3 -> 0.25, 5 -> 0.875, 10 -> 1. */
static void test_empirical_file(void **state)
{
	(void)state;
	const char *path = write_text("lens.csv",
	                              "# sentence lengths\n"
	                              "length,weight\n"
	                              "3,1\n"
	                              "\n"
	                              "5, 2\r\n"
	                              "10,0.5\n"
	                              "  # indented comment\n"
	                              "5,0.5\n"
	                              "7,0\n");
	char spec[256];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct trc_lengths *d = parse_ok(spec);
	check_close(trc_lengths_mean(d), 5.125, 1e-15, "file mean");
	check_close(trc_lengths_second_moment(d), 30.375, 1e-13, "file E[L^2]");
	assert_int_equal(trc_lengths_max(d), 10);
	assert_int_equal(trc_lengths_quantile(d, 0.1), 3);
	assert_int_equal(trc_lengths_quantile(d, 0.25), 3);
	assert_int_equal(trc_lengths_quantile(d, 0.26), 5);
	assert_int_equal(trc_lengths_quantile(d, 0.875), 5);
	assert_int_equal(trc_lengths_quantile(d, 0.876), 10);
	assert_int_equal(trc_lengths_quantile(d, 1.0), 10);
	/* frequencies: binomial standard error sqrt(p(1-p)/n) */
	gsl_rng *r = rng_seeded(8);
	int count[11] = {0};
	for (int i = 0; i < NSAMPLES; i++) {
		uint32_t L = trc_lengths_draw(d, r);
		assert_true(L == 3 || L == 5 || L == 10);
		count[L]++;
	}
	gsl_rng_free(r);
	const double p[11] = {[3] = 0.25, [5] = 0.625, [10] = 0.125};
	for (int L = 3; L <= 10; L += (L == 3 ? 2 : 5))
		check_close((double)count[L] / NSAMPLES, p[L], SIGMAS * sqrt(p[L] * (1 - p[L]) / NSAMPLES), "file frequency");
	trc_lengths_free(d);

	/* no header, a length of 0: P(0) = P(4) = 1/2, mean 2, E[L^2] = 8 */
	path = write_text("lens2.csv", "0,1\n4,1\n");
	snprintf(spec, sizeof spec, "file:%s", path);
	d = parse_ok(spec);
	check_close(trc_lengths_mean(d), 2.0, 1e-15, "file2 mean");
	check_close(trc_lengths_second_moment(d), 8.0, 1e-15, "file2 E[L^2]");
	assert_int_equal(trc_lengths_quantile(d, 0.5), 0);
	assert_int_equal(trc_lengths_quantile(d, 0.51), 4);
	trc_lengths_free(d);
}

/* ---- lengths: every parse error ---- */

static void check_spec_error(const char *spec, const char *part)
{
	struct trc_lengths *d = (struct trc_lengths *)&d;   /* must be cleared */
	char err[512] = "";
	if (trc_lengths_parse(spec, &d, err, sizeof err) != -1)
		fail_msg("spec '%s' accepted", spec);
	assert_null(d);
	check_contains(err, part);
}

static void test_spec_errors(void **state)
{
	(void)state;
	check_spec_error("", "bad length spec '': empty");
	check_spec_error("uniform:5:2", "bad length spec 'uniform:5:2': A must be <= B");
	check_spec_error("uniform:5", "bad length spec 'uniform:5': expected uniform:A:B");
	check_spec_error("uniform:1:2:3", "bad length spec 'uniform:1:2:3': expected uniform:A:B");
	check_spec_error("uniform:x:2", "bad length spec 'uniform:x:2': A must be an integer");
	check_spec_error("uniform:1:2000001", "bad length spec 'uniform:1:2000001': B must be an integer");
	check_spec_error("fixed:-1", "bad length spec 'fixed:-1': N must be an integer");
	check_spec_error("fixed:1.5", "bad length spec 'fixed:1.5': N must be an integer");
	check_spec_error("fixed:", "bad length spec 'fixed:': N must be an integer");
	check_spec_error("fixed:1:2", "bad length spec 'fixed:1:2': expected fixed:N");
	check_spec_error("fixed: 3x", "bad length spec 'fixed: 3x': N must be an integer");
	check_spec_error("lognormal:1", "bad length spec 'lognormal:1': expected lognormal:MU:SIGMA[:MAX]");
	check_spec_error("lognormal:1:0.5:80:3", "expected lognormal:MU:SIGMA[:MAX]");
	check_spec_error("lognormal:x:0.5", "bad length spec 'lognormal:x:0.5': MU must be a finite number");
	check_spec_error("lognormal:inf:0.5", "MU must be a finite number");
	check_spec_error("lognormal:1:0", "bad length spec 'lognormal:1:0': SIGMA must be a positive number");
	check_spec_error("lognormal:1:-0.5", "SIGMA must be a positive number");
	check_spec_error("lognormal:1:nan", "SIGMA must be a positive number");
	check_spec_error("lognormal:1:0.5:0", "bad length spec 'lognormal:1:0.5:0': MAX must be an integer in [1, 1000000]");
	check_spec_error("lognormal:1:0.5:1000001", "MAX must be an integer in [1, 1000000]");
	check_spec_error("gamma:1:2", "bad length spec 'gamma:1:2': unknown kind 'gamma'");
	check_spec_error("abc", "bad length spec 'abc': expected fixed:N");
	check_spec_error("1000001", "bad length spec '1000001': expected fixed:N");
	check_spec_error("-3", "bad length spec '-3'");
	check_spec_error("file:", "bad length spec 'file:': missing PATH");

	char spec[256], want[256];
	snprintf(spec, sizeof spec, "file:%s/does-not-exist.csv", tmp_dir);
	snprintf(want, sizeof want, "%s/does-not-exist.csv: cannot open: No such file", tmp_dir);
	check_spec_error(spec, want);

	static const struct {
		const char *name, *content, *where, *what;
	} bad_files[] = {
		{"lf1.csv", "length,weight\n3,1\nx,2\n", ":3:", "length must be an integer in [0, 1000000], got 'x'"},
		{"lf2.csv", "3,1\n4,-1\n", ":2:", "weight must be a non-negative number, got '-1'"},
		{"lf3.csv", "# c\n3,1,2\n", ":2:", "expected 2 fields 'length,weight', got 3"},
		{"lf4.csv", "3\n", ":1:", "expected 2 fields 'length,weight', got 1"},
		{"lf5.csv", "3,nan\n", ":1:", "weight must be a non-negative number, got 'nan'"},
		{"lf6.csv", "1e3,1\n", ":1:", "length must be an integer"},
		{"lf7.csv", "3,1\n2000000,1\n", ":2:", "length must be an integer in [0, 1000000]"},
		{"lf8.csv", "length,weight\n3,0\n4,0\n", ":", "all weights are zero"},
		{"lf9.csv", "# only a comment\nlength,weight\n\n", ":", "no 'length,weight' rows"},
		{"lf10.csv", "length,weight\n3,1\nlength,weight\n", ":3:", "length must be an integer"},
		{"lf11.csv", "3,1e309\n", ":1:", "weight must be a non-negative number"},
	};
	for (size_t i = 0; i < sizeof bad_files / sizeof bad_files[0]; i++) {
		const char *path = write_text(bad_files[i].name, bad_files[i].content);
		snprintf(spec, sizeof spec, "file:%s", path);
		snprintf(want, sizeof want, "%s%s", path, bad_files[i].where);
		check_spec_error(spec, want);
		check_spec_error(spec, bad_files[i].what);
	}
	/* a NUL byte inside a line */
	const char *path = write_file("lf12.csv", "3,1\n4\0,1\n", 9);
	snprintf(spec, sizeof spec, "file:%s", path);
	snprintf(want, sizeof want, "%s:2: a NUL byte", path);
	check_spec_error(spec, want);
}

/* ---- determinism ---- */

static void test_determinism(void **state)
{
	(void)state;
	const char *path = write_text("det.csv", "2,1\n9,3\n40,0.25\n");
	char filespec[256];
	snprintf(filespec, sizeof filespec, "file:%s", path);
	const char *specs[] = {"lognormal:2.715:0.535:80", "uniform:1:100", filespec};
	for (size_t s = 0; s < 3; s++) {
		struct trc_lengths *d = parse_ok(specs[s]);
		gsl_rng *r1 = rng_seeded(99), *r2 = rng_seeded(99), *r3 = rng_seeded(100);
		int differs = 0;
		for (int i = 0; i < 2000; i++) {
			uint32_t a = trc_lengths_draw(d, r1);
			assert_int_equal(a, trc_lengths_draw(d, r2));
			differs |= a != trc_lengths_draw(d, r3);
		}
		assert_true(differs);
		gsl_rng_free(r1);
		gsl_rng_free(r2);
		gsl_rng_free(r3);
		trc_lengths_free(d);
	}
	const double cvs[] = {1.0, 2.0, 0.5};
	for (size_t c = 0; c < 3; c++) {
		struct trc_arrivals a;
		char err[256];
		assert_int_equal(trc_arrivals_init(&a, 500.0, cvs[c], err, sizeof err), 0);
		gsl_rng *r1 = rng_seeded(7), *r2 = rng_seeded(7);
		for (int i = 0; i < 2000; i++)
			assert_true(trc_arrivals_next_gap_s(&a, r1) == trc_arrivals_next_gap_s(&a, r2));
		gsl_rng_free(r1);
		gsl_rng_free(r2);
	}
}

/* ---- trace files ---- */

static void test_trace_good(void **state)
{
	(void)state;
	const char *path = write_text("good.csv",
	                              "# made by hand\n"
	                              "\n"
	                              "arrival_s,input_len,output_len\n"
	                              "0,12,0\n"
	                              "0.5,7,9\r\n"
	                              "# a comment between rows\n"
	                              "0.5, 1 ,2\n"
	                              "\n"
	                              "1.25e1,1000000,3\n");
	struct trc_trace *t = NULL;
	char err[512] = "";
	if (trc_trace_load(path, &t, err, sizeof err) != 0)
		fail_msg("good trace refused: %s", err);
	assert_non_null(t);
	assert_int_equal(t->n, 4);
	const double arr[] = {0.0, 0.5, 0.5, 12.5};
	const uint32_t in[] = {12, 7, 1, 1000000}, out[] = {0, 9, 2, 3};
	for (size_t i = 0; i < 4; i++) {
		assert_true(t->arrival_s[i] == arr[i]);
		assert_int_equal(t->input_len[i], in[i]);
		assert_int_equal(t->output_len[i], out[i]);
	}
	trc_trace_free(t);

	/* a table of (prompt, output) pairs: lengths alone, every arrival 0, marked lengths_only */
	path = write_text("pairs.csv", "# pairs\ninput_len,output_len\n1020,129\r\n7, 1\n");
	if (trc_trace_load(path, &t, err, sizeof err) != 0)
		fail_msg("good pairs table refused: %s", err);
	assert_int_equal(t->n, 2);
	assert_true(t->lengths_only && t->arrival_s[0] == 0 && t->arrival_s[1] == 0);
	assert_true(t->input_len[0] == 1020 && t->output_len[0] == 129 && t->input_len[1] == 7 && t->output_len[1] == 1);
	trc_trace_free(t);
	path = write_text("trace3.csv", "arrival_s,input_len,output_len\n0,1,1\n");
	if (trc_trace_load(path, &t, err, sizeof err) != 0)
		fail_msg("good trace refused: %s", err);
	assert_false(t->lengths_only);
	trc_trace_free(t);

	/* enough rows to make the arrays double several times */
	size_t rows = 5000, cap = 40 + rows * 24;
	char *big = malloc(cap);
	assert_non_null(big);
	size_t len = (size_t)snprintf(big, cap, "arrival_s,input_len,output_len\n");
	for (size_t i = 0; i < rows; i++)
		len += (size_t)snprintf(big + len, cap - len, "%zu.25,%zu,%zu\n", i, i % 97, i % 13);
	path = write_file("big.csv", big, len);
	free(big);
	assert_int_equal(trc_trace_load(path, &t, err, sizeof err), 0);
	assert_int_equal(t->n, rows);
	for (size_t i = 0; i < rows; i++) {
		assert_true(t->arrival_s[i] == (double)i + 0.25);
		assert_int_equal(t->input_len[i], i % 97);
		assert_int_equal(t->output_len[i], i % 13);
	}
	trc_trace_free(t);
}

/* The Azure LLM trace's own format, on the first 12 rows of the published
 * conversation trace (tests/data/README.md): CRLF line ends, 7-digit
 * fractions, arrivals in seconds after the first row; the differences below
 * are read off the timestamps by hand. Then dates that cross a year's end
 * and a leap day. */
static void test_trace_azure(void **state)
{
	(void)state;
	const char *dir = getenv("SIMBATCH_TEST_DATA");
	char path[1024], err[512] = "";
	assert_non_null(dir);
	snprintf(path, sizeof path, "%s/azure-llm-2023-conv-head.csv", dir);
	struct trc_trace *t = NULL;
	if (trc_trace_load(path, &t, err, sizeof err) != 0)
		fail_msg("Azure excerpt refused: %s", err);
	assert_int_equal(t->n, 12);
	/* 18:15:46.6805900 is the origin; 50.9951690, 51.2224670 and 56.1080580 follow */
	assert_true(t->arrival_s[0] == 0.0);
	assert_true(t->arrival_s[1] == 4314579000 * 1e-9);
	assert_true(t->arrival_s[2] == 4541877000 * 1e-9);
	assert_true(t->arrival_s[11] == 9427468000 * 1e-9);
	const uint32_t in[12] = { 374, 396, 879, 91, 91, 381, 1313, 388, 242, 209, 394, 394 };
	const uint32_t out[12] = { 44, 109, 55, 16, 16, 84, 142, 84, 14, 152, 124, 59 };
	for (size_t i = 0; i < 12; i++) {
		assert_int_equal(t->input_len[i], in[i]);
		assert_int_equal(t->output_len[i], out[i]);
	}
	trc_trace_free(t);

	const char *p2 = write_text("azure-dates.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
	                                               "2023-12-31 23:59:59.5,1,1\r\n"
	                                               "2024-01-01 00:00:00.25,2,3\r\n"
	                                               "2024-02-28 23:59:59.5,4,5\r\n"
	                                               "2024-02-29 12:00:00,6,7\r\n"
	                                               "2024-03-01 00:00:00.123456789,8,9\r\n");
	if (trc_trace_load(p2, &t, err, sizeof err) != 0)
		fail_msg("dates refused: %s", err);
	assert_int_equal(t->n, 5);
	/* the origin is 2024-01-01 00:00:00 less 0.5 s: 0.75 s over the new year; Feb 28 23:59:59.5 is
	 * 31 + 28 days on; Feb 29 noon 12 h and 0.5 s after that; Mar 1 00:00 is 60 days and 0.5 s
	 * after the origin (2024 is a leap year) */
	assert_true(t->arrival_s[1] == 750000000 * 1e-9);
	assert_true(t->arrival_s[2] == 59 * 86400LL * 1000000000LL * 1e-9);
	assert_true(t->arrival_s[3] == ((59 * 86400LL + 12 * 3600LL) * 1000000000LL + 500000000LL) * 1e-9);
	assert_true(t->arrival_s[4] == (60 * 86400LL * 1000000000LL + 500000000LL + 123456789LL) * 1e-9);
	trc_trace_free(t);
}

static void check_trace_error(const char *name, const char *content, const char *tail)
{
	const char *path = write_text(name, content);
	struct trc_trace *t = (struct trc_trace *)&t;   /* must be cleared */
	char err[512] = "", want[512];
	if (trc_trace_load(path, &t, err, sizeof err) != -1)
		fail_msg("bad trace %s accepted", name);
	assert_null(t);
	snprintf(want, sizeof want, "%s%s", path, tail);
	if (strcmp(err, want) != 0)
		fail_msg("trace %s: got '%s', want '%s'", name, err, want);
}

#define HDR "arrival_s,input_len,output_len\n"

static void test_trace_errors(void **state)
{
	(void)state;
	check_trace_error("t1.csv", "0.1,2,3\n", ":1: expected header 'arrival_s,input_len,output_len' (or the Azure "
	                  "LLM trace's 'TIMESTAMP,ContextTokens,GeneratedTokens', or pairs' 'input_len,output_len'), got '0.1,2,3'");
	check_trace_error("t2.csv", "# c\narrival,input,output\n0,1,1\n",
	                  ":2: expected header 'arrival_s,input_len,output_len' (or the Azure LLM trace's "
	                  "'TIMESTAMP,ContextTokens,GeneratedTokens', or pairs' 'input_len,output_len'), got "
	                  "'arrival,input,output'");
	check_trace_error("t3.csv", "# only comments\n\n", ": empty trace: expected header 'arrival_s,input_len,output_len' "
	                  "(or 'TIMESTAMP,ContextTokens,GeneratedTokens')");
	check_trace_error("t4.csv", "", ": empty trace: expected header 'arrival_s,input_len,output_len' (or "
	                  "'TIMESTAMP,ContextTokens,GeneratedTokens')");
	check_trace_error("t5.csv", HDR "# none\n", ": trace has a header but no requests");
	check_trace_error("t6.csv", HDR "0,1,1\n0.2,3\n", ":3: expected 3 fields (arrival_s,input_len,output_len), got 2");
	check_trace_error("t7.csv", HDR "0,1,1,4\n", ":2: expected 3 fields (arrival_s,input_len,output_len), got 4");
	check_trace_error("t8.csv", HDR "abc,1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got 'abc'");
	check_trace_error("t9.csv", HDR "-1,1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got '-1'");
	check_trace_error("t10.csv", HDR "nan,1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got 'nan'");
	check_trace_error("t11.csv", HDR "inf,1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got 'inf'");
	check_trace_error("t12.csv", HDR "1e999,1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got '1e999'");
	check_trace_error("t13.csv", HDR "0.1,1,1\n\n0.7,1,1\n# c\n0.5,1,1\n",
	                  ":6: arrival_s 0.5 is earlier than the previous row's 0.7");
	check_trace_error("t14.csv", HDR "0,-3,1\n", ":2: input_len must be an integer in [0, 1000000], got '-3'");
	check_trace_error("t15.csv", HDR "0,2.5,1\n", ":2: input_len must be an integer in [0, 1000000], got '2.5'");
	check_trace_error("t16.csv", HDR "0,2,\n", ":2: output_len must be an integer in [0, 1000000], got ''");
	check_trace_error("t17.csv", HDR "0,1000001,1\n", ":2: input_len must be an integer in [0, 1000000], got '1000001'");
	check_trace_error("t18.csv", HDR "0,1,x\n", ":2: output_len must be an integer in [0, 1000000], got 'x'");
	check_trace_error("t19.csv", HDR ",1,1\n", ":2: arrival_s must be a number from 0 to 1e+09, got ''");
	/* just past the span the int64 nanosecond clock leaves to arrivals (TRC_MAX_SPAN_S) */
	check_trace_error("t20.csv", HDR "1000000000.5,1,1\n",
	                  ":2: arrival_s must be a number from 0 to 1e+09, got '1000000000.5'");

#define AZ "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.6805900,374,44\r\n"
#define AZ_TIME "TIMESTAMP must read YYYY-MM-DD HH:MM:SS.fffffff (a real date from 1970 to 2199, up to 9 fractional digits), got "
	check_trace_error("a1.csv", AZ "2023-11-16 18:15:46.6805899,1,1\r\n",
	                  ":3: TIMESTAMP 2023-11-16 18:15:46.6805899 is earlier than the previous row's 2023-11-16 18:15:46.6805900");
	check_trace_error("a2.csv", AZ "2023-11-16 18:15:47,0,1\r\n",
	                  ":3: ContextTokens must be an integer in [1, 1000000], got '0'");
	check_trace_error("a3.csv", AZ "2023-11-16 18:15:47,5,0\r\n",
	                  ":3: GeneratedTokens must be an integer in [1, 1000000], got '0'");
	check_trace_error("a4.csv", AZ "2023-11-16 18:15:47,-5,3\r\n",
	                  ":3: ContextTokens must be an integer in [1, 1000000], got '-5'");
	check_trace_error("a5.csv", AZ "2023-11-16 18:15:47,5,1000001\r\n",
	                  ":3: GeneratedTokens must be an integer in [1, 1000000], got '1000001'");
	check_trace_error("a6.csv", AZ "2023-02-29 00:00:00,5,1\r\n", ":3: " AZ_TIME "'2023-02-29 00:00:00'");
	check_trace_error("a7.csv", AZ "2023-11-16 24:00:00,5,1\r\n", ":3: " AZ_TIME "'2023-11-16 24:00:00'");
	check_trace_error("a8.csv", AZ "2023-11-16 18:15:47.1234567891,5,1\r\n",
	                  ":3: " AZ_TIME "'2023-11-16 18:15:47.1234567891'");
	check_trace_error("a9.csv", AZ "2023-11-16T18:15:47,5,1\r\n", ":3: " AZ_TIME "'2023-11-16T18:15:47'");
	check_trace_error("a10.csv", AZ "18:15:47,5,1\r\n", ":3: " AZ_TIME "'18:15:47'");
	check_trace_error("a11.csv", AZ "2023-11-16 18:15:47.,5,1\r\n", ":3: " AZ_TIME "'2023-11-16 18:15:47.'");
	check_trace_error("a12.csv", AZ "2023-11-16 18:15:47,5\r\n",
	                  ":3: expected 3 fields (TIMESTAMP,ContextTokens,GeneratedTokens), got 2");
	check_trace_error("a13.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n1969-12-31 23:59:59,5,1\r\n",
	                  ":2: " AZ_TIME "'1969-12-31 23:59:59'");
	check_trace_error("a14.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n",
	                  ": trace has a header but no requests");

	struct trc_trace *t = (struct trc_trace *)&t;
	char err[512], path[256], want[512];
	snprintf(path, sizeof path, "%s/no-such-trace.csv", tmp_dir);
	assert_int_equal(trc_trace_load(path, &t, err, sizeof err), -1);
	assert_null(t);
	snprintf(want, sizeof want, "%s: cannot open: No such file or directory", path);
	assert_string_equal(err, want);
}

/* ---- corpus tokenizer ---- */

/* Sentences of the text below, by hand:
 *   "The cat sat."                     3 words
 *   "It was happy!"                    3
 *   "Was it?"                          2
 *   "\"Yes,\" she said."               3  (the quote does not hide the comma word)
 *   "Pi is 3.14 -- roughly."           4  ("--" has no letter; "3.14" ends no sentence)
 *   "..."                              0  (skipped: no words)
 *   "A list" + blank line              2
 *   "no stop here (quoted end.)"       5  (one newline does not end it; ".)" does)
 *   "Next" + whitespace-only line      1
 *   "Über naïve café — 日本!"          4  ("—" is punctuation; ends at end of input)
 * Lengths 3 3 2 3 4 2 5 1 4. */
static const char corpus_text[] =
	"The cat sat. It was happy!\n"
	"Was it? \"Yes,\" she said.\n"
	"Pi is 3.14 -- roughly. ...\n"
	"A list\n"
	"\n"
	"no stop here\n"
	"(quoted end.) Next\n"
	" \t \r\n"
	"\xC3\x9C" "ber na\xC3\xAF" "ve caf\xC3\xA9 \xE2\x80\x94 \xE6\x97\xA5\xE6\x9C\xAC!";
static const uint64_t corpus_expected[] = {3, 3, 2, 3, 4, 2, 5, 1, 4};

struct seen_sentences {
	uint64_t len[32];
	size_t n;
};

static void record_sentence(uint64_t words, void *ctx)
{
	struct seen_sentences *s = ctx;
	assert_true(s->n < 32);
	s->len[s->n++] = words;
}

static void check_corpus_sequence(size_t chunk)
{
	struct seen_sentences seen = {{0}, 0};
	struct trc_corpus *c = NULL;
	char err[256];
	assert_int_equal(trc_corpus_create(4, record_sentence, &seen, &c, err, sizeof err), 0);
	size_t n = sizeof corpus_text - 1;
	for (size_t i = 0; i < n; i += chunk)
		trc_corpus_feed(c, corpus_text + i, i + chunk <= n ? chunk : n - i);
	trc_corpus_finish(c);
	size_t want = sizeof corpus_expected / sizeof corpus_expected[0];
	assert_int_equal(seen.n, want);
	for (size_t i = 0; i < want; i++)
		assert_int_equal(seen.len[i], corpus_expected[i]);
	/* --max 4 drops the 5-word sentence: kept lengths 1 x1, 2 x2, 3 x3,
	 * 4 x2; mean (1 + 4 + 9 + 8) / 8 = 2.75; cumulative 1, 3, 6, 8, so the
	 * median (4 of 8) is 3 and the 90% point (7.2 of 8) is 4. */
	assert_int_equal(trc_corpus_sentences(c), 8);
	assert_int_equal(trc_corpus_dropped(c), 1);
	assert_int_equal(trc_corpus_count(c, 1), 1);
	assert_int_equal(trc_corpus_count(c, 2), 2);
	assert_int_equal(trc_corpus_count(c, 3), 3);
	assert_int_equal(trc_corpus_count(c, 4), 2);
	assert_int_equal(trc_corpus_count(c, 5), 0);
	check_close(trc_corpus_mean_words(c), 2.75, 1e-15, "corpus mean");
	assert_int_equal(trc_corpus_quantile_words(c, 0.5), 3);
	assert_int_equal(trc_corpus_quantile_words(c, 0.9), 4);
	trc_corpus_destroy(c);
}

static void test_corpus_tokenizer(void **state)
{
	(void)state;
	check_corpus_sequence(sizeof corpus_text);   /* at once */
	check_corpus_sequence(1);                    /* byte by byte */
	check_corpus_sequence(7);                    /* chunks that split UTF-8 characters */
}

/* The histogram written by the corpus counter reads back as a file: spec
 * with the same mean. */
static void test_corpus_roundtrip(void **state)
{
	(void)state;
	struct trc_corpus *c = NULL;
	char err[512];
	assert_int_equal(trc_corpus_create(4, NULL, NULL, &c, err, sizeof err), 0);
	trc_corpus_feed(c, corpus_text, sizeof corpus_text - 1);
	trc_corpus_finish(c);
	const char *path = tmp_path("corpus.csv");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(trc_corpus_write(c, f), 0);
	assert_int_equal(fclose(f), 0);
	trc_corpus_destroy(c);

	f = fopen(path, "r");
	assert_non_null(f);
	char buf[256];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose(f);
	assert_string_equal(buf, "length,weight\n1,1\n2,2\n3,3\n4,2\n");

	char spec[300];
	snprintf(spec, sizeof spec, "file:%s", path);
	struct trc_lengths *d = parse_ok(spec);
	check_close(trc_lengths_mean(d), 2.75, 1e-15, "corpus file mean");
	assert_int_equal(trc_lengths_quantile(d, 0.9), 4);
	trc_lengths_free(d);

	assert_int_equal(trc_corpus_create(0, NULL, NULL, &c, err, sizeof err), -1);
	assert_null(c);
	check_contains(err, "max sentence length must be in [1, 1000000] words, got 0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_poisson_gaps),
		cmocka_unit_test(test_gamma_gaps),
		cmocka_unit_test(test_gap_paths),
		cmocka_unit_test(test_gap_blocks),
		cmocka_unit_test(test_arrivals_errors),
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_uniform),
		cmocka_unit_test(test_lognormal),
		cmocka_unit_test(test_empirical_file),
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_trace_good),
		cmocka_unit_test(test_trace_azure),
		cmocka_unit_test(test_trace_errors),
		cmocka_unit_test(test_corpus_tokenizer),
		cmocka_unit_test(test_corpus_roundtrip),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
