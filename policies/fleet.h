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
	int pool;                        /* FLEET_POOL_* */
	uint64_t moves;                  /* KV moves: a prefill replica's sent, a decode replica's received ... */
	double moved_bytes;              /* ... their bytes (all its GPUs together) ... */
	double move_s;                   /* ... and the seconds from the prompt's end to each move's end, summed */
};

enum { FLEET_POOL_ANY = 0, FLEET_POOL_PREFILL = 1, FLEET_POOL_DECODE = 2 };

/* A disaggregated fleet's KV moves (what the caller prices them with). */
struct fleet_disagg {
	uint32_t prefill;                /* replicas [0, prefill) run prompts, the rest decode; 0: no disaggregation */
	double (*move_s)(const void *link, double bytes, int *extrapolated);   /* one GPU pair's message */
	const void *link;
	uint32_t pairs;                  /* GPU pairs a move splits over (the replicas' --tp) */
	uint32_t layers;                 /* a layerwise move's messages (one a layer) */
	double kv_bytes_per_token;       /* the KV cache of one token, every GPU of a replica together */
	int layerwise;
};

/* A KV move under way to a decode replica, due at its end. */
struct fleet_move {
	int64_t end_ns;
	uint64_t id;
	struct pol_request *r;
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
	struct fleet_move *due;          /* a decode replica's moves under way: a binary heap by (end, id) (owned) */
	uint32_t ndue, due_cap;
	int64_t link_free_ns;            /* a prefill replica's: when its link has sent every move given it */
	uint64_t moves;
	double moved_bytes, move_s;
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
	void *router_state;              /* the router's own (owned); a disaggregated fleet's prefill pool's ... */
	void *decode_router_state;       /* ... and its decode pool's (owned; NULL: none) */
	struct fleet_disagg dis;         /* dis.prefill 0: every replica serves whole requests */
	int move_extrapolated;           /* some move was larger than the link's largest measured message */
};

/* n replicas of policy, each initialized for one device with env, or with
 * replica_env[i] (a heterogeneous fleet: each its own KV cache and
 * iteration estimates; the knobs still env's) when given; dis (NULL or
 * dis->prefill 0: none) splits them into a prefill and a decode pool. 0, or
 * -1 with err (the policy refused its env, out of memory); f then holds
 * nothing. */
int fleet_init(struct pol_fleet *f, const struct pol_ops *policy, const struct router_ops *router,
               const struct opt_set *router_params, uint32_t n, int64_t refresh_ns, const struct pol_env *env, const struct pol_env *replica_env,
               const struct fleet_disagg *dis, char *err, size_t errlen);
/* The fleet's KV blocks, all replicas together. */
uint64_t fleet_kv_blocks(const struct pol_fleet *f);
void fleet_fini(struct pol_fleet *f);

/* The policy callbacks, for the replica a request or device belongs to
 * (device i is replica i). */
void fleet_arrive(struct pol_fleet *f, struct pol_request *r, int64_t now_ns);
int fleet_next_task(struct pol_fleet *f, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns);
/* 0, or -1 out of memory (a KV move could not be queued). */
int fleet_task_done(struct pol_fleet *f, struct pol_task *t, int64_t now_ns);

/* Decode runs (policy.h) of replica `device`'s policy: decode_run, and
 * decode_advance with each iteration's end (ends[j], iteration j + 1) for
 * the replica's busy time and KV occupancy, as k tasks would count them. */
uint32_t fleet_decode_run(const struct pol_fleet *f, uint32_t device, const struct pol_task *t, uint32_t k_max,
                          uint64_t *held);
/* The KV blocks replica `device` holds now, inside a decode run (the iteration then running), for a router
 * that reads them. */
void fleet_kv_now(struct pol_fleet *f, uint32_t device, uint64_t blocks);
/* When the next KV move to decode replica `device` lands (its request joins the first iteration built at
 * or after it), INT64_MAX when none is under way. */
int64_t fleet_next_move_ns(const struct pol_fleet *f, uint32_t device);
void fleet_decode_advance(struct pol_fleet *f, uint32_t device, struct pol_task *t, uint32_t k, const int64_t *ends,
                          uint64_t *held);
/* The policy's counters over the fleet: summed, the fractions and capacities
 * (a name holding "fraction", kv_blocks) their largest. Returns how many. */
size_t fleet_stats(const struct pol_fleet *f, struct pol_stat *out, size_t max);
/* Each replica's share, into out[n], for a run that ended at end_ns. */
void fleet_results(const struct pol_fleet *f, int64_t end_ns, struct fleet_replica_result *out);

#endif
