/* calib/cuda_calib.cu: the calib-cuda program (run as `simbatch calibrate
 * --device=gpu`): times on one NVIDIA GPU, with cuBLAS, the GEMMs of the
 * chosen models' nodes (op gemm: one GEMM of batch*m_per_sample rows against
 * a shared weight; op attn: a strided batched GEMM of batch independent
 * products), and the element-wise kernels of an LSTM and a GRU cell, over
 * batch sizes; writes the same calibration table as calib-cpu (CSV + SQLite,
 * hwmodels/caltab.h) with "# device: gpu-NAME".
 *
 * Precision (--precision): fp16 (default) or bf16 run cublasGemmEx on
 * tensor cores with fp32 accumulation and fp32 output; fp32 runs
 * cublasSgemm on the CUDA cores (tensor-core TF32 math is not allowed).
 * Timing: as cuda_common.cuh says: CUDA events around each timed sample on
 * the default stream, behind a spin kernel that covers the host's queueing
 * (the GPU's time, not the launch latency), after warm-up calls; a call
 * under 20 us is timed in groups of calls; median sample.
 *
 * Built by meson only when nvcc and cuBLAS are found; it must build on a
 * machine with no GPU, and there it says so and exits 1.
 * Exit status: 0 done, 1 failure (no GPU, CUDA/cuBLAS error, I/O), 2 bad option.
 */
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda_common.cuh"

extern "C" {
#include "plan.h"
#include "store.h"
#include "../kernels/gpu_cells.cuh"
#include "../hwmodels/caltab.h"
#include "../util/outfile.h"
#include "../models/model.h"
#include "../util/options.h"
}

#define CU_DEFAULT_OUT "results/calib-gpu.csv"
#define CU_DEFAULT_DB "results/calibration.db"
#define CU_LSTM_OPS_PER_UNIT 13     /* 4 bias adds, 3 sigmoid, 2 tanh, c = f*c + i*g (3), h = o*tanh(c) (1) */
#define CU_GRU_OPS_PER_UNIT 15      /* r, z: 2 adds + sigmoid each; n: 3 adds, 1 mul, tanh; h = (1-z)*n + z*h: 4 */

enum cu_precision { CU_FP32, CU_FP16, CU_BF16 };

struct cu_args {
	struct calplan_models models;   /* --model, or the default list */
	const char *batches, *name, *out, *db;
	unsigned max_batch, hidden, warmup, min_reps, max_reps, device;
	double min_time_s, max_gflop, max_mib;
	enum cu_precision precision;
	int no_db, quiet, help;
};

