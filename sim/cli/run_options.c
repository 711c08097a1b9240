/* sim/cli/run_options.c: `simbatch run`'s option table: its own options,
 * the fleet's pools', and every policy's knobs (cmd_run_options). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../../traces/workload.h"
#include "../../models/model.h"
#include "../../util/options.h"
#include "../study/fleet.h"
#include "../study/run_options.h"

/* run's own options: these, ... */
static const struct opt_def run_opts_head[] = {
	{ "policy", OPT_STR, RUN_DEFAULT_POLICY, 0, 0, 0, "batching policy (simbatch list policies; an LLM's default: "
	  RUN_DEFAULT_LLM_POLICY ", vLLM V1's scheduler without chunked prefill; --engine: the version's)" },
	{ "scenario", OPT_STR, NULL, 0, 0, 0, "MLPerf Inference's scenario (docs/SCENARIOS.md): offline, server, "
	  "interactive (LLM), single-stream, multi-stream (node-level): its arrivals, metric and constraint" },
	{ "rate", OPT_DOUBLE, "1000", 0, 1e12, 1, "mean arrival rate, requests per second (an LLM given no load: half "
	  "its capacity estimate, docs/WORKLOAD.md)" },
	{ "requests", OPT_UINT, NULL, 1, 1e12, 0, "stop after N arrivals (default 20000)" },
	{ "duration", OPT_DOUBLE, NULL, 0, 1e9, 1, "stop arrivals after SECONDS of simulated time" },
	{ "warmup", OPT_UINT, "0", 0, 1e12, 0, "first N requests excluded from metrics" },
	{ "model", OPT_STR, "transformer", 0, 0, 0, "model name or .model file (simbatch list models)" },
	{ "hw", OPT_STR, "npu", 0, 0, 0, "hardware model name, node latency table file, or profile (this "
	  "machine's live kernels, timed first); an LLM's default: " RUN_DEFAULT_LLM_HW },
	{ "tp", OPT_UINT, "1", 1, 8, 0, "LLM: GPUs a replica splits the model over (tensor parallelism: 1, 2, 4 or 8; "
	  "a measured GPU)" },
	{ "ep", OPT_UINT, "1", 1, 8, 0, "LLM, a mixture of experts: GPUs its experts spread over (expert parallelism, "
	  "vLLM's --enable-expert-parallel: --ep equal to --tp; 1: none, each GPU 1/tp of every expert)" },
	{ "routing", OPT_STR, NULL, 0, 0, 0, "LLM, a mixture of experts: how tokens pick their experts: uniform (the "
	  "default) or a routing-skew file (hwmodels/moe_route.h)" },
	{ "workers", OPT_UINT, "1", 1, 4096, 0, "devices" },
	{ "replicas", OPT_STR, "1", 0, 0, 0, "LLM: N replicas of --tp GPUs each, each its own KV cache and policy, behind "
	  "--router (a fleet); N:HW[,N:HW...] a heterogeneous one, each group on its own hardware" },
	{ "router", OPT_STR, "round-robin", 0, 0, 0, "a fleet's router, placing each request on a replica (simbatch list "
	  "routers)" },
	{ "router-refresh", OPT_DOUBLE, "0", 0, 1e9, 0, "ms between the scrapes of the replicas' state the router sees "
	  "(0: the state now)" },
	{ "sla", OPT_DOUBLE, "100", 0, 1e9, 1, "SLA deadline in ms" },
	{ "seed", OPT_UINT, "1", 0, 1.8e19, 0, "random seed" },
	{ "trace", OPT_STR, NULL, 0, 0, 0, "replay arrivals and lengths from a trace CSV" },
	{ "trace-speedup", OPT_DOUBLE, "1", 0, 1e6, 1, "replay --trace's arrivals this many times faster" },
	{ "concurrency", OPT_UINT, NULL, 1, 1e6, 0, "closed-loop clients instead of --rate: N clients, each sending its next "
	  "request when the last is answered (and --think-time has passed)" },
	{ "think-time", OPT_DOUBLE, "0", 0, 1e9, 0, "closed loop: ms a client waits after an answer before its next request" },
	{ "trace-pairs", OPT_FLAG, NULL, 0, 0, 0, "draw each request's prompt and output together from a row of --trace; "
	  "arrivals from --rate and --arrival-cv, not the trace's timestamps" },
	{ "arrival-cv", OPT_DOUBLE, "1", TRC_MIN_CV, TRC_MAX_CV, 0,
	  "coefficient of variation of inter-arrival gaps (1 = Poisson, else Gamma)" },
	{ "input-len", OPT_STR, NULL, 0, 0, 0, "input length distribution (default: the model's)" },
	{ "output-len", OPT_STR, NULL, 0, 0, 0, "output length distribution (default: the model's)" },
	{ "max-batch", OPT_UINT, NULL, 1, 65536, 0, "largest batch (default: the policy's)" },
};

