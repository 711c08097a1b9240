/* hwmodels/npu_systolic.c: analytical timing of the TPU-like systolic-array
 * NPU that LazyBatching simulates (Sec. V, Table I).
 *
 * COMPUTE. A dataflow maps the GEMM (M x K)(K x N) onto a spatial Sr x Sc
 * grid and a temporal dimension T, as in SCALE-Sim (Samajdar et al., arXiv
 * 1811.02883, and the v2 paper, ISPASS 2020):
 *     WS: Sr = K, Sc = N, T = M     OS: Sr = M, Sc = N, T = K
 *     IS: Sr = K, Sc = M, T = N
 * On an R x C array the grid is cut into F = ceil(Sr/R) * ceil(Sc/C) folds.
 * A fold needs W cycles to move its stationary operand into the PEs, T
 * cycles to stream the moving operand, and R + C - 2 cycles for the skewed
 * wavefront to fill and drain the array. W depends on the dataflow:
 *  - WS: the fold's R x C weights over the weight path,
 *    W = ceil(R * C * elem_bytes / weight_load_bytes_per_cycle). The default
 *    path is as wide as DRAM (the TPU's weight prefetch, US 9805304 B2);
 *    SCALE-Sim shifts one row a cycle (C * elem_bytes, W = R).
 *  - IS: the inputs, one row a cycle from the activation SRAM: W = R.
 *  - OS: nothing is loaded: a fold's results drain while the next fold
 *    fills, as SCALE-Sim counts it (R + C + T - 2 a fold): W = 0.
 *  - Serialized (weight_double_buffer = 0), SCALE-Sim's count: the folds run
 *    back to back, each W + R + C + T - 2 cycles:   F * (W + R + C + T - 2).
 *  - Double-buffered (weight_double_buffer = 1, the default): each PE holds a
 *    second register for the stationary operand, so the next fold's weights
 *    shift in while the current fold streams (the TPU does this to hide the
 *    cycles a weight tile takes to shift in; Jouppi et al., ISCA 2017), and
 *    the switch travels with the data wavefront, so the array never drains
 *    between folds. Fold f + 1 starts streaming once fold f has streamed its
 *    T rows and fold f + 1's W cycles of loading are done; loading f + 1
 *    starts when fold f starts. In steady state a fold therefore costs
 *    max(W, T); the first load (W) and the last fill and drain (R + C - 2)
 *    are paid once per GEMM:
 *        W + R + C + T - 2 + (F - 1) * max(W, T).
 *    One fold costs the same either way. In OS the same register pair lets
 *    fold f's results drain (R cycles) while fold f + 1 accumulates, so a
 *    later fold costs max(R, T).
 *  - The runs of one node term (its count: heads, directions, channel
 *    groups; and one per request for attention) are independent GEMMs of
 *    one shape, back to back. Double-buffered, the next run's stationary
 *    operand shifts in like a next fold's, so their folds chain: F becomes
 *    runs * F in the formula. Serialized, each run costs its own F folds.
 *    The steps of a multi-step term (below) depend on each other, so each
 *    later step drains the array and pays its whole count again.
 * Partial folds cost the same as full ones, as in SCALE-Sim, which pads a
 * partial fold with idle PEs: operands still enter at the array's edges and
 * partial sums still travel to its bottom edge, so unused rows or columns
 * save no time.
 *
 * MEMORY is a fixed-latency, fixed-bandwidth DRAM, as the paper models it:
 *  - bytes per cycle = bandwidth / clock (514.3 for Table I). The channels
 *    are interleaved, so a transfer uses them all: they enter only through
 *    the aggregate bandwidth they provide.
 *  - SRAM tiling. A weight operand (K x N) that fits in the weight SRAM is
 *    resident: fetched once per GEMM, whatever the batch (M), and once for all
 *    the steps of a multi-step task. One that does not fit is streamed through
 *    once per tile of M rows, since every tile must meet every weight.
 *    Activations (the M x K input and M x N output; for activation x
 *    activation GEMMs the K x N operand too) stay on chip between layers, as
 *    in the TPU's unified buffer, when they fit in the activation SRAM;
 *    otherwise each crosses DRAM once per step and M is cut into tiles that
 *    are double-buffered, so a tile may use half of the activation SRAM: a
 *    tile row needs its K inputs and N outputs, tile rows =
 *    floor(act_sram / (2 (K + N) elem_bytes)), at least 1.
 *  - Double buffering between DRAM and SRAM: the transfers are consumed fold
 *    by fold (each fold needs its own block of the stationary operand), so a
 *    step is a pipeline of F units, each needing d = ceil(D / F) transfer
 *    cycles and c = ceil(P / F) compute cycles, where D is the step's
 *    transfer cycles and P its compute cycles. While unit i computes, unit
 *    i + 1 is fetched; the first fetch cannot overlap anything, nor can the
 *    last unit's compute. With the access latency L paid once per step
 *    (later requests are issued early enough to hide it):
 *        step cycles = L + max(P + d, D + c)
 *    (= L + d + (F - 1) max(c, d) + c); a step that moves no bytes takes P.
 *    The step is memory-bound when D + c > P + d. Spreading D evenly over the
 *    folds is the approximation: a fold's real share depends on which
 *    operand spills.
 *  - The runs of one node term, independent and back to back, form one
 *    pipeline of runs * F units: the latency and the first fetch are
 *    exposed once for all of them, not once per run.
 *  - Steps of one task (an RNN cell run for several timesteps, sSTEPS in a
 *    model file) depend on each other, so each later step is a pipeline of
 *    its own; resident weights are fetched by the first step only.
 * Reported memory cycles are all transfer cycles plus L per step that moves
 * bytes; compute cycles are the array's. The total is at least the larger of
 * the two and at most their sum.
 */
