/* policies/driver.h: the one piece of code that drives a policy, for the
 * simulator (sim/engine/engine.c) and the live runtime (runtime/live.c)
 * alike. The two differ only in their clock and their device: the engine
 * prices a task with a hardware model and jumps the clock to its end, the
 * runtime runs real kernels on the wall clock. Everything between them and
 * the policy is here: the policy's state and its optional methods, the
 * request bookkeeping of the policy.h contract (arrival, task start, task
 * end), the run's counters, the latency samples and the run's result.
 *
 * A run, from either caller:
 *   drv_init                          policy state, counters, latency store
 *   drv_arrive(r, now)                for each request, in arrival order
 *   drv_next_task(dev, now, ...)      for each idle device, after every event
 *                                     of the instant; 1: a task has started
 *   drv_run_extend(t, n)              simulator only: the task runs n nodes
 *   drv_task_done(t, now)             when a started task ends (t->end_ns set)
 *   drv_finish(end, res)              the result; then drv_fini
 *
 * Contract:
 *  - drv_next_task checks the task against the policy.h contract and
 *    refuses a broken one with an error naming the policy (the engine and
 *    the runtime stop the run then). A task that passes has its members in
 *    flight, its cells, device and start_ns set, and is counted.
 *  - drv_task_done advances the members, tells the policy, and records each
 *    finished request: its latency from arrival to t->end_ns (metrics, after
 *    the warm-up), its row when rows are kept, and then hands it to
 *    config.release when one is given (the caller may reuse it at once).
 *  - Results depend only on the calls made and their times: the same calls
 *    give the same result, bit for bit.
 */
#ifndef SB_POL_DRIVER_H
#define SB_POL_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include "policy.h"
#include "fleet.h"
#include "../util/metrics.h"
#include "../util/overload.h"

struct drv_request_row {        /* one finished request (--requests-out, the database) */
	uint64_t id;
	double arrival_s, start_s, finish_s;
	uint32_t input_len, output_len;
	double first_token_s;       /* LLM models: when its first output token was produced (else -1) */
};

/* A run's result, simulated or live. */
struct drv_result {
	uint64_t issued;            /* requests that arrived */
	uint64_t completed;         /* requests that finished */
	uint64_t events;            /* events the caller processed */
	uint64_t tasks;             /* tasks run */
	uint64_t task_members;      /* requests in them, summed */
	uint64_t cold_starts;       /* tasks that refilled weights lost while their device idled (hwmodel.h) */
	double mean_batch;          /* requests per task */
	double sim_end_s;           /* time of the run's last event */
	double throughput_rps;      /* measured completions / (last finish - first measured arrival) */
	double busy_fraction;       /* device-busy time / (workers * sim_end) */
	struct metrics_summary summary;
	struct pol_stat policy_stats[POL_MAX_STATS]; /* the policy's own counters */
	size_t npolicy_stats;
	uint32_t nnodes;            /* per node type (owned arrays of nnodes): */
	uint64_t *node_tasks;       /*   NODE tasks run */
	uint64_t *node_cells;       /*   cells they ran (mean batch = cells / tasks) */
	uint64_t graph_tasks;       /* whole-graph tasks */
	uint64_t graph_members;     /* requests in them */
	size_t nrows;               /* per-request rows of finished requests, id order (keep_request_rows) */
	struct drv_request_row *rows;
	int llm;                    /* an LLM model: the token figures below are filled */
	struct metrics_summary ttft, tpot;   /* time to first token; time per output token (requests of 2+ tokens) */
	double itl_mean_ms, itl_p50_ms, itl_p90_ms, itl_p99_ms, itl_max_ms;   /* inter-token gaps (within 1/256) */
	uint64_t itl_count;
	double itl_cdf_ms[METRICS_CDF_POINTS];   /* quantile (i+1)/1000 of the gaps as above; the last the max */
	double goodput_rps;         /* measured requests meeting both SLOs, per second of the measured span */
	/* the measured requests' tokens (docs/METRICS.md): prompt and output tokens, all of them and those of the
	 * requests meeting both SLOs; 1e9 / TPOT in ns summed over the requests of 2+ tokens (its count: tpot.count);
	 * the span they are rates over, last finish - first measured arrival, as throughput_rps's */
	uint64_t input_tokens, output_tokens, good_output_tokens;
	double user_tokens_per_s_sum;
	double measured_span_s;
	uint64_t slo_met, slo_measured;   /* measured requests meeting both SLOs, of all measured (capacity's count) */
	/* requests a second arriving and completing in the steady-state window
	 * (the measured requests' middle half by arrival): a departure rate
	 * below the arrival rate there is a queue that grows (0 when the run
	 * did not reach the window's end) */
	double window_arrival_rps, window_departure_rps;
	uint64_t iter_tokens;       /* tokens the iterations ran */
	double kv_mean_fraction;    /* the KV cache's occupancy averaged over the run's time, all devices (an idle
	                               device holds none: a request holds blocks only while it runs) */
	uint32_t nreplicas;         /* a fleet's run (--replicas > 1): each replica's share (owned), else 0 */
	struct fleet_replica_result *replicas;
	const char *router;         /* the fleet's router, by name (static) */
	uint32_t prefill_replicas;  /* a disaggregated fleet: replicas [0, this) ran prompts, the rest tokens; else 0 */
	int kv_move_extrapolated;   /* a disaggregated fleet moved KV larger than its link's largest measured message */
	struct ovl_found overload;  /* the window where the queue grew (util/overload.h), when flagged */
};