/* ... the policies' knobs (pol_param_union) and the routers' (router_param_union) come here, then: */
static const struct opt_def run_opts_tail[] = {
	{ "max-batched-tokens", OPT_UINT, NULL, 1, 1e7, 0, "LLM: tokens one iteration may run (default: continuous the "
	  "larger of the context and 2048, vLLM V1 without chunked prefill; chunked 512, vLLM V0's chunked-prefill "
	  "default; slo 2048; static pads whole prompts, unbounded; --engine: the version's)" },
	{ "max-seqs", OPT_UINT, NULL, 1, 65536, 0, "LLM: requests one iteration may run (default 256: vLLM V1's on GPUs "
	  "under 70 GiB and on A100s; --engine: the version's)" },
	{ "block-size", OPT_UINT, "16", 1, 65536, 0, "LLM: tokens a KV cache block holds (vLLM's default 16)" },
	{ "kv-blocks", OPT_UINT, NULL, 1, 1e8, 0, "LLM: each replica's KV cache in blocks, not its memory's (vLLM's "
	  "--num-gpu-blocks-override), e.g. a CPU tier's size; where blocks live is not priced (default: the memory's)" },
	{ "ttft-slo", OPT_DOUBLE, NULL, 0, 1e9, 1, "LLM: time-to-first-token SLO in ms, for goodput (default: none)" },
	{ "tpot-slo", OPT_DOUBLE, NULL, 0, 1e9, 1, "LLM: time-per-output-token SLO in ms, for goodput (default: none)" },
	{ "prefix-cache", OPT_STR, "on", 0, 0, 0, "LLM: on (vLLM V1's default): full KV blocks stay cached and are "
	  "shared by requests with the same prefix, evicted least recently used; off: every request computes all" },
	{ "async-scheduling", OPT_FLAG, NULL, 0, 0, 0, "LLM: vLLM's async scheduling (its default since v0.14): each "
	  "iteration is planned as the one before it starts, so a request arriving during one joins the one after next "
	  "(continuous, chunked; off unless given: planned when the one before ends, as vLLM before v0.14 and its "
	  "--no-async-scheduling; --engine: the version's)" },
	{ "engine", OPT_STR, NULL, 0, 0, 0, "LLM on a measured GPU: a serving engine's profile, a version in engines/ "
	  "(vllm-0.15) or a file: its scheduler defaults under this run's own options, and its pricing (all-reduce "
	  "algorithms, CUDA-graph padding, host launches; engines/FORMAT.md). Without it: the GPU's kernels alone" },
	{ "engine-off", OPT_STR, NULL, 0, 0, 0, "switch off --engine's terms, a comma list: allreduce, padding, launch "
	  "(pricing), async (its scheduling default); all three pricing terms off price the GPU's kernels alone" },
	{ "over-context", OPT_STR, "refuse", 0, 0, 0, "LLM: trace rows beyond the model's context: refuse (exit 2), or "
	  "drop them as a server rejects them" },
	{ "db", OPT_STR, "results/simbatch.db", 0, 0, 0, "results database" },
	{ "no-db", OPT_FLAG, NULL, 0, 0, 0, "do not store the run" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object on stdout" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "print nothing on success" },
	{ "requests-out", OPT_STR, NULL, 0, 0, 0, "write id,arrival_s,start_s,finish_s,input_len,output_len per request "
	  "(LLM runs: and first_token_s)" },
	{ "timeline-out", OPT_STR, NULL, 0, 0, 0, "write every task as Chrome trace-event JSON (Perfetto)" },
	{ "db-requests", OPT_FLAG, NULL, 0, 0, 0, "also store per-request rows in the database" },
	{ "sweep-point", OPT_STR, NULL, 0, 0, 0, "sweep point key (set by simbatch sweep): stored at most once per database" },
	{ "sweep-name", OPT_STR, NULL, 0, 0, 0, "the sweep's name, its file's without .sweep (set by simbatch sweep)" },
	{ "sweep-variant", OPT_STR, NULL, 0, 0, 0, "the point's variant label (set by simbatch sweep)" },
	{ "dry-run", OPT_FLAG, NULL, 0, 0, 0, "check every input, then exit without simulating" },
	{ "node-by-node", OPT_FLAG, NULL, 0, 0, 0, "every node (LLM: every iteration) its own task: the engine's runs "
	  "of nodes and decode runs off, to check that they change no result (slower; stored with the run)" },
	{ "quantiles", OPT_STR, "exact", 0, 0, 0, "exact: every latency kept, quantiles exact (memory grows with the "
	  "requests served, 4-8 bytes each a metric); histogram: latencies, TTFT and TPOT in log-linear histograms, "
	  "quantiles within 1/256 (nearest rank), memory fixed: a run grows only with its requests in flight" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};

/* The whole table, built once: run's options and every policy's and
 * router's knobs (a knob is an option of every run, stored with its default,
 * so that stored runs compare option by option whatever their policy). */
const struct opt_def *cmd_run_options(size_t *n)
{
	static struct opt_def all[OPT_MAX];
	static size_t nall;
	if (!nall) {
		size_t nknobs, nrknobs;
		const struct opt_def *knobs = pol_param_union(&nknobs), *rknobs = router_param_union(&nrknobs);
		size_t nhead = sizeof run_opts_head / sizeof run_opts_head[0];
		size_t ntail = sizeof run_opts_tail / sizeof run_opts_tail[0];
		size_t npools = run_fleet_npool_opts;
		if (nhead + npools + nknobs + nrknobs + ntail > OPT_MAX) {
			fprintf(stderr, "simbatch: run has more than %d options (util/options.h OPT_MAX)\n", OPT_MAX);
			abort();
		}
		memcpy(all, run_opts_head, sizeof run_opts_head);
		memcpy(all + nhead, run_fleet_pool_opts, npools * sizeof *run_fleet_pool_opts);
		memcpy(all + nhead + npools, knobs, nknobs * sizeof *knobs);
		memcpy(all + nhead + npools + nknobs, rknobs, nrknobs * sizeof *rknobs);
		memcpy(all + nhead + npools + nknobs + nrknobs, run_opts_tail, sizeof run_opts_tail);
		nall = nhead + npools + nknobs + nrknobs + ntail;
		for (size_t i = 0; i < nall; i++)   /* a plug-in's knob named as another option: a mistake in a table */
			for (size_t k = i + 1; k < nall; k++)
				if (strcmp(all[i].name, all[k].name) == 0) {
					fprintf(stderr, "simbatch: two run options are named '%s' (a policy's or router's knob?)\n",
					        all[i].name);
					abort();
				}
	}
	*n = nall;
	return all;
}
