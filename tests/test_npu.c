/* tests/test_npu.c: the systolic-array NPU timing model (hwmodels/npu_systolic.c)
 * against cycle counts worked out by hand from the formulas in its file
 * comment:
 *   compute, serialized (SCALE-Sim):  F * (W + R + C + T - 2)
 *   compute, double-buffered:         W + R + C + T - 2 + (F - 1) * max(W', T)
 *   with F = ceil(Sr/R) * ceil(Sc/C) folds; W the cycles to load a fold's
 *   stationary operand (WS: R*C*elem_bytes over the weight path; IS: R;
 *   OS: 0, its results drain while the next fold fills) and W' = W (OS: R);
 *   a step that moves D transfer cycles: L + max(P + d, D + c) with
 *   d = ceil(D / F), c = ceil(P / F), P the step's compute.
 * The arithmetic is in the comments next to each expectation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwmodels/npu_config.h"
#include "hwmodels/npu_systolic.h"

/* cmocka 1.1 has no double comparison; float_equal would round to float */
#define assert_dbl_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* A 4x4 array at 1 GHz with 4 bytes/cycle of DRAM bandwidth (4e9 B/s / 1e9
 * Hz), a 10-cycle access latency L, int8, roomy SRAMs, weights
 * double-buffered in the PEs and entering them one row (4 B) a cycle:
 * W + R + C - 2 = 10, so one WS or IS fold costs 10 + T cycles and each
 * further fold max(4, T); an OS fold loads nothing first: 6 + T. The vector
 * unit runs after the array. */
static void small_config(struct npu_config *c)
{
	c->rows = 4;
	c->cols = 4;
	c->freq_hz = 1e9;
	c->act_sram_bytes = 1 << 20;
	c->weight_sram_bytes = 1 << 20;
	c->mem_channels = 1;
	c->mem_latency_cycles = 10;
	c->mem_bw_bytes_s = 4e9;
	c->elem_bytes = 1;
	c->vector_lanes = 4;
	c->dataflow = HW_DF_WS;
	c->weight_double_buffer = 1;
	c->weight_load_bytes_per_cycle = 4;
	c->vector_overlap = 0;
}

static struct hw_gemm_cost gemm(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n,
                                int weight, enum hw_dataflow df)
{
	struct hw_gemm_cost g;
	char err[256] = "";

	assert_int_equal(npu_gemm(c, m, k, n, weight, df, &g, err, sizeof err), 0);
	assert_string_equal(err, "");
	return g;
}

/* runs back-to-back products of `steps` steps each (npu_gemm_runs) */
static int gemm_runs(const struct npu_config *c, uint64_t m, uint64_t k, uint64_t n, uint32_t steps,
                     uint64_t runs, struct hw_gemm_cost *g, struct npu_gemm_detail *d)
{
	const struct npu_gemm_req r = {
		.m = m, .k = k, .n = n, .steps = steps, .runs = runs, .weight_operand = 1, .df = HW_DF_WS,
	};
	char err[256] = "";
	int rc = npu_gemm_runs(c, &r, g, d, err, sizeof err);

	if (rc)
		print_error("npu_gemm_runs: %s\n", err);
	return rc;
}

static void test_defaults_table_one(void **state)
{
	struct npu_config c;
	char err[256];

	(void)state;
	npu_config_default(&c);
	/* LazyBatching Table I */
	assert_int_equal(c.rows, 128);
	assert_int_equal(c.cols, 128);
	assert_true(c.freq_hz == 700e6);
	assert_int_equal(c.act_sram_bytes, 8u << 20);
	assert_int_equal(c.weight_sram_bytes, 4u << 20);
	assert_int_equal(c.mem_channels, 8);
	assert_int_equal(c.mem_latency_cycles, 100);
	assert_true(c.mem_bw_bytes_s == 360e9);
	assert_int_equal(c.elem_bytes, 1);
	assert_int_equal(c.vector_lanes, 128);
	assert_int_equal(c.dataflow, HW_DF_WS);
	assert_int_equal(c.weight_double_buffer, 1);
	assert_int_equal(npu_config_check(&c, err, sizeof err), 0);
}

/* M=5, K=6, N=7 on 4x4: every dataflow has a partial fold in both spatial
 * dimensions (6 = 4 + 2, 7 = 4 + 3, 5 = 4 + 1), and partial folds cost as
 * much as full ones. */
static void test_partial_folds_all_dataflows(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);

	/* WS: Sr=K=6 -> 2 folds, Sc=N=7 -> 2 folds, F = 4, T=M=5.
	 * Double-buffered: 10 + 5 + 3 * max(4, 5) = 30.
	 * Weights 6*7 = 42 B fit in weight SRAM, activations 5*(6+7) = 65 B fit
	 * in activation SRAM: only the weights move: D = ceil(42/4) = 11,
	 * memory 11 + 10 = 21. Pipeline over 4 folds: d = ceil(11/4) = 3,
	 * c = ceil(30/4) = 8: max(10 + 30 + 3, 10 + 11 + 8) = max(43, 29) = 43. */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 30);
	assert_int_equal(g.memory_cycles, 21);
	assert_int_equal(g.cycles, 43);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	assert_dbl_near(g.seconds, 43e-9, 1e-20);
	/* 5*6*7 = 210 MACs / (16 PEs * 43 cycles) */
	assert_dbl_near(g.utilization, 210.0 / (16.0 * 43.0), 1e-15);

	/* OS: Sr=M=5 -> 2, Sc=N=7 -> 2, T=K=6: 6 + 6 + 3 * 6 = 30;
	 * c = ceil(30/4) = 8: max(10 + 30 + 3, 10 + 11 + 8) = 43 */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_OS);
	assert_int_equal(g.compute_cycles, 30);
	assert_int_equal(g.cycles, 43);

	/* IS: Sr=K=6 -> 2, Sc=M=5 -> 2, T=N=7: 10 + 7 + 3 * 7 = 38;
	 * c = ceil(38/4) = 10: max(10 + 38 + 3, 10 + 11 + 10) = 51 */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_IS);
	assert_int_equal(g.compute_cycles, 38);
	assert_int_equal(g.memory_cycles, 21);  /* memory does not depend on dataflow */
	assert_int_equal(g.cycles, 51);
	assert_dbl_near(g.utilization, 210.0 / (16.0 * 51.0), 1e-15);

	/* Serialized (SCALE-Sim): every WS or IS fold pays 10 + T, an OS fold
	 * 6 + T (its drain overlaps the next fill: SCALE-Sim's R + C + T - 2).
	 * WS 4 * (10 + 5) = 60, c = 15: max(10 + 60 + 3, 10 + 11 + 15) = 73.
	 * OS 4 * (6 + 6) = 48.   IS 4 * (10 + 7) = 68. */
	c.weight_double_buffer = 0;
	g = gemm(&c, 5, 6, 7, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 60);
	assert_int_equal(g.cycles, 73);
	assert_int_equal(gemm(&c, 5, 6, 7, 1, HW_DF_OS).compute_cycles, 48);
	assert_int_equal(gemm(&c, 5, 6, 7, 1, HW_DF_IS).compute_cycles, 68);
}

