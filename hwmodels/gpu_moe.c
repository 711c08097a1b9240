/* hwmodels/gpu_moe.c: a mixture-of-experts LLM's layers on a measured GPU
 * (see gpu_moe.h for what is priced and why). */
#include "gpu_moe.h"
#include "gemm_predict.h"
#include "moe_route.h"
#include "../util/errkind.h"
#include "../util/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct gpu_moe {
	const struct mdl_llm *l;
	struct gemmp *pred;               /* owned */
	struct moe_route *route;          /* owned */
	gsl_rng *gen;                     /* owned: reseeded for every iteration */
	const struct opp_curve *ref;      /* the element-wise operators' curve (in the caller's profile) */
	uint32_t tp, ep, moe_layers;
	uint64_t seed;
	double kv_heads_gpu;              /* KV heads on one GPU: 1/tp of them, or one replicated */
	double expert_ffn_gpu;            /* the intermediate width of an expert on the GPU that runs it */
	double hidden_per_ref, rope_per_ref, act_ref_per_token;  /* element ratios to the reference curve */
	const struct op_profile *prof;    /* not owned */
	double err_median_pct, err_p90_pct;   /* < 0 until asked (gpu_moe_error) */
	uint32_t cached;                  /* token counts the tables hold: 0 .. cached */
	double *fixed_s, *dense_mlp_s, *moe_fixed_s;  /* [cached + 1], NAN until asked */
	double *expert_up_s, *expert_down_s;          /* ... a routed expert's share of the fused kernels */
	uint32_t *counts, *scratch;       /* [experts], [experts + top_k + 1] */
	struct gpu_moe_stats stats;
};

void gpu_moe_free(struct gpu_moe *g)
{
	if (!g)
		return;
	gemmp_free(g->pred);
	moe_route_free(g->route);
	if (g->gen)
		gsl_rng_free(g->gen);
	free(g->fixed_s);
	free(g->dense_mlp_s);
	free(g->moe_fixed_s);
	free(g->expert_up_s);
	free(g->expert_down_s);
	free(g->counts);
	free(g->scratch);
	free(g);
}

static double gpu_moe_gemm(const struct gpu_moe *g, double m, double k, double n)
{
	return m > 0 ? gemmp_seconds(g->pred, m, k, n, NULL) : 0;
}

/* An element-wise operator of the reference curve at the tokens that stream as many elements. */
static double gpu_moe_elementwise(const struct gpu_moe *g, enum opp_op op, double tokens)
{
	int ignored = 0;
	return tokens > 0 && (g->ref->present >> op & 1u) ? opp_curve_ms(g->ref, op, tokens, &ignored) * OPP_S_PER_MS
	                                                  : 0;
}

/* The MLP's activation over assignments token-expert pairs of width width on one GPU. */
static double gpu_moe_act(const struct gpu_moe *g, double assignments, double width)
{
	return gpu_moe_elementwise(g, OPP_MLP_ACT, assignments * width / g->act_ref_per_token);
}

/* A layer's parts that every layer runs (norms, rotary, add, QKV, attention output) at t tokens. */
static double gpu_moe_fixed(const struct gpu_moe *g, double t)
{
	const struct mdl_llm *l = g->l;
	double q = (double)l->heads / g->tp * l->head_dim, kv = g->kv_heads_gpu * l->head_dim;
	double s = gpu_moe_elementwise(g, OPP_INPUT_NORM, t * g->hidden_per_ref) +
	           gpu_moe_elementwise(g, OPP_POST_NORM, t * g->hidden_per_ref) +
	           gpu_moe_elementwise(g, OPP_ADD, t * g->hidden_per_ref) +
	           gpu_moe_elementwise(g, OPP_ROPE, t * g->rope_per_ref);
	return s + gpu_moe_gemm(g, t, l->hidden, q + 2 * kv) + gpu_moe_gemm(g, t, q, l->hidden);
}

/* A gated MLP of width (on this GPU) over t tokens: gate and up, activation, down. */
static double gpu_moe_mlp(const struct gpu_moe *g, double t, double width)
{
	return gpu_moe_gemm(g, t, g->l->hidden, 2 * width) + gpu_moe_gemm(g, t, width, g->l->hidden);
}

