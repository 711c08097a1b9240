/* sim/engine/engine_state.h: the state of one simulated run, private to the
 * engine's files (engine.c, the event loop; runs.c, runs of nodes). Nothing
 * outside sim/engine/ includes it. */
#ifndef SB_ENGINE_STATE_H
#define SB_ENGINE_STATE_H

#include <assert.h>
#include "engine.h"
#include "clients.h"
#include "evq.h"
#include "latency.h"

#define ENG_POOL_CHUNK 4096
/* A fleet's decode runs are priced this many iterations ahead at most: an
 * arrival the router places on the replica ends its run, and the iterations
 * priced past it are wasted (64 replicas of llama2-7b at 4.5 req/s each, the
 * Azure conversation trace: 1,097M instructions at 64, 1,041M at 24, 1,048M
 * at 16, 1,142M at 8; bench/README.md "Decode runs"). One device prices to
 * its next arrival, which it knows, up to POL_DECODE_RUN_MAX. */
#define ENG_FLEET_DECODE_RUN 24

struct eng_device {
	int busy;
	struct pol_task task;          /* the running task; reqs has env.max_batch slots */
	struct drv_task_shape shape;   /* its shape, from the driver */
	int64_t idle_since_ns;         /* end of its last task */
	int64_t *cold_owed_ns;         /* [node type]: refill the next task to run it pays (with a cold-start model) */
	int64_t first_ns;              /* its first node's price: a run's boundaries are priced again from it */
	uint64_t run_nodes;            /* nodes the task runs (a run's, or 1), told the driver at its end */
	int64_t cut_from_ns, cut_ns;   /* cut runs: its run's first inner boundary at or after cut_from_ns
	                                * (INT64_MAX: none); cut_from_ns INT64_MAX: not looked up yet */
	uint64_t cut_nodes;            /* the nodes the run has run by cut_ns */
	int64_t *walk;                 /* runs: its run's pass summed node by node where the members set the
	                                * prices (2 * nnodes + 1, as seg_walk_ns), kept to price the run again */
	int walk_ready;                /* walk holds this run's sums */
	uint32_t decode_k;             /* decode runs: the iterations its ITER task runs (0 or 1: one) ... */
	int64_t *iter_end;             /* ... [POL_DECODE_RUN_MAX] each one's end ... */
	uint64_t *iter_held;           /* ... and the KV blocks each holds, filled when the run ends */
};

struct eng_pool_chunk {             /* requests are allocated in chunks and recycled */
	struct eng_pool_chunk *next;
	struct pol_request reqs[ENG_POOL_CHUNK];
};

struct eng {
	const struct eng_config *c;
	struct pol_driver drv;          /* the policy, its bookkeeping and the run's counters */
	struct eng_latency *lat;
	struct llm_cost *llm;           /* LLM models: an iteration's time */
	struct llm_cost **dev_llm;      /* a heterogeneous fleet: [device] its replica's prices (a group's shared;
	                                 * llm where the group's hardware is the run's), else NULL */
	struct pol_env *replica_env;    /* a heterogeneous fleet: [replica] its env, for the driver */
	const int64_t *node_ns;         /* lat's device table of node latencies, [type * node_stride + cells] */
	uint8_t *seg_on_p;              /* [segment]: a node's price changes pass by pass (eng_latency_step_on_p) */
	const uint8_t *by_members;      /* lat's: [type * node_stride + cells] priced at its members' own lengths */
	size_t node_stride;
	int64_t **seg_walk_ns;          /* runs only, a repeating segment's nodes at every batch, [segment][cells *
	                                 * (2 * nnodes + 1) + j]: its first j nodes of two passes summed, as node by
	                                 * node adds them (eng_run_end: whole passes at j = nnodes, where a run
	                                 * stops within one); j = 0 holds -1 where a node's price depends on its
	                                 * members' lengths (a pass is not one price). NULL: not a repeating segment */
	struct evq *q;
	struct eng_device *devices;
	uint32_t *started;              /* devices given a task at this instant, device order */
	struct trc_source source;
	struct eng_clients clients;     /* closed loop (c->concurrency > 0): the pending requests */

