/* sim/cli/report.c: formats a run's summary. Numbers are printed with %.10g:
 * enough digits to compare runs, and identical text for identical doubles,
 * which is what the determinism check compares. */
#include <math.h>
#include <string.h>
#include <stdlib.h>
#include <stdint.h>
#include "../../util/json.h"
#include "report_metrics.h"
#include "../../hwmodels/gpu_moe.h"
#include "../../hwmodels/gpu_measured.h"

struct report_tail report_tail(const struct report_run *r)
{
	struct report_tail t = {
		.min_p99 = metrics_tail_min_requests(0.99, 0, METRICS_TAIL_CONFIDENCE),
		.min_p999 = metrics_tail_min_requests(0.999, 0, METRICS_TAIL_CONFIDENCE),
	};
	t.p99 = r->res->summary.count >= t.min_p99;
	t.p999 = r->res->summary.count >= t.min_p999;
	return t;
}

/* "overload_window": null, or the window where the queue grew (util/overload.h), then a comma. */
static void report_overload_json(FILE *f, const struct ovl_found *o)
{
	if (!o->flagged) {
		fputs("\"overload_window\":null,", f);
		return;
	}
	fprintf(f, "\"overload_window\":{\"start_s\":%.10g,\"end_s\":%.10g,\"flagged_s\":%.10g,\"queue_floor_from\":%llu,"
	        "\"queue_floor_to\":%llu,\"window_arrivals\":%llu},", o->start_ns * 1e-9, o->end_ns * 1e-9,
	        o->flagged_ns * 1e-9, (unsigned long long)o->floor_from, (unsigned long long)o->floor_to,
	        (unsigned long long)o->window_arrivals);
}

/* Whether an iteration of this LLM run may run more tokens than its measured GPU's profile holds. */
static int report_may_extrapolate(const struct report_run *r)
{
	return r->hw_measured_tokens && (!r->iter_token_budget || r->iter_token_budget > r->hw_measured_tokens);
}

/* An LLM run's iterations: the tokens they ran on average. */
static double report_iter_mean_tokens(const struct drv_result *res)
{
	return res->tasks ? (double)res->iter_tokens / (double)res->tasks : 0.0;
}

/* A policy statistic by name (0 when the policy reports none). */
static double report_policy_stat(const struct drv_result *res, const char *name)
{
	for (size_t i = 0; i < res->npolicy_stats; i++)
		if (strcmp(res->policy_stats[i].name, name) == 0)
			return res->policy_stats[i].value;
	return 0;
}

/* DESIGN.md 3b: the token figures of a run whose model has decode steps. */
static void report_llm_json(FILE *f, const struct drv_result *res)
{
	const struct metrics_summary *t = &res->ttft, *p = &res->tpot;
	fprintf(f, ",\"ttft_ms\":{\"mean\":%.10g,\"p50\":%.10g,\"p90\":%.10g,\"p99\":%.10g,\"max\":%.10g}", t->mean_ms,
	        t->p50_ms, t->p90_ms, t->p99_ms, t->max_ms);
	fprintf(f, ",\"tpot_ms\":{\"mean\":%.10g,\"p50\":%.10g,\"p90\":%.10g,\"p99\":%.10g,\"max\":%.10g}", p->mean_ms,
	        p->p50_ms, p->p90_ms, p->p99_ms, p->max_ms);
	fprintf(f, ",\"itl_ms\":{\"mean\":%.10g,\"p50\":%.10g,\"p90\":%.10g,\"p99\":%.10g,\"max\":%.10g,\"gaps\":%llu}",
	        res->itl_mean_ms, res->itl_p50_ms, res->itl_p90_ms, res->itl_p99_ms, res->itl_max_ms,
	        (unsigned long long)res->itl_count);
	fprintf(f, ",\"goodput_rps\":%.10g,\"preemptions\":%.10g,\"kv_peak_fraction\":%.10g,\"kv_mean_fraction\":%.10g,"
	        "\"iteration_tokens\":%llu", res->goodput_rps, report_policy_stat(res, "preemptions"),
	        report_policy_stat(res, "kv_peak_fraction"), res->kv_mean_fraction, (unsigned long long)res->iter_tokens);
	fprintf(f, ",\"slo_met\":%llu,\"slo_measured\":%llu", (unsigned long long)res->slo_met,
	        (unsigned long long)res->slo_measured);
	if (res->window_arrival_rps > 0)
		fprintf(f, ",\"steady_window\":{\"arrival_rps\":%.10g,\"departure_rps\":%.10g}", res->window_arrival_rps,
		        res->window_departure_rps);
}

