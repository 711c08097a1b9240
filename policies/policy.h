/* policies/policy.h: the view a batching policy has of the world, and the
 * interface every policy implements (DESIGN.md section 2).
 *
 * A policy is a state machine driven by three callbacks. It never reads a
 * clock: the current time comes in as an argument, in integer nanoseconds, so
 * the same policy file serves the simulator (simulated time) and the live
 * runtime (wall-clock time).
 *
 * Contract:
 *  - The caller (engine or live runtime) owns every pol_request and pol_task.
 *    A policy may keep pointers to requests between calls, and may use the
 *    pol_next / pol_word fields for its own queues; it writes nothing else.
 *  - Same-instant events are all delivered (on_task_done / on_arrival) before
 *    next_task is called for that instant.
 *  - When a task completes, the caller first advances each member's progress
 *    (next_node), then calls on_task_done. Requests whose next_node reached
 *    chain_len are complete: the policy must forget them before returning,
 *    because the caller releases them right after.
 *  - next_task is called for an idle device. It fills *task and returns 1, or
 *    returns 0 (nothing to run now), or -1 when its state ran out of memory
 *    (since it was last asked: the run fails, exit 1). It may set *wake_ns to the earliest time
 *    it wants to be asked again (a batching window closing); otherwise it
 *    leaves it alone. A task's members must be distinct requests, at most
 *    env->max_batch cells in all (a member contributes pol_req_cells cells:
 *    1, or a tree level's width; a lone member may exceed the limit, since
 *    its level cannot be split), and for a NODE task every member's current
 *    node type (pol_req_node) must equal task->node_type.
 *  - LLM models (pol_ops.serves_llm) run ITER tasks: each member runs
 *    tokens[i] >= 1 new tokens on top of the context[i] its KV cache holds,
 *    with context[i] + tokens[i] <= pol_llm_target(r); reaching the target
 *    emits its next output token (next_node counts them; chain_len is its
 *    output length). The KV cache is the policy's to keep within
 *    env->kv_blocks; the caller prices the iteration from the tokens and
 *    contexts.
 *  - A policy may return a task while another of its tasks runs on another
 *    device, but never one that includes a request already in flight.
 *  - Latency estimates come from the caller through pol_env (filled from a
 *    hardware model or a calibration); a policy imports no hardware model.
 *  - A policy's own knobs are declared in pol_ops.params and read in init
 *    from env->params; nothing else in pol_env is one policy's.
 * A policy may also offer runs, an optional capability of the simulator's
 * (below pol_ops); a policy that never sets run_max never needs to read it.
 */
#ifndef SB_POLICY_H
#define SB_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include "../models/model.h"
#include "../models/unroll.h"
#include "../util/options.h"

struct pol_request {
	uint64_t id;                 /* 0-based, in arrival order */
	int64_t arrival_ns;          /* when it arrived */
	uint32_t input_len;          /* encoder steps */
	uint32_t output_len;         /* decoder steps (the true value: only oracles may read it) */
	uint64_t chain_len;          /* unrolled nodes in its graph */
	uint64_t next_node;          /* unrolled position of its next node (0 = not started) */
	int64_t first_start_ns;      /* start of its first task, -1 before */
	int64_t first_token_ns;      /* LLM models: end of the iteration that produced its first token, -1 before */
	int64_t last_token_ns;       /* LLM models: ... and its latest token */
	uint32_t in_flight;          /* 1 while a task containing it runs */
	uint32_t replica;            /* a fleet's run: the replica its router placed it on (fleet.h) */
	uint32_t kv_ready;           /* LLM: tokens whose KV cache arrives with it, computed elsewhere (a
	                              * disaggregated decode replica's request: its prompt's, moved from the
	                              * prefill replica); the policy starts it there. The policy sets it to 0
	                              * when it drops that cache (a preemption) */
	uint32_t prefix_len;         /* LLM: its first prefix_len prompt tokens are the shared prefix prefix_id's */
	uint64_t prefix_id;          /* (a system prompt, a conversation so far; 0: none), which a prefix cache
	                              * may hold for it (policies/llm/prefix_cache.h) */
	uint64_t session_id;         /* LLM: a conversation (0: none): its prompt and answer begin the next turn's
	                              * prompt, so past its shared prefix its blocks are the session's */
	uint64_t inner_id;           /* LLM: its shared prefix's first inner_len tokens are inner prefix inner_id's */
	uint32_t inner_len;          /* (a group's system prompt inside a whole prompt that recurs; 0: none) */
	const uint64_t *hash_ids;    /* or its prompt's blocks of hash_block tokens as hash ids (a Mooncake
	                              * trace's; not owned, NULL: none) */
	uint32_t nhash, hash_block;
	uint32_t node_type_cache;    /* node type at next_node (kept by the caller) */
	uint32_t cells_cache;        /* cells at next_node: 1, or a tree level's width (kept by the caller) */
	uint64_t span_end_cache;     /* end of the segment span holding next_node (mdl_locate_span; kept by the caller) */
	struct pol_request *pol_next;/* free for the policy's intrusive lists */
	uint64_t pol_word[2];        /* free for the policy's bookkeeping */
};

