/* traces/arrivals.c: inter-arrival gaps of the open-loop request stream.
 * cv = 1 is the Poisson process both LazyBatching (Sec. V, MLPerf-style
 * traffic) and BatchMaker (Sec. 7.1) drive their servers with; other cvs
 * give a Gamma renewal process with the same mean rate, burstier (cv > 1)
 * or smoother (cv < 1) than Poisson.
 */
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <gsl/gsl_randist.h>

int trc_arrivals_init(struct trc_arrivals *a, double rate_rps, double cv, char *err, size_t errlen)
{
	if (!(rate_rps > 0) || !isfinite(rate_rps)) {
		snprintf(err, errlen, "rate must be a positive number of requests per second, got %g", rate_rps);
		return -1;
	}
	if (!(cv >= TRC_MIN_CV && cv <= TRC_MAX_CV)) {
		snprintf(err, errlen, "arrival cv must be a number from %g to %g (1 = Poisson), got %g", TRC_MIN_CV,
		         TRC_MAX_CV, cv);
		return -1;
	}
	a->rate_rps = rate_rps;
	a->cv = cv;
	return 0;
}

double trc_arrivals_next_gap_s(const struct trc_arrivals *a, gsl_rng *r)
{
	/* Exactly 1 takes the exponential path: a Gamma with shape 1 has the
	 * same law but draws differently, and Poisson runs should match any
	 * other tool that uses plain exponential gaps. */
	if (a->cv == 1.0)
		return gsl_ran_exponential(r, 1.0 / a->rate_rps);
	/* Gamma(k, theta): mean k*theta, cv 1/sqrt(k). */
	double shape = 1.0 / (a->cv * a->cv);
	double scale_s = 1.0 / (a->rate_rps * shape);
	return gsl_ran_gamma(r, shape, scale_s);
}

void trc_arrivals_next_gaps_s(const struct trc_arrivals *a, gsl_rng *r, double *gaps, size_t n)
{
	if (a->cv != 1.0) {
		for (size_t i = 0; i < n; i++)
			gaps[i] = trc_arrivals_next_gap_s(a, r);
		return;
	}
	/* gsl_ran_exponential(r, mu) is -mu * log1p(-u) of one uniform u (GSL
	 * 2.7, randist/exponential.c; tests/test_workload.c holds us to it draw
	 * for draw). Taken as every uniform first and then every logarithm, the
	 * logarithms wait on nothing but their own uniform and overlap, where
	 * drawn one by one each waited for the generator's next step. */
	const double mu = 1.0 / a->rate_rps;
	for (size_t i = 0; i < n; i++)
		gaps[i] = gsl_rng_uniform(r);
	for (size_t i = 0; i < n; i++)
		gaps[i] = -mu * log1p(-gaps[i]);
}
