/* calib/cuda_common.cuh: what the two CUDA calibrators share (calib-cuda,
 * the GEMM curves of node-level models; calib-cuda-ops, an LLM's operator
 * profile): CUDA and cuBLAS error reports, option values, the GPU's name as
 * tables spell it, and the timing of one kernel call.
 *
 * Timing: CUDA events around each timed sample on the default stream after
 * warm-up calls; a call under CU_MIN_SAMPLE_S is timed in groups of calls, so
 * the event resolution (about 0.5 us) stays out; the median sample. Each
 * sample starts behind a kernel that spins on the GPU while the host queues
 * the sample's calls, so the first event fires with every call already
 * queued: the sample is the GPU's time, not the host's launch latency (on an
 * H100, 2026-11-26, a 1-token Llama-2-7B QKV GEMM timed without the spin took
 * 48 us, about 10 us of it the launch; bench/README.md "GPU calibration"). */
#ifndef SB_CALIB_CUDA_COMMON_CUH
#define SB_CALIB_CUDA_COMMON_CUH

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#define CU_MIN_SAMPLE_S 20e-6       /* shortest timed sample */
#define CU_MAX_GROUP 1000           /* most calls in one timed sample */
/* The spin ahead of a sample: long enough for the host to queue the event
 * and every call of the group (a cuBLAS call or a kernel launch takes the
 * host a few microseconds; 15 us a call leaves room). */
#define CU_SPIN_BASE_NS 50000ull
#define CU_SPIN_PER_CALL_NS 15000ull

/* How long and how often to time a call. */
struct cu_timing {
	unsigned warmup, min_reps, max_reps;
	double min_time_s;
};

/* Whether a CUDA or cuBLAS call failed; fills err with where and why. */
static inline int cu_fail_cuda(cudaError_t e, const char *what, char *err, size_t errlen)
{
	if (e == cudaSuccess)
		return 0;
	snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
	return 1;
}

static inline int cu_fail_blas(cublasStatus_t s, const char *what, char *err, size_t errlen)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	snprintf(err, errlen, "%s: cuBLAS status %d", what, (int)s);
	return 1;
}

/* "NVIDIA H100 80GB HBM3" -> "h100-80gb-hbm3": lower case, blanks to '-',
 * other characters dropped, the vendor word dropped. */
static inline void cu_device_name(const char *prop_name, char *out, size_t len)
{
	const char *p = strncmp(prop_name, "NVIDIA ", 7) == 0 ? prop_name + 7 : prop_name;
	size_t j = 0;

	for (; *p && j + 1 < len && j < 47; p++) {
		char ch = *p;

		if (ch >= 'A' && ch <= 'Z')
			ch = (char)(ch - 'A' + 'a');
		if (ch == ' ' || ch == '_')
			ch = '-';
		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-')
			out[j++] = ch;
	}
	out[j] = '\0';
}

/* Opens GPU `device` for a calibration: its properties, a cuBLAS handle
 * and the library versions. 0; or -1 with err and *bad_input 1 when the
 * index is beyond the machine's GPUs (0: no GPU, or CUDA failed). */
static inline int cu_open_gpu(unsigned device, cudaDeviceProp *prop, cublasHandle_t *blas, int *rt, int *drv,
                              int *blas_ver, int *bad_input, char *err, size_t errlen)
{
	int ndev = 0;
	cudaError_t e = cudaGetDeviceCount(&ndev);
	*bad_input = 0;
	if (e != cudaSuccess || ndev == 0) {
		snprintf(err, errlen, "no CUDA GPU to calibrate: %s", e != cudaSuccess ? cudaGetErrorString(e) : "no device found");
		return -1;
	}
	if ((int)device >= ndev) {
		snprintf(err, errlen, "--gpu=%u: the machine has %d CUDA device(s)", device, ndev);
		*bad_input = 1;
		return -1;
	}
	if (cu_fail_cuda(cudaSetDevice((int)device), "cudaSetDevice", err, errlen) ||
	    cu_fail_cuda(cudaGetDeviceProperties(prop, (int)device), "cudaGetDeviceProperties", err, errlen) ||
	    cu_fail_blas(cublasCreate(blas), "cublasCreate", err, errlen))
		return -1;
	cudaRuntimeGetVersion(rt);
	cudaDriverGetVersion(drv);
	cublasGetVersion(*blas, blas_ver);
	return 0;
}

/* Keeps the GPU busy for ns nanoseconds of its global timer. */
static __global__ void cu_spin(unsigned long long ns)
{
	unsigned long long t0, t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	while (t - t0 < ns);
}

/* Times group calls of issue() (which launches one call on the default
 * stream and returns 0, or -1 with err) between two events, behind a spin
 * that covers their queueing; seconds a call. */
template <typename Issue>
static int cu_sample(Issue issue, unsigned group, cudaEvent_t e0, cudaEvent_t e1, double *per_call, char *err,
                     size_t errlen)
{
	float ms = 0;

	cu_spin<<<1, 1>>>(CU_SPIN_BASE_NS + CU_SPIN_PER_CALL_NS * group);
	if (cu_fail_cuda(cudaGetLastError(), "the spin ahead of a sample", err, errlen) ||
	    cu_fail_cuda(cudaEventRecord(e0, 0), "cudaEventRecord", err, errlen))
		return -1;
	for (unsigned i = 0; i < group; i++)
		if (issue() != 0)
			return -1;
	if (cu_fail_cuda(cudaEventRecord(e1, 0), "cudaEventRecord", err, errlen) ||
	    cu_fail_cuda(cudaEventSynchronize(e1), "kernel execution", err, errlen) ||
	    cu_fail_cuda(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime", err, errlen))
		return -1;
	*per_call = ms * 1e-3 / group;
	return 0;
}

/* The median seconds of one call of issue(), and the samples behind it. */
template <typename Issue>
static int cu_time_calls(const cu_timing *tm, Issue issue, double *median, unsigned *reps, char *err, size_t errlen)
{
	cudaEvent_t e0 = NULL, e1 = NULL;
	std::vector<double> t;
	double once = 0, timed = 0;
	unsigned group;
	int rc = -1;

	if (cu_fail_cuda(cudaEventCreate(&e0), "cudaEventCreate", err, errlen) ||
	    cu_fail_cuda(cudaEventCreate(&e1), "cudaEventCreate", err, errlen))
		goto out;
	for (unsigned i = 0; i < tm->warmup; i++)
		if (cu_sample(issue, 1, e0, e1, &once, err, errlen) != 0)
			goto out;
	if (cu_sample(issue, 1, e0, e1, &once, err, errlen) != 0)
		goto out;
	group = once >= CU_MIN_SAMPLE_S ? 1 : once * CU_MAX_GROUP <= CU_MIN_SAMPLE_S ? CU_MAX_GROUP :
	        (unsigned)std::ceil(CU_MIN_SAMPLE_S / once);
	while (t.size() < tm->max_reps && (t.size() < tm->min_reps || timed < tm->min_time_s)) {
		double s;

		if (cu_sample(issue, group, e0, e1, &s, err, errlen) != 0)
			goto out;
		t.push_back(s);
		timed += s * group;
	}
	std::sort(t.begin(), t.end());
	*median = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
	*reps = (unsigned)t.size();
	if (!(*median > 0)) {
		snprintf(err, errlen, "a point took no measurable time");
		goto out;
	}
	rc = 0;
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
	return rc;
}

#endif