enum pol_task_kind {
	POL_TASK_NODE = 0,   /* each member runs its next node (all of type node_type) */
	POL_TASK_GRAPH = 1,  /* each member runs its whole remaining graph, padded to the longest member */
	POL_TASK_ITER = 2,   /* LLM models: one iteration of the model over each member's next tokens */
};

struct pol_task {
	enum pol_task_kind kind;
	uint32_t node_type;          /* NODE tasks: the node type all members run */
	uint32_t nreq;               /* members */
	struct pol_request **reqs;   /* caller-allocated, capacity env->max_batch */
	uint32_t device;             /* set by the caller */
	uint32_t cells;              /* set by the caller: the batch the hardware runs (sum of member cells) */
	int64_t start_ns, end_ns;    /* set by the caller when it starts the task */
	uint64_t run_max;            /* NODE tasks, set by the policy: nodes it may run without a new decision (0 = 1) */
	uint64_t run_len;            /* set by the caller: consecutive nodes each member ran (1 unless a run) */
	uint32_t *tokens;            /* ITER, caller-allocated (max_batch slots): new tokens each member runs */
	uint32_t *context;           /* ITER: tokens already in each member's KV cache (its attention reads them) */
	uint32_t pad_tokens;         /* ITER: tokens of padding the iteration runs besides (static batching) */
	uint64_t kv_blocks_held;     /* ITER, set by the policy: the KV blocks its device holds while the iteration
	                              * runs (every running request's cache, this iteration's tokens included) */
	int64_t run_until_ns;        /* set by the caller before next_task: any run ends at the first boundary
	                              * at or after it (the next arrival it knows of); a policy need not look
	                              * further. 0 from a caller that runs no runs (live) */
	uint32_t finished;           /* set by the caller when the task ends (pol_task_advance), before
	                              * on_task_done: members that are done */
	uint32_t respanned;          /* likewise: members not done whose next node type was looked up anew
	                              * (they entered another segment); 0: every member not done runs the
	                              * same next node type */
};

/* A piece of a pass node's time in two parts that run beside each other
 * (an NPU's array and its vector unit): pieces add up part by part, and the
 * node takes the longer part (pol_pass_part_ns). */
struct pol_pass_part {
	int64_t main_ns, side_ns;
};

static inline struct pol_pass_part pol_pass_part_add(struct pol_pass_part a, struct pol_pass_part b, int64_t times)
{
	return (struct pol_pass_part){ a.main_ns + b.main_ns * times, a.side_ns + b.side_ns * times };
}

static inline int64_t pol_pass_part_ns(struct pol_pass_part p)
{
	return p.main_ns > p.side_ns ? p.main_ns : p.side_ns;
}

