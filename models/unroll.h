/* models/unroll.h: one request's chain of nodes, unrolled from a model's
 * segment list (model.h) without materializing it: its length, the node and
 * cells at a position, runs of nodes inside one span, a decoder step's or a
 * member's node, and what a node weighs (unroll.c). Its own header, so the
 * loader (model.c) uses the unrolling and the unrolling only the model's
 * types: no circle between the two. */
#ifndef SB_UNROLL_H
#define SB_UNROLL_H

#include <stdint.h>
#include "model.h"

/* Number of unrolled nodes of one request's chain. */
uint64_t mdl_chain_length(const struct mdl_model *m, uint32_t input_len, uint32_t output_len);

/* Node type at unrolled position pos (0-based, pos < chain length); UINT32_MAX
 * when pos is past the end. Costs O(number of segments). */
uint32_t mdl_node_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len);

/* Both of the above in one walk of the segments: returns the node type at
 * pos and sets *cells (UINT32_MAX and 0 past the end). */
uint32_t mdl_locate(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len,
                    uint32_t *cells);

/* mdl_locate, and where the segment span holding pos ends: the unrolled
 * position after the segment's last step (the chain's length past the
 * end). Within a span a request's node types cycle through the segment's
 * nodes in order, so a run of nodes that stays inside it is described by
 * its first type alone (mdl_run_type). */
uint32_t mdl_locate_span(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len,
                         uint32_t *cells, uint64_t *span_end);

/* The type of node j (0-based) of a run that starts at a node of type k and
 * stays inside one span of k's segment. */
static inline uint32_t mdl_run_type(const struct mdl_model *m, uint32_t k, uint64_t j)
{
	const struct mdl_segment *s = &m->segments[m->nodes[k].segment];
	uint64_t i = (uint64_t)(k - s->first_node) + j;
	if (j < s->nnodes)                          /* the common short step: no division */
		return s->first_node + (uint32_t)(i >= s->nnodes ? i - s->nnodes : i);
	return s->first_node + (uint32_t)(i % s->nnodes);
}

/* The shape of such a run of n nodes: the segment's node types first ..
 * first + nnodes - 1, the run's first type at offset phase among them; the
 * type o places after the first (o < nnodes, wrapping round the segment)
 * runs passes + (o < rest) times. */
struct mdl_run {
	uint32_t first, nnodes, phase;
	uint64_t passes, rest;
};

static inline struct mdl_run mdl_run_of(const struct mdl_model *m, uint32_t k, uint64_t n)
{
	const struct mdl_segment *s = &m->segments[m->nodes[k].segment];
	return (struct mdl_run){ .first = s->first_node, .nnodes = s->nnodes, .phase = k - s->first_node,
	                         .passes = n / s->nnodes, .rest = n % s->nnodes };
}

static inline uint32_t mdl_run_type_at(const struct mdl_run *r, uint32_t o)
{
	uint32_t i = r->phase + o;
	return r->first + (i >= r->nnodes ? i - r->nnodes : i);
}

static inline uint64_t mdl_run_count_at(const struct mdl_run *r, uint32_t o)
{
	return r->passes + (o < r->rest);
}

/* Cells the node at unrolled position pos runs: 1, except for tree levels. */
uint32_t mdl_cells_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len);

/* Internal levels of a balanced binary tree over L leaves: each level pairs
 * the nodes left by the one below (an odd one is carried up), so the number
 * of internal levels is ceil(log2 L). */
static inline uint32_t mdl_tree_levels(uint32_t leaves)
{
	uint32_t levels = 0;
	for (uint64_t n = leaves; n > 1; n = (n + 1) / 2)
		levels++;
	return levels;
}

/* How many times a segment of this kind runs in one request with these lengths. */
static inline uint64_t mdl_segment_repeats(enum mdl_kind kind, uint32_t input_len, uint32_t output_len)
{
	switch (kind) {
	case MDL_STATIC:
		return 1;
	case MDL_PASS:
		return input_len ? 1 : 0;    /* all tokens at once */
	case MDL_ENCODER:
		return input_len;
	case MDL_DECODER:
		return output_len;
	case MDL_LEAF:
		return input_len ? 1 : 0;    /* all leaves run as one level */
	case MDL_INTERNAL:
		return mdl_tree_levels(input_len);
	default:
		return 0;
	}
}

/* How many times node type t runs in one request with these lengths. */
uint32_t mdl_node_repeats(const struct mdl_model *m, uint32_t t, uint32_t input_len, uint32_t output_len);

/* A pass node's per-request work for a request of len tokens as a node of
 * its own, priced at batch 1: each member term with L := len and its M rows
 * per token times len; element-wise elementwise_len * len * len. Any other
 * node gives a node with no work. */
void mdl_member_node(const struct mdl_node *n, uint32_t len, struct mdl_node *out);

/* Which of a decoder node's terms mdl_step_node keeps. */
enum mdl_step_part { MDL_STEP_ALL, MDL_STEP_P, MDL_STEP_S };

/* A decoder node at a step that attends over p positions of its own output
 * and s of its input: part ALL, the whole node; P (S), only its terms over P
 * (S) and the element-wise ops per position of P (S). */
void mdl_step_node(const struct mdl_node *n, uint32_t p, uint32_t s, enum mdl_step_part part, struct mdl_node *out);

/* Whether a decoder node has terms over P or S. */
static inline int mdl_node_has_step_terms(const struct mdl_node *n)
{
	if (n->elementwise_p || n->elementwise_s)
		return 1;
	for (uint32_t i = 0; i < n->ngemms; i++)
		if (n->gemms[i].len_var == MDL_VAR_P || n->gemms[i].len_var == MDL_VAR_S)
			return 1;
	return 0;
}

/* Whether node type t runs once per request over all its tokens (pass). */
static inline int mdl_is_pass(const struct mdl_model *m, uint32_t t) { return m->nodes[t].kind == MDL_PASS; }

/* Total weight elements of the node (sum of K*N*count over weight GEMMs). */
uint64_t mdl_node_weight_elems(const struct mdl_node *n);

/* Multiply-accumulates of one sample's pass through the node (sum of
 * M*K*N*count over all GEMMs, attention included). */
uint64_t mdl_node_macs_per_sample(const struct mdl_node *n);

/* Index of the node type called name, or -1 (e.g. to resolve the node column
 * of a latency table). */
int mdl_node_index(const struct mdl_model *m, const char *name);

/* "static", "encoder", "decoder", "pass", "leaf", "internal"; "unknown" otherwise. */
const char *mdl_kind_name(enum mdl_kind k);

#endif
