/* bench/calib_figures.c: the figures of the calibrated CPU model
 * (bench/README.md, "Calibrated CPU model"): GFLOP/s of the largest GEMMs of
 * the committed table against this core's peak, the latency of one LSTM
 * step (hidden 1024) at batch 1, 64 and 512 as the model predicts it and as
 * measured directly now, and the model's error on held-out points: measured
 * batches left out of the table, and GEMM sizes the table never measured,
 * timed now and predicted from the table.
 *
 * Peak: the core's clock is measured with a chain of dependent integer
 * multiplies (3 cycles each), and the AVX-512 FMA throughput with 12 independent
 * chains of vfmadd on 16-lane fp32 vectors (enough to keep two FMA ports
 * busy); the nominal figure is clock x 2 ports x 16 lanes x 2 FLOP.
 *
 * Every time is the thread's CPU time (CLOCK_THREAD_CPUTIME_ID), as the
 * table's, so other jobs on this shared machine do not count.
 * Needs the kernels the table was measured with: run it with
 * OPENBLAS_CORETYPE set as the table's "kernels" header says (it checks).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cblas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <immintrin.h>

#include "calib/cpu_bench.h"
#include "hwmodels/calibrated.h"
#include "hwmodels/caltab.h"

#define FIG_REPS 11

/* A chain of dependent 64-bit multiplies, 3 cycles each on Intel cores
 * since Sandy Bridge. (A chain of `add reg, imm` does not work: Golden Cove
 * and later fold those at rename and run several per cycle.) */
static double fig_clock_ghz(void)
{
	double best = 0;

	for (int r = 0; r < 3; r++) {
		uint64_t x = 3, y = 1;
		const long n = 20000000;
		double t0 = calbench_thread_cpu();

		for (long i = 0; i < n; i++)
			__asm__ volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
			                 "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
			                 : "+r"(x) : "r"(y));
		double ghz = 30.0 * n / (calbench_thread_cpu() - t0) / 1e9;
		if (ghz > best)
			best = ghz;
	}
	return best;
}

__attribute__((target("avx512f"))) static double fig_fma_gflops(void)
{
	double best = 0;

	for (int r = 0; r < 5; r++) {
		__m512 acc[12], mul = _mm512_set1_ps(0.9999999f), add = _mm512_set1_ps(1e-7f);
		const long n = 10000000;
		float sink[16];

		for (int j = 0; j < 12; j++)
			acc[j] = _mm512_set1_ps((float)j);
		double t0 = calbench_thread_cpu();
		for (long i = 0; i < n; i++)
			for (int j = 0; j < 12; j++)
				acc[j] = _mm512_fmadd_ps(acc[j], mul, add);
		double dt = calbench_thread_cpu() - t0;
		for (int j = 1; j < 12; j++)
			acc[0] = _mm512_add_ps(acc[0], acc[j]);
		_mm512_storeu_ps(sink, acc[0]);
		if (sink[0] == 12345.0f)  /* keeps the loop */
			printf(" ");
		double g = n * 12.0 * 16 * 2 / dt / 1e9;
		if (g > best)
			best = g;
	}
	return best;
}

static double fig_median(double *t, size_t n)
{
	gsl_sort(t, 1, n);
	return gsl_stats_median_from_sorted_data(t, 1, n);
}

/* One full LSTM step measured now: GEMM (b x 2048 by 2048 x 4096) then the
 * cell's element-wise kernel; median of FIG_REPS after 2 warm-ups. */
static double fig_lstm_step(uint32_t b)
{
	const uint32_t hidden = 1024, k = 2 * hidden, n = 4 * hidden;
	float *x = calloc((size_t)b * k, sizeof *x), *w = calloc((size_t)k * n, sizeof *w);
	float *gates = calloc((size_t)b * n, sizeof *gates), *bias = calloc(n, sizeof *bias);
	float *c = calloc((size_t)b * hidden, sizeof *c), *h = calloc((size_t)b * hidden, sizeof *h);
	double t[FIG_REPS], med = NAN;

	if (x && w && gates && bias && c && h) {
		for (size_t i = 0; i < (size_t)k * n; i++)
			w[i] = (float)((int)(i % 13) - 6) * 0.01f;
		for (int r = -2; r < FIG_REPS; r++) {
			double t0 = calbench_thread_cpu();

			calbench_gemm(1, b, k, n, x, w, gates);
			calbench_lstm_cell(b, hidden, gates, bias, c, h);
			if (r >= 0)
				t[r] = calbench_thread_cpu() - t0;
		}
		med = fig_median(t, FIG_REPS);
	}
	free(x);
	free(w);
	free(gates);
	free(bias);
	free(c);
	free(h);
	return med;
}

