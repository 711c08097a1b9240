/* kernels/cpu_cells.h: the CPU element-wise kernels of recurrent cells (the
 * LSTM and GRU gate math after the fused gate GEMM), shared by the live
 * runtime's CPU backend and by the calibration (calib/cpu_bench.c), so that
 * `--hw=cpu` prices exactly the element-wise code `simbatch live` runs.
 * Header-only: static inline functions, vectorized where they are inlined.
 * Including it sets, for the rest of the including file, the floating-point
 * options below (the file must not rely on NaN or infinity).
 *
 * Contract: each row (batch member) is computed by the same operations in the
 * same order whatever the batch size and whichever clone runs, so a request's
 * state does not depend on whom it was batched with; pointers to one call's
 * arrays must not overlap (restrict).
 */
#ifndef SB_KERNELS_CPU_CELLS_H
#define SB_KERNELS_CPU_CELLS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "fpu.h"

/* Element-wise loops: GCC vectorizes the exponential's clamps (min / max)
 * only when it may assume no FP traps, no NaN or infinity and no sign of
 * zero (-fno-trapping-math -ffinite-math-only -fno-signed-zeros, for the
 * including file only: every value here is finite, the clamps keep it so, and nothing
 * is reassociated, so each row is still computed by the same operations);
 * clones for AVX-512 and AVX2, picked once at load, widen the vectors.
 * Loops over a row take restrict pointers, or GCC gives up on the overlap
 * checks. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CPU_EW __attribute__((target_clones("avx512f", "avx2", "default")))
#define CPU_EW_INLINE __attribute__((always_inline))
#pragma GCC optimize("no-trapping-math", "no-signed-zeros", "finite-math-only")
#else
#define CPU_EW
#define CPU_EW_INLINE
#endif

/* exp(x) = 2^n p(r), r = x - n ln2 in [-ln2/2, ln2/2], p the degree-6
 * Taylor polynomial (relative error under 2e-7); x clamped to [-87, 88]. */
CPU_EW_INLINE static inline float cpu_expf(float x)
{
	x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
	float t = x * 1.44269504f;
	int32_t n = (int32_t)(t + (t >= 0.0f ? 0.5f : -0.5f));
	float fn = (float)n;
	float r = x - fn * 0.693145751953125f - fn * 1.428606765330187e-06f;
	float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.6666667e-1f + r * (4.1666668e-2f +
	                                  r * (8.3333338e-3f + r * 1.3888889e-3f)))));
	int32_t bits = (n + 127) << 23;   /* 2^n as a float's bits */
	float scale;
	memcpy(&scale, &bits, sizeof scale);
	return p * scale;
}

CPU_EW_INLINE static inline float cpu_sigmoid(float x)
{
	return 1.0f / (1.0f + cpu_expf(-x));
}

CPU_EW_INLINE static inline float cpu_tanh(float x)
{
	return 2.0f / (1.0f + cpu_expf(-2.0f * x)) - 1.0f;
}

/* One row of each cell, with restrict parameters: GCC vectorizes a loop
 * over several arrays only when it knows they do not overlap. */
CPU_EW_INLINE static inline void cpu_lstm_row(size_t H, const float *restrict g, const float *restrict b,
                                              float *restrict c, float *restrict h)
{
	for (size_t j = 0; j < H; j++) {
		float ig = cpu_sigmoid(g[j] + b[j]);
		float fg = cpu_sigmoid(g[H + j] + b[H + j]);
		float cg = cpu_tanh(g[2 * H + j] + b[2 * H + j]);
		float og = cpu_sigmoid(g[3 * H + j] + b[3 * H + j]);
		float cn = fg * c[j] + ig * cg;
		c[j] = cn;
		h[j] = og * cpu_tanh(cn);
	}
}

CPU_EW_INLINE static inline void cpu_gru_row(size_t H, const float *restrict x, const float *restrict u,
                                             const float *restrict b, const float *restrict hp, float *restrict h)
{
	for (size_t j = 0; j < H; j++) {
		float r = cpu_sigmoid(x[j] + u[j] + b[j]);
		float z = cpu_sigmoid(x[H + j] + u[H + j] + b[H + j]);
		float n = cpu_tanh(x[2 * H + j] + b[2 * H + j] + r * (u[2 * H + j] + b[3 * H + j]));
		h[j] = (1.0f - z) * n + z * hp[j];
	}
}

#endif
