/* models/node_parse.c: one node line of a model file (models/FORMAT.md):
 * its kind, its GEMM and convolution terms, their bounds (parse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "parse.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/text.h"

/* value is "M,K,N" followed by optional ",xCOUNT" and ",sSTEPS" in either
 * order (the text after "gemm=" / "attn="). */
static int mdl_parse_gemm(struct mdl_parser *p, const char *term, char *value,
                          uint32_t weight_shared, struct mdl_node *node)
{
	const char *what = weight_shared ? "attn" : "gemm";
	if (node->ngemms >= MDL_MAX_GEMMS)
		return mdl_parse_fail(p, "node '%s' has more than %d gemm/attn terms (conv= terms count too)",
		                      node->name, MDL_MAX_GEMMS);

	char *field[5];
	size_t nfields = txt_split(value, ',', field, 5);
	if (nfields < 3 || nfields > 5)
		return mdl_parse_fail(p, "malformed %s term '%s' (expected %s=M,K,N[,xCOUNT]) with an optional ,sSTEPS",
		                      what, term, what);

	/* v: M, K, N, COUNT, STEPS */
	uint64_t v[5] = { 0, 0, 0, 1, 1 };
	int seen[5] = { 0 };
	uint32_t len_dims = 0;
	enum mdl_len_var len_var = MDL_VAR_NONE;
	for (int i = 0; i < (int)nfields; i++) {
		const char *f = field[i];
		int slot = i;
		enum mdl_len_var var = strcmp(f, "L") == 0 ? MDL_VAR_L : strcmp(f, "P") == 0 ? MDL_VAR_P
		                     : strcmp(f, "S") == 0 ? MDL_VAR_S : MDL_VAR_NONE;
		if ((i == 1 || i == 2) && var != MDL_VAR_NONE) {
			/* a request's own length: L, its tokens in a pass node; P and S, what a decoder step attends to */
			if (var == MDL_VAR_L && (!weight_shared || node->kind != MDL_PASS))
				return mdl_parse_fail(p, "%s term '%s': L (the request's length) is allowed only in the K or N "
				                      "of an attn term of a pass node", what, term);
			if (var != MDL_VAR_L && (!weight_shared || node->kind != MDL_DECODER))
				return mdl_parse_fail(p, "%s term '%s': %s (the positions a decoder step attends to) is allowed "
				                      "only in the K or N of an attn term of a decoder node", what, term, f);
			if (len_var != MDL_VAR_NONE && len_var != var)
				return mdl_parse_fail(p, "%s term '%s' names two lengths (one of L, P, S a term)", what, term);
			len_var = var;
			len_dims |= i == 1 ? MDL_LEN_K : MDL_LEN_N;
			seen[slot] = 1;
			v[slot] = 1;
			continue;
		}
		if (i >= 3) {
			if (f[0] != 'x' && f[0] != 's')
				return mdl_parse_fail(p, "malformed %s term '%s': count must be written xCOUNT and steps sSTEPS",
				                      what, term);
			slot = f[0] == 'x' ? 3 : 4;
			if (seen[slot])
				return mdl_parse_fail(p, "malformed %s term '%s': %s given twice", what, term,
				                      slot == 3 ? "xCOUNT" : "sSTEPS");
			f++;
		}
		seen[slot] = 1;
		if (mdl_parse_positive(f, &v[slot]) != 0)
			return mdl_parse_fail(p, "malformed %s term '%s': '%s' is not a positive decimal integer",
			                      what, term, f);
	}
	if (v[3] > UINT32_MAX)
		return mdl_parse_fail(p, "%s term '%s': count above %lu", what, term,
		                      (unsigned long)UINT32_MAX);
	if (v[4] > UINT32_MAX)
		return mdl_parse_fail(p, "%s term '%s': steps above %lu", what, term,
		                      (unsigned long)UINT32_MAX);
	if (!mdl_macs_capped(v))
		return mdl_parse_fail(p, "%s term '%s': M*K*N*COUNT%s above 2^53", what, term, seen[4] ? "*STEPS" : "");

	if (len_dims && node->nmember >= MDL_MAX_GEMMS)
		return mdl_parse_fail(p, "node '%s' has more than %d attn terms over L", node->name, MDL_MAX_GEMMS);
	struct mdl_gemm *g = len_var == MDL_VAR_L ? &node->member[node->nmember++] : &node->gemms[node->ngemms++];
	memset(g, 0, sizeof *g);
	g->len_dims = len_dims;
	g->len_var = len_var;
	g->m_per_sample = v[0];
	g->k = v[1];
	g->n = v[2];
	g->count = (uint32_t)v[3];
	g->weight_shared = weight_shared;
	g->steps = (uint32_t)v[4];
	return 0;
}

