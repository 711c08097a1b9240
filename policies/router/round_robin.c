/* policies/router/round_robin.c: replicas in turn, whatever their load (the
 * default of vLLM's production-stack router). */
#include "router.h"

static uint32_t rr_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	(void)r;
	uint64_t *next = state;
	return (uint32_t)((*next)++ % v->n);
}

const struct router_ops round_robin_router_ops = {
	.name = "round-robin",
	.help = "replicas in turn, whatever their load",
	.state_size = sizeof(uint64_t),
	.choose = rr_choose,
	.blind = 1,
};
