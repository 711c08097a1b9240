/* sim/engine.c: the event loop of one simulated run (DESIGN.md section 2).
 *
 * Time is integer nanoseconds. Arrivals are generated one ahead and the one
 * pending arrival waits beside the event queue, not in it (the loop takes
 * whichever of the two comes first in evq_before's order): memory does not
 * grow with the run, and the queue holds only completions and wake-ups. All
 * events of one instant are delivered to the policy before any idle device
 * asks it for work, so requests arriving together can be batched together.
 */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "engine.h"
#include "evq.h"
#include "rng.h"
#include "timeline.h"

#define ENG_POOL_CHUNK 4096

struct eng_device {
	int busy;
	struct pol_task task;          /* the running task; reqs has env.max_batch slots */
	int64_t idle_since_ns;         /* end of its last task */
	int64_t *cold_owed_ns;         /* [node type]: refill the next task to run it pays (with a cold-start model) */
};

struct eng_pool_chunk {             /* requests are allocated in chunks and recycled */
	struct eng_pool_chunk *next;
	struct pol_request reqs[ENG_POOL_CHUNK];
};

struct eng {
	const struct eng_config *c;
	struct pol_env env;
	struct pol_state *pol;
	struct eng_latency *lat;
	struct evq *q;
	struct metrics *metrics;
	struct eng_device *devices;
	gsl_rng *rng_arrivals;
	gsl_rng *rng_lengths;
	struct trc_arrivals arrivals;

	struct eng_pool_chunk *chunks;
	struct pol_request *free_reqs;  /* free list through pol_next */

	struct event arrival;           /* the next arrival, when arrival_pending */
	int arrival_pending;
	uint64_t next_id;               /* id of the next arrival */
	double next_arrival_s;          /* generated arrivals: time of the next one */
	int arrivals_done;              /* no more arrivals will be scheduled */
	int64_t wake_pending_ns;        /* earliest scheduled wake-up, INT64_MAX if none */

	uint64_t completed, measured, tasks, task_members, events;
	uint64_t *node_tasks, *node_cells;  /* per node type: NODE tasks and their cells */
	uint64_t graph_tasks, graph_members;
	int64_t busy_ns;
	int64_t first_measured_arrival_ns, last_finish_ns, now_ns;
	int has_cold;                   /* eng_latency_has_cold; 0: every task runs warm */
	uint64_t cold_starts;           /* tasks that paid a refill */

	struct timeline *timeline;      /* not owned; NULL unless --timeline-out */
	struct results_request_row *rows;
	size_t rows_cap;
	char *err;
	size_t errlen;
};

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
	/* field by field: a memset of the struct compiles to `rep stos`, whose
	 * start-up cost was measured at a tenth of the whole loop */
	r->next_node = 0;
	r->in_flight = 0;
	r->pol_next = NULL;
	r->pol_word[0] = r->pol_word[1] = 0;
	return r;
}

static void eng_req_release(struct eng *e, struct pol_request *r)
{
	r->pol_next = e->free_reqs;
	e->free_reqs = r;
}

/* Schedules the next arrival, or marks arrivals done. */
static int eng_schedule_arrival(struct eng *e)
{
	const struct eng_config *c = e->c;
	int64_t t_ns;
	if (c->trace) {
		uint64_t limit = c->requests && c->requests < c->trace->n ? c->requests : c->trace->n;
		if (e->next_id >= limit) {
			e->arrivals_done = 1;
			return 0;
		}
		t_ns = (int64_t)(c->trace->arrival_s[e->next_id] * 1e9 + 0.5);
	} else {
		if (e->next_id > 0)
			e->next_arrival_s += trc_arrivals_next_gap_s(&e->arrivals, e->rng_arrivals);
		if ((c->requests && e->next_id >= c->requests) ||
		    (!c->requests && e->next_arrival_s >= c->duration_s)) {
			e->arrivals_done = 1;
			return 0;
		}
		t_ns = (int64_t)(e->next_arrival_s * 1e9 + 0.5);
	}
	e->arrival = (struct event){ .time_ns = t_ns, .key = e->next_id, .kind = EV_ARRIVAL };
	e->arrival_pending = 1;
	return 0;
}

