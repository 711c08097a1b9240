/* sim/cli/capacity_targets.c: the targets capacity's probes are judged on (capacity_search.h). */
#include "capacity_search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capacity_requests.h"
#include "../../util/options.h"
#include "../study/scenario.h"

/* An LLM's targets into s (and a preset's into the probes' options): one
 * line and -1 for options that do not fit the model. */
int cap_targets(const struct opt_set *o, const struct opt_set *ro, struct cap_search *s, char *err,
                size_t errlen)
{
	static const char *const llm_only[] = { "percentile", "attainment", "confidence", "preset" };
	if (!s->llm) {
		for (size_t i = 0; i < sizeof llm_only / sizeof llm_only[0]; i++)
			if (opt_given(o, llm_only[i])) {
				snprintf(err, errlen, "--%s sets an LLM's token targets; this model is judged on --sla", llm_only[i]);
				return -1;
			}
		return 0;
	}
	if (opt_given(o, "sla")) {
		snprintf(err, errlen, "--sla is a node-level model's target; an LLM's are --ttft-slo and --tpot-slo");
		return -1;
	}
	const char *preset = opt_str(o, "preset");
	int targets = opt_given(ro, "ttft-slo") || opt_given(ro, "tpot-slo");
	if (preset) {
		if (strcmp(preset, "mlperf-llama2-70b") != 0) {
			snprintf(err, errlen, "--preset=%s: unknown (known: mlperf-llama2-70b)", preset);
			return -1;
		}
		if (targets || opt_given(o, "percentile") || opt_given(o, "attainment")) {
			snprintf(err, errlen, "--preset=%s sets the targets and the percentile: give it or them, not both", preset);
			return -1;
		}
		/* MLPerf Inference's Llama-2-70B server scenario: TTFT 2 s and TPOT 200 ms, both at p99 (scenario.h) */
		const struct study_scenario_def *server = study_scenario_of(SCN_SERVER);
		snprintf(s->fixed_args[s->nfixed++], sizeof s->fixed_args[0], "--ttft-slo=%g", server->ttft_ms);
		snprintf(s->fixed_args[s->nfixed++], sizeof s->fixed_args[0], "--tpot-slo=%g", server->tpot_ms);
		s->ttft_slo_ms = server->ttft_ms;
		s->tpot_slo_ms = server->tpot_ms;
	} else if (!targets) {
		snprintf(err, errlen, "an LLM's capacity needs its targets: --ttft-slo and/or --tpot-slo (ms), or "
		         "--preset=mlperf-llama2-70b");
		return -1;
	}
	if (opt_given(o, "percentile") && opt_given(o, "attainment")) {
		snprintf(err, errlen, "give --percentile or --attainment, not both");
		return -1;
	}
	if (opt_given(o, "percentile") && !(opt_double(o, "percentile") < 100)) {
		snprintf(err, errlen, "--percentile=%s: must lie between 0 and 100, 100 excluded", opt_str(o, "percentile"));
		return -1;
	}
	if (!(opt_double(o, "confidence") < 1)) {
		snprintf(err, errlen, "--confidence=%s: must lie between 0.5 and 1, 1 excluded", opt_str(o, "confidence"));
		return -1;
	}
	s->allowed = opt_given(o, "attainment") ? 1 - opt_double(o, "attainment")
	             : opt_given(o, "percentile") ? 1 - opt_double(o, "percentile") / 100 : 1 - CAP_QUANTILE;
	s->confidence = opt_double(o, "confidence");
	if (!preset) {
		s->ttft_slo_ms = opt_given(ro, "ttft-slo") ? opt_double(ro, "ttft-slo") : 0;
		s->tpot_slo_ms = opt_given(ro, "tpot-slo") ? opt_double(ro, "tpot-slo") : 0;
	}
	return 0;
}
