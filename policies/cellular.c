/* policies/cellular.c: cellular batching, BatchMaker (Gao et al., EuroSys'18)
 * Sec. 3-4 and Algorithm 1. Batching decisions are made per cell, not per
 * request graph: a new request joins the running execution at the next cell,
 * and a request leaves the moment its last cell finishes.
 *
 * How the paper's terms map onto the simulator:
 *  - Cell type = one segment of the model (models/model.h): one repetition of
 *    a segment is one cell. For Seq2Seq the decoder cell is dec_cell followed
 *    by dec_proj, as BatchMaker's decoder cell includes the projection
 *    (Sec. 7.4); a batched cell of a multi-node segment runs as consecutive
 *    NODE tasks with the same members on the same device. Tree models have a
 *    leaf and an internal cell type (Sec. 4.4); a request contributes a whole
 *    tree level (pol_req_cells) to a batch, so a level is never split across
 *    tasks, unlike BatchMaker which may spread one request's leaves over
 *    several tasks.
 *  - Priority (Sec. 4.3): later cell types first (decoder over encoder,
 *    internal over leaf), i.e. the higher segment index wins.
 *  - Subgraph queues: per cell type, the requests whose next cell is of that
 *    type, in the order they became ready for it (FormBatchedTask scans them
 *    oldest first).
 *  - Bsizes: Max is --max-batch, or --max-batch-decoder for decoder cells (the
 *    BatchMaker-512,256 configuration of Sec. 7.4); Min is --min-batch, which
 *    Algorithm 1 uses only to stop submitting further tasks (line 16). Every
 *    size up to Max is taken as supported; batches are not rounded up.
 *  - Schedule (lines 4-11) runs when a worker is idle: a type with at least
 *    Max ready cells; else one with ready cells and no running task; else any
 *    with ready cells; ties to the highest priority. With one worker the
 *    second rule is the third (nothing runs while Schedule does), so a
 *    decoder cell that is ready always goes before the encoder unless the
 *    encoder has Max ready cells: newcomers wait for the decoders to drain.
 *    BatchMaker measured Seq2Seq on 2 and 4 GPUs, where the second rule
 *    gives the encoder another worker.
 *  - MaxTasksToSubmit (--max-tasks, default 5) counts batched cells. Batch
 *    (lines 12-23) submits up to that many cells of the chosen type to the
 *    worker at once, all formed from the subgraphs that were ready at that
 *    moment. The simulator has no kernel-launch gap to hide, so submitting
 *    ahead buys no time here; what it keeps is its cost: requests that arrive
 *    meanwhile cannot join until the worker has run those cells (the 5-step
 *    queueing bound of Sec. 7.3). Each later cell is formed when the previous
 *    one finishes, from the same snapshot: the same members (minus those that
 *    left), topped up with snapshot requests that did not fit before. One
 *    difference from forming all cells at the call: a snapshot request that
 *    was pinned to another worker at the call and has been released since
 *    may join a later cell here.
 *  - Pinning (lines 20-21, 27): a request in a worker's submitted cells is
 *    pinned to it and no other worker takes it; it is unpinned when it is in
 *    none of that worker's tasks any more, as the paper's per-subgraph
 *    counter does. With one task per device in flight at a time, "submitted"
 *    means the running cell and the next one already formed.
 * Requests never wait for a timer: an idle worker always gets work when some
 * cell is ready, so this policy never asks for a wake-up. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include "policy.h"
#include "../util/errkind.h"

/* Per-request bookkeeping, kept in the fields the policy owns:
 *   pol_next     next request in its cell-type queue
 *   pol_word[0]  previous request in that queue (pointer bits)
 *   pol_word[1]  seq << 17 | started << 16 | pinned
 * seq orders entries into queues (the snapshot of a Batch call is "seq below
 * the value at the call"); started says the request has run a cell of its
 * current type; pinned is the device + 1 it is pinned to, 0 when free. */
#define CEL_PIN_BITS 16
#define CEL_PIN_MASK ((UINT64_C(1) << CEL_PIN_BITS) - 1)
#define CEL_STARTED (UINT64_C(1) << CEL_PIN_BITS)
#define CEL_SEQ_SHIFT (CEL_PIN_BITS + 1)
#define CEL_MAX_WORKERS 65535u

struct cel_queue {
	struct pol_request *head, *tail;  /* not owned */
	uint64_t ready_cells;             /* cells of members not pinned to any device */
};

struct cel_dev {
	int active;                 /* a Batch call's cells are under way on this device */
	uint32_t seg;               /* their cell type */
	uint32_t node_off;          /* node within the cell that the next task runs */
	uint32_t cells_done;        /* batched cells of this Batch call finished */
	uint64_t snap_seq;          /* queue entries below this were ready at the Batch call */
	int pending;                /* members[] holds the next task */
	uint32_t nmembers;
	struct pol_request **members;  /* points into cel_state.member_pool */
};

