/* hwmodels/hwmodel.h: the interface every timing model shares. A hardware
 * model answers one question: how long does node type t of model M take at
 * batch size b on this device? (DESIGN.md section 2.) Policies never include
 * this header; the engine turns its answers into the latency estimates a
 * policy sees.
 *
 * Contract:
 *  - An instance is created for one model (hw_open) and is read-only after
 *    that: node_cost must be a pure function of (node, batch), so the engine
 *    may cache its answers.
 *  - node_cost returns 0, or -1 with a one-line message (e.g. a table has no
 *    row for the node, or the batch is above the largest measured one).
 *  - Times are seconds as double here; the engine rounds to integer ns.
 *  - Methods marked optional may be NULL; callers go through the hw_* wrappers.
 */
#ifndef SB_HWMODEL_H
#define SB_HWMODEL_H

#include <stddef.h>
#include <stdint.h>
#include "../models/model.h"
#include "../models/unroll.h"

/* Longest one task may take on any hardware model, in seconds (11.6 days):
 * a node at any batch, a cold start, an LLM iteration, one operator or
 * collective of a measured profile. Simulated time is int64 nanoseconds,
 * 292 years, and arrivals may span 31.7 of them (TRC_MAX_SPAN_S): a task of
 * 1e6 s leaves room for over 8,000 of them back to back. No inference task
 * comes near it; a table or configuration that gives more is a mistake,
 * refused before the run (sim/engine/latency.h's ENG_MAX_NODE_S is this). */
#define HW_MAX_TASK_S 1e6

enum hw_bound { HW_COMPUTE_BOUND = 0, HW_MEMORY_BOUND = 1 };

struct hw_node_cost {
	double seconds;           /* total latency of the node at this batch */
	double compute_seconds;   /* part attributable to arithmetic (0 when unknown) */
	double memory_seconds;    /* part attributable to data movement (0 when unknown) */
	enum hw_bound bound;      /* which one bounds it */
	/* Work that runs beside the rest (the NPU's vector unit overlapping its
	 * array): a model that overlaps reports both parts, main_seconds (the
	 * rest) and side_seconds, seconds being their max; both 0 when there is
	 * none (seconds is then all main). The pieces of a pass node's batch add
	 * up part by part before the max (hw_node_cost_at, sim/engine/latency.c). */
	double main_seconds, side_seconds;
};

/* The main (overlap-free) part of a cost: main_seconds, or seconds when the
 * model reports no side work. */
static inline double hw_main_seconds(const struct hw_node_cost *c)
{
	return c->side_seconds > 0 || c->main_seconds > 0 ? c->main_seconds : c->seconds;
}

enum hw_dataflow { HW_DF_WS = 0, HW_DF_OS, HW_DF_IS };

struct hw_gemm_cost {
	uint64_t cycles;          /* after overlap: between max(compute, memory) and their sum */
	uint64_t compute_cycles;  /* systolic-array cycles incl. fill and drain */
	uint64_t memory_cycles;   /* DRAM transfer cycles incl. access latency */
	double seconds;
	double utilization;       /* useful MACs / (array PEs * cycles) */
	enum hw_bound bound;
};

/* What LLM serving needs of a device beyond GEMM times (hwmodels/llm_cost.h). */
struct hw_device {
	double mem_bytes;           /* memory capacity: the weights, then the KV cache (0: not modelled) */
	double mem_bw_bytes_s;      /* memory bandwidth */
	double peak_flops;          /* peak arithmetic at the model's element size, FLOP/s */
	/* a GPU model's memory (gpu_memory.h): gpus of gpu_bytes each, as the device reports it, of
	 * which mem_bytes is gpu_memory_usable_bytes x gpus; gpus 0: not a GPU */
	uint32_t gpus;
	double gpu_bytes;
	const char *gpu_bytes_source;
};

struct hw_model;
struct eng_profile;

