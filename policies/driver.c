/* policies/driver.c: drives one policy through a run (driver.h). */
#include "driver.h"
#include "../util/grow.h"
#include "../util/errkind.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int drv_init(struct pol_driver *d, const struct drv_config *c, char *err, size_t errlen)
{
	memset(d, 0, sizeof *d);
	d->c = *c;
	const struct mdl_model *m = c->env.model;
	if (c->env.workers < 1 || c->env.max_batch < 1) {
		snprintf(err, errlen, "workers and max batch must be at least 1");
		return -1;
	}
	ovl_init(&d->overload, c->env.workers);
	uint64_t expect = c->expected_requests > c->warmup ? c->expected_requests - c->warmup : 1;
	d->metrics = c->histogram_quantiles ? metrics_create_histogram(c->env.sla_ns) : metrics_create(expect);
	d->node_tasks = calloc(m->nnodes ? m->nnodes : 1, sizeof *d->node_tasks);
	d->node_cells = calloc(m->nnodes ? m->nnodes : 1, sizeof *d->node_cells);
	d->run_tasks_step = calloc(m->nnodes + 1, sizeof *d->run_tasks_step);
	d->run_cells_step = calloc(m->nnodes + 1, sizeof *d->run_cells_step);
	if (m->is_llm != (c->policy->serves_llm != 0)) {
		snprintf(err, errlen, m->is_llm ? "policy %s batches nodes; model %s is an LLM, served by iterations "
		         "(policies static, continuous, chunked, slo)" : "policy %s serves LLMs; model %s is not one",
		         c->policy->name, m->name);
		goto fail;
	}
	if (m->is_llm) {
		uint64_t measured = c->expected_requests > c->warmup ? c->expected_requests - c->warmup : 0;
		d->win_ids[0] = c->warmup + measured / 4;
		d->win_ids[1] = c->warmup + 3 * measured / 4;
		d->win_ns[0] = d->win_ns[1] = -1;
		int64_t ttft_over = c->env.ttft_slo_ns ? c->env.ttft_slo_ns : INT64_MAX;   /* as drv_finish asks */
		int64_t tpot_over = c->env.tpot_slo_ns ? c->env.tpot_slo_ns : INT64_MAX;
		d->ttft = c->histogram_quantiles ? metrics_create_histogram(ttft_over) : metrics_create(expect);
		d->tpot = c->histogram_quantiles ? metrics_create_histogram(tpot_over) : metrics_create(expect);
		d->itl = calloc(1, sizeof *d->itl);
		if (!d->ttft || !d->tpot || !d->itl) {
			err_memory(err, errlen, "out of memory setting up the run");
			goto fail;
		}
	}
	d->st = calloc(1, c->policy->state_size ? c->policy->state_size : 1);
	if (!d->metrics || !d->node_tasks || !d->node_cells || !d->run_tasks_step || !d->run_cells_step || !d->st) {
		err_memory(err, errlen, "out of memory setting up the run");
		goto fail;
	}
	/* the policy reads its knobs from a set over its own table: every default unless the caller gave one */
	if (!c->env.params) {
		opt_defaults(&d->default_params, c->policy->params, c->policy->nparams);
		d->c.env.params = &d->default_params;
	}
	if (c->replicas > 1) {
		/* a fleet: each replica its own policy state, behind the router (fleet.h); st stays unused */
		if (!m->is_llm || !c->router) {
			snprintf(err, errlen, "a fleet of replicas needs an LLM model and a router");
			goto fail;
		}
		d->fleet = calloc(1, sizeof *d->fleet);
		if (!d->fleet) {
			err_memory(err, errlen, "out of memory setting up the run");
			goto fail;
		}
		if (fleet_init(d->fleet, c->policy, c->router, c->router_params, c->replicas, c->router_refresh_ns, &d->c.env, c->replica_env,
		               c->disagg, err, errlen) != 0) {
			free(d->fleet);
			d->fleet = NULL;
			goto fail;
		}
		return 0;
	}
	if (c->policy->init(d->st, &d->c.env, err, errlen) != 0) {
		free(d->st);
		d->st = NULL;
		goto fail;
	}
	return 0;
fail:
	drv_fini(d);
	return -1;
}

void drv_fini(struct pol_driver *d)
{
	if (d->fleet) {
		fleet_fini(d->fleet);
		free(d->fleet);
	} else if (d->st && d->c.policy->fini) {
		d->c.policy->fini(d->st);
	}
	free(d->st);
	metrics_destroy(d->metrics);
	metrics_destroy(d->ttft);
	metrics_destroy(d->tpot);
	free(d->itl);
	free(d->node_tasks);
	free(d->node_cells);
	free(d->run_tasks_step);
	free(d->run_cells_step);
	free(d->rows);
	memset(d, 0, sizeof *d);
}

