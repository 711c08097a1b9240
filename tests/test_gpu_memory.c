/* tests/test_gpu_memory.c: one memory per GPU (hwmodels/gpu_memory.h). The
 * usable memory and the KV blocks of Llama-2-7B on an H100 and an A100, and
 * of Llama-2-70B on four H100s, computed by hand; every table of the H100
 * (Vidur's operators, our measured operators, the datasheet roofline) gives
 * the same. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "hwmodels/calibrated.h"
#include "hwmodels/gpu_memory.h"
#include "hwmodels/hwmodel.h"
#include "hwmodels/llm_cost.h"
#include "models/model.h"

/* Llama-2-7B: 32 layers, hidden 4096, 32 heads = 32 KV heads of 128, gated MLP 11008, vocab 32000, 2 bytes.
 * Weights: 32 x (4 x 4096^2 + 3 x 4096 x 11008) + 2 x 32000 x 4096 = 6,738,149,376 parameters (the norms'
 * 266,240 left out, as the model's weight count leaves them) x 2 = 13,476,298,752 bytes.
 * A block of 16 tokens: 16 x 32 layers x 2 (K, V) x 32 KV heads x 128 x 2 bytes = 8,388,608 bytes. */
#define L7B_WEIGHTS 13476298752.0
#define L7B_BLOCK 8388608.0

/* Llama-2-70B: 80 layers, hidden 8192, 64 heads of 128, 8 KV heads, gated MLP 28672, vocab 32000.
 * Weights: 80 x (8192 x (8192 + 2 x 1024) + 8192^2 + 3 x 8192 x 28672) + 2 x 32000 x 8192
 * = 68,975,329,280 parameters x 2 = 137,950,658,560 bytes, a quarter on each of 4 GPUs: 34,487,664,640.
 * A block on one of 4 GPUs: 16 x 80 x 2 x 8 KV heads x 128 x 2 bytes / 4 = 1,310,720 bytes. */
#define L70B_WEIGHTS_GPU 34487664640.0
#define L70B_BLOCK_GPU 1310720.0

/* The H100 80GB HBM3 reports 85.0175e9 bytes (cudaDeviceProp.totalGlobalMem, our calibration), of which vLLM's
 * gpu_memory_utilization 0.9 gives 76,515,750,000. The A100's is its datasheet's 80e9: 72,000,000,000. */
#define H100_USABLE 76515750000.0
#define A100_USABLE 72000000000.0

struct opened {
	struct hw_device dev;
	uint64_t blocks;
};

static struct opened open_on(const char *model, const char *hw_arg, uint32_t tp)
{
	char err[512];
	struct mdl_model *m;
	struct hw_model *hw;
	struct llm_cost *c;
	if (mdl_load(model, &m, err, sizeof err) != 0 || hw_open_tp(hw_arg, m, tp, &hw, err, sizeof err) != 0 ||
	    llm_cost_create(hw, m, 0, &c, err, sizeof err) != 0)
		fail_msg("%s on %s: %s", model, hw_arg, err);
	struct opened o = { 0 };
	hw->ops->device(hw, &o.dev);
	o.blocks = llm_cost_kv_blocks(c, 16, err, sizeof err);
	llm_cost_destroy(c);
	hw_close(hw);
	mdl_free(m);
	return o;
}

static void test_llama2_7b_on_h100_and_a100(void **state)
{
	(void)state;
	/* H100: 76,515,750,000 - 13,476,298,752 = 63,039,451,248 bytes of KV cache / 8,388,608 = 7514.89: 7514 */
	struct opened h = open_on("llama2-7b", "gpu-h100", 1);
	assert_int_equal(h.dev.gpus, 1);
	assert_true(h.dev.gpu_bytes == 85.0175e9);
	assert_true(fabs(h.dev.mem_bytes - H100_USABLE) < 1);
	assert_true(floor((H100_USABLE - L7B_WEIGHTS) / L7B_BLOCK) == 7514);
	assert_int_equal(h.blocks, 7514);

	/* A100: 72,000,000,000 - 13,476,298,752 = 58,523,701,248 / 8,388,608 = 6976.57: 6976 */
	struct opened a = open_on("llama2-7b", "gpu-a100", 1);
	assert_true(fabs(a.dev.mem_bytes - A100_USABLE) < 1);
	assert_true(floor((A100_USABLE - L7B_WEIGHTS) / L7B_BLOCK) == 6976);
	assert_int_equal(a.blocks, 6976);

	/* the parts model-info prints add up to the same */
	struct gpu_memory p;
	gpu_memory_parts(85.0175e9, 1, L7B_WEIGHTS, &p);
	assert_true(p.utilization == 0.9 && p.weights_bytes == L7B_WEIGHTS);
	assert_true(fabs(p.kv_bytes - 63039451248.0) < 1);
}

static void test_llama2_70b_on_four_h100(void **state)
{
	(void)state;
	/* each GPU: 76,515,750,000 - 34,487,664,640 = 42,028,085,360 bytes / 1,310,720 = 32064.5: 32064 */
	struct opened h = open_on("llama2-70b", "gpu-h100", 4);
	assert_int_equal(h.dev.gpus, 4);
	assert_true(fabs(h.dev.mem_bytes - 4 * H100_USABLE) < 4);
	assert_true(floor((H100_USABLE - L70B_WEIGHTS_GPU) / L70B_BLOCK_GPU) == 32064);
	assert_int_equal(h.blocks, 32064);
	struct gpu_memory p;
	gpu_memory_parts(85.0175e9, 4, 4 * L70B_WEIGHTS_GPU, &p);
	assert_true(fabs(p.kv_bytes - 42028085360.0) < 1);
}

/* One GPU, one memory: Vidur's H100 table (mem_gb 80), our measured one (mem_gb 85.0175) and the datasheet
 * roofline all hold what the H100's row defines. */
static void test_every_h100_table_agrees(void **state)
{
	(void)state;
	char measured[1024];
	snprintf(measured, sizeof measured, "%s/ops-h100-measured.csv", calhw_tables_dir());
	const char *tables[] = { "gpu-h100", measured, "gpu-h100-roofline" };
	for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++) {
		struct opened o = open_on("llama2-7b", tables[i], 1);
		assert_true(fabs(o.dev.mem_bytes - H100_USABLE) < 1);
		assert_true(o.dev.gpu_bytes == gpu_memory_row("h100")->device_bytes);
		assert_int_equal(o.blocks, 7514);
	}
	assert_null(gpu_memory_row("h200"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_llama2_7b_on_h100_and_a100),
		cmocka_unit_test(test_llama2_70b_on_four_h100),
		cmocka_unit_test(test_every_h100_table_agrees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