void drv_result_free(struct drv_result *res);

struct drv_config {
	const struct pol_ops *policy;
	struct pol_env env;                 /* complete: model, workers and lat set */
	uint32_t max_cells;                 /* cells a task may run: env.max_batch, or a tree's widest level */
	uint64_t warmup;                    /* requests with smaller ids are not measured */
	uint64_t expected_requests;         /* sizes the latency store (a hint) */
	int keep_request_rows;
	int histogram_quantiles;            /* latencies (and TTFT, TPOT) in histograms of constant size, not one
	                                     * by one (metrics_create_histogram; --quantiles=histogram) */
	int summary_only;                   /* no latency CDF wanted (a run not stored): the summary's
	                                     * quantiles are selected, not sorted for (metrics_finish_summary) */
	void (*release)(void *ctx, struct pol_request *r, int64_t finish_ns);   /* optional: a finished
	                                    * request is the caller's again */
	uint32_t replicas;                  /* > 1: a fleet of LLM replicas behind router, one device each (fleet.h) */
	const struct router_ops *router;
	const struct opt_set *router_params;  /* the router's knobs, given or default (NULL: every default) */
	int64_t router_refresh_ns;
	const struct pol_env *replica_env;  /* a heterogeneous fleet: [replicas] each replica's env (its KV cache and
	                                     * iteration estimates; knobs from env), else NULL: env for every one */
	const struct fleet_disagg *disagg;  /* a fleet split into prefill and decode pools (fleet.h), else NULL */
	void *release_ctx;
};

/* What the caller needs of a started task to run it. */
struct drv_task_shape {
	uint32_t max_input_len, max_output_len;   /* the longest member's lengths (a graph task's padding) */
	uint64_t first_id;                        /* the smallest member id (the engine's event tie-break) */
};

