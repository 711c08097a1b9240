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
 *  - static: graph batching's LLM form (static_next_task).
 *  - slo (LazyBatching's idea on LLMs): chunked, with slack deciding. The
 *    running decodes go first, then prompts being chunked; waiting requests
 *    are taken least TTFT slack first (their deadline, arrival + --ttft-slo,
 *    less now, less their prefill's predicted time alone; among the queue's
 *    first LLM_SLO_WINDOW), and a prompt's chunk is held to the most tokens
 *    that keep the iteration's predicted time within --tpot-slo whenever it
 *    carries other requests' tokens. The prediction is the caller's own
 *    iteration estimate (pol_latency.iter_ns: the hardware model's, as
 *    LazyBatching's Oracle uses exact batched latencies), every member
 *    counted as emitting. Without targets it is chunked with decodes first.
 * The KV cache (env->kv_blocks of env->block_size tokens) holds, for each
 * running request, the blocks of every token it has cached; no iteration
 * ever holds more. A request's cached tokens are pol_word[0], its blocks
 * pol_word[1]. Several devices (--workers) each hold a cache of their own
 * and the requests running on it; the waiting queue is shared, so an idle
 * device takes the next request (a preempted one may resume on another,
 * as it is recomputed anyway). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "fifo.h"
#include "policy.h"

#define LLM_SLO_WINDOW 64   /* slo: waiting requests ranked by slack at a time (the queue's head) */

/* One device's share: its KV cache and the requests running on it. */
struct llm_device {
	struct pol_request **running;    /* owned array of max_seqs slots: admission order */
	uint32_t nrunning;
	uint64_t free_blocks, peak_blocks;
	uint32_t batch_size;             /* static: members the running batch started with (0: none) */
	uint64_t batch_blocks;           /* static: the blocks it reserved */
};

struct llm_state {
	int chunked;                     /* prompts may be split into chunks */
	int slo;                         /* the slo policy: ranking by slack and the TPOT check */
	int is_static;                   /* the static policy: whole batches, padded (static_next_task) */
	int64_t window_ns;               /* static: --window */
	int64_t ttft_slo_ns, tpot_slo_ns;
	struct pol_latency lat;          /* the caller's iteration estimates (slo) */
	uint32_t max_seqs, max_tokens, block_size;
	uint64_t kv_blocks;              /* each device's */
	struct llm_device *devs;         /* owned, one per device */
	uint32_t ndevs;
	struct pol_fifo waiting;         /* arrivals, and preempted requests at the head: shared by the devices */
	uint64_t preemptions;
};

static uint64_t llm_blocks_for(const struct llm_state *s, uint64_t tokens)
{
	return (tokens + s->block_size - 1) / s->block_size;
}

static void llm_fini(struct pol_state *st)
{
	struct llm_state *s = (struct llm_state *)st;
	for (uint32_t i = 0; s->devs && i < s->ndevs; i++)
		free(s->devs[i].running);
	free(s->devs);
	s->devs = NULL;
}

static int llm_setup(struct llm_state *s, const struct pol_env *env, int chunked, int slo, char *err, size_t errlen)
{
	const char *name = s->is_static ? "static" : slo ? "slo" : chunked ? "chunked" : "continuous";
	s->window_ns = s->is_static ? llround(opt_double(env->params, "window") * 1e6) : 0;
	if (slo && !env->lat.iter_ns) {
		snprintf(err, errlen, "slo: no iteration estimates from the caller");
		return -1;
	}
	s->slo = slo;
	s->ttft_slo_ns = env->ttft_slo_ns;
	s->tpot_slo_ns = env->tpot_slo_ns;
	s->lat = env->lat;
	if (env->kv_blocks == 0 || env->block_size == 0 || env->max_batched_tokens == 0) {
		snprintf(err, errlen, "%s: no KV cache to serve from (blocks %llu of %u tokens, %u tokens an iteration)", name,
		         (unsigned long long)env->kv_blocks, env->block_size, env->max_batched_tokens);
		return -1;
	}
	/* a whole prefill, its recompute after a preemption included, must fit one iteration */
	if (!chunked && !s->is_static && env->longest_request_tokens > env->max_batched_tokens) {
		snprintf(err, errlen, "continuous: --max-batched-tokens=%u cannot hold the prefill of a request of %llu tokens "
		         "(a recompute prefills its prompt and output so far): raise it, or chunk prompts with --policy=chunked",
		         env->max_batched_tokens, (unsigned long long)env->longest_request_tokens);
		return -1;
	}
	s->chunked = chunked;
	s->max_seqs = env->max_batch;
	s->max_tokens = env->max_batched_tokens;
	s->block_size = env->block_size;
	s->kv_blocks = env->kv_blocks;
	s->ndevs = env->workers ? env->workers : 1;
	s->devs = calloc(s->ndevs, sizeof *s->devs);
	for (uint32_t i = 0; s->devs && i < s->ndevs; i++) {
		s->devs[i].free_blocks = env->kv_blocks;
		s->devs[i].running = calloc(s->max_seqs, sizeof *s->devs[i].running);
		if (!s->devs[i].running)
			break;
	}
	if (!s->devs || !s->devs[s->ndevs - 1].running) {
		llm_fini((struct pol_state *)s);
		snprintf(err, errlen, "%s: out of memory", name);
		return -1;
	}
	return 0;
}

static int continuous_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_setup((struct llm_state *)st, env, 0, 0, err, errlen);
}

static int chunked_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_setup((struct llm_state *)st, env, 1, 0, err, errlen);
}

