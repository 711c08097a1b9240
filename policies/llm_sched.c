/* policies/llm_sched.c: iteration-level batching of LLM requests over a
 * paged KV cache (DESIGN.md section 3b), the BatchMaker and Amun ideas in
 * their LLM form:
 *  - continuous (Orca, Yu et al. OSDI 2022; vLLM, Kwon et al. SOSP 2023):
 *    every iteration runs the next token of every running request and
 *    admits waiting ones, whole prompt and all, first come first served,
 *    under --max-batched-tokens and --max-seqs;
 *  - chunked (Sarathi-Serve, Agrawal et al. OSDI 2024): the same, but a
 *    prompt may be split into chunks that fill what the token budget leaves
 *    after the running requests' decodes, so a long prompt never stalls them.
 *
 * One iteration, on an idle device (the order of vLLM V1's scheduler):
 *  1. Running requests, in the order they were admitted, each its next
 *     tokens: a decode is 1; a prompt being chunked is as much of the rest
 *     as the budget leaves (chunked only). Each takes the KV blocks those
 *     tokens need. When the cache has too few free blocks, the request
 *     admitted last is preempted (recompute, as vLLM V1 does by default: its
 *     blocks are freed and it waits again at the head of the queue, to be
 *     prefilled anew over its prompt and every token it had generated), and
 *     again, until the blocks are there or the request itself was the one
 *     preempted.
 *  2. If nothing was preempted, waiting requests in order (the preempted
 *     first, then arrivals), while fewer than --max-seqs run: continuous
 *     admits one whose whole remaining prompt fits the budget left and
 *     stops at the first that does not; chunked gives it a chunk of what is
 *     left. A request that cannot get its blocks is not admitted, and the
 *     queue waits behind it (first come, first served).
 * The KV cache (env->kv_blocks of env->block_size tokens) holds, for each
 * running request, the blocks of every token it has cached; no iteration
 * ever holds more. A request's cached tokens are pol_word[0], its blocks
 * pol_word[1]. One device: several would each need their own cache. */
#include <stdio.h>
#include <stdlib.h>
#include "fifo.h"
#include "policy.h"

struct llm_state {
	int chunked;
	uint32_t max_seqs, max_tokens, block_size;
	uint64_t kv_blocks, free_blocks, peak_blocks;
	struct pol_request **running;    /* owned array of max_seqs slots: admission order */
	uint32_t nrunning;
	struct pol_fifo waiting;         /* arrivals, and preempted requests at the head */
	uint64_t preemptions;
};

static uint64_t llm_blocks_for(const struct llm_state *s, uint64_t tokens)
{
	return (tokens + s->block_size - 1) / s->block_size;
}

static void llm_fini(struct pol_state *st)
{
	struct llm_state *s = (struct llm_state *)st;
	free(s->running);
	s->running = NULL;
}

static int llm_setup(struct llm_state *s, const struct pol_env *env, int chunked, char *err, size_t errlen)
{
	const char *name = chunked ? "chunked" : "continuous";
	if (env->workers != 1) {
		snprintf(err, errlen, "%s: one device only (each device would need a KV cache and a queue of its own)", name);
		return -1;
	}
	if (env->kv_blocks == 0 || env->block_size == 0 || env->max_batched_tokens == 0) {
		snprintf(err, errlen, "%s: no KV cache to serve from (blocks %llu of %u tokens, %u tokens an iteration)", name,
		         (unsigned long long)env->kv_blocks, env->block_size, env->max_batched_tokens);
		return -1;
	}
	/* a whole prefill, its recompute after a preemption included, must fit one iteration */
	if (!chunked && env->longest_request_tokens > env->max_batched_tokens) {
		snprintf(err, errlen, "continuous: --max-batched-tokens=%u cannot hold the prefill of a request of %llu tokens "
		         "(a recompute prefills its prompt and output so far): raise it, or chunk prompts with --policy=chunked",
		         env->max_batched_tokens, (unsigned long long)env->longest_request_tokens);
		return -1;
	}
	s->chunked = chunked;
	s->max_seqs = env->max_batch;
	s->max_tokens = env->max_batched_tokens;
	s->block_size = env->block_size;
	s->kv_blocks = s->free_blocks = env->kv_blocks;
	s->running = calloc(s->max_seqs, sizeof *s->running);
	if (!s->running) {
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	return 0;
}

static int continuous_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_setup((struct llm_state *)st, env, 0, err, errlen);
}

static int chunked_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_setup((struct llm_state *)st, env, 1, err, errlen);
}

static void llm_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	r->pol_word[0] = r->pol_word[1] = 0;
	pol_fifo_push(&((struct llm_state *)st)->waiting, r);
}