#include "npu_systolic.h"
#include "../util/errkind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Table I gives no operand width. We take int8 (1 byte), the inference
 * format of TPU v1, which the paper's NPU is modelled after (Sec. V). The
 * choice matters only for memory-bound GEMMs (small-batch RNN cells and fully
 * connected layers); at batch 1 every ResNet-50 GEMM is compute-bound under
 * both int8 and bf16. */
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
	/* The paper's NPU is modelled after the TPU (Sec. V), which double-buffers
	 * weights in the matrix unit. */
	c->weight_double_buffer = 1;
	/* Weights reach the PEs at the memory's speed: the TPU prefetches weights
	 * into the matrix unit through a weight FIFO fed straight from DRAM
	 * (Ross, US 9805304 B2, "Prefetching weights for use in a neural network
	 * processor", the LazyBatching paper's ref. [68]; Jouppi et al. ISCA 2017
	 * Sec. 2), so the array's weight input is as wide as what feeds it. */
	c->weight_load_bytes_per_cycle = 0;
	/* Table I gives no DRAM capacity: not modelled unless a file sets it */
	c->mem_capacity_bytes = 0;
	/* The TPU overlaps its Activate stage (the vector unit) with
	 * MatrixMultiply: its four-stage CISC pipeline exists to keep the matrix
	 * unit busy while the other instructions run (Jouppi et al. ISCA 2017
	 * Sec. 2). */
	c->vector_overlap = 1;
}

double npu_mem_bytes_per_cycle(const struct npu_config *c)
{
	return c->mem_bw_bytes_s / c->freq_hz;
}

double npu_weight_load_bytes(const struct npu_config *c)
{
	return c->weight_load_bytes_per_cycle > 0 ? c->weight_load_bytes_per_cycle : npu_mem_bytes_per_cycle(c);
}

int npu_weight_path_fits(const struct npu_config *c)
{
	/* the tolerance lets a file that writes out the memory's width pass */
	return c->weight_load_bytes_per_cycle <= npu_mem_bytes_per_cycle(c) * (1 + 1e-12);
}

