/* policies/llm/kv.h: the toolkit LLM policies are written with: a paged KV
 * cache per device, the requests running on it, the shared waiting queue,
 * preemption by recompute, and the iteration builder, with hooks where
 * policies differ (DESIGN.md section 3b).
 *
 * One iteration, on an idle device (the order of vLLM V1's scheduler):
 *  1. Running requests, in the order they were admitted, each its next
 *     tokens: a decode is 1; a prompt being chunked is as much of the rest
 *     as the budget leaves (hooks.chunked). Each takes the KV blocks those
 *     tokens need. When the cache has too few free blocks, the request
 *     admitted last is preempted (recompute, as vLLM V1 does by default: its
 *     blocks are freed and it waits again at the head of the queue, to be
 *     prefilled anew over its prompt and every token it had generated), and
 *     again, until the blocks are there or the request itself was the one
 *     preempted.
 *  2. If nothing was preempted, waiting requests (hooks.admit_next; first
 *     come first served by default, the preempted first), while fewer than
 *     --max-seqs run: without chunking one whose whole remaining prompt fits
 *     the budget left, and the first that does not stops admission; with
 *     chunking it gets a chunk of what is left. A request that cannot get
 *     its blocks is not admitted, and the queue waits behind it.
 * The KV cache (env->kv_blocks of env->block_size tokens) holds, for each
 * running request, the blocks of every token it has cached; no iteration
 * ever holds more. A request's cached tokens are pol_word[0], its blocks
 * pol_word[1]. Several devices (--workers) each hold a cache of their own
 * and the requests running on it; the waiting queue is shared, so an idle
 * device takes the next request (a preempted one may resume on another, as
 * it is recomputed anyway).
 *
 * A policy is a state that begins with struct llm_sched, a struct llm_hooks,
 * an init that calls llm_sched_init, and an ops table naming the toolkit's
 * callbacks (policies/llm/continuous.c is the smallest). */
#ifndef SB_LLM_KV_H
#define SB_LLM_KV_H

#include <stddef.h>
#include <stdint.h>
#include "../fifo.h"
#include "../policy.h"
#include "prefix_cache.h"

/* One device's share: its KV cache and the requests running on it. */
struct llm_device {
	struct pol_request **running;    /* owned array of max_seqs slots: admission order */
	uint32_t nrunning;
	uint64_t free_blocks, peak_blocks;
	uint32_t batch_size;             /* a policy that runs whole batches (static): the members the running
	                                  * batch started with (0: none) ... */
	uint64_t batch_blocks;           /* ... and the blocks it reserved for them */
	struct prefix_cache pc;          /* with a prefix cache: the device's full blocks, shared and evictable */
	int64_t last_start_ns, last_end_ns;   /* its latest iteration's (async scheduling) */
};

struct llm_sched;

/* Where LLM policies differ; every hook is optional. */
struct llm_hooks {
	int chunked;                     /* a prompt may be split into chunks under the token budget */
	int decodes_first;               /* running decodes are planned before prompts being chunked, and a
	                                  * chunk that lacks blocks waits rather than preempt them */
	/* The most of tokens r may run in the iteration planned so far in t (0: none now). */
	uint32_t (*chunk_limit)(const struct llm_sched *s, struct pol_task *t, const struct pol_request *r,
	                        uint32_t tokens);
	/* The waiting request to admit next, *prev its predecessor in the queue (NULL: the head). */
	struct pol_request *(*admit_next)(const struct llm_sched *s, int64_t now_ns, struct pol_request **prev);
	/* The whole iteration instead of the builder above (static batching); as pol_ops.next_task. */
	int (*build)(struct llm_sched *s, struct llm_device *d, int64_t now_ns, struct pol_task *t, int64_t *wake_ns);
	/* After a task on d ended and its finished members left. */
	void (*after_task)(struct llm_sched *s, struct llm_device *d);
};

struct llm_sched {
	const struct llm_hooks *hooks;
	struct pol_latency lat;          /* the caller's iteration estimates */
	int64_t ttft_slo_ns, tpot_slo_ns;
	uint32_t max_seqs, max_tokens, block_size;
	uint64_t kv_blocks;              /* each device's */
	struct llm_device *devs;         /* owned, one per device */
	uint32_t ndevs;
	struct pol_fifo waiting;         /* arrivals, and preempted requests at the head: shared by the devices */
	uint64_t preemptions;
	int prefix_cache;                /* --prefix-cache (not with a whole-iteration builder: static) */
	int prefill_only;                /* a disaggregated prefill replica: requests leave after their first token */
	int async_scheduling;            /* vLLM's async scheduling: the iteration after next is planned while one
	                                  * runs, so an arrival joins the one after next (kv.c, llm_admit_cutoff) */
};

