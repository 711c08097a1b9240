/* calib/cuda_ops.cu: the calib-cuda-ops program (run as `simbatch calibrate
 * --device=gpu --ops`): times, on one NVIDIA GPU, every operator of one
 * layer of an LLM at a list of token counts, and writes an operator profile
 * in the format of the tables converted from Vidur's (hwmodels/op_profile.h,
 * calib/tables/ops-GPU.csv), so a GPU measured here and one measured by
 * Vidur meet in one model (hwmodels/gpu_measured.h). One GPU: tensor
 * parallelism 1.
 *
 * The operators, in fp16 with fp32 arithmetic, as a PyTorch serving stack
 * runs them: the fused QKV projection, the attention output projection, the
 * fused gate and up projection (the up projection for a plain MLP) and the
 * down projection by cublasGemmEx (fp16 in and out, fp32 compute, as
 * torch.nn.Linear calls it); RMS norms (input and after attention), rotary
 * embedding over the queries and keys (NeoX halves), SiLU-and-multiply (GELU
 * for a plain MLP), the residual add and the embedding gather by kernels of
 * this file, written as vLLM's are: one thread block a token for the norms,
 * the activation, the rotary embedding (angles from a cosine/sine table
 * computed once, vLLM's cos_sin_cache) and the embedding; 16-byte loads and
 * stores where rows allow (every width a multiple of 8 elements). Each
 * operator runs on operands of its own, timed as cuda_common.cuh says
 * (median of samples).
 *
 * Built by meson only when nvcc and cuBLAS are found; on a machine with no
 * GPU it says so and exits 1. Exit status: 0 done, 1 failure (no GPU,
 * CUDA/cuBLAS error, I/O), 2 bad option or model.
 */
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda_common.cuh"

extern "C" {
#include "../hwmodels/op_profile.h"
#include "../models/model.h"
#include "../util/options.h"
#include "../util/outfile.h"
#include "plan.h"
}

#define OPS_DEFAULT_OUT "results/ops-gpu.csv"
#define OPS_DEFAULT_MODEL "llama2-7b"
/* Token counts: Vidur's grid thinned (1 to 4,096), dense where decode
 * batches live. */
#define OPS_DEFAULT_TOKENS "1,2,4,8,16,24,32,48,64,96,128,192,256,384,512,768,1024,1536,2048,3072,4096"
#define OPS_MAX_TOKENS 32768
#define OPS_RMS_EPS 1e-5f

struct ops_args {
	struct calplan_models models;
	const char *tokens, *name, *out;
	unsigned device;
	double mem_gb;                 /* 0: the GPU's own */
	cu_timing tm;
	int quiet, help;
};

