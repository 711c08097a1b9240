/* tests/test_runtime.c: the live runtime (runtime/) against numbers derived
 * apart from the code under test:
 *  - the packed GEMM against a double-precision product, and its batch
 *    invariance (a row's result bit for bit the same at every batch size
 *    and position); OpenBLAS's SGEMM against it;
 *  - the CPU element-wise kernels (LSTM and GRU cells, layer norm,
 *    attention, fused bias + argmax, gather / scatter) against formulas
 *    evaluated in double;
 *  - every kernel family (LSTM, GRU, seq2seq, transformer in both forms,
 *    MLP: small models of the built-in models' structure) serving each
 *    request alone and in random batches at random positions: the same
 *    outputs; the Transformer's pass encoder against the per-token one
 *    (the same at one input token, different past it);
 *  - live_run with every registered policy under the policy-contract
 *    checker (tests/policy_check.h): every request completes, each of its
 *    nodes run once and in order, outputs equal to the request served
 *    alone, no request issued before its time;
 *  - saturation (drops counted), stop (partial), and injected faults (a
 *    failed allocation, a kernel error) end the run with a message.
 * No assertion depends on how fast anything runs. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "runtime/backend.h"
#include "runtime/blas.h"
#include "runtime/gemm.h"
#include "runtime/kernels.h"
#include "runtime/live.h"
#include "policy_check.h"
#include "policy_knobs.h"

static struct test_knobs knobs;   /* the policy's knobs of the live run being set up */

/* ---- helpers ---- */

static uint64_t test_rng = 12345;

