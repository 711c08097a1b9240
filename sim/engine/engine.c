/* sim/engine/engine.c: the event loop of one simulated run (DESIGN.md section 2).
 *
 * Time is integer nanoseconds. Arrivals are generated one ahead and the one
 * pending arrival waits beside the event queue, not in it (the loop takes
 * whichever of the two comes first in evq_before's order): memory does not
 * grow with the run, and the queue holds only completions and wake-ups. With
 * one device its one pending completion waits beside the queue too (no two
 * events it could tie with share its kind and key, so the order is the
 * queue's own). All events of one instant are delivered to the policy
 * before any idle device asks it for work, so requests arriving together
 * can be batched together.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine.h"
#include "../../util/errkind.h"
#include "engine_state.h"
#include "runs.h"
#include "clients.h"
#include "evq.h"
#include "timeline.h"
#include "../../util/ns_math.h"
#include "../../hwmodels/llm_cost.h"

static struct pol_request *eng_req_alloc(struct eng *e)
{
	if (!e->free_reqs) {
		struct eng_pool_chunk *ch = malloc(sizeof *ch);
		if (!ch)
			return NULL;
		ch->next = e->chunks;
		e->chunks = ch;
		for (size_t i = ENG_POOL_CHUNK; i-- > 0;) {
			ch->reqs[i].pol_next = e->free_reqs;
			e->free_reqs = &ch->reqs[i];
		}
	}
	struct pol_request *r = e->free_reqs;
	e->free_reqs = r->pol_next;
	return r;
}

/* The driver hands back each finished request (drv_config.release). */
static int eng_schedule_arrival(struct eng *e);

static void eng_req_release(void *ctx, struct pol_request *r, int64_t finish_ns)
{
	struct eng *e = ctx;
	r->pol_next = e->free_reqs;
	e->free_reqs = r;
	if (e->c->concurrency && finish_ns > 0) {    /* closed loop: the client sends its next request */
		eng_clients_answered(&e->clients, finish_ns, &e->source);
		if (!e->arrival_pending)
			eng_schedule_arrival(e);
	}
}

/* Takes the next request from the source (or, in a closed loop, the
 * earliest a client sent) as the pending arrival, if any. 0, or -1 with
 * e->err (an arrival past the clock's span). */
static int eng_schedule_arrival(struct eng *e)
{
	if (e->c->concurrency) {
		e->arrival_pending = eng_clients_pop(&e->clients, &e->next);
		if (e->arrival_pending)
			e->arrival = (struct event){ .time_ns = e->next.arrival_ns, .key = e->next.id, .kind = EV_ARRIVAL };
		return 0;
	}
	int got = trc_source_next(&e->source, &e->next, e->err, e->errlen);
	e->arrival_pending = got > 0;
	if (e->arrival_pending)
		e->arrival = (struct event){ .time_ns = e->next.arrival_ns, .key = e->next.id, .kind = EV_ARRIVAL };
	return got < 0 ? -1 : 0;
}

/* The earliest pending event in the one total order, or NULL. */
static inline const struct event *eng_peek(const struct eng *e)
{
	const struct event *top = evq_peek(e->q);
	if (e->done_pending && (!top || evq_before(&e->done, top)))
		top = &e->done;
	if (e->arrival_pending && (!top || evq_before(&e->arrival, top)))
		return &e->arrival;
	return top;
}

/* Takes next, the earliest pending event (eng_peek's). A slot's event is
 * handed out in place, not copied: its fields were just stored one by one,
 * and a copy reads them back as wide loads that wait for those stores to
 * retire (perf: 14% of a serial run on the copy's first loads). The arrival slot stays valid until its
 * handler takes the next arrival, the task end's until the next task starts;
 * a queued event is popped into *buf. */
static inline const struct event *eng_take(struct eng *e, const struct event *next, struct event *buf)
{
	if (next == &e->arrival) {
		e->arrival_pending = 0;
		return next;
	}
	if (next == &e->done) {
		e->done_pending = 0;
		return next;
	}
	evq_pop(e->q, buf);
	return buf;
}