uint64_t npu_weight_load_cycles(const struct npu_config *c)
{
	double fold_bytes = (double)c->rows * (double)c->cols * (double)c->elem_bytes;
	/* the ratio of two exact values: a whole number of cycles stays whole */
	double cycles = ceil(fold_bytes / npu_weight_load_bytes(c) - 1e-9);

	return cycles < 1 ? 1 : (uint64_t)cycles;
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
	else if (c->weight_double_buffer > 1)
		bad = "weight_double_buffer must be 0 or 1";
	else if (!(c->weight_load_bytes_per_cycle >= 0) || !isfinite(c->weight_load_bytes_per_cycle))
		bad = "weight_load_bytes_per_cycle must be a positive finite number (0: as wide as DRAM)";
	else if (c->vector_overlap > 1)
		bad = "vector_overlap must be 0 or 1";
	if (bad) {
		snprintf(err, errlen, "npu config: %s", bad);
		return -1;
	}
	if (!npu_weight_path_fits(c)) {
		snprintf(err, errlen, "npu config: weight_load_bytes_per_cycle %g is wider than the memory "
		         "(mem_bw / freq = %g bytes per cycle)", c->weight_load_bytes_per_cycle,
		         npu_mem_bytes_per_cycle(c));
		return -1;
	}
	/* Streamed weights move fold by fold through two SRAM buffers. */
	uint64_t two_folds = 2ull * c->rows * c->cols * c->elem_bytes;
	if (c->weight_sram_bytes < two_folds) {
		snprintf(err, errlen, "npu config: weight_sram_bytes %llu cannot double-buffer one fold of "
		         "weights (needs 2 * rows * cols * elem_bytes = %llu)",
		         (unsigned long long)c->weight_sram_bytes, (unsigned long long)two_folds);
		return -1;
	}
	return 0;
}