static double urand(void)   /* uniform [-1, 1), xorshift: independent of rt_rand_* */
{
	test_rng ^= test_rng << 13;
	test_rng ^= test_rng >> 7;
	test_rng ^= test_rng << 17;
	return (double)(test_rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static void fill(float *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (float)urand();
}

static char tmpdir[64];

static struct mdl_model *load_text(const char *name, const char *text)
{
	char path[256], err[256];
	snprintf(path, sizeof path, "%s/%s.model", tmpdir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	struct mdl_model *m = NULL;
	if (mdl_load_file(path, &m, err, sizeof err) != 0)
		fail_msg("%s", err);
	return m;
}

/* Small models with the structure of the built-in live models. */
static const char *const model_text[][2] = {
	{ "t_lstm", "model t_lstm\nsource test\ninput_len uniform:1:9\n"
	            "node lstm_cell encoder gemm=1,96,128\n" },
	{ "t_gru", "model t_gru\nsource test\ninput_len uniform:1:9\n"
	           "node gru_cell encoder gemm=1,24,96 gemm=1,32,96\n" },
	{ "t_s2s", "model t_s2s\nsource test\ninput_len uniform:1:7\noutput_len uniform:1:7\n"
	           "node enc_cell encoder gemm=1,80,192\nnode dec_cell decoder gemm=1,64,192\n"
	           "node dec_proj decoder gemm=1,48,301\n" },
	{ "t_tf", "model t_tf\nsource test\ninput_len uniform:1:6\noutput_len uniform:1:6\n"
	          "node enc_l1 encoder gemm=1,32,96 gemm=1,32,32 gemm=1,32,80 gemm=1,80,32 attn=1,8,5,x4 attn=1,5,8,x4\n"
	          "node enc_l2 encoder gemm=1,32,96 gemm=1,32,32 gemm=1,32,80 gemm=1,80,32 attn=1,8,5,x4 attn=1,5,8,x4\n"
	          "node cross_kv encoder gemm=1,32,64,x2\n"
	          "node dec_l1 decoder gemm=1,32,96 gemm=1,32,32,x3 gemm=1,32,80 gemm=1,80,32 attn=1,8,3,x4 "
	          "attn=1,3,8,x4\n"
	          "node dec_l2 decoder gemm=1,32,96 gemm=1,32,32,x3 gemm=1,32,80 gemm=1,80,32 attn=1,8,3,x4 "
	          "attn=1,3,8,x4\n"
	          "node proj decoder gemm=1,32,70\n" },
	{ "t_mlp", "model t_mlp\nsource test\nnode fc1 static gemm=1,40,72\nnode fc2 static gemm=1,72,72\n"
	           "node fc3 static gemm=1,72,11\n" },
	/* t_tf with its encoder one pass over the input (models/transformer.model);
	 * the same node order, so the same weights from the same seed */
	{ "t_tfp", "model t_tfp\nsource test\ninput_len uniform:1:6\noutput_len uniform:1:6\n"
	           "node enc_l1 pass gemm=1,32,96 gemm=1,32,32 gemm=1,32,80 gemm=1,80,32 attn=1,8,L,x4 attn=1,L,8,x4 "
	           "elementwise_len=20\n"
	           "node enc_l2 pass gemm=1,32,96 gemm=1,32,32 gemm=1,32,80 gemm=1,80,32 attn=1,8,L,x4 attn=1,L,8,x4 "
	           "elementwise_len=20\n"
	           "node cross_kv pass gemm=1,32,64,x2\n"
	           "node dec_l1 decoder gemm=1,32,96 gemm=1,32,32,x3 gemm=1,32,80 gemm=1,80,32 attn=1,8,3,x4 "
	           "attn=1,3,8,x4\n"
	           "node dec_l2 decoder gemm=1,32,96 gemm=1,32,32,x3 gemm=1,32,80 gemm=1,80,32 attn=1,8,3,x4 "
	           "attn=1,3,8,x4\n"
	           "node proj decoder gemm=1,32,70\n" },
};
/* Input lengths the tests draw go up to this. */
#define MAX_IN 8
#define NMODELS (sizeof model_text / sizeof model_text[0])

static int setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof tmpdir, "/tmp/sb-runtime-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

/* ---- the packed GEMM ---- */

static void test_gemm_reference(void **state)
{
	(void)state;
	static const uint32_t shapes[][2] = { { 1, 1 }, { 7, 5 }, { 100, 64 }, { 300, 130 }, { 513, 200 } };
	static const uint32_t ms[] = { 1, 2, 5, 6, 7, 13, 20 };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		uint32_t k = shapes[s][0], n = shapes[s][1];
		float *w = malloc((size_t)k * n * sizeof *w), *x = malloc(20 * (size_t)k * sizeof *x);
		float *y = malloc(20 * (size_t)(n + 3) * sizeof *y);
		float *scratch = aligned_alloc(64, ((rt_gemm_scratch_floats(20, k) * 4 + 63) / 64) * 64);
		struct rt_packed p;
		fill(w, (size_t)k * n);
		fill(x, 20 * (size_t)k);
		assert_int_equal(rt_gemm_pack(k, n, w, &p), 0);
		for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
			uint32_t m = ms[mi];
			size_t ldy = n + 3;   /* a row stride wider than the row: untouched columns */
			for (size_t i = 0; i < (size_t)m * ldy; i++)
				y[i] = 12345.0f;
			rt_gemm_packed(&p, m, x, k, y, ldy, scratch);
			for (uint32_t i = 0; i < m; i++) {
				for (uint32_t j = 0; j < n; j++) {
					double ref = 0, mag = 0;
					for (uint32_t kk = 0; kk < k; kk++) {
						ref += (double)x[(size_t)i * k + kk] * w[(size_t)kk * n + j];
						mag += fabs((double)x[(size_t)i * k + kk] * w[(size_t)kk * n + j]);
					}
					/* float accumulation: error below k * 2^-24 of the magnitude */
					assert_true(fabs(y[i * ldy + j] - ref) <= 1e-7 * k * mag + 1e-30);
				}
				for (size_t j = n; j < ldy; j++)
					assert_true(y[i * ldy + j] == 12345.0f);
			}
		}
		rt_gemm_packed_free(&p);
		free(w);
		free(x);
		free(y);
		free(scratch);
	}
}

/* The contract: a row's result does not depend on the batch, bit for bit. */
static void test_gemm_batch_invariance(void **state)
{
	(void)state;
	const uint32_t k = 700, n = 150, M = 23;   /* K spans several slices; N a partial panel */
	float *w = malloc((size_t)k * n * sizeof *w), *x = malloc((size_t)M * k * sizeof *x);
	float *alone = malloc((size_t)M * n * sizeof *alone), *y = malloc((size_t)M * n * sizeof *y);
	float *scratch = aligned_alloc(64, ((rt_gemm_scratch_floats(M, k) * 4 + 63) / 64) * 64);
	struct rt_packed p;
	fill(w, (size_t)k * n);
	fill(x, (size_t)M * k);
	assert_int_equal(rt_gemm_pack(k, n, w, &p), 0);
	for (uint32_t i = 0; i < M; i++)
		rt_gemm_packed(&p, 1, x + (size_t)i * k, k, alone + (size_t)i * n, n, scratch);
	for (uint32_t first = 0; first < 5; first++)
		for (uint32_t m = 1; first + m <= M; m++) {
			rt_gemm_packed(&p, m, x + (size_t)first * k, k, y, n, scratch);
			assert_memory_equal(y, alone + (size_t)first * n, (size_t)m * n * sizeof *y);
		}
	rt_gemm_packed_free(&p);
	free(w);
	free(x);
	free(alone);
	free(y);
	free(scratch);
}

/* OpenBLAS (when it loads) agrees with the packed kernel to rounding. */
static void test_blas_agrees(void **state)
{
	(void)state;
	char err[320];
	const struct rt_blas *b = rt_blas_get(err, sizeof err);
	if (!b) {
		print_message("OpenBLAS not loaded (%s): skipped\n", err);
		skip();
	}
	const uint32_t k = 300, n = 200, m = 9;
	float *w = malloc((size_t)k * n * sizeof *w), *x = malloc((size_t)m * k * sizeof *x);
	float *y1 = malloc((size_t)m * n * sizeof *y1), *y2 = malloc((size_t)m * n * sizeof *y2);
	float *scratch = aligned_alloc(64, ((rt_gemm_scratch_floats(m, k) * 4 + 63) / 64) * 64);
	struct rt_packed p;
	fill(w, (size_t)k * n);
	fill(x, (size_t)m * k);
	assert_int_equal(rt_gemm_pack(k, n, w, &p), 0);
	rt_gemm_packed(&p, m, x, k, y1, n, scratch);
	b->sgemm(RT_CBLAS_ROW_MAJOR, RT_CBLAS_NO_TRANS, RT_CBLAS_NO_TRANS, (int)m, (int)n, (int)k, 1.0f, x, (int)k, w,
	         (int)n, 0.0f, y2, (int)n);
	for (size_t i = 0; i < (size_t)m * n; i++)
		assert_true(fabsf(y1[i] - y2[i]) <= 1e-5f * (1.0f + fabsf(y2[i])));
	assert_true(b->corename[0] != '\0');
	rt_gemm_packed_free(&p);
	free(w);
	free(x);
	free(y1);
	free(y2);
	free(scratch);
}

/* ---- element-wise kernels against double formulas ---- */

static double sigm(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

static void test_elementwise(void **state)
{
	(void)state;
	char err[256];
	struct rt_dev *dev;
	struct rt_stream *s;
	const struct rt_backend_ops *be = &rt_backend_cpu;
	struct rt_backend_cfg cfg = { .gemm = RT_GEMM_PACKED, .workers = 1 };
	assert_int_equal(be->open(&cfg, &dev, err, sizeof err), 0);
	assert_int_equal(be->stream_create(dev, 0, 8, 64, &s, err, sizeof err), 0);
	enum { M = 3, H = 37 };
	float g[M * 4 * H], bias[4 * H], c[M * H], c0[M * H], h[M * H];
	fill(g, M * 4 * H);
	fill(bias, 4 * H);
	for (int i = 0; i < M * 4 * H; i++)
		g[i] *= 6.0f;   /* into the saturating range of the gates too */
	fill(c, M * H);
	memcpy(c0, c, sizeof c);
	be->lstm(s, M, H, g, 4 * H, bias, c, h);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < H; j++) {
			const float *gi = g + i * 4 * H;
			double cn = sigm(gi[H + j] + bias[H + j]) * c0[i * H + j] +
			            sigm(gi[j] + bias[j]) * tanh(gi[2 * H + j] + bias[2 * H + j]);
			assert_true(fabs(c[i * H + j] - cn) < 2e-6 * (1 + fabs(cn)));
			assert_true(fabs(h[i * H + j] - sigm(gi[3 * H + j] + bias[3 * H + j]) * tanh(cn)) < 2e-6);
		}
	float gx[M * 3 * H], gh[M * 3 * H], hp[M * H];
	fill(gx, M * 3 * H);
	fill(gh, M * 3 * H);
	fill(hp, M * H);
	be->gru(s, M, H, gx, gh, bias, hp, h);
	for (int i = 0; i < M; i++)
		for (int j = 0; j < H; j++) {
			const float *x = gx + i * 3 * H, *u = gh + i * 3 * H;
			double r = sigm(x[j] + u[j] + bias[j]), z = sigm(x[H + j] + u[H + j] + bias[H + j]);
			double nn = tanh(x[2 * H + j] + bias[2 * H + j] + r * (u[2 * H + j] + bias[3 * H + j]));
			assert_true(fabs(h[i * H + j] - ((1 - z) * nn + z * hp[i * H + j])) < 2e-6);
		}
	/* layer norm of x + y */
	float x[M * H], x0[M * H], y[M * H], gam[H], bet[H];
	fill(x, M * H);
	fill(y, M * H);
	fill(gam, H);
	fill(bet, H);
	memcpy(x0, x, sizeof x);
	be->add_layernorm(s, M, H, x, H, y, H, gam, bet);
	for (int i = 0; i < M; i++) {
		double mean = 0, var = 0;
		for (int j = 0; j < H; j++)
			mean += (double)x0[i * H + j] + y[i * H + j];
		mean /= H;
		for (int j = 0; j < H; j++)
			var += pow((double)x0[i * H + j] + y[i * H + j] - mean, 2);
		var /= H;
		for (int j = 0; j < H; j++) {
			double want = ((double)x0[i * H + j] + y[i * H + j] - mean) / sqrt(var + 1e-5) * gam[j] + bet[j];
			assert_true(fabs(x[i * H + j] - want) < 1e-5);
		}
	}
	/* fused bias + argmax: lowest index on ties; NULL skips */
	float lg[2 * 5] = { 1, 3, 2, 3, 0, /**/ 0, 0, 0, 0, 0 }, bz[5] = { 0, 0, 1, 0, 0 };
	int32_t t0 = -1, t1 = -1;
	int32_t *tp[2] = { &t0, &t1 };
	be->bias_argmax(s, 2, 5, lg, 5, bz, tp);
	assert_int_equal(t0, 1);   /* 3 at 1 and 3, 2 + 1 at 2: the first */
	assert_int_equal(t1, 2);
	t0 = -7;
	int32_t *tq[2] = { NULL, &t1 };
	be->bias_argmax(s, 2, 5, lg, 5, bz, tq);
	assert_int_equal(t0, -7);
	/* attention over per-request caches of different lengths; len 0 gives zeros */
	enum { HEADS = 2, DK = 4, D = HEADS * DK, L = 6 };
	float q[3 * D], kc[3][L * D], vc[3][L * D], out[3 * D];
	fill(q, 3 * D);
	for (int i = 0; i < 3; i++) {
		fill(kc[i], L * D);
		fill(vc[i], L * D);
	}
	const float *kp[3] = { kc[0], kc[1], kc[2] }, *vp[3] = { vc[0], vc[1], vc[2] };
	uint32_t len[3] = { 1, 5, 0 };
	be->attention(s, 3, HEADS, DK, q, D, kp, vp, D, len, out, D);
	for (int i = 0; i < 3; i++)
		for (int hh = 0; hh < HEADS; hh++) {
			double sc[L], mx = -1e300, den = 0;
			for (uint32_t t = 0; t < len[i]; t++) {
				sc[t] = 0;
				for (int j = 0; j < DK; j++)
					sc[t] += (double)q[i * D + hh * DK + j] * kc[i][t * D + hh * DK + j];
				sc[t] /= sqrt(DK);
				mx = sc[t] > mx ? sc[t] : mx;
			}
			for (uint32_t t = 0; t < len[i]; t++)
				den += exp(sc[t] - mx);
			for (int j = 0; j < DK; j++) {
				double o = 0;
				for (uint32_t t = 0; t < len[i]; t++)
					o += exp(sc[t] - mx) / den * vc[i][t * D + hh * DK + j];
				assert_true(fabs(out[i * D + hh * DK + j] - o) < 1e-5);
			}
		}
	/* gather, scatter with a skipped row, embed, add_rows */
	float a[4] = { 1, 2, 3, 4 }, b2[4] = { 5, 6, 7, 8 }, buf[2 * 4], dsta[4] = { 0 }, tab[3 * 4];
	const float *src[2] = { b2, a };
	be->gather(s, 2, 4, buf, 4, src);
	assert_true(buf[0] == 5 && buf[4] == 1 && buf[7] == 4);
	float *dst[2] = { NULL, dsta };
	be->scatter(s, 2, 4, buf, 4, dst);
	assert_true(dsta[0] == 1 && dsta[3] == 4);
	fill(tab, 12);
	int32_t tk[2] = { 2, 0 };
	const int32_t *tkp[2] = { &tk[0], &tk[1] };
	be->embed(s, 2, 4, buf, 4, tab, tkp);
	assert_memory_equal(buf, tab + 8, 4 * sizeof(float));
	assert_memory_equal(buf + 4, tab, 4 * sizeof(float));
	uint32_t rows[2] = { 1, 1 };
	be->add_rows(s, 2, 4, buf, 4, tab, rows);
	assert_true(buf[0] == tab[8] + tab[4]);
	assert_int_equal(be->finish(s, err, sizeof err), 0);
	assert_true(be->move_ns(s) > 0);
	be->stream_destroy(s);
	be->close(dev);
}

/* ---- kernel families: alone vs batched ---- */

struct req_out {
	int32_t tokens[16];
	float values[512];
	uint32_t ntokens, nvalues;
};

struct kreq {
	uint32_t in, out;
	uint64_t chain, pos;
	void *state;
};

/* Runs every request alone, node after node, and keeps its outputs. */
static void serve_alone(const struct rt_model_ops *k, struct rt_model *km, const struct mdl_model *m,
                        struct rt_stream *s, void *work, struct kreq *r, uint32_t n, struct req_out *o)
{
	char err[256];
	for (uint32_t i = 0; i < n; i++) {
		void *st = rt_backend_cpu.alloc(NULL, k->state_bytes(km, r[i].in, r[i].out));
		assert_non_null(st);
		assert_int_equal(k->state_init(km, st, i, r[i].in, r[i].out, err, sizeof err), 0);
		uint64_t chain = mdl_chain_length(m, r[i].in, r[i].out);
		for (uint64_t p = 0; p < chain; p++) {
			struct rt_member mb = { .id = i, .input_len = r[i].in, .output_len = r[i].out, .pos = p,
			                        .active = 1, .state = st };
			k->run_node(km, work, s, mdl_node_at(m, p, r[i].in, r[i].out), 1, &mb);
		}
		struct rt_outputs ro = { .tokens = o[i].tokens, .values = o[i].values };
		assert_int_equal(k->outputs(km, st, r[i].in, r[i].out, &ro, err, sizeof err), 0);
		o[i].ntokens = ro.ntokens;
		o[i].nvalues = ro.nvalues;
		rt_backend_cpu.free(NULL, st);
	}
}

/* Same tokens; final vectors equal to 1e-5 relative (in the max norm: an
 * element near zero is compared at the vector's scale). Returns the
 * relative difference. */
static double expect_same(const struct req_out *a, const struct req_out *b)
{
	assert_int_equal(a->ntokens, b->ntokens);
	assert_int_equal(a->nvalues, b->nvalues);
	for (uint32_t t = 0; t < a->ntokens; t++)
		assert_int_equal(a->tokens[t], b->tokens[t]);
	double diff = 0, scale = 0;
	for (uint32_t j = 0; j < a->nvalues; j++) {
		diff = fmax(diff, fabs((double)a->values[j] - b->values[j]));
		scale = fmax(scale, fabs((double)a->values[j]));
	}
	double r = scale > 0 ? diff / scale : diff;
	if (r > 1e-5)
		print_message("outputs differ by %.3g relative\n", r);
	assert_true(r <= 1e-5);
	return r;
}

static void test_kernels_alone_vs_batched(void **state)
{
	(void)state;
	char err[256];
	for (size_t mi = 0; mi < NMODELS; mi++) {
		struct mdl_model *m = load_text(model_text[mi][0], model_text[mi][1]);
		const struct rt_model_ops *k = rt_kernels_find(m, err, sizeof err);
		if (!k)
			fail_msg("%s", err);
		for (int g = 0; g < 2; g++) {
			struct rt_backend_cfg cfg = { .gemm = g ? RT_GEMM_BLAS : RT_GEMM_PACKED, .workers = 1 };
			struct rt_dev *dev;
			if (rt_backend_cpu.open(&cfg, &dev, err, sizeof err) != 0) {
				print_message("%s: skipped (%s)\n", g ? "blas" : "packed", err);
				continue;
			}
			struct rt_model *km;
			struct rt_model_info info;
			struct rt_stream *s;
			void *work;
			assert_int_equal(k->create(m, &rt_backend_cpu, dev, 7, &km, err, sizeof err), 0);
			k->info(km, &info);
			assert_int_equal(rt_backend_cpu.stream_create(dev, 0, 16 * MAX_IN, info.max_k, &s, err, sizeof err), 0);
			assert_int_equal(k->work_create(km, 16, rt_pass_rows(m, 16, MAX_IN), &work, err, sizeof err), 0);
			enum { N = 14 };
			struct kreq r[N];
			static struct req_out alone[N], batched[N];
			memset(alone, 0, sizeof alone);
			memset(batched, 0, sizeof batched);
			for (uint32_t i = 0; i < N; i++) {
				r[i] = (struct kreq){ .in = m->uses_input_len ? 1 + (uint32_t)((urand() + 1) * 4) : 0,
				                      .out = m->uses_output_len ? 1 + (uint32_t)((urand() + 1) * 4) : 0 };
				r[i].chain = mdl_chain_length(m, r[i].in, r[i].out);
			}
			serve_alone(k, km, m, s, work, r, N, alone);
			/* batched: repeatedly a random node type among the unfinished requests'
			 * next nodes, and a random subset of the requests at it */
			for (uint32_t i = 0; i < N; i++) {
				r[i].pos = 0;
				r[i].state = rt_backend_cpu.alloc(dev, k->state_bytes(km, r[i].in, r[i].out));
				assert_int_equal(k->state_init(km, r[i].state, i, r[i].in, r[i].out, err, sizeof err), 0);
			}
			uint32_t left = N;
			while (left) {
				uint32_t pick = (uint32_t)((urand() + 1) * 0.5 * N) % N;
				while (r[pick].pos >= r[pick].chain)
					pick = (pick + 1) % N;
				uint32_t node = mdl_node_at(m, r[pick].pos, r[pick].in, r[pick].out);
				struct rt_member mb[N];
				uint32_t ids[N], n = 0;
				for (uint32_t i = 0; i < N; i++)
					if (r[i].pos < r[i].chain && mdl_node_at(m, r[i].pos, r[i].in, r[i].out) == node &&
					    (i == pick || urand() > -0.2)) {
						mb[n] = (struct rt_member){ .id = i, .input_len = r[i].in, .output_len = r[i].out,
						                            .pos = r[i].pos, .active = 1, .state = r[i].state };
						ids[n++] = i;
					}
				k->run_node(km, work, s, node, n, mb);
				for (uint32_t j = 0; j < n; j++)
					if (++r[ids[j]].pos == r[ids[j]].chain) {
						uint32_t i = ids[j];
						struct rt_outputs ro = { .tokens = batched[i].tokens, .values = batched[i].values };
						assert_int_equal(k->outputs(km, r[i].state, r[i].in, r[i].out, &ro, err, sizeof err),
						                 0);
						batched[i].ntokens = ro.ntokens;
						batched[i].nvalues = ro.nvalues;
						rt_backend_cpu.free(dev, r[i].state);
						left--;
					}
			}
			double worst = 0;
			for (uint32_t i = 0; i < N; i++) {
				worst = fmax(worst, expect_same(&alone[i], &batched[i]));
				if (g == 0)   /* the packed kernel's promise: bit for bit */
					assert_memory_equal(alone[i].values, batched[i].values, alone[i].nvalues * sizeof(float));
				assert_int_equal(alone[i].nvalues, info.output_floats);
				assert_int_equal(alone[i].ntokens, m->uses_output_len ? r[i].out : 0);
			}
			if (g == 1)
				print_message("%s with OpenBLAS: alone vs batched within %.2g relative\n", m->name, worst);
			k->work_destroy(km, work);
			rt_backend_cpu.stream_destroy(s);
			k->destroy(km);
			rt_backend_cpu.close(dev);
		}
		mdl_free(m);
	}
}

/* The two Transformer forms on the same weights: with one input token the
 * pass encoder and the per-token one compute the same thing (bit for bit:
 * the same operations on the same rows); with more, the pass encoder's
 * earlier tokens attend to the later ones, so the outputs differ. */
static void test_transformer_forms(void **state)
{
	(void)state;
	char err[256];
	struct mdl_model *mt = load_text(model_text[3][0], model_text[3][1]);
	struct mdl_model *mp = load_text(model_text[5][0], model_text[5][1]);
	assert_string_equal(mp->name, "t_tfp");
	const struct rt_model_ops *k = rt_kernels_find(mp, err, sizeof err);
	assert_ptr_equal(k, rt_kernels_find(mt, err, sizeof err));
	struct rt_backend_cfg cfg = { .gemm = RT_GEMM_PACKED, .workers = 1 };
	struct rt_dev *dev;
	assert_int_equal(rt_backend_cpu.open(&cfg, &dev, err, sizeof err), 0);
	struct rt_model *kt, *kp;
	struct rt_model_info info;
	struct rt_stream *s;
	void *wt, *wp;
	assert_int_equal(k->create(mt, &rt_backend_cpu, dev, 5, &kt, err, sizeof err), 0);
	assert_int_equal(k->create(mp, &rt_backend_cpu, dev, 5, &kp, err, sizeof err), 0);
	k->info(kp, &info);
	assert_non_null(strstr(info.detail, "one pass"));
	assert_int_equal(rt_backend_cpu.stream_create(dev, 0, MAX_IN, info.max_k, &s, err, sizeof err), 0);
	assert_int_equal(k->work_create(kt, 1, 0, &wt, err, sizeof err), 0);
	assert_int_equal(k->work_create(kp, 1, MAX_IN, &wp, err, sizeof err), 0);
	enum { N = 6 };
	struct kreq r[N];
	static struct req_out ot[N], op[N];
	for (uint32_t i = 0; i < N; i++)
		r[i] = (struct kreq){ .in = i < 3 ? 1 : 2 + i, .out = 1 + i };
	serve_alone(k, kt, mt, s, wt, r, N, ot);
	serve_alone(k, kp, mp, s, wp, r, N, op);
	for (uint32_t i = 0; i < N; i++) {
		int same = memcmp(ot[i].values, op[i].values, sizeof ot[i].values) == 0 &&
		           memcmp(ot[i].tokens, op[i].tokens, sizeof ot[i].tokens) == 0;
		assert_int_equal(same, r[i].in == 1);
	}
	k->work_destroy(kt, wt);
	k->work_destroy(kp, wp);
	rt_backend_cpu.stream_destroy(s);
	k->destroy(kt);
	k->destroy(kp);
	rt_backend_cpu.close(dev);
	mdl_free(mt);
	mdl_free(mp);
}

/* The built-in model files have kernels; the others are refused by name. */
static void test_kernels_find(void **state)
{
	(void)state;
	static const char *const live[] = { "lstm", "gru", "seq2seq", "transformer", "transformer-per-token", "mlp" };
	char err[512];
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++) {
		struct mdl_model *m = NULL;
		if (mdl_load(live[i], &m, err, sizeof err) != 0)
			fail_msg("%s", err);
		const struct rt_model_ops *k = rt_kernels_find(m, err, sizeof err);
		if (!k)
			fail_msg("%s: %s", live[i], err);
		mdl_free(m);
	}
	struct mdl_model *m = NULL;
	assert_int_equal(mdl_load("resnet50", &m, err, sizeof err), 0);
	assert_null(rt_kernels_find(m, err, sizeof err));
	assert_non_null(strstr(err, "no live kernels"));
	assert_non_null(strstr(err, "seq2seq"));
	mdl_free(m);
}

