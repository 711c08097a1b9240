/* policies/router/least_outstanding.c: the replica with the fewest requests
 * routed to it and not yet answered, as last scraped (join-the-shortest-queue).
 * Ties in turn (router.h, router_scan): nginx's least_conn tries equally
 * loaded servers "in turn", so an idle fleet is filled as round-robin
 * fills it rather than from replica 0 up. */
#include "router.h"

static uint32_t lo_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	(void)r;
	uint32_t *turn = state;
	uint32_t best = *turn % v->n;
	for (uint32_t j = 1; j < v->n; j++) {
		uint32_t i = router_scan(*turn, j, v->n);
		if (v->outstanding[i] < v->outstanding[best])
			best = i;
	}
	*turn = best + 1;
	return best;
}

const struct router_ops least_outstanding_router_ops = {
	.name = "least-outstanding",
	.help = "the replica with the fewest requests routed and not yet answered (ties: in turn)",
	.state_size = sizeof(uint32_t),
	.choose = lo_choose,
};
