/* runtime/backend_cuda.cu: the CUDA backend of backend.h, built by meson
 * only where nvcc and cuBLAS are found, as the module
 * libsimbatch-live-cuda.so that runtime/backend.c opens for --device=gpu.
 *
 * BatchMaker Sec. 5 on GPUs: every kernel of a task is queued on the
 * worker's one stream (cuBLAS SGEMM for the products, the small kernels
 * below for gather / scatter / cell / norm / attention / argmax) with no
 * host wait in between; the pointer lists a gather or scatter needs are
 * copied into pinned staging memory and sent with an asynchronous copy on
 * the same stream. finish records an event and waits on it with blocking
 * synchronisation: the worker thread sleeps until the device is done, and
 * the scheduler, another thread, is never blocked by the device.
 *
 * Layout: weights stay row-major K x N; cuBLAS, column-major, computes
 * Y^T = W^T X^T with the same buffers (W as an N x K column-major matrix).
 * Element (i, j) of a product is computed by cuBLAS, whose reduction order
 * may depend on the batch size (the backend.h contract then holds to
 * rounding, not bit for bit).
 *
 * Not run in the session that wrote it (no GPU): it compiles and links.
 */
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "backend.h"
#include "../kernels/gpu_cells.cuh"
}

#define CU_STAGE_BYTES (8u << 20)   /* pointer lists of one task, per stream */
#define CU_THREADS 256

struct rt_dev {
	int device;
	cudaStream_t alloc_stream;       /* stream-ordered allocations (no device-wide sync) */
	char name[400];
};

struct rt_weight {
	uint32_t k, n;
	float *w;                        /* device, row-major k x n */
};

struct rt_stream {
	struct rt_dev *dev;
	cudaStream_t stream;
	cublasHandle_t blas;
	cudaEvent_t done;
	unsigned char *stage_host;       /* pinned */
	unsigned char *stage_dev;
	size_t stage_used;
	cudaError_t cuda_err;            /* first error of the task */
	cublasStatus_t blas_err;
	char err_where[64];
};

static void cu_note(struct rt_stream *s, cudaError_t e, const char *where)
{
	if (e != cudaSuccess && s->cuda_err == cudaSuccess) {
		s->cuda_err = e;
		snprintf(s->err_where, sizeof s->err_where, "%s", where);
	}
}

static int cu_fail(cudaError_t e, const char *what, char *err, size_t errlen)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "CUDA %s: %s", what, cudaGetErrorString(e));
	return -1;
}

/* ---- device ---- */

static int cu_open(const struct rt_backend_cfg *cfg, struct rt_dev **out, char *err, size_t errlen)
{
	(void)cfg;
	int n = 0;
	*out = NULL;
	if (cu_fail(cudaGetDeviceCount(&n), "cannot list devices", err, errlen))
		return -1;
	if (n < 1) {
		snprintf(err, errlen, "--device=gpu: no CUDA device");
		return -1;
	}
	struct rt_dev *d = (struct rt_dev *)calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	cudaDeviceProp p;
	if (cu_fail(cudaSetDevice(0), "cannot select device 0", err, errlen) ||
	    cu_fail(cudaGetDeviceProperties(&p, 0), "cannot read device 0", err, errlen) ||
	    cu_fail(cudaStreamCreateWithFlags(&d->alloc_stream, cudaStreamNonBlocking), "stream", err, errlen)) {
		free(d);
		return -1;
	}
	int ver = 0;
	cudaRuntimeGetVersion(&ver);
	snprintf(d->name, sizeof d->name, "%.200s (sm_%d%d, %.0f GiB), CUDA runtime %d.%d, cuBLAS SGEMM", p.name, p.major,
	         p.minor, p.totalGlobalMem / 1073741824.0, ver / 1000, (ver % 1000) / 10);
	*out = d;
	return 0;
}

static void cu_close(struct rt_dev *d)
{
	if (!d)
		return;
	cudaStreamDestroy(d->alloc_stream);
	free(d);
}

static void cu_describe(const struct rt_dev *d, char *buf, size_t len)
{
	snprintf(buf, len, "gpu, %s", d->name);
}

static void *cu_alloc(struct rt_dev *d, size_t bytes)
{
	void *p = NULL;
	cudaSetDevice(d->device);
	if (cudaMallocAsync(&p, bytes ? bytes : 16, d->alloc_stream) != cudaSuccess)
		return NULL;
	if (cudaMemsetAsync(p, 0, bytes, d->alloc_stream) != cudaSuccess ||
	    cudaStreamSynchronize(d->alloc_stream) != cudaSuccess) {
		cudaFreeAsync(p, d->alloc_stream);
		return NULL;
	}
	return p;
}

