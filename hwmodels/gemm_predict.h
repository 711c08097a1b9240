/* hwmodels/gemm_predict.h: the time of any GEMM (M x K by K x N, the K x N
 * operand a weight) on a GPU, predicted from every GEMM its operator profile
 * measured (op_profile.h): each profiled model's QKV, output, up and down
 * projections at every TP degree are curves of time against M (tokens) for
 * one (K, N).
 *
 * A shape is predicted from the measured curves nearest to it in
 * (log K, log N): on each, the time at M (interpolated in log M and log
 * time between measured rows; below the first row the first time holds,
 * past the last row the last row's time) is scaled by the ratio of the two
 * shapes' rooflines on this GPU: the longer of 2 M K N FLOPs at the GPU's
 * measured GEMM rate and M K + K N + M N elements at its measured
 * streaming rate (op_profile.h), at the M priced (past the curve's last
 * row, the curve's shape at its last M). Where the weight or the FLOPs
 * dominate, the ratio is K N over the curve's K N, as a GEMM streams its
 * K x N weight or does 2 M K N FLOPs; where the activations dominate (M far
 * above K and N: a convolution's), it is their bytes, which scaling by K N
 * alone missed by orders of magnitude (bench/predictor_check, docs/
 * VALIDATION.md section 6). The estimates of the GEMMP_NEIGHBOURS nearest
 * curves are averaged in log time, weighted by the inverse of their
 * distance. No prediction is below the fastest GEMM the GPU was measured
 * running (a kernel's floor).
 *
 * Judged by leave-one-model-out error (gemmp_leave_one_model_out): shapes
 * within one model are correlated, so each profiled model's rows are
 * predicted from the other models' curves alone.
 *
 * Contract: a predictor is read-only after gemmp_create; predictions are
 * pure functions of the shape. */
#ifndef SB_GEMM_PREDICT_H
#define SB_GEMM_PREDICT_H

#include <stddef.h>
#include <stdint.h>
#include "op_profile.h"

#define GEMMP_NEIGHBOURS 4

/* Where a shape lies outside what was measured (bits of gemmp_seconds' *outside). */
enum { GEMMP_OUT_M = 1, GEMMP_OUT_K = 2, GEMMP_OUT_N = 4 };

struct gemmp;

/* A predictor from every GEMM curve of p, less those measured on the model
 * named leave_out (profiled_as; NULL keeps all). Returns 0, or -1 with err
 * (no curve left, out of memory). */
int gemmp_create(const struct op_profile *p, const char *leave_out, struct gemmp **out, char *err, size_t errlen);
void gemmp_free(struct gemmp *g);

/* Predicted seconds of an M x K x N GEMM; *outside gets the GEMMP_OUT_*
 * bits of the dimensions beyond the measured range (0 within it). */
double gemmp_seconds(const struct gemmp *g, double m, double k, double n, unsigned *outside);

/* gemmp_seconds without the floor of the fastest measured GEMM: one GEMM's share of a kernel that runs many
 * (a grouped GEMM over a MoE layer's experts pays the kernel's floor once, gemmp_floor_seconds). */
double gemmp_seconds_unfloored(const struct gemmp *g, double m, double k, double n);
double gemmp_floor_seconds(const struct gemmp *g);

/* The measured ranges, for messages: M (tokens), K and N. */
void gemmp_ranges(const struct gemmp *g, double lo[3], double hi[3]);

struct gemmp_error {
	char model[96];             /* a profiled model, held out */
	double median_pct, p90_pct; /* |predicted / measured - 1| over its GEMM rows */
	size_t rows;
};

/* Leave-one-model-out: each profiled model's GEMM rows (every op, TP degree
 * and token count) predicted from the others'. Fills up to max entries (one
 * a model) and *all (every held-out row pooled); returns the count, or -1
 * with err. */
int gemmp_leave_one_model_out(const struct op_profile *p, struct gemmp_error *out, size_t max, struct gemmp_error *all,
                              char *err, size_t errlen);

#endif