/* A table entry at t, filled when first asked; past the table, priced afresh. */
static double gpu_moe_cached(struct gpu_moe *g, double *table, uint64_t t, double (*price)(struct gpu_moe *, double))
{
	if (t > g->cached)
		return price(g, (double)t);
	if (isnan(table[t]))
		table[t] = price(g, (double)t);
	return table[t];
}

static double gpu_moe_price_fixed(struct gpu_moe *g, double t)
{
	return gpu_moe_fixed(g, t);
}

static double gpu_moe_price_dense(struct gpu_moe *g, double t)
{
	return gpu_moe_mlp(g, t, (double)g->l->ffn / g->tp) + gpu_moe_act(g, t, (double)g->l->ffn / g->tp);
}

/* A MoE layer's parts that do not depend on the routing: the router (hidden x experts, on every GPU: vLLM's
 * gate is a ReplicatedLinear) and the shared experts (sharded over tp as a dense MLP). */
static double gpu_moe_price_moe_fixed(struct gpu_moe *g, double t)
{
	const struct mdl_moe *moe = &g->l->moe;
	double s = gpu_moe_gemm(g, t, g->l->hidden, moe->experts);
	if (moe->shared_experts) {
		double width = (double)moe->shared_ffn / g->tp;
		s += moe->shared_experts * (gpu_moe_mlp(g, t, width) + gpu_moe_act(g, t, width));
	}
	return s;
}

/* A routed expert's share of the layer's two fused-MoE kernels (gate-and-up, down) at c tokens: its GEMMs without
 * the kernel floor, which each kernel pays once (gpu_moe_experts). */
static double gpu_moe_price_expert_up(struct gpu_moe *g, double c)
{
	return gemmp_seconds_unfloored(g->pred, c, g->l->hidden, 2 * g->expert_ffn_gpu);
}

static double gpu_moe_price_expert_down(struct gpu_moe *g, double c)
{
	return gemmp_seconds_unfloored(g->pred, c, g->expert_ffn_gpu, g->l->hidden);
}

/* One MoE layer's routed experts over t tokens: drawn, priced, and added to the figures. */
static double gpu_moe_experts(struct gpu_moe *g, uint64_t t)
{
	const struct mdl_moe *moe = &g->l->moe;
	uint32_t e = moe->experts, per_rank = e / g->ep;
	moe_route_draw(g->route, g->gen, (uint32_t)t, g->counts, g->scratch);
	double slowest = 0;
	uint32_t reached = 0, most = 0, busiest = 0;
	double floor = gemmp_floor_seconds(g->pred);
	for (uint32_t r = 0; r < g->ep; r++) {
		double up = 0, down = 0;
		uint32_t assigned = 0;
		for (uint32_t x = r * per_rank; x < (r + 1) * per_rank; x++) {
			uint32_t c = g->counts[x];
			if (!c)
				continue;
			up += gpu_moe_cached(g, g->expert_up_s, c, gpu_moe_price_expert_up);
			down += gpu_moe_cached(g, g->expert_down_s, c, gpu_moe_price_expert_down);
			assigned += c;
			reached++;
			most = c > most ? c : most;
		}
		/* a rank with tokens runs the two kernels, each at least the fastest GEMM measured */
		double s = assigned ? (up > floor ? up : floor) + (down > floor ? down : floor) : 0;
		s += gpu_moe_act(g, assigned, g->expert_ffn_gpu);
		slowest = s > slowest ? s : slowest;
		busiest = assigned > busiest ? assigned : busiest;
	}
	double assignments = (double)t * moe->top_k, imbalance = most / (assignments / e);
	g->stats.layers++;
	g->stats.reached_sum += reached;
	g->stats.tokens_sum += assignments / reached;
	g->stats.imbalance_sum += imbalance;
	g->stats.imbalance_max = imbalance > g->stats.imbalance_max ? imbalance : g->stats.imbalance_max;
	g->stats.rank_imbalance_sum += busiest / (assignments / g->ep);
	return slowest;
}