struct pol_driver {
	struct drv_config c;
	struct opt_set default_params;            /* the policy's knobs at their defaults, when the caller gave none */
	struct pol_fleet *fleet;                  /* a fleet's run: its replicas' states in place of st */
	struct pol_state *st;
	struct metrics *metrics;
	uint64_t arrived, completed, measured, tasks, task_members, graph_tasks, graph_members;
	uint64_t *node_tasks, *node_cells;        /* per node type */
	/* a run's nodes after the first, counted in O(1) (drv_run_extend): for
	 * each node type the change from the type before, in the tasks and
	 * cells added; drv_finish sums them into node_tasks and node_cells.
	 * nnodes + 1 entries each; unsigned, so the wrap-around cancels. */
	uint64_t *run_tasks_step, *run_cells_step;
	int64_t busy_ns;                          /* sum over ended tasks of end - start */
	int64_t first_measured_arrival_ns, last_finish_ns;
	struct metrics *ttft, *tpot;              /* LLM models: time to first token, time per output token */
	struct metrics_hist *itl;                 /* LLM models: the gaps between a request's consecutive tokens */
	uint64_t iter_tokens;                     /* LLM models: tokens the iterations ran */
	struct u128 kv_block_ns;                  /* LLM models: sum over iterations of blocks held x duration (exact:
	                                           * the same whatever order the devices' iterations end in) */
	uint64_t good;                            /* LLM models: measured requests that met both SLOs */
	uint64_t input_tokens, output_tokens, good_output_tokens;   /* LLM models: the measured requests' tokens */
	double user_tokens_per_s_sum;             /* LLM models: 1e9 / TPOT ns summed, in completion order */
	/* LLM models: the steady-state window, from the arrival of the measured
	 * requests' first quarter mark to their third (ids win_ids[0], [1]):
	 * arrival times (-1 until then) and the completions inside it */
	uint64_t win_ids[2];
	int64_t win_ns[2];
	uint64_t win_departures;
	struct drv_request_row *rows;             /* by id; unfinished ids have id UINT64_MAX */
	size_t rows_cap;
	struct ovl_detector overload;             /* requests in the system at each arrival, judged by window */
	/* the last arrival's lengths and what pol_req_start made of them (chain_len 0: none yet):
	 * the next request of the same lengths copies them (a CNN's every request) */
	struct { uint32_t input_len, output_len, node_type, cells; uint64_t chain_len, span_end; } start;
};

/* 0, or -1 with one line in err (the policy refused its env, out of memory). */
int drv_init(struct pol_driver *d, const struct drv_config *c, char *err, size_t errlen);
void drv_fini(struct pol_driver *d);

/* A request arrives: the caller has set id, arrival_ns, input_len and
 * output_len. Refuses (-1) a request the model has nothing to run for. */
static inline int drv_arrive(struct pol_driver *d, struct pol_request *r, int64_t now_ns, char *err,
                             size_t errlen);

/* 1 when the length pair gives the model at least one node to run, else 0
 * with the message drv_arrive gives (checked ahead by the live runtime). */
int drv_runnable(const struct mdl_model *m, uint64_t id, uint32_t input_len, uint32_t output_len, char *err,
                 size_t errlen);

/* Asks the policy for a task for an idle device (t->reqs has env.max_batch
 * slots). 1: the task has started at now_ns (shape filled); 0: none now
 * (*wake_ns may have been lowered); -1: the policy broke its contract. */
static inline int drv_next_task(struct pol_driver *d, uint32_t device, int64_t now_ns, struct pol_task *t,
                                int64_t *wake_ns, struct drv_task_shape *shape, char *err, size_t errlen);

/* The simulator runs a started NODE task as a run of n nodes, 1 < n <=
 * t->run_max (policy.h, "Optional capability: runs"): sets run_len and counts the nodes after the
 * first as the tasks they are, so every counter reads as if the run had been
 * n tasks. The live runtime never calls it. */
static inline void drv_run_extend(struct pol_driver *d, struct pol_task *t, uint64_t n);

/* ---- the shortcuts' side of the driver: sim/engine/runs.h calls these (the
 * live runtime none), for a policy with the optional capability "decode
 * runs" (policy.h) and a fleet whose router may read KV state (router.h,
 * "Optional capability: reads_kv"); a policy or router without them meets
 * none of these. ---- */

/* Decode runs (policy.h, "Optional capability: decode runs"): how many
 * iterations, 1..k_cap, the ITER task t just started on device may run as
 * one: as far as the policy commits to, while every member decodes, up to
 * the one in which a member gives its last token (1: not a decode run) ... */
uint32_t drv_decode_run(const struct pol_driver *d, uint32_t device, const struct pol_task *t, uint32_t k_cap,
                        uint64_t *held);                    /* held: as pol_ops.decode_run's */
