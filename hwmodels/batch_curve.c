/* hwmodels/batch_curve.c: a latency against the batch (batch_curve.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "batch_curve.h"

int bc_alloc(struct batch_curve *c, size_t n, int log_axes)
{
	memset(c, 0, sizeof *c);
	c->log_axes = log_axes;
	c->batch = malloc(n * sizeof *c->batch);
	c->latency_s = malloc(n * sizeof *c->latency_s);
	if (log_axes) {
		c->knot_x = malloc(n * sizeof *c->knot_x);
		c->knot_y = malloc(n * sizeof *c->knot_y);
	}
	c->npoints = (uint32_t)n;
	return c->batch && c->latency_s && (!log_axes || (c->knot_x && c->knot_y)) ? 0 : -1;
}

int bc_fit(struct batch_curve *c)
{
	size_t n = c->npoints;
	if (c->log_axes) {
		for (size_t i = 0; i < n; i++) {
			c->knot_x[i] = log(c->batch[i]);
			c->knot_y[i] = log(c->latency_s[i]);
		}
	} else {
		c->knot_x = c->batch;
		c->knot_y = c->latency_s;
	}
	if (n >= 2) {
		c->interp = gsl_interp_alloc(n == 2 ? gsl_interp_linear : gsl_interp_steffen, n);
		if (!c->interp || gsl_interp_init(c->interp, c->knot_x, c->knot_y, n) != 0)
			return -1;
	}
	return 0;
}

void bc_free(struct batch_curve *c)
{
	if (c->interp)
		gsl_interp_free(c->interp);
	if (c->log_axes) {
		free(c->knot_x);
		free(c->knot_y);
	}
	free(c->batch);
	free(c->latency_s);
	memset(c, 0, sizeof *c);
}

double bc_eval(const struct batch_curve *c, double b)
{
	size_t lo = 0, hi = c->npoints;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->batch[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (c->batch[lo] == b)
		return c->latency_s[lo];
	/* NULL accelerator: GSL then searches without mutable state. A single
	 * point never gets here: its only batch is matched above. */
	double y = gsl_interp_eval(c->interp, c->knot_x, c->knot_y, c->log_axes ? log(b) : b, NULL);
	return c->log_axes ? exp(y) : y;
}