/* Latency estimates a policy may ask for; filled by the caller. */
struct pol_latency {
	void *ctx;
	/* One node of type t at batch b, ns. */
	int64_t (*node_ns)(void *ctx, uint32_t node_type, uint32_t batch);
	/* A whole graph at batch b, padded to these lengths, ns. */
	int64_t (*graph_ns)(void *ctx, uint32_t batch, uint32_t input_len, uint32_t output_len);
	/* Pass node types (models/model.h; node_ns does not price them): the
	 * node over a batch's tokens, summed, and each member's own part (its
	 * attention) at its length. pol_pass_ns adds them up for a batch. */
	struct pol_pass_part (*pass_part)(void *ctx, uint32_t node_type, uint64_t tokens);
	struct pol_pass_part (*member_part)(void *ctx, uint32_t node_type, uint32_t len);
	/* The two for one request of len tokens (pass_part at len plus
	 * member_part at len), as the node's ns: the lone member's case, asked
	 * once per node a request runs, from a table. */
	int64_t (*pass_single_ns)(void *ctx, uint32_t node_type, uint32_t len);
	/* What the device takes to run node type t for a NODE task's members
	 * (cells of them), each passes decoder steps past its next node's:
	 * node_ns, or at the members' own lengths where the node depends on
	 * them (pass nodes; decoder nodes over P and S, which node_ns prices at
	 * the model's estimate lengths). */
	int64_t (*task_node_ns)(void *ctx, uint32_t node_type, uint32_t n, struct pol_request *const *reqs,
	                        uint32_t cells, uint32_t passes);
	/* LLM models: one iteration of n members (tokens[i] on a cache of
	 * context[i], emitting of them yielding a token) and pad rows of
	 * padding (static batching), ns; -1 if it cannot be priced. iter_ctx is
	 * its context. NULL for node-level models. */
	int64_t (*iter_ns)(void *iter_ctx, uint32_t n, const uint32_t *tokens, const uint32_t *context,
	                   uint32_t emitting, uint32_t pad);
	void *iter_ctx;
};

/* What every policy is told: the model, the devices, the batch limit, the
 * deadline, the latency estimates, and for LLMs the KV geometry and SLO
 * targets. A policy's own knobs are in params (pol_ops.params). */
struct pol_env {
	const struct mdl_model *model;   /* not owned */
	uint32_t workers;                /* devices */
	uint32_t max_batch;              /* --max-batch */
	int64_t sla_ns;                  /* --sla */
	const struct opt_set *params;    /* the policy's own parameters, each given or its default (NULL: every
	                                  * default; the driver fills it); not owned */
	/* LLM models (ITER tasks; DESIGN.md section 3b) */
	uint32_t max_batched_tokens;     /* --max-batched-tokens: tokens one iteration may run */
	uint32_t block_size;             /* --block-size: tokens a KV cache block holds */
	uint64_t kv_blocks;              /* KV cache blocks a device holds: its memory less the weights, in blocks */
	uint64_t kv_blocks_given;        /* --kv-blocks: kv_blocks in place of the memory's (0: none given) */
	uint64_t longest_request_tokens; /* the run's largest prompt + output (from the trace or the length limits) */
	int64_t ttft_slo_ns, tpot_slo_ns;/* --ttft-slo, --tpot-slo (0: none) */
	int prefix_cache;                /* --prefix-cache: full KV blocks are kept and shared across requests */
	int async_scheduling;            /* --async-scheduling: an iteration is planned while the one before runs */
	int prefill_only;                /* a disaggregated prefill replica (policies/fleet.h): a request leaves
	                                  * when its prompt has run and its first token is out */
	struct pol_latency lat;
};

struct pol_stat {                /* one named counter a policy reports per run */
	const char *name;            /* static string, e.g. "preemptions" */
	double value;
};

#define POL_MAX_STATS 16

struct pol_state;  /* a policy's private state, allocated by the caller (state_size bytes, zeroed) */