static int static_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	((struct llm_state *)st)->is_static = 1;
	return llm_setup((struct llm_state *)st, env, 0, 0, err, errlen);
}

static int slo_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_setup((struct llm_state *)st, env, 1, 1, err, errlen);
}

static void llm_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	r->pol_word[0] = r->pol_word[1] = 0;
	pol_fifo_push(&((struct llm_state *)st)->waiting, r);
}

/* Frees a finished or preempted request's blocks and takes it off the running list. */
static void llm_release(struct llm_device *d, uint32_t i)
{
	struct pol_request *r = d->running[i];
	d->free_blocks += r->pol_word[1];
	r->pol_word[0] = r->pol_word[1] = 0;
	for (uint32_t j = i + 1; j < d->nrunning; j++)
		d->running[j - 1] = d->running[j];
	d->nrunning--;
}

static void llm_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)now_ns;
	struct llm_state *s = (struct llm_state *)st;
	struct llm_device *d = &s->devs[t->device];
	for (uint32_t i = 0; i < t->nreq; i++)
		t->reqs[i]->pol_word[0] += t->tokens[i];
	for (uint32_t i = d->nrunning; i-- > 0;)
		if (pol_req_done(d->running[i]))
			llm_release(d, i);
	if (s->is_static && d->batch_size && d->nrunning == 0) {
		d->free_blocks += d->batch_blocks;     /* the batch's reservation, once its last member ends */
		d->batch_size = 0;
		d->batch_blocks = 0;
	}
}

/* Adds r to the task with tokens new tokens, taking the blocks they need. */
static void llm_schedule(const struct llm_state *s, struct llm_device *d, struct pol_task *t, struct pol_request *r,
                         uint32_t tokens)
{
	uint64_t want = llm_blocks_for(s, r->pol_word[0] + tokens) - r->pol_word[1];
	d->free_blocks -= want;
	r->pol_word[1] += want;
	t->reqs[t->nreq] = r;
	t->tokens[t->nreq] = tokens;
	t->context[t->nreq] = (uint32_t)r->pol_word[0];
	t->nreq++;
}

/* slo: the predicted time of the iteration planned so far plus r running
 * tokens more (the caller's estimate; every member counted as emitting,
 * the dearer case). */
static int64_t slo_predict_ns(const struct llm_state *s, struct pol_task *t, const struct pol_request *r, uint32_t tokens)
{
	t->tokens[t->nreq] = tokens;
	t->context[t->nreq] = (uint32_t)r->pol_word[0];
	return s->lat.iter_ns(s->lat.iter_ctx, t->nreq + 1, t->tokens, t->context, t->nreq + 1, 0);
}

/* slo: the most of `tokens` r may run in this iteration without the
 * iteration outlasting the TPOT target, when it carries other requests'
 * tokens to protect (0: none). */
