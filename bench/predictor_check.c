/* bench/predictor_check.c: the GEMM predictor (hwmodels/gemm_predict.h),
 * built from an operator profile, against GEMMs measured by cuBLAS on the
 * same GPU (a calibration table's gemm rows, calib-cuda), none of which the
 * predictor saw: shapes of node-level models (LSTM, GNMT, ResNet-50 ...),
 * mostly outside the profile's K and N.
 *
 *   build/bench/predictor_check calib/tables/ops-h100.csv calib/tables/gpu-h100.csv
 *
 * Prints |predicted / measured - 1| (median, p90, rows) over every gemm row
 * (M = batch x m_per_sample, the measured median, not the monotone
 * latency_s), split into rows within the measured range and rows
 * extrapolated in M, K or N, and the same per shape. Exit 2 on bad input. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>

#include "../hwmodels/caltab.h"
#include "../hwmodels/gemm_predict.h"
#include "../hwmodels/op_profile.h"

#define MAX_ROWS 100000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Sorts e[0..n) and prints its median and p90 (nearest rank) in percent. */
static void print_errors(const char *label, double *e, size_t n)
{
	if (n == 0) {
		printf("%-40s      -        -      0\n", label);
		return;
	}
	qsort(e, n, sizeof *e, cmp_double);
	printf("%-40s %6.1f%% %7.1f%% %6zu\n", label, 100 * e[n / 2], 100 * e[(size_t)ceil(0.9 * n) - 1], n);
}

int main(int argc, char **argv)
{
	struct op_profile *p = NULL;
	struct caltab *t = NULL;
	struct gemmp *g = NULL;
	char err[1024];
	static double in_range[MAX_ROWS], outside[MAX_ROWS], shape[MAX_ROWS];

	if (argc != 3) {
		fprintf(stderr, "usage: predictor_check OPS_PROFILE CALIBRATION_TABLE\n");
		return 2;
	}
	if (opp_load(argv[1], &p, err, sizeof err) != 0 || caltab_read(argv[2], &t, err, sizeof err) != 0 ||
	    gemmp_create(p, NULL, &g, err, sizeof err) != 0) {
		fprintf(stderr, "predictor_check: %s\n", err);
		opp_free(p);
		caltab_destroy(t);
		return 2;
	}
	double lo[3], hi[3];
	gemmp_ranges(g, lo, hi);
	printf("predictor from %s (M %g-%g, K %g-%g, N %g-%g); measured by %s\n", argv[1], lo[0], hi[0], lo[1], hi[1],
	       lo[2], hi[2], argv[2]);
	printf("%-40s %7s %8s %6s\n", "rows", "median", "p90", "n");
	/* each gemm row's error and whether it lies outside, once; the table's rows are grouped by shape */
	static double err_of[MAX_ROWS];
	static unsigned where_of[MAX_ROWS];
	size_t nin = 0, nout = 0, nrows = t->nrows < MAX_ROWS ? t->nrows : MAX_ROWS;
	for (size_t i = 0; i < nrows; i++) {
		const struct caltab_row *r = &t->rows[i];
		if (r->op != CALTAB_GEMM)
			continue;
		double m = (double)r->batch * (double)r->m_per_sample;
		err_of[i] = fabs(gemmp_seconds(g, m, (double)r->k, (double)r->n, &where_of[i]) / r->measured_s - 1);
		if (where_of[i])
			outside[nout++] = err_of[i];
		else
			in_range[nin++] = err_of[i];
	}
	print_errors("within the measured M, K and N", in_range, nin);
	print_errors("extrapolated in M, K or N", outside, nout);
	for (size_t i = 0; i < nrows;) {
		const struct caltab_row *r = &t->rows[i];
		size_t n = 0, j = i;
		unsigned any = 0;
		for (; j < nrows && t->rows[j].op == r->op && t->rows[j].m_per_sample == r->m_per_sample &&
		       t->rows[j].k == r->k && t->rows[j].n == r->n; j++)
			if (r->op == CALTAB_GEMM) {
				shape[n++] = err_of[j];
				any |= where_of[j];
			}
		if (n) {
			char label[80];
			snprintf(label, sizeof label, "  %llu x %llu x %llu%s", (unsigned long long)r->m_per_sample,
			         (unsigned long long)r->k, (unsigned long long)r->n, any ? " (extrapolated)" : "");
			print_errors(label, shape, n);
		}
		i = j;
	}
	gemmp_free(g);
	opp_free(p);
	caltab_destroy(t);
	return 0;
}
