/* sim/engine/runs.c: the simulator's two shortcuts, one room. Runs of
 * nodes (policy.h, "Optional capability: runs"; bench/README.md "Runs"): the
 * price tables a run sums whole passes from, and the cutting of runs on
 * several devices when an arrival may change a decision at a boundary; the
 * hot pricing of a run (eng_run_end) is inline in runs.h. Decode runs
 * (policy.h, "Optional capability: decode runs"; bench/README.md "Decode
 * runs"): an LLM iteration and the next ones of the same members priced as
 * one task, cut where a request reaches the replica, and the replicas' KV
 * state shown as the run goes to a router that reads it (router.h,
 * "Optional capability: reads_kv"). --node-by-node turns both off, to check
 * that they change no result. */
#include <assert.h>
#include <stdlib.h>
#include "runs.h"
#include "../../util/ns_math.h"

/* Whether a segment has a node type whose price at cells depends on its members' own lengths. */
static int eng_segment_varies(const struct eng *e, uint32_t segment, uint32_t cells)
{
	const struct mdl_segment *seg = &e->c->model->segments[segment];
	for (uint32_t j = 0; j < seg->nnodes; j++)
		if (e->by_members[(seg->first_node + j) * e->node_stride + cells])
			return 1;
	return 0;
}

/* e->seg_walk_ns and e->seg_on_p, for the segments a run goes round (encoder, decoder). */
int eng_pass_table(struct eng *e)
{
	const struct mdl_model *m = e->c->model;
	e->seg_on_p = calloc(m->nsegments ? m->nsegments : 1, 1);
	e->seg_walk_ns = calloc(m->nsegments ? m->nsegments : 1, sizeof *e->seg_walk_ns);
	uint32_t most = 0;
	for (uint32_t k = 0; k < m->nsegments; k++)
		most = m->segments[k].nnodes > most ? m->segments[k].nnodes : most;
	e->walk_len = 2 * (size_t)most + 1;
	if (!e->seg_on_p || !e->seg_walk_ns)
		return -1;
	for (uint32_t k = 0; k < m->nsegments; k++) {
		const struct mdl_segment *seg = &m->segments[k];
		if (seg->kind != MDL_ENCODER && seg->kind != MDL_DECODER)
			continue;
		for (uint32_t j = 0; j < seg->nnodes; j++)
			e->seg_on_p[k] |= (uint8_t)eng_latency_step_on_p(e->lat, seg->first_node + j);
		size_t w = 2 * (size_t)seg->nnodes + 1;
		int64_t *walk = e->seg_walk_ns[k] = calloc(e->node_stride * w, sizeof *walk);
		if (!walk)
			return -1;
		for (uint32_t cells = 1; cells < e->node_stride; cells++) {
			int64_t *at = walk + cells * w;
			for (uint32_t j = 0; j < 2 * seg->nnodes; j++)
				at[j + 1] = ns_add(at[j], eng_node_ns(e, seg->first_node + j % seg->nnodes, cells));
			/* sums that would not stay exact are no price either: the run sums node by node */
			if (eng_segment_varies(e, k, cells) || at[2 * seg->nnodes] == NS_SATURATED)
				at[0] = -1;
		}
	}
	return 0;
}

/* A busy device's first run boundary at or after at_ns before the run's
 * end, INT64_MAX if none (kept: boundaries do not move, so one answer
 * holds for every at_ns up to it). */
static int64_t eng_next_cut(struct eng *e, struct eng_device *d, int64_t at_ns)
{
	if (d->run_nodes == 1)
		return INT64_MAX;
	if (d->cut_from_ns <= at_ns && at_ns <= d->cut_ns)
		return d->cut_ns;
	int64_t b = eng_run_end(e, d, d->task.start_ns, d->first_ns, at_ns, &d->cut_nodes);
	d->cut_from_ns = at_ns;
	d->cut_ns = d->cut_nodes < d->run_nodes ? b : INT64_MAX;
	return d->cut_ns;
}

/* Cut runs (e->cut_runs), before the loop takes next: node by node, the
 * policy decides at every boundary of every device, after the events of
 * the boundary's instant; a run skips those decisions, which continue it
 * unless inputs are waited for at the boundary (boundary_waits). That can
 * turn true only at an arrival, so runs end at the first boundary where it
 * holds since the last instant, or at an arrival's instant (its events,
 * the boundary's end among them, come before the devices are offered).
 * Ending them here, before any event of that instant is taken, keeps the
 * ends in the one order of events. Returns 1 when it ended some. Out of
 * line (its own file): one device never calls it, and eng_loop stays as small. */
int eng_cut_runs(struct eng *e, const struct event *next)
{
	int64_t t_next = next->time_ns, at = INT64_MAX;
	int arriving = e->arrival_pending && e->arrival.time_ns == t_next;
	if (!arriving && !e->may_wait)
		return 0;
	int waits = 0;
	for (uint32_t dev = 0; dev < e->c->workers; dev++) {
		struct eng_device *d = &e->devices[dev];
		int64_t b = INT64_MAX;
		int w = drv_boundary_waits(&e->drv, dev);     /* asked of every device: one may start a run */
		waits |= w;
		if (d->busy && d->run_nodes > 1) {
			if (w)
				b = eng_next_cut(e, d, e->now_ns + 1);
			else if (arriving && eng_next_cut(e, d, t_next) == t_next)
				b = t_next;
		}
		e->cut_at[dev] = b;
		if (b < at)
			at = b;
	}
	/* after an arrival's instant until a scan finds none waiting: only an arrival turns one on */
	e->may_wait = waits || arriving;
	if (at > t_next)
		return 0;
	for (uint32_t dev = 0; dev < e->c->workers; dev++) {
		if (e->cut_at[dev] != at)
			continue;
		struct eng_device *d = &e->devices[dev];
		d->task.end_ns = at;                  /* eng_next_cut found it, and the nodes up to it */
		d->run_nodes = d->cut_nodes;
		d->cut_from_ns = INT64_MAX;
		int moved = evq_advance(e->q, EV_TASK_DONE, dev, at);
		assert(moved);
		(void)moved;
	}
	return 1;
}