/* Frees a finished or preempted request's blocks and takes it off the running list. */
static void llm_release(struct llm_state *s, uint32_t i)
{
	struct pol_request *r = s->running[i];
	s->free_blocks += r->pol_word[1];
	r->pol_word[0] = r->pol_word[1] = 0;
	for (uint32_t j = i + 1; j < s->nrunning; j++)
		s->running[j - 1] = s->running[j];
	s->nrunning--;
}

static void llm_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)now_ns;
	struct llm_state *s = (struct llm_state *)st;
	for (uint32_t i = 0; i < t->nreq; i++)
		t->reqs[i]->pol_word[0] += t->tokens[i];
	for (uint32_t i = s->nrunning; i-- > 0;)
		if (pol_req_done(s->running[i]))
			llm_release(s, i);
}

/* Adds r to the task with tokens new tokens, taking the blocks they need. */
static void llm_schedule(struct llm_state *s, struct pol_task *t, struct pol_request *r, uint32_t tokens)
{
	uint64_t want = llm_blocks_for(s, r->pol_word[0] + tokens) - r->pol_word[1];
	s->free_blocks -= want;
	r->pol_word[1] += want;
	t->reqs[t->nreq] = r;
	t->tokens[t->nreq] = tokens;
	t->context[t->nreq] = (uint32_t)r->pol_word[0];
	t->nreq++;
}

static int llm_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns)
{
	(void)device;
	(void)now_ns;
	(void)wake_ns;
	struct llm_state *s = (struct llm_state *)st;
	uint32_t budget = s->max_tokens;
	int preempted = 0;
	t->kind = POL_TASK_ITER;
	t->nreq = 0;
	/* 1. the running requests, in admission order */
	for (uint32_t i = 0; i < s->nrunning && budget > 0;) {
		struct pol_request *r = s->running[i];
		uint64_t need = pol_llm_target(r) - r->pol_word[0];
		if (!s->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		uint64_t want = llm_blocks_for(s, r->pol_word[0] + tokens) - r->pol_word[1];
		while (want > s->free_blocks && s->nrunning > i) {
			/* the request admitted last gives its blocks back and waits again, to be recomputed */
			struct pol_request *victim = s->running[s->nrunning - 1];
			llm_release(s, s->nrunning - 1);
			pol_fifo_push_front(&s->waiting, victim);
			s->preemptions++;
			preempted = 1;
		}
		if (s->nrunning <= i)
			break;                  /* r itself was preempted: nothing after it runs either */
		llm_schedule(s, t, r, tokens);
		budget -= tokens;
		i++;
	}
	/* 2. waiting requests, first come first served, when nothing had to give way */
	while (!preempted && s->waiting.head && s->nrunning < s->max_seqs && budget > 0) {
		struct pol_request *r = s->waiting.head;
		uint64_t need = pol_llm_target(r);      /* nothing cached while waiting */
		if (!s->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		if (llm_blocks_for(s, tokens) > s->free_blocks)
			break;
		pol_fifo_pop(&s->waiting);
		s->running[s->nrunning++] = r;
		llm_schedule(s, t, r, tokens);
		budget -= tokens;
	}
	if (s->kv_blocks - s->free_blocks > s->peak_blocks)
		s->peak_blocks = s->kv_blocks - s->free_blocks;
	return t->nreq > 0;
}

static size_t llm_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct llm_state *s = (const struct llm_state *)st;
	struct pol_stat all[] = {
		{ "preemptions", (double)s->preemptions },
		{ "kv_peak_fraction", (double)s->peak_blocks / (double)s->kv_blocks },
		{ "kv_blocks", (double)s->kv_blocks },
	};
	size_t n = sizeof all / sizeof all[0];
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = all[i];
	return n;
}

const struct pol_ops continuous_policy_ops = {
	.name = "continuous",
	.help = "LLM iteration-level batching (Orca, vLLM): decodes and whole prefills, FCFS, paged KV cache, recompute",
	.state_size = sizeof(struct llm_state),
	.default_max_batch = 256,        /* vLLM's max_num_seqs */
	.serves_llm = 1,
	.init = continuous_init,
	.fini = llm_fini,
	.on_arrival = llm_on_arrival,
	.on_task_done = llm_on_task_done,
	.next_task = llm_next_task,
	.stats = llm_stats,
};

const struct pol_ops chunked_policy_ops = {
	.name = "chunked",
	.help = "LLM chunked prefill (Sarathi-Serve): decodes first, prompts in chunks under the token budget",
	.state_size = sizeof(struct llm_state),
	.default_max_batch = 256,
	.serves_llm = 1,
	.default_batched_tokens = 512,   /* Sarathi-Serve's budget for strict TPOT SLOs (Sec. 5); vLLM V0's chunked default */
	.init = chunked_init,
	.fini = llm_fini,
	.on_arrival = llm_on_arrival,
	.on_task_done = llm_on_task_done,
	.next_task = llm_next_task,
	.stats = llm_stats,
};