struct cel_state {
	const struct mdl_model *model;  /* not owned */
	uint32_t nsegs;
	struct cel_queue *queues;       /* owned, one per segment */
	uint32_t *bsize_max;            /* owned, Bsizes.Max per segment */
	uint32_t min_batch;
	uint32_t max_tasks;
	uint32_t workers;
	struct cel_dev *devs;           /* owned */
	struct pol_request **member_pool;  /* owned, workers * max_batch */
	uint64_t next_seq;
	/* counters for the run summary */
	uint64_t schedules;             /* Batch calls (Algorithm 1, line 11) */
	uint64_t cells;                 /* batched cells run */
	uint64_t joins;                 /* requests that began a cell type beside requests already in it */
	uint64_t early_leaves;          /* requests that finished while their batch mates went on */
	uint64_t max_tasks_reached;     /* Batch calls that ran their full MaxTasksToSubmit cells */
};

static uint64_t cel_seq(const struct pol_request *r) { return r->pol_word[1] >> CEL_SEQ_SHIFT; }
static uint32_t cel_pinned(const struct pol_request *r) { return (uint32_t)(r->pol_word[1] & CEL_PIN_MASK); }
static int cel_started(const struct pol_request *r) { return (r->pol_word[1] & CEL_STARTED) != 0; }

static void cel_set_pinned(struct pol_request *r, uint32_t pin)
{
	r->pol_word[1] = (r->pol_word[1] & ~CEL_PIN_MASK) | pin;
}

static struct pol_request *cel_prev(const struct pol_request *r)
{
	return (struct pol_request *)(uintptr_t)r->pol_word[0];
}

static uint32_t cel_seg_of(const struct cel_state *c, const struct pol_request *r)
{
	return c->model->nodes[pol_req_node(r)].segment;
}

/* Appends r (free, at the first node of its cell type) to its type's queue. */
static void cel_push(struct cel_state *c, struct pol_request *r)
{
	struct cel_queue *q = &c->queues[cel_seg_of(c, r)];
	r->pol_next = NULL;
	r->pol_word[0] = (uint64_t)(uintptr_t)q->tail;
	r->pol_word[1] = c->next_seq++ << CEL_SEQ_SHIFT;
	if (q->tail)
		q->tail->pol_next = r;
	else
		q->head = r;
	q->tail = r;
	q->ready_cells += pol_req_cells(r);
}

static void cel_unlink(struct cel_queue *q, struct pol_request *r)
{
	struct pol_request *prev = cel_prev(r), *next = r->pol_next;
	if (prev)
		prev->pol_next = next;
	else
		q->head = next;
	if (next)
		next->pol_word[0] = (uint64_t)(uintptr_t)prev;
	else
		q->tail = prev;
	r->pol_next = NULL;
	r->pol_word[0] = 0;
}

static void cel_pin(struct cel_state *c, struct pol_request *r, uint32_t dev)
{
	struct cel_queue *q = &c->queues[cel_seg_of(c, r)];
	assert(cel_pinned(r) == 0 && q->ready_cells >= pol_req_cells(r));
	q->ready_cells -= pol_req_cells(r);
	cel_set_pinned(r, dev + 1);
}

static void cel_unpin(struct cel_state *c, struct pol_request *r)
{
	assert(cel_pinned(r) != 0);
	cel_set_pinned(r, 0);
	c->queues[cel_seg_of(c, r)].ready_cells += pol_req_cells(r);
}

/* FormBatchedTask (Algorithm 1, lines 24-32) for device dev: scans the queue
 * of type seg oldest first, taking requests that were ready at the Batch call
 * (seq < snap_seq), are free or already pinned to dev, up to Bsizes.Max
 * cells. A request whose tree level does not fit is skipped; one wider than
 * Max runs alone when nothing else was taken. Returns the cells taken. */
static uint64_t cel_form(const struct cel_state *c, uint32_t dev, uint32_t seg, uint64_t snap_seq,
                         struct pol_request **out, uint32_t *nout)
{
	uint64_t cap = c->bsize_max[seg], cells = 0;
	uint32_t n = 0;
	for (struct pol_request *r = c->queues[seg].head; r && cells < cap; r = r->pol_next) {
		if (cel_seq(r) >= snap_seq)
			break;  /* queues are in seq order: the rest arrived after the call */
		uint32_t pin = cel_pinned(r);
		if (r->in_flight || (pin != 0 && pin != dev + 1))
			continue;
		assert(pol_req_node(r) == c->model->segments[seg].first_node);
		uint32_t w = pol_req_cells(r);
		if (cells + w > cap) {
			if (n == 0) {
				out[n++] = r;
				cells = w;
				break;
			}
			continue;
		}
		out[n++] = r;
		cells += w;
	}
	*nout = n;
	return cells;
}