/* A conv= STRIDE or PAD field: "N" (both dimensions) or "AxB" (height x
 * width). Zero is allowed only when allow_zero (padding). */
static int mdl_parse_pair(const char *f, int allow_zero, uint32_t *a, uint32_t *b)
{
	char buf[48];
	uint64_t v[2];
	if (strlen(f) >= sizeof buf)
		return -1;
	strcpy(buf, f);
	char *x = strchr(buf, 'x');
	if (x)
		*x = '\0';
	const char *part[2] = { buf, x ? x + 1 : buf };
	for (int i = 0; i < 2; i++) {
		if (allow_zero && strcmp(part[i], "0") == 0)
			v[i] = 0;
		else if (mdl_parse_positive(part[i], &v[i]) != 0 || v[i] > UINT32_MAX)
			return -1;
	}
	*a = (uint32_t)v[0];
	*b = (uint32_t)v[1];
	return 0;
}

/* value is "H,W,C,R,S,K,STRIDE,PAD[,gGROUPS]" (the text after "conv="):
 * a convolution lowered by im2col to M = OH*OW, K = (C/G)*R*S, N = K/G,
 * one GEMM per group (FORMAT.md). */
static int mdl_parse_conv(struct mdl_parser *p, const char *term, char *value, struct mdl_node *node)
{
	if (node->ngemms >= MDL_MAX_GEMMS)
		return mdl_parse_fail(p, "node '%s' has more than %d gemm/attn terms (conv= terms count too)",
		                      node->name, MDL_MAX_GEMMS);
	char *field[9] = { 0 };
	size_t nfields = txt_split(value, ',', field, 9);
	if (nfields < 8 || nfields > 9)
		return mdl_parse_fail(p, "malformed conv term '%s' (expected conv=H,W,C,R,S,K,STRIDE,PAD[,gGROUPS])",
		                      term);
	static const char *const names[6] = { "H", "W", "C", "R", "S", "K" };
	uint64_t v[6];
	for (int i = 0; i < 6; i++) {
		if (mdl_parse_positive(field[i], &v[i]) != 0 || v[i] > UINT32_MAX)
			return mdl_parse_fail(p, "malformed conv term '%s': %s '%s' is not a positive decimal integer",
			                      term, names[i], field[i]);
	}
	struct mdl_conv cv = {
		.h = (uint32_t)v[0], .w = (uint32_t)v[1], .c = (uint32_t)v[2],
		.r = (uint32_t)v[3], .s = (uint32_t)v[4], .k = (uint32_t)v[5], .groups = 1,
	};
	if (mdl_parse_pair(field[6], 0, &cv.stride_h, &cv.stride_w) != 0)
		return mdl_parse_fail(p, "malformed conv term '%s': STRIDE '%s' must be N or AxB, positive",
		                      term, field[6]);
	if (mdl_parse_pair(field[7], 1, &cv.pad_h, &cv.pad_w) != 0)
		return mdl_parse_fail(p, "malformed conv term '%s': PAD '%s' must be N or AxB, zero or positive",
		                      term, field[7]);
	if (nfields == 9) {
		uint64_t g;
		if (field[8][0] != 'g' || mdl_parse_positive(field[8] + 1, &g) != 0 || g > UINT32_MAX)
			return mdl_parse_fail(p, "malformed conv term '%s': groups must be written gGROUPS", term);
		cv.groups = (uint32_t)g;
	}
	if (cv.c % cv.groups != 0 || cv.k % cv.groups != 0)
		return mdl_parse_fail(p, "conv term '%s': %u groups do not divide C = %u and K = %u",
		                      term, cv.groups, cv.c, cv.k);
	uint64_t span_h = (uint64_t)cv.h + 2ull * cv.pad_h, span_w = (uint64_t)cv.w + 2ull * cv.pad_w;
	if (span_h < cv.r || span_w < cv.s)
		return mdl_parse_fail(p, "conv term '%s': the %ux%u filter is larger than the padded %llux%llu input",
		                      term, cv.r, cv.s, (unsigned long long)span_h, (unsigned long long)span_w);
	uint64_t out_h = (span_h - cv.r) / cv.stride_h + 1, out_w = (span_w - cv.s) / cv.stride_w + 1;
	if (out_h > UINT32_MAX || out_w > UINT32_MAX)
		return mdl_parse_fail(p, "conv term '%s': output %llux%llu larger than 2^32 a side", term,
		                      (unsigned long long)out_h, (unsigned long long)out_w);
	cv.out_h = (uint32_t)out_h;
	cv.out_w = (uint32_t)out_w;

	uint64_t m = (uint64_t)cv.out_h * cv.out_w;
	uint64_t k = (uint64_t)(cv.c / cv.groups) * cv.r * cv.s;
	uint64_t n = cv.k / cv.groups, macs;
	if (mdl_mul_capped(m, k, MDL_MAX_MACS, &macs) != 0 || mdl_mul_capped(macs, n, MDL_MAX_MACS, &macs) != 0 ||
	    mdl_mul_capped(macs, cv.groups, MDL_MAX_MACS, &macs) != 0)
		return mdl_parse_fail(p, "conv term '%s': M*K*N*GROUPS above 2^53", term);

	struct mdl_gemm *gm = &node->gemms[node->ngemms++];
	gm->m_per_sample = m;
	gm->k = k;
	gm->n = n;
	gm->count = cv.groups;
	gm->weight_shared = 0;
	gm->steps = 1;
	gm->is_conv = 1;
	gm->conv = cv;
	return 0;
}