/* calib-cuda's options (util/options.h: bounds checked on input, listed by --help). */
static const struct opt_def cu_opts[] = {
	{ "model", OPT_LIST, NULL, 0, 0, 0, "models, comma-separated (default " CALPLAN_DEFAULT_MODELS ")" },
	{ "batches", OPT_STR, CALPLAN_DEFAULT_BATCHES, 0, 0, 0, "batch sizes, increasing" },
	{ "max-batch", OPT_UINT, "65536", 1, 65536, 0, "drop listed batches above B" },
	{ "precision", OPT_STR, "fp16", 0, 0, 0, "fp16 | bf16 (tensor cores, cublasGemmEx) | fp32 (cublasSgemm)" },
	{ "hidden", OPT_UINT, "1024", 1, 1 << 20, 0, "hidden size of the LSTM/GRU cell kernels" },
	{ "warmup", OPT_UINT, "3", 0, 1000, 0, "untimed calls per point" },
	{ "reps", OPT_UINT, "11", 1, 100000, 0, "timed samples per point, at least" },
	{ "max-reps", OPT_UINT, "101", 1, 100000, 0, "timed samples per point, at most" },
	/* a GPU runs the CPU plan's points about a hundred times faster (an H100's dense fp16 peak, 989
	 * TFLOP/s by its datasheet, against a core's ~100 GFLOP/s): a quarter of the CPU's time a point
	 * (CUDA events time to about 0.5 us) and 25 times its per-call budget keep the plan minutes long;
	 * 16 GiB of operands fit the smallest GPU measured here (the A40's 48 GB) with room to spare */
	{ "min-time", OPT_DOUBLE, "0.05", 0, 3600, 0, "keep timing a point until S seconds were timed" },
	{ "max-gflop", OPT_DOUBLE, "4000", 0, 1e9, 0, "skip points above G GFLOP per call" },
	{ "max-mib", OPT_DOUBLE, "16384", 0, 1e9, 0, "skip points above M MiB of operands" },
	{ "gpu", OPT_UINT, "0", 0, 1024, 0, "CUDA device index" },
	{ "name", OPT_STR, NULL, 0, 0, 0, "device name in the table: gpu-NAME (default from the GPU's name)" },
	{ "out", OPT_STR, CU_DEFAULT_OUT, 0, 0, 0, "CSV table" },
	{ "db", OPT_STR, CU_DEFAULT_DB, 0, 0, 0, "SQLite copy" },
	{ "no-db", OPT_FLAG, NULL, 0, 0, 0, "skip the SQLite copy" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress lines" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define CU_NOPTS (sizeof cu_opts / sizeof cu_opts[0])

static void cu_usage(FILE *f)
{
	opt_print_help(f, "usage: simbatch calibrate --device=gpu [options]     (or: calib-cuda [options])\n"
	               "Times the GEMMs of the models' nodes with cuBLAS and the element-wise kernels of an LSTM and a\n"
	               "GRU cell over batch sizes on one GPU; writes a calibration table (CSV + SQLite). Commit it as\n"
	               "calib/tables/gpu-NAME.csv for --hw=gpu-NAME.", cu_opts, CU_NOPTS);
}

static int cu_parse(int argc, char **argv, cu_args *a, char *err, size_t errlen)
{
	struct opt_set o;
	memset(a, 0, sizeof *a);
	if (opt_parse(&o, cu_opts, CU_NOPTS, argc, argv, 0, err, errlen) != 0)
		return -1;
	for (size_t i = 0; i < opt_list_count(&o, "model"); i++)
		if (calplan_models_add(&a->models, opt_list_at(&o, "model", i), err, errlen) != 0)
			return -1;
	a->batches = opt_str(&o, "batches");
	a->name = opt_str(&o, "name");
	a->out = opt_str(&o, "out");
	a->db = opt_str(&o, "db");
	a->max_batch = (unsigned)opt_uint(&o, "max-batch");
	a->hidden = (unsigned)opt_uint(&o, "hidden");
	a->warmup = (unsigned)opt_uint(&o, "warmup");
	a->min_reps = (unsigned)opt_uint(&o, "reps");
	a->max_reps = (unsigned)opt_uint(&o, "max-reps");
	a->device = (unsigned)opt_uint(&o, "gpu");
	a->min_time_s = opt_double(&o, "min-time");
	a->max_gflop = opt_double(&o, "max-gflop");
	a->max_mib = opt_double(&o, "max-mib");
	a->no_db = opt_flag(&o, "no-db");
	a->quiet = opt_flag(&o, "quiet");
	a->help = opt_flag(&o, "help");
	const char *prec = opt_str(&o, "precision");
	if (strcmp(prec, "fp32") == 0)
		a->precision = CU_FP32;
	else if (strcmp(prec, "fp16") == 0)
		a->precision = CU_FP16;
	else if (strcmp(prec, "bf16") == 0)
		a->precision = CU_BF16;
	else {
		snprintf(err, errlen, "--precision=%s: expected fp16, bf16 or fp32", prec);
		return -1;
	}
	if (a->max_reps < a->min_reps) {
		snprintf(err, errlen, "--max-reps=%u is below --reps=%u", a->max_reps, a->min_reps);
		return -1;
	}
	/* before the benchmarks: can the table be written there? */
	if (!a->help && (outfile_check(a->out, err, errlen) != 0 || (!a->no_db && calstore_check(a->db, err, errlen) != 0)))
		return -1;
	if (a->models.n == 0)
		return calplan_models_add(&a->models, CALPLAN_DEFAULT_MODELS, err, errlen);
	return 0;
}

/* ---- device kernels ---- */

__global__ void cu_fill_f32(float *p, size_t n, unsigned salt)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = (float)((int)((i * 7 + salt) % 13) - 6) * 0.01f;
}

__global__ void cu_fill_f16(__half *p, size_t n, unsigned salt)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2half((float)((int)((i * 7 + salt) % 13) - 6) * 0.01f);
}