static void test_step_at(void **state)
{
	(void)state;
	struct mdl_model *m = load_text("t_steps", "model t_steps\nsource test\ninput_len 3\noutput_len 2\n"
	                                           "node a static gemm=1,4,4\nnode e1 encoder gemm=1,4,4\n"
	                                           "node e2 encoder gemm=1,4,4\nnode d decoder gemm=1,4,4\n");
	/* chain for in 3, out 2: a e1 e2 e1 e2 e1 e2 d d */
	static const uint32_t want[] = { 0, 0, 0, 1, 1, 2, 2, 0, 1 };
	assert_int_equal(mdl_chain_length(m, 3, 2), 9);
	for (uint64_t p = 0; p < 9; p++)
		assert_int_equal(rt_step_at(m, p, 3, 2), want[p]);
	mdl_free(m);
}

static void test_rand(void **state)
{
	(void)state;
	float a[1000], b[1000], c[1000];
	rt_rand_fill(a, 1000, 0.5f, 9, 3);
	rt_rand_fill(b, 1000, 0.5f, 9, 3);
	rt_rand_fill(c, 1000, 0.5f, 9, 4);
	assert_memory_equal(a, b, sizeof a);
	double mean = 0;
	int same = 0;
	for (int i = 0; i < 1000; i++) {
		assert_true(a[i] >= -0.5f && a[i] < 0.5f);
		mean += a[i];
		same += a[i] == c[i];
	}
	assert_true(fabs(mean / 1000) < 0.05);   /* 5 standard errors of a uniform mean (0.289 / sqrt(1000) = 0.009) */
	assert_true(same < 5);
	assert_true(rt_rand_u64(1, 2, 3) == rt_rand_u64(1, 2, 3) && rt_rand_u64(1, 2, 3) != rt_rand_u64(1, 2, 4));
}

