/* tests/test_moe.c: mixtures of experts (issue 50).
 *  - Routing: experts reached and tokens per expert at B = 1, 8 and 64
 *    tokens against E (1 - (1 - k/E)^B) and B k / E, and against a second,
 *    brute-force draw (each token a partial Fisher-Yates shuffle), for
 *    Mixtral's 8 experts top 2 and Qwen3's 128 top 8, both of the draw's
 *    algorithms; a skewed routing file's draws; bad routing files.
 *  - Pricing: a toy MoE model's iteration on a hand-written operator
 *    profile, at TP 2 and with EP 2, summed by hand from the profile's rows
 *    (element-wise operators, all-reduce, attention, embedding) and the
 *    GEMM predictor's answer at each GEMM's shape and M (the predictor is
 *    checked against measured rows in test_gemm_predict), the experts' two
 *    fused kernels each at least the predictor's floor;
 *  - the model file's MoE lines and data types, good and bad. */
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
#include <gsl/gsl_rng.h>
#include "hwmodels/gpu_measured.h"
#include "hwmodels/gemm_predict.h"
#include "hwmodels/moe_route.h"
#include "util/rng.h"

static char dir[64];

static void path_in(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/simbatch-moe-XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* The brute force: each token a partial Fisher-Yates shuffle of the experts, its first k. */
static void brute_draw(gsl_rng *gen, uint32_t e, uint32_t k, uint32_t b, uint32_t *counts)
{
	uint32_t perm[128];
	memset(counts, 0, e * sizeof *counts);
	for (uint32_t t = 0; t < b; t++) {
		for (uint32_t i = 0; i < e; i++)
			perm[i] = i;
		for (uint32_t j = 0; j < k; j++) {
			uint32_t r = j + (uint32_t)gsl_rng_uniform_int(gen, e - j), tmp = perm[j];
			perm[j] = perm[r];
			perm[r] = tmp;
			counts[perm[j]]++;
		}
	}
}

/* Mean experts reached and mean and variance of expert 0's tokens over draws layers of b tokens. */
static void reach(const struct moe_route *r, int brute, uint32_t b, uint32_t draws, double *reached, double *mean0,
                  double *var0)
{
	gsl_rng *gen = rng_create(7 + brute, RNG_ROUTING);
	uint32_t counts[128], scratch[256];
	double sum = 0, s0 = 0, ss0 = 0;
	for (uint32_t d = 0; d < draws; d++) {
		if (brute)
			brute_draw(gen, r->experts, r->top_k, b, counts);
		else
			moe_route_draw(r, gen, b, counts, scratch);
		uint32_t got = 0, total = 0;
		for (uint32_t x = 0; x < r->experts; x++) {
			got += counts[x] > 0;
			total += counts[x];
			assert_true(counts[x] <= b);      /* a token picks an expert at most once */
		}
		assert_int_equal(total, b * r->top_k);
		sum += got;
		s0 += counts[0];
		ss0 += (double)counts[0] * counts[0];
	}
	*reached = sum / draws;
	*mean0 = s0 / draws;
	*var0 = ss0 / draws - *mean0 * *mean0;
	gsl_rng_free(gen);
}

static void check_reach(uint32_t e, uint32_t k)
{
	struct moe_route *r;
	char err[256];
	assert_int_equal(moe_route_uniform(e, k, &r, err, sizeof err), 0);
	const uint32_t batches[] = { 1, 8, 64, 512 };
	for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
		uint32_t b = batches[i], draws = b >= 512 ? 2000 : 20000;
		double q = 1 - (double)k / e, expect = e * (1 - pow(q, b));
		/* the variance of the experts reached, each missed with probability q^b, two missed q2^b */
		double q2 = (double)(e - k) * (e - k - 1) / ((double)e * (e - 1)), pb = pow(q, b);
		double var = e * pb * (1 - pb) + (double)e * (e - 1) * (pow(q2, b) - pb * pb);
		double tol = 5 * sqrt(var / draws) + 1e-9;
		assert_true(fabs(moe_route_expected_reached(e, k, b) - expect) < 1e-12);
		for (int brute = 0; brute <= 1; brute++) {
			double got, mean0, var0;
			reach(r, brute, b, draws, &got, &mean0, &var0);
			/* expert 0's tokens: Binomial(b, k/E) */
			double p = (double)k / e, m = b * p, v = b * p * (1 - p);
			if (fabs(got - expect) > tol || fabs(mean0 - m) > 5 * sqrt(v / draws) + 1e-9 ||
			    fabs(var0 / v - 1) > 0.1 + (v == 0))
				fail_msg("E=%u k=%u B=%u %s: reached %.4f (formula %.4f +- %.4f), expert 0 mean %.4f var %.4f "
				         "(binomial %.4f, %.4f)", e, k, b, brute ? "brute force" : "moe_route", got, expect, tol,
				         mean0, var0, m, v);
		}
	}
	moe_route_free(r);
}