	struct eng_pool_chunk *chunks;
	struct pol_request *free_reqs;  /* free list through pol_next */

	struct { uint32_t batch, input_len, output_len; int64_t ns; } graph_last;   /* the last graph task's
	                                 * shape and price (batch 0: none yet): a CNN's every task repeats it */
	struct event done;              /* one device: its task's end, when done_pending (not queued) */
	int done_pending;
	struct event arrival;           /* the next arrival, when arrival_pending */
	struct trc_request next;        /* its request */
	int arrival_pending;
	int decode_runs;                /* LLM iterations may run as decode runs (policy.h): one device, or a
	                                 * fleet whose router reads no KV state; an arrival ends its replica's
	                                 * run, a KV move its decode replica's (eng_cut_decode_run) */
	int kv_view;                    /* a fleet whose router reads KV state: before each event, each replica in a
	                                 * decode run shows the blocks of the iteration running then (eng_kv_now) */
	int cut_runs;                   /* runs on several devices with the policy's boundary_waits: an
	                                 * arrival ends only the runs whose boundaries wait for it
	                                 * (eng_cut_runs). Here, in arrival_pending's padding: both are
	                                 * read every task (elsewhere, one device ran 3% slower) */
	int64_t wake_pending_ns;        /* earliest scheduled wake-up, INT64_MAX if none */
	uint32_t idle;                  /* devices not busy: none, and an instant offers nothing */
	uint64_t *idle_bits;            /* [workers / 64 rounded up]: bit d of word d / 64 set while device d is
	                                 * idle, so an instant offers the idle ones in device order without
	                                 * reading every device (a fleet's are mostly busy) */

	uint64_t wakeups;               /* wake-up events handled (the run's events: drv_run_end) */
	int64_t now_ns;
	int has_cold;                   /* eng_latency_has_cold; 0: every task runs warm */
	int runs;                       /* 1: a task the policy offers as a run runs as one (policy.h);
	                                 * not with a timeline (it lists tasks as they start, across
	                                 * devices), nor with cold starts (each type's first node in a
	                                 * run would pay its own); --node-by-node runs every node as its
	                                 * own task (to check that runs change nothing) */
	uint64_t cold_starts;           /* tasks that paid a refill */

	struct timeline *timeline;      /* not owned; NULL unless --timeline-out */
	char *err;
	size_t errlen;
	int may_wait;                   /* cut runs: a boundary_waits may hold (none found since the last
	                                 * arrival's instant) */
	int64_t *cut_at;                /* cut runs: [device] the boundary eng_cut_runs would end it at */
	size_t walk_len;                /* 2 * the most nodes of a segment + 1: a device's walk */
};

/* A node's latency at a batch of cells (eng_latency_node_ns, inline: the engine's hottest lookup). */
static inline int64_t eng_node_ns(const struct eng *e, uint32_t node_type, uint32_t cells)
{
	assert(cells >= 1 && cells < e->node_stride);
	return e->node_ns[node_type * e->node_stride + cells];
}

/* One node of type t run by the NODE task t's members, passes decoder steps
 * past their next node's: a pass node at their lengths (pol_pass_ns), a
 * decoder node over P and S at theirs (eng_latency_step_ns), any other at
 * the task's cells. */
static inline int64_t eng_task_node_ns(struct eng *e, const struct pol_task *t, uint32_t type, uint32_t passes)
{
	if (!e->by_members[type * e->node_stride + t->cells])
		return eng_node_ns(e, type, t->cells);
	/* eng_latency_task_node_ns's two cases, the pass node's inline (a Transformer encoder's every task) */
	if (mdl_is_pass(e->c->model, type))
		return pol_pass_ns(&e->drv.c.env.lat, type, t->nreq, t->reqs);
	return eng_latency_step_ns(e->lat, type, t->nreq, t->reqs, passes);
}

#endif