struct pol_ops {
	const char *name;            /* registry name */
	const char *help;            /* one line for `simbatch list policies` */
	size_t state_size;           /* bytes of private state */
	uint32_t default_max_batch;  /* used when --max-batch is not given (LLM policies: --max-seqs) */
	uint32_t serves_llm;         /* 1: LLM models, by ITER tasks; 0: node-level models */
	/* The policy's own knobs (name, type, default, bounds, help): the command
	 * line, --help, sweeps and the stored configuration take them from here;
	 * init reads them from env->params. A knob two policies declare is
	 * declared alike (registry.c checks). */
	const struct opt_def *params;
	size_t nparams;
	uint32_t default_batched_tokens; /* LLM: --max-batched-tokens when not given; 0: the larger of the
	                              * model's context and 2048 (vLLM's default without chunked prefill) */
	uint32_t pads_prompts;       /* LLM: 1 when an iteration may run max_batch prompts padded to the longest
	                              * (static batching), beyond --max-batched-tokens */
	/* Checks env and initializes state. 0, or -1 with err. */
	int (*init)(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen);
	void (*fini)(struct pol_state *st);                 /* optional */
	void (*on_arrival)(struct pol_state *st, struct pol_request *r, int64_t now_ns);
	void (*on_task_done)(struct pol_state *st, const struct pol_task *t, int64_t now_ns);
	int (*next_task)(struct pol_state *st, uint32_t device, int64_t now_ns,
	                 struct pol_task *task, int64_t *wake_ns);
	/* optional (runs, the capability below): 1 when a decision at the device's next node
	 * boundary would weigh inputs pending now. It may turn 1 only at an
	 * arrival, and 0 only in next_task or at the device's own task's end. */
	int (*boundary_waits)(const struct pol_state *st, uint32_t device);
	/* optional: fills up to max counters (preemptions, merges, top-ups, ...),
	 * returns how many; called once after the run */
	size_t (*stats)(const struct pol_state *st, struct pol_stat *out, size_t max);
	/* optional (decode runs, the capability below): how many iterations, 1..k_max, the ITER task t
	 * that next_task just built on device begins (held, when not NULL: k_max slots, the first k
	 * filled with the KV blocks each iteration will hold, for a router that reads them) ... */
	uint32_t (*decode_run)(const struct pol_state *st, uint32_t device, const struct pol_task *t, uint32_t k_max,
	                       uint64_t *held);
	/* ... and the state after k of them: t becomes the k-th, built; held[j] the KV blocks iteration j + 1
	 * holds (held[0] is t's own kv_blocks_held) */
	void (*decode_advance)(struct pol_state *st, uint32_t device, struct pol_task *t, uint32_t k, uint64_t *held);
};

#define POL_DECODE_RUN_MAX 64   /* the most iterations a decode run holds (callers cap k_max at it) */

/* Optional capability: decode runs (a simulation's shortcut, as runs are
 * for NODE tasks; bench/README.md "Decode runs"; the engine's side in
 * sim/engine/runs.[ch]). A policy without it leaves decode_run and
 * decode_advance NULL and owes nothing: each iteration is its own task. A
 * policy with it sets both (the registry refuses one without the other)
 * and keeps the promise below. When every member of an
 * ITER task decodes (one token, a token out already) and nothing waits,
 * an LLM policy's next iterations are the same members one token further,
 * until something arrives or a member finishes. decode_run promises that,
 * barring an arrival at this device and a member's last token, the next
 * k - 1 builds would each give the same members one token each, preempt
 * nothing, and change nothing but this device's own KV bookkeeping (no
 * state another device or a router reads); it returns the largest such k
 * up to k_max (1: none). The caller prices k iterations (ending the run at
 * the first boundary at or after an arrival that may join it) and, at the
 * run's end, calls decode_advance with the k it ran, which must leave the
 * policy exactly as k - 1 ends and builds one by one would (the k-th
 * iteration's end then comes through on_task_done as any task's). The
 * live runtime never uses it; --node-by-node turns it off, to check that
 * decode runs change no result. */

