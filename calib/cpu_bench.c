/* calib/cpu_bench.c: the CPU microbenchmarks behind a calibration table (see
 * cpu_bench.h). */
#include "cpu_bench.h"
#include "../util/errkind.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>

#include "../kernels/cpu_cells.h"   /* the live runtime's cell kernels: time what `live` runs */

#define CALBENCH_MIN_SAMPLE_S 20e-6   /* shortest timed sample */
#define CALBENCH_MAX_GROUP 1000       /* most calls in one timed sample */

struct calbench_buffers {
	uint32_t max_batch;
	float *a, *b, *c;      /* gemm: A (b*m x k), B (k x n), C (b*m x n); attn: one of each per sample;
	                          elementwise: a = gates, b = bias, c = cell state */
	float *h;              /* elementwise: hidden output */
};

double calbench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

double calbench_thread_cpu(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void calbench_gemm(int m1_gemv, uint64_t M, uint64_t K, uint64_t N, const float *A, const float *B, float *C)
{
	if (m1_gemv && M == 1)
		/* y (N) = B^T (N x K) x (K): B is row-major K x N */
		cblas_sgemv(CblasRowMajor, CblasTrans, (int)K, (int)N, 1.0f, B, (int)N, A, 1, 0.0f, C, 1);
	else
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B, (int)N,
		            0.0f, C, (int)N);
}

CPU_EW void calbench_lstm_cell(uint32_t batch, uint32_t hidden, const float *gates, const float *bias, float *c,
                               float *h)
{
	for (size_t r = 0; r < batch; r++)
		cpu_lstm_row(hidden, gates + r * 4 * hidden, bias, c + r * hidden, h + r * hidden);
}

/* Small values of both signs, never denormal, the same on every run. */
static float *calbench_alloc_fill(size_t n, unsigned salt)
{
	float *p = malloc((n ? n : 1) * sizeof *p);

	if (p)
		for (size_t i = 0; i < n; i++)
			p[i] = (float)((int)((i * 7 + salt) % 13) - 6) * 0.01f;
	return p;
}

void calbench_buffers_destroy(struct calbench_buffers *b)
{
	if (!b)
		return;
	free(b->a);
	free(b->b);
	free(b->c);
	free(b->h);
	free(b);
}

int calbench_buffers_create(const struct calplan_shape *s, uint32_t max_batch, struct calbench_buffers **out,
                            char *err, size_t errlen)
{
	struct calbench_buffers *b = calloc(1, sizeof *b);
	size_t mb = max_batch;

	*out = NULL;
	if (!b)
		goto oom;
	b->max_batch = max_batch;
	switch (s->op) {
	case CALTAB_GEMM:
		b->a = calbench_alloc_fill(mb * s->m * s->k, 1);
		b->b = calbench_alloc_fill(s->k * s->n, 2);
		b->c = calbench_alloc_fill(mb * s->m * s->n, 3);
		b->h = calbench_alloc_fill(0, 0);
		break;
	case CALTAB_ATTN:
		b->a = calbench_alloc_fill(mb * s->m * s->k, 1);
		b->b = calbench_alloc_fill(mb * s->k * s->n, 2);
		b->c = calbench_alloc_fill(mb * s->m * s->n, 3);
		b->h = calbench_alloc_fill(0, 0);
		break;
	default: {
		size_t hidden = s->m / CALBENCH_LSTM_OPS_PER_UNIT;

		if (s->m % CALBENCH_LSTM_OPS_PER_UNIT != 0) {
			snprintf(err, errlen, "elementwise shape %llu ops per sample is not an LSTM cell (%d ops per unit)",
			         (unsigned long long)s->m, CALBENCH_LSTM_OPS_PER_UNIT);
			calbench_buffers_destroy(b);
			return -1;
		}
		b->a = calbench_alloc_fill(mb * 4 * hidden, 1);
		b->b = calbench_alloc_fill(4 * hidden, 2);
		b->c = calbench_alloc_fill(mb * hidden, 3);
		b->h = calbench_alloc_fill(mb * hidden, 4);
		break;
	}
	}
	if (!b->a || !b->b || !b->c || !b->h)
		goto oom;
	*out = b;
	return 0;
oom:
	err_memory(err, errlen, "out of memory for the operands of one calibration point");
	calbench_buffers_destroy(b);
	return -1;
}

static void calbench_run_once(const struct calplan_shape *s, struct calbench_buffers *buf, uint32_t batch,
                              int m1_gemv)
{
	switch (s->op) {
	case CALTAB_GEMM:
		calbench_gemm(m1_gemv, (uint64_t)batch * s->m, s->k, s->n, buf->a, buf->b, buf->c);
		break;
	case CALTAB_ATTN:
		/* batch independent products: each sample has its own operands */
		for (uint32_t i = 0; i < batch; i++)
			calbench_gemm(m1_gemv, s->m, s->k, s->n, buf->a + (size_t)i * s->m * s->k,
			              buf->b + (size_t)i * s->k * s->n, buf->c + (size_t)i * s->m * s->n);
		break;
	default:
		calbench_lstm_cell(batch, (uint32_t)(s->m / CALBENCH_LSTM_OPS_PER_UNIT), buf->a, buf->b, buf->c, buf->h);
		break;
	}
}