/* T < R: in steady state a double-buffered fold waits for its weights. */
static void test_weight_load_bound_folds(void **state)
{
	struct npu_config c;

	(void)state;
	small_config(&c);
	/* WS M=2, K=6, N=7: F = 4, T = 2 < R = 4: 10 + 2 + 3 * max(4, 2) = 24;
	 * serialized 4 * (10 + 2) = 48 */
	assert_int_equal(gemm(&c, 2, 6, 7, 1, HW_DF_WS).compute_cycles, 24);
	/* OS M=7, K=2, N=6: Sr=7 -> 2, Sc=6 -> 2, T = 2, each later fold waits
	 * for the R = 4 cycles of the last drain: 6 + 2 + 3 * max(4, 2) = 20 */
	assert_int_equal(gemm(&c, 7, 2, 6, 1, HW_DF_OS).compute_cycles, 20);
	c.weight_double_buffer = 0;
	assert_int_equal(gemm(&c, 2, 6, 7, 1, HW_DF_WS).compute_cycles, 48);
}

static void test_single_fold(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	/* 4x4x4 fills the array exactly once in every dataflow: 10 + 4 = 14
	 * (OS, loading nothing: 6 + 4 = 10), with or without double buffering
	 * (one fold has nothing to overlap) */
	for (int db = 0; db <= 1; db++) {
		c.weight_double_buffer = (uint32_t)db;
		assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_WS).compute_cycles, 14);
		assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_OS).compute_cycles, 10);
		assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_IS).compute_cycles, 14);
		/* a 1x1x1 GEMM still pays the whole pipeline: 10 + 1 = 11 */
		assert_int_equal(gemm(&c, 1, 1, 1, 1, HW_DF_WS).compute_cycles, 11);
	}

	/* M=8, K=N=4: WS keeps one fold and streams 8 rows: 10 + 8 = 18.
	 * OS and IS put M in space: 2 folds of T = 4: serialized IS 2 * 14 = 28,
	 * OS 2 * 10 = 20; double-buffered IS 10 + 4 + 1 * max(4, 4) = 18,
	 * OS 6 + 4 + 4 = 14 */
	c.weight_double_buffer = 0;
	g = gemm(&c, 8, 4, 4, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 18);
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_OS).compute_cycles, 20);
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_IS).compute_cycles, 28);
	c.weight_double_buffer = 1;
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_OS).compute_cycles, 14);
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_IS).compute_cycles, 18);
	/* one fold, one pipeline unit: 16 B of weights, D = 4, d = 4, c = 18:
	 * max(10 + 18 + 4, 10 + 4 + 18) = 32: nothing overlaps */
	g = gemm(&c, 8, 4, 4, 1, HW_DF_WS);
	assert_int_equal(g.cycles, 32);
	/* 8*4*4 = 128 MACs / (16 * 32) */
	assert_dbl_near(g.utilization, 128.0 / 512.0, 1e-15);
}

static void test_memory_bound(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	c.mem_bw_bytes_s = 1e9;  /* 1 byte per cycle */
	c.elem_bytes = 2;
	/* M=1, K=N=64, WS: F = 16 * 16 = 256 folds, T = 1.
	 * Weights 64*64*2 = 8192 B at 1 B/cycle: D = 8192, memory 8202. */

	/* Weights enter the PEs at memory speed (the default path): a fold of
	 * 4*4*2 = 32 B takes W = 32 cycles, so the array keeps pace with DRAM:
	 * 32 + 6 + 1 + 255 * max(32, 1) = 8199 compute cycles.
	 * d = 8192 / 256 = 32, c = ceil(8199 / 256) = 33:
	 * max(10 + 8199 + 32, 10 + 8192 + 33) = max(8241, 8235) = 8241: the
	 * first fetch (d) exposed before the array starts decides it. */
	c.weight_load_bytes_per_cycle = 0;
	g = gemm(&c, 1, 64, 64, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 8199);
	assert_int_equal(g.memory_cycles, 8202);
	assert_int_equal(g.cycles, 8241);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	assert_dbl_near(g.seconds, 8241e-9, 1e-20);
	/* 4096 MACs / (16 * 8241) */
	assert_dbl_near(g.utilization, 4096.0 / (16.0 * 8241.0), 1e-15);
	/* serialized: 256 * (32 + 6 + 1) = 9984 compute, c = 39:
	 * max(10 + 9984 + 32, 10 + 8192 + 39) = 10026 */
	c.weight_double_buffer = 0;
	g = gemm(&c, 1, 64, 64, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 9984);
	assert_int_equal(g.cycles, 10026);

	/* A path of 0.5 B/cycle, half the memory's: W = 64, the array is the
	 * bottleneck: 64 + 6 + 1 + 255 * 64 = 16391, c = ceil(16391/256) = 65:
	 * max(10 + 16391 + 32, 10 + 8192 + 65) = 16433 */
	c.weight_double_buffer = 1;
	c.weight_load_bytes_per_cycle = 0.5;
	g = gemm(&c, 1, 64, 64, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 16391);
	assert_int_equal(g.cycles, 16433);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
}

/* Large M: the weight path no longer matters once T >= W; a partial fold
 * costs a full one. Table I (W = ceil(16384 / 514.29) = 32). */
static void test_weight_path_compute_bound(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	npu_config_default(&c);
	/* 1024x200x200 WS: F = 2 * 2 = 4 (both partial: 200 = 128 + 72),
	 * T = 1024: 32 + 254 + 1024 + 3 * 1024 = 4382. Weights 40000 B:
	 * D = ceil(40000 * 700 / 360000) = ceil(77.78) = 78; activations
	 * 1024 * 400 B fit. d = ceil(78/4) = 20, c = ceil(4382/4) = 1096:
	 * max(100 + 4382 + 20, 100 + 78 + 1096) = 4502 */
	g = gemm(&c, 1024, 200, 200, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 4382);
	assert_int_equal(g.memory_cycles, 178);
	assert_int_equal(g.cycles, 4502);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	/* the same with SCALE-Sim's one row a cycle (128 B): W = 128, and still
	 * 1024 per later fold: 128 + 254 + 1024 + 3 * 1024 = 4478 */
	c.weight_load_bytes_per_cycle = 128;
	assert_int_equal(gemm(&c, 1024, 200, 200, 1, HW_DF_WS).compute_cycles, 4478);
}

/* Weights that do not fit the weight SRAM are re-fetched for every batch
 * tile of M rows; activation tiles are double-buffered, so a tile may use
 * only half of the activation SRAM. */