__global__ void cu_fill_bf16(__nv_bfloat16 *p, size_t n, unsigned salt)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2bfloat16((float)((int)((i * 7 + salt) % 13) - 6) * 0.01f);
}

/* ---- one shape's operands and one call ---- */

struct cu_point {
	const calplan_shape *s;
	int kind;              /* 0 gemm/attn, 1 LSTM cell, 2 GRU cell */
	enum cu_precision prec;
	cublasHandle_t blas;
	void *a, *b;           /* inputs: fp32, fp16 or bf16 by precision (GEMM); fp32 (cells) */
	float *c;              /* fp32 output / cell state */
	float *d, *e;          /* cells: bias, h (LSTM) or gh, bias (GRU) */
	unsigned hidden;
};

static size_t cu_elem_size(enum cu_precision p)
{
	return p == CU_FP32 ? 4 : 2;
}

static int cu_alloc_fill(void **p, size_t n, size_t elem, enum cu_precision prec, unsigned salt, char *err,
                         size_t errlen)
{
	*p = NULL;
	if (cu_fail_cuda(cudaMalloc(p, (n ? n : 1) * elem), "cudaMalloc", err, errlen))
		return -1;
	if (elem == 4)
		cu_fill_f32<<<1024, 256>>>((float *)*p, n, salt);
	else if (prec == CU_BF16)
		cu_fill_bf16<<<1024, 256>>>((__nv_bfloat16 *)*p, n, salt);
	else
		cu_fill_f16<<<1024, 256>>>((__half *)*p, n, salt);
	return cu_fail_cuda(cudaGetLastError(), "fill kernel", err, errlen) ? -1 : 0;
}

static void cu_point_free(cu_point *p)
{
	cudaFree(p->a);
	cudaFree(p->b);
	cudaFree(p->c);
	cudaFree(p->d);
	cudaFree(p->e);
	p->a = p->b = NULL;
	p->c = p->d = p->e = NULL;
}

static int cu_point_alloc(cu_point *p, unsigned max_batch, char *err, size_t errlen)
{
	const calplan_shape *s = p->s;
	size_t mb = max_batch, es = cu_elem_size(p->prec);

	if (s->op == CALTAB_ELEMENTWISE) {
		size_t h = p->hidden;

		if (p->kind == 1)
			return cu_alloc_fill(&p->a, mb * 4 * h, 4, CU_FP32, 1, err, errlen) ||
			       cu_alloc_fill(&p->b, 1, 4, CU_FP32, 2, err, errlen) ||
			       cu_alloc_fill((void **)&p->c, mb * h, 4, CU_FP32, 3, err, errlen) ||
			       cu_alloc_fill((void **)&p->d, 4 * h, 4, CU_FP32, 4, err, errlen) ||
			       cu_alloc_fill((void **)&p->e, mb * h, 4, CU_FP32, 5, err, errlen) ? -1 : 0;
		return cu_alloc_fill(&p->a, mb * 3 * h, 4, CU_FP32, 1, err, errlen) ||
		       cu_alloc_fill(&p->b, mb * 3 * h, 4, CU_FP32, 2, err, errlen) ||
		       cu_alloc_fill((void **)&p->c, mb * h, 4, CU_FP32, 3, err, errlen) ||
		       cu_alloc_fill((void **)&p->d, 4 * h, 4, CU_FP32, 4, err, errlen) ||
		       cu_alloc_fill((void **)&p->e, 1, 4, CU_FP32, 5, err, errlen) ? -1 : 0;
	}
	size_t bcount = s->op == CALTAB_ATTN ? mb : 1;
	return cu_alloc_fill(&p->a, mb * s->m * s->k, es, p->prec, 1, err, errlen) ||
	       cu_alloc_fill(&p->b, bcount * s->k * s->n, es, p->prec, 2, err, errlen) ||
	       cu_alloc_fill((void **)&p->c, mb * s->m * s->n, 4, CU_FP32, 3, err, errlen) ? -1 : 0;
}

