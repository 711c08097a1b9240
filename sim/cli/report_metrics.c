/* sim/cli/report_metrics.c: a run's metrics by their one name (report_metrics.h). */
#include "report_metrics.h"
#include <math.h>
#include "../../util/text.h"

double report_slo_attainment(const struct drv_result *res)
{
	return res->slo_measured ? (double)res->slo_met / (double)res->slo_measured : 0.0;
}

unsigned report_gpus(const struct report_run *r)
{
	return r->serving->gpus;
}

/* An LLM run's rates over its measured span (0 when it has none, as throughput_rps). */
static double per_span(const struct drv_result *res, uint64_t n)
{
	return res->measured_span_s > 0 ? (double)n / res->measured_span_s : 0.0;
}

void report_metric_values(const struct report_run *r, double v[METRIC_COUNT], int has[METRIC_COUNT])
{
	const struct drv_result *res = r->res;
	const struct metrics_summary *s = &res->summary;
	for (int i = 0; i < METRIC_COUNT; i++) {
		v[i] = NAN;
		has[i] = metric_names[i].runs == METRIC_ALL ||
		         (res->llm && (metric_names[i].runs == METRIC_LLM || r->ttft_slo_ms > 0 || r->tpot_slo_ms > 0));
	}
	has[METRIC_SLA_VIOLATION_RATE] = !res->llm || r->sla_given;   /* an LLM's default SLA means nothing for it */
	const double all[] = { s->mean_ms, s->p50_ms, s->p90_ms, s->p95_ms, s->p99_ms, s->p999_ms, s->max_ms,
	                       s->queue_mean_ms, s->queue_p99_ms, s->sla_violation_rate, res->throughput_rps,
	                       res->mean_batch, report_saturated(r) };
	_Static_assert(sizeof all / sizeof all[0] == METRIC_SATURATED + 1, "every node-level metric");
	for (int i = 0; i <= METRIC_SATURATED; i++)
		v[i] = all[i];
	if (!res->llm)
		return;
	double gpus = report_gpus(r), in = per_span(res, res->input_tokens), out = per_span(res, res->output_tokens);
	const double llm[] = {
		res->ttft.mean_ms, res->ttft.p50_ms, res->ttft.p90_ms, res->ttft.p99_ms,
		res->tpot.mean_ms, res->tpot.p50_ms, res->tpot.p90_ms, res->tpot.p99_ms, res->itl_p50_ms, res->itl_p99_ms,
		in, out, in / gpus, out / gpus,
		res->tpot.count ? res->user_tokens_per_s_sum / (double)res->tpot.count : 0.0,
		res->tpot.p50_ms > 0 ? 1e3 / res->tpot.p50_ms : 0.0,
		res->goodput_rps, per_span(res, res->good_output_tokens),
		report_slo_attainment(res), res->kv_mean_fraction,
	};
	_Static_assert(sizeof llm / sizeof llm[0] == METRIC_COUNT - METRIC_TTFT_MEAN, "every LLM metric");
	for (int i = METRIC_TTFT_MEAN; i < METRIC_COUNT; i++)
		v[i] = llm[i - METRIC_TTFT_MEAN];
}

void report_tokens_json(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	double v[METRIC_COUNT];
	int has[METRIC_COUNT];
	report_metric_values(r, v, has);
	fprintf(f, ",\"gpus\":%u,\"input_tokens\":%llu,\"output_tokens\":%llu,\"measured_span_s\":%.10g", report_gpus(r),
	        (unsigned long long)res->input_tokens, (unsigned long long)res->output_tokens, res->measured_span_s);
	fprintf(f, ",\"input_tokens_per_s\":%.10g,\"output_tokens_per_s\":%.10g,\"input_tokens_per_s_per_gpu\":%.10g,"
	        "\"output_tokens_per_s_per_gpu\":%.10g,\"output_tokens_per_s_per_user\":{\"mean\":%.10g,\"p50\":%.10g}",
	        v[METRIC_INPUT_TOKENS_PER_S], v[METRIC_OUTPUT_TOKENS_PER_S], v[METRIC_INPUT_TOKENS_PER_S_PER_GPU],
	        v[METRIC_OUTPUT_TOKENS_PER_S_PER_GPU], v[METRIC_USER_TOKENS_PER_S_MEAN], v[METRIC_USER_TOKENS_PER_S_P50]);
	if (has[METRIC_GOODPUT_OUTPUT_TOKENS_PER_S])
		fprintf(f, ",\"goodput_output_tokens_per_s\":%.10g", v[METRIC_GOODPUT_OUTPUT_TOKENS_PER_S]);
}

void report_tokens_text(FILE *f, const struct report_run *r)
{
	double v[METRIC_COUNT];
	int has[METRIC_COUNT];
	report_metric_values(r, v, has);
	/* 3 significant digits: a rate over a finite run, and 1000 / a TPOT printed to 0.1 ms */
	char in[32], out[32], in_gpu[32], out_gpu[32], user[32], user50[32], good[64] = "";
	txt_format_sig(in, sizeof in, v[METRIC_INPUT_TOKENS_PER_S], 3);
	txt_format_sig(out, sizeof out, v[METRIC_OUTPUT_TOKENS_PER_S], 3);
	txt_format_sig(in_gpu, sizeof in_gpu, v[METRIC_INPUT_TOKENS_PER_S_PER_GPU], 3);
	txt_format_sig(out_gpu, sizeof out_gpu, v[METRIC_OUTPUT_TOKENS_PER_S_PER_GPU], 3);
	txt_format_sig(user, sizeof user, v[METRIC_USER_TOKENS_PER_S_MEAN], 3);
	txt_format_sig(user50, sizeof user50, v[METRIC_USER_TOKENS_PER_S_P50], 3);
	if (has[METRIC_GOODPUT_OUTPUT_TOKENS_PER_S]) {
		char g[32];
		txt_format_sig(g, sizeof g, v[METRIC_GOODPUT_OUTPUT_TOKENS_PER_S], 3);
		snprintf(good, sizeof good, ", goodput %s (meeting the SLOs)", g);
	}
	unsigned gpus = report_gpus(r);
	fprintf(f, "  tokens/s   input %s, output %s%s; per GPU (%u GPU%s) input %s, output %s; per user mean %s, "
	        "p50 %s\n", in, out, good, gpus, gpus == 1 ? "" : "s", in_gpu, out_gpu, user, user50);
}

size_t report_metric_rows(const struct report_run *r, struct results_stat out[METRIC_COUNT])
{
	double v[METRIC_COUNT];
	int has[METRIC_COUNT];
	size_t n = 0;
	report_metric_values(r, v, has);
	for (int i = 0; i < METRIC_COUNT; i++)
		if (has[i])
			out[n++] = (struct results_stat){ metric_names[i].name, v[i] };
	return n;
}