static int eng_on_arrival(struct eng *e, const struct event *ev)
{
	struct pol_request *r = eng_req_alloc(e);
	if (!r) {
		err_memory(e->err, e->errlen, "out of memory for requests");
		return -1;
	}
	r->id = e->next.id;
	r->arrival_ns = ev->time_ns;
	r->input_len = e->next.input_len;
	r->output_len = e->next.output_len;
	r->prefix_id = e->next.prefix_id;
	r->prefix_len = e->next.prefix_len;
	r->session_id = e->next.session_id;
	r->inner_id = e->next.inner_id;
	r->inner_len = e->next.inner_len;
	r->hash_ids = e->next.hash_ids;
	r->nhash = e->next.nhash;
	r->hash_block = e->next.hash_block;
	if (drv_arrive(&e->drv, r, ev->time_ns, e->err, e->errlen) != 0) {
		eng_req_release(e, r, 0);
		return -1;
	}
	if (e->decode_runs && e->c->replicas > 1)
		eng_cut_decode_run(e, &e->devices[r->replica], r->replica, ev->time_ns);
	return eng_schedule_arrival(e);
}

static int eng_on_task_done(struct eng *e, const struct event *ev)
{
	struct eng_device *d = &e->devices[ev->aux];
	assert(d->busy);
	d->busy = 0;
	e->idle++;
	e->idle_bits[ev->aux / 64] |= (uint64_t)1 << (ev->aux % 64);
	if (d->run_nodes > 1)
		drv_run_extend(&e->drv, &d->task, d->run_nodes);
	if (e->has_cold)
		d->idle_since_ns = ev->time_ns;
	if (d->decode_k > 1)
		drv_decode_advance(&e->drv, &d->task, d->decode_k, d->iter_end, d->iter_held);
	d->decode_k = 0;
	if (drv_task_done(&e->drv, &d->task, ev->time_ns, e->err, e->errlen) < 0)
		return -1;
	/* a prefill replica's iteration may have sent KV to decode replicas in decode runs */
	uint32_t prefill = e->c->disagg ? e->c->disagg->prefill : 0;
	for (uint32_t dev = prefill; e->decode_runs && ev->aux < prefill && dev < e->c->workers; dev++)
		eng_cut_decode_run(e, &e->devices[dev], dev, drv_next_move_ns(&e->drv, dev));
	return 0;
}

/* What a task pays for weights its device lost while idle (hwmodel.h
 * cold_start): an idle gap leaves every node type owing the refill for that
 * gap (the larger of that and what it owed already), and a task pays what
 * each type it runs owes, once; a graph task runs every type its lengths
 * unroll. */
static int64_t eng_cold_extra(struct eng *e, struct eng_device *d, const struct pol_task *t, int64_t now_ns,
                              uint32_t max_in, uint32_t max_out)
{
	const struct mdl_model *m = e->c->model;
	int64_t extra = 0, idle_ns = now_ns - d->idle_since_ns;
	for (uint32_t type = 0; type < m->nnodes; type++) {
		if (idle_ns > 0) {
			int64_t owed = eng_latency_cold_ns(e->lat, type, idle_ns);
			if (owed > d->cold_owed_ns[type])
				d->cold_owed_ns[type] = owed;
		}
		int runs = t->kind == POL_TASK_GRAPH ? mdl_node_repeats(m, type, max_in, max_out) > 0
		                                     : type == t->node_type;
		if (runs) {
			extra = ns_add(extra, d->cold_owed_ns[type]);
			d->cold_owed_ns[type] = 0;
		}
	}
	e->cold_starts += extra > 0;
	return extra;
}

static int64_t eng_iter_ns(struct eng *e, const struct pol_task *t)
{
	uint32_t emitting = 0;
	for (uint32_t i = 0; i < t->nreq; i++)
		emitting += pol_iter_emits(t, i);
	return eng_iter_emitting_ns(e, t, emitting);
}

/* A graph batch's price (eng_latency_graph_ns), the last shape's kept. */
static inline int64_t eng_graph_ns(struct eng *e, uint32_t batch, uint32_t input_len, uint32_t output_len)
{
	if (batch != e->graph_last.batch || input_len != e->graph_last.input_len ||
	    output_len != e->graph_last.output_len) {
		e->graph_last.batch = batch;
		e->graph_last.input_len = input_len;
		e->graph_last.output_len = output_len;
		e->graph_last.ns = eng_latency_graph_ns(e->lat, batch, input_len, output_len);
	}
	return e->graph_last.ns;
}