/* Issues one call on the default stream. Row-major C (M x N) = A (M x K) B
 * (K x N) is column-major C^T = B^T A^T: cuBLAS gets (N, M, K) with B first. */
static cublasStatus_t cu_issue(const cu_point *p, unsigned batch)
{
	const calplan_shape *s = p->s;
	const float one = 1.0f, zero = 0.0f;

	if (s->op == CALTAB_ELEMENTWISE) {
		if (p->kind == 1)
			gpu_lstm_cell<<<gpu_cells_blocks((size_t)batch * p->hidden), GPU_CELLS_THREADS>>>(
				batch, p->hidden, (const float *)p->a, 4 * (size_t)p->hidden, p->d, p->c, p->e);
		else
			gpu_gru_cell<<<gpu_cells_blocks((size_t)batch * p->hidden), GPU_CELLS_THREADS>>>(
				batch, p->hidden, (const float *)p->a, (const float *)p->b, p->d, p->c, p->c);
		return cudaGetLastError() == cudaSuccess ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
	}
	int n = (int)s->n, k = (int)s->k;
	if (s->op == CALTAB_GEMM) {
		int m = (int)((uint64_t)batch * s->m);

		if (p->prec == CU_FP32)
			return cublasSgemm(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, (const float *)p->b, n,
			                   (const float *)p->a, k, &zero, p->c, n);
		cudaDataType_t t = p->prec == CU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
		return cublasGemmEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, p->b, t, n, p->a, t, k, &zero, p->c,
		                    CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	}
	int m = (int)s->m;
	long long sa = (long long)s->m * s->k, sb = (long long)s->k * s->n, sc = (long long)s->m * s->n;
	if (p->prec == CU_FP32)
		return cublasSgemmStridedBatched(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, (const float *)p->b, n,
		                                 sb, (const float *)p->a, k, sa, &zero, p->c, n, sc, (int)batch);
	cudaDataType_t t = p->prec == CU_BF16 ? CUDA_R_16BF : CUDA_R_16F;
	return cublasGemmStridedBatchedEx(p->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one, p->b, t, n, sb, p->a, t,
	                                  k, sa, &zero, p->c, CUDA_R_32F, n, sc, (int)batch, CUBLAS_COMPUTE_32F,
	                                  CUBLAS_GEMM_DEFAULT);
}

