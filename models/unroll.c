/* models/unroll.c: one request's chain of nodes, unrolled from the segment
 * list without materializing it: its length, the node and cells at a
 * position, a decoder step's or a member's node, and what a node weighs. */
#include <stdio.h>
#include <string.h>
#include "unroll.h"

/* Cells at internal level k (1-based) of a balanced tree over L leaves. */
static uint32_t mdl_tree_width(uint32_t leaves, uint32_t level)
{
	uint64_t n = leaves;
	for (uint32_t k = 1; k < level; k++)
		n = (n + 1) / 2;
	return (uint32_t)(n / 2);
}

uint64_t mdl_chain_length(const struct mdl_model *m, uint32_t input_len, uint32_t output_len)
{
	if (m->is_llm)       /* the tokens it generates; it needs a prompt and at least one */
		return input_len && output_len ? output_len : 0;
	uint64_t total = 0;
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		total += (uint64_t)seg->nnodes * mdl_segment_repeats(seg->kind, input_len, output_len);
	}
	return total;
}

uint32_t mdl_locate_span(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len,
                         uint32_t *cells, uint64_t *span_end)
{
	uint64_t start = 0;
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		uint64_t span = (uint64_t)seg->nnodes * mdl_segment_repeats(seg->kind, input_len, output_len);
		if (pos < span) {
			if (seg->kind == MDL_LEAF)
				*cells = input_len;
			else if (seg->kind == MDL_INTERNAL)
				*cells = mdl_tree_width(input_len, (uint32_t)(pos / seg->nnodes) + 1);
			else
				*cells = 1;
			*span_end = start + span;
			return seg->first_node + (uint32_t)(pos % seg->nnodes);
		}
		pos -= span;
		start += span;
	}
	*cells = 0;
	*span_end = start;
	return UINT32_MAX;
}

uint32_t mdl_locate(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len,
                    uint32_t *cells)
{
	uint64_t span_end;
	return mdl_locate_span(m, pos, input_len, output_len, cells, &span_end);
}

uint32_t mdl_node_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len)
{
	uint32_t cells;
	return mdl_locate(m, pos, input_len, output_len, &cells);
}

uint32_t mdl_cells_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len)
{
	uint32_t cells;
	mdl_locate(m, pos, input_len, output_len, &cells);
	return cells;
}

uint32_t mdl_node_repeats(const struct mdl_model *m, uint32_t t, uint32_t input_len, uint32_t output_len)
{
	if (t >= m->nnodes)
		return 0;
	return (uint32_t)mdl_segment_repeats(m->nodes[t].kind, input_len, output_len);
}

void mdl_step_node(const struct mdl_node *n, uint32_t p, uint32_t s, enum mdl_step_part part, struct mdl_node *out)
{
	*out = *n;
	out->ngemms = 0;
	enum mdl_len_var kept = part == MDL_STEP_P ? MDL_VAR_P : MDL_VAR_S;
	uint64_t fixed_ew = n->elementwise_per_sample - n->elementwise_p * n->step_p - n->elementwise_s * n->step_s;
	for (uint32_t i = 0; i < n->ngemms; i++) {
		struct mdl_gemm g = n->gemms[i];
		uint32_t len = g.len_var == MDL_VAR_P ? p : g.len_var == MDL_VAR_S ? s : 0;
		if (len && (g.len_dims & MDL_LEN_K))
			g.k = len;
		if (len && (g.len_dims & MDL_LEN_N))
			g.n = len;
		if (part == MDL_STEP_ALL || g.len_var == kept)
			out->gemms[out->ngemms++] = g;
	}
	out->step_p = p;
	out->step_s = s;
	uint64_t ew_p = n->elementwise_p * p, ew_s = n->elementwise_s * s;
	out->elementwise_per_sample = part == MDL_STEP_ALL ? fixed_ew + ew_p + ew_s : part == MDL_STEP_P ? ew_p : ew_s;
}

void mdl_member_node(const struct mdl_node *n, uint32_t len, struct mdl_node *out)
{
	memset(out, 0, sizeof *out);
	memcpy(out->name, n->name, sizeof out->name);
	out->kind = n->kind;
	out->segment = n->segment;
	for (uint32_t i = 0; i < n->nmember; i++) {
		struct mdl_gemm g = n->member[i];
		g.m_per_sample *= len;
		if (g.len_dims & MDL_LEN_K)
			g.k = len;
		if (g.len_dims & MDL_LEN_N)
			g.n = len;
		g.len_dims = 0;
		out->gemms[out->ngemms++] = g;
	}
	out->elementwise_per_sample = n->elementwise_len * len * len;
}

uint64_t mdl_node_weight_elems(const struct mdl_node *n)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < n->ngemms; i++) {
		const struct mdl_gemm *g = &n->gemms[i];
		if (!g->weight_shared)
			total += g->k * g->n * g->count;
	}
	return total;
}

uint64_t mdl_node_macs_per_sample(const struct mdl_node *n)
{
	uint64_t total = 0;
	for (uint32_t i = 0; i < n->ngemms; i++) {
		const struct mdl_gemm *g = &n->gemms[i];
		total += g->m_per_sample * g->k * g->n * g->count * mdl_gemm_steps(g);
	}
	return total;
}

int mdl_node_index(const struct mdl_model *m, const char *name)
{
	for (uint32_t i = 0; i < m->nnodes; i++) {
		if (strcmp(m->nodes[i].name, name) == 0)
			return (int)i;
	}
	return -1;
}

const char *mdl_kind_name(enum mdl_kind k)
{
	switch (k) {
	case MDL_STATIC:
		return "static";
	case MDL_ENCODER:
		return "encoder";
	case MDL_DECODER:
		return "decoder";
	case MDL_LEAF:
		return "leaf";
	case MDL_INTERNAL:
		return "internal";
	case MDL_PASS:
		return "pass";
	default:
		return "unknown";
	}
}
