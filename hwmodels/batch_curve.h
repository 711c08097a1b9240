/* hwmodels/batch_curve.h: a latency measured at some batches, and the
 * latency between them: Steffen's monotone cubic through the points
 * (gsl_interp_steffen; linear through two), on linear axes or on log-log
 * axes, where a GEMM's time against its batch is nearly two straight lines.
 * A measured batch is answered exactly (at the last knot the cubic is
 * evaluated from the left and could differ in the last bits). Read-only once
 * fitted: evaluation keeps no state, as hwmodel.h requires of a model.
 * Shared by the node latency tables (node_table.c) and the calibration
 * tables (calibrated.c). */
#ifndef SB_BATCH_CURVE_H
#define SB_BATCH_CURVE_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_interp.h>

struct batch_curve {
	uint32_t npoints;
	double *batch;           /* strictly increasing */
	double *latency_s;       /* as measured */
	int log_axes;            /* 1: interpolated on log-log axes */
	double *knot_x, *knot_y; /* the knots: batch and latency_s themselves, or their logs */
	gsl_interp *interp;      /* NULL when npoints == 1 */
};

/* Room for n points (c zeroed first); the caller fills batch and latency_s,
 * then calls bc_fit. 0, or -1 out of memory (bc_free still applies). */
int bc_alloc(struct batch_curve *c, size_t n, int log_axes);
/* The knots and the interpolant through the points filled in. 0, or -1 (out of memory). */
int bc_fit(struct batch_curve *c);
void bc_free(struct batch_curve *c);

/* The latency at batch b, batch[0] <= b <= batch[npoints - 1] (the caller checks). */
double bc_eval(const struct batch_curve *c, double b);

#endif
