/* policies/slack.h: LazyBatching's SLA-aware slack predictor (Sec. IV-C).
 *
 *  - NodeLatency(n): the profiled single-input latency of every node type,
 *    read once from the caller's latency estimates (pol_env.lat at batch 1).
 *  - Algorithm 1: a request's graph-wide single-input execution time: static
 *    and pass nodes once (a pass node at the input length), encoder nodes
 *    enc_timesteps times (the input length, known at arrival) and decoder
 *    nodes dec_timesteps times (a coverage quantile of a profiled
 *    output-length distribution, since the true output length is known only
 *    when the request ends).
 *  - Eq. 1-2: slack = SLA - (T_wait + the sum of the members' single-input
 *    execution times), the conservative estimate of a batch's time.
 *  - The oracle's estimate (Sec. VI "Oracle"): the exact batched latencies
 *    and the true lengths instead of Eq. 2's sum and dec_timesteps.
 *
 * Contract: the latency callbacks are only called from slk_* functions, at
 * batch sizes 1..max_cells; the model and latency context outlive the table.
 */
#ifndef SB_SLACK_H
#define SB_SLACK_H

#include <stddef.h>
#include <stdint.h>
#include "../util/ns_math.h"
#include "policy.h"

struct slk_table {
	const struct mdl_model *model;  /* not owned */
	struct pol_latency lat;         /* copied; ctx not owned */
	int64_t *node_ns;               /* owned: NodeLatency(n) of each node type, batch 1 */
	uint64_t *before_ns;            /* owned: node_ns of n's segment's types before n, summed (unsigned: a
	                                 * run's sum from two reads wraps as the node-by-node sum would) */
	uint64_t *segment_ns;           /* owned: node_ns summed over each segment's types */
	uint32_t *pass_types;           /* owned: the pass node types, priced per request (npass of them) */
	uint32_t npass;
	int64_t static_ns;              /* Algorithm 1 lines 3-5: the static nodes once */
	int64_t encoder_ns;             /* line 7: the encoder nodes once (one input step) */
	int64_t decoder_ns;             /* line 9: the decoder nodes once (one output step) */
	uint32_t dec_timesteps;         /* decoder steps Algorithm 1 assumes */
};

/* Profiles the node table. 0, or -1 with err. */
int slk_init(struct slk_table *t, const struct mdl_model *m, const struct pol_latency *lat,
             uint32_t dec_timesteps, char *err, size_t errlen);
void slk_fini(struct slk_table *t);

/* Algorithm 1: SingleInputExecTime of a request with enc_timesteps input
 * steps, ns. A tree model (not in the paper) has no decoder: its estimate is
 * the isolated latency of its tree, known from the leaf count at arrival. */
int64_t slk_single_exec_ns(const struct slk_table *t, uint32_t enc_timesteps);

/* NodeLatency of the node a request runs at one position: the node type at
 * batch 1, for a tree level at that level's cells, for a pass node at the
 * request's input_len tokens. */
int64_t slk_node_single_ns(const struct slk_table *t, uint32_t node_type, uint32_t cells, uint32_t input_len);

/* NodeLatency summed over a run of n nodes from node type node_type
 * (policy.h, "Optional capability: runs"; not for trees) by a request of input_len tokens (which
 * prices pass nodes), as the unsigned sum of the n nodes one by one would
 * give it. */
uint64_t slk_run_single_ns(const struct slk_table *t, uint32_t node_type, uint64_t n, uint32_t input_len);

/* Eq. 1 (one request) and Eq. 2 (exec_ns summed over the batch). */
static inline int64_t slk_slack_ns(int64_t sla_ns, int64_t wait_ns, int64_t exec_ns)
{
	return sla_ns - ns_add(wait_ns, exec_ns);     /* >= -INT64_MAX: sla_ns >= 0 */
}

/* The oracle's exact drain time: the device time to finish every one of
 * reqs[0..n) from their current positions with their true lengths, when the
 * k-th remaining run of each node type is batched across all of them (what
 * the BatchTable's catch-up and merging achieves: for a static graph it is
 * exactly the stack's schedule with no further arrivals), each run priced at
 * the exact latency of its batch (lat->node_ns at the summed cells, split
 * into max_cells pieces when larger; a pass node at its requests' summed
 * tokens plus each one's own attention). For a dynamic graph it is a lower
 * bound: requests that part ways (one's encoder ends, another's goes on) do
 * not always run their k-th remaining step together, so the oracle can be
 * optimistic there; simulating the stack's future exactly at every node
 * boundary would cost a whole future schedule per decision. */
struct slk_exact {
	const struct mdl_model *model;  /* not owned */
	struct pol_latency lat;
	uint32_t max_cells;
	uint32_t **rems;                /* owned: [type] remaining runs of each request (one cell a run) */
	uint32_t *nrems, *rem_cap;      /* owned: entries in use and slots of rems[type] */
	int64_t **cells;                /* owned: [type][k] cells of the k-th remaining run of a tree
	                                 * level type (difference form while filling) */
	uint32_t *cap;                  /* owned: slots of cells[type] */
	uint32_t *runs;                 /* owned: runs of each tree type in use */
	int64_t *price_ns;              /* owned: [type * (max_cells + 1) + b] lat->node_ns at b cells, read once */
	uint64_t *pass_tokens;          /* owned: [type] pass nodes: tokens of the requests still to run it */
	uint64_t *pass_reqs;            /* owned: [type] ... and how many requests */
	struct pol_pass_part *pass_own; /* owned: [type] ... and their own parts (attention), summed */
	uint32_t *hist;                 /* owned: a histogram of remaining counts (hist_cap slots) */
	uint32_t hist_cap;
	/* A repeating segment (static, encoder, decoder) without the walk: one
	 * entry a request, not one a type (slk_exact_segment_ns). */
	int64_t **seg_pre;              /* owned: [segment][c * (nnodes + 1) + j] its first j types' prices at
	                                 * c <= max_cells cells, summed; NULL for pass and tree segments */
	uint64_t **seg_keys;            /* owned: [segment] per request still to run it: its passes left, position */
	uint32_t *nseg_keys, *seg_key_cap;
	uint64_t *key_scratch;          /* owned: a counting sort's other half (key_scratch_cap keys) */
	uint32_t key_scratch_cap;
};

int slk_exact_init(struct slk_exact *x, const struct mdl_model *m, const struct pol_latency *lat,
                   uint32_t max_cells, char *err, size_t errlen);
void slk_exact_fini(struct slk_exact *x);
/* The drain time in ns, or -1 on allocation failure. */
int64_t slk_exact_drain_ns(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n);

/* The drain time kept up to date along a run (policy.h, "Optional capability: runs"; no tree
 * model): walk_begin is slk_exact_drain_ns keeping every type's remaining
 * counts sorted; walk_step tells it that one request whose remaining runs
 * of type t were v (>= 1) ran one of them, and returns how the drain time
 * changes (the v-th remaining run batches one request fewer); walk_end
 * forgets the counts. The drain after the steps equals slk_exact_drain_ns
 * from the requests' new positions. */
int64_t slk_exact_walk_begin(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n);
int64_t slk_exact_walk_step(struct slk_exact *x, uint32_t t, uint32_t v);
void slk_exact_walk_end(struct slk_exact *x);

#endif