static void cu_free(struct rt_dev *d, void *p)
{
	/* callers free only what no queued kernel still uses (after finish) */
	if (p)
		cudaFreeAsync(p, d->alloc_stream);
}

static int cu_upload(struct rt_dev *d, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
	cudaSetDevice(d->device);
	return cu_fail(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload", err, errlen);
}

static int cu_download(struct rt_dev *d, void *dst, const void *src, size_t bytes, char *err, size_t errlen)
{
	cudaSetDevice(d->device);
	return cu_fail(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download", err, errlen);
}

static int cu_weight_create(struct rt_dev *d, uint32_t k, uint32_t n, const float *w, struct rt_weight **out,
                            char *err, size_t errlen)
{
	struct rt_weight *x = (struct rt_weight *)calloc(1, sizeof *x);
	*out = NULL;
	if (!x) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	x->k = k;
	x->n = n;
	x->w = (float *)cu_alloc(d, (size_t)k * n * sizeof(float));
	if (!x->w) {
		free(x);
		snprintf(err, errlen, "out of device memory for a %u x %u weight matrix", k, n);
		return -1;
	}
	if (cu_upload(d, x->w, w, (size_t)k * n * sizeof(float), err, errlen) != 0) {
		cu_free(d, x->w);
		free(x);
		return -1;
	}
	*out = x;
	return 0;
}

static void cu_weight_destroy(struct rt_dev *d, struct rt_weight *w)
{
	if (!w)
		return;
	cu_free(d, w->w);
	free(w);
}

static void cu_stream_destroy(struct rt_stream *s)
{
	if (!s)
		return;
	if (s->blas)
		cublasDestroy(s->blas);
	if (s->done)
		cudaEventDestroy(s->done);
	if (s->stream)
		cudaStreamDestroy(s->stream);
	if (s->stage_host)
		cudaFreeHost(s->stage_host);
	if (s->stage_dev)
		cudaFree(s->stage_dev);
	free(s);
}

static int cu_stream_create(struct rt_dev *d, uint32_t worker, uint32_t max_rows, uint32_t max_k,
                            struct rt_stream **out, char *err, size_t errlen)
{
	(void)worker;
	(void)max_rows;
	(void)max_k;
	struct rt_stream *s = (struct rt_stream *)calloc(1, sizeof *s);
	*out = NULL;
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->dev = d;
	cudaSetDevice(d->device);
	if (cu_fail(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "stream", err, errlen) ||
	    cu_fail(cudaEventCreateWithFlags(&s->done, cudaEventBlockingSync | cudaEventDisableTiming), "event", err,
	            errlen) ||
	    cu_fail(cudaHostAlloc((void **)&s->stage_host, CU_STAGE_BYTES, cudaHostAllocDefault), "pinned staging",
	            err, errlen) ||
	    cu_fail(cudaMalloc((void **)&s->stage_dev, CU_STAGE_BYTES), "staging", err, errlen))
		goto fail;
	if (cublasCreate(&s->blas) != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "cuBLAS: cannot create a handle");
		goto fail;
	}
	cublasSetStream(s->blas, s->stream);
	*out = s;
	return 0;
fail:
	cu_stream_destroy(s);
	return -1;
}

static int cu_finish(struct rt_stream *s, char *err, size_t errlen)
{
	cu_note(s, cudaGetLastError(), "kernel launch");
	cu_note(s, cudaEventRecord(s->done, s->stream), "event record");
	cu_note(s, cudaEventSynchronize(s->done), "kernel");
	s->stage_used = 0;
	int rc = 0;
	if (s->cuda_err != cudaSuccess) {
		snprintf(err, errlen, "CUDA error in %s: %s", s->err_where, cudaGetErrorString(s->cuda_err));
		rc = -1;
	} else if (s->blas_err != CUBLAS_STATUS_SUCCESS) {
		snprintf(err, errlen, "cuBLAS SGEMM failed (status %d)", (int)s->blas_err);
		rc = -1;
	}
	s->cuda_err = cudaSuccess;
	s->blas_err = CUBLAS_STATUS_SUCCESS;
	return rc;
}

/* Copies a host array into the stream's staging and returns its device
 * address; the copy is queued on the stream, ahead of the kernel using it.
 * When the staging is full, the stream is drained first (rare: a task's
 * lists are far smaller than the staging). */
static const void *cu_stage(struct rt_stream *s, const void *host, size_t bytes)
{
	size_t need = (bytes + 15) / 16 * 16;
	if (need > CU_STAGE_BYTES) {
		cu_note(s, cudaErrorMemoryAllocation, "staging a pointer list");
		return NULL;
	}
	if (s->stage_used + need > CU_STAGE_BYTES) {
		cu_note(s, cudaEventRecord(s->done, s->stream), "event record");
		cu_note(s, cudaEventSynchronize(s->done), "kernel");
		s->stage_used = 0;
	}
	unsigned char *h = s->stage_host + s->stage_used, *d = s->stage_dev + s->stage_used;
	memcpy(h, host, bytes);
	cu_note(s, cudaMemcpyAsync(d, h, bytes, cudaMemcpyHostToDevice, s->stream), "staging copy");
	s->stage_used += need;
	return d;
}

static unsigned cu_blocks(size_t n)
{
	size_t b = (n + CU_THREADS - 1) / CU_THREADS;
	return (unsigned)(b ? b : 1);
}

/* ---- kernels ---- */

__global__ void k_gather(uint32_t m, uint32_t width, float *dst, size_t ld, const float *const *src)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * width)
		return;
	size_t i = idx / width, j = idx % width;
	dst[i * ld + j] = src[i][j];
}