/* ---- live_run ---- */

static int64_t lat_node(void *ctx, uint32_t t, uint32_t b)
{
	(void)ctx;
	(void)t;
	return 20000 + 2000 * (int64_t)b;
}

static int64_t lat_graph(void *ctx, uint32_t b, uint32_t in, uint32_t out)
{
	(void)ctx;
	return (20000 + 2000 * (int64_t)b) * (1 + in + 2 * out);
}

/* A pass node: 20 us plus 2 us a token, and 0.5 us a query-key pair of
 * each member's own attention. */
static struct pol_pass_part lat_pass_part(void *ctx, uint32_t t, uint64_t tokens)
{
	(void)ctx;
	(void)t;
	return (struct pol_pass_part){ 20000 + 2000 * (int64_t)tokens, 0 };
}

static struct pol_pass_part lat_member_part(void *ctx, uint32_t t, uint32_t len)
{
	(void)ctx;
	(void)t;
	return (struct pol_pass_part){ 500 * (int64_t)len * len, 0 };
}

static int64_t lat_pass_single(void *ctx, uint32_t t, uint32_t len)
{
	return lat_pass_part(ctx, t, len).main_ns + lat_member_part(ctx, t, len).main_ns;
}

/* A NODE task as the engine prices it (pol_latency.task_node_ns); ctx is the model. */
static int64_t lat_task_node(void *ctx, uint32_t t, uint32_t n, struct pol_request *const *reqs, uint32_t cells,
                             uint32_t passes)
{
	(void)passes;
	if (!mdl_is_pass(ctx, t))
		return lat_node(ctx, t, cells);
	struct pol_latency lat = { .ctx = ctx, .pass_part = lat_pass_part, .member_part = lat_member_part,
	                           .pass_single_ns = lat_pass_single };
	return pol_pass_ns(&lat, t, n, reqs);
}

