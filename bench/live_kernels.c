/* bench/live_kernels.c: efficiency of the live runtime's CPU kernels
 * (bench/README.md, "Live kernels"). For one LSTM step of hidden size H
 * (the fused gate product [x, h] (b x 2H) by 2H x 4H, DeepCPU Sec. 5) at
 * batch sizes 1, 8, 64, 512 it times
 *  - the packed-weight GEMM alone (runtime/gemm.h) and OpenBLAS's
 *    cblas_sgemm on the same shape (and cblas_sgemv at batch 1): time,
 *    GFLOP/s, and the packed kernel's speed relative to SGEMM;
 *  - the whole step through the rnn kernel family (embedding gather, state
 *    gather, product, cell, scatter) with each GEMM;
 * and at batch 1 compares with the memory-bandwidth floor: the weight bytes
 * over the read bandwidth measured here (a buffer far larger than the caches,
 * and a re-read buffer of the weights' size, which stays in cache when the
 * last-level cache is larger than it).
 *
 * Each point: one untimed call, then calls until 0.3 s were timed (at least
 * 5); the median. Times are the thread's CPU time (CLOCK_THREAD_CPUTIME_ID),
 * so time the thread spends preempted by other jobs on a shared machine is
 * not counted; wall-clock medians are printed beside them.
 *
 * usage: live_kernels [HIDDEN] (default 1024)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/backend.h"
#include "runtime/blas.h"
#include "runtime/gemm.h"
#include "runtime/kernels.h"

struct lk_times {
	double cpu_s, wall_s;
};

static double lk_clock(clockid_t id)
{
	struct timespec t;
	clock_gettime(id, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

static int lk_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

#define LK_MAX_REPS 400

/* Median CPU and wall time of fn(ctx). */
static struct lk_times lk_time(void (*fn)(void *), void *ctx)
{
	static double cpu[LK_MAX_REPS], wall[LK_MAX_REPS];
	int n = 0;
	double spent = 0;
	fn(ctx);
	while (n < LK_MAX_REPS && (n < 5 || spent < 0.3)) {
		double w0 = lk_clock(CLOCK_MONOTONIC), c0 = lk_clock(CLOCK_THREAD_CPUTIME_ID);
		fn(ctx);
		cpu[n] = lk_clock(CLOCK_THREAD_CPUTIME_ID) - c0;
		wall[n] = lk_clock(CLOCK_MONOTONIC) - w0;
		spent += cpu[n++];
	}
	qsort(cpu, n, sizeof cpu[0], lk_cmp);
	qsort(wall, n, sizeof wall[0], lk_cmp);
	return (struct lk_times){ cpu[n / 2], wall[n / 2] };
}

struct lk_gemm {
	const struct rt_blas *blas;
	struct rt_packed *packed;
	const float *w, *x;
	float *y, *scratch;
	uint32_t m, k, n;
};

static void lk_packed(void *p)
{
	struct lk_gemm *g = p;
	rt_gemm_packed(g->packed, g->m, g->x, g->k, g->y, g->n, g->scratch);
}

static void lk_sgemm(void *p)
{
	struct lk_gemm *g = p;
	g->blas->sgemm(RT_CBLAS_ROW_MAJOR, RT_CBLAS_NO_TRANS, RT_CBLAS_NO_TRANS, (int)g->m, (int)g->n, (int)g->k, 1.0f,
	               g->x, (int)g->k, g->w, (int)g->n, 0.0f, g->y, (int)g->n);
}

static void lk_sgemv(void *p)
{
	struct lk_gemm *g = p;
	g->blas->sgemv(RT_CBLAS_ROW_MAJOR, RT_CBLAS_TRANS, (int)g->k, (int)g->n, 1.0f, g->w, (int)g->n, g->x, 1, 0.0f,
	               g->y, 1);
}

struct lk_read {
	const float *buf;
	size_t n;
	volatile float sink;
};