int drv_runnable(const struct mdl_model *m, uint64_t id, uint32_t input_len, uint32_t output_len, char *err,
                 size_t errlen)
{
	if (mdl_chain_length(m, input_len, output_len) > 0)
		return 1;
	snprintf(err, errlen, "request %llu (input_len %u, output_len %u) gives model %s no node to run",
	         (unsigned long long)id, input_len, output_len, m->name);
	return 0;
}

/* A policy that broke the policy.h contract: -1 with err. */
int drv_broken(const struct pol_driver *d, char *err, size_t errlen, const char *fmt, ...)
{
	int n = snprintf(err, errlen, "policy %s broke its contract: ", d->c.policy->name);
	if (n >= 0 && (size_t)n < errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -1;
}

int drv_out_of_memory(char *err, size_t errlen, const char *what)
{
	err_memory(err, errlen, "out of memory %s", what);
	return -1;
}

int drv_keep_row(struct pol_driver *d, const struct pol_request *r, int64_t finish_ns, char *err, size_t errlen)
{
	if (r->id >= d->rows_cap) {
		size_t kept = d->rows_cap;
		if (r->id == UINT64_MAX || GROW(d->rows, d->rows_cap, (size_t)r->id + 1, 1024) != 0)
			return drv_out_of_memory(err, errlen, "for per-request rows");
		for (size_t i = kept; i < d->rows_cap; i++)
			d->rows[i].id = UINT64_MAX;
	}
	d->rows[r->id] = (struct drv_request_row){
		.id = r->id, .arrival_s = r->arrival_ns * 1e-9, .start_s = r->first_start_ns * 1e-9,
		.finish_s = finish_ns * 1e-9, .input_len = r->input_len, .output_len = r->output_len,
		.first_token_s = r->first_token_ns >= 0 ? r->first_token_ns * 1e-9 : -1,
	};
	return 0;
}

/* An LLM request's token figures (DESIGN.md 3b): time to first token from
 * arrival; time per output token, (finish - first token) / (tokens - 1),
 * for requests of two tokens or more; and whether it met both SLOs. */
int drv_record_tokens(struct pol_driver *d, const struct pol_request *r, int64_t finish_ns)
{
	int64_t ttft_ns = r->first_token_ns - r->arrival_ns, tpot_ns = 0;
	if (metrics_record(d->ttft, ttft_ns, 0) != 0)
		return -1;
	if (r->output_len > 1) {
		tpot_ns = (finish_ns - r->first_token_ns) / (int64_t)(r->output_len - 1);
		if (metrics_record(d->tpot, tpot_ns, 0) != 0)
			return -1;
		d->user_tokens_per_s_sum += tpot_ns > 0 ? 1e9 / (double)tpot_ns : 0.0;
	}
	const struct pol_env *env = &d->c.env;
	int good = (!env->ttft_slo_ns || ttft_ns <= env->ttft_slo_ns) && (!env->tpot_slo_ns || tpot_ns <= env->tpot_slo_ns);
	d->good += good;
	d->input_tokens += r->input_len;
	d->output_tokens += r->output_len;
	d->good_output_tokens += good ? r->output_len : 0;
	/* completions come in time order: once the window's end has arrived, a later one is past it */
	d->win_departures += d->win_ns[0] >= 0 && finish_ns >= d->win_ns[0] && (d->win_ns[1] < 0 || finish_ns <= d->win_ns[1]);
	return 0;
}

/* An iteration's members that emit their second token or a later one: the
 * gap since their previous token (measured requests only). Members whose
 * last token came at the same instant (most: the device's previous
 * iteration) share a gap, entered once with their count. */
void drv_record_gaps(struct pol_driver *d, const struct pol_task *t)
{
	int64_t gap = 0;
	uint32_t times = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		const struct pol_request *r = t->reqs[i];
		if (r->next_node > 0 && r->id >= d->c.warmup && pol_iter_emits(t, i)) {
			int64_t g = t->end_ns - r->last_token_ns;
			if (times && g == gap) {
				times++;
				continue;
			}
			if (times)
				metrics_hist_add_n(d->itl, gap, times);
			gap = g;
			times = 1;
		}
	}
	if (times)
		metrics_hist_add_n(d->itl, gap, times);
}

