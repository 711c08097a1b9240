/* kernels/cpu_select.h: which BLAS kernels a CPU calibration must run.
 * OpenBLAS built with DYNAMIC_ARCH (Debian's) picks its kernel set from
 * CPUID at load time, and 0.3.21 does not know recent Xeons: on this
 * machine kind it falls back to "Prescott" (SSE3) kernels and runs SGEMM
 * about 5x below what the AVX-512 kernels reach. A calibration that times
 * the wrong kernels calibrates nothing, so calib picks the kernel set from
 * the CPU's flags (/proc/cpuinfo) and hands it to OpenBLAS through
 * OPENBLAS_CORETYPE, which OpenBLAS reads once, when the library loads.
 *
 * Contract: pure functions of the text they are given; no BLAS call.
 */
#ifndef SB_CALIB_CPU_SELECT_H
#define SB_CALIB_CPU_SELECT_H

#include <stddef.h>

struct calsel_cpu {
	char model_name[128];   /* "model name" of the first processor */
	unsigned online_cpus;   /* processors listed */
	double mhz;             /* "cpu MHz" of the first processor (nominal; turbo not shown) */
	int avx, avx2, fma;     /* flags present */
	int avx512f, avx512cd, avx512bw, avx512dq, avx512vl;
};

/* Parses /proc/cpuinfo-style text from path. Returns 0, or -1 with err. */
int calsel_read_cpuinfo(const char *path, struct calsel_cpu *out, char *err, size_t errlen);

/* The same from text already in memory (tests). */
void calsel_parse_cpuinfo(const char *text, struct calsel_cpu *out);

/* The OpenBLAS core type whose SGEMM kernels fit the flags: "SkylakeX"
 * (AVX-512 F, CD, BW, DQ, VL), "Haswell" (AVX2 + FMA), "Sandybridge"
 * (AVX), or NULL (leave the choice to the library). why receives the flags
 * that decided it. */
const char *calsel_pick_coretype(const struct calsel_cpu *cpu, char *why, size_t whylen);

#endif