/* Counts joins (a request starting this cell type beside one already in it)
 * and marks every member as started. */
static void cel_note_joins(struct cel_state *c, struct pol_request *const *m, uint32_t n)
{
	uint32_t fresh = 0;
	for (uint32_t i = 0; i < n; i++)
		fresh += !cel_started(m[i]);
	if (fresh && fresh < n)
		c->joins += fresh;
	for (uint32_t i = 0; i < n; i++)
		m[i]->pol_word[1] |= CEL_STARTED;
}

static void cel_fill_task(const struct cel_state *c, const struct cel_dev *d, struct pol_task *task)
{
	task->kind = POL_TASK_NODE;
	task->node_type = c->model->segments[d->seg].first_node + d->node_off;
	task->nreq = d->nmembers;
	for (uint32_t i = 0; i < d->nmembers; i++)
		task->reqs[i] = d->members[i];
}

static void cel_fini(struct pol_state *st)
{
	struct cel_state *c = (struct cel_state *)st;
	free(c->queues);
	free(c->bsize_max);
	free(c->devs);
	free(c->member_pool);
}

static int cel_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	struct cel_state *c = (struct cel_state *)st;
	const struct mdl_model *m = env->model;
	uint32_t min_batch = (uint32_t)opt_uint(env->params, "min-batch");
	uint32_t max_batch_decoder = (uint32_t)opt_uint(env->params, "max-batch-decoder");
	if (env->workers > CEL_MAX_WORKERS) {
		snprintf(err, errlen, "cellular: at most %u workers", CEL_MAX_WORKERS);
		return -1;
	}
	if (min_batch > env->max_batch) {
		snprintf(err, errlen, "--min-batch=%u exceeds the max batch %u", min_batch, env->max_batch);
		return -1;
	}
	if (max_batch_decoder > env->max_batch) {
		snprintf(err, errlen, "cellular: --max-batch-decoder=%u exceeds --max-batch=%u",
		         max_batch_decoder, env->max_batch);
		return -1;
	}
	c->model = m;
	c->nsegs = m->nsegments;
	c->min_batch = min_batch;
	c->max_tasks = (uint32_t)opt_uint(env->params, "max-tasks");
	c->workers = env->workers;
	c->queues = calloc(c->nsegs, sizeof *c->queues);
	c->bsize_max = calloc(c->nsegs, sizeof *c->bsize_max);
	c->devs = calloc(c->workers, sizeof *c->devs);
	c->member_pool = calloc((size_t)c->workers * env->max_batch, sizeof *c->member_pool);
	if (!c->queues || !c->bsize_max || !c->devs || !c->member_pool) {
		err_memory(err, errlen, "cellular: out of memory");
		cel_fini(st);  /* the caller does not call fini after a failed init */
		return -1;
	}
	for (uint32_t s = 0; s < c->nsegs; s++)
		c->bsize_max[s] = m->segments[s].kind == MDL_DECODER && max_batch_decoder ? max_batch_decoder
		                  : env->max_batch;
	for (uint32_t d = 0; d < c->workers; d++)
		c->devs[d].members = c->member_pool + (size_t)d * env->max_batch;
	return 0;
}

static void cel_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	cel_push((struct cel_state *)st, r);
}

/* Ends dev's Batch call: every request still pinned to it becomes free. */
static void cel_end_batch(struct cel_state *c, struct cel_dev *d, const struct pol_task *t)
{
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (!pol_req_done(r) && cel_pinned(r) == t->device + 1)
			cel_unpin(c, r);
	}
	d->active = 0;
	d->pending = 0;
}

