/* runtime/gemm.h: the live runtime's own matrix product, y = x * W, for
 * weights packed once when a model is loaded (DeepCPU Sec. 5: weights are
 * laid out once for the kernel that streams them, instead of GEMM packing
 * them again on every call).
 *
 * Layout: W (K x N, row-major) is cut into panels of RT_GEMM_NB columns; a
 * panel is stored K-major (row k of the panel is RT_GEMM_NB contiguous
 * floats), the last panel zero-padded. A call streams each panel once per
 * block of RT_GEMM_MR batch rows (register blocking: MR x NB accumulators),
 * K in slices of RT_GEMM_KC so a panel slice stays in L2 across row blocks.
 * At batch 1 this is a matrix-vector product that reads every weight once,
 * bound by memory bandwidth (DeepCPU Sec. 3); one row runs a one-row kernel
 * so no padding rows are computed.
 *
 * Contract:
 *  - Batch invariance: element (i, j) of y is computed by the same sequence
 *    of floating-point operations (a fused multiply-add chain over k in
 *    ascending order, starting from 0) whatever m and whatever i is, so a
 *    request's results do not depend on which requests share its batch.
 *    Slicing K stores and reloads partial sums, which is exact. The kernel
 *    (AVX-512, or portable C) is chosen once per process, from the CPU.
 *  - rt_gemm_packed needs scratch of rt_gemm_scratch_floats(m, k) floats,
 *    64-byte aligned (x is repacked there, row block by row block).
 *  - Thread-safe: packed weights are read-only; each caller its own scratch.
 */
#ifndef SB_RT_GEMM_H
#define SB_RT_GEMM_H

#include <stddef.h>
#include <stdint.h>

#define RT_GEMM_NB 64   /* panel width: four 16-float vectors */
#define RT_GEMM_MR 6    /* batch rows per register block */
#define RT_GEMM_KC 256  /* K slice: a 64 KiB panel slice stays in L2 across row blocks */

struct rt_packed {
	uint32_t k, n;          /* logical shape */
	uint32_t npanels;       /* ceil(n / RT_GEMM_NB) */
	float *data;            /* owned, 64-byte aligned: npanels * k * RT_GEMM_NB floats */
};

/* Packs w (k x n, row-major, not kept). Returns 0, or -1 on allocation failure. */
int rt_gemm_pack(uint32_t k, uint32_t n, const float *w, struct rt_packed *out);
void rt_gemm_packed_free(struct rt_packed *p);

/* Floats of scratch a call with m rows needs. */
size_t rt_gemm_scratch_floats(uint32_t m, uint32_t k);

/* y (m x n, row stride ldy) = x (m x k, row stride ldx) * W. */
void rt_gemm_packed(const struct rt_packed *w, uint32_t m, const float *x, size_t ldx, float *y, size_t ldy,
                    float *scratch);

/* Which kernel runs: "avx512" or "portable". */
const char *rt_gemm_isa(void);

#endif
