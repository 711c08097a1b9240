/* calib/cpu_bench.h: times the CPU kernels a calibration table lists, with
 * OpenBLAS: the GEMMs of model nodes (cblas_sgemm, fp32, row-major) and the
 * element-wise work of an LSTM cell. Each point: warm-up calls, then timed
 * samples (CLOCK_MONOTONIC around each; a call under 20 us is timed in
 * groups of calls so the clock's own cost stays out) until enough time has
 * been timed, and the median sample. Operands stay allocated and touched across calls, as in a
 * serving loop that reuses one layer's weights step after step.
 *
 * Contract:
 *  - The caller has set OpenBLAS's kernel set and thread count before the
 *    first call (OPENBLAS_CORETYPE must be in the environment at load time).
 *  - calbench_gemm and calbench_lstm_cell are the kernels themselves, so a
 *    benchmark or a runtime that wants the calibrated numbers to hold runs
 *    exactly these.
 */
#ifndef SB_CALIB_CPU_BENCH_H
#define SB_CALIB_CPU_BENCH_H

#include <stddef.h>
#include <stdint.h>
#include "plan.h"

#define CALBENCH_LSTM_OPS_PER_UNIT 13   /* 4 bias adds, 3 sigmoid, 2 tanh, c = f*c + i*g (3), h = o*tanh(c) (1) */

struct calbench_opts {
	uint32_t warmup;       /* untimed calls first */
	uint32_t min_reps;     /* timed calls, at least */
	uint32_t max_reps;     /* timed calls, at most */
	double min_time_s;     /* time calls until this much was timed (bounded by max_reps) */
	int m1_gemv;           /* 1: a product with M = 1 runs cblas_sgemv (see calbench_gemm) */
	int thread_cpu_clock;  /* 1: time with the calling thread's CPU clock (see calbench_time) */
	int mean;              /* 1: a point's number is its samples' mean, not their median (calbench_summarize) */
};

struct calbench_result {
	double median_s, mean_s;
	double value_s;        /* the number the table records: the median, or the mean with opts.mean */
	double min_s, max_s;   /* spread, for the progress line */
	uint32_t reps;         /* timed samples behind it */
};

/* C (M x N) = A (M x K) * B (K x N), fp32 row-major. With m1_gemv and M = 1
 * this is cblas_sgemv on B transposed: OpenBLAS 0.3.21's SGEMM packs all of
 * B before it starts, which at M = 1 costs about 3 times the matrix-vector
 * product (measured here on 2048 x 4096), and OpenBLAS >= 0.3.27 forwards
 * M = 1 GEMMs to GEMV itself. */
void calbench_gemm(int m1_gemv, uint64_t M, uint64_t K, uint64_t N, const float *A, const float *B, float *C);

/* The element-wise part of one LSTM step for batch rows of hidden units:
 * gates (batch x 4*hidden: i, f, g, o pre-activations from the GEMM), bias
 * (4*hidden), c (batch x hidden, updated), h (batch x hidden, written).
 * CALBENCH_LSTM_OPS_PER_UNIT ops per unit, as the model files count them. */
void calbench_lstm_cell(uint32_t batch, uint32_t hidden, const float *gates, const float *bias, float *c, float *h);

/* Operands for one shape at batches up to max_batch, reused across batches. */
struct calbench_buffers;

int calbench_buffers_create(const struct calplan_shape *s, uint32_t max_batch, struct calbench_buffers **out,
                            char *err, size_t errlen);
void calbench_buffers_destroy(struct calbench_buffers *b);

/* Times shape s at batch (<= the buffers' max_batch). With
 * thread_cpu_clock, samples are read from CLOCK_THREAD_CPUTIME_ID instead
 * of CLOCK_MONOTONIC: on a machine shared with other jobs, time the thread
 * spends preempted is not the kernel's cost, and on this machine kind under
 * a load average of 9 the wall-clock median of a 2048 x 2048 x 4096 SGEMM
 * came out 2.5x its CPU time while the CPU time stayed within 5% of the
 * unloaded figure. Only valid when the kernel runs on the calling thread
 * (one BLAS thread). Returns 0, or -1 with err. */
int calbench_time(const struct calplan_shape *s, struct calbench_buffers *buf, uint32_t batch,
                  const struct calbench_opts *o, struct calbench_result *r, char *err, size_t errlen);

/* Appends timed samples of shape s at batch to samples[*n..]: warmup
 * untimed calls, then samples until at least min_samples and min_time_s of
 * timed time, at most max_samples in all (*n counts every sample so far).
 * The building block of calbench_time and of interleaved rounds. Returns
 * 0, or -1 with err. */
int calbench_collect(const struct calplan_shape *s, struct calbench_buffers *buf, uint32_t batch,
                     const struct calbench_opts *o, uint32_t warmup, uint32_t min_samples, double min_time_s,
                     uint32_t max_samples, double *samples, uint32_t *n, char *err, size_t errlen);

/* The median, mean, smallest and largest of n samples (sorted in place),
 * and value_s: the mean when use_mean, else the median. The median is the
 * kernel's typical speed, robust to a stray slow sample; the mean is what a
 * serving loop pays on average (the simulator adds task times up), and on a
 * shared machine whose speed wanders it is the larger by a few percent. */
void calbench_summarize(double *samples, uint32_t n, int use_mean, struct calbench_result *r);

/* Coming back from idle: how much longer CALBENCH_COLD_CALLS calls of
 * shape s at batch 1 take right after the thread slept idle_s than the same
 * calls right before the sleep (wall clock; both after warm-up calls, so
 * each pair sees the same machine). On a shared machine an idle core's
 * caches fill with other tenants' data, and a serving loop pays to refill
 * its weights; a live worker waiting for requests sleeps just so. Sets
 * *extra_s to the median over reps pairs. */
#define CALBENCH_COLD_CALLS 4
int calbench_cold_extra(const struct calplan_shape *s, struct calbench_buffers *buf, int m1_gemv, double idle_s,
                        uint32_t reps, double *extra_s, char *err, size_t errlen);

/* Seconds on CLOCK_MONOTONIC. */
double calbench_now(void);

/* Seconds of CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID). */
double calbench_thread_cpu(void);

#endif