struct hw_ops {
	const char *name;         /* registry name, e.g. "npu" */
	const char *help;         /* one line for `simbatch list hw` */
	/* Creates an instance for model m from arg (the --hw value: a name or a
	 * file path). Returns 0 and *out, or -1 with err. */
	int (*open)(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen);
	void (*close)(struct hw_model *hw);
	int (*node_cost)(const struct hw_model *hw, uint32_t node_type, uint32_t batch,
	                 struct hw_node_cost *out, char *err, size_t errlen);
	/* optional: one GEMM's cost (models with a dataflow, e.g. the NPU).
	 * weight_operand: 1 when the K x N operand is a weight, 0 for activation x
	 * activation (no weight fetch). hw may have been opened with a NULL model. */
	int (*gemm_cost)(const struct hw_model *hw, uint64_t m, uint64_t k, uint64_t n,
	                 enum hw_dataflow df, int weight_operand, struct hw_gemm_cost *out,
	                 char *err, size_t errlen);
	/* optional: largest batch the model can answer for (0 = unbounded); a
	 * pass node's batch is its tokens, which node_cost bounds itself */
	uint32_t (*max_batch)(const struct hw_model *hw);
	/* optional: coming back from idle. While a device sits idle its caches
	 * fill with other work, and the first task afterwards to run node type t
	 * refills t's weights: the extra seconds after idle_s seconds idle
	 * (non-decreasing in idle_s; 0 when not modelled). A pure function, like
	 * node_cost. */
	double (*cold_start)(const struct hw_model *hw, uint32_t node_type, double idle_s);
	/* optional: of each node's cost, the seconds a task pays once however many nodes it runs (handing it
	 * to the device and waiting for its end: a measured table's single-node tasks carry it in every row);
	 * a graph task of n nodes costs its nodes less n - 1 of it (0 when not modelled) */
	double (*task_overhead)(const struct hw_model *hw);
	/* optional: the device's memory and peak arithmetic (LLM serving) */
	void (*device)(const struct hw_model *hw, struct hw_device *out);
	/* optional: an LLM iteration priced whole (member i runs tokens[i] on a
	 * cache of context[i], emitting of them yield a token, pad rows of
	 * padding), in seconds: a model measured per iteration (llm_iter.h).
	 * hwmodels/llm_cost.c uses it in place of the GEMMs. A pure function. */
	double (*iter_cost)(const struct hw_model *hw, uint32_t n, const uint32_t *tokens, const uint32_t *context,
	                    uint32_t emitting, uint32_t pad);
	/* optional, with iter_cost: iter_cost of n members of one token each, every one emitting, no
	 * padding, on caches of context_sum tokens in all, the same for any such members (a decode
	 * run's iterations, priced without the members; sim/engine). A pure function. */
	double (*decode_cost)(const struct hw_model *hw, uint32_t n, uint64_t context_sum);
	/* optional: a pass node's per-request work (mdl_member_node) for one
	 * request of len tokens. node_cost prices the rest at batch = the
	 * tokens of all the requests; a pass batch costs that plus this for each
	 * request. A pure function, like node_cost. */
	int (*member_cost)(const struct hw_model *hw, uint32_t node_type, uint32_t len,
	                   struct hw_node_cost *out, char *err, size_t errlen);
	/* optional: any node shape (a decoder step at a request's own lengths,
	 * mdl_step_node) at batch b, priced as node_cost prices the model's
	 * nodes. A model that prices shapes from first principles has it; one
	 * that measured the model's own nodes (a table, calibrated curves) does
	 * not, and its decoder steps cost what it measured whatever the lengths.
	 * A pure function. */
	int (*shape_cost)(const struct hw_model *hw, const struct mdl_node *node, uint32_t batch,
	                  struct hw_node_cost *out, char *err, size_t errlen);
	/* optional: open as open does, for a replica of tp GPUs in tensor
	 * parallelism (tp > 1; hw_open_tp refuses tp > 1 for a model without it) */
	int (*open_tp)(const char *arg, const struct mdl_model *m, uint32_t tp, struct hw_model **out, char *err,
	               size_t errlen);
	/* optional: the serving engine's pricing terms (engine_profile.h; e outlives hw) for iterations of at
	 * most max_seqs requests and max_batched_tokens tokens; hw_set_engine refuses a model without it */
	int (*set_engine)(struct hw_model *hw, const struct eng_profile *e, uint32_t max_seqs,
	                  uint32_t max_batched_tokens, char *err, size_t errlen);
	/* optional: a mixture of experts' routing and expert parallelism (hw_moe_setup), right after opening */
	int (*moe_setup)(struct hw_model *hw, uint32_t ep, const char *routing, uint64_t seed, char *err, size_t errlen);
};