static uint32_t slo_fit(const struct llm_state *s, struct pol_task *t, const struct pol_request *r, uint32_t tokens)
{
	if (!s->tpot_slo_ns || t->nreq == 0 || slo_predict_ns(s, t, r, tokens) <= s->tpot_slo_ns)
		return tokens;
	uint32_t lo = 0, hi = tokens;              /* fits(lo), not fits(hi); the time grows with the tokens */
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (slo_predict_ns(s, t, r, mid) <= s->tpot_slo_ns)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* slo: the waiting request with the least TTFT slack among the queue's
 * first LLM_SLO_WINDOW: its deadline (arrival + --ttft-slo) less now less
 * its prefill's predicted time alone. Ties and no TTFT target: arrival
 * order. *prev is its predecessor in the queue (NULL: the head). */
static struct pol_request *slo_pick(const struct llm_state *s, int64_t now_ns, struct pol_request **prev)
{
	struct pol_request *best = s->waiting.head, *p = NULL;
	*prev = NULL;
	if (!s->ttft_slo_ns)
		return best;
	int64_t best_slack = INT64_MAX;
	uint32_t zero = 0, n = 0;
	for (struct pol_request *r = s->waiting.head; r && n < LLM_SLO_WINDOW; p = r, r = r->pol_next, n++) {
		uint32_t need = (uint32_t)pol_llm_target(r);
		int64_t alone = s->lat.iter_ns(s->lat.iter_ctx, 1, &need, &zero, 1, 0);
		int64_t slack = r->arrival_ns + s->ttft_slo_ns - now_ns - alone;
		if (slack < best_slack) {
			best_slack = slack;
			best = r;
			*prev = p;
		}
	}
	return best;
}

/* static: a batch of whole requests, run together until its last member
 * ends, no request joining it meanwhile (graph batching's LLM form, as
 * FasterTransformer-style servers run). Started when the device is free and
 * either --max-seqs requests wait or the oldest has waited --window: the
 * first come, as many as the KV cache takes when each reserves room for the
 * batch's longest prompt and longest output (its true lengths, as the
 * graph policy pads to them). The prefill runs every prompt padded to the
 * longest; each decode step runs a token for every member, the ended ones
 * as padding. Tokens stream: a member ends at its own last token, but its
 * slot and blocks stay the batch's. */
static int static_next_task(struct llm_state *s, struct llm_device *d, int64_t now_ns, struct pol_task *t,
                            int64_t *wake_ns)
{
	t->kind = POL_TASK_ITER;
	t->nreq = 0;
	if (d->batch_size) {                  /* a decode step of the running batch */
		for (uint32_t i = 0; i < d->nrunning; i++) {
			struct pol_request *r = d->running[i];
			t->reqs[t->nreq] = r;
			t->tokens[t->nreq] = 1;
			t->context[t->nreq] = (uint32_t)r->pol_word[0];
			t->nreq++;
		}
		t->pad_tokens = d->batch_size - d->nrunning;
		return t->nreq > 0;
	}
	if (!s->waiting.head)
		return 0;
	if (s->waiting.len < s->max_seqs && now_ns - s->waiting.head->arrival_ns < s->window_ns) {
		*wake_ns = s->waiting.head->arrival_ns + s->window_ns;
		return 0;
	}
	uint32_t k = 0, max_in = 0, max_out = 0;
	uint64_t blocks = 0;
	for (struct pol_request *r = s->waiting.head; r && k < s->max_seqs; r = r->pol_next) {
		uint32_t in = r->input_len > max_in ? r->input_len : max_in;
		uint32_t out = r->output_len > max_out ? r->output_len : max_out;
		uint64_t need = (k + 1) * llm_blocks_for(s, (uint64_t)in + out);
		if (need > d->free_blocks)
			break;
		max_in = in;
		max_out = out;
		blocks = need;
		k++;
	}
	if (k == 0)
		return 0;                          /* cannot happen: the engine checked one request fits alone */
	for (uint32_t i = 0; i < k; i++) {
		struct pol_request *r = pol_fifo_pop(&s->waiting);
		d->running[d->nrunning++] = r;
		t->reqs[t->nreq] = r;
		t->tokens[t->nreq] = r->input_len;
		t->context[t->nreq] = 0;
		t->pad_tokens += max_in - r->input_len;
		t->nreq++;
	}
	d->batch_size = k;
	d->batch_blocks = blocks;
	d->free_blocks -= blocks;
	if (s->kv_blocks - d->free_blocks > d->peak_blocks)
		d->peak_blocks = s->kv_blocks - d->free_blocks;
	return 1;
}

static int llm_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns)
{
	(void)device;
	struct llm_state *s = (struct llm_state *)st;
	struct llm_device *d = &s->devs[device];
	if (s->is_static) {
		int got = static_next_task(s, d, now_ns, t, wake_ns);
		t->kv_blocks_held = s->kv_blocks - d->free_blocks;
		return got;
	}
	uint32_t budget = s->max_tokens;
	int preempted = 0;
	t->kind = POL_TASK_ITER;
	t->nreq = 0;
	/* 1. the running requests, in admission order (slo: decodes first, then
	 * prompts being chunked, each held to what keeps the TPOT target) */
	for (int pass = s->slo ? 0 : 1; pass < 2; pass++)
	for (uint32_t i = 0; i < d->nrunning && budget > 0;) {
		struct pol_request *r = d->running[i];
		uint64_t need = pol_llm_target(r) - r->pol_word[0];
		if (s->slo && (pass == 0) != (need == 1)) {
			i++;
			continue;
		}
		if (!s->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		if (s->slo && pass == 1 && (tokens = slo_fit(s, t, r, tokens)) == 0)
			break;
		uint64_t want = llm_blocks_for(s, r->pol_word[0] + tokens) - r->pol_word[1];
		if (s->slo && pass == 1 && want > d->free_blocks)
			break;                  /* a prompt's chunk waits: it never preempts decodes already planned */
		while (want > d->free_blocks && d->nrunning > i) {
			/* the request admitted last gives its blocks back and waits again, to be recomputed */
			struct pol_request *victim = d->running[d->nrunning - 1];
			llm_release(d, d->nrunning - 1);
			pol_fifo_push_front(&s->waiting, victim);
			s->preemptions++;
			preempted = 1;
		}
		if (d->nrunning <= i)
			break;                  /* r itself was preempted: nothing after it runs either */
		llm_schedule(s, d, t, r, tokens);
		budget -= tokens;
		i++;
	}
	/* 2. waiting requests, first come first served, when nothing had to give way */
	while (!preempted && s->waiting.head && d->nrunning < s->max_seqs && budget > 0) {
		struct pol_request *prev = NULL, *r = s->slo ? slo_pick(s, now_ns, &prev) : s->waiting.head;
		uint64_t need = pol_llm_target(r);      /* nothing cached while waiting */
		if (!s->chunked && need > budget)
			break;
		uint32_t tokens = need < budget ? (uint32_t)need : budget;
		if (s->slo && (tokens = slo_fit(s, t, r, tokens)) == 0)
			break;
		if (llm_blocks_for(s, tokens) > d->free_blocks)
			break;
		pol_fifo_unlink(&s->waiting, prev, r);
		d->running[d->nrunning++] = r;
		llm_schedule(s, d, t, r, tokens);
		budget -= tokens;
	}
	if (s->kv_blocks - d->free_blocks > d->peak_blocks)
		d->peak_blocks = s->kv_blocks - d->free_blocks;
	t->kv_blocks_held = s->kv_blocks - d->free_blocks;
	return t->nreq > 0;
}

static size_t llm_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct llm_state *s = (const struct llm_state *)st;
	uint64_t peak = 0;                       /* the fullest device's */
	for (uint32_t i = 0; i < s->ndevs; i++)
		if (s->devs[i].peak_blocks > peak)
			peak = s->devs[i].peak_blocks;
	struct pol_stat all[] = {
		{ "preemptions", (double)s->preemptions },
		{ "kv_peak_fraction", (double)peak / (double)s->kv_blocks },
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

static const struct opt_def static_params[] = { POL_PARAM_WINDOW };

const struct pol_ops static_policy_ops = {
	.name = "static",
	.help = "LLM static batching: whole requests batched until the batch ends, padded to the longest",
	.state_size = sizeof(struct llm_state),
	.default_max_batch = 256,
	.serves_llm = 1,
	.pads_prompts = 1,
	.params = static_params,
	.nparams = sizeof static_params / sizeof static_params[0],
	.init = static_init,
	.fini = llm_fini,
	.on_arrival = llm_on_arrival,
	.on_task_done = llm_on_task_done,
	.next_task = llm_next_task,
	.stats = llm_stats,
};

/* LazyBatching's idea on LLMs: slack decides. */
const struct pol_ops slo_policy_ops = {
	.name = "slo",
	.help = "LLM SLO-aware chunked prefill: least TTFT slack first, chunks held to what keeps --tpot-slo (predicted)",
	.state_size = sizeof(struct llm_state),
	.default_max_batch = 256,
	.serves_llm = 1,
	.default_batched_tokens = 2048,  /* the TPOT check, not the budget, is what bounds a chunk here */
	.init = slo_init,
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