/* Prices a task the driver has started and schedules its end. */
static int eng_run_task(struct eng *e, uint32_t dev, int64_t now_ns, const struct drv_task_shape *shape)
{
	struct eng_device *d = &e->devices[dev];
	struct pol_task *t = &d->task;
	int64_t dur_ns;
	if (t->kind == POL_TASK_ITER) {
		dur_ns = eng_iter_ns(e, t);
		if (dur_ns < 0)
			return -1;
		if (e->decode_runs && (dur_ns = eng_decode_run_ns(e, d, dev, now_ns, dur_ns)) < 0)
			return -1;
	} else {
		dur_ns = t->kind == POL_TASK_GRAPH
		         ? eng_graph_ns(e, t->nreq, shape->max_input_len, shape->max_output_len)
		         : eng_task_node_ns(e, t, t->node_type, 0);
	}
	if (e->has_cold)
		dur_ns = ns_add(dur_ns, eng_cold_extra(e, d, t, now_ns, shape->max_input_len, shape->max_output_len));
	d->first_ns = dur_ns;
	d->run_nodes = 1;
	d->cut_from_ns = INT64_MAX;
	d->walk_ready = 0;
	if (t->run_max > 1 && e->runs)
		dur_ns = eng_run_end(e, d, now_ns, dur_ns, eng_horizon(e), &d->run_nodes) - now_ns;
	if (dur_ns > INT64_MAX - 1 - now_ns) {
		snprintf(e->err, e->errlen, "simulated time overflows: a task starting at %.6g s would end past the "
		         "int64 nanosecond clock (292 years); the service times are too long to simulate",
		         (double)now_ns * 1e-9);
		return -1;
	}
	t->end_ns = now_ns + dur_ns;
	if (e->timeline && timeline_task(e->timeline, t) != 0) {
		err_io(e->err, e->errlen, "error writing the timeline");
		return -1;
	}
	if (e->c->workers == 1) {
		e->done = (struct event){ .time_ns = t->end_ns, .key = shape->first_id, .kind = EV_TASK_DONE, .aux = dev };
		e->done_pending = 1;
	} else if (evq_add(e->q, t->end_ns, shape->first_id, EV_TASK_DONE, dev) != 0) {
		err_memory(e->err, e->errlen, "out of memory in the event queue");
		return -1;
	}
	return 0;
}

/* Offers every idle device to the policy, in device order. 1 when that
 * scheduled an event (a task's end, a wake-up), 0 when not, -1 on error. */
static int eng_dispatch(struct eng *e, int64_t now_ns)
{
	int64_t wake_ns = INT64_MAX;
	uint32_t started = 0;
	int scheduled = 0;
	for (uint32_t w = 0; w * 64 < e->c->workers; w++)
	for (uint64_t bits = e->idle_bits[w]; bits; bits &= bits - 1) {
		uint32_t dev = w * 64 + (uint32_t)__builtin_ctzll(bits);
		struct eng_device *d = &e->devices[dev];
		/* a wake-up asked for at this instant may end a run sooner (eng_run_end) */
		d->task.run_until_ns = e->runs ? eng_horizon(e) : 0;
		int got = drv_next_task(&e->drv, dev, now_ns, &d->task, &wake_ns, &d->shape, e->err, e->errlen);
		if (got < 0)
			return -1;
		if (got) {
			d->busy = 1;
			e->idle--;
			e->idle_bits[w] &= ~((uint64_t)1 << (dev % 64));
			e->started[started++] = dev;
		}
	}
	if (wake_ns != INT64_MAX && wake_ns > now_ns && wake_ns < e->wake_pending_ns) {
		if (evq_add(e->q, wake_ns, 0, EV_WAKEUP, 0) != 0) {
			err_memory(e->err, e->errlen, "out of memory in the event queue");
			return -1;
		}
		e->wake_pending_ns = wake_ns;
		scheduled = 1;
	}
	/* priced once the instant's wake-up is known: it bounds the runs (policy.h) */
	for (uint32_t i = 0; i < started; i++)
		if (eng_run_task(e, e->started[i], now_ns, &e->devices[e->started[i]].shape) != 0)
			return -1;
	return scheduled || started > 0;
}

