/* sim/study/capacity_search.c: capacity's bracketing and bisection over rates and the judging
 * of one rate (capacity_search.h); the rule is described in sim/cli/cmd_capacity.c. */
#include "capacity_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../util/metrics.h"

double study_cap_round(double rate)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%.6g", rate);
	return strtod(buf, NULL);
}

void study_cap_judge(const struct study_cap_plan *plan, double rate, const struct study_cap_measure *m,
                     struct study_cap_point *p)
{
	memset(p, 0, sizeof *p);
	p->rate_rps = rate;
	p->p99_ms = m->p99_ms;
	p->violation = m->violation;
	p->overloaded = m->overloaded;
	p->pass = p->p99_ms <= plan->sla_ms && !p->overloaded;
	if (!plan->llm)
		return;
	p->missed = m->missed;
	p->measured = m->measured;
	p->violation = m->measured ? (double)m->missed / (double)m->measured : 1.0;
	p->bound = metrics_fraction_upper(m->missed, m->measured, plan->confidence);
	/* saturated stays the throughput test alone: search bounds N replicas by N x the lowest saturated
	 * rate, which holds for throughput, not for a queue that grew within a window */
	p->saturated = m->saturated;
	/* an attainment of 1 allows no miss, which no bound shows: then none may miss */
	p->pass = !p->saturated && !p->overloaded && (plan->allowed > 0 ? p->bound <= plan->allowed : m->missed == 0);
}

struct cap_run {
	const struct study_cap_plan *plan;
	study_cap_probe_fn probe;
	study_cap_point_fn progress;
	void *ctx;
	struct study_cap_result *out;
};

/* Measures and judges rate into the next point: its index, or -1 with err and *status. */
static long cap_measure(struct cap_run *r, double rate, enum study_cap_status *status, char *err, size_t errlen)
{
	struct study_cap_result *out = r->out;
	struct study_cap_measure m = { .p99_ms = 0 };
	if (out->npts == STUDY_CAP_MAX_POINTS) {
		snprintf(err, errlen, "no bracket after %d rates", STUDY_CAP_MAX_POINTS);
		*status = STUDY_CAP_FAILED;
		return -1;
	}
	if ((*status = r->probe(r->ctx, rate, &m, err, errlen)) != STUDY_CAP_OK)
		return -1;
	study_cap_judge(r->plan, rate, &m, &out->pts[out->npts]);
	if (r->progress)
		r->progress(r->ctx, &out->pts[out->npts]);
	return (long)out->npts++;
}

/* Doubling or halving from the estimate until one rate passes and one fails: STUDY_CAP_OK with the
 * bracket's indices in lo, hi (-1 where none was found), or a probe's failure with err. */
static enum study_cap_status cap_bracket(struct cap_run *r, long *lo_out, long *hi_out, char *err, size_t errlen)
{
	enum study_cap_status st;
	const struct study_cap_point *pts = r->out->pts;
	long lo = -1, hi = -1;
	double rate = study_cap_round(r->plan->estimate_rps);
	long p = cap_measure(r, rate, &st, err, errlen);
	if (p < 0)
		return st;
	for (int step = 0; step < STUDY_CAP_MAX_STEPS && !(lo >= 0 && hi >= 0); step++) {
		if (pts[p].pass) {
			lo = p;
			if (hi < 0) {
				rate = study_cap_round(rate * 2);
				if ((p = cap_measure(r, rate, &st, err, errlen)) < 0)
					return st;
			}
		} else {
			hi = p;
			if (lo < 0) {
				rate = study_cap_round(rate / 2);
				if ((p = cap_measure(r, rate, &st, err, errlen)) < 0)
					return st;
			}
		}
		if (pts[p].pass && hi >= 0 && lo < 0)
			lo = p;
		if (!pts[p].pass && lo >= 0 && hi < 0)
			hi = p;
	}
	*lo_out = lo;
	*hi_out = hi;
	return STUDY_CAP_OK;
}

/* Why no bracket was found: STUDY_CAP_FAILED with err (an answer, not bad input). */
static enum study_cap_status cap_no_bracket(const struct study_cap_plan *plan, const struct study_cap_result *out,
                                            long lo, long hi, char *err, size_t errlen)
{
	if (lo < 0 && plan->llm)
		snprintf(err, errlen, "no rate meets the targets: even at %.6g req/s, where requests hardly queue, %.3g%% of "
		         "requests miss one (at most %.3g%% may)", out->pts[hi].rate_rps, 100 * out->pts[hi].violation,
		         100 * plan->allowed);
	else if (lo < 0)
		snprintf(err, errlen, "no rate meets the SLA: even at %.6g req/s, where requests hardly queue, the p99 is "
		         "%.4g ms > %g ms", out->pts[hi].rate_rps, out->pts[hi].p99_ms, plan->sla_ms);
	else
		snprintf(err, errlen, "the %s holds up to %.6g req/s, %d doublings above the estimate; are the targets meant "
		         "to be so loose?", plan->llm ? "token targets" : "SLA", out->pts[lo].rate_rps, STUDY_CAP_MAX_STEPS);
	return STUDY_CAP_FAILED;
}

enum study_cap_status study_capacity_search(const struct study_cap_plan *plan, study_cap_probe_fn probe,
                                            study_cap_point_fn progress, void *ctx, struct study_cap_result *out,
                                            char *err, size_t errlen)
{
	struct cap_run r = { .plan = plan, .probe = probe, .progress = progress, .ctx = ctx, .out = out };
	enum study_cap_status st;
	long lo = -1, hi = -1;
	out->npts = 0;
	if ((st = cap_bracket(&r, &lo, &hi, err, errlen)) != STUDY_CAP_OK)
		return st;
	if (lo < 0 || hi < 0)
		return cap_no_bracket(plan, out, lo, hi, err, errlen);
	while (out->pts[hi].rate_rps - out->pts[lo].rate_rps > plan->tolerance * out->pts[lo].rate_rps) {
		double mid = study_cap_round(0.5 * (out->pts[lo].rate_rps + out->pts[hi].rate_rps));
		if (mid <= out->pts[lo].rate_rps || mid >= out->pts[hi].rate_rps)
			break;                      /* 6 significant digits are exhausted */
		long p = cap_measure(&r, mid, &st, err, errlen);
		if (p < 0)
			return st;
		if (out->pts[p].pass)
			lo = p;
		else
			hi = p;
	}
	out->lo = (size_t)lo;
	out->hi = (size_t)hi;
	return STUDY_CAP_OK;
}
