/* tests/test_npu.c: the systolic-array NPU timing model (hwmodels/npu_systolic.c)
 * against cycle counts worked out by hand from SCALE-Sim's analytical formula
 * (per fold 2R + C + T - 2, folds ceil(Sr/R) * ceil(Sc/C)) and from the
 * memory model in the file comment of npu_systolic.c. The arithmetic is in
 * the comments next to each expectation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "hwmodels/npu_systolic.h"

/* cmocka 1.1 has no double comparison; float_equal would round to float */
#define assert_dbl_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* A 4x4 array at 1 GHz with 4 bytes/cycle of DRAM bandwidth (4e9 B/s / 1e9
 * Hz), a 10-cycle access latency, int8, roomy SRAMs: 2R + C - 2 = 10, so a
 * fold costs 10 + T cycles. */
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

	/* WS: Sr=K=6 -> 2 folds, Sc=N=7 -> 2 folds, T=M=5: 4 * (10 + 5) = 60 */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 60);
	/* weights 6*7 = 42 B fit in weight SRAM, activations 5*(6+7) = 65 B fit
	 * in activation SRAM: only the weights move: ceil(42/4) = 11, +10 = 21 */
	assert_int_equal(g.memory_cycles, 21);
	assert_int_equal(g.cycles, 60);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);
	assert_dbl_near(g.seconds, 60e-9, 1e-20);
	/* 5*6*7 = 210 MACs / (16 PEs * 60 cycles) = 0.21875 */
	assert_dbl_near(g.utilization, 0.21875, 1e-15);

	/* OS: Sr=M=5 -> 2, Sc=N=7 -> 2, T=K=6: 4 * (10 + 6) = 64 */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_OS);
	assert_int_equal(g.compute_cycles, 64);
	assert_int_equal(g.cycles, 64);

	/* IS: Sr=K=6 -> 2, Sc=M=5 -> 2, T=N=7: 4 * (10 + 7) = 68 */
	g = gemm(&c, 5, 6, 7, 1, HW_DF_IS);
	assert_int_equal(g.compute_cycles, 68);
	assert_int_equal(g.memory_cycles, 21);  /* memory does not depend on dataflow */
	assert_dbl_near(g.utilization, 210.0 / (16.0 * 68.0), 1e-15);
}

static void test_single_fold(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	/* 4x4x4 fills the array exactly once in every dataflow: 10 + 4 = 14 */
	assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_WS).compute_cycles, 14);
	assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_OS).compute_cycles, 14);
	assert_int_equal(gemm(&c, 4, 4, 4, 1, HW_DF_IS).compute_cycles, 14);

	/* M=8, K=N=4: WS keeps one fold and streams 8 rows: 10 + 8 = 18;
	 * OS and IS put M in space: 2 folds * (10 + 4) = 28 */
	g = gemm(&c, 8, 4, 4, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 18);
	/* 8*4*4 = 128 MACs / (16 * 18) */
	assert_dbl_near(g.utilization, 128.0 / 288.0, 1e-15);
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_OS).compute_cycles, 28);
	assert_int_equal(gemm(&c, 8, 4, 4, 1, HW_DF_IS).compute_cycles, 28);

	/* a 1x1x1 GEMM still pays the whole pipeline: 10 + 1 = 11 */
	assert_int_equal(gemm(&c, 1, 1, 1, 1, HW_DF_WS).compute_cycles, 11);
}

static void test_memory_bound(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	c.mem_bw_bytes_s = 1e9;  /* 1 byte per cycle */
	c.elem_bytes = 2;
	/* M=1, K=N=64, WS: 16 * 16 folds * (10 + 1) = 2816 compute cycles;
	 * weights 64*64*2 = 8192 B at 1 B/cycle = 8192, +10 latency = 8202 */
	g = gemm(&c, 1, 64, 64, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 2816);
	assert_int_equal(g.memory_cycles, 8202);
	assert_int_equal(g.cycles, 8202);
	assert_int_equal(g.bound, HW_MEMORY_BOUND);
	assert_dbl_near(g.seconds, 8202e-9, 1e-20);
	/* 4096 MACs / (16 * 8202) */
	assert_dbl_near(g.utilization, 4096.0 / (16.0 * 8202.0), 1e-15);
}

