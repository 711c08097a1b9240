/* sim/store/cdf_compare.c: KS distance, tail ratios and the regression verdict
 * between two stored latency CDFs (see cdf_compare.h for the method). */
#include "cdf_compare.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const struct cdfc_point cdfc_points[CDFC_NQUANTILES] = {
	{ 0.5, "p50" }, { 0.9, "p90" }, { 0.99, "p99" }, { 0.999, "p99.9" },
};

double cdfc_quantile_ms(const double *cdf_ms, double q)
{
	long i = lround(q * METRICS_CDF_POINTS) - 1;
	if (i < 0)
		i = 0;
	if (i >= METRICS_CDF_POINTS)
		i = METRICS_CDF_POINTS - 1;
	return cdf_ms[i];
}

static int cdfc_check(const double *v, const char *which, char *err, size_t errlen)
{
	for (int i = 0; i < METRICS_CDF_POINTS; i++) {
		if (!isfinite(v[i])) {
			snprintf(err, errlen, "%s CDF point %d is not a finite number", which, i + 1);
			return -1;
		}
		if (i > 0 && v[i] < v[i - 1]) {
			snprintf(err, errlen, "%s CDF decreases at point %d (%g after %g)", which, i + 1, v[i], v[i - 1]);
			return -1;
		}
	}
	return 0;
}

/* One merge pass over the two sorted value sets. At each distinct value x
 * both counters move past every value <= x, so ia/n and ib/n are the two
 * step CDFs at x; their differences at all such x give the suprema. */
static void cdfc_ks(const double *a, const double *b, struct cdfc_result *r)
{
	const int n = METRICS_CDF_POINTS;
	int ia = 0, ib = 0, best = 0;
	int worse = 0, better = 0;       /* in units of 1/n */
	r->ks_at_ms = a[0] < b[0] ? a[0] : b[0];
	while (ia < n || ib < n) {
		double x = ia == n ? b[ib] : ib == n ? a[ia] : a[ia] < b[ib] ? a[ia] : b[ib];
		while (ia < n && a[ia] <= x)
			ia++;
		while (ib < n && b[ib] <= x)
			ib++;
		int d = ia - ib;         /* n * (F_base(x) - F_cand(x)) */
		if (d > worse)
			worse = d;
		if (-d > better)
			better = -d;
		if (abs(d) > best) {
			best = abs(d);
			r->ks_at_ms = x;
		}
	}
	r->ks_worse = (double)worse / n;
	r->ks_better = (double)better / n;
	r->ks = (double)best / n;
}

int cdfc_compare(const double *base_ms, const double *cand_ms, const struct cdfc_limits *lim,
                 struct cdfc_result *r, char *err, size_t errlen)
{
	*r = (struct cdfc_result){ 0 };
	if (cdfc_check(base_ms, "baseline", err, errlen) != 0 || cdfc_check(cand_ms, "candidate", err, errlen) != 0)
		return -1;
	for (int i = 0; i < CDFC_NQUANTILES; i++) {
		struct cdfc_quantile *p = &r->quantiles[i];
		p->q = cdfc_points[i].q;
		p->name = cdfc_points[i].name;
		p->base_ms = cdfc_quantile_ms(base_ms, p->q);
		p->cand_ms = cdfc_quantile_ms(cand_ms, p->q);
		if (p->base_ms > 0)
			p->ratio = p->cand_ms / p->base_ms;
		else
			p->ratio = p->cand_ms > 0 ? INFINITY : 1.0;
		/* compared as cand > base * (1 + tol), not by the ratio, so a zero
		 * baseline with a zero candidate is not worse */
		p->worse = p->cand_ms > p->base_ms * (1.0 + lim->tolerance);
		r->regression |= p->worse;
	}
	cdfc_ks(base_ms, cand_ms, r);
	r->ks_exceeded = r->ks_worse > lim->ks_tolerance;
	r->regression |= r->ks_exceeded;
	r->changed = r->ks > 0;        /* any point moved: KS counts every value that crossed another */
	for (int i = 0; i < CDFC_NQUANTILES; i++)
		r->changed |= r->quantiles[i].cand_ms != r->quantiles[i].base_ms;
	return 0;
}