/* The earliest pending event in the one total order, or NULL. */
static const struct event *eng_peek(const struct eng *e)
{
	const struct event *top = evq_peek(e->q);
	if (e->arrival_pending && (!top || evq_before(&e->arrival, top)))
		return &e->arrival;
	return top;
}

static int eng_pop(struct eng *e, struct event *ev)
{
	const struct event *next = eng_peek(e);
	if (!next)
		return 0;
	if (next == &e->arrival) {
		*ev = e->arrival;
		e->arrival_pending = 0;
		return 1;
	}
	return evq_pop(e->q, ev);
}

static int eng_on_arrival(struct eng *e, const struct event *ev)
{
	const struct eng_config *c = e->c;
	const struct mdl_model *m = c->model;
	struct pol_request *r = eng_req_alloc(e);
	if (!r) {
		snprintf(e->err, e->errlen, "out of memory for requests");
		return -1;
	}
	r->id = ev->key;
	r->arrival_ns = ev->time_ns;
	r->first_start_ns = -1;
	if (c->trace) {
		r->input_len = c->trace->input_len[r->id];
		r->output_len = c->trace->output_len[r->id];
	} else {
		r->input_len = m->uses_input_len ? trc_lengths_draw(c->input_len, e->rng_lengths) : 0;
		r->output_len = m->uses_output_len ? trc_lengths_draw(c->output_len, e->rng_lengths) : 0;
	}
	pol_req_start(r, m);
	if (r->chain_len == 0) {
		snprintf(e->err, e->errlen, "request %llu (input_len %u, output_len %u) gives model %s no node to run",
		         (unsigned long long)r->id, r->input_len, r->output_len, m->name);
		eng_req_release(e, r);
		return -1;
	}
	e->next_id++;
	c->policy->on_arrival(e->pol, r, ev->time_ns);
	return eng_schedule_arrival(e);
}

static int eng_keep_row(struct eng *e, const struct pol_request *r, int64_t finish_ns)
{
	if (r->id >= e->rows_cap) {
		size_t cap = e->rows_cap ? e->rows_cap : 1024;
		while (cap <= r->id)
			cap *= 2;
		struct results_request_row *rows = realloc(e->rows, cap * sizeof *rows);
		if (!rows) {
			snprintf(e->err, e->errlen, "out of memory for per-request rows");
			return -1;
		}
		e->rows = rows;
		e->rows_cap = cap;
	}
	e->rows[r->id] = (struct results_request_row){
		.id = r->id, .arrival_s = r->arrival_ns * 1e-9, .start_s = r->first_start_ns * 1e-9,
		.finish_s = finish_ns * 1e-9, .input_len = r->input_len, .output_len = r->output_len,
	};
	return 0;
}

static int eng_on_task_done(struct eng *e, const struct event *ev)
{
	const struct mdl_model *m = e->c->model;
	struct eng_device *d = &e->devices[ev->aux];
	struct pol_task *t = &d->task;
	assert(d->busy);
	pol_task_advance(t, m);
	d->busy = 0;
	if (e->has_cold)
		d->idle_since_ns = ev->time_ns;
	e->c->policy->on_task_done(e->pol, t, ev->time_ns);
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (!pol_req_done(r))
			continue;
		e->completed++;
		e->last_finish_ns = ev->time_ns;
		if (r->id >= e->c->warmup) {
			if (e->measured == 0)
				e->first_measured_arrival_ns = r->arrival_ns;
			else if (r->arrival_ns < e->first_measured_arrival_ns)
				e->first_measured_arrival_ns = r->arrival_ns;
			e->measured++;
			if (metrics_record(e->metrics, ev->time_ns - r->arrival_ns,
			                   r->first_start_ns - r->arrival_ns) != 0) {
				snprintf(e->err, e->errlen, "out of memory recording latencies");
				return -1;
			}
		}
		if (e->c->keep_request_rows && eng_keep_row(e, r, ev->time_ns) != 0)
			return -1;
		eng_req_release(e, r);
	}
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
			extra += d->cold_owed_ns[type];
			d->cold_owed_ns[type] = 0;
		}
	}
	e->cold_starts += extra > 0;
	return extra;
}

