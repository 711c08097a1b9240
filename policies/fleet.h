/* policies/fleet.h: a fleet of LLM replicas behind a router (--replicas=N
 * --router=NAME --router-refresh=MS; DESIGN.md 3c). Each replica is one
 * device (its --tp GPUs priced as one) with its own KV cache and its own
 * instance of the run's LLM policy, which sees itself alone (one device,
 * device 0); the router (policies/router/router.h) places every arrival on
 * a replica from the state it last scraped. The policy driver runs a fleet
 * in place of a single policy state (driver.h), so the engine and the
 * policies are the same as for one replica.
 *
 * What a router sees: each replica's outstanding requests (routed, not yet
 * answered) and the KV blocks its running iteration holds (0 when idle), as
 * a server's metrics report them. With a refresh interval R > 0 it sees them
 * as scraped at the multiples of R: the state after every event before the
 * scrape instant (state changes only at events, so the snapshot is taken at
 * the first event at or after the instant, before that event counts). */
#ifndef SB_FLEET_H
#define SB_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include "policy.h"
#include "router/router.h"

/* One replica's share of a run. */
struct fleet_replica_result {
	uint64_t routed, completed;
	double busy_fraction;            /* device-busy time / the run's end */
	double mean_outstanding;         /* requests routed there and unanswered, averaged over the run's time */
	uint32_t max_outstanding;
	double kv_peak_fraction, kv_mean_fraction;   /* its KV cache held by its iterations: the most, the time average */
	double preemptions;              /* its policy's count (0 when the policy has none) */
	double prefix_queried_blocks, prefix_hit_blocks, prefix_evictions;   /* its prefix cache's (0: none) */
};

struct fleet_replica {
	struct pol_state *st;            /* its policy's state (owned) */
	uint32_t outstanding;            /* now */
	uint64_t kv_used;                /* now */
	uint64_t routed, completed;
	uint32_t max_outstanding;
	int64_t busy_ns, last_change_ns;
	double outstanding_ns;           /* outstanding integrated over time, to last_change_ns */
	double kv_block_ns;              /* blocks held x duration, over its iterations */
	uint64_t kv_peak;
	uint64_t kv_blocks;              /* its KV cache, in blocks */
};

struct pol_fleet {
	const struct pol_ops *policy;    /* each replica's */
	const struct router_ops *router;
	uint32_t n;
	int64_t refresh_ns;              /* 0: the router sees the state now */
	struct fleet_replica *rep;       /* [n] */
	uint32_t *view_outstanding;      /* [n] what the router sees */
	uint64_t *view_kv_used, *view_kv_blocks;
	int64_t next_scrape_ns;
	void *router_state;              /* the router's own (owned) */
};

/* n replicas of policy, each initialized for one device with env, or with
 * replica_env[i] (a heterogeneous fleet: each its own KV cache and
 * iteration estimates; the knobs still env's) when given. 0, or -1 with err
 * (the policy refused its env, out of memory); f then holds nothing. */
int fleet_init(struct pol_fleet *f, const struct pol_ops *policy, const struct router_ops *router, uint32_t n,
               int64_t refresh_ns, const struct pol_env *env, const struct pol_env *replica_env, char *err,
               size_t errlen);
/* The fleet's KV blocks, all replicas together. */
uint64_t fleet_kv_blocks(const struct pol_fleet *f);
void fleet_fini(struct pol_fleet *f);

/* The policy callbacks, for the replica a request or device belongs to
 * (device i is replica i). */
void fleet_arrive(struct pol_fleet *f, struct pol_request *r, int64_t now_ns);
int fleet_next_task(struct pol_fleet *f, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns);
void fleet_task_done(struct pol_fleet *f, struct pol_task *t, int64_t now_ns);

/* The policy's counters over the fleet: summed, the fractions and capacities
 * (a name holding "fraction", kv_blocks) their largest. Returns how many. */
size_t fleet_stats(const struct pol_fleet *f, struct pol_stat *out, size_t max);
/* Each replica's share, into out[n], for a run that ended at end_ns. */
void fleet_results(const struct pol_fleet *f, int64_t end_ns, struct fleet_replica_result *out);

#endif
