/* sim/cli/capacity_requests.c: a capacity probe's requests (capacity_requests.h). */
#include <math.h>
#include <stdio.h>
#include "capacity_requests.h"
#include "../../util/metrics.h"

/* The warm-up of a probe of n requests: --warmup, or 10% of them. */
static uint64_t cap_warmup_of(const struct opt_set *o, uint64_t n)
{
	return opt_given(o, "warmup") ? opt_uint(o, "warmup") : (uint64_t)(CAP_WARMUP_FRACTION * (double)n);
}

int cap_requests(const struct opt_set *o, int llm, double allowed, double confidence, uint64_t nseeds,
                 uint64_t *requests, uint64_t *warmup, char *err, size_t errlen)
{
	uint64_t measured = llm ? metrics_fraction_min_trials(allowed > 0 ? allowed : 1 - CAP_QUANTILE, confidence)
	                        : metrics_tail_min_requests(CAP_QUANTILE, CAP_TAIL_SAMPLES, METRICS_TAIL_CONFIDENCE);
	if (llm && measured < CAP_LLM_MIN_MEASURED)
		measured = CAP_LLM_MIN_MEASURED;
	*warmup = cap_warmup_of(o, opt_given(o, "requests") ? opt_uint(o, "requests") : measured);
	*requests = opt_given(o, "requests") ? opt_uint(o, "requests") : measured + *warmup;
	if (*warmup >= *requests) {
		snprintf(err, errlen, "--warmup=%llu leaves no request to measure", (unsigned long long)*warmup);
		return -1;
	}
	if (!llm || !(allowed > 0))
		return 0;                      /* with no allowance (attainment 1) any run can show that none missed */
	uint64_t least = (uint64_t)fmax(1, floor(log(1 - confidence) / log1p(-allowed)) - 1);
	while (metrics_fraction_upper(0, least, confidence) > allowed)     /* the closed form, as the bound has it */
		least++;
	if ((*requests - *warmup) * nseeds >= least)
		return 0;
	uint64_t per_seed = (least + nseeds - 1) / nseeds, n = per_seed;
	while (n - cap_warmup_of(o, n) < per_seed)
		n++;
	snprintf(err, errlen, "--requests=%llu: too short to judge the targets: %llu measured requests (x %llu seeds) "
	         "cannot show that at most %.3g%% miss one at %g confidence, even if none does; that needs %llu: give "
	         "--requests=%llu or more, or more --seeds", (unsigned long long)*requests,
	         (unsigned long long)(*requests - *warmup), (unsigned long long)nseeds, 100 * allowed, confidence,
	         (unsigned long long)least, (unsigned long long)n);
	return -1;
}
