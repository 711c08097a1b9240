/* policies/router/least_outstanding.c: the replica with the fewest requests
 * routed to it and not yet answered, as last scraped (join-the-shortest-queue;
 * ties to the lowest index). */
#include "router.h"

static uint32_t lo_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	(void)r;
	(void)state;
	uint32_t best = 0;
	for (uint32_t i = 1; i < v->n; i++)
		if (v->outstanding[i] < v->outstanding[best])
			best = i;
	return best;
}

const struct router_ops least_outstanding_router_ops = {
	.name = "least-outstanding",
	.help = "the replica with the fewest requests routed and not yet answered (ties: the lowest index)",
	.choose = lo_choose,
};