static int eng_start_task(struct eng *e, uint32_t dev, int64_t now_ns)
{
	struct eng_device *d = &e->devices[dev];
	struct pol_task *t = &d->task;
	assert(t->nreq >= 1 && t->nreq <= e->env.max_batch);
	uint64_t key = UINT64_MAX;
	uint32_t max_in = 0, max_out = 0, cells = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		assert(!r->in_flight && !pol_req_done(r));
		assert(t->kind == POL_TASK_GRAPH || pol_req_node(r) == t->node_type);
		r->in_flight = 1;
		if (r->first_start_ns < 0)
			r->first_start_ns = now_ns;
		if (r->id < key)
			key = r->id;
		if (r->input_len > max_in)
			max_in = r->input_len;
		if (r->output_len > max_out)
			max_out = r->output_len;
		cells += pol_req_cells(r);
	}
	int64_t dur_ns;
	if (t->kind == POL_TASK_GRAPH) {
		t->cells = t->nreq;
		dur_ns = eng_latency_graph_ns(e->lat, t->nreq, max_in, max_out);
		e->graph_tasks++;
		e->graph_members += t->nreq;
	} else {
		assert(cells <= e->env.max_batch || t->nreq == 1);
		t->cells = cells;
		dur_ns = eng_latency_node_ns(e->lat, t->node_type, cells);
		e->node_tasks[t->node_type]++;
		e->node_cells[t->node_type] += cells;
	}
	if (e->has_cold)
		dur_ns += eng_cold_extra(e, d, t, now_ns, max_in, max_out);
	t->device = dev;
	t->start_ns = now_ns;
	t->end_ns = now_ns + dur_ns;
	d->busy = 1;
	e->tasks++;
	e->task_members += t->nreq;
	e->busy_ns += dur_ns;
	if (e->timeline && timeline_task(e->timeline, t) != 0) {
		snprintf(e->err, e->errlen, "error writing the timeline");
		return -1;
	}
	if (evq_add(e->q, t->end_ns, key, EV_TASK_DONE, dev) != 0) {
		snprintf(e->err, e->errlen, "out of memory in the event queue");
		return -1;
	}
	return 0;
}

/* Offers every idle device to the policy, in device order. */
static int eng_dispatch(struct eng *e, int64_t now_ns)
{
	int64_t wake_ns = INT64_MAX;
	for (uint32_t dev = 0; dev < e->env.workers; dev++) {
		struct eng_device *d = &e->devices[dev];
		if (d->busy)
			continue;
		d->task.nreq = 0;
		if (!e->c->policy->next_task(e->pol, dev, now_ns, &d->task, &wake_ns))
			continue;
		if (eng_start_task(e, dev, now_ns) != 0)
			return -1;
	}
	if (wake_ns != INT64_MAX && wake_ns > now_ns && wake_ns < e->wake_pending_ns) {
		if (evq_add(e->q, wake_ns, 0, EV_WAKEUP, 0) != 0) {
			snprintf(e->err, e->errlen, "out of memory in the event queue");
			return -1;
		}
		e->wake_pending_ns = wake_ns;
	}
	return 0;
}

static int eng_handle(struct eng *e, const struct event *ev)
{
	e->events++;
	switch (ev->kind) {
	case EV_ARRIVAL:
		return eng_on_arrival(e, ev);
	case EV_TASK_DONE:
		return eng_on_task_done(e, ev);
	case EV_WAKEUP:
		if (ev->time_ns == e->wake_pending_ns)
			e->wake_pending_ns = INT64_MAX;
		return 0;
	}
	return 0;
}

