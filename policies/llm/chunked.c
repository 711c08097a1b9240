/* policies/llm/chunked.c: chunked prefill (Sarathi-Serve, Agrawal et al.
 * OSDI 2024): continuous batching, but a prompt may be split into chunks
 * that fill what the token budget leaves after the running requests'
 * decodes, so a long prompt never stalls them (kv.h, hooks.chunked). */
#include "kv.h"

static const struct llm_hooks chunked_hooks = { .chunked = 1 };

static int chunked_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_sched_init((struct llm_sched *)st, env, "chunked", &chunked_hooks, err, errlen);
}

const struct pol_ops chunked_policy_ops = {
	.name = "chunked",
	.help = "LLM chunked prefill (Sarathi-Serve; vLLM V1's default scheduler, here with V0's 512-token budget "
	        "unless --max-batched-tokens or --engine): decodes first, prompts in chunks under the token budget",
	.state_size = sizeof(struct llm_sched),
	.default_max_batch = 256,
	.serves_llm = 1,
	.default_batched_tokens = 512,   /* Sarathi-Serve's budget for strict TPOT SLOs (Sec. 5); vLLM V0's chunked default */
	.init = chunked_init,
	.fini = llm_sched_fini,
	.on_arrival = llm_sched_on_arrival,
	.on_task_done = llm_sched_on_task_done,
	.next_task = llm_sched_next_task,
	.stats = llm_sched_stats,
	.decode_run = llm_sched_decode_run,
	.decode_advance = llm_sched_decode_advance,
};
