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

int cap_hw_band(const struct cap_search *s, const struct study_cap_point *lo, const struct study_cap_point *hi,
                double band[2])
{
	if (!(s->hw_error_p90 >= 0 && s->hw_error_p90 < 1))
		return 0;
	band[0] = lo->rate_rps / (1 + s->hw_error_p90);      /* a model e slower serves 1/(1 + e) of the rate */
	band[1] = hi->rate_rps / (1 - s->hw_error_p90);
	return 1;
}

/* An LLM's own members: its targets, the bound's terms, the hardware band. */
static void cap_llm_json(FILE *f, const struct cap_search *s, const struct study_cap_point *lo,
                         const struct study_cap_point *hi)
{
	double band[2];
	fprintf(f, ",\"llm\":{\"ttft_slo_ms\":%.10g,\"tpot_slo_ms\":%.10g,\"allowed_miss_fraction\":%.10g,"
	        "\"confidence\":%.10g,\"miss_at_bracket\":[%.10g,%.10g],\"miss_bound_at_bracket\":[%.10g,%.10g],"
	        "\"default_lengths\":%s,\"hw_band_rps\":", s->ttft_slo_ms, s->tpot_slo_ms, s->allowed, s->confidence,
	        lo->violation, hi->violation, lo->bound, hi->bound, s->default_lengths ? "true" : "false");
	if (cap_hw_band(s, lo, hi, band))
		fprintf(f, "[%.10g,%.10g],\"hw_error_p90\":%.10g}", band[0], band[1], s->hw_error_p90);
	else
		fprintf(f, "null}");
}

void cap_write_json(FILE *f, const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm,
                    double est, const struct study_cap_point *lo, const struct study_cap_point *hi, int64_t capacity_id)
{
	fprintf(f, "{\"policy\":");
	json_write_string(f, nm->policy);
	fprintf(f, ",\"model\":");
	json_write_string(f, nm->model);
	fprintf(f, ",\"hw\":");
	json_write_string(f, nm->hw);
	fputc(',', f);
	study_serving_json(f, &nm->serving);
	fprintf(f, ",\"max_batch\":%u,\"sla_ms\":%.10g,\"quantile\":%g,\"capacity_rps\":%.10g,"
	        "\"bracket_rps\":[%.10g,%.10g],\"p99_ms_at_bracket\":[%.10g,%.10g],\"estimate_rps\":%.10g,"
	        "\"tolerance\":%.10g,\"requests\":%llu,\"warmup\":%llu,\"seeds\":%llu,\"first_seed\":%llu,\"points\":[",
	        nm->max_batch, s->sla_ms, CAP_QUANTILE, lo->rate_rps, lo->rate_rps, hi->rate_rps, lo->p99_ms, hi->p99_ms,
	        est, opt_double(o, "tolerance"), (unsigned long long)s->requests, (unsigned long long)s->warmup,
	        (unsigned long long)s->nseeds, (unsigned long long)s->seed0);
	for (size_t i = 0; i < s->res.npts; i++) {
		const struct study_cap_point *p = &s->res.pts[i];
		fprintf(f, "%s{\"rate_rps\":%.10g,\"p99_ms\":%.10g,\"sla_violation_rate\":%.10g,\"miss_bound\":%.10g,"
		        "\"saturated\":%s,\"overloaded\":%s,\"pass\":%s}", i ? "," : "", p->rate_rps, p->p99_ms,
		        p->violation, p->bound, p->saturated ? "true" : "false", p->overloaded ? "true" : "false",
		        p->pass ? "true" : "false");
	}
	fprintf(f, "]");
	if (s->llm)
		cap_llm_json(f, s, lo, hi);
	if (capacity_id >= 0)
		fprintf(f, ",\"capacity_id\":%lld", (long long)capacity_id);
	else
		fprintf(f, ",\"capacity_id\":null");
	fputc('}', f);
}

