/* policies/llm/kv.c: the LLM policies' toolkit (kv.h): KV cache, running
 * sets, preemption by recompute, the iteration builder. */
#include <stdio.h>
#include <stdlib.h>
#include "kv.h"
#include "../../util/errkind.h"

void llm_sched_fini(struct pol_state *st)
{
	struct llm_sched *s = (struct llm_sched *)st;
	for (uint32_t i = 0; s->devs && i < s->ndevs; i++) {
		free(s->devs[i].running);
		pc_fini(&s->devs[i].pc);
	}
	free(s->devs);
	s->devs = NULL;
}

int llm_sched_init(struct llm_sched *s, const struct pol_env *env, const char *name, const struct llm_hooks *h,
                   char *err, size_t errlen)
{
	s->hooks = h;
	s->ttft_slo_ns = env->ttft_slo_ns;
	s->tpot_slo_ns = env->tpot_slo_ns;
	s->lat = env->lat;
	if (env->kv_blocks == 0 || env->block_size == 0 || env->max_batched_tokens == 0) {
		snprintf(err, errlen, "%s: no KV cache to serve from (blocks %llu of %u tokens, %u tokens an iteration)", name,
		         (unsigned long long)env->kv_blocks, env->block_size, env->max_batched_tokens);
		return -1;
	}
	/* a whole prefill, its recompute after a preemption included, must fit one iteration */
	if (!h->chunked && !h->build && env->longest_request_tokens > env->max_batched_tokens) {
		snprintf(err, errlen, "%s: --max-batched-tokens=%u cannot hold the prefill of a request of %llu tokens "
		         "(a recompute prefills its prompt and output so far): raise it, or chunk prompts with --policy=chunked",
		         name, env->max_batched_tokens, (unsigned long long)env->longest_request_tokens);
		return -1;
	}
	s->max_seqs = env->max_batch;
	s->max_tokens = env->max_batched_tokens;
	s->block_size = env->block_size;
	s->kv_blocks = env->kv_blocks;
	s->ndevs = env->workers ? env->workers : 1;
	s->prefix_cache = env->prefix_cache && !h->build;
	s->prefill_only = env->prefill_only;
	s->async_scheduling = env->async_scheduling;
	if (s->async_scheduling && (h->build || h->admit_next || s->prefill_only)) {
		snprintf(err, errlen, "%s: --async-scheduling is modelled for continuous and chunked on a whole replica "
		         "(not whole batches, an admission order of its own, or a disaggregated pool)", name);
		return -1;
	}
	if (s->prefill_only && h->build) {
		snprintf(err, errlen, "%s: runs whole batches to their end, so it cannot serve as a prefill replica "
		         "(--prefill-replicas needs continuous, chunked or slo)", name);
		return -1;
	}
	s->devs = calloc(s->ndevs, sizeof *s->devs);
	for (uint32_t i = 0; s->devs && i < s->ndevs; i++) {
		s->devs[i].free_blocks = env->kv_blocks;
		s->devs[i].running = calloc(s->max_seqs, sizeof *s->devs[i].running);
		if (!s->devs[i].running || (s->prefix_cache && pc_init(&s->devs[i].pc, env->kv_blocks) != 0)) {
			free(s->devs[i].running);
			s->devs[i].running = NULL;
			break;
		}
	}
	if (!s->devs || !s->devs[s->ndevs - 1].running) {
		llm_sched_fini((struct pol_state *)s);
		err_memory(err, errlen, "%s: out of memory", name);
		return -1;
	}
	return 0;
}

void llm_sched_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	r->pol_word[0] = r->pol_word[1] = 0;
	pol_fifo_push(&((struct llm_sched *)st)->waiting, r);
}

/* Frees a finished or preempted request's blocks and takes it off the
 * running list; the ones in the prefix cache stay there, evictable once no
 * request holds them. */
