/* tests/test_gpu_measured.c: a measured GPU model (hwmodels/gpu_measured.h)
 * on a hand-written operator profile of three rows a TP degree, its
 * iterations priced by hand: interpolation between rows, both attention
 * terms, the LM head, and at TP 2 the all-reduces and the halved weights and
 * KV cache; extrapolation past the last row; and every kind of bad profile
 * and --tp named by file, line and column. */
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
#include "hwmodels/gpu_measured.h"
#include "hwmodels/llm_cost.h"
#include "hwmodels/kv_link.h"

/* A toy LLM: 2 layers, hidden 64 = 4 heads x 16, 2 KV heads, gated MLP 128, vocab 256. */
#define LAYERS 2
#define HIDDEN 64
#define HEADS 4
#define KV_HEADS 2
#define HEAD_DIM 16
#define FFN 128
#define VOCAB 256
#define MEM_BYTES 1e6        /* the profile's mem_gb = 0.001 */

/* The rows, ms: emb, input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
 * post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add. */
static const double tp1[3][OPP_COUNT] = {
	{ .001, .002, .010, .003, .004, .002, .020, .001, .008, .001 },   /* 1 token */
	{ .002, .002, .012, .003, .005, .002, .024, .002, .010, .001 },   /* 4 */
	{ .004, .004, .016, .005, .006, .004, .032, .002, .012, .002 },   /* 8 */
};
static const double tp2[3][OPP_COUNT] = {
	{ .001, .002, .006, .003, .003, .002, .011, .001, .005, .001 },
	{ .002, .002, .007, .003, .003, .002, .013, .002, .006, .001 },
	{ .004, .004, .009, .005, .004, .004, .017, .002, .007, .002 },
};
static const unsigned row_tokens[3] = { 1, 4, 8 };

static char dir[64];
static char model_path[128], ops_path[128], ar_path[128];
static struct mdl_model *model;

/* The profile's text: header, then tp 1 and tp 2 rows (row_filter lets a test damage one). */
static void profile_text(char *buf, size_t len, const char *header)
{
	size_t used = (size_t)snprintf(buf, len, "%s\n# gpu = toy\n# mem_gb = 0.001\n# source = test\n%s\n",
	                               OPP_KIND_LINE, header);
	for (int tp = 1; tp <= 2; tp++)
		for (int r = 0; r < 3; r++) {
			const double *ms = tp == 1 ? tp1[r] : tp2[r];
			used += (size_t)snprintf(buf + used, len - used, "toy/model,%d,%d,%d,%d,%d,1,%d,%u", HIDDEN, HEADS,
			                         KV_HEADS, FFN, VOCAB, tp, row_tokens[r]);
			for (int op = 0; op < OPP_COUNT; op++)
				used += (size_t)snprintf(buf + used, len - used, ",%g", ms[op]);
			used += (size_t)snprintf(buf + used, len - used, "\n");
		}
}

static const char header[] = "profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,input_layernorm,"
                             "attn_pre_proj,attn_rope,attn_post_proj,post_attention_layernorm,mlp_up_proj,mlp_act,"
                             "mlp_down_proj,add";

