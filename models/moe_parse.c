/* models/moe_parse.c: an LLM's element types (the llm line's dtype= and
 * kv_dtype=) and its mixture of experts (the moe line), FORMAT.md "Mixtures
 * of experts". The moe line is read on its own and checked against the llm
 * line once the whole file is read (mdl_moe_finish): which layers are MoE
 * needs the model's layer count. */
#include "model.h"
#include "parse.h"
#include "../util/text.h"

#include <stdio.h>
#include <string.h>

static const struct { const char *name; uint32_t bytes; } mdl_dtypes[] = {
	[MDL_DTYPE_NONE] = { "bytes", 0 }, [MDL_DTYPE_FP32] = { "fp32", 4 }, [MDL_DTYPE_FP16] = { "fp16", 2 },
	[MDL_DTYPE_BF16] = { "bf16", 2 }, [MDL_DTYPE_FP8] = { "fp8", 1 },
};

const char *mdl_dtype_name(uint32_t dtype)
{
	return dtype < sizeof mdl_dtypes / sizeof mdl_dtypes[0] ? mdl_dtypes[dtype].name : "unknown";
}

uint32_t mdl_dtype_parse(const char *s)
{
	for (uint32_t t = MDL_DTYPE_FP32; t < sizeof mdl_dtypes / sizeof mdl_dtypes[0]; t++)
		if (strcmp(s, mdl_dtypes[t].name) == 0)
			return t;
	return 0;
}

const char *mdl_router_name(uint32_t router)
{
	return router == MDL_ROUTER_TOPK_SOFTMAX ? "topk_softmax" : router == MDL_ROUTER_SOFTMAX_TOPK ? "softmax_topk"
	                                                                                                : "none";
}

int mdl_llm_dtypes(struct mdl_parser *p, struct mdl_llm *l, int bytes_given)
{
	if (l->dtype) {
		uint32_t size = mdl_dtypes[l->dtype].bytes;
		if (bytes_given && l->elem_bytes != size)
			return mdl_parse_fail(p, "llm bytes=%u contradicts dtype=%s (%u bytes an element): give one of them",
			                      l->elem_bytes, mdl_dtype_name(l->dtype), size);
		l->elem_bytes = size;
	}
	if (l->kv_dtype && !l->dtype)
		return mdl_parse_fail(p, "llm kv_dtype=%s needs dtype= for the weights (bytes= alone names no type)",
		                      mdl_dtype_name(l->kv_dtype));
	if (!l->kv_dtype)
		l->kv_dtype = l->dtype;
	l->kv_bytes = l->kv_dtype ? mdl_dtypes[l->kv_dtype].bytes : l->elem_bytes;
	return 0;
}

/* layers=A-B or A-B/STEP (0-based, inclusive): the MoE layers. */
static int mdl_moe_layers(struct mdl_parser *p, const char *value, struct mdl_moe *moe)
{
	char buf[64];
	if (strlen(value) >= sizeof buf)
		return mdl_parse_fail(p, "moe layers='%s' is too long (expected layers=FIRST-LAST or FIRST-LAST/STEP)",
		                      value);
	memcpy(buf, value, strlen(value) + 1);
	char *slash = strchr(buf, '/'), *dash = strchr(buf, '-');
	uint64_t first, last, step = 1;
	if (slash)
		*slash = '\0';
	if (dash)
		*dash = '\0';
	if (!dash || txt_parse_uint(buf, 1023, &first) != 0 || txt_parse_uint(dash + 1, 1023, &last) != 0 ||
	    (slash && (txt_parse_uint(slash + 1, 1024, &step) != 0 || step == 0)))
		return mdl_parse_fail(p, "moe layers='%s' is not FIRST-LAST or FIRST-LAST/STEP (0-based layer indices, "
		                      "step at least 1)", value);
	if (last < first)
		return mdl_parse_fail(p, "moe layers='%s': the last layer is before the first", value);
	moe->first_layer = (uint32_t)first;
	moe->last_layer = (uint32_t)last;
	moe->layer_step = (uint32_t)step;
	return 0;
}