static void lk_read_fn(void *p)
{
	struct lk_read *r = p;
	float acc[16] = { 0 };
	for (size_t i = 0; i + 16 <= r->n; i += 16)
		for (int j = 0; j < 16; j++)
			acc[j] += r->buf[i + j];
	float s = 0;
	for (int j = 0; j < 16; j++)
		s += acc[j];
	r->sink = s;
}

/* GB/s reading n floats of a buffer (written first, so the pages exist). */
static double lk_bandwidth(size_t n)
{
	float *b = malloc(n * sizeof *b);
	if (!b)
		return 0;
	for (size_t i = 0; i < n; i++)
		b[i] = (float)(i & 7);
	struct lk_read r = { .buf = b, .n = n };
	struct lk_times t = lk_time(lk_read_fn, &r);
	free(b);
	return n * sizeof(float) / t.cpu_s * 1e-9;
}

struct lk_step {
	const struct rt_model_ops *k;
	struct rt_model *km;
	void *work;
	struct rt_stream *s;
	struct rt_member *mb;
	uint32_t b;
};

static void lk_step_fn(void *p)
{
	struct lk_step *st = p;
	st->k->run_node(st->km, st->work, st->s, 0, st->b, st->mb);
}

/* The whole step (gathers, product, cell, scatters) through the kernels. */
static struct lk_times lk_whole_step(const struct mdl_model *m, enum rt_gemm_kind gk, uint32_t b)
{
	char err[256];
	struct rt_backend_cfg cfg = { .gemm = gk, .workers = 1 };
	struct rt_dev *dev;
	struct lk_step st = { .b = b };
	struct rt_model_info info;
	struct lk_times t = { 0, 0 };
	st.k = rt_kernels_find(m, err, sizeof err);
	if (!st.k || rt_backend_cpu.open(&cfg, &dev, err, sizeof err) != 0) {
		fprintf(stderr, "live_kernels: %s\n", err);
		return t;
	}
	if (st.k->create(m, &rt_backend_cpu, dev, 1, &st.km, err, sizeof err) != 0)
		goto out_dev;
	st.k->info(st.km, &info);
	if (rt_backend_cpu.stream_create(dev, 0, b, info.max_k, &st.s, err, sizeof err) != 0 ||
	    st.k->work_create(st.km, b, 0, &st.work, err, sizeof err) != 0)
		goto out_model;
	st.mb = calloc(b, sizeof *st.mb);
	for (uint32_t i = 0; st.mb && i < b; i++) {
		st.mb[i] = (struct rt_member){ .id = i, .input_len = 8, .pos = 3, .active = 1,
		                               .state = rt_backend_cpu.alloc(dev, st.k->state_bytes(st.km, 8, 0)) };
		st.k->state_init(st.km, st.mb[i].state, i, 8, 0, err, sizeof err);
	}
	t = lk_time(lk_step_fn, &st);
	for (uint32_t i = 0; st.mb && i < b; i++)
		rt_backend_cpu.free(dev, st.mb[i].state);
	free(st.mb);
out_model:
	if (st.work)
		st.k->work_destroy(st.km, st.work);
	if (st.s)
		rt_backend_cpu.stream_destroy(st.s);
	st.k->destroy(st.km);
out_dev:
	rt_backend_cpu.close(dev);
	return t;
}