/* One GEMM (op gemm) measured now at a batch the table does not list. */
static double fig_gemm_now(uint64_t m, uint64_t k, uint64_t n, uint32_t b)
{
	struct calplan_shape s = { .op = CALTAB_GEMM, .m = m, .k = k, .n = n };
	struct calbench_opts o = { .warmup = 2, .min_reps = FIG_REPS, .max_reps = 41, .min_time_s = 0.2, .m1_gemv = 1,
	                           .thread_cpu_clock = 1 };
	struct calbench_buffers *buf;
	struct calbench_result r;
	char err[256];

	if (calbench_buffers_create(&s, b, &buf, err, sizeof err) != 0)
		return NAN;
	if (calbench_time(&s, buf, b, &o, &r, err, sizeof err) != 0)
		r.median_s = NAN;
	calbench_buffers_destroy(buf);
	return r.median_s;
}

static int fig_same_shape(const struct caltab_row *a, const struct caltab_row *b)
{
	return a->op == b->op && a->m_per_sample == b->m_per_sample && a->k == b->k && a->n == b->n;
}

static int fig_drop_all(const struct caltab_row *r);

/* Predicts every row of t for which drop(row) is true from the other rows
 * of its shape; prints the distribution of relative errors. */
static void fig_held_out(const struct caltab *t, const char *what, int (*drop)(const struct caltab_row *))
{
	double err_pct[2048];
	size_t n = 0;
	char err[512];

	for (size_t i = 0; i < t->nrows && n < 2048; i++) {
		const struct caltab_row *r = &t->rows[i];
		struct caltab *rest;
		struct hw_model *hw = NULL;
		double got;
		int inside = 0;

		if (r->op != CALTAB_GEMM || !drop(r))
			continue;
		if (caltab_create(&rest) != 0)
			return;
		for (size_t j = 0; j < t->nrows; j++) {
			const struct caltab_row *o = &t->rows[j];

			if (!fig_same_shape(o, r) || j == i || (drop != fig_drop_all && drop(o)))
				continue;
			caltab_add_row(rest, o, err, sizeof err);
			inside |= (o->batch > r->batch) << 1 | (o->batch < r->batch && o->batch * o->m_per_sample >= 2);
		}
		caltab_set_field(rest, "device", "cpu", err, sizeof err);
		caltab_set_field(rest, "date", "-", err, sizeof err);
		if (inside == 3 && caltab_validate(rest, err, sizeof err) == 0 &&
		    calhw_create(rest, NULL, "held-out", &hw, err, sizeof err) == 0 &&
		    calhw_gemm_seconds(hw, r->op, r->m_per_sample, r->k, r->n, r->batch, &got, err, sizeof err) == 0)
			err_pct[n++] = 100 * fabs(got / r->latency_s - 1);
		hw_close(hw);
		caltab_destroy(rest);
	}
	if (n == 0) {
		printf("  %s: no points\n", what);
		return;
	}
	gsl_sort(err_pct, 1, n);
	printf("  %-58s %4zu points: median %.1f%%, 90th %.1f%%, max %.1f%%\n", what, n,
	       gsl_stats_median_from_sorted_data(err_pct, 1, n), gsl_stats_quantile_from_sorted_data(err_pct, 1, n, 0.9),
	       err_pct[n - 1]);
}

static int fig_drop_all(const struct caltab_row *r)
{
	(void)r;
	return 1;
}

/* the 1.5x points: 3, 6, 12, ... (not powers of two) */
static int fig_drop_between(const struct caltab_row *r)
{
	return (r->batch & (r->batch - 1)) != 0;
}