static void llm_release(const struct llm_sched *s, struct llm_device *d, uint32_t i)
{
	struct pol_request *r = d->running[i];
	d->free_blocks += llm_own_blocks(r);
	if (s->prefix_cache)
		pc_release(&d->pc, r, s->block_size, (uint32_t)llm_cached_blocks(r));
	r->pol_word[0] = r->pol_word[1] = 0;
	r->kv_ready = 0;                         /* a cache that came with it is gone: recomputed if it runs again */
	for (uint32_t j = i + 1; j < d->nrunning; j++)
		d->running[j - 1] = d->running[j];
	d->nrunning--;
}

void llm_sched_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	struct llm_sched *s = (struct llm_sched *)st;
	struct llm_device *d = &s->devs[t->device];
	d->last_end_ns = now_ns;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		r->pol_word[0] += t->tokens[i];
		llm_enter_filled(s, d, r);
	}
	for (uint32_t i = d->nrunning; i-- > 0;)
		if (pol_req_done(d->running[i]) || (s->prefill_only && d->running[i]->next_node))
			llm_release(s, d, i);
	if (s->hooks->after_task)
		s->hooks->after_task(s, d);
}

/* Adds r to the task with tokens new tokens, taking the want blocks they need (free). */
static inline void llm_schedule(struct llm_device *d, struct pol_task *t, struct pol_request *r, uint32_t tokens,
                                uint64_t want)
{
	d->free_blocks -= want;
	r->pol_word[1] += want;
	t->reqs[t->nreq] = r;
	t->tokens[t->nreq] = tokens;
	t->context[t->nreq] = (uint32_t)r->pol_word[0];
	t->nreq++;
}

/* A waiting request's cached start: the leading blocks the prefix cache
 * holds for it, at most all but its last token's (one token is always
 * computed, as vLLM does), counted for the hit rate. */
static uint32_t llm_cached_start(struct llm_sched *s, struct llm_device *d, const struct pol_request *r,
                                 uint32_t *evictable_hits)
{
	*evictable_hits = 0;
	if (!s->prefix_cache)
		return 0;
	uint64_t target = pol_llm_target(r);
	uint32_t h = pc_lookup(&d->pc, r, s->block_size, (uint32_t)((target - 1) / s->block_size), evictable_hits);
	return h;
}

/* The latest arrival the iteration being built may admit. vLLM's async scheduling (its default since
 * v0.14, release notes) plans an iteration while the one before runs, as soon as that one starts: an
 * iteration that follows another at once was planned when that one started, and admits only what had
 * arrived by then; unless it had nothing to run then (no running request's next tokens, no request
 * waiting from before), when vLLM launches no batch and plans again as the running one ends. */
static int64_t llm_admit_cutoff(const struct llm_sched *s, const struct llm_device *d, const struct pol_task *t,
                                int64_t now_ns)
{
	if (!s->async_scheduling || d->last_end_ns != now_ns)
		return now_ns;
	int planned = t->nreq > 0 || (s->waiting.head && s->waiting.head->arrival_ns <= d->last_start_ns);
	return planned ? d->last_start_ns : now_ns;
}