__global__ void k_scatter(uint32_t m, uint32_t width, const float *src, size_t ld, float *const *dst)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * width)
		return;
	size_t i = idx / width, j = idx % width;
	if (dst[i])
		dst[i][j] = src[i * ld + j];
}

__global__ void k_embed(uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
                        const int32_t *const *tok)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * width)
		return;
	size_t i = idx / width, j = idx % width;
	dst[i * ld + j] = table[(size_t)*tok[i] * width + j];
}

__global__ void k_add_rows(uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
                           const uint32_t *rows)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * width)
		return;
	size_t i = idx / width, j = idx % width;
	dst[i * ld + j] += table[(size_t)rows[i] * width + j];
}

__global__ void k_bias_act(uint32_t m, uint32_t n, float *y, size_t ldy, const float *b, int relu)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * n)
		return;
	size_t i = idx / n, j = idx % n;
	float v = y[i * ldy + j] + b[j];
	y[i * ldy + j] = relu && v < 0.0f ? 0.0f : v;
}

__global__ void k_gated_silu(uint32_t m, uint32_t n, float *y, size_t ldy)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * n)
		return;
	size_t i = idx / n, j = idx % n;
	float g = y[i * ldy + j];
	y[i * ldy + j] = g / (1.0f + expf(-g)) * y[i * ldy + n + j];
}

/* one block per row: the running maximum with the lowest index on ties */
__global__ void k_bias_argmax(uint32_t n, const float *logits, size_t ld, const float *b, int32_t *const *tok)
{
	__shared__ float best[CU_THREADS];
	__shared__ int32_t arg[CU_THREADS];
	uint32_t i = blockIdx.x;
	if (!tok[i])
		return;
	float bv = -FLT_MAX;
	int32_t ba = 0x7fffffff;
	for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
		float v = logits[i * ld + j] + b[j];
		if (v > bv) {
			bv = v;
			ba = (int32_t)j;
		}
	}
	best[threadIdx.x] = bv;
	arg[threadIdx.x] = ba;
	__syncthreads();
	for (uint32_t s = blockDim.x / 2; s > 0; s /= 2) {
		if (threadIdx.x < s) {
			float v = best[threadIdx.x + s];
			int32_t a = arg[threadIdx.x + s];
			if (v > best[threadIdx.x] || (v == best[threadIdx.x] && a < arg[threadIdx.x])) {
				best[threadIdx.x] = v;
				arg[threadIdx.x] = a;
			}
		}
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*tok[i] = arg[0];
}

/* The block-wide sum (or, with take_max, maximum) of every thread's v, to
 * every thread; red is blockDim.x floats of shared memory, free again on
 * return. Every thread of the block must call it. */