static void test_weight_sram_overflow(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;
	struct npu_gemm_detail d;

	(void)state;
	small_config(&c);
	c.weight_sram_bytes = 64;   /* >= 2 folds of weights: 2 * 4 * 4 * 1 = 32 */
	c.act_sram_bytes = 100;
	/* M=10, K=8, N=16: weights 8*16 = 128 B > 64 B of weight SRAM.
	 * Activations 10 * (8 + 16) = 240 B > 100 B: they spill, and a
	 * double-buffered tile holds floor(100 / (2 * 24)) = 2 rows: ceil(10/2) =
	 * 5 tiles, so the weights cross 5 times: 640 B, plus the activations
	 * once, 240 B: 880 B, D = 220, memory 230.
	 * Compute WS: Sr=8 -> 2, Sc=16 -> 4, F = 8, T = 10:
	 * 10 + 10 + 7 * 10 = 90. d = ceil(220/8) = 28, c = ceil(90/8) = 12:
	 * max(10 + 90 + 28, 10 + 220 + 12) = max(128, 242) = 242. */
	assert_int_equal(gemm_runs(&c, 10, 8, 16, 1, 1, &g, &d), 0);
	assert_int_equal(d.folds, 8);
	assert_int_equal(d.stream_cycles, 10);
	assert_int_equal(d.tiles, 5);
	assert_int_equal(d.dram_bytes, 880);
	assert_int_equal(d.weights_resident, 0);
	assert_int_equal(d.activations_spill, 1);
	assert_int_equal(g.compute_cycles, 90);
	assert_int_equal(g.memory_cycles, 230);
	assert_int_equal(g.cycles, 242);
	assert_int_equal(g.bound, HW_MEMORY_BOUND);

	/* serialized: 8 * (10 + 10) = 160, c = 20:
	 * max(10 + 160 + 28, 10 + 220 + 20) = 250 */
	c.weight_double_buffer = 0;
	g = gemm(&c, 10, 8, 16, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 160);
	assert_int_equal(g.cycles, 250);

	/* The same GEMM with weights that fit (128 B): they cross once.
	 * 128 + 240 = 368 B, D = 92, d = ceil(92/8) = 12.
	 * Serialized: max(10 + 160 + 12, 10 + 92 + 20) = 182, compute-bound.
	 * Double-buffered: max(10 + 90 + 12, 10 + 92 + 12) = 114, memory-bound:
	 * hiding the weight loads moves the bound. */
	c.weight_sram_bytes = 128;
	g = gemm(&c, 10, 8, 16, 1, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 102);
	assert_int_equal(g.cycles, 182);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	c.weight_double_buffer = 1;
	g = gemm(&c, 10, 8, 16, 1, HW_DF_WS);
	assert_int_equal(g.cycles, 114);
	assert_int_equal(g.bound, HW_MEMORY_BOUND);

	/* Weights that do not fit but activations that do (act SRAM 1 KiB >=
	 * 240 B): one tile, the weights stream once: 128 B, D = 32, d = 4:
	 * max(10 + 90 + 4, 10 + 32 + 12) = 104 */
	c.weight_sram_bytes = 64;
	c.act_sram_bytes = 1024;
	assert_int_equal(gemm_runs(&c, 10, 8, 16, 1, 1, &g, &d), 0);
	assert_int_equal(d.tiles, 1);
	assert_int_equal(g.memory_cycles, 42);
	assert_int_equal(g.cycles, 104);

	/* Not even one double-buffered row fits (act SRAM 40 < 2 * 24): the
	 * weights stream once per row: 10 tiles, 1280 + 240 = 1520 B, D = 380 */
	c.act_sram_bytes = 40;
	assert_int_equal(gemm_runs(&c, 10, 8, 16, 1, 1, &g, &d), 0);
	assert_int_equal(d.tiles, 10);
	assert_int_equal(g.memory_cycles, 390);
}

/* A multi-step task (RNN timesteps): resident weights are fetched once. */
static void test_steps(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;
	struct npu_gemm_detail d;

	(void)state;
	small_config(&c);
	/* M=1, K=8, N=16, 3 steps, WS: F = 2 * 4 = 8, T = 1: one step computes
	 * 10 + 1 + 7 * 4 = 39. Step 1 fetches the 128 B of weights: D = 32,
	 * d = 4, c = ceil(39/8) = 5: max(10 + 39 + 4, 10 + 32 + 5) = 53.
	 * Steps 2 and 3 move nothing: 39 each. Total 53 + 78 = 131. */
	assert_int_equal(gemm_runs(&c, 1, 8, 16, 3, 1, &g, &d), 0);
	assert_int_equal(g.compute_cycles, 117);
	assert_int_equal(g.memory_cycles, 42);
	assert_int_equal(g.cycles, 131);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	assert_int_equal(d.dram_bytes, 128);
	assert_int_equal(d.weights_resident, 1);
	/* 3 * 128 MACs / (16 * 131) */
	assert_dbl_near(g.utilization, 384.0 / (16.0 * 131.0), 1e-15);

	/* Weights that do not fit (64 B SRAM) are fetched by every step:
	 * 3 * 53 = 159 cycles, 3 * 42 = 126 memory cycles, 384 B */
	c.weight_sram_bytes = 64;
	assert_int_equal(gemm_runs(&c, 1, 8, 16, 3, 1, &g, &d), 0);
	assert_int_equal(g.cycles, 159);
	assert_int_equal(g.memory_cycles, 126);
	assert_int_equal(d.dram_bytes, 384);

	/* one step is npu_gemm */
	c.weight_sram_bytes = 1 << 20;
	assert_int_equal(gemm_runs(&c, 1, 8, 16, 1, 1, &g, NULL), 0);
	assert_int_equal(g.cycles, gemm(&c, 1, 8, 16, 1, HW_DF_WS).cycles);
	assert_int_equal(g.cycles, 53);
}

/* Independent runs of one term share one pipeline: the latency and the
 * first fetch are exposed once. */
static void test_runs(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;
	struct npu_gemm_detail d;

	(void)state;
	small_config(&c);
	c.mem_bw_bytes_s = 1e9;
	c.elem_bytes = 2;
	c.weight_load_bytes_per_cycle = 0;  /* memory speed: W = 32 */
	/* two runs of test_memory_bound's GEMM (256 folds, 8192 B each): the
	 * 512 folds chain, 32 + 6 + 1 + 511 * 32 = 16391; 512 units, D = 16384,
	 * memory 16394; d = 32, c = ceil(16391/512) = 33:
	 * max(10 + 16391 + 32, 10 + 16384 + 33) = 16433, against 2 * 8241 =
	 * 16482 had each run exposed its own first fetch. */
	assert_int_equal(gemm_runs(&c, 1, 64, 64, 1, 2, &g, &d), 0);
	assert_int_equal(g.compute_cycles, 16391);
	assert_int_equal(g.memory_cycles, 16394);
	assert_int_equal(g.cycles, 16433);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	assert_int_equal(d.dram_bytes, 16384);
	assert_int_equal(d.folds, 256);
	/* 2 * 4096 MACs / (16 * 16433) */
	assert_dbl_near(g.utilization, 8192.0 / (16.0 * 16433.0), 1e-15);

	/* two runs of two steps, resident weights: first steps as above, then
	 * two later steps of 8199 each, alone, with nothing to fetch:
	 * 16433 + 16398 = 32831; compute 16391 + 16398 = 32789 */
	assert_int_equal(gemm_runs(&c, 1, 64, 64, 2, 2, &g, &d), 0);
	assert_int_equal(g.cycles, 32831);
	assert_int_equal(g.compute_cycles, 32789);
	assert_int_equal(d.dram_bytes, 16384);
}

