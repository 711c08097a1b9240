/* runtime/backend_cpu.c: the CPU backend of backend.h. Kernels run at once
 * on the calling worker's thread (one core each). Products go through the
 * packed kernel of gemm.h or OpenBLAS's cblas_sgemm (--gemm); element-wise
 * work is plain C loops over a row that GCC vectorizes: the exponential is
 * written with + - * and conversions only, so no libm call stops the
 * vectorizer. Everything is computed row by row with the same code, so a
 * row's result does not depend on the batch (backend.h contract), bit for
 * bit with the packed kernel. OpenBLAS runs a one-row product as SGEMV,
 * as the calibration times it (calib/cpu_bench.h), and SGEMM otherwise:
 * their sums differ in rounding, so with --gemm=blas a request served
 * alone and batched agree to rounding (about 1e-7 relative), not bit for
 * bit. */
#include "backend.h"
#include "../util/errkind.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "gemm.h"

struct rt_dev {
	struct rt_backend_cfg cfg;
	const struct rt_blas *blas;     /* not owned; NULL with the packed kernel */
};

struct rt_weight {
	uint32_t k, n;
	struct rt_packed packed;        /* RT_GEMM_PACKED */
	float *raw;                     /* RT_GEMM_BLAS: row-major k x n, owned */
};

struct rt_stream {
	struct rt_dev *dev;
	float *scratch;                 /* packed-GEMM x repacking, owned */
	uint32_t max_rows;
	uint64_t move_ns;               /* time in gather / scatter / embed / add_rows */
};

static int64_t cpu_now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

#include "../kernels/cpu_cells.h"

/* ---- device ---- */

static int cpu_open(const struct rt_backend_cfg *cfg, struct rt_dev **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rt_dev *d = calloc(1, sizeof *d);
	if (!d) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	d->cfg = *cfg;
	if (cfg->gemm == RT_GEMM_BLAS && !(d->blas = rt_blas_get(err, errlen))) {
		free(d);
		return -1;
	}
	*out = d;
	return 0;
}

static void cpu_close(struct rt_dev *d)
{
	free(d);
}

static void cpu_describe(const struct rt_dev *d, char *buf, size_t len)
{
	if (d->blas)
		snprintf(buf, len, "cpu, OpenBLAS cblas_sgemm (%s; kernels %s: %s)", d->blas->config,
		         d->blas->corename, d->blas->why);
	else
		snprintf(buf, len, "cpu, packed-weight GEMM (%s kernel)", rt_gemm_isa());
}

static void *cpu_alloc(struct rt_dev *d, size_t bytes)
{
	(void)d;
	size_t rounded = (bytes + 63) / 64 * 64;
	void *p = aligned_alloc(64, rounded ? rounded : 64);
	if (p)
		memset(p, 0, rounded);
	return p;
}

static void cpu_free(struct rt_dev *d, void *p)
{
	(void)d;
	free(p);
}

static int cpu_copy(struct rt_dev *d, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
	(void)d;
	(void)err;
	(void)errlen;
	memcpy(dst, src, bytes);
	return 0;
}

static int cpu_weight_create(struct rt_dev *d, uint32_t k, uint32_t n, const float *w, struct rt_weight **out,
                             char *err, size_t errlen)
{
	struct rt_weight *x = calloc(1, sizeof *x);
	*out = NULL;
	if (!x)
		goto oom;
	x->k = k;
	x->n = n;
	if (d->cfg.gemm == RT_GEMM_BLAS) {
		x->raw = cpu_alloc(d, (size_t)k * n * sizeof(float));
		if (!x->raw)
			goto oom;
		memcpy(x->raw, w, (size_t)k * n * sizeof(float));
	} else if (rt_gemm_pack(k, n, w, &x->packed) != 0) {
		goto oom;
	}
	*out = x;
	return 0;
oom:
	free(x);
	err_memory(err, errlen, "out of memory for a %u x %u weight matrix", k, n);
	return -1;
}

static void cpu_weight_destroy(struct rt_dev *d, struct rt_weight *w)
{
	(void)d;
	if (!w)
		return;
	rt_gemm_packed_free(&w->packed);
	free(w->raw);
	free(w);
}

static int cpu_stream_create(struct rt_dev *d, uint32_t worker, uint32_t max_rows, uint32_t max_k,
                             struct rt_stream **out, char *err, size_t errlen)
{
	(void)worker;
	struct rt_stream *s = calloc(1, sizeof *s);
	*out = NULL;
	if (s)
		s->scratch = cpu_alloc(d, rt_gemm_scratch_floats(max_rows, max_k) * sizeof(float));
	if (!s || !s->scratch) {
		free(s);
		err_memory(err, errlen, "out of memory for a worker's scratch");
		return -1;
	}
	s->dev = d;
	s->max_rows = max_rows;
	*out = s;
	return 0;
}