__device__ float block_reduce(float v, float *red, bool take_max)
{
	red[threadIdx.x] = v;
	__syncthreads();
	for (uint32_t s = blockDim.x / 2; s > 0; s /= 2) {
		if (threadIdx.x < s)
			red[threadIdx.x] = take_max ? fmaxf(red[threadIdx.x], red[threadIdx.x + s])
			                            : red[threadIdx.x] + red[threadIdx.x + s];
		__syncthreads();
	}
	float r = red[0];
	__syncthreads();
	return r;
}

/* one block per row: x = layernorm(x + y) * gamma + beta */
__global__ void k_add_layernorm(uint32_t d, float *x, size_t ldx, const float *y, size_t ldy, const float *g,
                                const float *be)
{
	__shared__ float red[CU_THREADS];
	float *xi = x + (size_t)blockIdx.x * ldx;
	const float *yi = y + (size_t)blockIdx.x * ldy;
	float sum = 0.0f;
	for (uint32_t j = threadIdx.x; j < d; j += blockDim.x) {
		xi[j] += yi[j];
		sum += xi[j];
	}
	float mean = block_reduce(sum, red, false) / d;
	float var = 0.0f;
	for (uint32_t j = threadIdx.x; j < d; j += blockDim.x)
		var += (xi[j] - mean) * (xi[j] - mean);
	float inv = rsqrtf(block_reduce(var, red, false) / d + 1e-5f);
	for (uint32_t j = threadIdx.x; j < d; j += blockDim.x)
		xi[j] = (xi[j] - mean) * inv * g[j] + be[j];
}

/* one block per (row, head); scores of the row's keys in shared memory
 * (len floats, dynamic); one thread per output dimension for the sums */
__global__ void k_attention(uint32_t heads, uint32_t dk, const float *q, size_t ldq, const float *const *kc,
                            const float *const *vc, size_t ld, const uint32_t *len, float *out, size_t ldo)
{
	extern __shared__ float score[];
	__shared__ float red[CU_THREADS];
	uint32_t i = blockIdx.x / heads, h = blockIdx.x % heads, L = len[i];
	const float *qh = q + (size_t)i * ldq + (size_t)h * dk;
	float *oh = out + (size_t)i * ldo + (size_t)h * dk;
	float scale = rsqrtf((float)dk), mx = -FLT_MAX;
	for (uint32_t t = threadIdx.x; t < L; t += blockDim.x) {
		const float *k = kc[i] + (size_t)t * ld + (size_t)h * dk;
		float dot = 0.0f;
		for (uint32_t j = 0; j < dk; j++)
			dot += qh[j] * k[j];
		score[t] = dot * scale;
		mx = fmaxf(mx, score[t]);
	}
	mx = block_reduce(mx, red, true);
	float sum = 0.0f;
	for (uint32_t t = threadIdx.x; t < L; t += blockDim.x) {
		score[t] = __expf(score[t] - mx);
		sum += score[t];
	}
	float denom = block_reduce(sum, red, false);
	for (uint32_t j = threadIdx.x; j < dk; j += blockDim.x) {
		float acc = 0.0f;
		for (uint32_t t = 0; t < L; t++)
			acc += score[t] * vc[i][(size_t)t * ld + (size_t)h * dk + j];
		oh[j] = L ? acc / denom : 0.0f;
	}
}

/* ---- ops ---- */

static void cu_gemm(struct rt_stream *s, const struct rt_weight *w, uint32_t m, const float *x, size_t ldx,
                    float *y, size_t ldy)
{
	if (m == 0)
		return;
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t st = cublasSgemm(s->blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)w->n, (int)m, (int)w->k, &one, w->w,
	                                (int)w->n, x, (int)ldx, &zero, y, (int)ldy);
	if (st != CUBLAS_STATUS_SUCCESS && s->blas_err == CUBLAS_STATUS_SUCCESS)
		s->blas_err = st;
}

static void cu_gather(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld,
                      const float *const *src)
{
	const float *const *d = (const float *const *)cu_stage(s, src, m * sizeof *src);
	if (m && d)
		k_gather<<<cu_blocks((size_t)m * width), CU_THREADS, 0, s->stream>>>(m, width, dst, ld, d);
}

static void cu_scatter(struct rt_stream *s, uint32_t m, uint32_t width, const float *src, size_t ld,
                       float *const *dst)
{
	float *const *d = (float *const *)cu_stage(s, dst, m * sizeof *dst);
	if (m && d)
		k_scatter<<<cu_blocks((size_t)m * width), CU_THREADS, 0, s->stream>>>(m, width, src, ld, d);
}