static void test_experts_reached(void **state)
{
	(void)state;
	check_reach(8, 2);      /* Mixtral: B = 1, 8 token by token; 64, 512 expert by expert */
	check_reach(128, 8);    /* Qwen3: B up to 64 token by token; 512 expert by expert */
}

/* A draw is a pure function of the generator's seed. */
static void test_draw_reproducible(void **state)
{
	(void)state;
	struct moe_route *r;
	char err[256];
	uint32_t a[128], b[128], scratch[256];
	assert_int_equal(moe_route_uniform(128, 8, &r, err, sizeof err), 0);
	gsl_rng *g1 = rng_create(3, RNG_ROUTING), *g2 = rng_create(3, RNG_ROUTING);
	for (uint32_t t = 1; t < 2000; t += 97) {
		rng_reseed_keyed(g1, 11, RNG_ROUTING, t);
		rng_reseed_keyed(g2, 11, RNG_ROUTING, t);
		moe_route_draw(r, g1, t, a, scratch);
		moe_route_draw(r, g2, t, b, scratch);
		assert_memory_equal(a, b, sizeof a);
	}
	gsl_rng_free(g1);
	gsl_rng_free(g2);
	moe_route_free(r);
}

static void test_skew_file(void **state)
{
	(void)state;
	char path[128], err[512];
	struct moe_route *r = NULL;
	path_in(path, sizeof path, "skew.csv");
	/* half the picks on each of experts 2 and 5: every token picks both */
	put(path, MOE_ROUTE_KIND_LINE "\n# source = test\nexpert,share\n0,0\n1,0\n2,0.5\n3,0\n4,0\n5,0.5\n6,0\n7,0\n");
	if (moe_route_load(path, 8, 2, &r, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_string_equal(r->source, "test");
	gsl_rng *gen = rng_create(1, RNG_ROUTING);
	uint32_t counts[8], scratch[16];
	moe_route_draw(r, gen, 64, counts, scratch);
	const uint32_t want[8] = { 0, 0, 64, 0, 0, 64, 0, 0 };
	assert_memory_equal(counts, want, sizeof want);
	moe_route_free(r);
	/* skewed 0.4 / 0.2 x 3, top 1: expert 0's share of 20000 tokens within 5 sigma of 0.4 */
	put(path, MOE_ROUTE_KIND_LINE "\n# source = test\nexpert,share\n0,0.4\n1,0.2\n2,0.2\n3,0.2\n");
	if (moe_route_load(path, 4, 1, &r, err, sizeof err) != 0)
		fail_msg("%s", err);
	moe_route_draw(r, gen, 20000, counts, scratch);
	assert_true(fabs(counts[0] - 8000.0) < 5 * sqrt(20000 * 0.4 * 0.6));
	moe_route_free(r);
	gsl_rng_free(gen);

	static const struct { const char *text; uint32_t experts, top_k; const char *says; } bad[] = {
		{ "# simbatch other\n", 2, 1, "not a routing-skew file" },
		{ MOE_ROUTE_KIND_LINE "\nexpert,share\n0,1\n1,0\n", 2, 1, "needs '# source = ...'" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,weight\n", 2, 1, "expected the header 'expert,share'" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,0.5\n1,0.4\n", 2, 1, "sum to 0.9, not 1" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,1.5\n1,-0.5\n", 2, 1, "not a finite number at least 0" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,nan\n1,1\n", 2, 1, "not a finite number" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,1\n", 2, 1, "1 expert rows, and the model has 2" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,0.5\n1,0.5\n2,0\n", 2, 1, "more rows than" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n1,0.5\n0,0.5\n", 2, 1, "out of order" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0,1\n1,0\n", 2, 2, "1 experts have a positive share" },
		{ MOE_ROUTE_KIND_LINE "\n# source = t\nexpert,share\n0 1\n", 2, 1, "expected 'expert,share'" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put(path, bad[i].text);
		r = NULL;
		assert_int_equal(moe_route_load(path, bad[i].experts, bad[i].top_k, &r, err, sizeof err), -1);
		assert_null(r);
		if (!strstr(err, bad[i].says) || !strstr(err, path))
			fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].says);
	}
}

/* The toy operator profile of test_gpu_measured (2 layers' shape hidden 64, 4 heads of 16, 2 KV heads, gated MLP
 * 128), rows at tp 1 and 2; ms: emb, input_layernorm, attn_pre_proj, attn_rope, attn_post_proj,
 * post_attention_layernorm, mlp_up_proj, mlp_act, mlp_down_proj, add. */
static const double tp1[3][OPP_COUNT] = {
	{ .001, .002, .010, .003, .004, .002, .020, .001, .008, .001 },
	{ .002, .002, .012, .003, .005, .002, .024, .002, .010, .001 },
	{ .004, .004, .016, .005, .006, .004, .032, .002, .012, .002 },
};
static const double tp2[3][OPP_COUNT] = {
	{ .001, .002, .006, .003, .003, .002, .011, .001, .005, .001 },
	{ .002, .002, .007, .003, .003, .002, .013, .002, .006, .001 },
	{ .004, .004, .009, .005, .004, .004, .017, .002, .007, .002 },
};
static const unsigned row_tokens[3] = { 1, 4, 8 };

static void write_profile(char *ops_path, size_t len)
{
	char text[8192], ar_path[128];
	path_in(ops_path, len, "ops-toy.csv");
	path_in(ar_path, sizeof ar_path, "allreduce-toy.csv");
	size_t used = (size_t)snprintf(text, sizeof text, "%s\n# gpu = toy\n# mem_gb = 0.01\n# source = test\n"
	                               "profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,input_layernorm,"
	                               "attn_pre_proj,attn_rope,attn_post_proj,post_attention_layernorm,mlp_up_proj,"
	                               "mlp_act,mlp_down_proj,add\n", OPP_KIND_LINE);
	for (int tp = 1; tp <= 2; tp++)
		for (int r = 0; r < 3; r++) {
			const double *ms = tp == 1 ? tp1[r] : tp2[r];
			used += (size_t)snprintf(text + used, sizeof text - used, "toy/model,64,4,2,128,256,1,%d,%u", tp,
			                         row_tokens[r]);
			for (int op = 0; op < OPP_COUNT; op++)
				used += (size_t)snprintf(text + used, sizeof text - used, ",%g", ms[op]);
			used += (size_t)snprintf(text + used, sizeof text - used, "\n");
		}
	put(ops_path, text);
	put(ar_path, OPP_ALLREDUCE_KIND_LINE "\ngpus,bytes,ms\n2,256,0.010\n2,1024,0.016\n");
}

static struct mdl_model *load_moe(const char *moe_line)
{
	char path[128], text[512], err[512];
	struct mdl_model *m = NULL;
	path_in(path, sizeof path, "toy-moe.model");
	snprintf(text, sizeof text, "model toy-moe\nsource test\ninput_len fixed:4\noutput_len fixed:2\n"
	         "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 dtype=bf16\n%s\n",
	         moe_line);
	put(path, text);
	if (mdl_load_file(path, &m, err, sizeof err) != 0)
		fail_msg("%s", err);
	return m;
}

#define GEMM_FLOPS_S (2.0 * 8 * 64 * 2 * 128 / (tp1[2][OPP_MLP_UP] * 1e-3))
#define STREAM_BYTES_S (2.0 * 64 * 2 * 128 / (tp1[0][OPP_MLP_UP] * 1e-3))
#define ROW4(op) (tp2[1][op] * 1e-3)    /* tp 2, 4 tokens */
#define ROW8(op) (tp2[2][op] * 1e-3)    /* tp 2, 8 tokens */

/* A prefill of 4 tokens on an empty cache at tp 2, its one token emitted: the parts every MoE layer shares. */
static double shared_parts(const struct gemmp *pred, double *rest)
{
	double g = gemmp_seconds(pred, 4, 64, 64, NULL) + gemmp_seconds(pred, 4, 32, 64, NULL);   /* QKV, output */
	/* norms, add and rotary at the toy's own width: its rows at 4 tokens */
	double fixed = ROW4(OPP_INPUT_NORM) + ROW4(OPP_POST_NORM) + ROW4(OPP_ADD) + ROW4(OPP_ROPE) + g;
	double router = gemmp_seconds(pred, 4, 64, 2, NULL);
	/* per iteration: 2 all-reduces a layer of 4 x 64 x 2 = 512 bytes (between the rows 256 and 1024), the
	 * prefill's 10 query-key pairs at 4 x 2 heads x 16 FLOPs, the 4 new tokens' keys and values written (one KV
	 * head of 16 a GPU, 2 bytes), the embedding's row, the LM head over 128 of the 256 words */
	double ar = (0.010 + 0.006 * (512.0 - 256) / (1024 - 256)) * 1e-3;
	*rest = 2 * 2 * ar + 10 * 128 / GEMM_FLOPS_S * 2 + 4 * (2.0 * 16 * 2) / STREAM_BYTES_S * 2 + ROW4(OPP_EMB) +
	        gemmp_seconds(pred, 1, 64, 128, NULL);
	return fixed + router;
}

/* The two fused-MoE kernels over experts whose unfloored GEMMs sum to up and down: each at least the floor. */
static double kernels(const struct gemmp *pred, double up, double down)
{
	double floor = gemmp_floor_seconds(pred);
	return (up > floor ? up : floor) + (down > floor ? down : floor);
}

static double price(struct hw_model *hw)
{
	uint32_t tokens[1] = { 4 }, context[1] = { 0 };
	return hw->ops->iter_cost(hw, 1, tokens, context, 1, 0);
}

static struct hw_model *open_moe(const char *ops_path, struct mdl_model *m, uint32_t ep, const char *routing)
{
	struct hw_model *hw = NULL;
	char err[512];
	if (hw_open_tp(ops_path, m, 2, &hw, err, sizeof err) != 0 || hw_moe_setup(hw, ep, routing, 1, err, sizeof err))
		fail_msg("%s", err);
	return hw;
}

/* hw's price of the 4-token prefill against 2 layers of (layer + experts) and the iteration's rest, by hand. */
static void expect_price(struct hw_model *hw, double layer, double experts, double rest, const char *what)
{
	double want = 2 * (layer + experts) + rest, got = price(hw);
	if (fabs(got / want - 1) > 1e-12)
		fail_msg("%s: %.12g s, by hand %.12g", what, got, want);
}

static void test_iteration_by_hand(void **state)
{
	(void)state;
	char ops_path[128], err[512], skew[128];
	struct op_profile *p;
	struct gemmp *pred;
	write_profile(ops_path, sizeof ops_path);
	assert_int_equal(opp_load(ops_path, &p, err, sizeof err), 0);
	assert_int_equal(gemmp_create(p, NULL, &pred, err, sizeof err), 0);
	double rest, layer = shared_parts(pred, &rest);

	/* 2 experts, top 2: every token reaches both, 4 tokens each */
	struct mdl_model *m = load_moe("moe experts=2 top_k=2 expert_ffn=128 router=softmax_topk");
	/* TP 2: each GPU runs both experts at width 64 (the profile's own MLP at tp 2), the activation over 8
	 * token-expert pairs of 64 (the tp 2 row at 8 tokens) */
	double experts = kernels(pred, 2 * gemmp_seconds_unfloored(pred, 4, 64, 128),
	                         2 * gemmp_seconds_unfloored(pred, 4, 64, 64)) + ROW8(OPP_MLP_ACT);
	struct hw_model *hw = open_moe(ops_path, m, 1, NULL);
	expect_price(hw, layer, experts, rest, "TP 2");
	const struct gpu_moe_stats *st = gpu_moe_stats(gpu_measured_info(hw)->moe);
	assert_true(st->layers == 2 && st->reached_sum == 4 && st->imbalance_max == 1);
	hw_close(hw);
	/* EP 2: each GPU one whole expert (width 128) over the 4 tokens, the activation over 4 pairs of 128 (8
	 * tokens' worth of the profile's 64); the two ranks alike */
	experts = kernels(pred, gemmp_seconds_unfloored(pred, 4, 64, 256), gemmp_seconds_unfloored(pred, 4, 128, 64)) +
	          ROW8(OPP_MLP_ACT);
	hw = open_moe(ops_path, m, 2, NULL);
	expect_price(hw, layer, experts, rest, "EP 2");
	hw_close(hw);
	mdl_free(m);

	/* top 1 with every token on expert 0 (a skew file): TP 2 runs one expert of 64 over 4 tokens; EP 2 waits for
	 * rank 0's whole expert while rank 1 idles */
	m = load_moe("moe experts=2 top_k=1 expert_ffn=128 router=topk_softmax");
	path_in(skew, sizeof skew, "all-on-0.csv");
	put(skew, MOE_ROUTE_KIND_LINE "\n# source = test\nexpert,share\n0,1\n1,0\n");
	hw = open_moe(ops_path, m, 1, skew);
	experts = kernels(pred, gemmp_seconds_unfloored(pred, 4, 64, 128), gemmp_seconds_unfloored(pred, 4, 64, 64)) +
	          ROW4(OPP_MLP_ACT);
	expect_price(hw, layer, experts, rest, "TP 2, skewed");
	hw_close(hw);
	hw = open_moe(ops_path, m, 2, skew);
	experts = kernels(pred, gemmp_seconds_unfloored(pred, 4, 64, 256), gemmp_seconds_unfloored(pred, 4, 128, 64)) +
	          ROW8(OPP_MLP_ACT);
	expect_price(hw, layer, experts, rest, "EP 2, skewed");
	st = gpu_moe_stats(gpu_measured_info(hw)->moe);
	/* one expert reached of 2, 4 tokens against a mean of 2: imbalance 2, on the ranks too */
	assert_true(st->layers == 2 && st->reached_sum == 2 && st->imbalance_max == 2 && st->rank_imbalance_sum == 4);
	hw_close(hw);

	/* bad --ep: not dividing the experts, not the replica's GPUs, on a dense model */
	assert_int_equal(hw_open_tp(ops_path, m, 2, &hw, err, sizeof err), 0);
	assert_int_equal(hw_moe_setup(hw, 4, NULL, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "--ep=4 with --tp=2"));
	hw_close(hw);
	mdl_free(m);
	m = load_moe("moe experts=3 top_k=1 expert_ffn=128 router=topk_softmax");
	assert_int_equal(hw_open_tp(ops_path, m, 2, &hw, err, sizeof err), 0);
	assert_int_equal(hw_moe_setup(hw, 2, NULL, 1, err, sizeof err), -1);
	assert_non_null(strstr(err, "--ep=2 does not divide toy-moe's 3 experts"));
	hw_close(hw);
	mdl_free(m);
	opp_free(p);
	gemmp_free(pred);
}

static void test_model_lines(void **state)
{
	(void)state;
	char path[128], text[768], err[512];
	struct mdl_model *m = NULL;
	/* Mixtral's weights: 32 layers of attention (4096 x 6144 + 4096 x 4096) and 8 experts of 3 x 4096 x 14336
	 * plus the router, the embedding and head of 32000 x 4096: 46.70 B parameters, 2 bytes each */
	assert_int_equal(mdl_load("mixtral-8x7b", &m, err, sizeof err), 0);
	uint64_t params = 32ull * (4096ull * 6144 + 4096ull * 4096 + 8ull * 3 * 4096 * 14336 + 4096ull * 8) +
	                  2ull * 32000 * 4096;
	assert_true(mdl_llm_weight_bytes(&m->llm) == 2 * params);
	assert_int_equal(mdl_llm_moe_layers(&m->llm), 32);
	assert_int_equal(m->llm.dtype, MDL_DTYPE_BF16);
	assert_int_equal(m->llm.kv_bytes, 2);
	mdl_free(m);
	static const struct { const char *llm, *moe, *says; } bad[] = {
		{ "", "moe experts=8 top_k=9 expert_ffn=64 router=topk_softmax", "top_k=9 is larger than experts=8" },
		{ "", "moe experts=8 top_k=2 router=topk_softmax", "moe needs expert_ffn=" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64", "moe needs router=" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax layers=0-2", "layer 2 is past the model's 2" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax layers=1-0", "before the first" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax shared_experts=1", "needs shared_ffn=" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax shared_ffn=64", "without shared_experts=" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=sigmoid", "router must be topk_softmax" },
		{ "", "moe experts=0 top_k=2 expert_ffn=64 router=topk_softmax", "experts must be an integer in [1," },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax top_k=1", "top_k given twice" },
		{ "", "moe experts=8 top_k=2 expert_ffn=64 router=topk_softmax colour=red", "unknown moe key 'colour'" },
		{ " dtype=fp4", "", "dtype must be fp32, fp16, bf16 or fp8, got 'fp4'" },
		{ " dtype=fp8", "", "bytes=2 contradicts dtype=fp8" },
		{ " kv_dtype=fp8", "", "kv_dtype=fp8 needs dtype=" },
	};
	path_in(path, sizeof path, "bad.model");
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		snprintf(text, sizeof text, "model bad\nsource test\ninput_len fixed:4\noutput_len fixed:2\n"
		         "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 bytes=2%s\n%s\n",
		         bad[i].llm, bad[i].moe);
		put(path, text);
		m = NULL;
		assert_int_equal(mdl_load_file(path, &m, err, sizeof err), -1);
		assert_null(m);
		if (!strstr(err, bad[i].says) || strncmp(err, path, strlen(path)) != 0)
			fail_msg("case %zu: '%s' does not say '%s'", i, err, bad[i].says);
	}
	/* a moe line without an llm line */
	put(path, "model bad\nsource test\nmoe experts=8 top_k=2 expert_ffn=64 router=topk_softmax\n"
	          "node a static gemm=1,2,2\n");
	assert_int_equal(mdl_load_file(path, &m, err, sizeof err), -1);
	assert_non_null(strstr(err, "bad.model:3: a moe line describes an llm model's MLPs"));
}

/* FP8 weights: refused on the measured GPU with what it would need. */
static void test_fp8_refused(void **state)
{
	(void)state;
	char ops_path[128], path[128], err[512];
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	write_profile(ops_path, sizeof ops_path);
	path_in(path, sizeof path, "fp8.model");
	put(path, "model fp8\nsource test\ninput_len fixed:4\noutput_len fixed:2\n"
	          "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 dtype=fp8 "
	          "kv_dtype=bf16\nmoe experts=2 top_k=1 expert_ffn=128 router=topk_softmax\n");
	assert_int_equal(mdl_load_file(path, &m, err, sizeof err), 0);
	assert_int_equal(m->llm.elem_bytes, 1);
	assert_int_equal(m->llm.kv_bytes, 2);
	assert_int_equal(hw_open_tp(ops_path, m, 2, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "FP8 weights"));
	assert_non_null(strstr(err, "needs the GPU's FP8 GEMMs"));
	mdl_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_experts_reached),
		cmocka_unit_test(test_draw_reproducible),
		cmocka_unit_test(test_skew_file),
		cmocka_unit_test(test_iteration_by_hand),
		cmocka_unit_test(test_model_lines),
		cmocka_unit_test(test_fp8_refused),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
