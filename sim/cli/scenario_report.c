/* sim/cli/scenario_report.c: a scenario's metric and constraint (scenario_report.h). */
#include "scenario_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../../policies/driver.h"
#include "../../util/json.h"
#include "../../util/metrics.h"
#include "../study/scenario.h"

double scenario_query_latency_ms(const struct drv_request_row *rows, size_t n, uint32_t samples, uint64_t warmup,
                                 double pct)
{
	int64_t *lat = malloc((n / samples + 1) * sizeof *lat);
	size_t nq = 0;
	if (!lat)
		return -1;
	for (size_t i = 0; i + samples <= n;) {       /* rows are in id order; a query is `samples` consecutive ids */
		uint64_t q = rows[i].id / samples;
		size_t k = i;
		double finish = rows[i].finish_s;
		while (k < n && rows[k].id / samples == q) {
			finish = fmax(finish, rows[k].finish_s);
			k++;
		}
		if (k - i == samples && q * samples >= warmup)     /* whole and measured */
			lat[nq++] = llround((finish - rows[i].arrival_s) * 1e9);
		i = k;
	}
	double ms = -1;
	if (nq) {
		metrics_sort_ns(lat, nq);
		size_t rank = (size_t)ceil((double)nq * pct / 100);
		ms = lat[(rank ? rank : 1) - 1] * 1e-6;
	}
	free(lat);
	return ms;
}

/* An LLM server's constraints: TTFT and TPOT at the percentile, each met or not. */
static void scenario_llm_constraint(FILE *j, FILE *t, const struct study_scenario_def *d, const struct drv_result *res)
{
	int ttft_ok = res->ttft.p99_ms <= d->ttft_ms, tpot_ok = res->tpot.p99_ms <= d->tpot_ms;
	fprintf(j, ",\"ttft_p99_ms\":%.10g,\"tpot_p99_ms\":%.10g,\"ttft_limit_ms\":%.10g,\"tpot_limit_ms\":%.10g,"
	        "\"met\":%s", res->ttft.p99_ms, res->tpot.p99_ms, d->ttft_ms, d->tpot_ms, ttft_ok && tpot_ok ? "true"
	        : "false");
	fprintf(t, "  scenario   %s (MLPerf): TTFT p99 %.1f ms %s %.0f ms, TPOT p99 %.1f ms %s %.0f ms: constraint %s\n",
	        d->name, res->ttft.p99_ms, ttft_ok ? "<=" : ">", d->ttft_ms, res->tpot.p99_ms, tpot_ok ? "<=" : ">",
	        d->tpot_ms, ttft_ok && tpot_ok ? "met" : "missed (lower --rate)");
}

int scenario_report(const struct study_scenario_def *d, const struct drv_result *res, int llm, uint64_t warmup,
                    double sla_ms, char **json, char **text)
{
	size_t jn, tn;
	FILE *j = open_memstream(json, &jn), *t = open_memstream(text, &tn);
	if (!j || !t) {
		if (j)
			fclose(j);
		if (t)
			fclose(t);
		return -1;
	}
	fputs("\"scenario\":{\"name\":", j);
	json_write_string(j, d->name);
	fprintf(j, ",\"source\":\"MLPerf Inference rules (inference_rules.adoc) sections 3 and 4.1\"");
	if (d->id == SCN_OFFLINE) {
		/* the run's own output_tokens_per_s (docs/METRICS.md): MLPerf's offline metric for an LLM */
		double tok = llm && res->measured_span_s > 0 ? (double)res->output_tokens / res->measured_span_s : 0;
		fprintf(j, ",\"throughput_rps\":%.10g", res->throughput_rps);
		if (llm)
			fprintf(j, ",\"output_tokens_per_s\":%.10g", tok);
		fprintf(t, "  scenario   offline (MLPerf): every request sent at 0 s; throughput %.1f req/s", res->throughput_rps);
		if (llm)
			fprintf(t, ", %.0f output tokens/s", tok);
		fputc('\n', t);
	} else if (d->id == SCN_SINGLE_STREAM) {
		fprintf(j, ",\"p90_latency_ms\":%.10g,\"throughput_rps\":%.10g", res->summary.p90_ms, res->throughput_rps);
		fprintf(t, "  scenario   single-stream (MLPerf): p90 latency %.3f ms, one query at a time (%.1f queries/s)\n",
		        res->summary.p90_ms, res->throughput_rps);
	} else if (d->id == SCN_MULTI_STREAM) {
		double p99 = scenario_query_latency_ms(res->rows, res->nrows, SCN_MULTI_STREAM_SAMPLES, warmup, 99);
		fprintf(j, ",\"samples_per_query\":%d,\"p99_query_latency_ms\":", SCN_MULTI_STREAM_SAMPLES);
		if (p99 >= 0)
			fprintf(j, "%.10g", p99);
		else
			fputs("null", j);
		if (p99 >= 0)
			fprintf(t, "  scenario   multi-stream (MLPerf): p99 latency of a query of %d samples %.3f ms\n",
			        SCN_MULTI_STREAM_SAMPLES, p99);
		else
			fprintf(t, "  scenario   multi-stream (MLPerf): no whole query of %d samples measured (raise --requests)\n",
			        SCN_MULTI_STREAM_SAMPLES);
	} else if (llm) {
		scenario_llm_constraint(j, t, d, res);
	} else {                     /* a node-level server: MLPerf's constraint is the benchmark's; here --sla */
		int ok = res->summary.p99_ms <= sla_ms;
		fprintf(j, ",\"p99_latency_ms\":%.10g,\"latency_limit_ms\":%.10g,\"met\":%s", res->summary.p99_ms, sla_ms,
		        ok ? "true" : "false");
		fprintf(t, "  scenario   server (MLPerf): p99 latency %.3f ms %s --sla %g ms: constraint %s\n",
		        res->summary.p99_ms, ok ? "<=" : ">", sla_ms, ok ? "met" : "missed (lower --rate)");
	}
	fputc('}', j);
	int bad = ferror(j) || ferror(t);
	bad |= fclose(j) != 0;
	bad |= fclose(t) != 0;
	if (bad) {
		free(*json);
		free(*text);
		*json = *text = NULL;
		return -1;
	}
	return 0;
}