static void cu_embed(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
                     const int32_t *const *tok)
{
	const int32_t *const *d = (const int32_t *const *)cu_stage(s, tok, m * sizeof *tok);
	if (m && d)
		k_embed<<<cu_blocks((size_t)m * width), CU_THREADS, 0, s->stream>>>(m, width, dst, ld, table, d);
}

static void cu_add_rows(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld,
                        const float *table, const uint32_t *rows)
{
	const uint32_t *d = (const uint32_t *)cu_stage(s, rows, m * sizeof *rows);
	if (m && d)
		k_add_rows<<<cu_blocks((size_t)m * width), CU_THREADS, 0, s->stream>>>(m, width, dst, ld, table, d);
}

static void cu_lstm(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gates, size_t ldg,
                    const float *bias, float *c, float *h)
{
	if (m)
		gpu_lstm_cell<<<gpu_cells_blocks((size_t)m * hidden), GPU_CELLS_THREADS, 0, s->stream>>>(m, hidden, gates, ldg, bias, c, h);
}

static void cu_gru(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gx, const float *gh,
                   const float *bias, const float *hprev, float *h)
{
	if (m)
		gpu_gru_cell<<<gpu_cells_blocks((size_t)m * hidden), GPU_CELLS_THREADS, 0, s->stream>>>(m, hidden, gx, gh, bias, hprev, h);
}

static void cu_bias_act(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy, const float *bias,
                        enum rt_act act)
{
	if (m)
		k_bias_act<<<cu_blocks((size_t)m * n), CU_THREADS, 0, s->stream>>>(m, n, y, ldy, bias,
		                                                                   act == RT_ACT_RELU);
}

static void cu_bias_argmax(struct rt_stream *s, uint32_t m, uint32_t n, const float *logits, size_t ld,
                           const float *bias, int32_t *const *tok)
{
	int32_t *const *d = (int32_t *const *)cu_stage(s, tok, m * sizeof *tok);
	if (m && d)
		k_bias_argmax<<<m, CU_THREADS, 0, s->stream>>>(n, logits, ld, bias, d);
}

static void cu_gated_silu(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy)
{
	if (m)
		k_gated_silu<<<cu_blocks((size_t)m * n), CU_THREADS, 0, s->stream>>>(m, n, y, ldy);
}

static void cu_add_layernorm(struct rt_stream *s, uint32_t m, uint32_t d, float *x, size_t ldx, const float *y,
                             size_t ldy, const float *gamma, const float *beta)
{
	if (m)
		k_add_layernorm<<<m, CU_THREADS, 0, s->stream>>>(d, x, ldx, y, ldy, gamma, beta);
}

static void cu_attention(struct rt_stream *s, uint32_t m, uint32_t heads, uint32_t dk, const float *q, size_t ldq,
                         const float *const *kc, const float *const *vc, size_t ld, const uint32_t *len,
                         float *out, size_t ldo)
{
	uint32_t maxlen = 0;
	for (uint32_t i = 0; i < m; i++)
		maxlen = len[i] > maxlen ? len[i] : maxlen;
	const float *const *dk_ = (const float *const *)cu_stage(s, kc, m * sizeof *kc);
	const float *const *dv = (const float *const *)cu_stage(s, vc, m * sizeof *vc);
	const uint32_t *dl = (const uint32_t *)cu_stage(s, len, m * sizeof *len);
	if (m && dk_ && dv && dl)
		k_attention<<<m * heads, CU_THREADS, (maxlen ? maxlen : 1) * sizeof(float), s->stream>>>(
			heads, dk, q, ldq, dk_, dv, ld, dl, out, ldo);
}

/* in rt_backend_ops order (backend.h) */
extern "C" const struct rt_backend_ops rt_backend_cuda = {
	"cuda",
	RT_BACKEND_ABI,
	cu_open,
	cu_close,
	cu_describe,
	cu_alloc,
	cu_free,
	cu_upload,
	cu_download,
	cu_weight_create,
	cu_weight_destroy,
	cu_stream_create,
	cu_stream_destroy,
	cu_finish,
	cu_gemm,
	cu_gather,
	cu_scatter,
	cu_embed,
	cu_add_rows,
	cu_lstm,
	cu_gru,
	cu_bias_act,
	cu_bias_argmax,
	cu_gated_silu,
	cu_add_layernorm,
	cu_attention,
	NULL,   /* move_ns: kernels are asynchronous, not timed one by one */
};