static int setup(void **state)
{
	(void)state;
	char err[512], text[8192];
	snprintf(dir, sizeof dir, "/tmp/simbatch-gpu-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(model_path, sizeof model_path, "%s/toy.model", dir);
	snprintf(ops_path, sizeof ops_path, "%s/ops-toy.csv", dir);
	snprintf(ar_path, sizeof ar_path, "%s/allreduce-toy.csv", dir);
	put(model_path, "model toy\nsource test\ninput_len fixed:3\noutput_len fixed:2\n"
	                "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 bytes=2\n");
	profile_text(text, sizeof text, header);
	put(ops_path, text);
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,0.016\n");
	if (mdl_load_file(model_path, &model, err, sizeof err) != 0)
		fail_msg("%s", err);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	mdl_free(model);
	unlink(model_path);
	unlink(ops_path);
	unlink(ar_path);
	rmdir(dir);
	return 0;
}

static struct hw_model *open_tp(uint32_t tp)
{
	struct hw_model *hw = NULL;
	char err[512];
	if (hw_open_tp(ops_path, model, tp, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	return hw;
}

static double sum_layer(const double *row)
{
	double s = 0;
	for (int op = OPP_INPUT_NORM; op < OPP_COUNT; op++)
		s += row[op];
	return s * 1e-3;
}

/* The GPU's measured rates, worked out from the tp 1 rows: the largest GEMM
 * by FLOPs is the MLP up projection (64 x 256) at 8 tokens, the largest
 * weight streamed at one token is the same projection's. */
#define GEMM_FLOPS_S (2.0 * 8 * HIDDEN * 2 * FFN / (tp1[2][OPP_MLP_UP] * 1e-3))
#define STREAM_BYTES_S (2.0 * HIDDEN * 2 * FFN / (tp1[0][OPP_MLP_UP] * 1e-3))

static void test_iteration_by_hand(void **state)
{
	(void)state;
	struct hw_model *hw = open_tp(1);
	const struct gpu_measured_info *info = gpu_measured_info(hw);
	assert_non_null(info);
	assert_true(fabs(info->profile->gemm_flops_s / GEMM_FLOPS_S - 1) < 1e-12);
	assert_true(fabs(info->profile->stream_bytes_s / STREAM_BYTES_S - 1) < 1e-12);

	/* a prefill of 3 tokens on an empty cache and a decode on 10 cached ones: T = 4, a measured row */
	uint32_t tokens[2] = { 3, 1 }, context[2] = { 0, 10 };
	struct gpu_iter_parts p;
	gpu_measured_iter_parts(hw, 2, tokens, context, 2, 0, &p);
	assert_true(fabs(p.layers_s - LAYERS * sum_layer(tp1[1])) < 1e-15);
	assert_true(fabs(p.emb_s - tp1[1][OPP_EMB] * 1e-3) < 1e-15);
	assert_true(p.allreduce_s == 0);
	/* LM head: the up projection at 2 rows (a third of the way from 1 to 4), times vocab / (2 ffn) = 1 */
	double up2 = (tp1[0][OPP_MLP_UP] + (tp1[1][OPP_MLP_UP] - tp1[0][OPP_MLP_UP]) / 3) * 1e-3;
	assert_true(fabs(p.head_s - up2 * VOCAB / (2.0 * FFN)) < 1e-15);
	/* prefill: 3 x 0 + 3 x 4 / 2 = 6 query-key pairs of 4 x heads x head_dim FLOPs, each layer */
	assert_true(fabs(p.prefill_attn_s - 6.0 * 4 * HEADS * HEAD_DIM * LAYERS / GEMM_FLOPS_S) < 1e-18);
	/* decode: 10 cached tokens read and 4 new ones written, 2 KV heads x 16 x (K, V) x 2 bytes a layer */
	assert_true(fabs(p.decode_attn_s - 14.0 * 2 * KV_HEADS * HEAD_DIM * 2 * LAYERS / STREAM_BYTES_S) < 1e-18);
	assert_false(p.extrapolated);
	double total = p.layers_s + p.emb_s + p.head_s + p.prefill_attn_s + p.decode_attn_s;
	assert_true(fabs(hw->ops->iter_cost(hw, 2, tokens, context, 2, 0) - total) < 1e-18);

	/* 6 tokens: halfway between the rows at 4 and 8 */
	uint32_t six[1] = { 6 }, none[1] = { 0 };
	gpu_measured_iter_parts(hw, 1, six, none, 1, 0, &p);
	assert_true(fabs(p.layers_s - LAYERS * (sum_layer(tp1[1]) + sum_layer(tp1[2])) / 2) < 1e-15);
	assert_true(fabs(p.emb_s - (tp1[1][OPP_EMB] + tp1[2][OPP_EMB]) / 2 * 1e-3) < 1e-15);

	/* padding runs through the layers but has no attention */
	gpu_measured_iter_parts(hw, 1, six, none, 1, 2, &p);
	assert_true(fabs(p.layers_s - LAYERS * sum_layer(tp1[2])) < 1e-15);
	assert_true(fabs(p.prefill_attn_s - 21.0 * 4 * HEADS * HEAD_DIM * LAYERS / GEMM_FLOPS_S) < 1e-18);

	/* 12 tokens: past the last row, along the slope of the last two, and said so */
	uint32_t twelve[1] = { 12 };
	gpu_measured_iter_parts(hw, 1, twelve, none, 1, 0, &p);
	assert_true(p.extrapolated);
	double l4 = sum_layer(tp1[1]), l8 = sum_layer(tp1[2]);
	assert_true(fabs(p.layers_s - LAYERS * (l8 + (l8 - l4))) < 1e-15);

	/* memory: 90% of the GPU's, less the weights, in blocks of 16 tokens */
	struct llm_cost *c;
	char err[256];
	assert_int_equal(llm_cost_create(hw, model, 64, &c, err, sizeof err), 0);
	double weights = (double)mdl_llm_weight_bytes(&model->llm), kv_token = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2;
	assert_int_equal(llm_cost_kv_blocks(c, 16, err, sizeof err),
	                 (uint64_t)floor((0.9 * MEM_BYTES - weights) / (kv_token * 16)));
	llm_cost_destroy(c);
	hw_close(hw);
}

static void test_tensor_parallel_by_hand(void **state)
{
	(void)state;
	struct hw_model *hw = open_tp(2);
	uint32_t tokens[2] = { 3, 1 }, context[2] = { 0, 10 };
	struct gpu_iter_parts p;
	gpu_measured_iter_parts(hw, 2, tokens, context, 2, 0, &p);
	assert_true(fabs(p.layers_s - LAYERS * sum_layer(tp2[1])) < 1e-15);
	/* two all-reduces a layer of 4 tokens x 64 x 2 bytes = 512 bytes: a third of the way from 256 to 1024 */
	double ar = (0.010 + (0.016 - 0.010) * (512.0 - 256) / (1024 - 256)) * 1e-3;
	assert_true(fabs(p.allreduce_s - 2 * LAYERS * ar) < 1e-15);
	/* each GPU runs half the heads: half the attention's FLOPs and bytes */
	assert_true(fabs(p.prefill_attn_s - 6.0 * 4 * (HEADS / 2) * HEAD_DIM * LAYERS / GEMM_FLOPS_S) < 1e-18);
	assert_true(fabs(p.decode_attn_s - 14.0 * 2 * (KV_HEADS / 2) * HEAD_DIM * 2 * LAYERS / STREAM_BYTES_S) < 1e-18);
	/* the weights are split over two GPUs of 90% usable memory each, and so is the KV cache */
	struct llm_cost *c;
	char err[256];
	assert_int_equal(llm_cost_create(hw, model, 64, &c, err, sizeof err), 0);
	double weights = (double)mdl_llm_weight_bytes(&model->llm), kv_token = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2;
	uint64_t per_gpu = (uint64_t)floor((0.9 * MEM_BYTES - weights / 2) / (kv_token / 2 * 16));
	assert_int_equal(llm_cost_kv_blocks(c, 16, err, sizeof err), per_gpu);
	llm_cost_destroy(c);
	hw_close(hw);
}

/* Opens a damaged copy of the profile; the error must hold every needle. */
static void expect_profile_error(const char *text, uint32_t tp, const char *needle1, const char *needle2)
{
	char path[160], err[1024] = "";
	struct hw_model *hw = NULL;
	snprintf(path, sizeof path, "%s/bad.csv", dir);
	put(path, text);
	assert_int_equal(hw_open_tp(path, model, tp, &hw, err, sizeof err), -1);
	assert_null(hw);
	if (!strstr(err, needle1) || (needle2 && !strstr(err, needle2)))
		fail_msg("'%s' lacks '%s' / '%s'", err, needle1, needle2 ? needle2 : "");
	unlink(path);
}

/* The good profile with the first (or every) occurrence of from replaced by to. */
static void damaged(char *buf, size_t len, const char *from, int every, const char *to)
{
	char good[8192];
	profile_text(good, sizeof good, header);
	const char *at = good;
	size_t used = 0;
	buf[0] = '\0';
	for (const char *hit; (hit = strstr(at, from)) != NULL; at = hit + strlen(from)) {
		used += (size_t)snprintf(buf + used, len - used, "%.*s%s", (int)(hit - at), at, to);
		if (!every) {
			at = hit + strlen(from);
			break;
		}
	}
	snprintf(buf + used, len - used, "%s", at);
}

static void test_bad_profiles(void **state)
{
	(void)state;
	char text[8192], hdr[512];
	/* a missing column */
	snprintf(hdr, sizeof hdr, "%.*s", (int)(strlen(header) - 4), header);   /* no ",add" */
	profile_text(text, sizeof text, hdr);
	expect_profile_error(text, 1, "bad.csv:5: missing column 'add'", NULL);
	/* token counts out of order: the tp 1 rows 1, 4, 8 become 1, 4, 2 */
	damaged(text, sizeof text, "1,1,8,", 0, "1,1,2,");
	expect_profile_error(text, 1, "bad.csv:8:9 (tokens): token counts must increase", NULL);
	/* a NaN, a negative and a zero time */
	damaged(text, sizeof text, ",0.024,", 0, ",nan,");
	expect_profile_error(text, 1, "bad.csv:7:16 (mlp_up_proj): must be a positive, finite time", NULL);
	damaged(text, sizeof text, ",0.024,", 0, ",-0.024,");
	expect_profile_error(text, 1, "bad.csv:7:16 (mlp_up_proj)", NULL);
	damaged(text, sizeof text, ",0.024,", 0, ",0,");
	expect_profile_error(text, 1, "bad.csv:7:16 (mlp_up_proj)", NULL);
	/* a TP degree it does not hold */
	profile_text(text, sizeof text, header);
	expect_profile_error(text, 4, "holds toy's shape at tp 1, 2, not at --tp=4", NULL);
	/* shapes that do not match the model file: another MLP width */
	damaged(text, sizeof text, ",128,256,", 1, ",129,256,");
	expect_profile_error(text, 1, "holds no profile of toy's shape", "4/2/128");
	/* --tp that is not a power of two, does not divide the heads, or has no all-reduce */
	profile_text(text, sizeof text, header);
	expect_profile_error(text, 3, "--tp=3: tensor parallelism must be 1, 2, 4 or 8", NULL);
	expect_profile_error(text, 8, "--tp=8 does not divide toy's 4 attention heads", NULL);
	unlink(ar_path);
	char err[512];
	struct hw_model *hw = NULL;
	assert_int_equal(hw_open_tp(ops_path, model, 2, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "--tp=2 on"));
	assert_non_null(strstr(err, "needs a measured all-reduce"));
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,1024,0.016\n2,256,0.010\n");
	assert_int_equal(hw_open_tp(ops_path, model, 2, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "allreduce-toy.csv:4:2 (bytes): rows must be sorted"));
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,0.016\n");
}

/* Times bounded as a task's (HW_MAX_TASK_S: 1e9 ms a row, 1e6 s an
 * iteration) and TP degrees a measured GPU runs (issue 47, item 2). */
static void test_bounded_profiles(void **state)
{
	(void)state;
	char text[8192], err[512];
	damaged(text, sizeof text, ",0.024,", 0, ",1e300,");
	expect_profile_error(text, 1, "bad.csv:7:16 (mlp_up_proj): is more than the 1e+09 ms", NULL);
	damaged(text, sizeof text, ",0.024,", 0, ",1000000001,");
	expect_profile_error(text, 1, "bad.csv:7:16 (mlp_up_proj): is more than the 1e+09 ms", NULL);
	damaged(text, sizeof text, ",1,2,1,", 0, ",1,3,1,");          /* the first tp 2 row at tp 3 */
	expect_profile_error(text, 1, "bad.csv:9:8 (tp): must be 1, 2, 4 or 8 GPUs", "'3'");
	damaged(text, sizeof text, ",1,2,", 1, ",1,16,");             /* every tp 2 row at 16 */
	expect_profile_error(text, 1, "bad.csv:9:8 (tp): must be 1, 2, 4 or 8 GPUs", "'16'");
	/* a row at the bound loads; an iteration through it (2 layers of 1e6 s at 4 tokens) is refused */
	damaged(text, sizeof text, ",0.024,", 0, ",1e9,");
	char path[160];
	snprintf(path, sizeof path, "%s/edge.csv", dir);
	put(path, text);
	struct hw_model *hw = NULL;
	struct llm_cost *c = NULL;
	if (hw_open_tp(path, model, 1, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(llm_cost_create(hw, model, 64, &c, err, sizeof err), 0);
	uint32_t tokens = 4, context = 0;
	assert_int_equal(llm_cost_iter_ns(c, 1, &tokens, &context, 1, 0, err, sizeof err), -1);
	if (!strstr(err, "at 2e+06 s: more than the 1e+06 s a task may take"))
		fail_msg("%s", err);
	tokens = 1;                     /* the 1-token row is the test's own: a few hundredths of a ms */
	int64_t ns = llm_cost_iter_ns(c, 1, &tokens, &context, 1, 0, err, sizeof err);
	assert_true(ns > 0 && ns < 1000000);
	llm_cost_destroy(c);
	hw_close(hw);
	unlink(path);
	/* all-reduce rows: a GPU count no TP degree has, a time past the bound */
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n3,256,0.010\n3,1024,0.016\n");
	assert_int_equal(hw_open_tp(ops_path, model, 2, &hw, err, sizeof err), -1);
	if (!strstr(err, "allreduce-toy.csv:3:1 (gpus): must be 2, 4 or 8 GPUs"))
		fail_msg("%s", err);
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,1e300\n");
	assert_int_equal(hw_open_tp(ops_path, model, 2, &hw, err, sizeof err), -1);
	if (!strstr(err, "allreduce-toy.csv:4:3 (ms): must be a positive time in ms up to 1e+09"))
		fail_msg("%s", err);
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,0.016\n");
}

static void test_weights_that_do_not_fit(void **state)
{
	(void)state;
	char path[160], text[8192], err[512];
	struct hw_model *hw = NULL;
	damaged(text, sizeof text, "mem_gb = 0.001", 0, "mem_gb = 0.0002");   /* 180 kB usable: 213 kB of weights need 2 GPUs */
	snprintf(path, sizeof path, "%s/ops-small.csv", dir);
	put(path, text);
	assert_int_equal(hw_open_tp(path, model, 1, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "do not fit on 1 toy GPU"));
	assert_non_null(strstr(err, "it needs --tp=2 or more"));
	unlink(path);
}

/* # exclude prices the named terms at 0, for ablation studies; an unknown term is refused. */
static void test_exclude(void **state)
{
	(void)state;
	char path[160], text[8192], err[512];
	struct hw_model *hw = NULL;
	damaged(text, sizeof text, "# source = test", 0, "# exclude = mlp_act, attention_decode lm_head");
	snprintf(path, sizeof path, "%s/ops-ablate.csv", dir);
	put(path, text);
	if (hw_open_tp(path, model, 1, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	uint32_t tokens[2] = { 3, 1 }, context[2] = { 0, 10 };
	struct gpu_iter_parts p;
	gpu_measured_iter_parts(hw, 2, tokens, context, 2, 0, &p);
	assert_true(fabs(p.layers_s - LAYERS * (sum_layer(tp1[1]) - tp1[1][OPP_MLP_ACT] * 1e-3)) < 1e-15);
	assert_true(p.decode_attn_s == 0 && p.head_s == 0 && p.prefill_attn_s > 0);
	hw_close(hw);
	damaged(text, sizeof text, "# source = test", 0, "# exclude = mlp_act, attention");
	put(path, text);
	assert_int_equal(hw_open_tp(path, model, 1, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "ops-ablate.csv:4: exclude: unknown term 'attention'"));
	unlink(path);
}

/* A KV link (hwmodels/kv_link.h) on a hand-written send/recv profile: one
 * node 1 MB in 0.01 ms and 3 MB in 0.02 (between: linear); two nodes 1 MB in
 * 0.1 ms, 2 MB in 0.2, 3 MB in 0.25 (their median rate, 10 MB/ms of 10, 10, 12, carries
 * on past the largest: 5 MB takes 0.25 + 2 / 10 ms); a modelled link is
 * its latency plus bytes over its bandwidth; bad links named. */
static void test_kv_link(void **state)
{
	(void)state;
	char path[160], err[512];
	snprintf(path, sizeof path, "%s/sendrecv-toy.csv", dir);
	put(path, OPP_SENDRECV_KIND_LINE "\nnodes,bytes,ms\n1,1000000,0.01\n1,3000000,0.02\n"
	          "2,1000000,0.1\n2,2000000,0.2\n2,3000000,0.25\n");
	struct kv_link *l = NULL;
	int ex = 0;
	assert_int_equal(kv_link_open("same-node", dir, "toy", &l, err, sizeof err), 0);
	assert_true(fabs(kv_link_seconds(l, 2e6, &ex) - 0.015e-3) < 1e-15 && !ex);
	kv_link_close(l);
	assert_int_equal(kv_link_open("cross-node", dir, "toy", &l, err, sizeof err), 0);
	assert_true(fabs(kv_link_seconds(l, 1.5e6, &ex) - 0.15e-3) < 1e-15 && !ex);
	assert_true(fabs(kv_link_seconds(l, 5e6, &ex) - (0.25 + 2.0 / 10) * 1e-3) < 1e-15 && ex);
	kv_link_close(l);
	assert_int_equal(kv_link_open("model:50:2", dir, NULL, &l, err, sizeof err), 0);
	assert_true(fabs(kv_link_seconds(l, 1e8, &ex) - (2e-6 + 1e8 / 50e9)) < 1e-15);
	kv_link_close(l);
	assert_int_equal(kv_link_open("model:0:2", dir, NULL, &l, err, sizeof err), -1);
	assert_non_null(strstr(err, "positive number of GB/s"));
	assert_int_equal(kv_link_open("model:5:-1", dir, NULL, &l, err, sizeof err), -1);
	assert_non_null(strstr(err, "latency must be 0 us or more"));
	assert_int_equal(kv_link_open("cross-node", dir, "other", &l, err, sizeof err), -1);
	assert_non_null(strstr(err, "sendrecv-other.csv does not exist"));
	put(path, OPP_SENDRECV_KIND_LINE "\nnodes,bytes,ms\n3,1000000,0.01\n");
	assert_int_equal(kv_link_open("cross-node", dir, "toy", &l, err, sizeof err), -1);
	assert_non_null(strstr(err, "sendrecv-toy.csv:3:1 (nodes): must be 1 (one node) or 2 (two nodes), not '3'"));
	put(path, OPP_SENDRECV_KIND_LINE "\nnodes,bytes,ms\n1,1000000,0.01\n");
	assert_int_equal(kv_link_open("cross-node", dir, "toy", &l, err, sizeof err), -1);
	assert_non_null(strstr(err, "holds no send/recv across two nodes"));
	assert_null(l);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_iteration_by_hand),
		cmocka_unit_test(test_tensor_parallel_by_hand),
		cmocka_unit_test(test_bad_profiles),
		cmocka_unit_test(test_bounded_profiles),
		cmocka_unit_test(test_weights_that_do_not_fit),
		cmocka_unit_test(test_exclude),
		cmocka_unit_test(test_kv_link),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
