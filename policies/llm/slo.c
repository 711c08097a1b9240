/* policies/llm/slo.c: LazyBatching's idea on LLMs, slack decides: chunked
 * prefill with the running decodes first, then prompts being chunked;
 * waiting requests are taken least TTFT slack first (their deadline, arrival
 * + --ttft-slo, less now, less their prefill's predicted time alone; among
 * the queue's first SLO_WINDOW), and a prompt's chunk is held to the most
 * tokens that keep the iteration's predicted time within --tpot-slo whenever
 * it carries other requests' tokens. The prediction is the caller's own
 * iteration estimate (pol_latency.iter_ns: the hardware model's, as
 * LazyBatching's Oracle uses exact batched latencies), every member counted
 * as emitting. Without targets it is chunked with decodes first. */
#include <stdio.h>
#include "kv.h"

#define SLO_WINDOW 64   /* waiting requests ranked by slack at a time (the queue's head) */

/* The predicted time of the iteration planned so far plus r running tokens
 * more (every member counted as emitting, the dearer case). */
static int64_t slo_predict_ns(const struct llm_sched *s, struct pol_task *t, const struct pol_request *r,
                              uint32_t tokens)
{
	t->tokens[t->nreq] = tokens;
	t->context[t->nreq] = (uint32_t)r->pol_word[0];
	return s->lat.iter_ns(s->lat.iter_ctx, t->nreq + 1, t->tokens, t->context, t->nreq + 1, 0);
}

/* hooks.chunk_limit: the most of tokens r may run without the iteration
 * outlasting the TPOT target, when it carries other requests' tokens to
 * protect (0: none). */
static uint32_t slo_fit(const struct llm_sched *s, struct pol_task *t, const struct pol_request *r, uint32_t tokens)
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

/* hooks.admit_next: the waiting request with the least TTFT slack among the
 * queue's first SLO_WINDOW. Ties and no TTFT target: arrival order. */
static struct pol_request *slo_pick(const struct llm_sched *s, int64_t now_ns, struct pol_request **prev)
{
	struct pol_request *best = s->waiting.head, *p = NULL;
	*prev = NULL;
	if (!s->ttft_slo_ns)
		return best;
	int64_t best_slack = INT64_MAX;
	uint32_t zero = 0, n = 0;
	for (struct pol_request *r = s->waiting.head; r && n < SLO_WINDOW; p = r, r = r->pol_next, n++) {
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

static const struct llm_hooks slo_hooks = {
	.chunked = 1, .decodes_first = 1, .chunk_limit = slo_fit, .admit_next = slo_pick,
};

static int slo_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	if (!env->lat.iter_ns) {
		snprintf(err, errlen, "slo: no iteration estimates from the caller");
		return -1;
	}
	return llm_sched_init((struct llm_sched *)st, env, "slo", &slo_hooks, err, errlen);
}

const struct pol_ops slo_policy_ops = {
	.name = "slo",
	.help = "LLM SLO-aware chunked prefill: least TTFT slack first, chunks held to what keeps --tpot-slo (predicted)",
	.state_size = sizeof(struct llm_sched),
	.default_batched_tokens = 2048,  /* the TPOT check, not the budget, is what bounds a chunk here */
	.init = slo_init,
	LLM_SCHED_OPS,
	LLM_SCHED_DECODE_RUNS,
};