/* An LLM's targets as the header names them: "TTFT 2000 ms and TPOT 200 ms". */
static const char *cap_targets_text(const struct cap_search *s, char *buf, size_t len)
{
	if (s->ttft_slo_ms > 0 && s->tpot_slo_ms > 0)
		snprintf(buf, len, "TTFT %g ms and TPOT %g ms", s->ttft_slo_ms, s->tpot_slo_ms);
	else if (s->ttft_slo_ms > 0)
		snprintf(buf, len, "TTFT %g ms", s->ttft_slo_ms);
	else
		snprintf(buf, len, "TPOT %g ms", s->tpot_slo_ms);
	return buf;
}

/* The result: one JSON object, or two lines of text. */
void cap_print(const struct opt_set *o, const struct cap_search *s, const struct study_cap_names *nm, double est,
               const struct study_cap_point *lo, const struct study_cap_point *hi, int64_t capacity_id)
{
	if (opt_flag(o, "json")) {
		cap_write_json(stdout, o, s, nm, est, lo, hi, capacity_id);
		printf("\n");
		return;
	}
	/* rates to the digits the bracket supports: the answer is known no closer than lo..hi */
	int d = txt_band_decimals(hi->rate_rps - lo->rate_rps);
	char serving[256], targets[96], stored[64] = "";
	study_serving_text(&nm->serving, serving, sizeof serving);
	if (capacity_id >= 0)
		snprintf(stored, sizeof stored, "; stored as capacity %lld", (long long)capacity_id);
	if (s->llm) {
		printf("capacity %.*f req/s: %.3g%% of requests miss a target at %.*f req/s (bound %.3g%% <= %.3g%%), %.3g%% "
		       "at %.*f req/s (bound %.3g%%%s)\n", d, lo->rate_rps, 100 * lo->violation, d, lo->rate_rps,
		       100 * lo->bound, 100 * s->allowed, 100 * hi->violation, d, hi->rate_rps, 100 * hi->bound,
		       hi->saturated ? ", saturated" : "");
		printf("  %s on %s / %s, %s, max seqs %u; targets %s;%s %llu requests per rate (%llu warm-up), %llu seed(s), "
		       "%zu rates simulated; bound at %g confidence; estimate %.*f req/s%s\n", nm->policy, nm->model, nm->hw,
		       serving, nm->max_batch, cap_targets_text(s, targets, sizeof targets),
		       s->default_lengths ? " lengths the Azure conversation trace's pairs (docs/WORKLOAD.md);" : "",
		       (unsigned long long)s->requests,
		       (unsigned long long)s->warmup, (unsigned long long)s->nseeds, s->res.npts, s->confidence, d, est, stored);
		double band[2];
		if (cap_hw_band(s, lo, hi, band)) {
			int bd = txt_band_decimals(band[1] - band[0]) + 1;   /* the band's edges to its width's second digit */
			printf("  the hardware model's measured error (p90 %.2f%% a layer) puts it in [%.*f, %.*f] req/s, to "
			       "first order\n", 100 * s->hw_error_p90, bd, band[0], bd, band[1]);
		}
		run_engine_launch_words(stdout, s->run_args, s->nrun_args);
	} else {
		printf("capacity %.*f req/s: p99 %.4g ms <= %g ms at %.*f req/s, %.4g ms %s %g ms at %.*f req/s%s\n", d,
		       lo->rate_rps, lo->p99_ms, s->sla_ms, d, lo->rate_rps, hi->p99_ms, hi->p99_ms > s->sla_ms ? ">" : "<=",
		       s->sla_ms, d, hi->rate_rps, hi->overloaded ? " (overloaded within a window)" : "");
		printf("  %s on %s / %s, %s, max batch %u; %llu requests per rate (%llu warm-up), %llu seed(s), "
		       "%zu rates simulated; estimate %.*f req/s%s\n", nm->policy, nm->model, nm->hw, serving, nm->max_batch,
		       (unsigned long long)s->requests, (unsigned long long)s->warmup, (unsigned long long)s->nseeds, s->res.npts,
		       d, est, stored);
	}
}