void npu_config_describe(const struct npu_config *c, char *buf, size_t len)
{
	const char *df = npu_dataflow_name(c->dataflow);

	snprintf(buf, len, "%ux%u PEs at %g MHz, %s, weight double buffering %s, weights in at %.4g B/cycle; "
	         "SRAM %llu KiB activations + %llu KiB weights; DRAM %u channels, %g GB/s, %u cycles latency; "
	         "%u-byte elements; %u vector lanes%s",
	         c->rows, c->cols, c->freq_hz / 1e6, df ? df : "?", c->weight_double_buffer ? "on" : "off",
	         npu_weight_load_bytes(c),
	         (unsigned long long)(c->act_sram_bytes >> 10), (unsigned long long)(c->weight_sram_bytes >> 10),
	         c->mem_channels, c->mem_bw_bytes_s / 1e9, c->mem_latency_cycles, c->elem_bytes,
	         c->vector_lanes, c->vector_overlap ? " overlapping the array" : " after the array");
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

static uint64_t npu_max(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Folds and streamed rows of one step (the file comment's F and T). */
static int npu_folds(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n,
                     enum hw_dataflow df, uint64_t *folds, uint64_t *t)
{
	uint64_t sr, sc;

	switch (df) {
	case HW_DF_WS: sr = k; sc = n; *t = m; break;
	case HW_DF_OS: sr = m; sc = n; *t = k; break;
	case HW_DF_IS: sr = k; sc = m; *t = n; break;
	default: return -1;
	}
	return npu_mul(npu_ceil_div(sr, c->rows), npu_ceil_div(sc, c->cols), folds);
}

/* Array cycles of one step: F folds streaming T rows each (file comment).
 * load: cycles to put one fold's stationary operand into the PEs (WS: over
 * the weight path; IS: one row of inputs a cycle; OS: none, its results
 * drain while the next fold fills). */
static int npu_step_compute(const struct npu_config *c, enum hw_dataflow df, uint64_t folds, uint64_t t,
                            uint64_t *out)
{
	uint64_t load = df == HW_DF_WS ? npu_weight_load_cycles(c) : df == HW_DF_IS ? c->rows : 0;
	uint64_t switch_cycles = df == HW_DF_OS ? c->rows : load;  /* between folds, double-buffered */
	/* + fill and drain R + C - 2; >= 1 because R, C >= 1 */
	uint64_t one, rest;

	if (npu_add(load + c->rows + c->cols - 2, t, &one))
		return -1;
	if (!c->weight_double_buffer)
		return npu_mul(folds, one, out);
	if (npu_mul(folds - 1, npu_max(switch_cycles, t), &rest))
		return -1;
	return npu_add(one, rest, out);
}

/* DRAM bytes of the first step and of each later step (file comment). */
static int npu_step_bytes(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n,
                          int weight_operand, struct npu_gemm_detail *d,
                          uint64_t *first, uint64_t *later)
{
	uint64_t e = c->elem_bytes;
	uint64_t a_bytes, b_bytes, o_bytes, act_bytes, moved_act = 0, w_first = 0, w_later = 0;

	if (npu_mul(m, k, &a_bytes) || npu_mul(a_bytes, e, &a_bytes) ||
	    npu_mul(k, n, &b_bytes) || npu_mul(b_bytes, e, &b_bytes) ||
	    npu_mul(m, n, &o_bytes) || npu_mul(o_bytes, e, &o_bytes) ||
	    npu_add(a_bytes, o_bytes, &act_bytes))
		return -1;
	/* the K x N operand of an attention GEMM is another activation */
	if (!weight_operand && npu_add(act_bytes, b_bytes, &act_bytes))
		return -1;
	d->activations_spill = act_bytes > c->act_sram_bytes;
	if (d->activations_spill)
		moved_act = act_bytes;

	d->tiles = 1;
	d->weights_resident = 0;
	if (weight_operand) {
		if (b_bytes <= c->weight_sram_bytes) {
			d->weights_resident = 1;
			w_first = b_bytes;
		} else {
			if (d->activations_spill) {
				uint64_t row_bytes, tile_rows;

				if (npu_add(k, n, &row_bytes) || npu_mul(row_bytes, 2 * e, &row_bytes))
					return -1;
				tile_rows = c->act_sram_bytes / row_bytes;
				if (tile_rows == 0)
					tile_rows = 1;   /* not even one row fits: stream row by row */
				d->tiles = npu_ceil_div(m, tile_rows);
			}
			if (npu_mul(b_bytes, d->tiles, &w_first))
				return -1;
			w_later = w_first;
		}
	}
	if (npu_add(w_first, moved_act, first) || npu_add(w_later, moved_act, later))
		return -1;
	return 0;
}

/* One step's pipeline (file comment): cycles, memory cycles, and the two
 * paths (compute + first fetch, transfers + last compute) for the bound. */
struct npu_step {
	uint64_t cycles, memory, compute_path, memory_path;
};

static int npu_step_time(const struct npu_config *c, uint64_t compute, uint64_t folds, uint64_t bytes,
                         struct npu_step *s)
{
	memset(s, 0, sizeof *s);
	if (bytes == 0) {
		s->cycles = s->compute_path = compute;
		return 0;
	}
	/* bytes * freq / bw rather than bytes / (bw / freq): the product is exact
	 * for realistic sizes, so whole-cycle results stay whole. */
	double xfer = ceil((double)bytes * c->freq_hz / c->mem_bw_bytes_s);
	if (!(xfer < 1.8e19))
		return -1;
	uint64_t dcyc = (uint64_t)xfer;
	uint64_t d = npu_ceil_div(dcyc, folds), cu = npu_ceil_div(compute, folds);

	if (npu_add(c->mem_latency_cycles, compute, &s->compute_path) ||
	    npu_add(s->compute_path, d, &s->compute_path) ||
	    npu_add(c->mem_latency_cycles, dcyc, &s->memory) ||
	    npu_add(s->memory, cu, &s->memory_path))
		return -1;
	s->cycles = npu_max(s->compute_path, s->memory_path);
	return 0;
}

/* total = first + times * later, with overflow checks */
static int npu_sum_times(uint64_t first, uint64_t later, uint64_t times, uint64_t *out)
{
	uint64_t rest;

	if (npu_mul(later, times, &rest))
		return -1;
	return npu_add(first, rest, out);
}

int npu_gemm_runs(const struct npu_config *c, const struct npu_gemm_req *r, struct hw_gemm_cost *out,
                  struct npu_gemm_detail *detail, char *err, size_t errlen)
{
	struct npu_gemm_detail d;
	struct npu_step first, later;
	uint64_t compute, bytes_first, bytes_later, all_compute, all_folds, all_first, more;
	uint64_t cyc, mem, cpath, mpath, compute_total;

	memset(out, 0, sizeof *out);
	memset(&d, 0, sizeof d);
	if (detail)
		memset(detail, 0, sizeof *detail);
	if (npu_config_check(c, err, errlen))
		return -1;
	if (npu_dataflow_name(r->df) == NULL) {
		snprintf(err, errlen, "npu: unknown dataflow %d", (int)r->df);
		return -1;
	}
	if (r->m == 0 || r->k == 0 || r->n == 0 || r->steps == 0 || r->runs == 0) {
		snprintf(err, errlen, "npu: GEMM %llux%llux%llu (%u steps, %llu runs) has a zero dimension",
		         (unsigned long long)r->m, (unsigned long long)r->k, (unsigned long long)r->n,
		         r->steps, (unsigned long long)r->runs);
		return -1;
	}
	/* The first steps of all runs chain their folds and form one pipeline of
	 * runs * F units; each later step of each run stands alone (file
	 * comment). */
	if (npu_folds(c, r->m, r->k, r->n, r->df, &d.folds, &d.stream_cycles) ||
	    npu_step_compute(c, r->df, d.folds, d.stream_cycles, &compute) ||
	    npu_step_bytes(c, r->m, r->k, r->n, r->weight_operand, &d, &bytes_first, &bytes_later) ||
	    npu_mul(d.folds, r->runs, &all_folds) ||
	    npu_step_compute(c, r->df, all_folds, d.stream_cycles, &all_compute) ||
	    npu_mul(bytes_first, r->runs, &all_first) ||
	    npu_step_time(c, all_compute, all_folds, all_first, &first) ||
	    npu_step_time(c, compute, d.folds, bytes_later, &later) ||
	    npu_mul(r->runs, r->steps - 1, &more) ||
	    npu_sum_times(first.cycles, later.cycles, more, &cyc) ||
	    npu_sum_times(first.memory, later.memory, more, &mem) ||
	    npu_sum_times(first.compute_path, later.compute_path, more, &cpath) ||
	    npu_sum_times(first.memory_path, later.memory_path, more, &mpath) ||
	    npu_sum_times(all_first, bytes_later, more, &d.dram_bytes) ||
	    npu_sum_times(all_compute, compute, more, &compute_total))
		goto too_large;

	out->compute_cycles = compute_total;
	out->memory_cycles = mem;
	out->cycles = cyc;
	out->bound = mpath > cpath ? HW_MEMORY_BOUND : HW_COMPUTE_BOUND;
	out->seconds = (double)cyc / c->freq_hz;
	out->utilization = (double)r->m * (double)r->k * (double)r->n * (double)r->steps * (double)r->runs /
	                   ((double)c->rows * (double)c->cols * (double)cyc);
	if (detail)
		*detail = d;
	return 0;

too_large:
	memset(out, 0, sizeof *out);
	snprintf(err, errlen, "npu: GEMM %llux%llux%llu is too large to count in 64-bit cycles",
	         (unsigned long long)r->m, (unsigned long long)r->k, (unsigned long long)r->n);
	return -1;
}

int npu_gemm(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n, int weight_operand,
             enum hw_dataflow df, struct hw_gemm_cost *out, char *err, size_t errlen)
{
	const struct npu_gemm_req r = {
		.m = m, .k = k, .n = n, .steps = 1, .runs = 1, .weight_operand = weight_operand, .df = df,
	};

	return npu_gemm_runs(c, &r, out, NULL, err, errlen);
}

/* How batch maps onto a node's GEMMs:
 *  - a weight GEMM runs once per repetition (`count`, e.g. one per head, each
 *    with its own weights) with M = batch * m_per_sample: the batch shares the
 *    weights, which is the whole point of batching.
 *  - an activation x activation GEMM (weight_shared, attention scores and
 *    context) has a K x N operand that belongs to one request (its keys or
 *    values), so requests cannot share it: the node runs batch * count
 *    separate GEMMs with M = m_per_sample.
 *  - the runs of one term go back to back, so one run's fetches overlap the
 *    one before (npu_gemm_runs); a term with steps runs each of its GEMMs
 *    that many times in sequence.
 *  - element-wise work runs on the vector unit after the array produced its
 *    input: ceil(batch * ops / vector_lanes) cycles, counted as compute.
 *    With vector_overlap it takes each result as the array delivers it (the
 *    TPU overlaps Activate with MatrixMultiply) and the node lasts
 *    max(GEMMs, element-wise); without, the two add up. */
int npu_node_terms(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                   struct npu_term_cost *out, char *err, size_t errlen)
{
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
		struct npu_gemm_req *r = &out[i].req;

		memset(&out[i], 0, sizeof out[i]);
		r->m = g->m_per_sample;
		r->k = g->k;
		r->n = g->n;
		r->runs = g->count;
		r->steps = mdl_gemm_steps(g);
		r->weight_operand = !g->weight_shared;
		r->df = c->dataflow;
		if ((g->weight_shared ? npu_mul(r->runs, batch, &r->runs) : npu_mul(r->m, batch, &r->m))) {
			snprintf(err, errlen, "npu: node %s: GEMM %u is too large at batch %u",
			         node->name, i, batch);
			return -1;
		}
		if (npu_gemm_runs(c, r, &out[i].cost, &out[i].detail, err, errlen))
			return -1;
	}
	return 0;
}

int npu_node_cost(const struct npu_config *c, const struct mdl_node *node, uint32_t batch,
                  struct hw_node_cost *out, char *err, size_t errlen)
{
	struct npu_term_cost terms[MDL_MAX_GEMMS];
	double compute_cycles = 0, memory_cycles = 0, total_cycles = 0;
	double membound_cycles = 0, other_cycles = 0, ew_cycles;
	uint64_t ew_ops;

	memset(out, 0, sizeof *out);
	if (npu_node_terms(c, node, batch, terms, err, errlen))
		return -1;
	for (uint32_t i = 0; i < node->ngemms; i++) {
		const struct hw_gemm_cost *g = &terms[i].cost;

		compute_cycles += (double)g->compute_cycles;
		memory_cycles += (double)g->memory_cycles;
		total_cycles += (double)g->cycles;
		if (g->bound == HW_MEMORY_BOUND)
			membound_cycles += (double)g->cycles;
		else
			other_cycles += (double)g->cycles;
	}
	if (npu_mul(node->elementwise_per_sample, batch, &ew_ops)) {
		snprintf(err, errlen, "npu: node %s: element-wise work too large at batch %u",
		         node->name, batch);
		return -1;
	}
	ew_cycles = (double)npu_ceil_div(ew_ops, c->vector_lanes);
	compute_cycles += ew_cycles;
	other_cycles += ew_cycles;
	/* overlapped, the vector unit takes each result as the array (or DRAM)
	 * delivers it, so the node lasts as long as the slower of the two */
	if (c->vector_overlap) {
		out->main_seconds = total_cycles / c->freq_hz;
		out->side_seconds = ew_cycles / c->freq_hz;
	}
	total_cycles = c->vector_overlap ? fmax(total_cycles, ew_cycles) : total_cycles + ew_cycles;

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

int npu_hw_create(const struct npu_config *c, const char *label, const struct mdl_model *m,
                  struct hw_model **out, char *err, size_t errlen)
{
	struct npu_hw *hw;

	*out = NULL;
	if (npu_config_check(c, err, errlen))
		return -1;
	hw = calloc(1, sizeof *hw);
	if (!hw) {
		err_memory(err, errlen, "npu: out of memory");
		return -1;
	}
	hw->base.ops = &npu_hw_ops;
	hw->base.model = m;
	snprintf(hw->base.label, sizeof hw->base.label, "%s", label);
	hw->cfg = *c;
	*out = &hw->base;
	return 0;
}

const struct npu_config *npu_hw_config(const struct hw_model *hw)
{
	return hw && hw->ops == &npu_hw_ops ? &((const struct npu_hw *)hw)->cfg : NULL;
}

static int npu_open(const char *arg, const struct mdl_model *m, struct hw_model **out,
                    char *err, size_t errlen)
{
	struct npu_config cfg;

	*out = NULL;
	if (!arg || strcmp(arg, "npu") != 0) {
		snprintf(err, errlen, "npu: unknown configuration '%s' (known: npu)", arg ? arg : "");
		return -1;
	}
	npu_config_default(&cfg);
	return npu_hw_create(&cfg, "npu", m, out, err, errlen);
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

/* Any node shape (hwmodel.h shape_cost), as the model's own nodes are priced. */
static int npu_hw_shape_cost(const struct hw_model *hw, const struct mdl_node *node, uint32_t batch,
                             struct hw_node_cost *out, char *err, size_t errlen)
{
	return npu_node_cost(&((const struct npu_hw *)hw)->cfg, node, batch, out, err, errlen);
}

/* A pass node's per-request terms (mdl_member_node) as a node of their own
 * at batch 1: the request's attention heads run back to back like any
 * term's runs, over its own keys and values. */
static int npu_hw_member_cost(const struct hw_model *hw, uint32_t node_type, uint32_t len,
                              struct hw_node_cost *out, char *err, size_t errlen)
{
	struct mdl_node member;

	mdl_member_node(&hw->model->nodes[node_type], len, &member);
	return npu_node_cost(&((const struct npu_hw *)hw)->cfg, &member, 1, out, err, errlen);
}

static int npu_hw_gemm_cost(const struct hw_model *hw, uint64_t m, uint64_t k, uint64_t n,
                            enum hw_dataflow df, int weight_operand, struct hw_gemm_cost *out,
                            char *err, size_t errlen)
{
	const struct npu_hw *npu = (const struct npu_hw *)hw;

	return npu_gemm(&npu->cfg, m, k, n, weight_operand, df, out, err, errlen);
}

static void npu_hw_device(const struct hw_model *hw, struct hw_device *out)
{
	const struct npu_config *c = &((const struct npu_hw *)hw)->cfg;
	*out = (struct hw_device){ .mem_bytes = c->mem_capacity_bytes, .mem_bw_bytes_s = c->mem_bw_bytes_s,
	                           .peak_flops = 2.0 * c->rows * c->cols * c->freq_hz };   /* a MAC per PE per cycle */
}

const struct hw_ops npu_hw_ops = {
	.name = "npu",
	.help = "systolic-array NPU of LazyBatching Table I (128x128 PEs, 700 MHz, 360 GB/s)",
	.open = npu_open,
	.close = npu_close,
	.node_cost = npu_hw_node_cost,
	.member_cost = npu_hw_member_cost,
	.shape_cost = npu_hw_shape_cost,
	.gemm_cost = npu_hw_gemm_cost,
	.max_batch = NULL,
	.device = npu_hw_device,
};