static void test_weight_sram_overflow(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	c.weight_sram_bytes = 64;
	c.act_sram_bytes = 100;
	/* M=10, K=8, N=16: weights 8*16 = 128 B > 64 B of weight SRAM.
	 * A tile row needs K + N = 24 B of activation SRAM: 100 / 24 = 4 rows per
	 * tile, ceil(10 / 4) = 3 tiles, so the weights cross 3 times: 384 B.
	 * Activations 10 * 24 = 240 B > 100 B: in and out once more, 240 B.
	 * 624 B / 4 B/cycle = 156, + 10 = 166 memory cycles.
	 * Compute WS: Sr=8 -> 2, Sc=16 -> 4, 8 folds * (10 + 10) = 160. */
	g = gemm(&c, 10, 8, 16, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 160);
	assert_int_equal(g.memory_cycles, 166);
	assert_int_equal(g.cycles, 166);
	assert_int_equal(g.bound, HW_MEMORY_BOUND);

	/* The same GEMM with weights that fit: 128 + 240 = 368 B -> 92 + 10 = 102 */
	c.weight_sram_bytes = 128;
	g = gemm(&c, 10, 8, 16, 1, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 102);
	assert_int_equal(g.cycles, 160);
	assert_int_equal(g.bound, HW_COMPUTE_BOUND);

	/* Weights that do not fit but activations that do (act SRAM 1 KiB,
	 * 1024 / 24 = 42 rows >= 10): one tile, weights stream once: 128 B ->
	 * 32 + 10 = 42 */
	c.weight_sram_bytes = 64;
	c.act_sram_bytes = 1024;
	assert_int_equal(gemm(&c, 10, 8, 16, 1, HW_DF_WS).memory_cycles, 42);
}

static void test_activation_operands(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	small_config(&c);
	/* both operands activations and everything fits: no DRAM traffic */
	g = gemm(&c, 5, 6, 7, 0, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 0);
	assert_int_equal(g.cycles, 60);
	/* act SRAM 100 B < 5*6 + 6*7 + 5*7 = 107 B: all three move:
	 * ceil(107 / 4) = 27, + 10 = 37 */
	c.act_sram_bytes = 100;
	g = gemm(&c, 5, 6, 7, 0, HW_DF_WS);
	assert_int_equal(g.memory_cycles, 37);
}