struct sched {
	uint64_t n;
	int64_t arrival_ns[64];
	uint32_t in[64], out[64];
};

/* Bursts of 1..6 requests 0.2 ms apart: batches form under every policy. */
static void make_schedule(const struct mdl_model *m, uint64_t n, struct sched *s)
{
	s->n = n;
	int64_t t = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (urand() > 0.4)
			t += 200000;
		s->arrival_ns[i] = t;
		s->in[i] = m->uses_input_len ? 1 + (uint32_t)((urand() + 1) * 3.5) : 0;
		s->out[i] = m->uses_output_len ? 1 + (uint32_t)((urand() + 1) * 3.5) : 0;
	}
}

static struct live_config live_cfg(const struct pol_ops *p, const struct mdl_model *m, const struct sched *s,
                                   uint32_t workers)
{
	struct live_config c = {
		.policy = p, .model = m, .workers = workers, .n = s->n, .arrival_ns = s->arrival_ns,
		.input_len = s->in, .output_len = s->out, .seed = 3, .device = "cpu", .gemm = RT_GEMM_PACKED,
		.max_queue = 1000, .keep_outputs = 1,
	};
	c.env = (struct pol_env){ .model = m, .workers = workers, .max_batch = 6, .sla_ns = 50000000,
	                          .params = test_knobs(&knobs, p),
	                          .lat = { .ctx = (void *)m, .node_ns = lat_node, .graph_ns = lat_graph,
	                                   .pass_part = lat_pass_part, .member_part = lat_member_part,
	                                   .pass_single_ns = lat_pass_single, .task_node_ns = lat_task_node } };
	test_knob_if_taken(&knobs, "window", "0.3");
	test_knob_if_taken(&knobs, "max-tasks", "2");
	test_knob_if_taken(&knobs, "profile-len", "fixed:4");   /* dec_timesteps 4 */
	return c;
}

