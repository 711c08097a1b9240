/* policies/llm/decode_run.c: decode runs for the toolkit's policies (policy.h,
 * "Optional capability: decode runs"): when every running request decodes
 * and nothing waits, the builder's next iterations are the same members a
 * token further each, taking a KV block whenever one's last block fills,
 * until the cache runs short (then it would preempt: the run stops before).
 * decode_advance replays them: the first iteration's end as on_task_done,
 * then the builds (the blocks each takes, evicting from the prefix cache as
 * llm_room would, and the peak), then the other ends in one pass (each
 * member's tokens and full blocks). */
#include "kv.h"

/* alloc[j], 2 <= j <= k: the blocks build j takes. A member with c tokens
 * cached before the run's first iteration holds blocks_for(c + j - 1) when
 * build j gives it token c + j, so it takes one when c + j - 1 fills a
 * block exactly: at j = 1 + (the tokens left in its block), then every
 * block_size builds. */
static void llm_decode_allocs(const struct llm_sched *s, const struct pol_task *t, uint32_t k, uint32_t *alloc)
{
	for (uint32_t j = 0; j <= k; j++)
		alloc[j] = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		uint32_t left = s->block_size - t->context[i] % s->block_size;   /* 1..block_size */
		for (uint64_t j = 1 + (uint64_t)left; j <= k; j += s->block_size)
			alloc[j]++;
	}
}

uint32_t llm_sched_decode_run(const struct pol_state *st, uint32_t device, const struct pol_task *t, uint32_t k_max,
                              uint64_t *held)
{
	const struct llm_sched *s = (const struct llm_sched *)st;
	const struct llm_device *d = &s->devs[device];
	/* only the builder's own decisions repeat: no whole-batch builder, no hook after a task, nothing
	 * waiting, every running request in the iteration */
	if (k_max < 2 || s->hooks->build || s->hooks->after_task || s->prefill_only || s->waiting.head ||
	    t->nreq != d->nrunning || s->async_scheduling)     /* (async: an arrival's plan needs each start) */
		return 1;
	/* a block a member fills after the first iteration must enter the prefix cache as a count alone
	 * (prefix_cache.c's fast path): no run of a preempted request's blocks to take back, no
	 * conversation's blocks to share */
	if (s->prefix_cache && d->pc.findable_runs)
		return 1;
	for (uint32_t i = 0; i < t->nreq; i++)
		if (t->tokens[i] != 1 || (s->prefix_cache && t->reqs[i]->session_id))
			return 1;
	uint32_t alloc[POL_DECODE_RUN_MAX + 1];
	if (k_max > POL_DECODE_RUN_MAX)
		k_max = POL_DECODE_RUN_MAX;
	/* most runs are far from the cache's end: each member takes at most one block a block_size
	 * builds, from its second on */
	uint64_t room = d->free_blocks + d->pc.evictable, taken = 0;
	if (!held && (uint64_t)t->nreq * (1 + (k_max - 2) / s->block_size) <= room)
		return k_max;
	llm_decode_allocs(s, t, k_max, alloc);
	/* build j preempts unless the blocks of builds 2..j fit what is free or evictable now */
	uint32_t k = 1;
	while (k < k_max && (taken += alloc[k + 1]) <= room)
		k++;
	/* each build takes its blocks; the ends in between free none (they fill only private blocks past every
	 * prompt, but for a request whose prompt's KV came with it: the caller asks no blocks ahead then) */
	for (uint32_t j = 0; held && j < k; j++)
		held[j] = j ? held[j - 1] + alloc[j + 1] : t->kv_blocks_held;
	return k;
}

void llm_sched_decode_advance(struct pol_state *st, uint32_t device, struct pol_task *t, uint32_t k, uint64_t *held)
{
	struct llm_sched *s = (struct llm_sched *)st;
	struct llm_device *d = &s->devs[device];
	uint32_t alloc[POL_DECODE_RUN_MAX + 1];
	llm_decode_allocs(s, t, k, alloc);
	held[0] = t->kv_blocks_held;
	/* the first iteration's end as on_task_done: each member a token further, its filled blocks entered,
	 * which may find some cached already and free the copies (a decode replica's first iteration of a
	 * request whose prompt's KV came with it enters the prompt's blocks) ... */
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		r->pol_word[1] += llm_blocks_for(s, r->pol_word[0] + k) - llm_blocks_for(s, r->pol_word[0] + 1);
		r->pol_word[0]++;
		llm_enter_filled(s, d, r);
	}
	/* ... builds 2..k: each takes its blocks (evicting least recently released cached ones first, as
	 * llm_room); the blocks the ends between them fill are past every prompt, private, so entering
	 * them changes only counts (decode_run's condition) and can follow in one pass. Nothing between
	 * the builds lets a block go, so their evictions are the same blocks in the same order made at
	 * once (and a block moved from evictable to free leaves the blocks used, and so held and the
	 * peak, as they were) */
	uint64_t builds = 0;
	for (uint32_t j = 2; j <= k; j++)
		builds += alloc[j];
	llm_room(s, d, builds);
	for (uint32_t j = 2; j <= k; j++) {
		d->free_blocks -= alloc[j];
		llm_note_peak(s, d);
		held[j - 1] = llm_blocks_used(s, d);
	}
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		r->pol_word[0] += k - 2;
		llm_enter_filled(s, d, r);
		t->context[i] = (uint32_t)r->pol_word[0];
	}
	t->kv_blocks_held = held[k - 1];
}