int calbench_collect(const struct calplan_shape *s, struct calbench_buffers *buf, uint32_t batch,
                     const struct calbench_opts *o, uint32_t warmup, uint32_t min_samples, double min_time_s,
                     uint32_t max_samples, double *samples, uint32_t *n, char *err, size_t errlen)
{
	double (*clock_s)(void) = o->thread_cpu_clock ? calbench_thread_cpu : calbench_now;
	double timed = 0, t0, once;
	uint32_t taken = 0, group;

	if (batch < 1 || batch > buf->max_batch) {
		snprintf(err, errlen, "calibration point out of range (batch %u of at most %u)", batch, buf->max_batch);
		return -1;
	}
	for (uint32_t i = 0; i < warmup; i++)
		calbench_run_once(s, buf, batch, o->m1_gemv);
	/* A call shorter than CALBENCH_MIN_SAMPLE_S is timed in groups, so the
	 * clock's own cost (tens to hundreds of ns) does not count. */
	t0 = clock_s();
	calbench_run_once(s, buf, batch, o->m1_gemv);
	once = clock_s() - t0;
	group = once >= CALBENCH_MIN_SAMPLE_S ? 1 :
	        once * CALBENCH_MAX_GROUP <= CALBENCH_MIN_SAMPLE_S ? CALBENCH_MAX_GROUP :
	        (uint32_t)ceil(CALBENCH_MIN_SAMPLE_S / once);
	while (*n < max_samples && (taken < min_samples || timed < min_time_s)) {
		t0 = clock_s();
		for (uint32_t i = 0; i < group; i++)
			calbench_run_once(s, buf, batch, o->m1_gemv);
		double dt = clock_s() - t0;
		samples[(*n)++] = dt / group;
		timed += dt;
		taken++;
	}
	return 0;
}

void calbench_summarize(double *samples, uint32_t n, int use_mean, struct calbench_result *r)
{
	memset(r, 0, sizeof *r);
	if (n == 0)
		return;
	gsl_sort(samples, 1, n);
	r->median_s = gsl_stats_median_from_sorted_data(samples, 1, n);
	r->mean_s = gsl_stats_mean(samples, 1, n);
	r->value_s = use_mean ? r->mean_s : r->median_s;
	r->min_s = samples[0];
	r->max_s = samples[n - 1];
	r->reps = n;
}

int calbench_time(const struct calplan_shape *s, struct calbench_buffers *buf, uint32_t batch,
                  const struct calbench_opts *o, struct calbench_result *r, char *err, size_t errlen)
{
	double *t = NULL;
	uint32_t n = 0;
	int rc = -1;

	memset(r, 0, sizeof *r);
	if (o->min_reps < 1 || o->max_reps < o->min_reps) {
		snprintf(err, errlen, "bad repetition counts %u..%u", o->min_reps, o->max_reps);
		return -1;
	}
	if (!(t = malloc(o->max_reps * sizeof *t))) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	if (calbench_collect(s, buf, batch, o, o->warmup, o->min_reps, o->min_time_s, o->max_reps, t, &n, err,
	                     errlen) != 0)
		goto out;
	calbench_summarize(t, n, o->mean, r);
	if (!(r->value_s > 0)) {
		snprintf(err, errlen, "a calibration point took no measurable time (clock resolution)");
		goto out;
	}
	rc = 0;
out:
	free(t);
	return rc;
}

int calbench_cold_extra(const struct calplan_shape *s, struct calbench_buffers *buf, int m1_gemv, double idle_s,
                        uint32_t reps, double *extra_s, char *err, size_t errlen)
{
	double *d = malloc((reps ? reps : 1) * sizeof *d);

	if (!d) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t r = 0; r < reps; r++) {
		for (int i = 0; i < 2; i++)
			calbench_run_once(s, buf, 1, m1_gemv);
		double t0 = calbench_now();
		for (int i = 0; i < CALBENCH_COLD_CALLS; i++)
			calbench_run_once(s, buf, 1, m1_gemv);
		double warm = calbench_now() - t0;
		struct timespec ts = { .tv_sec = (time_t)idle_s, .tv_nsec = (long)((idle_s - (double)(time_t)idle_s) * 1e9) };
		while (nanosleep(&ts, &ts) != 0)
			;
		t0 = calbench_now();
		for (int i = 0; i < CALBENCH_COLD_CALLS; i++)
			calbench_run_once(s, buf, 1, m1_gemv);
		d[r] = calbench_now() - t0 - warm;
	}
	gsl_sort(d, 1, reps);
	*extra_s = gsl_stats_median_from_sorted_data(d, 1, reps);
	free(d);
	return 0;
}