/* Outputs of the schedule's requests served alone (seed 3, as live_cfg). */
static void reference_outputs(const struct mdl_model *m, const struct sched *s, struct req_out *o)
{
	char err[256];
	struct rt_backend_cfg cfg = { .gemm = RT_GEMM_PACKED, .workers = 1 };
	struct rt_dev *dev;
	struct rt_model *km;
	struct rt_model_info info;
	struct rt_stream *st;
	void *work;
	struct kreq r[64];
	const struct rt_model_ops *k = rt_kernels_find(m, err, sizeof err);
	assert_non_null(k);
	assert_int_equal(rt_backend_cpu.open(&cfg, &dev, err, sizeof err), 0);
	assert_int_equal(k->create(m, &rt_backend_cpu, dev, 3, &km, err, sizeof err), 0);
	k->info(km, &info);
	uint32_t longest = 0;
	for (uint64_t i = 0; i < s->n; i++) {
		r[i] = (struct kreq){ .in = s->in[i], .out = s->out[i] };
		longest = s->in[i] > longest ? s->in[i] : longest;
	}
	uint32_t pass_rows = rt_pass_rows(m, 1, longest);
	assert_int_equal(rt_backend_cpu.stream_create(dev, 0, pass_rows > 1 ? pass_rows : 1, info.max_k, &st, err,
	                                              sizeof err), 0);
	assert_int_equal(k->work_create(km, 1, pass_rows, &work, err, sizeof err), 0);
	serve_alone(k, km, m, st, work, r, (uint32_t)s->n, o);
	k->work_destroy(km, work);
	rt_backend_cpu.stream_destroy(st);
	k->destroy(km);
	rt_backend_cpu.close(dev);
}

