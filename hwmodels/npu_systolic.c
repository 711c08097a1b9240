/* hwmodels/npu_systolic.c: analytical timing of the TPU-like systolic-array
 * NPU that LazyBatching simulates (Sec. V, Table I).
 *
 * Compute follows the analytical model of SCALE-Sim (Samajdar et al., arXiv
 * 1811.02883, and the v2 paper, ISPASS 2020). A dataflow maps the GEMM
 * (M x K)(K x N) onto a spatial Sr x Sc grid and a temporal dimension T:
 *     WS: Sr = K, Sc = N, T = M     OS: Sr = M, Sc = N, T = K
 *     IS: Sr = K, Sc = M, T = N
 * On an R x C array the grid is cut into ceil(Sr/R) * ceil(Sc/C) folds that
 * run back to back, each taking 2R + C + T - 2 cycles: the stationary
 * operand needs R cycles to enter (or the results R cycles to leave), the
 * moving operand T cycles to stream, and the skewed wavefront R + C - 2
 * cycles to fill and drain the array.
 * Partial folds cost the same as full ones, as in SCALE-Sim, which pads a
 * partial fold with idle PEs: operands still enter at the array's edges and
 * partial sums still travel to its bottom edge, so unused rows or columns save
 * no time. Counting this way keeps our numbers comparable with SCALE-Sim runs.
 *
 * Memory is a fixed-latency, fixed-bandwidth DRAM, as the paper models it:
 *  - bytes per cycle = bandwidth / clock (514.3 for Table I); the 8 channels
 *    enter only through the aggregate bandwidth they provide.
 *  - a weight operand (K x N) that fits in the weight SRAM is fetched once per
 *    GEMM. One that does not fit is streamed through once per tile of M rows
 *    that the activation SRAM can hold (a tile row needs its K inputs and N
 *    outputs on chip), since every tile must meet every weight.
 *  - activations stay on chip between layers, as in the TPU's unified buffer,
 *    when the GEMM's activation operands and output together fit in the
 *    activation SRAM; otherwise each is moved across DRAM once.
 *  - the access latency is paid once per GEMM that moves any bytes: double
 *    buffering hides the latency of later tiles behind earlier transfers.
 *  - transfers overlap compute (double buffering), so a GEMM takes
 *    max(compute, memory) cycles and is bound by the larger.
 */
#include "npu_systolic.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Table I gives no operand width. We take int8 (1 byte), the inference
 * format of TPU v1, which the paper's NPU is modelled after (Sec. V). The
 * choice cannot be settled by Table II: at batch 1 every ResNet-50 GEMM is
 * compute-bound under both int8 and bf16, so both give the same 1.31 ms (WS)
 * against the paper's 1.1 ms; the width matters only for memory-bound GEMMs
 * (small-batch RNN cells and fully connected layers). */
#define NPU_DEFAULT_ELEM_BYTES 1u

void npu_config_default(struct npu_config *c)
{
	c->rows = 128;
	c->cols = 128;
	c->freq_hz = 700e6;
	c->act_sram_bytes = 8ull << 20;
	c->weight_sram_bytes = 4ull << 20;
	c->mem_channels = 8;
	c->mem_latency_cycles = 100;
	c->mem_bw_bytes_s = 360e9;
	c->elem_bytes = NPU_DEFAULT_ELEM_BYTES;
	/* The activation/vector unit sits below the array and receives one result
	 * per column per cycle, so element-wise throughput matches the array's
	 * width. */
	c->vector_lanes = c->cols;
	c->dataflow = HW_DF_WS;
}

