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
	.default_batched_tokens = 512,   /* Sarathi-Serve's budget for strict TPOT SLOs (Sec. 5); vLLM V0's chunked default */
	.init = chunked_init,
	LLM_SCHED_OPS,
	LLM_SCHED_DECODE_RUNS,
};