/* Times every point of the plan into t, shape by shape. 0, or -1 with err. */
static int cu_measure(const cu_args *a, const calplan *plan, cublasHandle_t blas, caltab *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < plan->nshapes; i++) {
		const calplan_shape *s = &plan->shapes[i];
		cu_point p;

		memset(&p, 0, sizeof p);
		p.s = s;
		p.prec = a->precision;
		p.blas = blas;
		p.hidden = a->hidden;
		p.kind = s->op != CALTAB_ELEMENTWISE ? 0 : s->m == (uint64_t)a->hidden * CU_LSTM_OPS_PER_UNIT ? 1 : 2;
		if (s->max_batch == 0) {
			fprintf(stderr, "calib-cuda: shape of %s exceeds the budget at batch %u: not measured\n", s->user,
			        plan->batches[0]);
			continue;
		}
		if (cu_point_alloc(&p, s->max_batch, err, errlen) != 0) {
			cu_point_free(&p);
			return -1;
		}
		for (size_t j = 0; j < plan->nbatches && plan->batches[j] <= s->max_batch; j++) {
			caltab_row row;
			double med = 0;
			unsigned reps = 0;

			memset(&row, 0, sizeof row);
			unsigned batch = plan->batches[j];
			cu_timing tm = { a->warmup, a->min_reps, a->max_reps, a->min_time_s };
			auto issue = [&]() { return cu_fail_blas(cu_issue(&p, batch), "kernel launch", err, errlen) ? -1 : 0; };
			if (cu_time_calls(&tm, issue, &med, &reps, err, errlen) != 0) {
				cu_point_free(&p);
				return -1;
			}
			row.op = s->op;
			row.m_per_sample = s->m;
			row.k = s->k;
			row.n = s->n;
			row.batch = plan->batches[j];
			row.latency_s = row.measured_s = med;
			row.reps = reps;
			if (caltab_add_row(t, &row, err, errlen) != 0) {
				cu_point_free(&p);
				return -1;
			}
			if (!a->quiet)
				fprintf(stderr, "%-10s %llux%llux%llu b=%-5u %10.4f ms  %9.1f G/s\n", caltab_op_name(s->op),
				        (unsigned long long)s->m, (unsigned long long)s->k, (unsigned long long)s->n, row.batch,
				        med * 1e3, calplan_flops(s, row.batch) / med / 1e9);
		}
		cu_point_free(&p);
	}
	return 0;
}

/* The table's header fields: the device, the library, how it was timed. 0, or -1 with err. */
static int cu_header(caltab *t, const cu_args *a, const cudaDeviceProp *prop, const char *device, int blas_ver, int rt,
                     int drv, size_t lowered, double wall_s, char *err, size_t errlen)
{
	char date[32];
	time_t now = time(NULL);
	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	return (caltab_set_fieldf(t, "device", err, errlen, "%s (%s, sm_%d%d, %d SMs, %.1f GiB)", device, prop->name,
		             prop->major, prop->minor, prop->multiProcessorCount, prop->totalGlobalMem / 1073741824.0) ||
		    caltab_set_fieldf(t, "date", err, errlen, "%s", date) ||
		    caltab_set_fieldf(t, "library", err, errlen, "cuBLAS %d, CUDA runtime %d, driver %d", blas_ver, rt, drv) ||
		    caltab_set_fieldf(t, "gemm", err, errlen, "%s, row-major via the transposed column-major call; "
		             "attn rows: strided batched GEMM of batch products",
		             a->precision == CU_FP32 ? "cublasSgemm fp32 (CUDA cores, pedantic math: no TF32)" :
		             a->precision == CU_FP16 ? "cublasGemmEx fp16 inputs, fp32 accumulate and output (tensor cores)" :
		                                      "cublasGemmEx bf16 inputs, fp32 accumulate and output (tensor cores)") ||
		    caltab_set_fieldf(t, "precision", err, errlen, "%s",
		             a->precision == CU_FP32 ? "fp32" : a->precision == CU_FP16 ? "fp16" : "bf16") ||
		    caltab_set_fieldf(t, "elementwise", err, errlen, "fused fp32 kernels: LSTM cell (%d ops per unit) and GRU "
		             "cell (%d ops per unit), hidden %u, the live runtime's kernels (kernels/gpu_cells.cuh), one thread "
		             "per element, %d per block", CU_LSTM_OPS_PER_UNIT, CU_GRU_OPS_PER_UNIT, a->hidden, GPU_CELLS_THREADS) ||
		    caltab_set_fieldf(t, "timing", err, errlen, "CUDA events on the default stream, each sample behind a spin kernel "
		             "that covers the host's queueing of its calls (the GPU's time, not the launch latency); %u warm-up "
		             "calls, then %u to %u samples until %.3g s timed (calls under 20 us timed in groups); median sample",
		             a->warmup, a->min_reps, a->max_reps, a->min_time_s) ||
		    caltab_set_fieldf(t, "budget", err, errlen, "points above %.4g GFLOP per call or %.4g MiB of operands not "
		             "measured", a->max_gflop, a->max_mib) ||
		    caltab_set_fieldf(t, "monotone", err, errlen, "latency_s = smallest measured_s at this or a larger batch; %zu "
		             "of %zu rows lowered", lowered, t->nrows) ||
		    caltab_set_fieldf(t, "conditions", err, errlen, "%.0f s wall", wall_s)) ? -1 : 0;
}

