/* sim/engine/runs.h: the simulator's shortcuts (runs.c): a NODE task the
 * policy offers as a run (policy.h, "Optional capability: runs") is priced
 * to the first boundary at or after the horizon in one step; an LLM
 * iteration the policy offers as a decode run ("Optional capability: decode
 * runs") is priced with the iterations after it as one task, cut where a
 * request reaches its replica. Inline here what the event loop calls (out
 * of line, the decode runs' three functions cost a serial run 5% more CPU:
 * bench/paired.py serial, 0.94 against 1.01 inline); the rest in runs.c. */
#ifndef SB_ENGINE_RUNS_H
#define SB_ENGINE_RUNS_H

#include <assert.h>
#include "engine_state.h"
#include "../../util/ns_math.h"
#include "../../hwmodels/llm_cost.h"

/* e->seg_walk_ns and e->seg_on_p, for the segments a run goes round. 0, or -1 out of memory. */
int eng_pass_table(struct eng *e);

/* Ends the runs an event about to be taken (next) cuts short; 1 when it ended some (runs.c). */
int eng_cut_runs(struct eng *e, const struct event *next);

/* An LLM iteration's time (hwmodels/llm_cost.h): the members that reach
 * their target this iteration emit a token, and only they run the LM head. */
static inline int64_t eng_iter_emitting_ns(struct eng *e, const struct pol_task *t, uint32_t emitting)
{
	struct llm_cost *cost = e->dev_llm ? e->dev_llm[t->device] : e->llm;
	return llm_cost_iter_ns(cost, t->nreq, t->tokens, t->context, emitting, t->pad_tokens, e->err, e->errlen);
}

/* Segment's row of e->seg_walk_ns at cells, or NULL where it has none. */
static inline const int64_t *eng_walk_row(const struct eng *e, uint32_t segment, uint32_t cells)
{
	const int64_t *walk = e->seg_walk_ns[segment];
	if (!walk)
		return NULL;
	walk += cells * (2 * (size_t)e->c->model->segments[segment].nnodes + 1);
	return walk[0] == 0 ? walk : NULL;
}

/* Where a run starting now must end: the next scheduled wake-up, and the
 * next arrival unless runs are cut (then eng_cut_runs ends them). */
static inline int64_t eng_horizon(const struct eng *e)
{
	int64_t horizon = e->arrival_pending && !e->cut_runs ? e->arrival.time_ns : INT64_MAX;
	return e->wake_pending_ns < horizon ? e->wake_pending_ns : horizon;
}

/* A NODE task the policy offered as a run (policy.h, "Optional capability: runs"), started at
 * start_ns with its first node taking first_ns: the end of the run's last
 * node, and in *nodes how many it runs. Node j > 0 runs when it starts
 * before the horizon, where the policy must decide again: the run ends at
 * its first boundary at or after the horizon. Whole passes through the
 * segment's nodes are priced at once. Inlined: out of line, its arguments
 * and *nodes cost a one-device lazy run 3% more instructions. */
static inline __attribute__((always_inline)) int64_t eng_run_end(struct eng *e, struct eng_device *d, int64_t start_ns,
                                                                 int64_t first_ns, int64_t horizon, uint64_t *nodes)
{
	const struct pol_task *t = &d->task;
	int64_t end_ns = ns_add(start_ns, first_ns);
	*nodes = 1;
	if (end_ns >= horizon)
		return end_ns;
	const struct mdl_model *m = e->c->model;
	uint32_t segment = m->nodes[t->node_type].segment;
	const struct mdl_segment *seg = &m->segments[segment];
	const uint32_t first = seg->first_node, last = first + seg->nnodes - 1;
	/* node n of the run is of type `type`, kept as n grows (mdl_run_type without its division) */
	uint64_t n = 1, passes = 0;
	uint32_t type = t->node_type == last ? first : t->node_type + 1;
	const int64_t *walk = eng_walk_row(e, segment, t->cells);
	int64_t pass_ns = walk ? walk[seg->nnodes] : -1;     /* -1: not one price a pass */
	if (seg->kind == MDL_PASS) {
		/* a pass segment runs once, its types in order, each at the members' lengths */
		for (; n < t->run_max && end_ns < horizon; n++) {
			end_ns = ns_add(end_ns, eng_task_node_ns(e, t, type, 0));
			type = type == last ? first : type + 1;
		}
	} else if (!walk && e->seg_on_p[segment]) {
		/* each decoder step its own price: the members attend to one more position a pass */
		for (uint32_t step = 0; n < t->run_max && end_ns < horizon; n++) {
			step += type == first;
			end_ns = ns_add(end_ns, eng_task_node_ns(e, t, type, step));
			type = type == last ? first : type + 1;
		}
	} else {
		passes = (t->run_max - 1) / seg->nnodes;
	}
	if (!walk && passes) {
		/* the members' inputs set a node's price, the same every pass: one
		 * pass priced once (per run: a cut prices it again), summed node by
		 * node for the rest of a pass */
		int64_t *sum = d->walk;
		if (!d->walk_ready) {
			for (uint32_t j = 0; j < seg->nnodes; j++)
				sum[j + 1] = ns_add(sum[j], eng_task_node_ns(e, t, first + j, 0));
			for (uint32_t j = 0; j < seg->nnodes; j++)
				sum[seg->nnodes + j + 1] = ns_add(sum[seg->nnodes], sum[j + 1]);
			d->walk_ready = 1;
		}
		pass_ns = sum[seg->nnodes];
		walk = pass_ns <= INT64_MAX / 2 ? sum : NULL;
	}
	if (passes) {
		/* every node of q passes starts before the horizon when end + q * pass < horizon */
		uint64_t fit = (uint64_t)((horizon - 1 - end_ns) / pass_ns);
		if (fit < passes)
			passes = fit;
		end_ns += (int64_t)passes * pass_ns;
		n += passes * seg->nnodes;             /* whole passes: node n's type is unchanged */
	}
	if (walk) {
		/* the rest of a pass from the sums: node k + 1 runs while the first k end before the horizon */
		uint32_t a = type - first, k = 0;
		uint64_t cap = t->run_max - n < seg->nnodes ? t->run_max - n : seg->nnodes;
		while (k < cap && walk[a + k] - walk[a] < horizon - end_ns)
			k++;
		end_ns = ns_add(end_ns, walk[a + k] - walk[a]);
		n += k;
		type = first + (a + k >= seg->nnodes ? a + k - seg->nnodes : a + k);
	}
	while (n < t->run_max && end_ns < horizon) {
		end_ns = ns_add(end_ns, eng_task_node_ns(e, t, type, 0));
		type = type == last ? first : type + 1;
		n++;
	}
	*nodes = n;
	return end_ns;
}

/* ---- decode runs (policy.h, "Optional capability: decode runs"), inline where the event loop calls them ---- */

/* The decode run on d: its iteration running at at_ns (0-based; one ending exactly then counts, the next
 * being built only after the instant's events), the last when at_ns is past them all. */
static inline uint32_t eng_run_iteration_at(const struct eng_device *d, int64_t at_ns)
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
static inline void eng_cut_decode_run(struct eng *e, struct eng_device *d, uint32_t dev, int64_t at_ns)
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
static inline int64_t eng_decode_run_ns(struct eng *e, struct eng_device *d, uint32_t dev, int64_t now_ns, int64_t first_ns)
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
static inline void eng_kv_now(struct eng *e, int64_t now_ns)
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

#endif