static int eng_handle(struct eng *e, const struct event *ev)
{
	if (e->kv_view)
		eng_kv_now(e, ev->time_ns);
	switch (ev->kind) {
	case EV_ARRIVAL:
		return eng_on_arrival(e, ev);
	case EV_TASK_DONE:
		return eng_on_task_done(e, ev);
	case EV_WAKEUP:
		e->wakeups++;
		if (ev->time_ns == e->wake_pending_ns)
			e->wake_pending_ns = INT64_MAX;
		return 0;
	}
	return 0;
}

/* Not inlined into eng_run, whose stack holds *e: inlined, the loop read and
 * wrote e's fields at offsets from the stack pointer, and ran a serial run at
 * 0.97 CPU s where through a pointer it runs at 0.78 (bench/README.md, "The
 * event loop's state on the stack"), on the 2-core VM's AMD EPYC. */
__attribute__((noinline)) static int eng_loop(struct eng *e)
{
	struct event buf;
	if (eng_schedule_arrival(e) != 0)
		return -1;
	const struct event *next = eng_peek(e);
	while (next) {
		if (e->cut_runs && eng_cut_runs(e, next))
			next = eng_peek(e);
		const struct event *ev = eng_take(e, next, &buf);
		int64_t now = ev->time_ns;
		e->now_ns = now;
		if (eng_handle(e, ev) != 0)
			return -1;
		next = eng_peek(e);
		/* every event of an instant is handled before the devices are offered; with none idle there
		 * is nothing to offer, and the next event stays the next unless the offer scheduled one */
		if ((next && next->time_ns == now) || e->idle == 0)
			continue;
		int scheduled = eng_dispatch(e, now);
		if (scheduled < 0)
			return -1;
		if (scheduled)
			next = eng_peek(e);
	}
	if (e->drv.completed != e->drv.arrived) {
		snprintf(e->err, e->errlen,
		         "policy %s stopped with %llu of %llu requests unfinished (no task offered, no wake-up asked)",
		         e->c->policy->name, (unsigned long long)(e->drv.arrived - e->drv.completed),
		         (unsigned long long)e->drv.arrived);
		return -1;
	}
	return 0;
}

static void eng_teardown(struct eng *e)
{
	drv_fini(&e->drv);
	eng_clients_fini(&e->clients);
	if (e->devices)
		for (uint32_t i = 0; i < e->c->workers; i++) {
			free(e->devices[i].task.reqs);
			free(e->devices[i].task.tokens);
			free(e->devices[i].task.context);
			free(e->devices[i].cold_owed_ns);
			free(e->devices[i].walk);
			free(e->devices[i].iter_end);
			free(e->devices[i].iter_held);
		}
	free(e->devices);
	free(e->started);
	free(e->cut_at);
	free(e->idle_bits);
	free(e->seg_on_p);
	for (uint32_t k = 0; e->seg_walk_ns && k < e->c->model->nsegments; k++)
		free(e->seg_walk_ns[k]);
	free(e->seg_walk_ns);
	while (e->chunks) {
		struct eng_pool_chunk *n = e->chunks->next;
		free(e->chunks);
		e->chunks = n;
	}
	eng_latency_destroy(e->lat);
	llm_cost_destroy(e->llm);
	for (uint32_t i = 0; e->dev_llm && i < e->c->workers; i++)
		if (e->dev_llm[i] != e->llm && (i == 0 || e->c->replica_hw[i] != e->c->replica_hw[i - 1]))
			llm_cost_destroy(e->dev_llm[i]);     /* a group's cost, once: its replicas stand together */
	free(e->dev_llm);
	free(e->replica_env);
	evq_destroy(e->q);
	trc_source_fini(&e->source);
}

/* The longest of the trace's lengths (n of them), or of the distribution's. */
static uint32_t eng_max_len(const struct eng_config *c, const uint32_t *trace_lens, const struct trc_lengths *dist)
{
	uint32_t len = 0;
	if (!c->trace)
		return trc_lengths_max(dist);
	for (size_t i = 0; i < c->trace->n; i++)
		if (trace_lens[i] > len)
			len = trace_lens[i];
	return len;
}

uint32_t eng_max_input_len(const struct eng_config *c)
{
	return c->model->uses_input_len ? eng_max_len(c, c->trace ? c->trace->input_len : NULL, c->input_len) : 0;
}