int main(int argc, char **argv)
{
	cu_args a;
	calplan *plan = NULL;
	caltab *t = NULL;
	cublasHandle_t blas = NULL;
	cudaDeviceProp prop;
	char err[1024], name[64], device[72];
	int rc = 2, rt = 0, drv = 0, blas_ver = 0;
	double gflop = 0;
	time_t start = time(NULL);

	memset(&prop, 0, sizeof prop);
	if (cu_parse(argc, argv, &a, err, sizeof err) != 0)
		goto fail;
	if (a.help) {
		cu_usage(stdout);
		rc = 0;
		goto out;
	}
	if (calplan_build(&plan, a.batches, a.max_batch, a.max_gflop, a.max_mib, a.models.names, a.models.n,
	                  err, sizeof err) != 0)
		goto fail;
	if (calplan_add_elementwise(plan, (uint64_t)a.hidden * CU_LSTM_OPS_PER_UNIT, "LSTM cell", err, sizeof err) ||
	    calplan_add_elementwise(plan, (uint64_t)a.hidden * CU_GRU_OPS_PER_UNIT, "GRU cell", err, sizeof err))
		goto fail;
	calplan_apply_budget(plan, &gflop);

	rc = 1;
	{
		int bad = 0;
		if (cu_open_gpu(a.device, &prop, &blas, &rt, &drv, &blas_ver, &bad, err, sizeof err) != 0) {
			rc = bad ? 2 : 1;
			goto fail;
		}
	}
	if (cu_fail_blas(cublasSetMathMode(blas, a.precision == CU_FP32 ? CUBLAS_PEDANTIC_MATH : CUBLAS_DEFAULT_MATH),
	                 "cublasSetMathMode", err, sizeof err))
		goto fail;
	if (a.name)
		snprintf(name, sizeof name, "%s", a.name);
	else
		cu_device_name(prop.name, name, sizeof name);
	snprintf(device, sizeof device, "gpu-%s", name);
	if (caltab_check_device(device) != 0) {
		snprintf(err, sizeof err, "device name '%s' is not gpu-NAME with NAME of a-z 0-9 _ - (use --name=)", device);
		rc = 2;
		goto fail;
	}
	if (caltab_create(&t) != 0) {
		snprintf(err, sizeof err, "out of memory");
		goto fail;
	}
	if (!a.quiet)
		fprintf(stderr, "calib-cuda: %s (%s), cuBLAS %d, %.1f GFLOP\n", prop.name, device, blas_ver, gflop);
	if (cu_measure(&a, plan, blas, t, err, sizeof err) != 0)
		goto fail;
	{
		size_t lowered = caltab_make_monotone(t);
		time_t now = time(NULL);
		int64_t id;

		if (cu_header(t, &a, &prop, device, blas_ver, rt, drv, lowered, difftime(now, start), err, sizeof err) != 0)
			goto fail;
		if (caltab_validate(t, err, sizeof err) != 0)
			goto fail;
		if (caltab_write_file(t, a.out, err, sizeof err) != 0)
			goto fail;
		if (!a.no_db && calstore_write(a.db, t, a.out, &id, err, sizeof err) != 0)
			goto fail;
		if (!a.quiet)
			fprintf(stderr, "calib-cuda: %zu rows -> %s\n", t->nrows, a.out);
	}
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "calib-cuda: %s\n", err);
out:
	if (blas)
		cublasDestroy(blas);
	caltab_destroy(t);
	calplan_destroy(plan);
	calplan_models_free(&a.models);
	return rc;
}
