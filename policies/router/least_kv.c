/* policies/router/least_kv.c: the replica whose KV cache is least full, as
 * last scraped (llm-d's KV-cache utilisation scorer): the fraction of its
 * blocks its running iteration holds; ties to fewer outstanding requests,
 * then in turn (router.h, router_scan). */
#include "router.h"

static uint32_t lkv_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	(void)r;
	uint32_t *turn = state;
	uint32_t best = *turn % v->n;
	for (uint32_t j = 1; j < v->n; j++) {
		uint32_t i = router_scan(*turn, j, v->n);
		/* used_i / cap_i < used_b / cap_b, exactly: cross-multiplied in 128 bits */
		unsigned __int128 a = (unsigned __int128)v->kv_used[i] * v->kv_blocks[best];
		unsigned __int128 b = (unsigned __int128)v->kv_used[best] * v->kv_blocks[i];
		if (a < b || (a == b && v->outstanding[i] < v->outstanding[best]))
			best = i;
	}
	*turn = best + 1;
	return best;
}

const struct router_ops least_kv_router_ops = {
	.name = "least-kv",
	.help = "the replica whose KV cache is least full (ties: fewer outstanding requests, then in turn)",
	.state_size = sizeof(uint32_t),
	.choose = lkv_choose,
	.reads_kv = 1,
};