uint32_t eng_max_output_len(const struct eng_config *c)
{
	return c->model->uses_output_len ? eng_max_len(c, c->trace ? c->trace->output_len : NULL, c->output_len) : 0;
}

/* Largest batch (cells) a task may run: the max batch, or for a tree model
 * the widest tree level if a lone request's level is wider. */
static uint32_t eng_max_cells(const struct eng_config *c)
{
	uint32_t cells = c->env.max_batch;
	if (!c->model->is_tree)
		return cells;
	uint32_t leaves = eng_max_input_len(c);
	return leaves > cells ? leaves : cells;
}

/* The policy's iteration estimates (pol_latency.iter_ns): the engine's own prices. */
static int64_t eng_iter_estimate_ns(void *ctx, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                                    uint32_t emitting, uint32_t pad)
{
	char err[256];
	return llm_cost_iter_ns(ctx, n, tokens, context, emitting, pad, err, sizeof err);
}

int eng_llm_env(const struct eng_config *c, struct pol_env *env, struct llm_cost **cost, char *err, size_t errlen)
{
	return eng_llm_env_on(c, c->hw, env, cost, err, errlen);
}

int eng_llm_env_on(const struct eng_config *c, const struct hw_model *hw, struct pol_env *env, struct llm_cost **cost,
                   char *err, size_t errlen)
{
	uint32_t max_tokens = env->max_batched_tokens ? env->max_batched_tokens : 1;
	*cost = NULL;
	if (env->block_size == 0) {
		snprintf(err, errlen, "block size must be at least 1 token");
		return -1;
	}
	if (llm_cost_create(hw, c->model, max_tokens, cost, err, errlen) != 0)
		return -1;
	env->lat.iter_ns = eng_iter_estimate_ns;
	env->lat.iter_ctx = *cost;
	env->kv_blocks = llm_cost_kv_blocks(*cost, env->block_size, err, errlen);   /* the weights must fit */
	if (env->kv_blocks == 0)
		goto fail;
	if (env->kv_blocks_given)
		env->kv_blocks = env->kv_blocks_given;
	uint64_t longest = 0;
	if (c->trace) {
		for (size_t i = 0; i < c->trace->n; i++)
			if ((uint64_t)c->trace->input_len[i] + c->trace->output_len[i] > longest)
				longest = (uint64_t)c->trace->input_len[i] + c->trace->output_len[i];
	} else {
		longest = (uint64_t)trc_lengths_max(c->input_len) + trc_lengths_max(c->output_len);
	}
	env->longest_request_tokens = longest;
	uint64_t blocks = (longest + env->block_size - 1) / env->block_size;
	if (blocks > env->kv_blocks) {
		snprintf(err, errlen, "the KV cache of hw %s (%llu blocks of %u tokens) cannot hold a request of %llu "
		         "tokens (prompt and output)", hw->label, (unsigned long long)env->kv_blocks, env->block_size,
		         (unsigned long long)longest);
		goto fail;
	}
	return 0;
fail:
	llm_cost_destroy(*cost);
	*cost = NULL;
	return -1;
}

/* A heterogeneous fleet: each replica's env (its KV cache, its iteration
 * estimates) and its device's prices, from its group's hardware; replicas of
 * one group stand together in c->replica_hw and share one cost model. */
static int eng_fleet_envs(struct eng *e, struct drv_config *dc, char *err, size_t errlen)
{
	const struct eng_config *c = e->c;
	e->dev_llm = calloc(c->workers, sizeof *e->dev_llm);
	e->replica_env = calloc(c->workers, sizeof *e->replica_env);
	if (!e->dev_llm || !e->replica_env)
		return err_memory(err, errlen, "out of memory setting up the fleet");
	for (uint32_t i = 0; i < c->workers; i++) {
		if (i > 0 && c->replica_hw[i] == c->replica_hw[i - 1]) {
			e->dev_llm[i] = e->dev_llm[i - 1];
			e->replica_env[i] = e->replica_env[i - 1];
			continue;
		}
		e->replica_env[i] = dc->env;
		if (c->replica_hw[i] == c->hw) {      /* the run's own model and estimates */
			e->dev_llm[i] = e->llm;
			continue;
		}
		if (eng_llm_env_on(c, c->replica_hw[i], &e->replica_env[i], &e->dev_llm[i], err, errlen) != 0) {
			if (c->disagg) {            /* say which pool: a decode replica holds each moved request whole */
				char why[512];
				snprintf(why, sizeof why, "%s", err);
				snprintf(err, errlen, "the %s pool: %s", i < c->disagg->prefill ? "prefill" : "decode", why);
			}
			return -1;
		}
	}
	dc->replica_env = e->replica_env;
	return 0;
}