/* ... and when the run of k iterations ends (ends[j] the end of iteration
 * j + 1; held: k slots): iterations 1..k-1 counted and ended as drv_task_done
 * would (no member finishes in them), the policy advanced, t made the k-th
 * (start, end, contexts, blocks); then drv_task_done(t) ends it as any task. */
void drv_decode_advance(struct pol_driver *d, struct pol_task *t, uint32_t k, const int64_t *ends, uint64_t *held);
/* A fleet's replica on device holds blocks KV blocks now (inside a decode run; fleet_kv_now). */
static inline void drv_fleet_kv_now(struct pol_driver *d, uint32_t device, uint64_t blocks)
{
	fleet_kv_now(d->fleet, device, blocks);
}

/* A fleet's router scrapes (refresh > 0) and the first event at or after now_ns takes a snapshot. */
static inline int drv_fleet_scrape_due(const struct pol_driver *d, int64_t now_ns)
{
	return d->fleet->refresh_ns && now_ns >= d->fleet->next_scrape_ns;
}

/* A disaggregated fleet's decode replica on device: when its next KV move lands (INT64_MAX: none, or no
 * such fleet), which a decode run there must not run past. */
static inline int64_t drv_next_move_ns(const struct pol_driver *d, uint32_t device)
{
	return d->fleet && d->fleet->dis.prefill ? fleet_next_move_ns(d->fleet, device) : INT64_MAX;
}

/* The policy's boundary_waits (policy.h, "Optional capability: runs"), for a policy that has one. */
static inline int drv_boundary_waits(const struct pol_driver *d, uint32_t device)
{
	return d->c.policy->boundary_waits(d->st, device);
}

/* A started task has ended at t->end_ns; the policy hears of it at now_ns.
 * Returns how many requests finished, or -1 with err (out of memory). */
static inline int drv_task_done(struct pol_driver *d, struct pol_task *t, int64_t now_ns, char *err,
                                size_t errlen);

/* The run's end as the caller saw it. */
struct drv_run_end {
	int64_t end_ns;             /* the run's last event */
	uint32_t workers;
	int64_t sla_ns;
	uint64_t events, cold_starts;
};

/* Fills *res (the caller releases it with drv_result_free): the counters,
 * the latency summary, the policy's stats, the rows. 0, or -1 with err. */
int drv_finish(struct pol_driver *d, const struct drv_run_end *end, struct drv_result *res, char *err,
               size_t errlen);

/* ---- the per-event calls, inline: the engine makes them millions of times
 * a second, and a call across files cost it 4-6% (bench/README.md) ---- */

/* Out of line, off the hot path (driver.c). */
__attribute__((format(printf, 4, 5)))
int drv_broken(const struct pol_driver *d, char *err, size_t errlen, const char *fmt, ...);
int drv_keep_row(struct pol_driver *d, const struct pol_request *r, int64_t finish_ns, char *err, size_t errlen);
int drv_out_of_memory(char *err, size_t errlen, const char *what);
int drv_record_tokens(struct pol_driver *d, const struct pol_request *r, int64_t finish_ns);
void drv_record_gaps(struct pol_driver *d, const struct pol_task *t);

/* A member can make a run of t->run_max nodes: a NODE task, no tree, and
 * the run stays inside the member's current segment span (policy.h). */
static inline int drv_run_fits(const struct pol_driver *d, const struct pol_request *r, const struct pol_task *t)
{
	return t->kind == POL_TASK_NODE && !d->c.env.model->is_tree && pol_req_span_left(r) >= t->run_max;
}