static int eng_loop(struct eng *e)
{
	struct event ev;
	if (eng_schedule_arrival(e) != 0)
		return -1;
	while (eng_pop(e, &ev)) {
		int64_t now = ev.time_ns;
		e->now_ns = now;
		if (eng_handle(e, &ev) != 0)
			return -1;
		const struct event *nx;
		while ((nx = eng_peek(e)) && nx->time_ns == now) {
			eng_pop(e, &ev);
			if (eng_handle(e, &ev) != 0)
				return -1;
		}
		if (eng_dispatch(e, now) != 0)
			return -1;
	}
	if (e->completed != e->next_id) {
		snprintf(e->err, e->errlen,
		         "policy %s stopped with %llu of %llu requests unfinished (no task offered, no wake-up asked)",
		         e->c->policy->name, (unsigned long long)(e->next_id - e->completed),
		         (unsigned long long)e->next_id);
		return -1;
	}
	return 0;
}

static void eng_teardown(struct eng *e)
{
	if (e->pol && e->c->policy->fini)
		e->c->policy->fini(e->pol);
	free(e->pol);
	if (e->devices)
		for (uint32_t i = 0; i < e->env.workers; i++) {
			free(e->devices[i].task.reqs);
			free(e->devices[i].cold_owed_ns);
		}
	free(e->devices);
	while (e->chunks) {
		struct eng_pool_chunk *n = e->chunks->next;
		free(e->chunks);
		e->chunks = n;
	}
	eng_latency_destroy(e->lat);
	evq_destroy(e->q);
	metrics_destroy(e->metrics);
	if (e->rng_arrivals)
		gsl_rng_free(e->rng_arrivals);
	if (e->rng_lengths)
		gsl_rng_free(e->rng_lengths);
	free(e->rows);
	free(e->node_tasks);
	free(e->node_cells);
}

/* Largest batch (cells) a task may run: the max batch, or for a tree model
 * the widest tree level if a lone request's level is wider. */
static uint32_t eng_max_cells(const struct eng_config *c)
{
	uint32_t cells = c->env.max_batch;
	if (!c->model->is_tree)
		return cells;
	uint32_t leaves = 0;
	if (c->trace) {
		for (size_t i = 0; i < c->trace->n; i++)
			if (c->trace->input_len[i] > leaves)
				leaves = c->trace->input_len[i];
	} else {
		leaves = trc_lengths_max(c->input_len);
	}
	return leaves > cells ? leaves : cells;
}