/* ---- decode runs ---- */

/* The decode run on d: its iteration running at at_ns (0-based; one ending exactly then counts, the next
 * being built only after the instant's events), the last when at_ns is past them all. */
static uint32_t eng_run_iteration_at(const struct eng_device *d, int64_t at_ns)
{
	uint32_t j = 0;
	while (j + 1 < d->decode_k && d->iter_end[j] < at_ns)
		j++;
	return j;
}

/* A request that reaches the replica on device dev at at_ns (routed there
 * now, or its KV moved there then) joins the iteration built first at or
 * after it: a decode run there ends at its first boundary at or after at_ns
 * (the iterations after it are built anew, as they would have been). */
void eng_cut_decode_run(struct eng *e, struct eng_device *d, uint32_t dev, int64_t at_ns)
{
	if (!d->busy || d->decode_k < 2 || d->iter_end[d->decode_k - 2] < at_ns)
		return;                           /* no boundary of the run's at or after at_ns but its end */
	uint32_t j = eng_run_iteration_at(d, at_ns);
	d->decode_k = j + 1;
	d->task.end_ns = d->iter_end[j];
	int moved = evq_advance(e->q, EV_TASK_DONE, dev, d->iter_end[j]);
	assert(moved);
	(void)moved;
}

/* A decode run (policy.h) from the ITER task just started on device dev,
 * its first iteration priced first_ns: as many iterations as the driver and
 * the policy allow, each priced with its members one token further, the
 * next begun only before the horizon (the next arrival on one device, which
 * joins the iteration after it; a fleet's arrivals end runs as they come).
 * The run's length, or -1 with e->err. */
int64_t eng_decode_run_ns(struct eng *e, struct eng_device *d, uint32_t dev, int64_t now_ns, int64_t first_ns)
{
	struct pol_task *t = &d->task;
	uint32_t k = drv_decode_run(&e->drv, dev, t, e->c->replicas > 1 ? ENG_FLEET_DECODE_RUN : POL_DECODE_RUN_MAX,
	                            e->kv_view ? d->iter_held : NULL), n = 1;
	d->decode_k = 1;
	if (k < 2)
		return first_ns;
	int64_t horizon = e->c->replicas > 1 ? e->wake_pending_ns : eng_horizon(e), move = drv_next_move_ns(&e->drv, dev);
	if (move < horizon)
		horizon = move;                   /* a decode replica: a request whose KV lands then joins */
	const struct llm_cost *cost = e->dev_llm ? e->dev_llm[dev] : e->llm;
	uint64_t context_sum = 0;
	for (uint32_t i = 0; i < t->nreq; i++)
		context_sum += t->context[i];
	d->iter_end[0] = ns_add(now_ns, first_ns);
	for (; n < k && d->iter_end[n - 1] < horizon; n++) {
		/* every member decodes a token further (each emits): priced from the sum where the hardware
		 * model can, else member by member */
		context_sum += t->nreq;
		int64_t ns = llm_cost_decode_ns(cost, t->nreq, context_sum);
		if (ns == 0) {                    /* iteration n + 1: each member n tokens on */
			for (uint32_t i = 0; i < t->nreq; i++)
				t->context[i] += n;
			ns = eng_iter_emitting_ns(e, t, t->nreq);
			for (uint32_t i = 0; i < t->nreq; i++)
				t->context[i] -= n;       /* the task stays its first iteration until the run ends */
		}
		if (ns < 0)
			return -1;
		d->iter_end[n] = ns_add(d->iter_end[n - 1], ns);
	}
	d->decode_k = n;
	return d->iter_end[n - 1] - now_ns;
}

/* Before an event at now_ns, a router that reads KV state must find each replica in a decode run
 * holding what the iteration running then holds, as built one by one (an iteration ending exactly at
 * that time: its own, the next being built only after the instant's events). A scraping router's
 * snapshot is of the first event at or after the scrape instant, and one by one that may have been an
 * inner boundary of some run: the replicas are shown as of then (nothing else changes in between: no
 * event of the engine's came between). */
void eng_kv_now(struct eng *e, int64_t now_ns)
{
	int64_t at = now_ns, refresh = e->c->router_refresh_ns;
	if (refresh > 0) {
		if (!drv_fleet_scrape_due(&e->drv, now_ns))
			return;                       /* nothing reads the replicas' blocks before the next scrape */
		for (uint32_t dev = 0; dev < e->c->workers; dev++) {
			const struct eng_device *d = &e->devices[dev];
			for (uint32_t j = 0; d->busy && d->decode_k > 1 && j < d->decode_k && d->iter_end[j] < at; j++)
				if (d->iter_end[j] >= now_ns / refresh * refresh)
					at = d->iter_end[j];
		}
	}
	for (uint32_t dev = 0; dev < e->c->workers; dev++) {
		const struct eng_device *d = &e->devices[dev];
		if (d->busy && d->decode_k > 1)
			drv_fleet_kv_now(&e->drv, dev, d->iter_held[eng_run_iteration_at(d, at)]);
	}
}