/* The per-replica figures of a fleet's run, by name, for the JSON and the
 * database; a disaggregated fleet's replicas have four more (its pool: 1
 * prefill, 2 decode; its KV moves). Returns how many. */
#define REPORT_REPLICA_FIELDS 15
static int report_replica_fields(const struct drv_result *res, uint32_t i, const char *names[REPORT_REPLICA_FIELDS],
                                 double values[REPORT_REPLICA_FIELDS])
{
	const struct fleet_replica_result *p = &res->replicas[i];
	const char *n[REPORT_REPLICA_FIELDS] = { "routed", "completed", "busy_fraction", "mean_outstanding",
	                                         "max_outstanding", "kv_peak_fraction", "kv_mean_fraction", "preemptions",
	                                         "prefix_queried_blocks", "prefix_hit_blocks", "prefix_evictions",
	                                         "pool", "kv_moves", "kv_moved_bytes", "kv_move_ms_mean" };
	double v[REPORT_REPLICA_FIELDS] = { (double)p->routed, (double)p->completed, p->busy_fraction,
	                                    p->mean_outstanding, (double)p->max_outstanding, p->kv_peak_fraction,
	                                    p->kv_mean_fraction, p->preemptions, p->prefix_queried_blocks,
	                                    p->prefix_hit_blocks, p->prefix_evictions, p->pool, (double)p->moves,
	                                    p->moved_bytes, p->moves ? 1e3 * p->move_s / (double)p->moves : 0 };
	for (int k = 0; k < REPORT_REPLICA_FIELDS; k++) {
		names[k] = n[k];
		values[k] = v[k];
	}
	return res->prefill_replicas ? REPORT_REPLICA_FIELDS : REPORT_REPLICA_FIELDS - 4;
}

/* A disaggregated fleet's moves, all together: count, bytes, seconds. */
static void report_moves(const struct drv_result *res, double *moves, double *bytes, double *seconds)
{
	*moves = *bytes = *seconds = 0;
	for (uint32_t i = 0; i < res->prefill_replicas; i++) {
		*moves += (double)res->replicas[i].moves;
		*bytes += res->replicas[i].moved_bytes;
		*seconds += res->replicas[i].move_s;
	}
}

/* A fleet's run: the router, its refresh and each replica's share. */
static void report_fleet_json(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	fputs(",\"fleet\":{\"router\":", f);
	json_write_string(f, res->router);
	fprintf(f, ",\"router_refresh_ms\":%.10g,", r->router_refresh_ms);
	if (res->prefill_replicas) {
		double moves, bytes, seconds;
		report_moves(res, &moves, &bytes, &seconds);
		fprintf(f, "\"disaggregation\":{\"prefill_replicas\":%u,\"decode_replicas\":%u,\"kv_link\":",
		        res->prefill_replicas, res->nreplicas - res->prefill_replicas);
		json_write_string(f, r->kv_link);
		fputs(",\"kv_transfer\":", f);
		json_write_string(f, r->kv_transfer);
		fprintf(f, ",\"kv_moves\":%.10g,\"kv_moved_bytes\":%.10g,\"kv_move_ms_mean\":%.10g,"
		        "\"kv_move_extrapolated\":%s},", moves, bytes, moves ? 1e3 * seconds / moves : 0,
		        res->kv_move_extrapolated ? "true" : "false");
	}
	fputs("\"replicas\":[", f);
	for (uint32_t i = 0; i < res->nreplicas; i++) {
		const char *names[REPORT_REPLICA_FIELDS];
		double values[REPORT_REPLICA_FIELDS];
		int nf = report_replica_fields(res, i, names, values);
		fputs(i ? ",{" : "{", f);
		if (r->replica_hw) {
			fputs("\"hw\":", f);
			json_write_string(f, r->replica_hw[i]->label);
			fputc(',', f);
		}
		for (int k = 0; k < nf; k++)
			fprintf(f, "%s\"%s\":%.10g", k ? "," : "", names[k], values[k]);
		fputc('}', f);
	}
	fputs("]}", f);
}