static void test_activation_operands(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	/* both operands activations and everything fits: no DRAM traffic, the
	 * WS compute of test_partial_folds_all_dataflows alone: 30 */
	g = gemm(&c, 5, 6, 7, 0, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 0);
	assert_int_equal(g.cycles, 30);
	/* act SRAM 100 B < 5*6 + 6*7 + 5*7 = 107 B: all three move:
	 * D = ceil(107 / 4) = 27, memory 37; d = ceil(27/4) = 7, c = 8:
	 * max(10 + 30 + 7, 10 + 27 + 8) = max(47, 45) = 47 */
	c.act_sram_bytes = 100;
	g = gemm(&c, 5, 6, 7, 0, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 37);
	assert_int_equal(g.cycles, 47);
}

static void test_table_one_gemm(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	npu_config_default(&c);
	/* 64x1024x4096 WS on 128x128: F = ceil(1024/128) * ceil(4096/128) =
	 * 8 * 32 = 256 folds, T = 64. A fold of weights (16384 B) enters at
	 * memory speed, 360e9 / 700e6 = 514.29 B/cycle: W = ceil(31.86) = 32,
	 * so later folds cost max(32, 64) = 64:
	 * 32 + 128 + 128 - 2 + 64 + 255 * 64 = 16670 compute cycles.
	 * Weights 1024*4096*1 B = 4 MiB fit the 4 MiB weight SRAM exactly:
	 * 4194304 * 700e6 / 360e9 = 8155.59 -> D = 8156, memory 8256.
	 * Activations 64 * (1024 + 4096) = 320 KiB stay on chip.
	 * d = ceil(8156/256) = 32, c = ceil(16670/256) = 66:
	 * max(100 + 16670 + 32, 100 + 8156 + 66) = 16802. */
	g = gemm(&c, 64, 1024, 4096, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 16670);
	assert_int_equal(g.memory_cycles, 8256);
	assert_int_equal(g.cycles, 16802);
	assert_dbl_near(g.seconds, 16802.0 / 700e6, 1e-18);
	/* 64*1024*4096 = 268435456 MACs / (16384 * 16802) */
	assert_dbl_near(g.utilization, 268435456.0 / (16384.0 * 16802.0), 1e-15);

	/* serialized with the same path: 256 * (32 + 254 + 64) = 89600;
	 * c = 350: 100 + 89600 + 32 = 89732 */
	c.weight_double_buffer = 0;
	g = gemm(&c, 64, 1024, 4096, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 89600);
	assert_int_equal(g.cycles, 89732);

	/* SCALE-Sim: serialized, one row of weights a cycle (128 B):
	 * 256 * (382 + 64) = 114176; c = 446: 100 + 114176 + 32 = 114308 */
	c.weight_load_bytes_per_cycle = 128;
	g = gemm(&c, 64, 1024, 4096, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 114176);
	assert_int_equal(g.cycles, 114308);
}

static void test_errors(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;
	char err[256];
	enum hw_dataflow df;

	(void)state;
	small_config(&c);
	err[0] = '\0';
	assert_int_equal(npu_gemm(&c, 0, 4, 4, 1, HW_DF_WS, &g, err, sizeof err), -1);
	assert_non_null(strstr(err, "zero dimension"));
	assert_int_equal(g.cycles, 0);
	{
		struct npu_gemm_req r = { .m = 4, .k = 4, .n = 4, .steps = 0, .runs = 1, .weight_operand = 1 };
		assert_int_equal(npu_gemm_runs(&c, &r, &g, NULL, err, sizeof err), -1);
		assert_non_null(strstr(err, "zero dimension"));
		r.steps = 1;
		r.runs = 0;
		assert_int_equal(npu_gemm_runs(&c, &r, &g, NULL, err, sizeof err), -1);
		assert_non_null(strstr(err, "zero dimension"));
	}
	/* IS: ceil(2^42/4) * ceil(2^42/4) = 2^80 folds do not fit in 64 bits */
	assert_int_equal(npu_gemm(&c, 1ull << 42, 1ull << 42, 1, 1, HW_DF_IS, &g, err, sizeof err), -1);
	assert_non_null(strstr(err, "too large"));
	assert_int_equal(npu_gemm(&c, 4, 4, 4, 1, (enum hw_dataflow)7, &g, err, sizeof err), -1);
	c.rows = 0;
	assert_int_equal(npu_gemm(&c, 4, 4, 4, 1, HW_DF_WS, &g, err, sizeof err), -1);
	assert_non_null(strstr(err, "rows"));
	small_config(&c);
	c.mem_bw_bytes_s = NAN;
	assert_int_equal(npu_config_check(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "mem_bw_bytes_s"));
	small_config(&c);
	c.weight_load_bytes_per_cycle = 1000;   /* memory: 360e9 / 700e6 = 514.3 */
	assert_int_equal(npu_config_check(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "weight_load_bytes_per_cycle 1000 is wider than the memory"));
	c.weight_load_bytes_per_cycle = 0;
	c.weight_double_buffer = 2;
	assert_int_equal(npu_config_check(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "weight_double_buffer"));
	/* two folds of weights: 2 * 4 * 4 * 1 = 32 B; 31 is one byte short */
	small_config(&c);
	c.weight_sram_bytes = 31;
	assert_int_equal(npu_config_check(&c, err, sizeof err), -1);
	assert_non_null(strstr(err, "needs 2 * rows * cols * elem_bytes = 32"));
	c.weight_sram_bytes = 32;
	assert_int_equal(npu_config_check(&c, err, sizeof err), 0);

	assert_int_equal(npu_dataflow_parse("os", &df, err, sizeof err), 0);
	assert_int_equal(df, HW_DF_OS);
	assert_int_equal(npu_dataflow_parse("rs", &df, err, sizeof err), -1);
	assert_non_null(strstr(err, "'rs'"));
}

/* A node with two weight GEMMs repeated twice, one attention GEMM and
 * element-wise work, at batch 3 on the small config. */