/* Optional capability: runs (a simulation's shortcut; bench/README.md
 * "Runs"; sim/engine/runs.[ch]). A policy without it leaves run_max 0 and
 * boundary_waits NULL and owes nothing. A NODE task may set run_max > 1: a promise
 * that, until the next arrival or a wake-up it asked for, the decisions at this device's next run_max - 1 node
 * boundaries would each continue the same task one node further, whatever
 * other devices do, and that those boundaries would change nothing the
 * policy gives another device. Every member then stays inside its current
 * segment span for run_max nodes (pol_req_span_left), so all run the same
 * node types (mdl_run_type) and none completes before the last; a tree
 * model's tasks are single nodes. The caller runs run_len nodes, 1 <=
 * run_len <= run_max, ending at the first boundary at or after the next
 * arrival or wake-up; on_task_done sees run_len. A policy with
 * boundary_waits promises more: an arrival matters to a run only through
 * it, so on several devices the caller ends a run at its first boundary
 * at which boundary_waits holds, at an arrival's instant, or at a
 * wake-up, and a run whose boundaries the inputs never wait for goes on
 * past arrivals another device takes. The live runtime, which cannot
 * see the next arrival, always runs one node: the same decisions, node
 * by node.
 * --node-by-node turns runs off (every node its own task), to check that a
 * policy's runs change no result; the run stores it. */

/* Knobs more than one policy declares, written once so they stay alike. */
#define POL_PARAM_WINDOW { "window", OPT_DOUBLE, "0", 0, 1e9, 0, "batching time window in ms: a batch below the " \
	"max batch waits until its oldest request has waited this long" }
#define POL_PARAM_MAX_BATCH_DECODER { "max-batch-decoder", OPT_UINT, "0", 0, 65536, 0, "largest batch of decoder " \
	"cells (0 = the max batch)" }
#define POL_PARAM_NO_PREEMPTION { "no-preemption", OPT_FLAG, NULL, 0, 0, 0, "never preempt a running batch; " \
	"newcomers start together once the device's table drains (an intervention, not the paper's policy)" }
#define POL_PARAM_NO_SLACK_CHECK { "no-slack-check", OPT_FLAG, NULL, 0, 0, 0, "preempt without asking the slack " \
	"predictor: pending inputs join the running table up to the max batch (an intervention, not the paper's policy)" }

/* The registry, in `simbatch list policies` order; lookup by name. */
const struct pol_ops *const *pol_registry(size_t *count);
const struct pol_ops *pol_find(const char *name);
/* Every policy's knobs once, in registry order, for an option table; each
 * one's help names the policies that take it. */
const struct opt_def *pol_param_union(size_t *count);
/* Whether policy p declares knob name. */
int pol_takes_param(const struct pol_ops *p, const char *name);

/* Node type at a request's next position (the caller keeps it current). */
static inline uint32_t pol_req_node(const struct pol_request *r) { return r->node_type_cache; }
static inline uint32_t pol_req_cells(const struct pol_request *r) { return r->cells_cache; }
static inline int pol_req_done(const struct pol_request *r) { return r->next_node >= r->chain_len; }
/* The prompt tokens its hash ids cover (a Mooncake trace's last id may cover past the prompt's end). */
static inline uint64_t pol_hashed_tokens(const struct pol_request *r)
{
	uint64_t hashed = (uint64_t)r->nhash * r->hash_block;
	return hashed < r->input_len ? hashed : r->input_len;
}
/* An LLM request emits its next output token when the iteration that
 * brings its KV cache to this many tokens ends: its prompt and every token
 * generated so far (a decode step caches the last generated token and
 * yields the next; after a preemption the whole of it is prefilled again). */
static inline uint64_t pol_llm_target(const struct pol_request *r) { return (uint64_t)r->input_len + r->next_node; }

/* Whether an ITER task's member i yields its next token when the task ends
 * (its cache reaches its target); asked before pol_task_advance moves it. */
static inline int pol_iter_emits(const struct pol_task *t, uint32_t i)
{
	return (uint64_t)t->context[i] + t->tokens[i] == pol_llm_target(t->reqs[i]);
}