static void test_table_one_gemm(void **state)
{
	struct npu_config c;
	struct hw_gemm_cost g;

	(void)state;
	npu_config_default(&c);
	/* 64x1024x4096 WS on 128x128: folds ceil(1024/128) * ceil(4096/128) =
	 * 8 * 32 = 256, each 2*128 + 128 + 64 - 2 = 446 cycles: 114176.
	 * Weights 1024*4096*1 B = 4 MiB fit the 4 MiB weight SRAM exactly:
	 * 4194304 * 700e6 / 360e9 = 8155.59 -> 8156, + 100 = 8256.
	 * Activations 64 * (1024 + 4096) = 320 KiB stay on chip. */
	g = gemm(&c, 64, 1024, 4096, 1, HW_DF_WS);
	assert_int_equal(g.compute_cycles, 114176);
	assert_int_equal(g.memory_cycles, 8256);
	assert_int_equal(g.cycles, 114176);
	assert_dbl_near(g.seconds, 114176.0 / 700e6, 1e-18);
	/* 64*1024*4096 / (16384 * 114176) = 268435456 / 1870659584 */
	assert_dbl_near(g.utilization, 268435456.0 / 1870659584.0, 1e-15);
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

	/* gemm0: M = 3*1 = 3, WS 2*2 folds * (10 + 3) = 52 compute; 64 B of
	 * weights -> 16 + 10 = 26 memory; 52 cycles; twice: 104 / 52.
	 * gemm1 (attention, per request): M = 3, K = 4, N = 3: 1 fold,
	 * 10 + 3 = 13 cycles, all on chip; 3 requests * count 1: 39.
	 * element-wise: 3 * 10 = 30 ops / 4 lanes -> 8 cycles.
	 * total 104 + 39 + 8 = 151 cycles at 1 GHz; compute 151; memory 52. */
	assert_int_equal(npu_node_cost(&c, &node, 3, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 151e-9, 1e-18);
	assert_dbl_near(nc.compute_seconds, 151e-9, 1e-18);
	assert_dbl_near(nc.memory_seconds, 52e-9, 1e-18);
	assert_int_equal(nc.bound, HW_COMPUTE_BOUND);

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
	memset(&node, 0, sizeof node);
	strcpy(node.name, "fc");
	node.ngemms = 1;
	node.gemms[0] = (struct mdl_gemm){ .m_per_sample = 1, .k = 64, .n = 64, .count = 1 };
	node.elementwise_per_sample = 100;
	/* the GEMM of test_memory_bound: 2816 compute, 8202 memory (bound);
	 * element-wise 100 / 4 = 25. Total 8202 + 25 = 8227. */
	assert_int_equal(npu_node_cost(&c, &node, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 8227e-9, 1e-18);
	assert_dbl_near(nc.compute_seconds, (2816 + 25) * 1e-9, 1e-18);
	assert_dbl_near(nc.memory_seconds, 8202e-9, 1e-18);
	assert_int_equal(nc.bound, HW_MEMORY_BOUND);
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

	/* batch 1: WS folds 16 * 32 = 512, each 2*128 + 128 + 1 - 2 = 383:
	 * 196096 compute cycles. Weights 8 MiB > 4 MiB weight SRAM, but a tile
	 * row needs 6144 B so 8 MiB of act SRAM holds 1365 rows >= 1: one pass,
	 * 8388608 * 700e6 / 360e9 = 16311.2 -> 16312 + 100 = 16412 memory.
	 * Element-wise 10240 / 128 = 80. Total 196176 cycles / 700 MHz. */
	assert_int_equal(hw_node_cost(hw, 0, 1, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 196176.0 / 700e6, 1e-15);
	assert_dbl_near(nc.compute_seconds, 196176.0 / 700e6, 1e-15);
	assert_dbl_near(nc.memory_seconds, 16412.0 / 700e6, 1e-15);
	assert_int_equal(nc.bound, HW_COMPUTE_BOUND);

	/* batch 64: 512 * (382 + 64) = 228352; element-wise 64 * 80 = 5120 */
	assert_int_equal(hw_node_cost(hw, 0, 64, &nc, err, sizeof err), 0);
	assert_dbl_near(nc.seconds, 233472.0 / 700e6, 1e-15);

	assert_int_equal(hw_node_cost(hw, 1, 1, &nc, err, sizeof err), -1);
	assert_non_null(strstr(err, "out of range"));

	/* gemm_cost passes through to npu_gemm with Table I (test_table_one_gemm) */
	assert_int_equal(hw->ops->gemm_cost(hw, 64, 1024, 4096, HW_DF_WS, 1, &g, err, sizeof err), 0);
	assert_int_equal(g.cycles, 114176);
	assert_int_equal(g.memory_cycles, 8256);
	/* as activation x activation: 4 MiB + 64 KiB + 256 KiB fit the 8 MiB act
	 * SRAM, so nothing moves */
	assert_int_equal(hw->ops->gemm_cost(hw, 64, 1024, 4096, HW_DF_WS, 0, &g, err, sizeof err), 0);
	assert_int_equal(g.memory_cycles, 0);
	hw->ops->close(hw);

	/* hw-info opens the NPU without a model: GEMMs work, nodes do not */
	assert_int_equal(npu_hw_ops.open("npu", NULL, &hw, err, sizeof err), 0);
	assert_int_equal(hw->ops->gemm_cost(hw, 4, 4, 4, HW_DF_OS, 1, &g, err, sizeof err), 0);
	/* one fold: 2*128 + 128 + 4 - 2 = 386 */
	assert_int_equal(g.compute_cycles, 386);
	assert_int_equal(hw_node_cost(hw, 0, 1, &nc, err, sizeof err), -1);
	assert_non_null(strstr(err, "no model"));
	hw->ops->close(hw);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_table_one),
		cmocka_unit_test(test_partial_folds_all_dataflows),
		cmocka_unit_test(test_single_fold),
		cmocka_unit_test(test_memory_bound),
		cmocka_unit_test(test_weight_sram_overflow),
		cmocka_unit_test(test_activation_operands),
		cmocka_unit_test(test_table_one_gemm),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_node_cost_sum),
		cmocka_unit_test(test_node_cost_memory_bound),
		cmocka_unit_test(test_hw_ops_lstm_cell),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
