/* hwmodels/gemm_predict.c: any GEMM's time on a GPU from the GEMMs its
 * operator profile measured (see gemm_predict.h for the method). */
#include "gemm_predict.h"
#include "../util/errkind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gemmp_curve {
	double k, n, log_k, log_n;
	size_t rows;             /* measured rows */
	double *log_m, *log_t;   /* [rows], M increasing; owned */
};

struct gemmp {
	size_t ncurves;
	struct gemmp_curve *curves;  /* owned */
	double floor_s;              /* the fastest measured GEMM */
	double flops_s, bytes_s;     /* the GPU's measured GEMM rate and streaming rate (op_profile.h) */
	double lo[3], hi[3];         /* measured M, K, N */
};

void gemmp_free(struct gemmp *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->ncurves; i++) {
		free(g->curves[i].log_m);
		free(g->curves[i].log_t);
	}
	free(g->curves);
	free(g);
}

static void gemmp_widen(struct gemmp *g, int dim, double v)
{
	if (v < g->lo[dim])
		g->lo[dim] = v;
	if (v > g->hi[dim])
		g->hi[dim] = v;
}

int gemmp_create(const struct op_profile *p, const char *leave_out, struct gemmp **out, char *err, size_t errlen)
{
	*out = NULL;
	struct gemmp *g = calloc(1, sizeof *g);
	if (!g || !(g->curves = calloc(p->ncurves * OPP_NGEMMS, sizeof *g->curves)))
		goto oom;
	g->floor_s = INFINITY;
	g->flops_s = p->gemm_flops_s;
	g->bytes_s = p->stream_bytes_s;
	for (int d = 0; d < 3; d++) {
		g->lo[d] = INFINITY;
		g->hi[d] = 0;
	}
	for (size_t i = 0; i < p->ncurves; i++) {
		const struct opp_curve *c = &p->curves[i];
		if (leave_out && strcmp(c->profiled_as, leave_out) == 0)
			continue;
		for (size_t op = 0; op < OPP_NGEMMS; op++) {
			double k, n;
			opp_gemm_dims(&c->shape, c->tp, opp_gemms[op], &k, &n);
			struct gemmp_curve *gc = &g->curves[g->ncurves];
			gc->log_m = malloc(c->n * sizeof *gc->log_m);
			gc->log_t = malloc(c->n * sizeof *gc->log_t);
			if (!gc->log_m || !gc->log_t) {
				free(gc->log_m);
				free(gc->log_t);
				goto oom;
			}
			g->ncurves++;
			gc->k = k;
			gc->n = n;
			gc->log_k = log(k);
			gc->log_n = log(n);
			gc->rows = c->n;
			for (size_t r = 0; r < c->n; r++) {
				double s = c->ms[r * OPP_COUNT + opp_gemms[op]] * OPP_S_PER_MS;
				gc->log_m[r] = log(c->tokens[r]);
				gc->log_t[r] = log(s);
				if (s < g->floor_s)
					g->floor_s = s;
				gemmp_widen(g, 0, c->tokens[r]);
			}
			gemmp_widen(g, 1, k);
			gemmp_widen(g, 2, n);
		}
	}
	if (!g->ncurves) {
		snprintf(err, errlen, "%s: no GEMM measured%s%s", p->path, leave_out ? " besides " : "",
		         leave_out ? leave_out : "");
		gemmp_free(g);
		return -1;
	}
	*out = g;
	return 0;
oom:
	gemmp_free(g);
	err_memory(err, errlen, "out of memory");
	return -1;
}

/* log seconds on curve c at log M, within its rows (lm up to its last):
 * linear in (log M, log t) between rows, the first row's below them. */
static double gemmp_curve_log_t(const struct gemmp_curve *c, double lm)
{
	if (c->rows == 1 || lm <= c->log_m[0])
		return c->log_t[0];
	size_t lo = 0, hi = c->rows - 1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (c->log_m[mid] <= lm)
			lo = mid;
		else
			hi = mid;
	}
	double slope = (c->log_t[lo + 1] - c->log_t[lo]) / (c->log_m[lo + 1] - c->log_m[lo]);
	return c->log_t[lo] + slope * (lm - c->log_m[lo]);
}

/* log of an M x K x N GEMM's roofline on this GPU: its FLOPs at the measured
 * GEMM rate or its bytes (both operands and the product, each once) at the
 * measured streaming rate, whichever is longer. */
static double gemmp_log_roof(const struct gemmp *g, double m, double k, double n)
{
	double compute = 2 * m * k * n / g->flops_s, memory = OPP_ELEM_BYTES * (m * k + k * n + m * n) / g->bytes_s;
	return log(compute > memory ? compute : memory);
}

static double gemmp_estimate(const struct gemmp *g, double m, double k, double n, unsigned *outside);

double gemmp_seconds(const struct gemmp *g, double m, double k, double n, unsigned *outside)
{
	double s = gemmp_estimate(g, m, k, n, outside);
	return s > g->floor_s ? s : g->floor_s;
}

double gemmp_seconds_unfloored(const struct gemmp *g, double m, double k, double n)
{
	return gemmp_estimate(g, m, k, n, NULL);
}

double gemmp_floor_seconds(const struct gemmp *g)
{
	return g->floor_s;
}