int main(int argc, char **argv)
{
	char path[1024], err[512];
	struct caltab *t = NULL;
	struct hw_model *hw = NULL;
	const char *kernels;
	int direct = !(argc > 1 && strcmp(argv[1], "--no-direct") == 0);

	gsl_set_error_handler_off();
	snprintf(path, sizeof path, "%s/cpu.csv", calhw_tables_dir());
	if (caltab_read(path, &t, err, sizeof err) != 0 || calhw_create(t, NULL, "cpu", &hw, err, sizeof err) != 0) {
		fprintf(stderr, "calib_figures: %s\n", err);
		return 1;
	}
	kernels = caltab_field(t, "kernels");
	openblas_set_num_threads(1);
	if (direct && (!kernels || strncasecmp(kernels, openblas_get_corename(), strlen(openblas_get_corename())) != 0)) {
		fprintf(stderr, "calib_figures: the table ran '%s' but OpenBLAS runs '%s' now: set OPENBLAS_CORETYPE\n",
		        kernels ? kernels : "?", openblas_get_corename());
		return 1;
	}
	printf("table %s\n  device: %s\n  date: %s\n  kernels: %s\n\n", path, caltab_field(t, "device"),
	       caltab_field(t, "date"), kernels ? kernels : "?");

	/* 1. the largest GEMMs against the peak */
	double ghz = fig_clock_ghz(), fma = __builtin_cpu_supports("avx512f") ? fig_fma_gflops() : 0;
	printf("peak: clock %.2f GHz (dependent multiplies) x 2 FMA ports x 16 fp32 lanes x 2 = %.1f GFLOP/s; "
	       "measured AVX-512 FMA loop %.1f GFLOP/s\n", ghz, ghz * 64, fma);
	printf("largest measured batch of each GEMM shape, by FLOP rate:\n");
	struct { double gf; size_t row; } top[64];
	size_t ntop = 0;
	for (size_t i = 0; i < t->nrows; i++) {
		const struct caltab_row *r = &t->rows[i];

		if (r->op != CALTAB_GEMM || (i + 1 < t->nrows && fig_same_shape(r, &t->rows[i + 1])) || ntop == 64)
			continue;
		top[ntop].gf = 2.0 * r->batch * r->m_per_sample * r->k * r->n / r->latency_s / 1e9;
		top[ntop++].row = i;
	}
	for (size_t i = 0; i < ntop; i++)
		for (size_t j = i + 1; j < ntop; j++)
			if (top[j].gf > top[i].gf) {
				double g = top[i].gf;
				size_t rr = top[i].row;

				top[i] = top[j];
				top[j].gf = g;
				top[j].row = rr;
			}
	for (size_t i = 0; i < ntop; i++) {
		const struct caltab_row *r = &t->rows[top[i].row];

		printf("  gemm %5llu x %4llu x %5llu (M = %6llu): %8.2f ms  %6.1f GFLOP/s  %3.0f%% of FMA loop\n",
		       (unsigned long long)(r->batch * r->m_per_sample), (unsigned long long)r->k, (unsigned long long)r->n,
		       (unsigned long long)r->batch * r->m_per_sample, r->latency_s * 1e3, top[i].gf,
		       fma > 0 ? 100 * top[i].gf / fma : 0);
	}

	/* 2. one LSTM step, hidden 1024 */
	const struct calhw_ew_fit *ew = calhw_elementwise(hw);
	printf("\nelement-wise line: launch %.2f us + %.3f ns per op (%zu rows, rms %.1f%%%s)\n", ew->launch_s * 1e6,
	       ew->s_per_op * 1e9, ew->npoints, 100 * ew->rel_rms, ew->through_origin ? ", through 0" : "");
	printf("LSTM step, hidden 1024 (GEMM 1x2048x4096 per sample + 13312 element-wise ops per sample):\n");
	static const uint32_t lstm_b[] = { 1, 64, 512 };
	for (int i = 0; i < 3; i++) {
		double g, now = direct ? fig_lstm_step(lstm_b[i]) : NAN;

		if (calhw_gemm_seconds(hw, CALTAB_GEMM, 1, 2048, 4096, lstm_b[i], &g, err, sizeof err) != 0) {
			fprintf(stderr, "calib_figures: %s\n", err);
			return 1;
		}
		double model = g + ew->launch_s + ew->s_per_op * 13312.0 * lstm_b[i];
		printf("  batch %4u: model %8.3f ms (GEMM %.3f + element-wise %.3f), %7.1f us per sample; "
		       "measured now %8.3f ms (%+.1f%%)\n", lstm_b[i], model * 1e3, g * 1e3, (model - g) * 1e3,
		       model * 1e6 / lstm_b[i], now * 1e3, 100 * (model / now - 1));
	}

	/* 3. held-out points */
	printf("\nheld out of the table (gemm curves; both neighbours run SGEMM):\n");
	fig_held_out(t, "each interior measured batch, one at a time", fig_drop_all);
	fig_held_out(t, "all 1.5x batches (3, 6, ..., 1536) at once, from powers of 2", fig_drop_between);
	if (direct) {
		static const struct { uint64_t m, k, n; uint32_t b; } fresh[] = {
			{ 1, 2048, 4096, 5 }, { 1, 2048, 4096, 40 }, { 1, 2048, 4096, 320 }, { 1, 2048, 4096, 1000 },
			{ 1, 1024, 32320, 20 }, { 1, 1024, 32320, 200 }, { 1, 512, 2048, 10 }, { 1, 512, 2048, 700 },
			{ 1, 3072, 4096, 80 }, { 784, 1152, 128, 5 }, { 196, 2304, 256, 20 }, { 49, 4608, 512, 100 },
		};
		printf("GEMM sizes the table never measured, timed now (median of >= %d) vs the model:\n", FIG_REPS);
		for (size_t i = 0; i < sizeof fresh / sizeof fresh[0]; i++) {
			double got, now;

			if (calhw_gemm_seconds(hw, CALTAB_GEMM, fresh[i].m, fresh[i].k, fresh[i].n, fresh[i].b, &got, err,
			                       sizeof err) != 0) {
				printf("  %s\n", err);
				continue;
			}
			now = fig_gemm_now(fresh[i].m, fresh[i].k, fresh[i].n, fresh[i].b);
			printf("  gemm %5llu x %4llu x %5llu (batch %4u of %llux%llux%llu): model %9.3f ms, now %9.3f ms, "
			       "error %+.1f%%\n", (unsigned long long)(fresh[i].b * fresh[i].m), (unsigned long long)fresh[i].k,
			       (unsigned long long)fresh[i].n, fresh[i].b, (unsigned long long)fresh[i].m,
			       (unsigned long long)fresh[i].k, (unsigned long long)fresh[i].n, got * 1e3, now * 1e3,
			       100 * (got / now - 1));
		}
	}
	hw_close(hw);
	caltab_destroy(t);
	return 0;
}