int npu_config_check(const struct npu_config *c, char *err, size_t errlen)
{
	const char *bad = NULL;

	if (c->rows == 0)
		bad = "rows must be > 0";
	else if (c->cols == 0)
		bad = "cols must be > 0";
	else if (!(c->freq_hz > 0) || !isfinite(c->freq_hz))
		bad = "freq_hz must be a positive finite number";
	else if (c->act_sram_bytes == 0)
		bad = "act_sram_bytes must be > 0";
	else if (c->weight_sram_bytes == 0)
		bad = "weight_sram_bytes must be > 0";
	else if (c->mem_channels == 0)
		bad = "mem_channels must be > 0";
	else if (!(c->mem_bw_bytes_s > 0) || !isfinite(c->mem_bw_bytes_s))
		bad = "mem_bw_bytes_s must be a positive finite number";
	else if (c->elem_bytes == 0)
		bad = "elem_bytes must be > 0";
	else if (c->vector_lanes == 0)
		bad = "vector_lanes must be > 0";
	else if (npu_dataflow_name(c->dataflow) == NULL)
		bad = "dataflow must be ws, os or is";
	if (bad) {
		snprintf(err, errlen, "npu config: %s", bad);
		return -1;
	}
	return 0;
}

const char *npu_dataflow_name(enum hw_dataflow df)
{
	switch (df) {
	case HW_DF_WS: return "ws";
	case HW_DF_OS: return "os";
	case HW_DF_IS: return "is";
	}
	return NULL;
}

int npu_dataflow_parse(const char *s, enum hw_dataflow *out, char *err, size_t errlen)
{
	static const enum hw_dataflow all[] = { HW_DF_WS, HW_DF_OS, HW_DF_IS };

	for (size_t i = 0; s && i < sizeof all / sizeof all[0]; i++) {
		if (strcmp(s, npu_dataflow_name(all[i])) == 0) {
			*out = all[i];
			return 0;
		}
	}
	snprintf(err, errlen, "unknown dataflow '%s' (known: ws, os, is)", s ? s : "");
	return -1;
}

/* a * b into *out; 0 on success, -1 when it does not fit in 64 bits. */
static int npu_mul(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_mul_overflow(a, b, out) ? -1 : 0;
}

static int npu_add(uint64_t a, uint64_t b, uint64_t *out)
{
	return __builtin_add_overflow(a, b, out) ? -1 : 0;
}

static uint64_t npu_ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

static int npu_compute_cycles(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n,
                              enum hw_dataflow df, uint64_t *out)
{
	uint64_t sr, sc, t, folds, per_fold;

	switch (df) {
	case HW_DF_WS: sr = k; sc = n; t = m; break;
	case HW_DF_OS: sr = m; sc = n; t = k; break;
	case HW_DF_IS: sr = k; sc = m; t = n; break;
	default: return -1;
	}
	if (npu_mul(npu_ceil_div(sr, c->rows), npu_ceil_div(sc, c->cols), &folds))
		return -1;
	/* 2R + C - 2 >= 1 because R, C >= 1 */
	if (npu_add(2ull * c->rows + c->cols - 2, t, &per_fold))
		return -1;
	return npu_mul(folds, per_fold, out);
}

/* Bytes that cross DRAM <-> SRAM for one GEMM (see the file comment). */
static int npu_dram_bytes(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n,
                          int weight_operand, uint64_t *out)
{
	uint64_t e = c->elem_bytes;
	uint64_t a_bytes, b_bytes, o_bytes, act_bytes, row_bytes, total = 0;

	if (npu_mul(m, k, &a_bytes) || npu_mul(a_bytes, e, &a_bytes) ||
	    npu_mul(k, n, &b_bytes) || npu_mul(b_bytes, e, &b_bytes) ||
	    npu_mul(m, n, &o_bytes) || npu_mul(o_bytes, e, &o_bytes) ||
	    npu_add(a_bytes, o_bytes, &act_bytes))
		return -1;

	if (weight_operand) {
		uint64_t tiles = 1;

		if (b_bytes > c->weight_sram_bytes) {
			uint64_t tile_rows;

			if (npu_add(k, n, &row_bytes) || npu_mul(row_bytes, e, &row_bytes))
				return -1;
			tile_rows = c->act_sram_bytes / row_bytes;
			if (tile_rows == 0)
				tile_rows = 1;   /* not even one row fits: stream row by row */
			tiles = npu_ceil_div(m, tile_rows);
		}
		if (npu_mul(b_bytes, tiles, &total))
			return -1;
	} else {
		/* the K x N operand is another activation */
		if (npu_add(act_bytes, b_bytes, &act_bytes))
			return -1;
	}
	if (act_bytes > c->act_sram_bytes && npu_add(total, act_bytes, &total))
		return -1;
	*out = total;
	return 0;
}