/* Checks env (a KV cache, and without chunking a budget that holds the
 * longest prefill) and sets s up with hooks h; name prefixes the errors.
 * 0, or -1 with err (s then holds nothing to free). */
int llm_sched_init(struct llm_sched *s, const struct pol_env *env, const char *name, const struct llm_hooks *h,
                   char *err, size_t errlen);

/* A request's KV blocks (pol_word[1]): its own, and those it holds in the
 * prefix cache (its leading full blocks, shared or not). pol_word[0] is the
 * tokens its cache holds. */
static inline uint64_t llm_own_blocks(const struct pol_request *r) { return r->pol_word[1] & 0xffffffffu; }
static inline uint64_t llm_cached_blocks(const struct pol_request *r) { return r->pol_word[1] >> 32; }
static inline uint64_t llm_held_blocks(const struct pol_request *r)
{
	return llm_own_blocks(r) + llm_cached_blocks(r);
}

/* The pol_ops callbacks of every LLM policy (st is a state that begins with struct llm_sched). */
void llm_sched_fini(struct pol_state *st);
void llm_sched_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns);
void llm_sched_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns);
int llm_sched_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns);
size_t llm_sched_stats(const struct pol_state *st, struct pol_stat *out, size_t max);

/* KV blocks that hold tokens tokens. */
static inline uint64_t llm_blocks_for(const struct llm_sched *s, uint64_t tokens)
{
	return (tokens + s->block_size - 1) / s->block_size;
}

/* d's blocks in use: not free, and not a cached block no request holds (evictable, as vLLM counts it). */
static inline uint64_t llm_blocks_used(const struct llm_sched *s, const struct llm_device *d)
{
	return s->kv_blocks - d->free_blocks - d->pc.evictable;
}

/* Records d's blocks in use as its peak when they are. */
static inline void llm_note_peak(const struct llm_sched *s, struct llm_device *d)
{
	if (llm_blocks_used(s, d) > d->peak_blocks)
		d->peak_blocks = llm_blocks_used(s, d);
}

/* Frees blocks until want are free, evicting cached blocks no request holds,
 * least recently released first: whether there are want free now. Most
 * calls find them free (a decode's token lands in a block it holds). */
static inline int llm_room(const struct llm_sched *s, struct llm_device *d, uint64_t want)
{
	if (d->free_blocks >= want)
		return 1;
	if (s->prefix_cache)
		d->free_blocks += pc_evict_n(&d->pc, want - d->free_blocks);
	return d->free_blocks >= want;
}

/* r's blocks filled since it last entered any (its cached tokens now pol_word[0]) enter the prefix
 * cache (one already there: r's copy freed); a multiplication per member, not a division: most
 * iterations fill no block. */
static inline void llm_enter_filled(const struct llm_sched *s, struct llm_device *d, struct pol_request *r)
{
	uint64_t from = llm_cached_blocks(r);
	if (!s->prefix_cache || (from + 1) * s->block_size > r->pol_word[0])
		return;
	uint64_t to = r->pol_word[0] / s->block_size;
	d->free_blocks += pc_enter_blocks(&d->pc, r, s->block_size, (uint32_t)from, (uint32_t)to);
	r->pol_word[1] += (to - from) * (((uint64_t)1 << 32) - 1);     /* each block own -> cached */
}

/* Decode runs (policy.h; decode_run.c), for the toolkit's policies' ops tables. */
uint32_t llm_sched_decode_run(const struct pol_state *st, uint32_t device, const struct pol_task *t, uint32_t k_max,
                              uint64_t *held);
void llm_sched_decode_advance(struct pol_state *st, uint32_t device, struct pol_task *t, uint32_t k, uint64_t *held);

/* What a toolkit policy's ops table holds besides its name, help, state
 * size, knobs, init and budget: it serves LLMs, at most vLLM's max_num_seqs
 * (256) in a batch by default, and the toolkit's methods. A policy whose
 * builds may run as decode runs adds LLM_SCHED_DECODE_RUNS. */
#define LLM_SCHED_OPS                                                                                  \
	.default_max_batch = 256, .serves_llm = 1, .fini = llm_sched_fini, .on_arrival = llm_sched_on_arrival, \
	.on_task_done = llm_sched_on_task_done, .next_task = llm_sched_next_task, .stats = llm_sched_stats
#define LLM_SCHED_DECODE_RUNS .decode_run = llm_sched_decode_run, .decode_advance = llm_sched_decode_advance

#endif
