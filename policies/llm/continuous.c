/* policies/llm/continuous.c: iteration-level batching (Orca, Yu et al. OSDI
 * 2022; vLLM, Kwon et al. SOSP 2023): every iteration runs the next token of
 * every running request and admits waiting ones, whole prompt and all, first
 * come first served, under --max-batched-tokens and --max-seqs. The toolkit's
 * builder as it is (kv.h). */
#include "kv.h"

static const struct llm_hooks continuous_hooks = { .chunked = 0 };

static int continuous_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return llm_sched_init((struct llm_sched *)st, env, "continuous", &continuous_hooks, err, errlen);
}

const struct pol_ops continuous_policy_ops = {
	.name = "continuous",
	.help = "LLM iteration-level batching (Orca; vLLM V1 without chunked prefill): decodes and whole prefills, FCFS, "
	        "paged KV cache, recompute",
	.state_size = sizeof(struct llm_sched),
	.init = continuous_init,
	LLM_SCHED_OPS,
	LLM_SCHED_DECODE_RUNS,
};
