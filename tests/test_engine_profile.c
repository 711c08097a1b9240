/* tests/test_engine_profile.c: a serving engine's profile (hwmodels/engine_profile.h) on a measured
 * GPU: vLLM v0.15's all-reduce algorithm either side of its switch sizes at TP 2, 4 and 8, priced by
 * hand from the committed curves; on a toy operator profile, the all-reduce inside an iteration, a
 * decode step replayed as a CUDA graph at its padded size, an eager and a piecewise iteration bound by
 * the host's launches, each priced by hand; every pricing term off gives the GPU-only iteration
 * exactly; and every kind of bad profile named by file, line and key. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "put_file.h"
#include "hwmodels/engine_profile.h"
#include "hwmodels/gpu_measured.h"

#define MiB (1024.0 * 1024.0)

static char dir[64];
static char path_model[128], path_ops[128], path_nccl[128], path_custom[128], path_symm[128], path_eng[128];
static struct mdl_model *toy;

/* A toy LLM of 2 layers, hidden 64 (an all-reduce of T tokens is 128 T bytes), at tp 1 and 2; each
 * row's operators sum to a round figure a layer: emb, input_layernorm, attn_pre_proj, attn_rope,
 * attn_post_proj, post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add (ms). */
static const char toy_ops[] =
	OPP_KIND_LINE "\n# gpu = toy\n# mem_gb = 0.001\n# source = test\n"
	"profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,input_layernorm,attn_pre_proj,attn_rope,"
	"attn_post_proj,post_attention_layernorm,mlp_up_proj,mlp_act,mlp_down_proj,add\n"
	"toy/m,64,4,2,128,256,1,1,1,.001,.001,.010,.001,.004,.001,.020,.001,.010,.002\n"
	"toy/m,64,4,2,128,256,1,1,4,.002,.001,.012,.001,.005,.001,.024,.002,.012,.002\n"
	"toy/m,64,4,2,128,256,1,1,8,.003,.002,.016,.002,.006,.002,.032,.002,.016,.002\n"
	"toy/m,64,4,2,128,256,1,1,16,.004,.002,.020,.002,.008,.002,.040,.004,.020,.002\n"
	"toy/m,64,4,2,128,256,1,2,1,.001,.001,.006,.001,.003,.001,.011,.001,.005,.001\n"
	"toy/m,64,4,2,128,256,1,2,4,.002,.001,.007,.001,.003,.001,.013,.001,.006,.001\n"
	"toy/m,64,4,2,128,256,1,2,8,.003,.002,.009,.002,.004,.002,.017,.002,.008,.002\n"
	"toy/m,64,4,2,128,256,1,2,16,.004,.002,.011,.002,.005,.002,.021,.002,.010,.002\n";

/* layer sums (ms) of the rows above, every operator but the embedding */
static const double toy_layer_ms[2][4] = { { .050, .060, .080, .100 }, { .030, .034, .048, .057 } };

static const char toy_engine[] =
	"# simbatch engine profile\n"
	"engine = toy-1\npolicy = chunked\nmax_batched_tokens = 16\nmax_seqs = 4\nprefix_caching = on\n"
	"async_scheduling = off\ncuda_graphs = on\ncudagraph_max_size = 512\nlaunch_us = 0.5\nkernels_per_layer = 10\n"
	"allreduce_gpu = toy\n"
	"custom_allreduce_max_bytes_tp2 = 512\ncustom_allreduce_max_bytes_tp4 = 0\ncustom_allreduce_max_bytes_tp8 = 0\n"
	"symm_mem_max_bytes_tp2 = 1024\nsymm_mem_max_bytes_tp4 = 0\nsymm_mem_max_bytes_tp8 = 0\n";

