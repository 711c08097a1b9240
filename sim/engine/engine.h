/* sim/engine/engine.h: the discrete-event simulation of one run: requests arrive
 * (Poisson, Gamma or a trace), a policy forms tasks, simulated devices run
 * them for the time the hardware model gives, and every completed request's
 * latency goes to the metrics.
 *
 * Contract:
 *  - eng_run is deterministic: the same config (seed included) gives the
 *    same result, bit for bit. It reads no clock except to report wall_s.
 *  - The engine owns requests and tasks; the policy driver
 *    (policies/driver.h) drives the policy, which never learns whether time
 *    is simulated; requests come from traces/source.h.
 *  - Returns 0 with *res filled (caller releases it with drv_result_free),
 *    or -1 with one line in err and nothing in *res.
 */
#ifndef SB_ENGINE_H
#define SB_ENGINE_H

#include <stdint.h>
#include <stdio.h>
#include "../../policies/driver.h"
#include "../../hwmodels/hwmodel.h"
#include "../../traces/source.h"
#include "latency.h"

struct timeline;

struct eng_config {
	const struct pol_ops *policy;
	struct pol_env env;                 /* knobs; model, workers and lat are filled by the engine */
	const struct mdl_model *model;      /* not owned */
	const struct hw_model *hw;          /* not owned */
	uint32_t workers;                   /* simulated devices */
	double rate_rps;                    /* Poisson / Gamma mean rate (ignored with a trace) */
	double arrival_cv;                  /* 1 = Poisson */
	uint64_t requests;                  /* stop after this many arrivals (0: use duration_s) */
	double duration_s;                  /* arrivals stop at this time (when requests == 0) */
	uint64_t warmup;                    /* first requests excluded from metrics */
	uint64_t seed;
	const struct trc_lengths *input_len;   /* not owned; unused with a trace */
	const struct trc_lengths *output_len;  /* not owned; unused with a trace */
	const struct trc_trace *trace;      /* not owned; NULL for generated arrivals */
	double trace_speedup;               /* a replayed trace's arrivals come this many times faster (0 or 1: as recorded) */
	int trace_pairs;                    /* 1: the trace's rows are drawn jointly, arrivals generated at rate_rps */
	int node_by_node;                   /* 1: every node its own task, runs (policy.h) off: the check that runs
	                                       change nothing (--node-by-node) */
	uint32_t concurrency;               /* > 0: closed-loop clients (clients.h) send `requests` requests, not
	                                       rate_rps; each thinks think_ns after an answer */
	int64_t think_ns;
	int lockstep;                       /* the clients send queries of `concurrency` samples together, the next
	                                       when all of the last are answered (MLPerf's multi-stream; clients.h) */
	uint32_t replicas;                  /* > 1: an LLM fleet, one device a replica (workers = replicas),
	                                       each its own policy and KV cache behind router (policies/fleet.h) */
	const struct router_ops *router;
	const struct opt_set *router_params;   /* its knobs, given or default (NULL: every default) */
	int64_t router_refresh_ns;          /* what the router sees is scraped this often (0: the state now) */
	const struct fleet_disagg *disagg;  /* a fleet split into prefill and decode pools (fleet.h), else NULL */
	const struct hw_model *const *replica_hw;   /* a heterogeneous fleet: [replicas] each one's hardware, a
	                                       group's together (hw is the first's), else NULL: hw for all */
	int64_t sla_ns;
	int keep_request_rows;              /* record per-request rows (for --requests-out / the db) */
	int summary_only;                   /* the latency CDF is not wanted (drv_config) */
	int histogram_quantiles;            /* latencies in histograms of constant size (drv_config) */
	struct timeline *timeline;          /* not owned; every task is written to it when set */
};

int eng_run(const struct eng_config *c, struct drv_result *res, char *err, size_t errlen);

/* An LLM run's environment from c's hardware and requests: the policy's
 * iteration prices (env->lat.iter_ns on *cost, which the caller destroys
 * with llm_cost_destroy after the run), the KV cache in blocks of
 * env->block_size (the device's memory less the weights) and the longest
 * request, which that cache must hold whole. 0, or -1 with err and *cost
 * NULL. */
struct llm_cost;
int eng_llm_env(const struct eng_config *c, struct pol_env *env, struct llm_cost **cost, char *err, size_t errlen);
/* The same on hw (a heterogeneous fleet's group) instead of c->hw. */
int eng_llm_env_on(const struct eng_config *c, const struct hw_model *hw, struct pol_env *env, struct llm_cost **cost,
                   char *err, size_t errlen);

/* The longest input length a run's requests can have (the trace's, or the
 * input-length distribution's largest value); 0 for a model without one. */
uint32_t eng_max_input_len(const struct eng_config *c);
/* Likewise the longest output length; 0 for a model without a decoder. */
uint32_t eng_max_output_len(const struct eng_config *c);

/* Highest sustainable rate estimate for a policy config: workers * max over
 * b <= max_batch of b / graph latency at the given lengths. Used to refuse
 * open-ended runs that would never drain. Returns -1 on a hw error. */
double eng_capacity_rps(const struct mdl_model *m, const struct hw_model *hw, uint32_t workers,
                        uint32_t max_batch, uint32_t input_len, uint32_t output_len,
                        char *err, size_t errlen);

#endif