/* calib-cuda-ops's options (util/options.h: bounds checked on input, listed by --help). */
static const struct opt_def ops_opts[] = {
	{ "model", OPT_LIST, NULL, 0, 0, 0, "LLMs with 2-byte elements, comma-separated (default " OPS_DEFAULT_MODEL ")" },
	{ "tokens", OPT_STR, OPS_DEFAULT_TOKENS, 0, 0, 0, "token counts, increasing" },
	{ "warmup", OPT_UINT, "3", 0, 1000, 0, "untimed calls per point" },
	{ "reps", OPT_UINT, "11", 1, 100000, 0, "timed samples per point, at least" },
	{ "max-reps", OPT_UINT, "101", 1, 100000, 0, "timed samples per point, at most" },
	/* as calib-cuda's (cuda_calib.cu): CUDA events time to about 0.5 us, so 0.05 s a point is plenty */
	{ "min-time", OPT_DOUBLE, "0.05", 0, 3600, 0, "keep timing a point until S seconds were timed" },
	{ "gpu", OPT_UINT, "0", 0, 1023, 0, "CUDA device index" },
	{ "name", OPT_STR, NULL, 0, 0, 0, "the GPU's name in the profile (default from the GPU's name)" },
	{ "mem-gb", OPT_DOUBLE, NULL, 0, 1e6, 1, "its memory in GB (default: what the GPU reports)" },
	{ "out", OPT_STR, OPS_DEFAULT_OUT, 0, 0, 0, "the profile" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress lines" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define OPS_NOPTS (sizeof ops_opts / sizeof ops_opts[0])

static void ops_usage(FILE *f)
{
	opt_print_help(f, "usage: simbatch calibrate --device=gpu --ops [options]     (or: calib-cuda-ops [options])\n"
	               "Times every operator of one layer of each LLM (QKV, output, gate/up and down projections with\n"
	               "cuBLAS; RMS norms, rotary embedding, activation, residual add, embedding) at each token count on\n"
	               "one GPU and writes an operator profile (hwmodels/op_profile.h). Commit it as\n"
	               "calib/tables/ops-NAME.csv for --hw=gpu-NAME, or pass it as --hw=FILE.", ops_opts, OPS_NOPTS);
}

static int ops_parse(int argc, char **argv, ops_args *a, char *err, size_t errlen)
{
	struct opt_set o;
	memset(a, 0, sizeof *a);
	if (opt_parse(&o, ops_opts, OPS_NOPTS, argc, argv, 0, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < opt_list_count(&o, "model"); i++)
		if (calplan_models_add(&a->models, opt_list_at(&o, "model", i), err, errlen) != 0)
			return -1;
	a->tokens = opt_str(&o, "tokens");
	a->name = opt_str(&o, "name");
	a->out = opt_str(&o, "out");
	a->device = (unsigned)opt_uint(&o, "gpu");
	a->mem_gb = opt_double(&o, "mem-gb");
	a->tm = cu_timing{ (unsigned)opt_uint(&o, "warmup"), (unsigned)opt_uint(&o, "reps"),
	                   (unsigned)opt_uint(&o, "max-reps"), opt_double(&o, "min-time") };
	a->quiet = opt_flag(&o, "quiet");
	a->help = opt_flag(&o, "help");
	if (a->tm.max_reps < a->tm.min_reps) {
		snprintf(err, errlen, "--max-reps=%u is below --reps=%u", a->tm.max_reps, a->tm.min_reps);
		return -1;
	}
	return 0;
}

/* The token counts of --tokens: strictly increasing, 1 to OPS_MAX_TOKENS. */
static int ops_tokens(const char *list, std::vector<unsigned> *out, char *err, size_t errlen)
{
	const char *p = list;
	while (*p) {
		char *end;
		unsigned long t = (*p >= '0' && *p <= '9') ? strtoul(p, &end, 10) : 0;
		if (*p < '0' || *p > '9' || (*end != ',' && *end != '\0') || t == 0 || t > OPS_MAX_TOKENS ||
		    (!out->empty() && t <= out->back())) {
			snprintf(err, errlen, "--tokens=%s: expected increasing token counts from 1 to %d, separated by commas",
			         list, OPS_MAX_TOKENS);
			return -1;
		}
		out->push_back((unsigned)t);
		p = *end ? end + 1 : end;
	}
	if (out->empty()) {
		snprintf(err, errlen, "--tokens is empty");
		return -1;
	}
	return 0;
}

/* ---- kernels: fp16 operands, fp32 arithmetic ---- */

__global__ void ops_fill(__half *p, size_t n, unsigned salt)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2half((float)((int)((i * 7 + salt) % 13) - 6) * 0.01f);
}

/* One block a row: y = x / rms(x) * w. */
__global__ void ops_rms_norm(const __half *x, const __half *w, __half *y, unsigned width)
{
	__shared__ float part[256];
	const __half *row = x + (size_t)blockIdx.x * width;
	float s = 0;
	for (unsigned i = threadIdx.x; i < width; i += blockDim.x) {
		float v = __half2float(row[i]);
		s += v * v;
	}
	part[threadIdx.x] = s;
	__syncthreads();
	for (unsigned k = blockDim.x / 2; k > 0; k /= 2) {
		if (threadIdx.x < k)
			part[threadIdx.x] += part[threadIdx.x + k];
		__syncthreads();
	}
	float scale = rsqrtf(part[0] / width + OPS_RMS_EPS);
	for (unsigned i = threadIdx.x; i < width; i += blockDim.x)
		y[(size_t)blockIdx.x * width + i] = __float2half(__half2float(row[i]) * scale * __half2float(w[i]));
}

/* The rotary angles' cosines and sines, a row per position (vLLM's
 * cos_sin_cache): position t, pair d of a head of head_dim. */
__global__ void ops_rope_table(float2 *cs, unsigned tokens, unsigned head_dim)
{
	unsigned half_dim = head_dim / 2;
	size_t n = (size_t)tokens * half_dim;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float angle = (float)(i / half_dim) * powf(10000.0f, -2.0f * (float)(i % half_dim) / head_dim), c, s;
		sincosf(angle, &s, &c);
		cs[i] = make_float2(c, s);
	}
}

/* Rotary embedding in place over the query and key heads of one token a
 * block (NeoX: the two halves of a head), its angles from the table. */
__global__ void ops_rope(__half *qk, const float2 *cs, unsigned heads, unsigned head_dim, size_t row_stride)
{
	unsigned half_dim = head_dim / 2;
	__half *row = qk + blockIdx.x * row_stride;
	const float2 *angle = cs + (size_t)blockIdx.x * half_dim;
	for (unsigned i = threadIdx.x; i < heads * half_dim; i += blockDim.x) {
		unsigned h = i / half_dim, d = i % half_dim;
		float2 c = angle[d];
		__half *head = row + (size_t)h * head_dim;
		float a = __half2float(head[d]), b = __half2float(head[d + half_dim]);
		head[d] = __float2half(a * c.x - b * c.y);
		head[d + half_dim] = __float2half(b * c.x + a * c.y);
	}
}

/* 8 halves, one 16-byte access. */
union ops_h8 {
	uint4 v;
	__half2 h[4];
};

/* One token a block. Gated: y = silu(gate) * up from rows [gate | up];
 * plain: y = gelu(x) (tanh form). */
__global__ void ops_act(const __half *x, __half *y, unsigned width, int gated)
{
	size_t t = blockIdx.x;
	const uint4 *in = (const uint4 *)(x + t * (gated ? 2 : 1) * width), *up = in + width / 8;
	uint4 *out = (uint4 *)(y + t * width);
	for (unsigned j = threadIdx.x; j < width / 8; j += blockDim.x) {
		ops_h8 a, u, r;
		a.v = in[j];
		if (gated)
			u.v = up[j];
		for (int k = 0; k < 4; k++) {
			float2 g = __half22float2(a.h[k]), o;
			if (gated) {
				float2 v = __half22float2(u.h[k]);
				o = make_float2(g.x / (1.0f + __expf(-g.x)) * v.x, g.y / (1.0f + __expf(-g.y)) * v.y);
			} else {
				o.x = 0.5f * g.x * (1.0f + tanhf(0.7978845608f * (g.x + 0.044715f * g.x * g.x * g.x)));
				o.y = 0.5f * g.y * (1.0f + tanhf(0.7978845608f * (g.y + 0.044715f * g.y * g.y * g.y)));
			}
			r.h[k] = __float22half2_rn(o);
		}
		out[j] = r.v;
	}
}

/* y = a + b over n8 groups of 8 halves. */
__global__ void ops_add(const uint4 *a, const uint4 *b, uint4 *y, size_t n8)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n8; i += (size_t)gridDim.x * blockDim.x) {
		ops_h8 x, z, r;
		x.v = a[i];
		z.v = b[i];
		for (int k = 0; k < 4; k++)
			r.h[k] = __hadd2(x.h[k], z.h[k]);
		y[i] = r.v;
	}
}