int npu_gemm(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n, int weight_operand,
             enum hw_dataflow df, struct hw_gemm_cost *out, char *err, size_t errlen)
{
	uint64_t compute, bytes, memory = 0;

	memset(out, 0, sizeof *out);
	if (npu_config_check(c, err, errlen))
		return -1;
	if (npu_dataflow_name(df) == NULL) {
		snprintf(err, errlen, "npu: unknown dataflow %d", (int)df);
		return -1;
	}
	if (m == 0 || k == 0 || n == 0) {
		snprintf(err, errlen, "npu: GEMM %llux%llux%llu has a zero dimension",
		         (unsigned long long)m, (unsigned long long)k, (unsigned long long)n);
		return -1;
	}
	if (npu_compute_cycles(c, m, k, n, df, &compute) ||
	    npu_dram_bytes(c, m, k, n, weight_operand, &bytes))
		goto too_large;
	if (bytes > 0) {
		/* bytes * freq / bw rather than bytes / (bw / freq): the product is
		 * exact for realistic sizes, so whole-cycle results stay whole. */
		double transfer = ceil((double)bytes * c->freq_hz / c->mem_bw_bytes_s);

		if (!(transfer < 1.8e19))
			goto too_large;
		if (npu_add((uint64_t)transfer, c->mem_latency_cycles, &memory))
			goto too_large;
	}

	out->compute_cycles = compute;
	out->memory_cycles = memory;
	out->bound = memory > compute ? HW_MEMORY_BOUND : HW_COMPUTE_BOUND;
	out->cycles = out->bound == HW_MEMORY_BOUND ? memory : compute;
	out->seconds = (double)out->cycles / c->freq_hz;
	out->utilization = (double)m * (double)k * (double)n /
	                   ((double)c->rows * (double)c->cols * (double)out->cycles);
	return 0;

too_large:
	memset(out, 0, sizeof *out);
	snprintf(err, errlen, "npu: GEMM %llux%llux%llu is too large to count in 64-bit cycles",
	         (unsigned long long)m, (unsigned long long)k, (unsigned long long)n);
	return -1;
}

/* How batch maps onto a node's GEMMs:
 *  - a weight GEMM runs once per repetition (`count`, e.g. one per head, each
 *    with its own weights) with M = batch * m_per_sample: the batch shares the
 *    weights, which is the whole point of batching.
 *  - an activation x activation GEMM (weight_shared, attention scores and
 *    context) has a K x N operand that belongs to one request (its keys or
 *    values), so requests cannot share it: the node runs batch * count
 *    separate GEMMs with M = m_per_sample.
 *  - element-wise work runs on the vector unit after the array produced its
 *    input, so it adds ceil(batch * ops / vector_lanes) cycles; it counts as
 *    compute. */