/* Every instance starts with this header. */
struct hw_model {
	const struct hw_ops *ops;
	const struct mdl_model *model;  /* not owned */
	char label[64];                 /* name as reported in results ("npu", file basename) */
};

/* Registry: resolves --hw=ARG: a registered name, or a path to a file whose
 * content says which kind it is (a node latency table "node,batch,latency_s").
 * Returns 0 and *out, or -1 with err. */
int hw_open(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen);
/* hw_open for a replica of tp GPUs in tensor parallelism (--tp); tp 1 is hw_open. */
int hw_open_tp(const char *arg, const struct mdl_model *m, uint32_t tp, struct hw_model **out, char *err,
               size_t errlen);
/* A mixture of experts on an opened model: --ep GPUs of expert parallelism (1: none), the routing model
 * (NULL or "uniform", or a routing-skew file: hwmodels/moe_route.h) and the seed its draws follow. A dense
 * model takes only ep 1 and no routing; a MoE model needs a hardware model that prices experts. 0, or -1 with
 * one line in err. */
int hw_moe_setup(struct hw_model *hw, uint32_t ep, const char *routing, uint64_t seed, char *err, size_t errlen);
void hw_close(struct hw_model *hw);
/* --engine's terms on hw (hw_ops.set_engine); e NULL: none, 0. */
int hw_set_engine(struct hw_model *hw, const struct eng_profile *e, uint32_t max_seqs, uint32_t max_batched_tokens,
                  char *err, size_t errlen);
const struct hw_ops *const *hw_registry(size_t *count);
/* Whether arg names hardware at all, before any model: a registered name, a measured GPU's, or a file that is
 * there (read when opened). 0, or -1 with the message hw_open gives. */
int hw_exists(const char *arg, char *err, size_t errlen);
/* Whether any hardware takes a replica of tp GPUs (--tp; a measured GPU's rule): 0, or -1 with why. */
int hw_tp_supported(uint32_t tp, char *err, size_t errlen);

static inline int hw_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b,
                               struct hw_node_cost *out, char *err, size_t errlen)
{
	return hw->ops->node_cost(hw, t, b, out, err, errlen);
}

/* A pass node's per-request work; -1 with err when the model cannot price it. */
int hw_member_cost(const struct hw_model *hw, uint32_t t, uint32_t len, struct hw_node_cost *out,
                   char *err, size_t errlen);

/* Node type t for batch requests of input_len tokens each: hw_node_cost,
 * or for a pass node the node over their tokens plus each request's own
 * part (what the simulator charges such a batch). */
int hw_node_cost_at(const struct hw_model *hw, uint32_t t, uint32_t batch, uint32_t input_len,
                    struct hw_node_cost *out, char *err, size_t errlen);

static inline uint32_t hw_max_batch(const struct hw_model *hw)
{
	return hw->ops->max_batch ? hw->ops->max_batch(hw) : 0;
}

static inline double hw_cold_start(const struct hw_model *hw, uint32_t t, double idle_s)
{
	return hw->ops->cold_start ? hw->ops->cold_start(hw, t, idle_s) : 0.0;
}

/* hw_ops.task_overhead; a model that does not measure one has none: its node prices are a task's each */
static inline double hw_task_overhead(const struct hw_model *hw)
{
	return hw->ops->task_overhead ? hw->ops->task_overhead(hw) : 0.0;
}

#endif