static void cpu_stream_destroy(struct rt_stream *s)
{
	if (!s)
		return;
	free(s->scratch);
	free(s);
}

static int cpu_finish(struct rt_stream *s, char *err, size_t errlen)
{
	(void)s;
	(void)err;
	(void)errlen;
	return 0;
}

/* ---- kernels ---- */

static void cpu_gemm(struct rt_stream *s, const struct rt_weight *w, uint32_t m, const float *x, size_t ldx,
                     float *y, size_t ldy)
{
	if (m == 0)
		return;
	if (w->raw && m == 1)   /* as calib-cpu times M = 1 (calib/cpu_bench.h): SGEMM would pack all of W first */
		s->dev->blas->sgemv(RT_CBLAS_ROW_MAJOR, RT_CBLAS_TRANS, (int)w->k, (int)w->n, 1.0f, w->raw, (int)w->n, x,
		                    1, 0.0f, y, 1);
	else if (w->raw)
		s->dev->blas->sgemm(RT_CBLAS_ROW_MAJOR, RT_CBLAS_NO_TRANS, RT_CBLAS_NO_TRANS, (int)m, (int)w->n,
		                    (int)w->k, 1.0f, x, (int)ldx, w->raw, (int)w->n, 0.0f, y, (int)ldy);
	else
		rt_gemm_packed(&w->packed, m, x, ldx, y, ldy, s->scratch);
}

static void cpu_gather(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld,
                       const float *const *src)
{
	int64_t t0 = cpu_now_ns();
	for (uint32_t i = 0; i < m; i++)
		memcpy(dst + i * ld, src[i], width * sizeof(float));
	s->move_ns += (uint64_t)(cpu_now_ns() - t0);
}

static void cpu_scatter(struct rt_stream *s, uint32_t m, uint32_t width, const float *src, size_t ld,
                        float *const *dst)
{
	int64_t t0 = cpu_now_ns();
	for (uint32_t i = 0; i < m; i++)
		if (dst[i])
			memcpy(dst[i], src + i * ld, width * sizeof(float));
	s->move_ns += (uint64_t)(cpu_now_ns() - t0);
}

static void cpu_embed(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
                      const int32_t *const *tok)
{
	int64_t t0 = cpu_now_ns();
	for (uint32_t i = 0; i < m; i++)
		memcpy(dst + i * ld, table + (size_t)*tok[i] * width, width * sizeof(float));
	s->move_ns += (uint64_t)(cpu_now_ns() - t0);
}

CPU_EW static void cpu_add_rows(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld,
                         const float *table, const uint32_t *rows)
{
	int64_t t0 = cpu_now_ns();
	for (uint32_t i = 0; i < m; i++) {
		float *y = dst + i * ld;
		const float *t = table + (size_t)rows[i] * width;
		for (uint32_t j = 0; j < width; j++)
			y[j] += t[j];
	}
	s->move_ns += (uint64_t)(cpu_now_ns() - t0);
}

CPU_EW static void cpu_lstm(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gates, size_t ldg,
                            const float *bias, float *c, float *h)
{
	(void)s;
	for (size_t i = 0; i < m; i++)
		cpu_lstm_row(hidden, gates + i * ldg, bias, c + i * hidden, h + i * hidden);
}

CPU_EW static void cpu_gru(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gx, const float *gh,
                           const float *bias, const float *hprev, float *h)
{
	(void)s;
	for (size_t i = 0; i < m; i++)
		cpu_gru_row(hidden, gx + i * 3 * hidden, gh + i * 3 * hidden, bias, hprev + i * hidden, h + i * hidden);
}

CPU_EW static void cpu_bias_act(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy, const float *bias,
                         enum rt_act act)
{
	(void)s;
	for (uint32_t i = 0; i < m; i++) {
		float *yi = y + i * ldy;
		if (act == RT_ACT_RELU)
			for (uint32_t j = 0; j < n; j++) {
				float v = yi[j] + bias[j];
				yi[j] = v > 0.0f ? v : 0.0f;
			}
		else
			for (uint32_t j = 0; j < n; j++)
				yi[j] += bias[j];
	}
}

CPU_EW static void cpu_gated_silu(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy)
{
	(void)s;
	for (uint32_t i = 0; i < m; i++) {
		float *yi = y + i * ldy;
		for (uint32_t j = 0; j < n; j++)
			yi[j] = yi[j] / (1.0f + cpu_expf(-yi[j])) * yi[n + j];
	}
}