double gpu_moe_layers_s(struct gpu_moe *g, uint64_t total, uint64_t key)
{
	if (!total)
		return 0;
	const struct mdl_llm *l = g->l;
	double fixed = gpu_moe_cached(g, g->fixed_s, total, gpu_moe_price_fixed);
	double s = fixed * l->layers;
	if (l->layers > g->moe_layers)
		s += gpu_moe_cached(g, g->dense_mlp_s, total, gpu_moe_price_dense) * (l->layers - g->moe_layers);
	s += gpu_moe_cached(g, g->moe_fixed_s, total, gpu_moe_price_moe_fixed) * g->moe_layers;
	rng_reseed_keyed(g->gen, g->seed, RNG_ROUTING, key);
	for (uint32_t i = 0; i < g->moe_layers; i++)
		s += gpu_moe_experts(g, total);
	return s;
}

double gpu_moe_emb_s(struct gpu_moe *g, uint64_t total)
{
	return gpu_moe_elementwise(g, OPP_EMB, (double)total * g->hidden_per_ref);
}

double gpu_moe_head_s(struct gpu_moe *g, uint32_t emitting)
{
	/* vLLM's ParallelLMHead: each GPU holds vocab / tp of the output projection */
	return gpu_moe_gemm(g, emitting, g->l->hidden, (double)g->l->vocab / g->tp);
}

const struct gpu_moe_stats *gpu_moe_stats(const struct gpu_moe *g)
{
	return &g->stats;
}

int gpu_moe_error(struct gpu_moe *g, double *median_pct, double *p90_pct, char *err, size_t errlen)
{
	if (g->err_p90_pct < 0) {   /* every profiled GEMM predicted from the other models': once, when asked */
		struct gemmp_error all;
		if (gemmp_leave_one_model_out(g->prof, NULL, 0, &all, err, errlen) < 0)
			return -1;
		g->err_median_pct = all.median_pct;
		g->err_p90_pct = all.p90_pct;
	}
	*median_pct = g->err_median_pct;
	*p90_pct = g->err_p90_pct;
	return 0;
}

const struct opp_curve *gpu_moe_curve(const struct gpu_moe *g)
{
	return g->ref;
}

const char *gpu_moe_routing(const struct gpu_moe *g)
{
	return g->route->uniform ? "uniform" : g->route->path;
}

uint32_t gpu_moe_ep(const struct gpu_moe *g)
{
	return g->ep;
}

/* The curve at tp nearest the model in hidden size (the element-wise operators stream hidden-wide rows). */
static const struct opp_curve *gpu_moe_ref_curve(const struct op_profile *p, const struct mdl_llm *l, uint32_t tp)
{
	const struct opp_curve *best = NULL;
	double best_d = INFINITY;
	for (size_t i = 0; i < p->ncurves; i++) {
		const struct opp_curve *c = &p->curves[i];
		double d = fabs(log((double)c->shape.hidden / l->hidden));
		if (c->tp == tp && c->shape.gated && d < best_d) {
			best = c;
			best_d = d;
		}
	}
	return best;
}

static int gpu_moe_check(const struct mdl_model *m, uint32_t tp, const struct gpu_moe_opts *o, char *err,
                         size_t errlen)
{
	const struct mdl_llm *l = &m->llm;
	if (l->dtype == MDL_DTYPE_FP8 || l->kv_dtype == MDL_DTYPE_FP8) {
		snprintf(err, errlen, "model %s has FP8 %s; the measured GPU tables are fp16 (Vidur's profiles): pricing FP8 "
		         "needs FP8 GEMMs of the GPU measured into an operator profile (scripts/vidur-import's format)",
		         m->name, l->dtype == MDL_DTYPE_FP8 ? "weights" : "KV cache");
		return -1;
	}
	if (!l->moe.experts && o->ep > 1) {
		snprintf(err, errlen, "--ep=%u: expert parallelism spreads a MoE model's experts; model %s is dense", o->ep,
		         m->name);
		return -1;
	}
	if (o->ep > 1 && o->ep != tp) {
		snprintf(err, errlen, "--ep=%u with --tp=%u: vLLM spreads the experts over all the replica's GPUs (its expert "
		         "parallel size is tp x dp, dp 1 here): give --ep=%u or --ep=1", o->ep, tp, tp);
		return -1;
	}
	if (o->ep > 1 && l->moe.experts % o->ep != 0) {
		snprintf(err, errlen, "--ep=%u does not divide %s's %u experts: each GPU holds the same number of experts",
		         o->ep, m->name, l->moe.experts);
		return -1;
	}
	if (l->moe.experts && !o->ep) {
		snprintf(err, errlen, "--ep=0: expert parallelism needs at least one GPU");
		return -1;
	}
	return 0;
}