static double gemmp_estimate(const struct gemmp *g, double m, double k, double n, unsigned *outside)
{
	double lm = log(m), lk = log(k), ln = log(n);
	size_t best[GEMMP_NEIGHBOURS];
	double dist[GEMMP_NEIGHBOURS];
	size_t nbest = 0;
	/* the nearest curves in (log K, log N), kept sorted by distance; ties by curve order */
	for (size_t i = 0; i < g->ncurves; i++) {
		double dk = lk - g->curves[i].log_k, dn = ln - g->curves[i].log_n, d = sqrt(dk * dk + dn * dn);
		size_t at = nbest;
		while (at > 0 && dist[at - 1] > d)
			at--;
		if (at >= GEMMP_NEIGHBOURS)
			continue;
		size_t last = nbest < GEMMP_NEIGHBOURS ? nbest : GEMMP_NEIGHBOURS - 1;
		memmove(&best[at + 1], &best[at], (last - at) * sizeof *best);
		memmove(&dist[at + 1], &dist[at], (last - at) * sizeof *dist);
		best[at] = i;
		dist[at] = d;
		if (nbest < GEMMP_NEIGHBOURS)
			nbest++;
	}
	double sum_w = 0, sum = 0;
	for (size_t j = 0; j < nbest; j++) {
		const struct gemmp_curve *c = &g->curves[best[j]];
		/* inverse distance; the 1e-3 (log units: a 0.1% change of K or N) only keeps an exact match
		 * finite, so it weighs about 1000x a curve one log unit away: a measured shape all but decides */
		double w = 1.0 / (dist[j] + 1e-3);
		/* the curve at M (past its last row, at its last row), scaled by the two shapes' rooflines */
		double at = lm < c->log_m[c->rows - 1] ? m : exp(c->log_m[c->rows - 1]);
		sum += w * (gemmp_curve_log_t(c, log(at)) + gemmp_log_roof(g, m, k, n) - gemmp_log_roof(g, at, c->k, c->n));
		sum_w += w;
	}
	if (outside)
		*outside = (m > g->hi[0] ? GEMMP_OUT_M : 0) | (k < g->lo[1] || k > g->hi[1] ? GEMMP_OUT_K : 0) |
		           (n < g->lo[2] || n > g->hi[2] ? GEMMP_OUT_N : 0);
	return exp(sum / sum_w);
}

void gemmp_ranges(const struct gemmp *g, double lo[3], double hi[3])
{
	memcpy(lo, g->lo, sizeof g->lo);
	memcpy(hi, g->hi, sizeof g->hi);
}

static int gemmp_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The q quantile of xs[0..n) (sorted in place), interpolated between ranks. */
static double gemmp_quantile(double *xs, size_t n, double q)
{
	qsort(xs, n, sizeof *xs, gemmp_cmp_double);
	double k = (double)(n - 1) * q;
	size_t lo = (size_t)k, hi = lo + 1 < n ? lo + 1 : lo;
	return xs[lo] + (xs[hi] - xs[lo]) * (k - (double)lo);
}

int gemmp_leave_one_model_out(const struct op_profile *p, struct gemmp_error *out, size_t max, struct gemmp_error *all,
                              char *err, size_t errlen)
{
	size_t total = 0, nmodels = 0, used = 0;
	for (size_t i = 0; i < p->ncurves; i++)
		total += p->curves[i].n * OPP_NGEMMS;
	double *errs = malloc((total ? total : 1) * sizeof *errs), *pooled = malloc((total ? total : 1) * sizeof *pooled);
	if (!errs || !pooled) {
		free(errs);
		free(pooled);
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < p->ncurves; i++) {
		const char *model = p->curves[i].profiled_as;
		int seen = 0;
		for (size_t j = 0; j < i; j++)
			seen |= strcmp(p->curves[j].profiled_as, model) == 0;
		if (seen)
			continue;
		struct gemmp *g;
		if (gemmp_create(p, model, &g, err, errlen) != 0) {
			free(errs);
			free(pooled);
			return -1;
		}
		size_t n = 0;
		for (size_t j = i; j < p->ncurves; j++) {
			const struct opp_curve *c = &p->curves[j];
			if (strcmp(c->profiled_as, model) != 0)
				continue;
			for (size_t op = 0; op < OPP_NGEMMS; op++) {
				double k, nn;
				opp_gemm_dims(&c->shape, c->tp, opp_gemms[op], &k, &nn);
				for (size_t r = 0; r < c->n; r++) {
					double meas = c->ms[r * OPP_COUNT + opp_gemms[op]] * OPP_S_PER_MS;
					errs[n] = fabs(gemmp_seconds(g, c->tokens[r], k, nn, NULL) / meas - 1);
					pooled[used++] = errs[n++];
				}
			}
		}
		gemmp_free(g);
		if (nmodels < max) {
			struct gemmp_error *e = &out[nmodels];
			snprintf(e->model, sizeof e->model, "%s", model);
			e->rows = n;
			e->median_pct = 100 * gemmp_quantile(errs, n, 0.5);
			e->p90_pct = 100 * gemmp_quantile(errs, n, 0.9);
		}
		nmodels++;
	}
	snprintf(all->model, sizeof all->model, "all");
	all->rows = used;
	all->median_pct = used ? 100 * gemmp_quantile(pooled, used, 0.5) : 0;
	all->p90_pct = used ? 100 * gemmp_quantile(pooled, used, 0.9) : 0;
	free(errs);
	free(pooled);
	return (int)(nmodels < max ? nmodels : max);
}
