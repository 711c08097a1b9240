/* sim/cli/capacity_report.c: capacity's result printed (capacity_search.h). */
#include "capacity_search.h"

#include <math.h>
#include <stdio.h>
#include "capacity_requests.h"
#include "../study/capacity.h"
#include "engine_launch.h"
#include "../../util/json.h"
#include "../../util/options.h"
#include "../../util/text.h"

/* The result: one JSON object, or two lines of text. */
void cap_print(const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm, double est,
               const struct cap_point *lo, const struct cap_point *hi)
{
	if (opt_flag(o, "json")) {
		printf("{\"policy\":");
		json_write_string(stdout, nm->policy);
		printf(",\"model\":");
		json_write_string(stdout, nm->model);
		printf(",\"hw\":");
		json_write_string(stdout, nm->hw);
		printf(",\"max_batch\":%u,\"sla_ms\":%.10g,\"quantile\":%g,\"capacity_rps\":%.10g,"
		       "\"bracket_rps\":[%.10g,%.10g],\"p99_ms_at_bracket\":[%.10g,%.10g],\"estimate_rps\":%.10g,"
		       "\"tolerance\":%.10g,\"requests\":%llu,\"warmup\":%llu,\"seeds\":%llu,\"first_seed\":%llu,\"points\":[",
		       nm->max_batch, s->sla_ms, CAP_QUANTILE, lo->rate_rps, lo->rate_rps, hi->rate_rps, lo->p99_ms, hi->p99_ms, est,
		       opt_double(o, "tolerance"), (unsigned long long)s->requests, (unsigned long long)s->warmup,
		       (unsigned long long)s->nseeds, (unsigned long long)s->seed0);
		for (size_t i = 0; i < s->npts; i++)
			printf("%s{\"rate_rps\":%.10g,\"p99_ms\":%.10g,\"sla_violation_rate\":%.10g,\"miss_bound\":%.10g,"
			       "\"saturated\":%s,\"overloaded\":%s,\"pass\":%s}", i ? "," : "", s->pts[i].rate_rps,
			       s->pts[i].p99_ms, s->pts[i].violation, s->pts[i].bound, s->pts[i].saturated ? "true" : "false",
			       s->pts[i].overloaded ? "true" : "false", s->pts[i].pass ? "true" : "false");
		printf("]");
		if (s->llm) {
			printf(",\"llm\":{\"allowed_miss_fraction\":%.10g,\"confidence\":%.10g,\"miss_at_bracket\":[%.10g,%.10g],"
			       "\"miss_bound_at_bracket\":[%.10g,%.10g],\"hw_band_rps\":", s->allowed, s->confidence, lo->violation,
			       hi->violation, lo->bound, hi->bound);
			if (s->hw_error_p90 >= 0 && s->hw_error_p90 < 1)
				printf("[%.10g,%.10g],\"hw_error_p90\":%.10g}", lo->rate_rps / (1 + s->hw_error_p90),
				       hi->rate_rps / (1 - s->hw_error_p90), s->hw_error_p90);
			else
				printf("null}");
		}
		printf("}\n");
		return;
	}
	/* rates to the digits the bracket supports: the answer is known no closer than lo..hi */
	int d = txt_band_decimals(hi->rate_rps - lo->rate_rps);
	if (s->llm) {
		printf("capacity %.*f req/s: %.3g%% of requests miss a target at %.*f req/s (bound %.3g%% <= %.3g%%), %.3g%% "
		       "at %.*f req/s (bound %.3g%%%s)\n", d, lo->rate_rps, 100 * lo->violation, d, lo->rate_rps,
		       100 * lo->bound, 100 * s->allowed, 100 * hi->violation, d, hi->rate_rps, 100 * hi->bound,
		       hi->saturated ? ", saturated" : "");
		printf("  %s on %s / %s, max seqs %u; %llu requests per rate (%llu warm-up), %llu seed(s), %zu rates "
		       "simulated; bound at %g confidence; estimate %.*f req/s\n", nm->policy, nm->model, nm->hw,
		       nm->max_batch, (unsigned long long)s->requests, (unsigned long long)s->warmup,
		       (unsigned long long)s->nseeds, s->npts, s->confidence, d, est);
		if (s->hw_error_p90 >= 0 && s->hw_error_p90 < 1) {
			double band_lo = lo->rate_rps / (1 + s->hw_error_p90), band_hi = hi->rate_rps / (1 - s->hw_error_p90);
			int bd = txt_band_decimals(band_hi - band_lo) + 1;   /* the band's edges to its width's second digit */
			printf("  the hardware model's measured error (p90 %.2f%% a layer) puts it in [%.*f, %.*f] req/s, to "
			       "first order\n", 100 * s->hw_error_p90, bd, band_lo, bd, band_hi);
		}
		run_engine_launch_words(stdout, s->run_args, s->nrun_args);
	} else {
		printf("capacity %.*f req/s: p99 %.4g ms <= %g ms at %.*f req/s, %.4g ms %s %g ms at %.*f req/s%s\n", d,
		       lo->rate_rps, lo->p99_ms, s->sla_ms, d, lo->rate_rps, hi->p99_ms, hi->p99_ms > s->sla_ms ? ">" : "<=",
		       s->sla_ms, d, hi->rate_rps, hi->overloaded ? " (overloaded within a window)" : "");
		printf("  %s on %s / %s, max batch %u; %llu requests per rate (%llu warm-up), %llu seed(s), "
		       "%zu rates simulated; estimate %.*f req/s\n", nm->policy, nm->model, nm->hw, nm->max_batch,
		       (unsigned long long)s->requests, (unsigned long long)s->warmup, (unsigned long long)s->nseeds, s->npts,
		       d, est);
	}
}