int gpu_moe_create(const struct op_profile *p, const struct mdl_model *m, uint32_t tp, const struct gpu_moe_opts *o,
                   struct gpu_moe **out, char *err, size_t errlen)
{
	const struct mdl_llm *l = &m->llm;
	*out = NULL;
	if (gpu_moe_check(m, tp, o, err, errlen) != 0)
		return -1;
	struct gpu_moe *g = calloc(1, sizeof *g);
	if (!g)
		goto oom;
	g->l = l;
	g->tp = tp;
	g->ep = o->ep ? o->ep : 1;
	g->seed = o->seed;
	g->moe_layers = mdl_llm_moe_layers(l);
	g->ref = gpu_moe_ref_curve(p, l, tp);
	if (!g->ref) {
		snprintf(err, errlen, "%s holds no gated model's operators at tp %u to price %s's element-wise operators",
		         p->path, tp, m->name);
		goto fail;
	}
	const struct opp_shape *rs = &g->ref->shape;
	double ref_head_dim = (double)rs->hidden / rs->heads;
	g->kv_heads_gpu = l->kv_heads >= tp ? (double)l->kv_heads / tp : 1.0;
	g->expert_ffn_gpu = g->ep > 1 ? l->moe.expert_ffn : (double)l->moe.expert_ffn / tp;
	g->hidden_per_ref = (double)l->hidden / rs->hidden;
	g->rope_per_ref = ((double)l->heads / tp + g->kv_heads_gpu) * l->head_dim /
	                  ((rs->heads + (double)rs->kv_heads) / tp * ref_head_dim);
	g->act_ref_per_token = (double)rs->ffn / tp;
	if (gemmp_create(p, NULL, &g->pred, err, errlen) != 0)
		goto fail;
	g->prof = p;
	g->err_median_pct = g->err_p90_pct = -1;
	uint32_t experts = l->moe.experts ? l->moe.experts : 1, top_k = l->moe.experts ? l->moe.top_k : 1;
	int rc = o->routing && strcmp(o->routing, "uniform") != 0
	         ? moe_route_load(o->routing, experts, top_k, &g->route, err, errlen)
	         : moe_route_uniform(experts, top_k, &g->route, err, errlen);
	if (rc != 0)
		goto fail;
	g->gen = rng_create(o->seed, RNG_ROUTING);
	g->cached = opp_curve_max_tokens(g->ref);
	size_t n = (size_t)g->cached + 1;
	g->fixed_s = malloc(n * sizeof *g->fixed_s);
	g->dense_mlp_s = malloc(n * sizeof *g->dense_mlp_s);
	g->moe_fixed_s = malloc(n * sizeof *g->moe_fixed_s);
	g->expert_up_s = malloc(n * sizeof *g->expert_up_s);
	g->expert_down_s = malloc(n * sizeof *g->expert_down_s);
	g->counts = calloc(experts, sizeof *g->counts);
	g->scratch = calloc((size_t)experts + top_k + 1, sizeof *g->scratch);
	if (!g->gen || !g->fixed_s || !g->dense_mlp_s || !g->moe_fixed_s || !g->expert_up_s || !g->expert_down_s ||
	    !g->counts || !g->scratch)
		goto oom;
	for (size_t i = 0; i < n; i++)
		g->fixed_s[i] = g->dense_mlp_s[i] = g->moe_fixed_s[i] = g->expert_up_s[i] = g->expert_down_s[i] = NAN;
	*out = g;
	return 0;
oom:
	err_memory(err, errlen, "out of memory");
fail:
	gpu_moe_free(g);
	return -1;
}
