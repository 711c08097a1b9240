/* hwmodels/npu_systolic.h: a systolic-array NPU timing model (LazyBatching
 * Table I; dataflow cycle formulas as in SCALE-Sim, with the weight double
 * buffering of the TPU). Exposed so tests, `simbatch hw-info` and
 * `simbatch model-info` can ask for one GEMM's cycles directly. The model
 * itself (formulas, memory system, tiling) is described in npu_systolic.c.
 *
 * Contract:
 *  - Every function checks the configuration first (npu_config_check) and
 *    fails with a message naming the bad field; nothing here keeps state.
 *  - Cycle counts are exact integers; a GEMM whose count would not fit in 64
 *    bits is an error, never a wrapped number.
 *  - An instance made by npu_hw_create (or opened as "npu" or from a config
 *    file) is read-only after creation, as hwmodel.h requires.
 */
#ifndef SB_NPU_SYSTOLIC_H
#define SB_NPU_SYSTOLIC_H

#include "hwmodel.h"

struct npu_config {
	uint32_t rows;              /* PE rows (array height) */
	uint32_t cols;              /* PE columns (array width) */
	double freq_hz;             /* clock */
	uint64_t act_sram_bytes;    /* activation SRAM */
	uint64_t weight_sram_bytes; /* weight SRAM */
	uint32_t mem_channels;      /* DRAM channels (interleaved: only their aggregate bandwidth counts) */
	uint32_t mem_latency_cycles;/* DRAM access latency */
	double mem_bw_bytes_s;      /* aggregate DRAM bandwidth */
	uint32_t elem_bytes;        /* bytes per element (weights and activations) */
	uint32_t vector_lanes;      /* element-wise ops per cycle */
	enum hw_dataflow dataflow;  /* default dataflow for node costs */
	uint32_t weight_double_buffer; /* 1: the next fold's stationary operand moves while the current fold computes (TPU); 0: serialized, as SCALE-Sim */
	double weight_load_bytes_per_cycle; /* weight bytes entering the PEs per cycle (WS); 0: as wide as DRAM (npu_weight_load_bytes) */
	uint32_t vector_overlap;    /* 1: the vector unit works on a node's outputs while the array computes (TPU); 0: after it */
	double mem_capacity_bytes;  /* DRAM capacity (LLM serving: weights and KV cache); 0: not modelled */
};

/* DRAM bytes per cycle (bandwidth / clock). */
double npu_mem_bytes_per_cycle(const struct npu_config *c);

/* The weight path's bytes per cycle in effect: weight_load_bytes_per_cycle,
 * or the DRAM's bytes per cycle when that is 0. */
double npu_weight_load_bytes(const struct npu_config *c);

/* 1 when the weight path is no wider than DRAM (every weight byte that enters
 * the array in a GEMM crossed DRAM in that GEMM, so a wider path could never
 * be kept busy), else 0. */
int npu_weight_path_fits(const struct npu_config *c);

/* Cycles to move one fold of weights (rows x cols x elem_bytes) into the
 * PEs over the weight path: at least 1. */
uint64_t npu_weight_load_cycles(const struct npu_config *c);

/* LazyBatching Table I: 128x128, 700 MHz, 8 MB act + 4 MB weight SRAM,
 * 8 channels, 100-cycle latency, 360 GB/s; int8, weight stationary, weights
 * double-buffered in the PEs and prefetched into them at memory speed, the
 * vector unit overlapping the array (the TPU's choices; sources beside each
 * value in npu_systolic.c and hwmodels/table1.npu). */
void npu_config_default(struct npu_config *c);

/* Checks a configuration (every size and rate positive and finite, a known
 * dataflow, a weight SRAM that holds two folds of weights). Returns 0, or -1
 * with err naming the bad field. */
int npu_config_check(const struct npu_config *c, char *err, size_t errlen);

/* One line describing c ("128x128 PEs at 700 MHz, ws, ...") into buf. */
void npu_config_describe(const struct npu_config *c, char *buf, size_t len);

