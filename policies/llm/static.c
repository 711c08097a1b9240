/* policies/llm/static.c: static batching, graph batching's LLM form, as
 * FasterTransformer-style servers run it: a batch of whole requests runs
 * together until its last member ends, no request joining it meanwhile.
 * Started when the device is free and either --max-seqs requests wait or
 * the oldest has waited --window: the first come, as many as the KV cache
 * takes when each reserves room for the batch's longest prompt and longest
 * output (its true lengths, as the graph policy pads to them). The prefill
 * runs every prompt padded to the longest; each decode step runs a token
 * for every member, the ended ones as padding. Tokens stream: a member ends
 * at its own last token, but its slot and blocks stay the batch's until the
 * batch ends. */
#include <math.h>
#include "kv.h"

struct static_state {
	struct llm_sched base;           /* first: the toolkit's callbacks take the state as one */
	int64_t window_ns;               /* --window */
};

static int static_build(struct llm_sched *s, struct llm_device *d, int64_t now_ns, struct pol_task *t,
                        int64_t *wake_ns)
{
	int64_t window_ns = ((struct static_state *)s)->window_ns;
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
	if (s->waiting.len < s->max_seqs && now_ns - s->waiting.head->arrival_ns < window_ns) {
		*wake_ns = s->waiting.head->arrival_ns + window_ns;
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
	llm_note_peak(s, d);
	return 1;
}

/* The batch's reservation is given back once its last member ends. */
static void static_after_task(struct llm_sched *s, struct llm_device *d)
{
	(void)s;
	if (d->batch_size && d->nrunning == 0) {
		d->free_blocks += d->batch_blocks;
		d->batch_size = 0;
		d->batch_blocks = 0;
	}
}

static const struct llm_hooks static_hooks = { .build = static_build, .after_task = static_after_task };

static int static_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	struct static_state *s = (struct static_state *)st;
	s->window_ns = llround(opt_double(env->params, "window") * 1e6);
	return llm_sched_init(&s->base, env, "static", &static_hooks, err, errlen);
}

static const struct opt_def static_params[] = { POL_PARAM_WINDOW };

const struct pol_ops static_policy_ops = {
	.name = "static",
	.help = "LLM static batching: whole requests batched until the batch ends, padded to the longest",
	.state_size = sizeof(struct static_state),
	.pads_prompts = 1,
	.params = static_params,
	.nparams = sizeof static_params / sizeof static_params[0],
	.init = static_init,
	LLM_SCHED_OPS,
};