size_t report_replica_stats(const struct report_run *r, struct results_stat *out, char (*names)[80], size_t max)
{
	const struct drv_result *res = r->res;
	size_t n = 0;
	for (uint32_t i = 0; i < res->nreplicas; i++) {
		const char *field[REPORT_REPLICA_FIELDS];
		double values[REPORT_REPLICA_FIELDS];
		int nf = report_replica_fields(res, i, field, values);
		for (int k = 0; k < nf && n < max; k++, n++) {
			snprintf(names[n], sizeof names[n], "replica.%u.%s", i, field[k]);
			out[n] = (struct results_stat){ names[n], values[k] };
		}
	}
	return n;
}

char *report_json(const struct report_run *r, int with_run_fields)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	const struct drv_result *res = r->res;
	const struct metrics_summary *s = &res->summary;
	fputs("{\"policy\":", f);
	json_write_string(f, r->policy);
	fputs(",\"model\":", f);
	json_write_string(f, r->model);
	fputs(",\"hw\":", f);
	json_write_string(f, r->hw);
	if (r->engine_line) {
		fputs(",\"engine\":", f);
		json_write_string(f, r->engine_line);
	}
	fprintf(f, ",\"rate_rps\":%.10g,\"seed\":%llu,", r->rate_rps, (unsigned long long)r->seed);
	fprintf(f, "\"requests\":%llu,\"completed\":%llu,\"measured\":%llu,\"warmup\":%llu,"
	        "\"throughput_rps\":%.10g,",
	        (unsigned long long)res->issued, (unsigned long long)res->completed,
	        (unsigned long long)s->count, (unsigned long long)r->warmup, res->throughput_rps);
	fprintf(f, "\"latency_ms\":{\"mean\":%.10g,\"p50\":%.10g,\"p90\":%.10g,\"p95\":%.10g,"
	        "\"p99\":%.10g,\"p999\":%.10g,\"max\":%.10g,\"min\":%.10g},",
	        s->mean_ms, s->p50_ms, s->p90_ms, s->p95_ms, s->p99_ms, s->p999_ms, s->max_ms, s->min_ms);
	fprintf(f, "\"queue_ms\":{\"mean\":%.10g,\"p99\":%.10g},\"sla_ms\":%.10g,"
	        "\"sla_violation_rate\":%.10g,\"mean_batch\":%.10g,\"events\":%llu,\"tasks\":%llu,",
	        s->queue_mean_ms, s->queue_p99_ms, r->sla_ms, s->sla_violation_rate, res->mean_batch,
	        (unsigned long long)res->events, (unsigned long long)res->tasks);
	fprintf(f, "\"saturated\":%s,\"cold_starts\":%llu,", report_saturated(r) ? "true" : "false",
	        (unsigned long long)res->cold_starts);
	report_overload_json(f, &res->overload);
	if (r->concurrency)
		fprintf(f, "\"concurrency\":%u,\"think_time_ms\":%.10g,", r->concurrency, r->think_ms);
	fprintf(f, "\"workers\":%u,\"max_batch\":%u,\"arrival_cv\":", r->workers, r->max_batch);
	if (isnan(r->arrival_cv))
		fputs("null", f);       /* a trace's arrivals have no cv of ours */
	else
		fprintf(f, "%.10g", r->arrival_cv);
	fprintf(f, ",\"sim_time_s\":%.10g,\"busy_fraction\":%.10g,", res->sim_end_s, res->busy_fraction);
	study_serving_json(f, r->serving);
	if (res->llm) {
		report_llm_json(f, res);
		report_tokens_json(f, r);
		fprintf(f, ",\"dropped_over_context\":%llu,\"iteration_mean_tokens\":%.10g,\"iteration_token_budget\":%u",
		        (unsigned long long)r->dropped_over_context, report_iter_mean_tokens(res), r->iter_token_budget);
		if (r->ttft_slo_ms > 0 || r->tpot_slo_ms > 0)
			fprintf(f, ",\"slo_attainment\":%.10g", report_slo_attainment(res));
		if (r->hw_measured_tokens) {
			fprintf(f, ",\"hw_measured_tokens\":%u,\"hw_may_extrapolate\":%s", r->hw_measured_tokens,
			        report_may_extrapolate(r) ? "true" : "false");
			if (r->hw_error_median_pct >= 0)
				fprintf(f, ",\"hw_layer_error_pct\":{\"median\":%.4g,\"p90\":%.4g}", r->hw_error_median_pct,
				        r->hw_error_p90_pct);
		}
	}
	if (r->moe && r->moe->layers)
		fprintf(f, ",\"moe\":{\"routing\":\"%s\",\"ep\":%u,\"layers_drawn\":%llu}",
		        strcmp(r->moe_routing, "uniform") == 0 ? "uniform" : "file", r->moe_ep,
		        (unsigned long long)r->moe->layers);
	if (r->hw_predicted)
		fprintf(f, ",\"hw_gemm_shapes\":%zu,\"hw_gemm_shapes_extrapolated\":%zu", r->hw_predicted->nshapes,
		        r->hw_predicted->noutside);
	if (res->nreplicas)
		report_fleet_json(f, r);
	report_load_json(f, r);
	struct report_tail tail = report_tail(r);
	fprintf(f, ",\"tail_supported\":{\"p99\":%s,\"p999\":%s,\"min_requests_p99\":%llu,"
	        "\"min_requests_p999\":%llu}", tail.p99 ? "true" : "false", tail.p999 ? "true" : "false",
	        (unsigned long long)tail.min_p99, (unsigned long long)tail.min_p999);
	fprintf(f, ",\"policy_stats\":{");
	struct results_stat st[POL_MAX_STATS + 256];
	char names[POL_MAX_STATS + 256][80];
	size_t n = report_stats(r, st, names, sizeof st / sizeof st[0]);
	for (size_t i = 0; i < n; i++) {
		fputs(i ? "," : "", f);
		json_write_string(f, st[i].key);
		fprintf(f, ":%.10g", st[i].value);
	}
	fputc('}', f);
	if (r->extra_json && *r->extra_json)
		fprintf(f, ",%s", r->extra_json);
	if (with_run_fields) {
		fprintf(f, ",\"wall_s\":%.6f,", r->wall_s);
		if (r->run_id >= 0)
			fprintf(f, "\"run_id\":%lld", (long long)r->run_id);
		else
			fprintf(f, "\"run_id\":null");
	}
	fputc('}', f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

size_t report_stats(const struct report_run *r, struct results_stat *out, char (*names)[80], size_t max)
{
	const struct drv_result *res = r->res;
	size_t n = 0;
	if (n < max)
		out[n++] = (struct results_stat){ "tasks", (double)res->tasks };
	for (size_t i = 0; i < res->npolicy_stats && n < max; i++)
		out[n++] = (struct results_stat){ res->policy_stats[i].name, res->policy_stats[i].value };
	if (res->graph_tasks && n < max)
		out[n++] = (struct results_stat){ "mean_batch.graph", (double)res->graph_members / res->graph_tasks };
	if (r->moe && r->moe->layers) {    /* a mixture of experts: its routing, per MoE layer drawn */
		const struct gpu_moe_stats *m = r->moe;
		double layers = (double)m->layers;
		const struct results_stat moe[] = {
			{ "moe.experts_reached.mean", m->reached_sum / layers }, { "moe.tokens_per_expert.mean", m->tokens_sum / layers },
			{ "moe.imbalance.mean", m->imbalance_sum / layers }, { "moe.imbalance.max", m->imbalance_max },
			{ "moe.rank_imbalance.mean", m->rank_imbalance_sum / layers },
		};
		for (size_t i = 0; i < sizeof moe / sizeof moe[0] && n < max; i++)
			out[n++] = moe[i];
	}
	if (res->llm) {
		/* the token figures of DESIGN.md 3b, stored with the run (ms; goodput in req/s) */
		const struct results_stat llm[] = {
			{ "ttft_ms.mean", res->ttft.mean_ms }, { "ttft_ms.p50", res->ttft.p50_ms },
			{ "ttft_ms.p90", res->ttft.p90_ms }, { "ttft_ms.p99", res->ttft.p99_ms },
			{ "tpot_ms.mean", res->tpot.mean_ms }, { "tpot_ms.p50", res->tpot.p50_ms },
			{ "tpot_ms.p90", res->tpot.p90_ms }, { "tpot_ms.p99", res->tpot.p99_ms },
			{ "itl_ms.p50", res->itl_p50_ms }, { "itl_ms.p99", res->itl_p99_ms },
			{ "goodput_rps", res->goodput_rps }, { "kv_mean_fraction", res->kv_mean_fraction },
			{ "slo_attainment", report_slo_attainment(res) }, { "iteration_mean_tokens", report_iter_mean_tokens(res) },
		};
		for (size_t i = 0; i < sizeof llm / sizeof llm[0] && n < max; i++)
			out[n++] = llm[i];
	}
	for (uint32_t t = 0; t < res->nnodes && n < max; t++) {
		if (!res->node_tasks[t])
			continue;
		snprintf(names[n], sizeof names[n], "mean_batch.%s", r->model_def->nodes[t].name);
		out[n] = (struct results_stat){ names[n], (double)res->node_cells[t] / res->node_tasks[t] };
		n++;
	}
	return n;
}

/* The spread of replicas [first, first + n)'s shares: routed, busy, KV peak. */
static void report_pool_spread(const struct drv_result *res, uint32_t first, uint32_t n, char *buf, size_t len)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	double busy_lo = 1e300, busy_hi = 0, kv_hi = 0;
	for (uint32_t i = first; i < first + n; i++) {
		const struct fleet_replica_result *p = &res->replicas[i];
		lo = p->routed < lo ? p->routed : lo;
		hi = p->routed > hi ? p->routed : hi;
		busy_lo = p->busy_fraction < busy_lo ? p->busy_fraction : busy_lo;
		busy_hi = p->busy_fraction > busy_hi ? p->busy_fraction : busy_hi;
		kv_hi = p->kv_peak_fraction > kv_hi ? p->kv_peak_fraction : kv_hi;
	}
	snprintf(buf, len, "%llu to %llu requests each, iterating %.1f%% to %.1f%% of the time, KV peak up to %.1f%%",
	         (unsigned long long)lo, (unsigned long long)hi, 100.0 * busy_lo, 100.0 * busy_hi, 100.0 * kv_hi);
}