int npu_node_cost(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                  struct hw_node_cost *out, char *err, size_t errlen)
{
	double compute_cycles = 0, memory_cycles = 0, total_cycles = 0;
	double membound_cycles = 0, other_cycles = 0, ew_cycles;
	uint64_t ew_ops;

	memset(out, 0, sizeof *out);
	if (npu_config_check(c, err, errlen))
		return -1;
	if (batch == 0) {
		snprintf(err, errlen, "npu: node %s: batch size must be > 0", node->name);
		return -1;
	}
	if (node->ngemms > MDL_MAX_GEMMS) {
		snprintf(err, errlen, "npu: node %s lists %u GEMMs (at most %d)", node->name,
		         node->ngemms, MDL_MAX_GEMMS);
		return -1;
	}
	for (uint32_t i = 0; i < node->ngemms; i++) {
		const struct mdl_gemm *g = &node->gemms[i];
		struct hw_gemm_cost gc;
		uint64_t m = g->m_per_sample;
		double reps = g->count;

		if (g->weight_shared)
			reps *= batch;
		else if (npu_mul(m, batch, &m)) {
			snprintf(err, errlen, "npu: node %s: GEMM %u is too large at batch %u",
			         node->name, i, batch);
			return -1;
		}
		if (npu_gemm(c, m, g->k, g->n, !g->weight_shared, c->dataflow, &gc, err, errlen)) {
			memset(out, 0, sizeof *out);
			return -1;
		}
		compute_cycles += reps * (double)gc.compute_cycles;
		memory_cycles += reps * (double)gc.memory_cycles;
		total_cycles += reps * (double)gc.cycles;
		if (gc.bound == HW_MEMORY_BOUND)
			membound_cycles += reps * (double)gc.cycles;
		else
			other_cycles += reps * (double)gc.cycles;
	}
	if (npu_mul(node->elementwise_per_sample, batch, &ew_ops)) {
		snprintf(err, errlen, "npu: node %s: element-wise work too large at batch %u",
		         node->name, batch);
		return -1;
	}
	ew_cycles = (double)npu_ceil_div(ew_ops, c->vector_lanes);
	compute_cycles += ew_cycles;
	total_cycles += ew_cycles;
	other_cycles += ew_cycles;

	out->seconds = total_cycles / c->freq_hz;
	out->compute_seconds = compute_cycles / c->freq_hz;
	out->memory_seconds = memory_cycles / c->freq_hz;
	out->bound = membound_cycles > other_cycles ? HW_MEMORY_BOUND : HW_COMPUTE_BOUND;
	return 0;
}

/* ---- the registry entry ---- */

struct npu_hw {
	struct hw_model base;       /* first: the hw_model the caller sees */
	struct npu_config cfg;
};

static int npu_open(const char *arg, const struct mdl_model *m, struct hw_model **out,
                    char *err, size_t errlen)
{
	struct npu_hw *hw;

	*out = NULL;
	if (!arg || strcmp(arg, "npu") != 0) {
		snprintf(err, errlen, "npu: unknown configuration '%s' (known: npu)", arg ? arg : "");
		return -1;
	}
	hw = calloc(1, sizeof *hw);
	if (!hw) {
		snprintf(err, errlen, "npu: out of memory");
		return -1;
	}
	hw->base.ops = &npu_hw_ops;
	hw->base.model = m;
	snprintf(hw->base.label, sizeof hw->base.label, "npu");
	npu_config_default(&hw->cfg);
	*out = &hw->base;
	return 0;
}

static void npu_close(struct hw_model *hw)
{
	free(hw);
}

static int npu_hw_node_cost(const struct hw_model *hw, uint32_t node_type, uint32_t batch,
                            struct hw_node_cost *out, char *err, size_t errlen)
{
	const struct npu_hw *npu = (const struct npu_hw *)hw;

	memset(out, 0, sizeof *out);
	if (!hw->model) {
		snprintf(err, errlen, "npu: no model loaded");
		return -1;
	}
	if (node_type >= hw->model->nnodes) {
		snprintf(err, errlen, "npu: node type %u out of range (model %s has %u)",
		         node_type, hw->model->name, hw->model->nnodes);
		return -1;
	}
	return npu_node_cost(&npu->cfg, &hw->model->nodes[node_type], batch, out, err, errlen);
}

static int npu_hw_gemm_cost(const struct hw_model *hw, uint64_t m, uint64_t k, uint64_t n,
                            enum hw_dataflow df, int weight_operand, struct hw_gemm_cost *out,
                            char *err, size_t errlen)
{
	const struct npu_hw *npu = (const struct npu_hw *)hw;

	return npu_gemm(&npu->cfg, m, k, n, weight_operand, df, out, err, errlen);
}

const struct hw_ops npu_hw_ops = {
	.name = "npu",
	.help = "systolic-array NPU of LazyBatching Table I (128x128 PEs, 700 MHz, 360 GB/s)",
	.open = npu_open,
	.close = npu_close,
	.node_cost = npu_hw_node_cost,
	.gemm_cost = npu_hw_gemm_cost,
	.max_batch = NULL,
};