static int mdl_parse_kind(struct mdl_parser *p, const char *s, enum mdl_kind *out)
{
	if (strcmp(s, "static") == 0)
		*out = MDL_STATIC;
	else if (strcmp(s, "encoder") == 0)
		*out = MDL_ENCODER;
	else if (strcmp(s, "decoder") == 0)
		*out = MDL_DECODER;
	else if (strcmp(s, "leaf") == 0)
		*out = MDL_LEAF;
	else if (strcmp(s, "internal") == 0)
		*out = MDL_INTERNAL;
	else if (strcmp(s, "pass") == 0)
		*out = MDL_PASS;
	else
		return mdl_parse_fail(p, "unknown node kind '%s' (expected static|encoder|decoder|pass|leaf|internal)", s);
	return 0;
}

int mdl_parse_node(struct mdl_parser *p, char *rest)
{
	struct mdl_model *m = p->m;
	char *name = mdl_next_token(&rest);
	char *kind = name ? mdl_next_token(&rest) : NULL;
	if (!name || !kind)
		return mdl_parse_fail(p, "node needs a name and a kind: node NAME static|encoder|decoder [gemm=M,K,N[,xCOUNT][,sSTEPS]]... [attn=...]... [conv=H,W,C,R,S,K,STRIDE,PAD[,gGROUPS]]... [elementwise=E]");
	if (!mdl_name_valid(name))
		return mdl_parse_fail(p, "bad node name '%s' (1-%d characters of A-Z a-z 0-9 _ . -)",
		                      name, MDL_NAME_MAX - 1);
	for (uint32_t i = 0; i < m->nnodes; i++) {
		if (strcmp(m->nodes[i].name, name) == 0)
			return mdl_parse_fail(p, "duplicate node name '%s'", name);
	}
	if (m->nnodes >= MDL_MAX_NODES)
		return mdl_parse_fail(p, "more than %u nodes", MDL_MAX_NODES);

	struct mdl_node node;
	memset(&node, 0, sizeof node);
	memcpy(node.name, name, strlen(name) + 1);
	if (mdl_parse_kind(p, kind, &node.kind) != 0)
		return -1;

	int have_elementwise = 0;
	char *term;
	while ((term = mdl_next_token(&rest)) != NULL) {
		char *eq = strchr(term, '=');
		if (!eq)
			return mdl_parse_fail(p, "unknown node attribute '%s' (expected gemm=, attn=, conv= or elementwise=)",
			                      term);
		/* Keep an unmodified copy of the term for messages. */
		char shown[128];
		snprintf(shown, sizeof shown, "%s", term);
		*eq = '\0';
		char *value = eq + 1;
		if (strcmp(term, "gemm") == 0 || strcmp(term, "attn") == 0) {
			uint32_t ws = strcmp(term, "attn") == 0;
			if (mdl_parse_gemm(p, shown, value, ws, &node) != 0)
				return -1;
		} else if (strcmp(term, "conv") == 0) {
			if (mdl_parse_conv(p, shown, value, &node) != 0)
				return -1;
		} else if (strcmp(term, "elementwise") == 0) {
			if (have_elementwise)
				return mdl_parse_fail(p, "node '%s': elementwise= given twice", node.name);
			if (mdl_parse_positive(value, &node.elementwise_per_sample) != 0)
				return mdl_parse_fail(p, "malformed '%s': elementwise=E needs a positive decimal integer",
				                      shown);
			have_elementwise = 1;
		} else if (strcmp(term, "elementwise_len") == 0) {
			if (node.kind != MDL_PASS)
				return mdl_parse_fail(p, "node '%s': elementwise_len= is for pass nodes only", node.name);
			if (node.elementwise_len)
				return mdl_parse_fail(p, "node '%s': elementwise_len= given twice", node.name);
			if (mdl_parse_positive(value, &node.elementwise_len) != 0)
				return mdl_parse_fail(p, "malformed '%s': elementwise_len=E needs a positive decimal integer",
				                      shown);
		} else if (strcmp(term, "elementwise_P") == 0 || strcmp(term, "elementwise_S") == 0) {
			uint64_t *ops = term[12] == 'P' ? &node.elementwise_p : &node.elementwise_s;
			if (node.kind != MDL_DECODER)
				return mdl_parse_fail(p, "node '%s': %s= is for decoder nodes only", node.name, term);
			if (*ops)
				return mdl_parse_fail(p, "node '%s': %s= given twice", node.name, term);
			if (mdl_parse_positive(value, ops) != 0)
				return mdl_parse_fail(p, "malformed '%s': %s=E needs a positive decimal integer", shown, term);
		} else {
			return mdl_parse_fail(p, "unknown node attribute '%s=' (expected gemm=, attn=, conv=, elementwise=, "
			                      "elementwise_len=, elementwise_P= or elementwise_S=)", term);
		}
	}
	if (node.ngemms == 0 && node.nmember == 0 && !have_elementwise && !node.elementwise_len)
		return mdl_parse_fail(p, "node '%s' has no work (give gemm=, attn=, conv= or elementwise=)", node.name);

	if (m->nnodes == p->cap_nodes) {
		size_t cap = p->cap_nodes;
		if (GROW(m->nodes, cap, cap + 1, 16) != 0 || cap > UINT32_MAX) {
			err_kind_mark(ERR_MEMORY);
			return mdl_parse_fail(p, "out of memory");
		}
		p->cap_nodes = (uint32_t)cap;
	}
	if ((node.kind == MDL_ENCODER || node.kind == MDL_PASS) && !p->first_encoder_line)
		p->first_encoder_line = p->line;
	if (node.nmember || node.elementwise_len)
		m->has_member_terms = 1;
	if (node.kind == MDL_DECODER && !p->first_decoder_line)
		p->first_decoder_line = p->line;
	for (uint32_t i = 0; i < node.ngemms; i++) {
		if (node.gemms[i].len_var == MDL_VAR_P && !p->first_p_line)
			p->first_p_line = p->line;
		if (node.gemms[i].len_var == MDL_VAR_S && !p->first_s_line)
			p->first_s_line = p->line;
	}
	if (node.elementwise_p && !p->first_p_line)
		p->first_p_line = p->line;
	if (node.elementwise_s && !p->first_s_line)
		p->first_s_line = p->line;
	if (node.kind == MDL_LEAF && !p->first_leaf_line)
		p->first_leaf_line = p->line;
	if (node.kind == MDL_INTERNAL && !p->first_internal_line)
		p->first_internal_line = p->line;
	m->nodes[m->nnodes++] = node;
	return 0;
}