/* A fleet's line: the router and the spread of the replicas' shares (a disaggregated one's per pool, and its moves). */
static void report_fleet_text(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	char refresh[48] = "the state now", spread[160];
	if (r->router_refresh_ms > 0)
		snprintf(refresh, sizeof refresh, "state scraped every %.6g ms", r->router_refresh_ms);
	if (!res->prefill_replicas) {
		report_pool_spread(res, 0, res->nreplicas, spread, sizeof spread);
		fprintf(f, "  fleet      %u replicas behind %s (%s): %s\n", res->nreplicas, res->router, refresh, spread);
		return;
	}
	uint32_t np = res->prefill_replicas, nd = res->nreplicas - np;
	report_pool_spread(res, 0, np, spread, sizeof spread);
	fprintf(f, "  prefill    %u replica%s behind %s (%s): %s\n", np, np == 1 ? "" : "s", res->router, refresh, spread);
	report_pool_spread(res, np, nd, spread, sizeof spread);
	fprintf(f, "  decode     %u replica%s: %s\n", nd, nd == 1 ? "" : "s", spread);
	double moves, bytes, seconds;
	report_moves(res, &moves, &bytes, &seconds);
	fprintf(f, "  KV moves   %.0f (%.3g GB), %.3g ms each on average from prompt's end to decode replica, %s, "
	        "%s%s\n", moves, bytes * 1e-9, moves ? 1e3 * seconds / moves : 0, r->kv_transfer, r->kv_link,
	        res->kv_move_extrapolated ? "; some moves larger than any measured message (extrapolated)" : "");
}

