/* policies/router/router.h: routers, the second kind of policy (the
 * registry's first is batching policies, policy.h): a router places each
 * arriving request on one replica of a fleet (--replicas=N behind
 * --router=NAME), each replica a device with its own KV cache and its own
 * LLM policy (policies/fleet.h).
 *
 * A router sees what a real one sees: the replicas' state as last scraped
 * (--router-refresh=MS; 0: the state now), never the requests inside them.
 * Contract: choose returns a replica index below v->n, reads nothing but v
 * and the arriving request (its lengths and prefix), and keeps its own state
 * only in *state (state_size bytes, zeroed, then init's; what it sent where
 * is its own record, as a real router keeps one). Same view, same choice: a
 * run is deterministic. A router's own knobs are declared in params, as a
 * policy's are (policy.h): the command line, --router=NAME --help, `simbatch
 * list routers` and the stored configuration take them from there, and init
 * reads them. */
#ifndef SB_ROUTER_H
#define SB_ROUTER_H

#include <stddef.h>
#include <stdint.h>
#include "../policy.h"
#include "../../util/options.h"

/* The replicas as the router last saw them. */
struct router_view {
	uint32_t n;                      /* replicas */
	const uint32_t *outstanding;     /* [n] requests routed there and not finished */
	const uint64_t *kv_used;         /* [n] KV blocks its running iteration holds (0 when idle) */
	const uint64_t *kv_blocks;       /* [n] its KV cache's capacity, in blocks */
};

struct router_ops {
	const char *name;                /* registry name, for --router */
	const char *help;                /* one line for `simbatch list routers` */
	size_t state_size;               /* bytes of its own state (0: none) */
	/* The router's own knobs (name, type, default, bounds, help); a knob two
	 * routers declare is declared alike (registry.c checks). */
	const struct opt_def *params;
	size_t nparams;
	/* optional: 0, or -1 out of memory; params holds each knob, given or its default */
	int (*init)(void *state, uint32_t n, const struct opt_set *params);
	void (*fini)(void *state);                     /* optional */
	uint32_t (*choose)(const struct router_view *v, const struct pol_request *r, void *state);
	int reads_kv;                    /* optional capability (below): choose reads v->kv_used */
	int blind;                       /* optional: choose reads no replica state in v (only v->n), so a
	                                  * --router-refresh other than 0 (how stale that state is) is refused */
};

/* Optional capability: reads_kv. v->kv_used changes at every LLM iteration,
 * and inside a decode run (policy.h, "Optional capability: decode runs";
 * sim/engine/runs.h) the iterations are not events of their own. A router
 * whose choose reads v->kv_used must set reads_kv: the engine then shows it
 * each replica's blocks as the iteration running at that instant holds them
 * (eng_kv_now), and a disaggregated fleet runs iteration by iteration. A
 * router that reads only v->outstanding and v->kv_blocks leaves it 0 and
 * owes nothing. One that read kv_used without it would see a run's first
 * iteration's blocks throughout, and --node-by-node would then give other
 * results: test_runs_change_nothing and bench/same_results.py --node-by-node
 * check every router. */

/* Ties in turn: a router that picks a minimum scans the replicas starting at
 * a turn it keeps in its state (the j-th replica scanned is
 * router_scan(turn, j, n)), keeps the first minimum it meets and sets the
 * turn past its pick. Equal replicas are then taken in turn, as nginx's
 * least_conn takes equally loaded servers (its documentation: "tried in turn
 * using a weighted round-robin balancing method"), not lowest index first,
 * which on a lightly loaded fleet sends nearly everything to replica 0.
 * In turn rather than at random: deterministic with no RNG draw. */
static inline uint32_t router_scan(uint32_t turn, uint32_t j, uint32_t n)
{
	return (uint32_t)(((uint64_t)turn + j) % n);
}

/* The registry, in `simbatch list routers` order; lookup by name. */
const struct router_ops *const *router_registry(size_t *count);
const struct router_ops *router_find(const char *name);
/* Every router's knobs once, in registry order, for an option table; each one's help names the routers
 * that take it. */
const struct opt_def *router_param_union(size_t *count);

#endif