/* One token a block: its row of the table, 16 bytes at a time. */
__global__ void ops_embed(const int *ids, const __half *table, __half *y, unsigned width)
{
	const uint4 *row = (const uint4 *)(table + (size_t)ids[blockIdx.x] * width);
	uint4 *out = (uint4 *)(y + (size_t)blockIdx.x * width);
	for (unsigned j = threadIdx.x; j < width / 8; j += blockDim.x)
		out[j] = row[j];
}

__global__ void ops_fill_ids(int *ids, unsigned n, unsigned vocab)
{
	for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
		ids[i] = (int)((i * 2654435761u) % vocab);
}

static unsigned ops_blocks(size_t n)
{
	size_t b = (n + 255) / 256;
	return (unsigned)(b < 65535 ? (b ? b : 1) : 65535);
}

/* ---- one model's operands ---- */

struct ops_buffers {
	std::vector<void *> all;
	__half *x, *y, *res, *w_norm, *w_qkv, *qkv, *w_out, *attn, *w_up, *up, *act, *w_down, *table;
	float2 *rope_table;
	int *ids;
};

static int ops_alloc(ops_buffers *b, void **p, size_t bytes, char *err, size_t errlen)
{
	if (cu_fail_cuda(cudaMalloc(p, bytes ? bytes : 1), "cudaMalloc", err, errlen))
		return -1;
	b->all.push_back(*p);
	return 0;
}