int llm_sched_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns)
{
	struct llm_sched *s = (struct llm_sched *)st;
	const struct llm_hooks *h = s->hooks;
	struct llm_device *d = &s->devs[device];
	if (d->pc.failed)
		return -1;                           /* its prefix cache ran out of memory in the last task's end */
	if (h->build) {
		int got = h->build(s, d, now_ns, t, wake_ns);
		t->kv_blocks_held = llm_blocks_used(s, d);
		return got;
	}
	uint32_t budget = s->max_tokens;
	int preempted = 0;
	t->kind = POL_TASK_ITER;
	t->nreq = 0;
	/* 1. the running requests, in admission order (decodes_first: decodes, then prompts being chunked) */
	for (int pass = h->decodes_first ? 0 : 1; pass < 2; pass++)
	for (uint32_t i = 0; i < d->nrunning && budget > 0;) {
		struct pol_request *r = d->running[i];
		uint64_t need = pol_llm_target(r) - r->pol_word[0];
		if (h->decodes_first && (pass == 0) != (need == 1)) {
			i++;
			continue;
		}
		if (!h->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		/* pass 1 holds every running request, or (decodes_first) the prompts: a decode's one token is not cut */
		if (h->chunk_limit && pass == 1 && (tokens = h->chunk_limit(s, t, r, tokens)) == 0)
			break;
		uint64_t want = llm_blocks_for(s, r->pol_word[0] + tokens) - llm_held_blocks(r);
		if (h->decodes_first && pass == 1 && want > d->free_blocks + d->pc.evictable)
			break;                  /* a prompt's chunk waits: it never preempts decodes already planned */
		while (!llm_room(s, d, want) && d->nrunning > i) {
			/* the request admitted last gives its blocks back and waits again, to be recomputed */
			struct pol_request *victim = d->running[d->nrunning - 1];
			llm_release(s, d, d->nrunning - 1);
			pol_fifo_push_front(&s->waiting, victim);
			s->preemptions++;
			preempted = 1;
		}
		if (d->nrunning <= i)
			break;                  /* r itself was preempted: nothing after it runs either */
		llm_schedule(d, t, r, tokens, want);
		budget -= tokens;
		i++;
	}
	/* 2. waiting requests, when nothing had to give way (first come, first served: one that arrived too late
	 * for this iteration's plan is followed by none that did not) */
	int64_t cutoff = llm_admit_cutoff(s, d, t, now_ns);
	while (!preempted && s->waiting.head && d->nrunning < s->max_seqs && budget > 0) {
		struct pol_request *prev = NULL, *r = h->admit_next ? h->admit_next(s, now_ns, &prev) : s->waiting.head;
		if (r->arrival_ns > cutoff)
			break;
		/* its leading blocks the prefix cache holds need not be computed again; nor a cache it came with */
		uint32_t evictable_hits = 0, hits = r->kv_ready ? 0 : llm_cached_start(s, d, r, &evictable_hits);
		uint64_t start = r->kv_ready ? r->kv_ready : (uint64_t)hits * s->block_size;
		uint64_t need = pol_llm_target(r) - start;
		if (!h->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		r->pol_word[0] = start;                 /* the chunk limit prices its tokens on what is cached */
		if (h->chunk_limit && (tokens = h->chunk_limit(s, t, r, tokens)) == 0) {
			r->pol_word[0] = 0;
			break;
		}
		uint64_t want = llm_blocks_for(s, start + tokens) - hits;
		if (want > d->free_blocks + d->pc.evictable - evictable_hits) {
			r->pol_word[0] = 0;
			break;
		}
		if (s->prefix_cache && !r->kv_ready) {
			pc_take(&d->pc, r, s->block_size, hits);
			r->pol_word[1] = (uint64_t)hits << 32;
			d->pc.queried_blocks += pol_llm_target(r) / s->block_size;
			d->pc.hit_blocks += hits;
		}
		if (s->prefix_cache)
			llm_room(s, d, want);
		pol_fifo_unlink(&s->waiting, prev, r);
		d->running[d->nrunning++] = r;
		llm_schedule(d, t, r, tokens, want);
		budget -= tokens;
	}
	llm_note_peak(s, d);
	t->kv_blocks_held = llm_blocks_used(s, d);
	if (t->nreq > 0)
		d->last_start_ns = now_ns;
	return t->nreq > 0;
}

size_t llm_sched_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct llm_sched *s = (const struct llm_sched *)st;
	uint64_t peak = 0;                       /* the fullest device's */
	for (uint32_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].peak_blocks > peak)
			peak = s->devs[i].peak_blocks;
	uint64_t queried = 0, hits = 0, evictions = 0;
	for (uint32_t i = 0; i < s->ndevs; i++) {
		queried += s->devs[i].pc.queried_blocks;
		hits += s->devs[i].pc.hit_blocks;
		evictions += s->devs[i].pc.evictions;
	}
	struct pol_stat all[] = {
		{ "preemptions", (double)s->preemptions },
		{ "kv_peak_fraction", (double)peak / (double)s->kv_blocks },
		{ "kv_blocks", (double)s->kv_blocks },
		{ "prefix_queried_blocks", (double)queried },
		{ "prefix_hit_blocks", (double)hits },
		{ "prefix_evictions", (double)evictions },
	};
	size_t n = s->prefix_cache ? sizeof all / sizeof all[0] : 3;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = all[i];
	return n;
}