/* Whether policy p refuses model m (its init fails): then it is skipped. */
static int policy_refuses(const struct pol_ops *p, const struct live_config *c)
{
	char err[256];
	void *st = calloc(1, p->state_size ? p->state_size : 1);
	int refused = p->init(st, &c->env, err, sizeof err) != 0;
	if (!refused && p->fini)
		p->fini(st);
	free(st);
	return refused;
}

static void test_live_every_policy(void **state)
{
	(void)state;
	char err[256];
	size_t np;
	const struct pol_ops *const *pols = pol_registry(&np);
	for (size_t mi = 0; mi < NMODELS; mi++) {
		struct mdl_model *m = load_text(model_text[mi][0], model_text[mi][1]);
		struct sched s;
		static struct req_out ref[64];
		make_schedule(m, 24, &s);
		reference_outputs(m, &s, ref);
		for (size_t pi = 0; pi < np; pi++)
			for (uint32_t workers = 1; workers <= 2; workers++) {
				struct live_config c = live_cfg(pols[pi], m, &s, workers);
				if (policy_refuses(pols[pi], &c))
					continue;
				c.policy = pchk_wrap(pols[pi], s.n);
				c.keep_tasks = 1;
				struct live_result r;
				if (live_run(&c, &r, err, sizeof err) != 0)
					fail_msg("%s on %s: %s", pols[pi]->name, m->name, err);
				if (pchk_verdict(r.issued) != 0)
					fail_msg("%s on %s: contract: %s", pols[pi]->name, m->name, pchk.first);
				assert_int_equal(r.run.completed, s.n);
				assert_int_equal(r.issued, s.n);
				assert_int_equal(r.partial, 0);
				uint64_t members = 0;
				for (uint64_t i = 0; i < s.n; i++) {
					const struct live_request *q = &r.reqs[i];
					assert_int_equal(q->status, LIVE_DONE);
					assert_true(q->issue_ns >= q->arrival_ns);   /* never early */
					assert_true(q->start_ns >= q->arrival_ns && q->finish_ns > q->start_ns);
					struct req_out got = { .ntokens = m->uses_output_len ? q->output_len : 0,
					                       .nvalues = q->nvalues };
					memcpy(got.tokens, q->tokens, got.ntokens * sizeof(int32_t));
					memcpy(got.values, q->values, q->nvalues * sizeof(float));
					expect_same(&ref[i], &got);
				}
				for (uint32_t t = 0; t < r.run.nnodes; t++)
					members += r.run.node_cells[t];
				assert_int_equal(members + r.run.graph_members, r.run.task_members);
				/* the --hw estimate of the tasks it ran, priced here from the task log */
				int64_t estimate = 0;
				for (size_t k = 0; k < r.ntasks_logged; k++) {
					const struct live_task *t = &r.task_log[k];
					uint32_t in = 0, out = 0;
					int64_t tokens = 0, pairs = 0;
					for (uint32_t j = 0; j < t->nreq; j++) {
						const struct live_request *q = &r.reqs[r.task_ids[t->first_id + j]];
						in = q->input_len > in ? q->input_len : in;
						out = q->output_len > out ? q->output_len : out;
						tokens += q->input_len;
						pairs += (int64_t)q->input_len * q->input_len;
					}
					estimate += t->kind == POL_TASK_GRAPH         ? lat_graph(NULL, t->nreq, in, out)
					            : mdl_is_pass(m, t->node_type) ? 20000 + 2000 * tokens + 500 * pairs
					                                           : lat_node(NULL, t->node_type, t->cells);
				}
				assert_int_equal(r.ntasks_logged, r.run.tasks);
				assert_int_equal(r.estimate_ns, estimate);
				assert_true(r.warm_tasks < r.run.tasks && r.warm_estimate_ns <= r.estimate_ns &&
				            r.warm_busy_ns <= r.busy_ns);   /* the first task of a worker is never warm */
				live_result_free(&r);
			}
		mdl_free(m);
	}
	pchk_release();
}