/* An LLM run's lines: token latencies, SLOs, KV cache, prefixes, fleet, drops, extrapolation. */
static void report_llm_text(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	fprintf(f, "  TTFT       mean %.1f ms   p50 %.1f   p90 %.1f   p99 %.1f\n", res->ttft.mean_ms, res->ttft.p50_ms,
	        res->ttft.p90_ms, res->ttft.p99_ms);
	fprintf(f, "  TPOT       mean %.1f ms   p50 %.1f   p90 %.1f   p99 %.1f\n", res->tpot.mean_ms, res->tpot.p50_ms,
	        res->tpot.p90_ms, res->tpot.p99_ms);
	fprintf(f, "  ITL        mean %.1f ms   p50 %.1f   p90 %.1f   p99 %.1f   max %.1f (gaps between tokens)\n",
	        res->itl_mean_ms, res->itl_p50_ms, res->itl_p90_ms, res->itl_p99_ms, res->itl_max_ms);
	if (r->ttft_slo_ms > 0 || r->tpot_slo_ms > 0) {
		char targets[96] = "";
		if (r->ttft_slo_ms > 0)
			snprintf(targets, sizeof targets, "TTFT %.6g ms", r->ttft_slo_ms);
		if (r->tpot_slo_ms > 0)
			snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%sTPOT %.6g ms",
			         r->ttft_slo_ms > 0 ? ", " : "", r->tpot_slo_ms);
		fprintf(f, "  SLOs       %s: %.2f%% of requests meet them, goodput %.2f req/s   %.0f preemptions\n",
		        targets, 100.0 * report_slo_attainment(res), res->goodput_rps,
		        report_policy_stat(res, "preemptions"));
	} else {
		fprintf(f, "  preempted  %.0f times (no --ttft-slo or --tpot-slo: no goodput)\n",
		        report_policy_stat(res, "preemptions"));
	}
	fprintf(f, "  KV cache   %.0f blocks: peak %.1f%%, mean over time %.1f%%\n", report_policy_stat(res, "kv_blocks"),
	        100.0 * report_policy_stat(res, "kv_peak_fraction"), 100.0 * res->kv_mean_fraction);
	double asked = report_policy_stat(res, "prefix_queried_blocks"), hit = report_policy_stat(res, "prefix_hit_blocks");
	if (asked > 0)   /* an evicted block was free, still holding a finished request's prefix: the peak counts none */
		fprintf(f, "  prefixes   %.0f of %.0f prompt blocks found cached (%.1f%%), %.0f cached blocks evicted to make "
		        "room (free blocks that still held finished requests' prefixes, not in the KV peak)\n", hit, asked,
		        100.0 * hit / asked, report_policy_stat(res, "prefix_evictions"));
	if (res->nreplicas)
		report_fleet_text(f, r);
	if (r->dropped_over_context && !r->load)   /* the default load's lengths line says it */
		fprintf(f, "  dropped    %llu trace requests beyond the model's context (--over-context=drop)\n",
		        (unsigned long long)r->dropped_over_context);
	if (report_may_extrapolate(r)) {
		char budget[32] = "any number of";
		if (r->iter_token_budget)
			snprintf(budget, sizeof budget, "%u", r->iter_token_budget);
		fprintf(f, "  hw         measured iterations of up to %u tokens; this run's may run %s tokens, priced "
		        "beyond the last row along its slope (extrapolated)\n", r->hw_measured_tokens, budget);
	}
}