static int setup(void **state)
{
	(void)state;
	char err[512];
	snprintf(dir, sizeof dir, "/tmp/simbatch-engine-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path_model, sizeof path_model, "%s/toy.model", dir);
	snprintf(path_ops, sizeof path_ops, "%s/ops-toy.csv", dir);
	snprintf(path_nccl, sizeof path_nccl, "%s/allreduce-toy.csv", dir);
	snprintf(path_custom, sizeof path_custom, "%s/allreduce-custom-toy.csv", dir);
	snprintf(path_symm, sizeof path_symm, "%s/allreduce-symm-toy.csv", dir);
	snprintf(path_eng, sizeof path_eng, "%s/toy-1.engine", dir);
	put(path_model, "model toy\nsource test\ninput_len fixed:3\noutput_len fixed:2\n"
	                "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 bytes=2\n");
	put(path_ops, toy_ops);
	put(path_nccl, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,0.016\n2,2048,0.020\n");
	put(path_custom, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,128,0.002\n2,384,0.004\n");
	put(path_symm, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,512,0.006\n2,1024,0.008\n");
	put(path_eng, toy_engine);
	if (mdl_load_file(path_model, &toy, err, sizeof err) != 0)
		fail_msg("%s", err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mdl_free(toy);
	const char *paths[] = { path_model, path_ops, path_nccl, path_custom, path_symm, path_eng };
	for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
		unlink(paths[i]);
	rmdir(dir);
	return 0;
}

static struct hw_model *open_toy(uint32_t tp, struct eng_profile *e, const char *off, uint32_t max_seqs,
                                 uint32_t budget)
{
	struct hw_model *hw = NULL;
	char err[512];
	if (hw_open_tp(path_ops, toy, tp, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	if (e) {
		if (eng_profile_load(path_eng, e, err, sizeof err) != 0 || eng_profile_switch_off(e, off, err, sizeof err) != 0 ||
		    hw_set_engine(hw, e, max_seqs, budget, err, sizeof err) != 0)
			fail_msg("%s", err);
	}
	return hw;
}

static void load_vllm_015(struct eng_profile *e)
{
	char err[512];
	if (eng_profile_load("vllm-0.15", e, err, sizeof err) != 0)
		fail_msg("%s", err);
}

/* Llama-2-70B on gpu-h100 at tp GPUs, the engine's all-reduce term alone (padding and launches off) or none:
 * an iteration of one prompt chunk of t tokens (t x 8192 x 2 bytes an all-reduce), the difference in s. */
static double ar_delta_s(uint32_t tp, uint32_t t)
{
	struct mdl_model *m70;
	char err[512];
	struct eng_profile e;
	struct hw_model *plain, *hw;
	if (mdl_load("llama2-70b", &m70, err, sizeof err) != 0)
		fail_msg("%s", err);
	load_vllm_015(&e);
	if (eng_profile_switch_off(&e, "padding,launch", err, sizeof err) != 0 ||
	    hw_open_tp("gpu-h100", m70, tp, &plain, err, sizeof err) != 0 ||
	    hw_open_tp("gpu-h100", m70, tp, &hw, err, sizeof err) != 0 ||
	    hw_set_engine(hw, &e, 1024, 8192, err, sizeof err) != 0)
		fail_msg("%s", err);
	uint32_t tokens[1] = { t }, context[1] = { 0 };
	double d = hw->ops->iter_cost(hw, 1, tokens, context, 1, 0) - plain->ops->iter_cost(plain, 1, tokens, context, 1, 0);
	hw_close(hw);
	hw_close(plain);
	mdl_free(m70);
	return d;
}

/* vLLM v0.15 on H100 (engines/vllm-0.15.engine): custom all-reduce below min(its table, 8 MiB), symmetric
 * memory up to its table's size, NCCL above; each priced from its curve (calib/tables), NCCL's (Vidur's rows)
 * where the algorithm has none at that GPU count; by hand, two all-reduces a layer on 80 layers. */
static void test_allreduce_either_side_of_the_switches(void **state)
{
	(void)state;
	struct eng_profile e;
	load_vllm_015(&e);
	/* TP 2: 511 tokens (8 MiB less 16 KiB) go to custom all-reduce, 512 (8 MiB) to symmetric memory; neither
	 * has an H100 curve at 2 GPUs, so both stay at NCCL's: the iteration's price does not move */
	assert_int_equal(eng_allreduce_algo(&e, 2, 511.0 * 16384), ENG_AR_CUSTOM);
	assert_int_equal(eng_allreduce_algo(&e, 2, 512.0 * 16384), ENG_AR_SYMM);
	assert_int_equal(eng_allreduce_algo(&e, 2, 64 * MiB), ENG_AR_SYMM);
	assert_int_equal(eng_allreduce_algo(&e, 2, 64 * MiB + 16), ENG_AR_NCCL);
	assert_true(ar_delta_s(2, 511) == 0 && ar_delta_s(2, 512) == 0);
	/* TP 8: 15 tokens (240 KiB) custom (no curve at 8 GPUs: NCCL's), 16 tokens (256 KiB) symmetric memory, below
	 * its first row (0.5 MiB, 0.011 ms): 0.011 ms where Vidur's NCCL rows give 0.038 + 0.001 x 6144/8192 */
	assert_int_equal(eng_allreduce_algo(&e, 8, 15.0 * 16384), ENG_AR_CUSTOM);
	assert_int_equal(eng_allreduce_algo(&e, 8, 16.0 * 16384), ENG_AR_SYMM);
	assert_int_equal(eng_allreduce_algo(&e, 8, 64 * MiB + 16), ENG_AR_NCCL);
	assert_true(ar_delta_s(8, 15) == 0);
	assert_true(fabs(ar_delta_s(8, 16) - 2 * 80 * (0.011 - (0.038 + 0.001 * 6144 / 8192)) * 1e-3) < 1e-12);
	/* TP 4: a 2,048-token chunk of Llama-2-70B is 2048 x 8192 x 2 bytes = 32 MiB exactly, the symmetric-memory
	 * limit, which it may equal: past the curve's last row (3 MiB, 0.028 ms) along its last two rows' slope,
	 * 0.005 ms a MiB, 0.028 + 29 x 0.005 = 0.173 ms against Vidur's row at 32 MiB, 0.167; 2,049 tokens go to
	 * NCCL. And 32 tokens (512 KiB) are custom's, its two-stage row there (0.017 ms) against Vidur's rows,
	 * 0.042 + 0.002 x 6144/8192 */
	assert_true(2048.0 * 8192 * 2 == 32 * MiB);
	assert_int_equal(eng_allreduce_algo(&e, 4, 32 * MiB), ENG_AR_SYMM);
	assert_int_equal(eng_allreduce_algo(&e, 4, 2049.0 * 16384), ENG_AR_NCCL);
	assert_true(fabs(ar_delta_s(4, 2048) - 2 * 80 * (0.173 - 0.167) * 1e-3) < 1e-12);
	assert_true(ar_delta_s(4, 2049) == 0);
	assert_true(fabs(ar_delta_s(4, 32) - 2 * 80 * (0.017 - (0.042 + 0.002 * 6144 / 8192)) * 1e-3) < 1e-12);
	/* sizes vLLM's kernels refuse: custom needs a multiple of 16 bytes, symmetric memory of 4 */
	assert_int_equal(eng_allreduce_algo(&e, 4, 1004), ENG_AR_SYMM);
	assert_int_equal(eng_allreduce_algo(&e, 4, 1002), ENG_AR_NCCL);
}

/* The toy at TP 2, the all-reduce term alone: each iteration's price moves by two all-reduces a layer, the
 * algorithm's time less NCCL's (the toy engine: custom below 512 bytes, symmetric memory to 1024). */
static void test_allreduce_inside_an_iteration(void **state)
{
	(void)state;
	struct eng_profile e;
	struct hw_model *plain = open_toy(2, NULL, "", 0, 0), *hw = open_toy(2, &e, "padding,launch", 4, 16);
	struct { uint32_t tokens; double algo_ms, nccl_ms; } cases[] = {
		{ 3, 0.004, 0.010 + 0.006 * 128 / 768 },    /* 384 bytes: custom's last row; NCCL between 256 and 1024 */
		{ 4, 0.006, 0.010 + 0.006 * 256 / 768 },    /* 512 bytes: symmetric memory's first row */
		{ 8, 0.008, 0.016 },                       /* 1024 bytes: symmetric memory's limit, which it may equal */
		{ 9, 0.016 + 0.004 * 128 / 1024, 0.016 + 0.004 * 128 / 1024 },   /* 1152 bytes: NCCL */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint32_t tokens[1] = { cases[i].tokens }, context[1] = { 0 };
		double d = hw->ops->iter_cost(hw, 1, tokens, context, 1, 0) - plain->ops->iter_cost(plain, 1, tokens, context, 1, 0);
		assert_true(fabs(d - 2 * 2 * (cases[i].algo_ms - cases[i].nccl_ms) * 1e-3) < 1e-15);
	}
	hw_close(hw);
	hw_close(plain);
}

/* A decode step on the toy at TP 1 with CUDA graphs: max_seqs 4 and 16 tokens cap the captured sizes at
 * min(512, 2 x 4, 16) = 8 (1, 2, 4, 8). Three members run as 4 rows, five as 8; nine run eagerly. */
static void test_graph_decode_by_hand(void **state)
{
	(void)state;
	struct eng_profile e;
	struct hw_model *hw = open_toy(1, &e, "", 4, 16);
	assert_int_equal(eng_graph_cap(&e, 4, 16), 8);
	uint32_t ones[9] = { 1, 1, 1, 1, 1, 1, 1, 1, 1 }, ctx[9] = { 10, 20, 30, 40, 50, 60, 70, 80, 90 };
	/* the GPU's measured rates (as tests/test_gpu_measured.c works them out): the up projection, 64 x 256,
	 * is the largest GEMM (at 16 tokens) and the largest weight streamed at one token */
	double flops_s = 2.0 * 16 * 64 * 256 / 0.040e-3, stream_s = 2.0 * 64 * 256 / 0.020e-3;
	(void)flops_s;
	double kv_token = 2.0 * 2 * 16 * 2;        /* K and V of 2 KV heads x 16 x 2 bytes, a layer */
	/* 3 members padded to 4 rows: the layers and embedding at the row of 4 tokens, the LM head at the 3 that
	 * emit (the up projection a third of the way... from 1 to 4: 0.020 + 0.004 x 2/3 ms, x vocab / (2 ffn) = 1),
	 * the attention reading 60 cached tokens and writing 3 */
	double head3 = (0.020 + 0.004 * 2 / 3.0) * 1e-3;
	double want3 = 2 * toy_layer_ms[0][1] * 1e-3 + 0.002e-3 + head3 + (60.0 + 3) * kv_token * 2 / stream_s;
	double got3 = hw->ops->iter_cost(hw, 3, ones, ctx, 3, 0);
	assert_true(fabs(got3 - want3) < 1e-15);
	assert_true(fabs(hw->ops->decode_cost(hw, 3, 60) - want3) < 1e-15);   /* a decode run prices it alike */
	/* 5 members padded to 8 rows */
	double head5 = (0.024 + 0.008 * 1 / 4.0) * 1e-3;
	double want5 = 2 * toy_layer_ms[0][2] * 1e-3 + 0.003e-3 + head5 + (150.0 + 5) * kv_token * 2 / stream_s;
	assert_true(fabs(hw->ops->iter_cost(hw, 5, ones, ctx, 5, 0) - want5) < 1e-15);
	/* 9 members: past the largest graph, eager at 9 rows (1/8 of the way from 8 to 16); the launches, 2 layers
	 * x 10 kernels + the embedding and the head = 22 x 0.5 us, stay below the kernels' time */
	double head9 = (0.032 + 0.008 * 1 / 8.0) * 1e-3;
	double want9 = 2 * (toy_layer_ms[0][2] + (toy_layer_ms[0][3] - toy_layer_ms[0][2]) / 8) * 1e-3 +
	               (0.003 + 0.001 / 8) * 1e-3 + head9 + (450.0 + 9) * kv_token * 2 / stream_s;
	assert_true(fabs(hw->ops->iter_cost(hw, 9, ones, ctx, 9, 0) - want9) < 1e-15);
	assert_true(22 * 0.5e-6 < want9);
	hw_close(hw);

	/* a host slow enough to bind: 100 us a launch. The eager step waits for its 22 launches; a prompt chunk
	 * of 3 tokens in the piecewise graph of 4 rows for the 2 layers' attention and 3 pieces: 5 launches; a
	 * decode in its whole graph for 1 */
	e.launch_s = 100e-6;
	struct hw_model *slow = open_toy(1, NULL, "", 0, 0);
	char err[256];
	if (hw_set_engine(slow, &e, 4, 16, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_true(fabs(slow->ops->iter_cost(slow, 9, ones, ctx, 9, 0) - 22 * 100e-6) < 1e-15);
	uint32_t chunk[1] = { 3 }, none[1] = { 0 };
	assert_true(fabs(slow->ops->iter_cost(slow, 1, chunk, none, 1, 0) - 5 * 100e-6) < 1e-15);
	assert_true(fabs(slow->ops->iter_cost(slow, 3, ones, ctx, 3, 0) - (want3 > 100e-6 ? want3 : 100e-6)) < 1e-15);
	hw_close(slow);
}

/* Every pricing term off: the GPU's kernels alone, exactly, at TP 1 and 2, iterations and decode runs. */
static void test_terms_off_are_the_gpu_alone(void **state)
{
	(void)state;
	for (uint32_t tp = 1; tp <= 2; tp++) {
		struct eng_profile e;
		struct hw_model *plain = open_toy(tp, NULL, "", 0, 0), *hw = open_toy(tp, &e, "allreduce,padding,launch", 4, 16);
		uint32_t tokens[4] = { 1, 7, 1, 1 }, context[4] = { 33, 0, 5, 2 };
		for (uint32_t n = 1; n <= 4; n++)
			for (uint32_t pad = 0; pad <= 2; pad++)
				assert_true(hw->ops->iter_cost(hw, n, tokens, context, n, pad) ==
				            plain->ops->iter_cost(plain, n, tokens, context, n, pad));
		for (uint32_t n = 1; n <= 20; n++)
			assert_true(hw->ops->decode_cost(hw, n, 100 * n) == plain->ops->decode_cost(plain, n, 100 * n));
		hw_close(hw);
		hw_close(plain);
	}
}

static void test_graph_sizes_by_hand(void **state)
{
	(void)state;
	struct eng_profile e;
	load_vllm_015(&e);
	/* min(512, 2 x max_seqs, max_batched_tokens) */
	assert_int_equal(eng_graph_cap(&e, 128, 2048), 256);
	assert_int_equal(eng_graph_cap(&e, 1024, 8192), 512);
	assert_int_equal(eng_graph_cap(&e, 1024, 300), 300);
	/* 1, 2, 4, then by 8 to 248, then by 16 from 256 */
	const uint32_t in[] = { 1, 2, 3, 5, 9, 13, 247, 249, 256, 257, 300, 511 };
	const uint32_t out[] = { 1, 2, 4, 8, 16, 16, 248, 256, 256, 272, 304, 512 };
	for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
		assert_int_equal(eng_graph_pad(in[i], 512), out[i]);
	assert_int_equal(eng_graph_pad(257, 256), 0);    /* past the largest: eager */
	assert_int_equal(eng_graph_pad(193, 200), 200);  /* 2 x 100 sequences: 200 is on the list */
}

static void expect_refusal(const char *text, const char *want)
{
	char err[512];
	struct eng_profile e;
	put(path_eng, text);
	assert_int_equal(eng_profile_load(path_eng, &e, err, sizeof err), -1);
	if (!strstr(err, want))
		fail_msg("'%s' does not say '%s'", err, want);
}

static void test_bad_profiles(void **state)
{
	(void)state;
	char text[4096], want[256];
	const struct { const char *from, *to, *say; } cases[] = {
		{ "launch_us = 0.5", "launch_us = 0.5\nwarp_drive = on", ":11:warp_drive: unknown key" },
		{ "launch_us = 0.5", "launch_us =", ":10:launch_us: missing value" },
		{ "launch_us = 0.5", "launch_us = nan", ":10:launch_us: must be a time" },
		{ "launch_us = 0.5", "launch_us = -1", ":10:launch_us: must be a time" },
		{ "max_seqs = 4", "max_seqs = 0", ":5:max_seqs: must be a whole number" },
		{ "cuda_graphs = on", "cuda_graphs = sometimes", ":8:cuda_graphs: must be on or off" },
		{ "max_seqs = 4\n", "", ":max_seqs: missing key" },
		{ "policy = chunked", "policy = chunked\npolicy = continuous", ":4:policy: given twice" },
		{ "# simbatch engine profile", "engine = toy", ":1: not an engine profile" },
		{ "launch_us = 0.5", "launch_us", ":10: expected KEY = VALUE" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *at = strstr(toy_engine, cases[i].from);
		assert_non_null(at);
		snprintf(text, sizeof text, "%.*s%s%s", (int)(at - toy_engine), toy_engine, cases[i].to,
		         at + strlen(cases[i].from));
		snprintf(want, sizeof want, "%s%s", path_eng, cases[i].say);
		expect_refusal(text, want);
	}
	put(path_eng, toy_engine);
	/* a version that is not there: the ones that are */
	char err[512];
	struct eng_profile e;
	assert_int_equal(eng_profile_load("vllm-9.9", &e, err, sizeof err), -1);
	assert_non_null(strstr(err, "--engine=vllm-9.9: no such engine profile"));
	assert_non_null(strstr(err, "vllm-0.15"));
	assert_int_equal(eng_profile_switch_off(&e, "padding,warp", err, sizeof err), -1);
	assert_non_null(strstr(err, "unknown term 'warp'"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_allreduce_either_side_of_the_switches),
		cmocka_unit_test(test_allreduce_inside_an_iteration),
		cmocka_unit_test(test_graph_decode_by_hand),
		cmocka_unit_test(test_terms_off_are_the_gpu_alone),
		cmocka_unit_test(test_graph_sizes_by_hand),
		cmocka_unit_test(test_bad_profiles),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