uint32_t drv_decode_run(const struct pol_driver *d, uint32_t device, const struct pol_task *t, uint32_t k_cap,
                        uint64_t *held)
{
	if (!d->c.policy->decode_run || t->kind != POL_TASK_ITER)
		return 1;
	/* the policy first: most iterations of a loaded device have requests waiting, which it sees at once */
	uint64_t k = d->fleet ? fleet_decode_run(d->fleet, device, t, k_cap, held)
	                      : d->c.policy->decode_run(d->st, device, t, k_cap, held);
	for (uint32_t i = 0; i < t->nreq && k > 1; i++) {
		const struct pol_request *r = t->reqs[i];
		/* a decode: one token after its first; the run ends with the iteration of its last */
		if (t->tokens[i] != 1 || r->next_node == 0 || !pol_iter_emits(t, i))
			return 1;
		if (r->chain_len - r->next_node < k)
			k = r->chain_len - r->next_node;
	}
	return k > 1 ? (uint32_t)k : 1;
}

void drv_decode_advance(struct pol_driver *d, struct pol_task *t, uint32_t k, const int64_t *ends, uint64_t *held)
{
	/* the members' tokens of iterations 1..k-1: the first's gaps as any iteration's, then each
	 * iteration's length, the gap of every member (all emit) */
	t->end_ns = ends[0];
	drv_record_gaps(d, t);
	uint32_t measured = 0;
	for (uint32_t i = 0; i < t->nreq; i++)
		measured += t->reqs[i]->id >= d->c.warmup;
	for (uint32_t j = 1; j + 1 < k && measured; j++)
		metrics_hist_add_n(d->itl, ends[j] - ends[j - 1], measured);
	for (uint32_t i = 0; i < t->nreq; i++) {
		t->reqs[i]->next_node += k - 1;
		t->reqs[i]->last_token_ns = ends[k - 2];
	}
	if (d->fleet)
		fleet_decode_advance(d->fleet, t->device, t, k, ends, held);
	else
		d->c.policy->decode_advance(d->st, t->device, t, k, held);
	int64_t start = t->start_ns;
	for (uint32_t j = 0; j + 1 < k; j++) {
		u128_add_mul(&d->kv_block_ns, held[j], (uint64_t)(ends[j] - start));
		start = ends[j];
	}
	d->busy_ns += ends[k - 2] - t->start_ns;
	d->tasks += k - 1;
	d->task_members += (uint64_t)(k - 1) * t->nreq;
	d->iter_tokens += (uint64_t)(k - 1) * t->nreq;
	t->start_ns = ends[k - 2];
	t->end_ns = ends[k - 1];
}