static inline int drv_arrive(struct pol_driver *d, struct pol_request *r, int64_t now_ns, char *err,
                             size_t errlen)
{
	/* field by field: a memset of the struct compiles to `rep stos`, whose
	 * start-up cost was measured at a tenth of the engine's whole loop */
	r->first_start_ns = -1;
	r->first_token_ns = -1;
	r->in_flight = 0;
	r->kv_ready = 0;
	r->pol_next = NULL;
	r->pol_word[0] = r->pol_word[1] = 0;
	if (d->start.chain_len && r->input_len == d->start.input_len && r->output_len == d->start.output_len) {
		r->next_node = 0;
		r->chain_len = d->start.chain_len;
		r->node_type_cache = d->start.node_type;
		r->cells_cache = d->start.cells;
		r->span_end_cache = d->start.span_end;
	} else {
		pol_req_start(r, d->c.env.model);
		d->start.input_len = r->input_len;
		d->start.output_len = r->output_len;
		d->start.chain_len = r->chain_len;
		d->start.node_type = r->node_type_cache;
		d->start.cells = r->cells_cache;
		d->start.span_end = r->span_end_cache;
	}
	if (r->chain_len == 0) {
		drv_runnable(d->c.env.model, r->id, r->input_len, r->output_len, err, errlen);
		return -1;
	}
	ovl_arrival(&d->overload, now_ns, d->arrived - d->completed);
	d->arrived++;
	if (d->ttft && (r->id == d->win_ids[0] || r->id == d->win_ids[1]))
		d->win_ns[r->id == d->win_ids[1]] = now_ns;
	if (d->fleet)
		fleet_arrive(d->fleet, r, now_ns);
	else
		d->c.policy->on_arrival(d->st, r, now_ns);
	return 0;
}

static inline int drv_next_task(struct pol_driver *d, uint32_t device, int64_t now_ns, struct pol_task *t,
                                int64_t *wake_ns, struct drv_task_shape *shape, char *err, size_t errlen)
{
	t->nreq = 0;
	t->run_max = 0;
	t->pad_tokens = 0;
	int got = d->fleet ? fleet_next_task(d->fleet, device, now_ns, t, wake_ns)
	                   : d->c.policy->next_task(d->st, device, now_ns, t, wake_ns);
	if (got <= 0)
		return got < 0 ? drv_out_of_memory(err, errlen, "for the policy's state") : 0;
	t->run_len = 1;
	if (t->nreq < 1 || t->nreq > d->c.env.max_batch)
		return drv_broken(d, err, errlen, "a task of %u requests (max batch %u)", t->nreq,
		                  d->c.env.max_batch);
	uint64_t first = UINT64_MAX;
	uint32_t max_in = 0, max_out = 0, cells = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (r->in_flight || pol_req_done(r) || (t->kind == POL_TASK_NODE && pol_req_node(r) != t->node_type))
			return drv_broken(d, err, errlen, "request %llu in a task it cannot join",
			                  (unsigned long long)r->id);
		if (t->run_max > 1 && !drv_run_fits(d, r, t))
			return drv_broken(d, err, errlen, "a run of %llu nodes that request %llu cannot make",
			                  (unsigned long long)t->run_max, (unsigned long long)r->id);
		if (t->kind == POL_TASK_ITER &&
		    (t->tokens[i] == 0 || (uint64_t)t->context[i] + t->tokens[i] > pol_llm_target(r)))
			return drv_broken(d, err, errlen, "request %llu given %u tokens on a cache of %u (it needs %llu)",
			                  (unsigned long long)r->id, t->tokens[i], t->context[i],
			                  (unsigned long long)pol_llm_target(r));
		r->in_flight = 1;
		if (r->first_start_ns < 0)
			r->first_start_ns = now_ns;
		if (r->id < first)
			first = r->id;
		if (r->input_len > max_in)
			max_in = r->input_len;
		if (r->output_len > max_out)
			max_out = r->output_len;
		cells += t->kind == POL_TASK_ITER ? t->tokens[i] : pol_req_cells(r);
	}
	if ((t->kind == POL_TASK_ITER) != (d->c.env.model->is_llm != 0))
		return drv_broken(d, err, errlen, "a %s task for %s model", t->kind == POL_TASK_ITER ? "token" : "node",
		                  d->c.env.model->is_llm ? "an LLM" : "a node-level");
	/* a lone member may exceed the max batch: its tree level cannot be split */
	if (t->kind == POL_TASK_NODE && t->nreq > 1 && cells > d->c.env.max_batch)
		return drv_broken(d, err, errlen, "a task of %u cells (max batch %u)", cells, d->c.env.max_batch);
	if (t->kind == POL_TASK_GRAPH) {
		t->cells = t->nreq;
		d->graph_tasks++;
		d->graph_members += t->nreq;
	} else if (t->kind == POL_TASK_ITER) {
		t->cells = cells;                    /* the iteration's tokens */
		d->iter_tokens += cells;
	} else {
		t->cells = cells;
		d->node_tasks[t->node_type]++;
		d->node_cells[t->node_type] += cells;
	}
	t->device = device;
	t->start_ns = now_ns;
	t->end_ns = now_ns;
	d->tasks++;
	d->task_members += t->nreq;
	*shape = (struct drv_task_shape){ .max_input_len = max_in, .max_output_len = max_out, .first_id = first };
	return 1;
}

