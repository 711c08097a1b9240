/* hwmodels/llm_cost.c: an LLM iteration's time on a hardware model; see
 * llm_cost.h for what is priced and how. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "llm_cost.h"
#include "../util/errkind.h"

struct llm_cost {
	const struct hw_model *hw;      /* not owned */
	const struct mdl_llm *llm;      /* not owned */
	struct hw_device dev;
	uint32_t max_tokens;
	double *layers_s;               /* [T]: every layer's GEMMs at M = T tokens; < 0 until asked */
	double *head_s;                 /* [n]: the output projection for n emitting members; < 0 until asked */
};

static int llm_gemm_s(const struct llm_cost *c, uint64_t m, uint64_t k, uint64_t n, double *s, char *err,
                      size_t errlen)
{
	struct hw_gemm_cost g;
	if (c->hw->ops->gemm_cost(c->hw, m, k, n, HW_DF_WS, 1, &g, err, errlen) != 0)
		return -1;
	*s += g.seconds;
	return 0;
}

/* The layers' GEMMs at M = T: QKV, output projection, MLP. */
static int llm_layers_s(const struct llm_cost *c, uint32_t t, double *out, char *err, size_t errlen)
{
	const struct mdl_llm *l = c->llm;
	uint64_t q = (uint64_t)l->heads * l->head_dim, kv = (uint64_t)l->kv_heads * l->head_dim;
	double s = 0;
	if (llm_gemm_s(c, t, l->hidden, q + 2 * kv, &s, err, errlen) != 0 ||
	    llm_gemm_s(c, t, q, l->hidden, &s, err, errlen) != 0 ||
	    llm_gemm_s(c, t, l->hidden, (uint64_t)(l->gated ? 2 : 1) * l->ffn, &s, err, errlen) != 0 ||
	    llm_gemm_s(c, t, l->ffn, l->hidden, &s, err, errlen) != 0)
		return -1;
	*out = s * l->layers;
	return 0;
}

int llm_cost_create(const struct hw_model *hw, const struct mdl_model *m, uint32_t max_tokens,
                    struct llm_cost **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!m->is_llm) {
		snprintf(err, errlen, "model %s is not an LLM", m->name);
		return -1;
	}
	if (!(hw->ops->gemm_cost || hw->ops->iter_cost) || !hw->ops->device) {
		snprintf(err, errlen, "hw %s cannot price an LLM's GEMMs and memory (LLM serving needs a model of the "
		         "device: npu, a config file of kind npu, gpu-h100-roofline, or a measured iteration profile of "
		         "kind llm_iter)", hw->label);
		return -1;
	}
	if (m->llm.moe.experts && !hw->ops->iter_cost) {   /* its GEMMs below are a dense model's */
		snprintf(err, errlen, "hw %s does not price a mixture of experts (model %s); a measured GPU does (gpu-h100, "
		         "gpu-a100)", hw->label, m->name);
		return -1;
	}
	struct llm_cost *c = calloc(1, sizeof *c);
	if (!c)
		goto oom;
	c->hw = hw;
	c->llm = &m->llm;
	c->max_tokens = max_tokens;
	hw->ops->device(hw, &c->dev);
	c->layers_s = malloc(((size_t)max_tokens + 1) * sizeof *c->layers_s);
	c->head_s = malloc(((size_t)max_tokens + 1) * sizeof *c->head_s);
	if (!c->layers_s || !c->head_s)
		goto oom;
	for (size_t i = 0; i <= max_tokens; i++)
		c->layers_s[i] = c->head_s[i] = -1;
	*out = c;
	return 0;
oom:
	llm_cost_destroy(c);
	err_memory(err, errlen, "out of memory for the LLM cost table");
	return -1;
}

void llm_cost_destroy(struct llm_cost *c)
{
	if (!c)
		return;
	free(c->layers_s);
	free(c->head_s);
	free(c);
}

/* llround(s * 1e9), as the prices have always been rounded, without libm's
 * call: below 2^52 ns y - trunc(y) is exact, above it y is whole, so the
 * comparison with a half rounds as llround does (half away from zero). The
 * cast is defined below 2^63 (int64's range); outside it, negative or NaN,
 * llround itself answers. */
