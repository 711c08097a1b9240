/* kernels/fpu.h: floating-point settings of the threads that run kernels.
 * Kept apart from cpu_cells.h, whose math pragmas must not spread to the
 * files that only need this.
 *
 * Contract: affects the calling thread only, and only its SSE arithmetic;
 * every thread that runs or times a kernel calls it first (the live workers
 * and calib-cpu), so both compute the same way.
 */
#ifndef SB_KERNELS_FPU_H
#define SB_KERNELS_FPU_H

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

/* Flushes denormal results and inputs to zero in the calling thread (x86
 * MXCSR FTZ and DAZ; elsewhere nothing). A cell whose forget gate is near 1
 * drives its state far from zero, and the exponentials of the tanh then
 * underflow to denormals, each a microcode assist: measured here as an LSTM
 * cell up to 8 times slower (0.030 vs 0.0036 ms at batch 1). Inference runtimes flush them; the live workers and the
 * calibration both do, so they time the same arithmetic. */
static inline void fpu_flush_denormals(void)
{
#if defined(__SSE__)
	_mm_setcsr(_mm_getcsr() | 0x8040);   /* FTZ (bit 15) | DAZ (bit 6) */
#endif
}

#endif