/* Counts tasks more tasks and cells more cells for every node type in [lo, hi). */
static inline void drv_run_add(struct pol_driver *d, uint32_t lo, uint32_t hi, uint64_t tasks, uint64_t cells)
{
	d->run_tasks_step[lo] += tasks;
	d->run_tasks_step[hi] -= tasks;
	d->run_cells_step[lo] += cells;
	d->run_cells_step[hi] -= cells;
}

static inline void drv_run_extend(struct pol_driver *d, struct pol_task *t, uint64_t n)
{
	struct mdl_run run = mdl_run_of(d->c.env.model, t->node_type, n);
	uint32_t end = run.first + run.nnodes, at = run.first + run.phase;
	t->run_len = n;
	/* every type of the segment runs passes times, then rest more from the
	 * first node on, wrapping at the segment's end; the first node was
	 * counted at its start */
	if (run.passes)
		drv_run_add(d, run.first, end, run.passes, run.passes * t->cells);
	if (run.rest) {
		uint32_t stop = at + (uint32_t)run.rest;
		if (stop <= end) {
			drv_run_add(d, at, stop, 1, t->cells);
		} else {
			drv_run_add(d, at, end, 1, t->cells);
			drv_run_add(d, run.first, stop - run.nnodes, 1, t->cells);
		}
	}
	d->node_tasks[t->node_type]--;
	d->node_cells[t->node_type] -= t->cells;
	d->tasks += n - 1;
	d->task_members += (n - 1) * t->nreq;
}

static inline int drv_task_done(struct pol_driver *d, struct pol_task *t, int64_t now_ns, char *err,
                                size_t errlen)
{
	if (t->kind == POL_TASK_ITER) {
		drv_record_gaps(d, t);
		u128_add_mul(&d->kv_block_ns, t->kv_blocks_held, (uint64_t)(t->end_ns - t->start_ns));
	}
	pol_task_advance(t, d->c.env.model);
	d->busy_ns += t->end_ns - t->start_ns;
	if (d->fleet) {
		if (fleet_task_done(d->fleet, t, now_ns) != 0)
			return drv_out_of_memory(err, errlen, "queueing KV moves");
	} else
		d->c.policy->on_task_done(d->st, t, now_ns);
	int finished = 0;
	for (uint32_t i = 0; (uint32_t)finished < t->finished && i < t->nreq; i++) {   /* most tasks finish no one */
		struct pol_request *r = t->reqs[i];
		if (!pol_req_done(r))
			continue;
		finished++;
		d->completed++;
		if (t->end_ns > d->last_finish_ns)
			d->last_finish_ns = t->end_ns;
		if (r->id >= d->c.warmup) {
			if (d->measured == 0 || r->arrival_ns < d->first_measured_arrival_ns)
				d->first_measured_arrival_ns = r->arrival_ns;
			d->measured++;
			if (metrics_record(d->metrics, t->end_ns - r->arrival_ns, r->first_start_ns - r->arrival_ns) != 0 ||
			    (d->ttft && drv_record_tokens(d, r, t->end_ns) != 0))
				return drv_out_of_memory(err, errlen, "recording latencies");
		}
		if (d->c.keep_request_rows && drv_keep_row(d, r, t->end_ns, err, errlen) != 0)
			return -1;
		if (d->c.release)
			d->c.release(d->c.release_ctx, r, t->end_ns);
	}
	return finished;
}

#endif