int eng_run(const struct eng_config *c, struct drv_result *res, char *err, size_t errlen)
{
	struct eng e = { .c = c, .err = err, .errlen = errlen, .wake_pending_ns = INT64_MAX, .timeline = c->timeline };
	const struct mdl_model *m = c->model;
	memset(res, 0, sizeof *res);
	uint32_t max_cells = eng_max_cells(c);
	e.lat = eng_latency_create(m, c->hw, max_cells, eng_max_input_len(c), eng_max_output_len(c), err, errlen);
	if (!e.lat)
		goto fail;
	e.node_ns = eng_latency_device_table(e.lat, &e.node_stride);
	e.by_members = eng_latency_by_members_table(e.lat);
	struct trc_source_config src = {
		.trace = c->trace, .trace_speedup = c->trace_speedup, .trace_pairs = c->trace_pairs,
		.rate_rps = c->rate_rps, .arrival_cv = c->arrival_cv,
		.input_len = m->uses_input_len ? c->input_len : NULL, .output_len = m->uses_output_len ? c->output_len : NULL,
		.duration_s = c->duration_s, .requests = c->requests, .seed = c->seed,
	};
	if (trc_source_init(&e.source, &src, err, errlen) != 0)
		goto fail;
	if (c->concurrency && eng_clients_init(&e.clients, c->concurrency, c->think_ns, c->requests, &e.source) != 0) {
		err_memory(err, errlen, "out of memory for the clients");
		goto fail;
	}
	e.clients.lockstep = c->lockstep;
	uint64_t expect = c->requests ? c->requests : (uint64_t)(c->rate_rps * c->duration_s * 1.05) + 16;
	if (c->trace && !c->trace_pairs && (!c->requests || c->requests > c->trace->n))
		expect = c->trace->n;
	struct drv_config dc = {
		.policy = c->policy, .env = c->env, .max_cells = max_cells, .warmup = c->warmup,
		.expected_requests = expect, .keep_request_rows = c->keep_request_rows,
		.summary_only = c->summary_only, .histogram_quantiles = c->histogram_quantiles,
		.release = eng_req_release, .release_ctx = &e,
		.replicas = c->replicas, .router = c->router, .router_params = c->router_params,
		.router_refresh_ns = c->router_refresh_ns,
		.disagg = c->disagg,
	};
	dc.env.model = m;
	dc.env.workers = c->workers;
	dc.env.lat = eng_latency_estimates(e.lat);
	if (m->is_llm && eng_llm_env(c, &dc.env, &e.llm, err, errlen) != 0)
		goto fail;
	if (m->is_llm && c->replica_hw && eng_fleet_envs(&e, &dc, err, errlen) != 0)
		goto fail;
	/* before the devices, so that a configuration the driver refuses allocates none */
	if (drv_init(&e.drv, &dc, err, errlen) != 0)
		goto fail;
	e.q = evq_create(EVQ_QUAD_HEAP, 16 + 2 * (size_t)c->workers);
	e.devices = calloc(c->workers, sizeof *e.devices);
	e.started = calloc(c->workers, sizeof *e.started);
	e.cut_at = calloc(c->workers, sizeof *e.cut_at);
	e.idle_bits = calloc((c->workers + 63) / 64, sizeof *e.idle_bits);
	if (!e.q || !e.devices || !e.started || !e.cut_at || !e.idle_bits) {
		err_memory(err, errlen, "out of memory setting up the run");
		goto fail;
	}
	e.idle = c->workers;
	for (uint32_t i = 0; i < c->workers; i++)
		e.idle_bits[i / 64] |= (uint64_t)1 << (i % 64);
	e.has_cold = eng_latency_has_cold(e.lat);
	/* a run is priced to the next arrival, which a closed loop's answers may move earlier */
	e.runs = !c->timeline && !e.has_cold && !c->concurrency && !c->node_by_node;
	e.cut_runs = e.runs && c->workers > 1 && c->policy->boundary_waits;
	/* behind a router that reads KV state, each replica's blocks are shown as its run goes
	 * (eng_kv_now); not on a disaggregated fleet, whose decode replicas' first iteration of a moved
	 * request may free blocks the run cannot foresee */
	e.decode_runs = e.runs && m->is_llm && c->policy->decode_run &&
	                (c->replicas > 1 ? !c->router->reads_kv || !c->disagg : c->workers == 1);
	e.kv_view = e.decode_runs && c->replicas > 1 && c->router->reads_kv;
	if (e.runs && !m->is_llm && eng_pass_table(&e) != 0) {
		err_memory(err, errlen, "out of memory setting up the run");
		goto fail;
	}
	for (uint32_t i = 0; i < c->workers; i++) {
		e.devices[i].task.reqs = calloc(c->env.max_batch, sizeof(struct pol_request *));
		if (m->is_llm) {
			e.devices[i].task.tokens = calloc(c->env.max_batch, sizeof(uint32_t));
			e.devices[i].task.context = calloc(c->env.max_batch, sizeof(uint32_t));
			if (!e.devices[i].task.tokens || !e.devices[i].task.context) {
				err_memory(err, errlen, "out of memory setting up the run");
				goto fail;
			}
		}
		if (e.decode_runs) {
			e.devices[i].iter_end = calloc(POL_DECODE_RUN_MAX, sizeof(int64_t));
			e.devices[i].iter_held = calloc(POL_DECODE_RUN_MAX, sizeof(uint64_t));
			if (!e.devices[i].iter_end || !e.devices[i].iter_held) {
				err_memory(err, errlen, "out of memory setting up the run");
				goto fail;
			}
		}
		if (e.has_cold)
			e.devices[i].cold_owed_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof(int64_t));
		if (e.walk_len)
			e.devices[i].walk = calloc(e.walk_len, sizeof(int64_t));
		if (!e.devices[i].task.reqs || (e.has_cold && !e.devices[i].cold_owed_ns) ||
		    (e.walk_len && !e.devices[i].walk)) {
			err_memory(err, errlen, "out of memory setting up the run");
			goto fail;
		}
		/* nothing has run on a device yet: every node type owes the longest idle's refill */
		for (uint32_t type = 0; e.has_cold && type < m->nnodes; type++)
			e.devices[i].cold_owed_ns[type] = eng_latency_cold_ns(e.lat, type, INT64_MAX);
	}
	if (eng_loop(&e) != 0)
		goto fail;
	/* every arrival, task end and wake-up is an event; a run's inner boundaries count as the
	 * task ends they replace, as the driver counts them as tasks (drv_run_extend), and every
	 * task has ended by now */
	uint64_t events = e.drv.arrived + e.drv.tasks + e.wakeups;
	struct drv_run_end end = { .end_ns = e.now_ns, .workers = c->workers, .sla_ns = c->sla_ns, .events = events,
	                           .cold_starts = e.cold_starts };
	if (drv_finish(&e.drv, &end, res, err, errlen) != 0)
		goto fail;
	eng_teardown(&e);
	return 0;
fail:
	eng_teardown(&e);
	memset(res, 0, sizeof *res);
	return -1;
}

double eng_capacity_rps(const struct mdl_model *m, const struct hw_model *hw, uint32_t workers,
                        uint32_t max_batch, uint32_t input_len, uint32_t output_len,
                        char *err, size_t errlen)
{
	/* A tree's level runs as one batch of its cells: a graph batch of b trees
	 * needs b * leaves cells, so only batches whose leaves fit are priced. */
	uint32_t cells = m->is_tree && input_len > max_batch ? input_len : max_batch;
	struct eng_latency *l = eng_latency_create(m, hw, cells, input_len, output_len, err, errlen);
	if (!l)
		return -1;
	double best = 0;
	for (uint32_t b = 1; b <= max_batch && (b == 1 || !m->is_tree || (uint64_t)b * input_len <= cells); b++) {
		double rps = b / (eng_latency_graph_ns(l, b, input_len, output_len) * 1e-9);
		if (rps > best)
			best = rps;
	}
	eng_latency_destroy(l);
	return best * workers;
}