int main(int argc, char **argv)
{
	uint32_t H = argc > 1 ? (uint32_t)atoi(argv[1]) : 1024;
	uint32_t K = 2 * H, N = 4 * H;
	static const uint32_t batches[] = { 1, 8, 64, 512 };
	char err[320], path[256], text[256];
	const struct rt_blas *blas = rt_blas_get(err, sizeof err);
	if (!blas) {
		fprintf(stderr, "live_kernels: %s\n", err);
		return 1;
	}
	/* a model file of the shape: one LSTM cell */
	snprintf(path, sizeof path, "/tmp/live_kernels_%d.model", (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return 1;
	snprintf(text, sizeof text, "model lk\nsource bench\ninput_len 8\nnode cell encoder gemm=1,%u,%u\n", K, N);
	fputs(text, f);
	fclose(f);
	struct mdl_model *m = NULL;
	if (mdl_load_file(path, &m, err, sizeof err) != 0) {
		fprintf(stderr, "live_kernels: %s\n", err);
		return 1;
	}
	remove(path);

	float *w = malloc((size_t)K * N * sizeof *w), *x = malloc((size_t)512 * K * sizeof *x);
	float *y = malloc((size_t)512 * N * sizeof *y);
	float *scratch = aligned_alloc(64, (rt_gemm_scratch_floats(512, K) * sizeof(float) + 63) / 64 * 64);
	struct rt_packed p;
	if (!w || !x || !y || !scratch)
		return 1;
	rt_rand_fill(w, (size_t)K * N, 1.0f / sqrtf((float)H), 1, 1);
	rt_rand_fill(x, (size_t)512 * K, 1.0f, 1, 2);
	if (rt_gemm_pack(K, N, w, &p) != 0)
		return 1;

	double weight_bytes = (double)K * N * sizeof(float);
	double bw_dram = lk_bandwidth((size_t)1 << 28);            /* 1 GiB: past every cache */
	double bw_same = lk_bandwidth((size_t)K * N);               /* the weights' size, re-read */
	printf("# LSTM step, hidden %u: [x, h] (b x %u) by %u x %u; weights %.1f MiB\n", H, K, K, N,
	       weight_bytes / 1048576);
	printf("# OpenBLAS %s, kernels %s (%s); packed kernel: %s\n", blas->config, blas->corename, blas->why,
	       rt_gemm_isa());
	printf("# read bandwidth, one thread: %.1f GB/s (1 GiB buffer), %.1f GB/s (%.0f MiB re-read)\n", bw_dram,
	       bw_same, weight_bytes / 1048576);
	printf("%5s %10s %9s %10s %9s %8s %11s %11s %9s\n", "batch", "packed_ms", "GFLOP/s", "sgemm_ms", "GFLOP/s",
	       "speedup", "step_pk_ms", "step_bl_ms", "wall_ms");
	for (size_t bi = 0; bi < sizeof batches / sizeof batches[0]; bi++) {
		uint32_t b = batches[bi];
		struct lk_gemm g = { .blas = blas, .packed = &p, .w = w, .x = x, .y = y, .scratch = scratch, .m = b,
		                     .k = K, .n = N };
		struct lk_times tp = lk_time(lk_packed, &g), tb = lk_time(lk_sgemm, &g);
		struct lk_times sp = lk_whole_step(m, RT_GEMM_PACKED, b), sb = lk_whole_step(m, RT_GEMM_BLAS, b);
		double flop = 2.0 * b * K * N;
		printf("%5u %10.3f %9.1f %10.3f %9.1f %8.2f %11.3f %11.3f %9.3f\n", b, tp.cpu_s * 1e3,
		       flop / tp.cpu_s * 1e-9, tb.cpu_s * 1e3, flop / tb.cpu_s * 1e-9, tb.cpu_s / tp.cpu_s,
		       sp.cpu_s * 1e3, sb.cpu_s * 1e3, tp.wall_s * 1e3);
		if (b == 1) {
			struct lk_times tv = lk_time(lk_sgemv, &g);
			printf("#   batch 1: sgemv %.3f ms; bandwidth floor %.3f ms (1 GiB bandwidth), %.3f ms (re-read): "
			       "packed at %.2fx / %.2fx the floor\n",
			       tv.cpu_s * 1e3, weight_bytes / (bw_dram * 1e9) * 1e3, weight_bytes / (bw_same * 1e9) * 1e3,
			       tp.cpu_s / (weight_bytes / (bw_dram * 1e9)), tp.cpu_s / (weight_bytes / (bw_same * 1e9)));
		}
	}
	rt_gemm_packed_free(&p);
	free(w);
	free(x);
	free(y);
	free(scratch);
	mdl_free(m);
	return 0;
}