/* A pass node of type t for these members (each of its input_len tokens):
 * the node over their tokens plus each one's own attention. */
static inline int64_t pol_pass_ns(const struct pol_latency *lat, uint32_t t, uint32_t n,
                                  struct pol_request *const *reqs)
{
	if (n == 1)
		return lat->pass_single_ns(lat->ctx, t, reqs[0]->input_len);
	uint64_t tokens = 0;
	struct pol_pass_part own = { 0, 0 };
	for (uint32_t i = 0; i < n; i++) {
		tokens += reqs[i]->input_len;
		own = pol_pass_part_add(own, lat->member_part(lat->ctx, t, reqs[i]->input_len), 1);
	}
	return pol_pass_part_ns(pol_pass_part_add(own, lat->pass_part(lat->ctx, t, tokens), 1));
}

/* The decoder step (1-based) a request's next node belongs to, when that
 * node is a decoder node: its span holds output_len steps of the segment's
 * nodes, and the step is the first the nodes left do not cover in full. */
static inline uint32_t pol_req_decoder_step(const struct mdl_model *m, const struct pol_request *r)
{
	uint64_t nn = m->segments[m->nodes[r->node_type_cache].segment].nnodes;
	uint64_t left = r->span_end_cache - r->next_node;
	return r->output_len - (uint32_t)((left + nn - 1) / nn) + 1;
}

/* Nodes left in the segment span holding the next node (policy.h, "Optional capability: runs"). */
static inline uint64_t pol_req_span_left(const struct pol_request *r) { return r->span_end_cache - r->next_node; }

/* The caller's part of the contract, shared by the simulator (sim/engine.c)
 * and the live runtime (runtime/live.c) so both keep requests the same way.
 * At arrival: the chain length and the caches of position 0 from the
 * request's lengths (chain_len 0 means the model has nothing to run). */
static inline void pol_req_start(struct pol_request *r, const struct mdl_model *m)
{
	r->next_node = 0;
	r->chain_len = mdl_chain_length(m, r->input_len, r->output_len);
	if (r->chain_len)
		r->node_type_cache = mdl_locate_span(m, 0, r->input_len, r->output_len, &r->cells_cache,
		                                     &r->span_end_cache);
}

/* When a task has finished, before on_task_done: each member leaves flight
 * and moves run_len nodes on (NODE), to its end (GRAPH) or, when its cache
 * reached its target, one output token on (ITER); caches refreshed, and
 * t->finished and t->respanned counted. */
static inline void pol_task_advance(struct pol_task *t, const struct mdl_model *m)
{
	/* a NODE task's members all ran t->node_type: within their span they all reach this type */
	if (t->kind == POL_TASK_GRAPH) {          /* every member ran its whole chain */
		for (uint32_t i = 0; i < t->nreq; i++) {
			t->reqs[i]->in_flight = 0;
			t->reqs[i]->next_node = t->reqs[i]->chain_len;
		}
		t->finished = t->nreq;
		t->respanned = 0;
		return;
	}
	uint32_t next_type = t->kind == POL_TASK_NODE && !m->is_tree ? mdl_run_type(m, t->node_type, t->run_len) : 0;
	uint32_t done = 0, respanned = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		r->in_flight = 0;
		if (t->kind == POL_TASK_ITER) {
			if (pol_iter_emits(t, i)) {
				if (r->next_node++ == 0)
					r->first_token_ns = t->end_ns;
				r->last_token_ns = t->end_ns;
			}
			done += pol_req_done(r);
			continue;
		}
		r->next_node += t->run_len;
		if (pol_req_done(r)) {
			done++;
			continue;
		}
		if (r->next_node < r->span_end_cache && !m->is_tree) {   /* same span: the segment's types cycle, 1 cell */
			r->node_type_cache = next_type;
		} else {
			r->node_type_cache = mdl_locate_span(m, r->next_node, r->input_len, r->output_len, &r->cells_cache,
			                                     &r->span_end_cache);
			respanned++;
		}
	}
	t->finished = done;
	t->respanned = respanned;
}

#endif
