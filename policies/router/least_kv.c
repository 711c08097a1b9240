/* policies/router/least_kv.c: the replica whose KV cache is least full, as
 * last scraped (llm-d's KV-cache utilisation scorer): the fraction of its
 * blocks its running iteration holds; ties to fewer outstanding requests,
 * then the lowest index. */
#include "router.h"

static uint32_t lkv_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	(void)r;
	(void)state;
	uint32_t best = 0;
	for (uint32_t i = 1; i < v->n; i++) {
		/* used_i / cap_i < used_b / cap_b, exactly: cross-multiplied in 128 bits */
		unsigned __int128 a = (unsigned __int128)v->kv_used[i] * v->kv_blocks[best];
		unsigned __int128 b = (unsigned __int128)v->kv_used[best] * v->kv_blocks[i];
		if (a < b || (a == b && v->outstanding[i] < v->outstanding[best]))
			best = i;
	}
	return best;
}

const struct router_ops least_kv_router_ops = {
	.name = "least-kv",
	.help = "the replica whose KV cache is least full (ties: fewer outstanding requests, then the lowest index)",
	.choose = lkv_choose,
	.reads_kv = 1,
};