static int ops_half(ops_buffers *b, __half **p, size_t n, unsigned salt, char *err, size_t errlen)
{
	if (ops_alloc(b, (void **)p, n * sizeof(__half), err, errlen) != 0)
		return -1;
	ops_fill<<<ops_blocks(n), 256>>>(*p, n, salt);
	return cu_fail_cuda(cudaGetLastError(), "fill", err, errlen) ? -1 : 0;
}

static void ops_free(ops_buffers *b)
{
	for (void *p : b->all)
		cudaFree(p);
	b->all.clear();
}

static int ops_setup(ops_buffers *b, const mdl_llm *l, unsigned max_t, char *err, size_t errlen)
{
	size_t h = l->hidden, qkv = (size_t)(l->heads + 2 * l->kv_heads) * l->head_dim, q = (size_t)l->heads * l->head_dim;
	size_t up = (l->gated ? 2 : 1) * (size_t)l->ffn;
	if (ops_half(b, &b->x, max_t * h, 1, err, errlen) || ops_half(b, &b->y, max_t * h, 2, err, errlen) ||
	    ops_half(b, &b->res, max_t * h, 3, err, errlen) || ops_half(b, &b->w_norm, h, 4, err, errlen) ||
	    ops_half(b, &b->w_qkv, h * qkv, 5, err, errlen) || ops_half(b, &b->qkv, max_t * qkv, 6, err, errlen) ||
	    ops_half(b, &b->w_out, q * h, 7, err, errlen) || ops_half(b, &b->attn, max_t * q, 8, err, errlen) ||
	    ops_half(b, &b->w_up, h * up, 9, err, errlen) || ops_half(b, &b->up, max_t * up, 10, err, errlen) ||
	    ops_half(b, &b->act, max_t * l->ffn, 11, err, errlen) ||
	    ops_half(b, &b->w_down, (size_t)l->ffn * h, 12, err, errlen) ||
	    ops_half(b, &b->table, (size_t)l->vocab * h, 13, err, errlen) ||
	    ops_alloc(b, (void **)&b->ids, max_t * sizeof(int), err, errlen) ||
	    ops_alloc(b, (void **)&b->rope_table, (size_t)max_t * (l->head_dim / 2) * sizeof(float2), err, errlen))
		return -1;
	ops_fill_ids<<<ops_blocks(max_t), 256>>>(b->ids, max_t, l->vocab);
	ops_rope_table<<<ops_blocks((size_t)max_t * (l->head_dim / 2)), 256>>>(b->rope_table, max_t, l->head_dim);
	return cu_fail_cuda(cudaDeviceSynchronize(), "setting up operands", err, errlen) ? -1 : 0;
}

/* Row-major C (M x N) = A (M x K) B (K x N), fp16 in and out, fp32 compute:
 * cuBLAS's column-major C^T = B^T A^T. */
static int ops_gemm(cublasHandle_t blas, const __half *a, const __half *w, __half *c, unsigned m, size_t k, size_t n,
                    char *err, size_t errlen)
{
	const float one = 1.0f, zero = 0.0f;
	return cu_fail_blas(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)m, (int)k, &one, w, CUDA_R_16F,
	                                 (int)n, a, CUDA_R_16F, (int)k, &zero, c, CUDA_R_16F, (int)n, CUBLAS_COMPUTE_32F,
	                                 CUBLAS_GEMM_DEFAULT), "cublasGemmEx", err, errlen) ? -1 : 0;
}

static int ops_launched(char *err, size_t errlen)
{
	return cu_fail_cuda(cudaGetLastError(), "kernel launch", err, errlen) ? -1 : 0;
}