CPU_EW static void cpu_bias_argmax(struct rt_stream *s, uint32_t m, uint32_t n, const float *logits, size_t ld,
                            const float *bias, int32_t *const *tok)
{
	(void)s;
	for (uint32_t i = 0; i < m; i++) {
		if (!tok[i])
			continue;
		const float *l = logits + i * ld;
		float best = l[0] + bias[0];
		int32_t arg = 0;
		for (uint32_t j = 1; j < n; j++) {
			float v = l[j] + bias[j];
			if (v > best) {
				best = v;
				arg = (int32_t)j;
			}
		}
		*tok[i] = arg;
	}
}

CPU_EW static void cpu_add_layernorm(struct rt_stream *s, uint32_t m, uint32_t d, float *x, size_t ldx, const float *y,
                              size_t ldy, const float *gamma, const float *beta)
{
	(void)s;
	for (uint32_t i = 0; i < m; i++) {
		float *xi = x + i * ldx;
		const float *yi = y + i * ldy;
		float sum = 0.0f;
		for (uint32_t j = 0; j < d; j++) {
			xi[j] += yi[j];
			sum += xi[j];
		}
		float mean = sum / (float)d, var = 0.0f;
		for (uint32_t j = 0; j < d; j++)
			var += (xi[j] - mean) * (xi[j] - mean);
		float inv = 1.0f / sqrtf(var / (float)d + 1e-5f);
		for (uint32_t j = 0; j < d; j++)
			xi[j] = (xi[j] - mean) * inv * gamma[j] + beta[j];
	}
}

CPU_EW static void cpu_attention(struct rt_stream *s, uint32_t m, uint32_t heads, uint32_t dk, const float *q,
                          size_t ldq, const float *const *kc, const float *const *vc, size_t ld,
                          const uint32_t *len, float *out, size_t ldo)
{
	(void)s;
	const float scale = 1.0f / sqrtf((float)dk);
	for (uint32_t i = 0; i < m; i++) {
		float *o = out + i * ldo;
		memset(o, 0, (size_t)heads * dk * sizeof(float));
		for (uint32_t h = 0; h < heads; h++) {
			const float *qh = q + i * ldq + h * dk;
			float *oh = o + h * dk;
			/* two passes over the keys: the maximum, then exp-weighted sums */
			float mx = -FLT_MAX;
			for (uint32_t t = 0; t < len[i]; t++) {
				const float *k = kc[i] + t * ld + h * dk;
				float dot = 0.0f;
				for (uint32_t j = 0; j < dk; j++)
					dot += qh[j] * k[j];
				dot *= scale;
				if (dot > mx)
					mx = dot;
			}
			float denom = 0.0f;
			for (uint32_t t = 0; t < len[i]; t++) {
				const float *k = kc[i] + t * ld + h * dk, *v = vc[i] + t * ld + h * dk;
				float dot = 0.0f;
				for (uint32_t j = 0; j < dk; j++)
					dot += qh[j] * k[j];
				float p = cpu_expf(dot * scale - mx);
				denom += p;
				for (uint32_t j = 0; j < dk; j++)
					oh[j] += p * v[j];
			}
			if (denom > 0.0f)
				for (uint32_t j = 0; j < dk; j++)
					oh[j] /= denom;
		}
	}
}

static uint64_t cpu_move_ns(const struct rt_stream *s)
{
	return s->move_ns;
}

const struct rt_backend_ops rt_backend_cpu = {
	.name = "cpu",
	.abi = RT_BACKEND_ABI,
	.open = cpu_open,
	.close = cpu_close,
	.describe = cpu_describe,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.upload = cpu_copy,
	.download = cpu_copy,
	.weight_create = cpu_weight_create,
	.weight_destroy = cpu_weight_destroy,
	.stream_create = cpu_stream_create,
	.stream_destroy = cpu_stream_destroy,
	.finish = cpu_finish,
	.gemm = cpu_gemm,
	.gather = cpu_gather,
	.scatter = cpu_scatter,
	.embed = cpu_embed,
	.add_rows = cpu_add_rows,
	.lstm = cpu_lstm,
	.gru = cpu_gru,
	.bias_act = cpu_bias_act,
	.bias_argmax = cpu_bias_argmax,
	.gated_silu = cpu_gated_silu,
	.add_layernorm = cpu_add_layernorm,
	.attention = cpu_attention,
	.move_ns = cpu_move_ns,
};