/* A queue bound: arrivals beyond it are dropped and counted; the rest finish. */
static void test_live_saturation(void **state)
{
	(void)state;
	char err[256];
	struct mdl_model *m = load_text(model_text[2][0], model_text[2][1]);
	struct sched s;
	make_schedule(m, 40, &s);
	for (uint64_t i = 0; i < s.n; i++)
		s.arrival_ns[i] = 0;
	struct live_config c = live_cfg(pol_find("serial"), m, &s, 1);
	c.max_queue = 3;
	struct live_result r;
	assert_int_equal(live_run(&c, &r, err, sizeof err), 0);
	assert_true(r.dropped >= 1);
	assert_int_equal(r.run.completed + r.dropped, s.n);
	assert_true(r.max_outstanding <= 3);
	for (uint64_t i = 0; i < s.n; i++)
		assert_true(r.reqs[i].status == LIVE_DONE || r.reqs[i].status == LIVE_DROPPED);
	live_result_free(&r);
	mdl_free(m);
}

static volatile sig_atomic_t stop_now;

static void *stopper(void *arg)
{
	(void)arg;
	struct timespec ts = { 0, 30000000 };
	nanosleep(&ts, NULL);
	stop_now = 1;
	return NULL;
}

/* Stop: the run returns what finished, marked partial; nothing is lost. */
static void test_live_stop(void **state)
{
	(void)state;
	char err[256];
	struct mdl_model *m = load_text(model_text[2][0], model_text[2][1]);
	struct sched s;
	make_schedule(m, 50, &s);
	for (uint64_t i = 0; i < s.n; i++)
		s.arrival_ns[i] = (int64_t)i * 20000000;   /* one a 20 ms: a second in all */
	struct live_config c = live_cfg(pol_find("cellular"), m, &s, 1);
	c.stop = &stop_now;
	stop_now = 0;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, stopper, NULL), 0);
	struct live_result r;
	assert_int_equal(live_run(&c, &r, err, sizeof err), 0);
	pthread_join(th, NULL);
	assert_int_equal(r.partial, 1);
	uint64_t counted[4] = { 0 };
	for (uint64_t i = 0; i < s.n; i++)
		counted[r.reqs[i].status]++;
	assert_int_equal(counted[LIVE_DONE], r.run.completed);
	assert_int_equal(counted[LIVE_ABANDONED], r.abandoned);
	assert_true(counted[LIVE_NOT_ISSUED] >= 1);
	assert_int_equal(counted[LIVE_DONE] + counted[LIVE_ABANDONED] + counted[LIVE_DROPPED], r.issued);
	live_result_free(&r);
	mdl_free(m);
}

/* ---- faults: a backend that fails on purpose ---- */

static int fault_allocs_left;
static int fault_finish;

static void *fault_alloc(struct rt_dev *d, size_t bytes)
{
	if (fault_allocs_left-- <= 0)
		return NULL;
	return rt_backend_cpu.alloc(d, bytes);
}

static int fault_finish_fn(struct rt_stream *s, char *err, size_t errlen)
{
	if (fault_finish) {
		snprintf(err, errlen, "injected kernel error");
		return -1;
	}
	return rt_backend_cpu.finish(s, err, errlen);
}

static void test_live_faults(void **state)
{
	(void)state;
	char err[256];
	struct rt_backend_ops faulty = rt_backend_cpu;
	faulty.alloc = fault_alloc;
	faulty.finish = fault_finish_fn;
	struct mdl_model *m = load_text(model_text[3][0], model_text[3][1]);
	struct sched s;
	make_schedule(m, 12, &s);
	/* an allocation failing at every point: weights, buffers, request states */
	int failed = 0, completed = 0;
	for (int at = 0; at < 200; at += 7) {
		struct live_config c = live_cfg(pol_find("cellular"), m, &s, 1);
		c.backend = &faulty;
		fault_allocs_left = at;
		fault_finish = 0;
		struct live_result r;
		err[0] = '\0';
		int rc = live_run(&c, &r, err, sizeof err);
		if (rc == 0) {
			assert_int_equal(r.run.completed, s.n);   /* enough allocations: a complete run */
			live_result_free(&r);
			completed++;
			continue;
		}
		assert_non_null(strstr(err, "out of"));
		assert_null(r.reqs);
		failed++;
	}
	assert_true(failed > 3 && completed > 3);
	struct live_config c = live_cfg(pol_find("graph"), m, &s, 2);
	c.backend = &faulty;
	fault_allocs_left = 1 << 30;
	fault_finish = 1;
	struct live_result r;
	assert_int_equal(live_run(&c, &r, err, sizeof err), -1);
	assert_string_equal(err, "injected kernel error");
	mdl_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gemm_reference),
		cmocka_unit_test(test_gemm_batch_invariance),
		cmocka_unit_test(test_blas_agrees),
		cmocka_unit_test(test_elementwise),
		cmocka_unit_test(test_kernels_find),
		cmocka_unit_test(test_step_at),
		cmocka_unit_test(test_rand),
		cmocka_unit_test(test_kernels_alone_vs_batched),
		cmocka_unit_test(test_transformer_forms),
		cmocka_unit_test(test_live_every_policy),
		cmocka_unit_test(test_live_saturation),
		cmocka_unit_test(test_live_stop),
		cmocka_unit_test(test_live_faults),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