static inline int64_t llm_round_ns(double s)
{
	double y = s * 1e9;
	if (!(y >= 0 && y < 0x1p63))
		return (int64_t)llround(y);
	int64_t i = (int64_t)y;
	return i + (y - (double)i >= 0.5);
}

/* An iteration of s seconds in ns (at least 1), or -1 with err beyond a
 * task's bound (HW_MAX_TASK_S): a profile's time too large, which would
 * pass the clock's range or wrap its integer nanoseconds. */
static int64_t llm_bounded_ns(const struct llm_cost *c, double s, uint32_t n, char *err, size_t errlen)
{
	if (!(s <= HW_MAX_TASK_S)) {
		snprintf(err, errlen, "hw %s prices an iteration of %u request(s) at %g s: more than the %g s a task may "
		         "take in simulated time (its tables' times are too large)", c->hw->label, n, s, HW_MAX_TASK_S);
		return -1;
	}
	int64_t ns = llm_round_ns(s);
	return ns > 0 ? ns : 1;
}

int64_t llm_cost_iter_ns(struct llm_cost *c, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                         uint32_t emitting, uint32_t pad, char *err, size_t errlen)
{
	if (c->hw->ops->iter_cost) {          /* measured whole (llm_iter.h) */
		double s = c->hw->ops->iter_cost(c->hw, n, tokens, context, emitting, pad);
		return llm_bounded_ns(c, s, n, err, errlen);
	}
	const struct mdl_llm *l = c->llm;
	uint64_t total = pad;
	double attn_s = 0;
	double kv_token_bytes = (double)mdl_llm_kv_bytes_per_token(l);
	double attn_flops_per = 4.0 * l->heads * l->head_dim * l->layers;
	for (uint32_t i = 0; i < n; i++) {
		total += tokens[i];
		double span = (double)context[i] + tokens[i];
		double compute = attn_flops_per * tokens[i] * span / c->dev.peak_flops;
		double memory = kv_token_bytes * span / c->dev.mem_bw_bytes_s;
		attn_s += compute > memory ? compute : memory;
	}
	double layers = -1, head = -1;
	if (total <= c->max_tokens)
		layers = c->layers_s[total];
	if (layers < 0 && llm_layers_s(c, (uint32_t)total, &layers, err, errlen) != 0)
		return -1;
	if (total <= c->max_tokens)
		c->layers_s[total] = layers;
	if (emitting) {
		if (emitting <= c->max_tokens)
			head = c->head_s[emitting];
		if (head < 0) {
			head = 0;
			if (llm_gemm_s(c, emitting, l->hidden, l->vocab, &head, err, errlen) != 0)
				return -1;
		}
		if (emitting <= c->max_tokens)
			c->head_s[emitting] = head;
	}
	return llm_bounded_ns(c, layers + (emitting ? head : 0) + attn_s, n, err, errlen);
}

int64_t llm_cost_decode_ns(const struct llm_cost *c, uint32_t n, uint64_t context_sum)
{
	if (!c->hw->ops->decode_cost)
		return 0;
	double s = c->hw->ops->decode_cost(c->hw, n, context_sum);
	if (!(s <= HW_MAX_TASK_S))
		return 0;        /* the caller prices the members, and llm_cost_iter_ns says why it cannot */
	int64_t ns = llm_round_ns(s);   /* as llm_cost_iter_ns */
	return ns > 0 ? ns : 1;
}

uint64_t llm_cost_kv_blocks(const struct llm_cost *c, uint32_t block_size, char *err, size_t errlen)
{
	double weights = (double)mdl_llm_weight_bytes(c->llm);
	if (c->dev.mem_bytes <= 0) {
		snprintf(err, errlen, "hw %s models no memory capacity, which LLM serving needs for the KV cache "
		         "(an NPU config file's mem_capacity_gb)", c->hw->label);
		return 0;
	}
	if (weights >= c->dev.mem_bytes) {
		snprintf(err, errlen, "the weights of the LLM (%.1f GB) fill hw %s's memory (%.1f GB): no room for a KV "
		         "cache", weights * 1e-9, c->hw->label, c->dev.mem_bytes * 1e-9);
		return 0;
	}
	double block_bytes = (double)mdl_llm_kv_bytes_per_token(c->llm) * block_size;
	return (uint64_t)floor((c->dev.mem_bytes - weights) / block_bytes);
}