static void test_node_cost_sum(void **state)
{
	struct npu_config c;
	struct mdl_node node;
	struct hw_node_cost nc;
	struct npu_term_cost t[2];
	char err[256];

	(void)state;
	small_config(&c);
	memset(&node, 0, sizeof node);
	strcpy(node.name, "toy");
	node.ngemms = 2;
	node.gemms[0] = (struct mdl_gemm){ .m_per_sample = 1, .k = 8, .n = 8, .count = 2 };
	node.gemms[1] = (struct mdl_gemm){ .m_per_sample = 3, .k = 4, .n = 3, .count = 1,
	                                   .weight_shared = 1 };
	node.elementwise_per_sample = 10;

	/* gemm0: M = 3*1 = 3, WS 2*2 = 4 folds, T = 3: one run alone would take
	 * 10 + 3 + 3 * max(4, 3) = 25 compute cycles, with 64 B of weights.
	 * Its two runs (count 2) go back to back: their 8 folds chain,
	 * 10 + 3 + 7 * 4 = 41, and form one pipeline of 8 units: 128 B, D = 32,
	 * memory 42; d = ceil(32/8) = 4, c = ceil(41/8) = 6:
	 * max(10 + 41 + 4, 10 + 32 + 6) = 55 cycles.
	 * gemm1 (attention, per request): M = 3, K = 4, N = 3: 1 fold each, 3
	 * requests * count 1 = 3 runs chained: 10 + 3 + 2 * 4 = 21, all on chip.
	 * element-wise: 3 * 10 = 30 ops / 4 lanes -> 8 cycles.
	 * total 55 + 21 + 8 = 84 cycles at 1 GHz; compute 41 + 21 + 8 = 70;
	 * memory 42. */
	assert_int_equal(npu_node_terms(&c, &node, 3, t, err, sizeof err), 0);
	assert_int_equal(t[0].req.m, 3);
	assert_int_equal(t[0].req.runs, 2);
	assert_int_equal(t[0].req.steps, 1);
	assert_int_equal(t[0].req.weight_operand, 1);
	assert_int_equal(t[0].detail.folds, 4);
	assert_int_equal(t[0].cost.compute_cycles, 41);
	assert_int_equal(t[0].cost.cycles, 55);
	assert_int_equal(t[1].req.m, 3);
	assert_int_equal(t[1].req.runs, 3);
	assert_int_equal(t[1].req.weight_operand, 0);
	assert_int_equal(t[1].cost.cycles, 21);
	assert_int_equal(npu_node_cost(&c, &node, 3, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 84e-9, 1e-18);
	assert_dbl_near(nc.compute_seconds, 70e-9, 1e-18);
	assert_dbl_near(nc.memory_seconds, 42e-9, 1e-18);
	assert_int_equal(nc.bound, HW_COMPUTE_BOUND);

	/* steps on a term multiply its compute, not its resident weights:
	 * gemm0 with 2 steps: the first steps as above, 55; then each run's
	 * second step alone, 25 each, no bytes: 105. Total 105 + 21 + 8 = 134 */
	node.gemms[0].steps = 2;
	assert_int_equal(npu_node_cost(&c, &node, 3, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 134e-9, 1e-18);

	/* serialized, every run pays its folds: gemm0 2 * 4 * (10 + 3) = 104,
	 * c = 13: max(10 + 104 + 4, 10 + 32 + 13) = 118; gemm1 3 * 13 = 39;
	 * total 118 + 39 + 8 = 165 */
	node.gemms[0].steps = 1;
	c.weight_double_buffer = 0;
	assert_int_equal(npu_node_cost(&c, &node, 3, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 165e-9, 1e-18);

	assert_int_equal(npu_node_cost(&c, &node, 0, &nc, err, sizeof err), -1);
	assert_non_null(strstr(err, "batch"));
}

static void test_node_cost_memory_bound(void **state)
{
	struct npu_config c;
	struct mdl_node node;
	struct hw_node_cost nc;
	char err[256];

	(void)state;
	small_config(&c);
	c.mem_bw_bytes_s = 1e9;
	c.elem_bytes = 2;
	c.weight_load_bytes_per_cycle = 0;  /* memory speed: W = 32 */
	c.act_sram_bytes = 100;             /* the activations spill too */
	memset(&node, 0, sizeof node);
	strcpy(node.name, "fc");
	node.ngemms = 1;
	node.gemms[0] = (struct mdl_gemm){ .m_per_sample = 1, .k = 64, .n = 64, .count = 1 };
	node.elementwise_per_sample = 100;
	/* the GEMM of test_memory_bound (8199 compute cycles), plus its
	 * activations 64 * 2 + 64 * 2 = 256 B > 100 B crossing DRAM:
	 * D = 8192 + 256 = 8448, memory 8458; d = 33, c = 33:
	 * max(10 + 8199 + 33, 10 + 8448 + 33) = 8491 (memory-bound).
	 * Element-wise 100 / 4 = 25 after the array: 8491 + 25 = 8516. */
	assert_int_equal(npu_node_cost(&c, &node, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 8516e-9, 1e-18);
	assert_dbl_near(nc.compute_seconds, (8199 + 25) * 1e-9, 1e-18);
	assert_dbl_near(nc.memory_seconds, 8458e-9, 1e-18);
	assert_int_equal(nc.bound, HW_MEMORY_BOUND);
	/* overlapping the array, the vector unit is hidden: max(8491, 25) */
	c.vector_overlap = 1;
	assert_int_equal(npu_node_cost(&c, &node, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 8491e-9, 1e-18);
	/* until it is the slower of the two: 40000 / 4 = 10000 > 8491 */
	node.elementwise_per_sample = 40000;
	assert_int_equal(npu_node_cost(&c, &node, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 10000e-9, 1e-18);
}

/* The registry entry with Table I on a one-node LSTM-cell model (hidden
 * 1024: one GEMM [x, h] 2048 -> 4 gates 4096, ~10 element-wise ops per
 * hidden unit). */
static void test_hw_ops_lstm_cell(void **state)
{
	struct mdl_node node;
	struct mdl_model model;
	struct hw_model *hw = NULL;
	struct hw_node_cost nc;
	struct hw_gemm_cost g;
	struct npu_config cfg;
	char err[256];

	(void)state;
	memset(&node, 0, sizeof node);
	memset(&model, 0, sizeof model);
	strcpy(node.name, "lstm");
	node.kind = MDL_ENCODER;
	node.ngemms = 1;
	node.gemms[0] = (struct mdl_gemm){ .m_per_sample = 1, .k = 2048, .n = 4096, .count = 1 };
	node.elementwise_per_sample = 10240;
	strcpy(model.name, "lstm1");
	model.nnodes = 1;
	model.nodes = &node;

	assert_int_equal(npu_hw_ops.open("npux", &model, &hw, err, sizeof err), -1);
	assert_null(hw);
	assert_int_equal(npu_hw_ops.open("npu", &model, &hw, err, sizeof err), 0);
	assert_non_null(hw);
	assert_string_equal(hw->label, "npu");
	assert_ptr_equal(hw->model, &model);
	assert_int_equal(hw_max_batch(hw), 0);
	assert_non_null(npu_hw_config(hw));
	assert_int_equal(npu_hw_config(hw)->rows, 128);

	/* batch 1: WS F = 16 * 32 = 512 folds, T = 1; weights enter at memory
	 * speed, W = 32 a fold: 32 + 254 + 1 + 511 * 32 = 16639 compute cycles.
	 * Weights 8 MiB > 4 MiB weight SRAM, but the activations (6 KiB) fit,
	 * so they stream once: 8388608 * 700e6 / 360e9 = 16311.2 -> D = 16312,
	 * memory 16412. d = ceil(16312/512) = 32, c = ceil(16639/512) = 33:
	 * max(100 + 16639 + 32, 100 + 16312 + 33) = 16771.
	 * Element-wise 10240 / 128 = 80, overlapping the array: 16771 cycles. */
	assert_int_equal(hw_node_cost(hw, 0, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 16771.0 / 700e6, 1e-15);
	assert_dbl_near(nc.compute_seconds, (16639.0 + 80) / 700e6, 1e-15);
	assert_dbl_near(nc.memory_seconds, 16412.0 / 700e6, 1e-15);
	assert_int_equal(nc.bound, HW_COMPUTE_BOUND);

	/* batch 64: T = 64 > W, folds cost 64: 32 + 254 + 64 + 511 * 64 =
	 * 33054, c = ceil(33054/512) = 65: 100 + 33054 + 32 = 33186;
	 * element-wise 64 * 80 = 5120 hidden. The batch of 64 costs 1.98x one
	 * request: weights fetched once serve all 64. */
	assert_int_equal(hw_node_cost(hw, 0, 64, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 33186.0 / 700e6, 1e-15);

	/* batch 256: 32 + 254 + 256 + 511 * 256 = 131358; c = 257:
	 * 100 + 131358 + 32 = 131490; element-wise 20480 hidden */
	assert_int_equal(hw_node_cost(hw, 0, 256, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 131490.0 / 700e6, 1e-15);

	assert_int_equal(hw_node_cost(hw, 1, 1, &nc, err, sizeof err), -1);
	assert_non_null(strstr(err, "out of range"));

	/* gemm_cost passes through to npu_gemm with Table I (test_table_one_gemm) */
	assert_int_equal(hw->ops->gemm_cost(hw, 64, 1024, 4096, HW_DF_WS, 1, &g, err, sizeof err), 0);
	assert_int_equal(g.cycles, 16802);
	assert_int_equal(g.memory_cycles, 8256);
	/* as activation x activation: 4 MiB + 64 KiB + 256 KiB fit the 8 MiB act
	 * SRAM, so nothing moves and the compute is all */
	assert_int_equal(hw->ops->gemm_cost(hw, 64, 1024, 4096, HW_DF_WS, 0, &g, err, sizeof err), 0);
	assert_int_equal(g.memory_cycles, 0);
	assert_int_equal(g.cycles, 16670);
	hw->ops->close(hw);

	/* serialized, as SCALE-Sim: 512 * (382 + 1) = 196096 compute;
	 * c = 383: 100 + 196096 + 32 = 196228; + 80 element-wise = 196308 */
	npu_config_default(&cfg);
	cfg.weight_double_buffer = 0;
	cfg.weight_load_bytes_per_cycle = 128;
	cfg.vector_overlap = 0;
	assert_int_equal(npu_hw_create(&cfg, "scalesim", &model, &hw, err, sizeof err), 0);
	assert_string_equal(hw->label, "scalesim");
	assert_int_equal(hw_node_cost(hw, 0, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 196308.0 / 700e6, 1e-15);
	hw_close(hw);

	/* hw-info opens the NPU without a model: GEMMs work, nodes do not */
	assert_int_equal(npu_hw_ops.open("npu", NULL, &hw, err, sizeof err), 0);
	assert_int_equal(hw->ops->gemm_cost(hw, 4, 4, 4, HW_DF_OS, 1, &g, err, sizeof err), 0);
	/* one OS fold loads nothing: 128 + 128 - 2 + 4 = 258 */
	assert_int_equal(g.compute_cycles, 258);
	assert_int_equal(hw_node_cost(hw, 0, 1, &nc, err, sizeof err), -1);
	assert_non_null(strstr(err, "no model"));
	hw->ops->close(hw);

	/* a bad configuration is refused at creation */
	cfg.rows = 0;
	assert_int_equal(npu_hw_create(&cfg, "bad", NULL, &hw, err, sizeof err), -1);
	assert_null(hw);
	assert_non_null(strstr(err, "rows"));
	assert_null(npu_hw_config(NULL));
}

/* ---- configuration files (hwmodels/npu_config.c) ---- */

#ifndef SB_MODELS_DIR
#define SB_MODELS_DIR "models"
#endif
/* the shipped example configurations sit beside the timing model */
#define TEST_HW_DIR SB_MODELS_DIR "/../hwmodels"

/* Writes text to a fresh temporary file; returns its path (caller frees and
 * unlinks). */
static char *tmp_config(const char *text)
{
	char tmpl[] = "/tmp/test_npu_XXXXXX";
	int fd = mkstemp(tmpl);
	size_t len = strlen(text);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	char *path = strdup(tmpl);
	assert_non_null(path);
	return path;
}

static void load_ok(const char *text, struct npu_config *c)
{
	char *path = tmp_config(text);
	char err[512] = "";
	int rc = npu_config_load(path, c, err, sizeof err);

	if (rc)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(rc, 0);
	unlink(path);
	free(path);
}

/* The load must fail with "PATH:LINE: ...what..." on one line. */
static void load_err(const char *text, unsigned line, const char *what)
{
	char *path = tmp_config(text);
	char err[512] = "", prefix[600];
	struct npu_config c;
	int rc = npu_config_load(path, &c, err, sizeof err);

	snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
	if (rc != -1 || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		print_error("input:\n%s\nwant prefix '%s' and '%s'\ngot rc %d: '%s'\n",
		            text, prefix, what, rc, err);
	assert_int_equal(rc, -1);
	assert_int_equal(strncmp(err, prefix, strlen(prefix)), 0);
	assert_non_null(strstr(err, what));
	assert_null(strchr(err, '\n'));
	unlink(path);
	free(path);
}

/* Field by field: padding bytes, were there any, would not compare. */
static void assert_config_equal(const struct npu_config *a, const struct npu_config *b)
{
	assert_int_equal(a->rows, b->rows);
	assert_int_equal(a->cols, b->cols);
	assert_true(a->freq_hz == b->freq_hz);
	assert_int_equal(a->act_sram_bytes, b->act_sram_bytes);
	assert_int_equal(a->weight_sram_bytes, b->weight_sram_bytes);
	assert_int_equal(a->mem_channels, b->mem_channels);
	assert_int_equal(a->mem_latency_cycles, b->mem_latency_cycles);
	assert_true(a->mem_bw_bytes_s == b->mem_bw_bytes_s);
	assert_int_equal(a->elem_bytes, b->elem_bytes);
	assert_int_equal(a->vector_lanes, b->vector_lanes);
	assert_int_equal(a->dataflow, b->dataflow);
	assert_int_equal(a->weight_double_buffer, b->weight_double_buffer);
	assert_true(a->weight_load_bytes_per_cycle == b->weight_load_bytes_per_cycle);
	assert_int_equal(a->vector_overlap, b->vector_overlap);
}

/* hwmodels/scalesim.npu selects SCALE-Sim's timing: compute cycles equal
 * SCALE-Sim v2's stall-free counts on a 128x128 array, which it reports as
 * the last cycle index (count - 1): OS 1x1024x4096 40,895 and 32x512x512
 * 3,063; WS 1x1024x4096 98,047; IS 1x1024x4096 35,823. By the formulas:
 * OS 1x1024x4096: F = 1 * 32, T = 1024: 32 * (128 + 128 + 1024 - 2) = 40896;
 * OS 32x512x512: F = 1 * 4, T = 512: 4 * (254 + 512) = 3064;
 * WS: F = 8 * 32 = 256, T = 1: 256 * (2*128 + 128 + 1 - 2) = 98048;
 * IS: F = 8 * 1, T = 4096: 8 * (382 + 4096) = 35824. */
static void test_scalesim_file(void **state)
{
	struct npu_config c;
	char err[512];

	(void)state;
	assert_int_equal(npu_config_load(TEST_HW_DIR "/scalesim.npu", &c, err, sizeof err), 0);
	assert_int_equal(gemm(&c, 1, 1024, 4096, 1, HW_DF_OS).compute_cycles, 40895 + 1);
	assert_int_equal(gemm(&c, 32, 512, 512, 1, HW_DF_OS).compute_cycles, 3063 + 1);
	assert_int_equal(gemm(&c, 1, 1024, 4096, 1, HW_DF_WS).compute_cycles, 98047 + 1);
	assert_int_equal(gemm(&c, 1, 1024, 4096, 1, HW_DF_IS).compute_cycles, 35823 + 1);
}

static void test_config_files(void **state)
{
	struct npu_config c, want;
	char err[512];

	(void)state;
	/* Table I written out is exactly the built-in npu */
	npu_config_default(&want);
	assert_int_equal(npu_config_load(TEST_HW_DIR "/table1.npu", &c, err, sizeof err), 0);
	assert_config_equal(&c, &want);
	/* kind alone: every key takes its Table I value */
	load_ok("kind = npu\n", &c);
	assert_config_equal(&c, &want);

	/* the TPU v1-like example (Jouppi et al. 2017) */
	assert_int_equal(npu_config_load(TEST_HW_DIR "/tpu_v1_like.npu", &c, err, sizeof err), 0);
	assert_int_equal(c.rows, 256);
	assert_int_equal(c.cols, 256);
	assert_true(c.freq_hz == 700e6);
	assert_int_equal(c.act_sram_bytes, 24u << 20);
	assert_int_equal(c.weight_sram_bytes, 256u << 10);
	assert_int_equal(c.mem_channels, 2);
	assert_true(c.mem_bw_bytes_s == 34e9);
	assert_int_equal(c.vector_lanes, 256);   /* follows cols */

	/* comments, blanks, spacing, and every key */
	load_ok("# a part of my own\n\n  kind=npu   # first\n"
	        "rows = 4\ncols\t=\t8\nfreq_mhz = 1000.5\nact_sram_kib = 3\nweight_sram_kib = 2\n"
	        "mem_channels = 1\nmem_latency_cycles = 0\nmem_bw_gbs = 4.5\nelem_bytes = 2\n"
	        "vector_lanes = 3\ndataflow = is\nweight_double_buffer = 0   # SCALE-Sim\n"
	        "weight_load_bytes_per_cycle = 2.5\nvector_overlap = 0\n", &c);
	assert_true(c.weight_load_bytes_per_cycle == 2.5);
	assert_int_equal(c.vector_overlap, 0);
	assert_int_equal(c.rows, 4);
	assert_int_equal(c.cols, 8);
	assert_true(c.freq_hz == 1000.5e6);
	assert_int_equal(c.act_sram_bytes, 3 * 1024);
	assert_int_equal(c.weight_sram_bytes, 2 * 1024);
	assert_int_equal(c.mem_channels, 1);
	assert_int_equal(c.mem_latency_cycles, 0);
	assert_true(c.mem_bw_bytes_s == 4.5e9);
	assert_int_equal(c.elem_bytes, 2);
	assert_int_equal(c.vector_lanes, 3);
	assert_int_equal(c.dataflow, HW_DF_IS);
	assert_int_equal(c.weight_double_buffer, 0);
	load_ok("kind = npu\nweight_load_bytes_per_cycle = memory\n", &c);
	assert_true(c.weight_load_bytes_per_cycle == 0);
	load_ok("kind = npu\ncols = 64\n", &c);
	assert_int_equal(c.vector_lanes, 64);

	load_err("rows = 128\n", 1, "key 'rows' before 'kind = npu'");
	load_err("kind = gpu\n", 1, "key 'kind': unknown hardware kind 'gpu' (expected npu)");
	load_err("kind = npu\nkind = npu\n", 2, "key 'kind' given twice (first on line 1)");
	load_err("kind = npu\nrows = abc\n", 2, "key 'rows': expected an integer in [1, 65536] PEs, got 'abc'");
	load_err("kind = npu\n\nrows = 0\n", 3, "key 'rows': expected an integer in [1, 65536]");
	load_err("kind = npu\nrows = -4\n", 2, "got '-4'");
	load_err("kind = npu\nrows = 65537\n", 2, "key 'rows'");
	load_err("kind = npu\nrows = 12 8\n", 2, "got '12 8'");
	load_err("kind = npu\nelem_bytes = 99999999999999999999999\n", 2, "key 'elem_bytes'");
	load_err("kind = npu\nrows = 4\nrows = 8\n", 3, "key 'rows' given twice (first on line 2)");
	load_err("kind = npu\nrows\n", 2, "expected KEY = VALUE, got 'rows'");
	load_err("kind = npu\n = 4\n", 2, "expected KEY = VALUE");
	load_err("kind = npu\nrows =   # nothing\n", 2, "key 'rows' has no value");
	load_err("kind = npu\nrow = 4\n", 2, "unknown key 'row' (known: kind, rows, cols,");
	load_err("kind = npu\nfreq_mhz = 0\n", 2, "key 'freq_mhz': expected a number >= 1 and <= 1e+06 MHz");
	/* the floors (issue 12): a clock or a memory this slow would outlast the simulated clock */
	load_err("kind = npu\nfreq_mhz = 0.999\n", 2, "key 'freq_mhz': expected a number >= 1");
	load_err("kind = npu\nfreq_mhz = 0.000001\n", 2, "key 'freq_mhz': expected a number >= 1");
	load_err("kind = npu\nmem_bw_gbs = 0.0009\n", 2, "key 'mem_bw_gbs': expected a number >= 0.001");
	load_err("kind = npu\nfreq_mhz = nan\n", 2, "key 'freq_mhz'");
	load_err("kind = npu\nfreq_mhz = 700MHz\n", 2, "got '700MHz'");
	load_err("kind = npu\nmem_bw_gbs = 1e400\n", 2, "key 'mem_bw_gbs'");
	load_err("kind = npu\nmem_bw_gbs = -1\n", 2, "key 'mem_bw_gbs'");
	load_err("kind = npu\ndataflow = rs\n", 2, "key 'dataflow': expected ws, os or is, got 'rs'");
	load_err("kind = npu\nweight_double_buffer = 2\n", 2, "key 'weight_double_buffer': expected an integer in [0, 1]");
	load_err("kind = npu\nweight_load_bytes_per_cycle = 0\n", 2,
	         "key 'weight_load_bytes_per_cycle': expected 'memory' or a number > 0");
	load_err("kind = npu\nweight_load_bytes_per_cycle = -8\n", 2, "key 'weight_load_bytes_per_cycle'");
	load_err("kind = npu\nweight_load_bytes_per_cycle = fast\n", 2, "got 'fast'");
	load_err("kind = npu\nweight_load_bytes_per_cycle = inf\n", 2, "key 'weight_load_bytes_per_cycle'");
	/* 360e9 / 700e6 = 514.29 bytes per cycle of memory */
	load_err("kind = npu\nweight_load_bytes_per_cycle = 600\n", 2,
	         "key 'weight_load_bytes_per_cycle': 600 bytes per cycle is wider than the memory "
	         "(mem_bw_gbs / freq_mhz = 514.286 bytes per cycle)");
	/* blamed on the last key involved: 200e9 / 700e6 = 285.7 < 400 */
	load_err("kind = npu\nweight_load_bytes_per_cycle = 400\nmem_bw_gbs = 200\n", 3, "is wider than the memory");
	load_err("kind = npu\nvector_overlap = 2\n", 2, "key 'vector_overlap': expected an integer in [0, 1]");
	load_err("# only comments\n\n", 2, "no settings (the first must be kind = npu)");
	load_err("", 1, "no settings");
	/* 2 * 512 * 512 * 1 = 524288 B > 256 KiB: blamed on the last key involved */
	load_err("kind = npu\nweight_sram_kib = 256\nrows = 512\ncols = 512\n", 4,
	         "key 'weight_sram_kib': 256 KiB cannot double-buffer one fold of weights "
	         "(needs 2 * rows * cols * elem_bytes = 524288 bytes)");

	assert_int_equal(npu_config_load("/nonexistent/x.npu", &c, err, sizeof err), -1);
	assert_string_equal(err, "/nonexistent/x.npu: cannot open: No such file or directory");
}

/* --hw=FILE goes through hw_open, which tells a configuration from a node
 * latency table by its first setting, and the file's values drive the cost. */
static void test_config_hw_open(void **state)
{
	struct hw_model *hw = NULL;
	struct hw_gemm_cost g;
	char err[512];

	(void)state;
	/* the small config of the tests above, written as a file */
	char *path = tmp_config("kind = npu\nrows = 4\ncols = 4\nfreq_mhz = 1000\nact_sram_kib = 1024\n"
	                        "weight_sram_kib = 1024\nmem_channels = 1\nmem_latency_cycles = 10\n"
	                        "mem_bw_gbs = 4\nelem_bytes = 1\n");
	assert_int_equal(hw_open(path, NULL, &hw, err, sizeof err), 0);
	assert_string_equal(hw->label, strrchr(path, '/') + 1);
	assert_non_null(npu_hw_config(hw));
	assert_int_equal(npu_hw_config(hw)->vector_lanes, 4);
	/* test_partial_folds_all_dataflows: WS 5x6x7 takes 43 cycles */
	assert_int_equal(hw->ops->gemm_cost(hw, 5, 6, 7, HW_DF_WS, 1, &g, err, sizeof err), 0);
	assert_int_equal(g.cycles, 43);
	assert_dbl_near(g.seconds, 43e-9, 1e-20);
	hw_close(hw);
	unlink(path);
	free(path);

	/* serialized, as SCALE-Sim: 73 */
	path = tmp_config("kind = npu\nrows = 4\ncols = 4\nfreq_mhz = 1000\nmem_latency_cycles = 10\n"
	                  "mem_bw_gbs = 4\nweight_double_buffer = 0\n");
	assert_int_equal(hw_open(path, NULL, &hw, err, sizeof err), 0);
	assert_int_equal(hw->ops->gemm_cost(hw, 5, 6, 7, HW_DF_WS, 1, &g, err, sizeof err), 0);
	assert_int_equal(g.cycles, 73);
	hw_close(hw);
	unlink(path);
	free(path);

	/* a malformed configuration reaches the caller with its line */
	path = tmp_config("kind = npu\n\ncols = many\n");
	assert_int_equal(hw_open(path, NULL, &hw, err, sizeof err), -1);
	assert_null(hw);
	char want[600];
	snprintf(want, sizeof want, "%s:3: key 'cols'", path);
	assert_int_equal(strncmp(err, want, strlen(want)), 0);
	unlink(path);
	free(path);

	/* neither a configuration nor a table */
	path = tmp_config("rows = 4\n");
	assert_int_equal(hw_open(path, NULL, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "not a simbatch hardware file"));
	assert_non_null(strstr(err, "kind = npu"));
	unlink(path);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_table_one),
		cmocka_unit_test(test_partial_folds_all_dataflows),
		cmocka_unit_test(test_weight_load_bound_folds),
		cmocka_unit_test(test_single_fold),
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_weight_path_compute_bound),
		cmocka_unit_test(test_weight_sram_overflow),
		cmocka_unit_test(test_steps),
		cmocka_unit_test(test_runs),
		cmocka_unit_test(test_activation_operands),
		cmocka_unit_test(test_table_one_gemm),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_node_cost_sum),
		cmocka_unit_test(test_node_cost_memory_bound),
		cmocka_unit_test(test_hw_ops_lstm_cell),
		cmocka_unit_test(test_config_files),
		cmocka_unit_test(test_scalesim_file),
		cmocka_unit_test(test_config_hw_open),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
