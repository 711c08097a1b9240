/* sim/engine/runs.c: the simulator's two shortcuts, one room. Runs of
 * nodes (policy.h, "Optional capability: runs"; bench/README.md "Runs"): the
 * price tables a run sums whole passes from, and the cutting of runs on
 * several devices when an arrival may change a decision at a boundary; the
 * hot pricing of a run (eng_run_end) is inline in runs.h. Decode runs
 * (policy.h, "Optional capability: decode runs"; bench/README.md "Decode
 * runs"): an LLM iteration and the next ones of the same members priced as
 * one task, cut where a request reaches the replica, and the replicas' KV
 * state shown as the run goes to a router that reads it (router.h,
 * "Optional capability: reads_kv"): all inline in runs.h, as the event loop
 * calls them. --node-by-node turns both off, to check that they change no
 * result. */
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