/* A mixture of experts' line: how its tokens spread over the experts (and GPUs, with --ep). */
static void report_moe_text(FILE *f, const struct report_run *r)
{
	const struct gpu_moe_stats *m = r->moe;
	double n = (double)m->layers;
	fprintf(f, "  experts    %.2f reached a MoE layer, %.1f tokens each; imbalance (max/mean tokens an expert) "
	        "mean %.3f, max %.3f", m->reached_sum / n, m->tokens_sum / n, m->imbalance_sum / n, m->imbalance_max);
	if (r->moe_ep > 1)
		fprintf(f, "; busiest of %u GPUs %.3f x the mean", r->moe_ep, m->rank_imbalance_sum / n);
	fprintf(f, " (routing %s, %llu layers drawn; GEMMs predicted, error band from the predictor's "
	        "leave-one-model-out p90)\n", r->moe_routing, (unsigned long long)m->layers);
}

void report_text(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	const struct metrics_summary *s = &res->summary;
	char arrivals[48];
	if (isnan(r->arrival_cv))
		snprintf(arrivals, sizeof arrivals, "from the trace");
	else
		snprintf(arrivals, sizeof arrivals, "cv %.3g", r->arrival_cv);
	char devices[256];
	study_serving_text(r->serving, devices, sizeof devices);
	if (r->concurrency)
		fprintf(f, "simbatch%s: policy %s, model %s on %s, %s, %u closed-loop clients (think %.6g ms), seed %llu\n",
		        r->live ? " live" : "", r->policy, r->model, r->hw, devices, r->concurrency, r->think_ms,
		        (unsigned long long)r->seed);
	else
		fprintf(f, "simbatch%s: policy %s, model %s on %s, %s, %.6g req/s offered (%s), seed %llu\n",
		        r->live ? " live" : "", r->policy, r->model, r->hw, devices, r->rate_rps, arrivals,
		        (unsigned long long)r->seed);
	report_load_text(f, r);
	if (r->engine_line)
		fprintf(f, "  engine     %s\n", r->engine_line);
	fprintf(f, "  requests   %llu completed, %llu measured (warm-up %llu), %.1f s %s\n",
	        (unsigned long long)res->completed, (unsigned long long)s->count,
	        (unsigned long long)r->warmup, res->sim_end_s, r->live ? "on the wall clock (live)" : "simulated");
	struct report_tail tail = report_tail(r);
	int ms = res->llm ? 1 : 3;   /* an LLM request lasts seconds: 0.1 ms is past what its model resolves */
	fprintf(f, "  latency    mean %.*f ms   p50 %.*f   p90 %.*f   p99 %.*f%s   p99.9 %.*f%s   max %.*f\n", ms,
	        s->mean_ms, ms, s->p50_ms, ms, s->p90_ms, ms, s->p99_ms, tail.p99 ? "" : "*", ms, s->p999_ms,
	        tail.p999 ? "" : "*", ms, s->max_ms);
	if (!tail.p99 || !tail.p999)
		fprintf(f, "             * %llu measured requests are too few to support this tail: a p99 needs %llu, "
		        "a p99.9 %llu (MLPerf early stopping, 99%% confidence)\n", (unsigned long long)s->count,
		        (unsigned long long)tail.min_p99, (unsigned long long)tail.min_p999);
	fprintf(f, "  queueing   mean %.*f ms   p99 %.*f\n", ms, s->queue_mean_ms, ms, s->queue_p99_ms);
	if (res->llm) {
		/* an iteration runs whenever any request is in flight: what fills it says how loaded the device is */
		char budget[64] = "";
		if (r->iter_token_budget)
			snprintf(budget, sizeof budget, ", filling %.2g%% of the %u-token budget",
			         100.0 * report_iter_mean_tokens(res) / r->iter_token_budget, r->iter_token_budget);
		fprintf(f, "  throughput %.1f req/s   iterating %.1f%% of the time; an iteration %.1f tokens on average%s, "
		        "%.2f requests (max %u)\n", res->throughput_rps, 100.0 * res->busy_fraction,
		        report_iter_mean_tokens(res), budget, res->mean_batch, r->max_batch);
		report_tokens_text(f, r);
	} else {
		fprintf(f, "  throughput %.1f req/s   device busy %.1f%%   mean batch %.2f (max %u)\n",
		        res->throughput_rps, 100.0 * res->busy_fraction, res->mean_batch, r->max_batch);
	}
	/* an LLM's requests last seconds: the node models' 100 ms default says nothing of them */
	if (!res->llm || r->sla_given)
		fprintf(f, "  SLA %.6g ms: %.2f%% of requests late\n", r->sla_ms, 100.0 * s->sla_violation_rate);
	if (res->llm)
		report_llm_text(f, r);
	if (r->moe && r->moe->layers)
		report_moe_text(f, r);
	if (r->hw_predicted)
		fprintf(f, "  hw         GEMMs predicted from %s's measured GEMMs (model-info gives the predictor's error); "
		        "%zu of %zu shapes outside the measured M, K or N, extrapolated%s%s\n", r->hw_predicted->profile->gpu,
		        r->hw_predicted->noutside, r->hw_predicted->nshapes, r->hw_predicted->noutside ? ": " : "",
		        r->hw_predicted->outside);
	if (res->cold_starts)
		fprintf(f, "  cold       %llu tasks refilled weights lost while their device idled (--hw cold-start)\n",
		        (unsigned long long)res->cold_starts);
	report_overload_text(f, r);
	fprintf(f, "  %llu events in %.3f s wall (%.2f M requests/s)", (unsigned long long)res->events,
	        r->wall_s, r->wall_s > 0 ? res->completed / r->wall_s / 1e6 : 0.0);
	if (r->run_id >= 0)
		fprintf(f, ", stored as run %lld", (long long)r->run_id);
	fputc('\n', f);
}