int mdl_parse_moe(struct mdl_parser *p, char *rest)
{
	static const struct { const char *key; size_t off; uint32_t max; } keys[] = {
		{ "experts", offsetof(struct mdl_moe, experts), 4096 },
		{ "top_k", offsetof(struct mdl_moe, top_k), 4096 },
		{ "expert_ffn", offsetof(struct mdl_moe, expert_ffn), 1u << 22 },
		{ "shared_experts", offsetof(struct mdl_moe, shared_experts), 64 },
		{ "shared_ffn", offsetof(struct mdl_moe, shared_ffn), 1u << 22 },
	};
	enum { NKEYS = sizeof keys / sizeof keys[0] };
	struct mdl_moe *moe = &p->m->llm.moe;
	int seen[NKEYS] = { 0 }, seen_layers = 0, seen_router = 0;
	if (p->moe_line)
		return mdl_parse_fail(p, "moe given twice (first on line %lu)", p->moe_line);
	char *term;
	while ((term = mdl_next_token(&rest)) != NULL) {
		char *eq = strchr(term, '=');
		if (!eq)
			return mdl_parse_fail(p, "moe term '%s' is not KEY=VALUE", term);
		*eq = '\0';
		const char *value = eq + 1;
		if (strcmp(term, "layers") == 0) {
			if (seen_layers++)
				return mdl_parse_fail(p, "moe key layers given twice");
			if (mdl_moe_layers(p, value, moe) != 0)
				return -1;
			continue;
		}
		if (strcmp(term, "router") == 0) {
			if (seen_router++)
				return mdl_parse_fail(p, "moe key router given twice");
			moe->router = strcmp(value, "topk_softmax") == 0 ? MDL_ROUTER_TOPK_SOFTMAX
			              : strcmp(value, "softmax_topk") == 0 ? MDL_ROUTER_SOFTMAX_TOPK : 0;
			if (!moe->router)
				return mdl_parse_fail(p, "moe router must be topk_softmax (Mixtral) or softmax_topk (Qwen3-MoE), "
				                      "got '%s'", value);
			continue;
		}
		size_t k = 0;
		while (k < NKEYS && strcmp(term, keys[k].key) != 0)
			k++;
		if (k == NKEYS)
			return mdl_parse_fail(p, "unknown moe key '%s' (expected experts, top_k, expert_ffn, shared_experts, "
			                      "shared_ffn, layers, router)", term);
		if (seen[k]++)
			return mdl_parse_fail(p, "moe key %s given twice", term);
		uint64_t v;
		uint32_t lo = strcmp(term, "shared_experts") == 0 ? 0 : 1;
		if (txt_parse_uint(value, keys[k].max, &v) != 0 || v < lo)
			return mdl_parse_fail(p, "moe %s must be an integer in [%u, %u], got '%s'", term, lo, keys[k].max, value);
		*(uint32_t *)((char *)moe + keys[k].off) = (uint32_t)v;
	}
	for (size_t k = 0; k < 3; k++)
		if (!seen[k])
			return mdl_parse_fail(p, "moe needs %s= (experts, top_k and expert_ffn are required)", keys[k].key);
	if (!seen_router)
		return mdl_parse_fail(p, "moe needs router= (topk_softmax or softmax_topk)");
	if (moe->top_k > moe->experts)
		return mdl_parse_fail(p, "moe top_k=%u is larger than experts=%u: a token reaches at most every expert",
		                      moe->top_k, moe->experts);
	if (moe->shared_experts && !seen[4])
		return mdl_parse_fail(p, "moe shared_experts=%u needs shared_ffn= (their gated MLP width)",
		                      moe->shared_experts);
	if (seen[4] && !moe->shared_experts)
		return mdl_parse_fail(p, "moe shared_ffn= is given without shared_experts= (at least 1)");
	if (!seen_layers)
		moe->layer_step = 0;   /* every layer: set once the llm line's layer count is known */
	p->moe_line = p->line;
	return 0;
}

int mdl_moe_finish(struct mdl_parser *p)
{
	struct mdl_llm *l = &p->m->llm;
	if (!p->moe_line)
		return 0;
	p->line = p->moe_line;
	if (!l->gated)
		return mdl_parse_fail(p, "moe experts are gated MLPs (SwiGLU); the llm line says mlp=plain");
	if (l->moe.layer_step == 0) {
		l->moe.first_layer = 0;
		l->moe.last_layer = l->layers - 1;
		l->moe.layer_step = 1;
	}
	if (l->moe.last_layer >= l->layers)
		return mdl_parse_fail(p, "moe layers: layer %u is past the model's %u layers (0 to %u)", l->moe.last_layer,
		                      l->layers, l->layers - 1);
	return 0;
}