int eng_run(const struct eng_config *c, struct eng_result *res, char *err, size_t errlen)
{
	struct eng e = { .c = c, .err = err, .errlen = errlen, .wake_pending_ns = INT64_MAX };
	memset(res, 0, sizeof *res);
	e.env = c->env;
	e.env.model = c->model;
	e.env.workers = c->workers;
	if (c->workers < 1 || c->env.max_batch < 1) {
		snprintf(err, errlen, "workers and max batch must be at least 1");
		return -1;
	}
	e.lat = eng_latency_create(c->model, c->hw, eng_max_cells(c), err, errlen);
	if (!e.lat)
		goto fail;
	e.env.lat = (struct pol_latency){ .ctx = e.lat, .node_ns = eng_latency_node_ns,
	                                  .graph_ns = eng_latency_graph_ns };
	if (!c->trace && trc_arrivals_init(&e.arrivals, c->rate_rps, c->arrival_cv, err, errlen) != 0)
		goto fail;
	uint64_t expect = c->requests ? c->requests : (uint64_t)(c->rate_rps * c->duration_s * 1.05) + 16;
	if (c->trace && (!c->requests || c->requests > c->trace->n))
		expect = c->trace->n;
	e.q = evq_create(EVQ_QUAD_HEAP, 16 + 2 * (size_t)c->workers);
	e.metrics = metrics_create(expect > c->warmup ? expect - c->warmup : 1);
	e.rng_arrivals = rng_create(c->seed, RNG_ARRIVALS);
	e.rng_lengths = rng_create(c->seed, RNG_LENGTHS);
	e.devices = calloc(c->workers, sizeof *e.devices);
	e.node_tasks = calloc(c->model->nnodes, sizeof *e.node_tasks);
	e.node_cells = calloc(c->model->nnodes, sizeof *e.node_cells);
	e.timeline = c->timeline;
	e.pol = calloc(1, c->policy->state_size ? c->policy->state_size : 1);
	if (!e.q || !e.metrics || !e.rng_arrivals || !e.rng_lengths || !e.devices || !e.pol ||
	    !e.node_tasks || !e.node_cells) {
		snprintf(err, errlen, "out of memory setting up the run");
		goto fail;
	}
	e.has_cold = eng_latency_has_cold(e.lat);
	for (uint32_t i = 0; i < c->workers; i++) {
		e.devices[i].task.reqs = calloc(c->env.max_batch, sizeof(struct pol_request *));
		if (e.has_cold)
			e.devices[i].cold_owed_ns = calloc(c->model->nnodes ? c->model->nnodes : 1, sizeof(int64_t));
		if (!e.devices[i].task.reqs || (e.has_cold && !e.devices[i].cold_owed_ns)) {
			snprintf(err, errlen, "out of memory setting up the run");
			goto fail;
		}
		/* nothing has run on a device yet: every node type owes the longest idle's refill */
		for (uint32_t type = 0; e.has_cold && type < c->model->nnodes; type++)
			e.devices[i].cold_owed_ns[type] = eng_latency_cold_ns(e.lat, type, INT64_MAX);
	}
	if (c->policy->init((struct pol_state *)e.pol, &e.env, err, errlen) != 0) {
		free(e.pol);
		e.pol = NULL;
		goto fail;
	}
	if (eng_loop(&e) != 0)
		goto fail;

	res->issued = e.next_id;
	res->completed = e.completed;
	res->events = e.events;
	res->tasks = e.tasks;
	res->cold_starts = e.cold_starts;
	res->mean_batch = e.tasks ? (double)e.task_members / (double)e.tasks : 0.0;
	res->sim_end_s = e.now_ns * 1e-9;
	int64_t span_ns = e.last_finish_ns - e.first_measured_arrival_ns;
	res->throughput_rps = e.measured && span_ns > 0 ? (double)e.measured / (span_ns * 1e-9) : 0.0;
	res->busy_fraction = e.now_ns > 0 ? (double)e.busy_ns / ((double)e.now_ns * c->workers) : 0.0;
	metrics_finish(e.metrics, c->sla_ns, &res->summary);
	if (c->policy->stats)
		res->npolicy_stats = c->policy->stats((const struct pol_state *)e.pol, res->policy_stats, POL_MAX_STATS);
	res->nnodes = c->model->nnodes;
	res->node_tasks = e.node_tasks;
	res->node_cells = e.node_cells;
	res->graph_tasks = e.graph_tasks;
	res->graph_members = e.graph_members;
	e.node_tasks = e.node_cells = NULL;
	if (c->keep_request_rows) {
		res->rows = e.rows;
		res->nrows = e.completed;
		e.rows = NULL;
	}
	eng_teardown(&e);
	return 0;
fail:
	eng_teardown(&e);
	memset(res, 0, sizeof *res);
	return -1;
}

void eng_result_free(struct eng_result *res)
{
	free(res->node_tasks);
	free(res->node_cells);
	res->node_tasks = res->node_cells = NULL;
	free(res->rows);
	res->rows = NULL;
	res->nrows = 0;
}

double eng_capacity_rps(const struct mdl_model *m, const struct hw_model *hw, uint32_t workers,
                        uint32_t max_batch, uint32_t input_len, uint32_t output_len,
                        char *err, size_t errlen)
{
	/* A tree's level runs as one batch of its cells: a graph batch of b trees
	 * needs b * leaves cells, so only batches whose leaves fit are priced. */
	uint32_t cells = m->is_tree && input_len > max_batch ? input_len : max_batch;
	struct eng_latency *l = eng_latency_create(m, hw, cells, err, errlen);
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