/* Extra numbers behind one GEMM's cost, for reports and tests. */
struct npu_gemm_detail {
	uint64_t folds;             /* ceil(Sr/R) * ceil(Sc/C) per step of one run */
	uint64_t stream_cycles;     /* T: rows of the moving operand streamed per fold */
	uint64_t tiles;             /* M tiles the weights stream through (1 when they are resident or the activations fit) */
	uint64_t dram_bytes;        /* bytes across DRAM, all runs and steps */
	int weights_resident;       /* 1 when the weight operand fits the weight SRAM (fetched once per task) */
	int activations_spill;      /* 1 when the activations do not fit the activation SRAM */
};

/* Cost of one GEMM (M x K) * (K x N) with the given dataflow.
 * weight_operand: 1 when the K x N operand is a weight (fetched from DRAM,
 * may stay resident in weight SRAM), 0 when both operands are activations.
 * Returns 0, or -1 with err for a zero dimension or invalid config. */
int npu_gemm(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n, int weight_operand,
             enum hw_dataflow df, struct hw_gemm_cost *out, char *err, size_t errlen);

/* A GEMM as a node runs it: `runs` independent products (M x K)(K x N) back
 * to back (a term's count, times the batch for attention), each of `steps`
 * sequential steps with the same K x N operand (the timesteps of one RNN cell
 * task: each step waits for the one before, so compute adds up, while weights
 * that fit the weight SRAM are fetched only by the first step). */
struct npu_gemm_req {
	uint64_t m, k, n;           /* one product */
	uint32_t steps;             /* >= 1 */
	uint64_t runs;              /* >= 1 */
	int weight_operand;         /* 1: K x N is a weight; 0: both operands are activations */
	enum hw_dataflow df;
};

/* Cost of all runs and steps of r (out->cycles is their total). detail may
 * be NULL. Returns 0, or -1 with err for a zero dimension, an invalid config
 * or a count too large for 64 bits. */
int npu_gemm_runs(const struct npu_config *c, const struct npu_gemm_req *r, struct hw_gemm_cost *out,
                  struct npu_gemm_detail *detail, char *err, size_t errlen);

/* One gemm=/attn=/conv= term of a node as the NPU runs it at some batch. */
struct npu_term_cost {
	struct npu_gemm_req req;    /* M already multiplied by the batch for weight GEMMs */
	struct hw_gemm_cost cost;   /* all runs and steps of the term */
	struct npu_gemm_detail detail;
};

/* The node's terms at batch size `batch` with c->dataflow, in file order;
 * out must hold node->ngemms entries. Returns 0, or -1 with err. */
int npu_node_terms(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                   struct npu_term_cost *out, char *err, size_t errlen);

/* Cost of one node of a model at batch size `batch` with c->dataflow: the
 * node's GEMMs plus its element-wise work (see npu_systolic.c for how batch
 * maps onto GEMM shapes). This is what npu_hw_ops.node_cost answers; exposed
 * so tests can use a small array.
 * Returns 0, or -1 with err (zero batch, a GEMM too large to count). */
int npu_node_cost(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                  struct hw_node_cost *out, char *err, size_t errlen);

/* "ws", "os", "is" (NULL for a value outside the enum). */
const char *npu_dataflow_name(enum hw_dataflow df);

/* Parses "ws" / "os" / "is". Returns 0, or -1 with err. */
int npu_dataflow_parse(const char *s, enum hw_dataflow *out, char *err, size_t errlen);

/* Creates an NPU instance with configuration c (copied), reported as label,
 * for model m (not owned; may be NULL when only GEMMs are asked for).
 * Returns 0 and *out (free with hw_close), or -1 with err. */
int npu_hw_create(const struct npu_config *c, const char *label, const struct mdl_model *m,
                  struct hw_model **out, char *err, size_t errlen);

/* The configuration of an NPU instance, or NULL when hw is another kind of
 * hardware model. The pointer lives as long as hw. */
const struct npu_config *npu_hw_config(const struct hw_model *hw);

/* Registry entry "npu": open accepts exactly "npu" and uses
 * npu_config_default(); the model may be NULL when only gemm_cost is used
 * (hw-info), in which case node_cost fails. max_batch is NULL (any batch). */
extern const struct hw_ops npu_hw_ops;

#endif