int drv_finish(struct pol_driver *d, const struct drv_run_end *end, struct drv_result *res, char *err,
               size_t errlen)
{
	memset(res, 0, sizeof *res);
	const struct mdl_model *m = d->c.env.model;
	res->issued = d->arrived;
	res->completed = d->completed;
	res->events = end->events;
	res->tasks = d->tasks;
	res->task_members = d->task_members;
	res->cold_starts = end->cold_starts;
	res->mean_batch = d->tasks ? (double)d->task_members / (double)d->tasks : 0.0;
	res->sim_end_s = end->end_ns * 1e-9;
	int64_t span_ns = d->last_finish_ns - d->first_measured_arrival_ns;
	res->throughput_rps = d->measured && span_ns > 0 ? (double)d->measured / (span_ns * 1e-9) : 0.0;
	res->busy_fraction = end->end_ns > 0 ? (double)d->busy_ns / ((double)end->end_ns * end->workers) : 0.0;
	res->overload = d->overload.found;
	int (*finish)(struct metrics *, int64_t, struct metrics_summary *) =
		d->c.summary_only ? metrics_finish_summary : metrics_finish;
	if (finish(d->metrics, end->sla_ns, &res->summary) != 0)
		goto oom;
	if (d->ttft) {
		res->llm = 1;
		if (finish(d->ttft, d->c.env.ttft_slo_ns ? d->c.env.ttft_slo_ns : INT64_MAX, &res->ttft) != 0 ||
		    finish(d->tpot, d->c.env.tpot_slo_ns ? d->c.env.tpot_slo_ns : INT64_MAX, &res->tpot) != 0)
			goto oom;
		res->goodput_rps = d->measured && span_ns > 0 ? (double)d->good / (span_ns * 1e-9) : 0.0;
		res->slo_met = d->good;
		res->slo_measured = d->measured;
		res->input_tokens = d->input_tokens;
		res->output_tokens = d->output_tokens;
		res->good_output_tokens = d->good_output_tokens;
		res->user_tokens_per_s_sum = d->user_tokens_per_s_sum;
		res->measured_span_s = d->measured && span_ns > 0 ? span_ns * 1e-9 : 0.0;
		if (d->win_ns[1] > d->win_ns[0] && d->win_ns[0] >= 0) {
			double window_s = (d->win_ns[1] - d->win_ns[0]) * 1e-9;
			res->window_arrival_rps = (double)(d->win_ids[1] - d->win_ids[0]) / window_s;
			res->window_departure_rps = (double)d->win_departures / window_s;
		}
		res->iter_tokens = d->iter_tokens;
		double blocks = d->fleet ? (double)fleet_kv_blocks(d->fleet) : (double)d->c.env.kv_blocks * end->workers;
		double capacity = blocks * (double)end->end_ns;
		res->kv_mean_fraction = capacity > 0 ? (double)(u128_value(d->kv_block_ns) / (long double)capacity) : 0.0;
		res->itl_count = d->itl->n;
		res->itl_mean_ms = metrics_hist_mean_ns(d->itl) * 1e-6;
		/* a quantile is its bucket's midpoint, which can lie above the largest gap, known exactly:
		 * none is put above it (else the CDF would fall at its last point) */
		res->itl_max_ms = d->itl->max_ns * 1e-6;
		res->itl_p50_ms = fmin(metrics_hist_quantile_ns(d->itl, 50, 100) * 1e-6, res->itl_max_ms);
		res->itl_p90_ms = fmin(metrics_hist_quantile_ns(d->itl, 90, 100) * 1e-6, res->itl_max_ms);
		res->itl_p99_ms = fmin(metrics_hist_quantile_ns(d->itl, 99, 100) * 1e-6, res->itl_max_ms);
		metrics_hist_quantiles_ns(d->itl, res->itl_cdf_ms, METRICS_CDF_POINTS);
		for (int i = 0; i < METRICS_CDF_POINTS; i++)
			res->itl_cdf_ms[i] = fmin(res->itl_cdf_ms[i] * 1e-6, res->itl_max_ms);
		res->itl_cdf_ms[METRICS_CDF_POINTS - 1] = res->itl_max_ms;
	}
	if (d->fleet) {
		res->npolicy_stats = fleet_stats(d->fleet, res->policy_stats, POL_MAX_STATS);
		res->replicas = calloc(d->fleet->n, sizeof *res->replicas);
		if (!res->replicas)
			goto oom;
		res->nreplicas = d->fleet->n;
		res->router = d->c.router->name;
		res->kv_move_extrapolated = d->fleet->move_extrapolated;
		res->prefill_replicas = d->fleet->dis.prefill;
		fleet_results(d->fleet, end->end_ns, res->replicas);
	} else if (d->c.policy->stats) {
		res->npolicy_stats = d->c.policy->stats(d->st, res->policy_stats, POL_MAX_STATS);
	}
	res->nnodes = m->nnodes;
	res->node_tasks = calloc(m->nnodes ? m->nnodes : 1, sizeof *res->node_tasks);
	res->node_cells = calloc(m->nnodes ? m->nnodes : 1, sizeof *res->node_cells);
	if (!res->node_tasks || !res->node_cells)
		goto oom;
	uint64_t run_tasks = 0, run_cells = 0;
	for (uint32_t k = 0; k < m->nnodes; k++) {
		run_tasks += d->run_tasks_step[k];
		run_cells += d->run_cells_step[k];
		res->node_tasks[k] = d->node_tasks[k] + run_tasks;
		res->node_cells[k] = d->node_cells[k] + run_cells;
	}
	res->graph_tasks = d->graph_tasks;
	res->graph_members = d->graph_members;
	if (d->c.keep_request_rows) {
		/* finished requests in id order (a stopped live run leaves gaps) */
		for (size_t i = 0; i < d->rows_cap; i++)
			if (d->rows[i].id != UINT64_MAX)
				d->rows[res->nrows++] = d->rows[i];
		res->rows = d->rows;
		d->rows = NULL;
		d->rows_cap = 0;
	}
	return 0;
oom:
	drv_result_free(res);
	err_memory(err, errlen, "out of memory for the run's result");
	return -1;
}

void drv_result_free(struct drv_result *res)
{
	free(res->replicas);
	free(res->node_tasks);
	free(res->node_cells);
	free(res->rows);
	res->node_tasks = res->node_cells = NULL;
	res->rows = NULL;
	res->nrows = 0;
}
