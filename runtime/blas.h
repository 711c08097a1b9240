/* runtime/blas.h: the CBLAS the live runtime calls, loaded at run time.
 *
 * OpenBLAS is opened with dlopen the first time a live run asks for it, not
 * linked into simbatch: the simulator's other commands never load a BLAS
 * (as `simbatch calibrate` keeps OpenBLAS in calib-cpu), and GSL's reference
 * CBLAS, which simbatch links, cannot take the symbol by link order.
 *
 * Kernel set: Debian's OpenBLAS 0.3.21 (DYNAMIC_ARCH) does not recognise
 * recent Xeons and runs its SSE3 "Prescott" kernels, 4-5x slower; it reads
 * OPENBLAS_CORETYPE once, in the constructor that runs when the library is
 * loaded. Because the load happens here, after main, setting the variable
 * just before dlopen is enough: no re-execution is needed (calib-cpu has to
 * re-execute itself because it links OpenBLAS). The choice from the CPU's
 * flags is calib's (kernels/cpu_select.h), so calibration and live runs use
 * the same kernels; a value already in the environment wins.
 *
 * Contract:
 *  - rt_blas_get loads once per process (thread-safe) and never unloads;
 *    every later call returns the same table or the same error.
 *  - The library runs one thread per caller (OPENBLAS_NUM_THREADS=1 when
 *    unset, and openblas_set_num_threads(1)): each live worker is one core.
 *  - sgemm is cblas_sgemm: row-major float products, as cblas.h declares.
 */
#ifndef SB_RT_BLAS_H
#define SB_RT_BLAS_H

#include <stddef.h>

enum { RT_CBLAS_ROW_MAJOR = 101, RT_CBLAS_NO_TRANS = 111, RT_CBLAS_TRANS = 112 };  /* the CBLAS standard's values */

struct rt_blas {
	void (*sgemm)(int order, int transa, int transb, int m, int n, int k, float alpha, const float *a, int lda,
	              const float *b, int ldb, float beta, float *c, int ldc);
	void (*sgemv)(int order, int trans, int m, int n, float alpha, const float *a, int lda, const float *x,
	              int incx, float beta, float *y, int incy);
	char library[256];      /* the file dlopen found */
	char corename[32];      /* openblas_get_corename(): the kernel set that runs */
	char config[128];       /* openblas_get_config() */
	char why[320];          /* how the kernel set was chosen */
};

/* The loaded library. Returns it, or NULL with err (no OpenBLAS found, or
 * OpenBLAS ignored the kernel set it was told to use). */
const struct rt_blas *rt_blas_get(char *err, size_t errlen);

#endif