/* Launches operator op of one layer of l at t tokens. */
static int ops_issue(enum opp_op op, const ops_buffers *b, const mdl_llm *l, cublasHandle_t blas, unsigned t,
                     char *err, size_t errlen)
{
	size_t h = l->hidden, qkv = (size_t)(l->heads + 2 * l->kv_heads) * l->head_dim, q = (size_t)l->heads * l->head_dim;
	switch (op) {
	case OPP_EMB:
		ops_embed<<<t, 256>>>(b->ids, b->table, b->y, (unsigned)h);
		return ops_launched(err, errlen);
	case OPP_INPUT_NORM:
	case OPP_POST_NORM:
		ops_rms_norm<<<t, 256>>>(b->x, b->w_norm, b->y, (unsigned)h);
		return ops_launched(err, errlen);
	case OPP_QKV:
		return ops_gemm(blas, b->x, b->w_qkv, b->qkv, t, h, qkv, err, errlen);
	case OPP_ROPE:
		ops_rope<<<t, 256>>>(b->qkv, b->rope_table, l->heads + l->kv_heads, l->head_dim, qkv);
		return ops_launched(err, errlen);
	case OPP_ATTN_OUT:
		return ops_gemm(blas, b->attn, b->w_out, b->y, t, q, h, err, errlen);
	case OPP_MLP_UP:
		return ops_gemm(blas, b->x, b->w_up, b->up, t, h, (l->gated ? 2 : 1) * (size_t)l->ffn, err, errlen);
	case OPP_MLP_ACT:
		ops_act<<<t, 256>>>(b->up, b->act, l->ffn, (int)l->gated);
		return ops_launched(err, errlen);
	case OPP_MLP_DOWN:
		return ops_gemm(blas, b->act, b->w_down, b->y, t, l->ffn, h, err, errlen);
	case OPP_ADD:
		ops_add<<<ops_blocks((size_t)t * h / 8), 256>>>((const uint4 *)b->x, (const uint4 *)b->res, (uint4 *)b->y,
		                                                 (size_t)t * h / 8);
		return ops_launched(err, errlen);
	default:
		snprintf(err, errlen, "no such operator");
		return -1;
	}
}

/* ---- the profile ---- */

struct ops_row {
	const mdl_model *m;
	unsigned tokens;
	double ms[OPP_COUNT];
};

static double ops_quantile(std::vector<double> v, double q)
{
	std::sort(v.begin(), v.end());
	double k = (v.size() - 1) * q;
	size_t lo = (size_t)k, hi = std::min(lo + 1, v.size() - 1);
	return v[lo] + (v[hi] - v[lo]) * (k - lo);
}

/* Each interior row of each model predicted from its two neighbours, as
 * scripts/vidur-import does: "# leave_out OP = MEDIAN% P90% ROWS", the
 * layer (every operator but the embedding) first. */
static void ops_leave_out(FILE *f, const std::vector<ops_row> &rows)
{
	std::vector<double> errs[OPP_COUNT + 1];   /* the operators, then the layer */
	for (size_t i = 1; i + 1 < rows.size(); i++) {
		const ops_row &a = rows[i - 1], &b = rows[i], &c = rows[i + 1];
		if (a.m != b.m || c.m != b.m)
			continue;
		double x = (double)(b.tokens - a.tokens) / (c.tokens - a.tokens), la = 0, lb = 0, lc = 0;
		for (int op = 0; op < OPP_COUNT; op++) {
			errs[op].push_back(std::fabs((a.ms[op] + (c.ms[op] - a.ms[op]) * x) / b.ms[op] - 1));
			if (op != OPP_EMB) {
				la += a.ms[op];
				lb += b.ms[op];
				lc += c.ms[op];
			}
		}
		errs[OPP_COUNT].push_back(std::fabs((la + (lc - la) * x) / lb - 1));
	}
	if (errs[OPP_COUNT].empty())
		return;
	for (int k = -1; k < OPP_COUNT; k++) {
		const std::vector<double> &e = errs[k < 0 ? OPP_COUNT : k];
		fprintf(f, "# leave_out %s = %.2f%% %.2f%% %zu\n", k < 0 ? "layer" : opp_op_name((enum opp_op)k),
		        100 * ops_quantile(e, 0.5), 100 * ops_quantile(e, 0.9), e.size());
	}
}

static int ops_write(const ops_args *a, const std::vector<ops_row> &rows, const char *gpu, double mem_gb,
                     const char *source, char *err, size_t errlen)
{
	outfile o;
	memset(&o, 0, sizeof o);
	if (outfile_open(&o, a->out, err, errlen) != 0)
		return -1;
	fprintf(o.f, "%s\n# gpu = %s\n# mem_gb = %g\n# source = %s\n", OPP_KIND_LINE, gpu, mem_gb, source);
	fprintf(o.f, "# Times are the median milliseconds of one operator of one layer on one GPU at tokens tokens.\n");
	ops_leave_out(o.f, rows);
	fprintf(o.f, "profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens");
	for (int op = 0; op < OPP_COUNT; op++)
		fprintf(o.f, ",%s", opp_op_name((enum opp_op)op));
	fprintf(o.f, "\n");
	for (const ops_row &r : rows) {
		const mdl_llm *l = &r.m->llm;
		fprintf(o.f, "%s,%u,%u,%u,%u,%u,%u,1,%u", r.m->name, l->hidden, l->heads, l->kv_heads, l->ffn, l->vocab,
		        l->gated, r.tokens);
		for (int op = 0; op < OPP_COUNT; op++)
			fprintf(o.f, ",%.6g", r.ms[op]);
		fprintf(o.f, "\n");
	}
	return outfile_commit(&o, err, errlen);
}