static void cel_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)now_ns;
	struct cel_state *c = (struct cel_state *)st;
	struct cel_dev *d = &c->devs[t->device];
	const struct mdl_segment *seg = &c->model->segments[d->seg];
	assert(d->active && !d->pending);

	if (d->node_off + 1 < seg->nnodes) {
		/* mid-cell: the same members run the cell's next node */
		d->node_off++;
		d->nmembers = t->nreq;
		for (uint32_t i = 0; i < t->nreq; i++) {
			assert(!pol_req_done(t->reqs[i]) && cel_seg_of(c, t->reqs[i]) == d->seg);
			d->members[i] = t->reqs[i];
		}
		d->pending = 1;
		return;
	}

	/* A batched cell finished: members that are done or moved on to another
	 * cell type leave this type's queue at once. */
	c->cells++;
	uint32_t ndone = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (pol_req_done(r)) {
			ndone++;
			cel_unlink(&c->queues[d->seg], r);
		} else if (cel_seg_of(c, r) != d->seg) {
			cel_unlink(&c->queues[d->seg], r);
			cel_push(c, r);
		}
	}
	if (ndone && ndone < t->nreq)
		c->early_leaves += ndone;
	d->node_off = 0;
	if (++d->cells_done >= c->max_tasks) {
		c->max_tasks_reached++;
		cel_end_batch(c, d, t);
		return;
	}
	/* The Batch call's next cell (lines 14-23): formed from its snapshot. */
	uint32_t n;
	uint64_t cells = cel_form(c, t->device, d->seg, d->snap_seq, d->members, &n);
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (!pol_req_done(r) && cel_pinned(r) == t->device + 1)
			cel_unpin(c, r);
	}
	if (n == 0 || cells < c->min_batch) {
		d->active = 0;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		cel_pin(c, d->members[i], t->device);
	cel_note_joins(c, d->members, n);
	d->nmembers = n;
	d->pending = 1;
}

/* Schedule (Algorithm 1, lines 4-11): the cell type to run on device dev, or
 * UINT32_MAX when no cell is ready. */
static uint32_t cel_pick_type(const struct cel_state *c)
{
	uint32_t best[3] = { UINT32_MAX, UINT32_MAX, UINT32_MAX };
	for (uint32_t s = 0; s < c->nsegs; s++) {
		uint64_t ready = c->queues[s].ready_cells;
		if (!ready)
			continue;
		uint32_t running = 0;
		for (uint32_t e = 0; e < c->workers; e++)
			running += c->devs[e].active && c->devs[e].seg == s;
		/* later segments overwrite earlier ones: the highest priority wins */
		if (ready >= c->bsize_max[s])
			best[0] = s;
		if (running == 0)
			best[1] = s;
		best[2] = s;
	}
	for (int k = 0; k < 3; k++)
		if (best[k] != UINT32_MAX)
			return best[k];
	return UINT32_MAX;
}

static int cel_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                         struct pol_task *task, int64_t *wake_ns)
{
	(void)now_ns;
	(void)wake_ns;
	struct cel_state *c = (struct cel_state *)st;
	struct cel_dev *d = &c->devs[device];
	if (d->pending) {
		cel_fill_task(c, d, task);
		d->pending = 0;
		return 1;
	}
	assert(!d->active);
	uint32_t s = cel_pick_type(c);
	if (s == UINT32_MAX)
		return 0;
	d->active = 1;
	d->seg = s;
	d->node_off = 0;
	d->cells_done = 0;
	d->snap_seq = c->next_seq;
	uint32_t n;
	cel_form(c, device, s, d->snap_seq, d->members, &n);
	assert(n > 0);  /* ready cells are free requests, all eligible */
	for (uint32_t i = 0; i < n; i++)
		cel_pin(c, d->members[i], device);
	cel_note_joins(c, d->members, n);
	d->nmembers = n;
	c->schedules++;
	cel_fill_task(c, d, task);
	return 1;
}

static size_t cel_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct cel_state *c = (const struct cel_state *)st;
	const struct pol_stat all[] = {
		{ "schedules", (double)c->schedules },
		{ "cells_per_schedule", c->schedules ? (double)c->cells / (double)c->schedules : 0.0 },
		{ "joins", (double)c->joins },
		{ "early_leaves", (double)c->early_leaves },
		{ "max_tasks_reached", (double)c->max_tasks_reached },
	};
	size_t n = 0;
	for (; n < sizeof all / sizeof all[0] && n < max; n++)
		out[n] = all[n];
	return n;
}

static const struct opt_def cel_params[] = {
	POL_PARAM_MAX_BATCH_DECODER,
	{ "min-batch", OPT_UINT, "1", 1, 65536, 0, "smallest batch a Batch call launches past its first cell "
	  "(Algorithm 1, line 16)" },
	{ "max-tasks", OPT_UINT, "5", 1, 1e6, 0, "tasks in flight per worker (MaxTasksToSubmit)" },
};

const struct pol_ops cellular_policy_ops = {
	.name = "cellular",
	.help = "cellular batching (BatchMaker): per-cell batches that requests join and leave",
	.state_size = sizeof(struct cel_state),
	.default_max_batch = 512,
	.params = cel_params,
	.nparams = sizeof cel_params / sizeof cel_params[0],
	.init = cel_init,
	.fini = cel_fini,
	.on_arrival = cel_on_arrival,
	.on_task_done = cel_on_task_done,
	.next_task = cel_next_task,
	.stats = cel_stats,
};
