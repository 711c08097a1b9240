/* hwmodels/npu_systolic.h: a systolic-array NPU timing model (LazyBatching
 * Table I; dataflow cycle formulas as in SCALE-Sim). Exposed so tests and
 * `simbatch hw-info` can ask for one GEMM's cycles directly.
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
	uint32_t mem_channels;      /* DRAM channels */
	uint32_t mem_latency_cycles;/* DRAM access latency */
	double mem_bw_bytes_s;      /* aggregate DRAM bandwidth */
	uint32_t elem_bytes;        /* bytes per element (weights and activations) */
	uint32_t vector_lanes;      /* element-wise ops per cycle */
	enum hw_dataflow dataflow;  /* default dataflow for node costs */
};

/* LazyBatching Table I: 128x128, 700 MHz, 8 MB act + 4 MB weight SRAM,
 * 8 channels, 100-cycle latency, 360 GB/s. */
void npu_config_default(struct npu_config *c);

/* Checks a configuration (every size and rate positive and finite, a known
 * dataflow). Returns 0, or -1 with err naming the bad field. */
int npu_config_check(const struct npu_config *c, char *err, size_t errlen);

/* Cost of one GEMM (M x K) * (K x N) with the given dataflow.
 * weight_operand: 1 when the K x N operand is a weight (fetched from DRAM,
 * may stay resident in weight SRAM), 0 when both operands are activations.
 * Returns 0, or -1 with err for a zero dimension or invalid config. */
int npu_gemm(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n, int weight_operand,
             enum hw_dataflow df, struct hw_gemm_cost *out, char *err, size_t errlen);

/* Cost of one node of a model at batch size `batch` with c->dataflow: the
 * node's GEMMs plus its element-wise work (see npu_systolic.c for how batch
 * maps onto GEMM shapes). This is what npu_hw_ops.node_cost answers with the
 * Table I configuration; exposed so tests can use a small array.
 * Returns 0, or -1 with err (zero batch, a GEMM too large to count). */
int npu_node_cost(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                  struct hw_node_cost *out, char *err, size_t errlen);

/* "ws", "os", "is" (NULL for a value outside the enum). */
const char *npu_dataflow_name(enum hw_dataflow df);

/* Parses "ws" / "os" / "is". Returns 0, or -1 with err. */
int npu_dataflow_parse(const char *s, enum hw_dataflow *out, char *err, size_t errlen);

/* Registry entry "npu": open accepts exactly "npu" and uses
 * npu_config_default(); the model may be NULL when only gemm_cost is used
 * (hw-info), in which case node_cost fails. max_batch is NULL (any batch). */
extern const struct hw_ops npu_hw_ops;

#endif