int main(int argc, char **argv)
{
	ops_args a;
	std::vector<unsigned> tokens;
	std::vector<mdl_model *> models;
	std::vector<ops_row> rows;
	cublasHandle_t blas = NULL;
	cudaDeviceProp prop;
	char err[1024], name[64], source[512];
	int rc = 2, rt = 0, drv = 0, blas_ver = 0;

	memset(&prop, 0, sizeof prop);
	if (ops_parse(argc, argv, &a, err, sizeof err) != 0)
		goto fail;
	if (a.help) {
		ops_usage(stdout);
		rc = 0;
		goto out;
	}
	if (ops_tokens(a.tokens, &tokens, err, sizeof err) != 0)
		goto fail;
	if (a.models.n == 0 && calplan_models_add(&a.models, OPS_DEFAULT_MODEL, err, sizeof err) != 0)
		goto fail;
	for (size_t i = 0; i < a.models.n; i++) {
		mdl_model *m = NULL;
		if (mdl_load(a.models.names[i], &m, err, sizeof err) != 0)
			goto fail;
		models.push_back(m);
		if (!m->is_llm || m->llm.elem_bytes != 2 || (uint64_t)m->llm.heads * m->llm.head_dim != m->llm.hidden ||
		    m->llm.hidden % 8 || m->llm.ffn % 8 || m->llm.head_dim % 2) {
			snprintf(err, sizeof err, "model %s: an operator profile times LLMs of 2-byte elements whose heads make "
			         "up their hidden size, and whose hidden and MLP widths are multiples of 8", m->name);
			goto fail;
		}
	}
	rc = 1;
	{
		int bad = 0;
		if (cu_open_gpu(a.device, &prop, &blas, &rt, &drv, &blas_ver, &bad, err, sizeof err) != 0) {
			rc = bad ? 2 : 1;
			goto fail;
		}
	}
	if (a.name)
		snprintf(name, sizeof name, "%s", a.name);
	else
		cu_device_name(prop.name, name, sizeof name);
	{
		time_t now = time(NULL);
		char date[32];
		strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
		snprintf(source, sizeof source, "simbatch calibrate --device=gpu --ops on %s (CUDA runtime %d, driver %d, "
		         "cuBLAS %d), fp16, %s", prop.name, rt, drv, blas_ver, date);
	}
	for (mdl_model *m : models) {
		ops_buffers b;
		if (ops_setup(&b, &m->llm, tokens.back(), err, sizeof err) != 0) {
			ops_free(&b);
			goto fail;
		}
		for (unsigned t : tokens) {
			ops_row r;
			r.m = m;
			r.tokens = t;
			for (int op = 0; op < OPP_COUNT; op++) {
				double med = 0;
				unsigned reps = 0;
				auto issue = [&]() { return ops_issue((enum opp_op)op, &b, &m->llm, blas, t, err, sizeof err); };
				if (cu_time_calls(&a.tm, issue, &med, &reps, err, sizeof err) != 0) {
					ops_free(&b);
					goto fail;
				}
				r.ms[op] = med * 1e3;
			}
			rows.push_back(r);
			if (!a.quiet)
				fprintf(stderr, "calib-cuda-ops: %s at %u tokens: QKV %.4f ms, up %.4f ms\n", m->name, t,
				        r.ms[OPP_QKV], r.ms[OPP_MLP_UP]);
		}
		ops_free(&b);
	}
	if (ops_write(&a, rows, name, a.mem_gb > 0 ? a.mem_gb : prop.totalGlobalMem / 1e9, source, err, sizeof err) != 0)
		goto fail;
	if (!a.quiet)
		fprintf(stderr, "calib-cuda-ops: %zu rows -> %s\n", rows.size(), a.out);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "calib-cuda-ops: %s\n", err);
out:
	if (blas)
		cublasDestroy(blas);
	for (mdl_model *m : models)
		mdl_free(m);
	calplan_models_free(&a.models);
	return rc;
}
