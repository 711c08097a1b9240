/* models/model.c: the loader for model description files (format in
 * models/FORMAT.md) and the unrolling of one request's chain of nodes.
 *
 * A model is a list of typed nodes in graph order. The node types follow
 * LazyBatching Sec. II-A and Algorithm 1 (STATIC nodes run once, ENCODER nodes
 * once per input step, DECODER nodes once per output step) and BatchMaker
 * Sec. 3.1 (a cell type is the unit that shares weights and is batched across
 * requests). Consecutive nodes of one kind form a segment; a request's chain
 * repeats each segment as a whole, so unrolling only needs the segment list.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "../util/lines.h"
#include "model.h"
#include "../util/text.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The build points this at the source models/ directory; a standalone
 * compile falls back to a path relative to the working directory. */
#ifndef SB_MODELS_DIR
#define SB_MODELS_DIR "models"
#endif

/* Far above any real network (ResNet-152 has ~160 layers); bounds the
 * quadratic duplicate-name check and keeps indices comfortably in uint32. */
#define MDL_MAX_NODES 4096u
/* A GEMM's M*K*N*COUNT must stay an exact integer when a hardware model
 * turns it into double-precision time. */
#define MDL_MAX_MACS (UINT64_C(1) << 53)
#define MDL_EXT ".model"
#define MDL_EXT_LEN 6

struct mdl_parser {
	const char *path;           /* as given, for messages */
	const char *expect_name;    /* built-in name the model line must repeat, or NULL */
	unsigned long line;         /* current line, 1-based */
	char *err;
	size_t errlen;
	struct mdl_model *m;
	uint32_t cap_nodes;
	unsigned long model_line;   /* 0 until the model line is seen */
	unsigned long source_line;
	unsigned long input_line;
	unsigned long output_line;
	unsigned long first_encoder_line;
	unsigned long first_decoder_line;
	unsigned long first_leaf_line;     /* tree models: leaf cells (input_len leaves per request) */
	unsigned long first_internal_line; /* tree models: internal cells */
	unsigned long llm_line;            /* the llm line, 0 if none */
	unsigned long estimate_line;       /* the estimate_lengths line, 0 if none */
	unsigned long first_p_line;        /* first node with a term over P (S) */
	unsigned long first_s_line;
};

__attribute__((format(printf, 2, 3)))
static int mdl_parse_fail(struct mdl_parser *p, const char *fmt, ...)
{
	if (p->err && p->errlen > 0) {
		int n = snprintf(p->err, p->errlen, "%s:%lu: ", p->path, p->line);
		if (n >= 0 && (size_t)n < p->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
			va_end(ap);
		}
	}
	return -1;
}

static int mdl_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Returns the next whitespace-delimited token of *cur (NUL-terminated in
 * place) and advances *cur past it, or NULL at end of line. */
static char *mdl_next_token(char **cur)
{
	char *s = *cur;
	while (*s && mdl_is_space(*s))
		s++;
	if (!*s) {
		*cur = s;
		return NULL;
	}
	char *tok = s;
	while (*s && !mdl_is_space(*s))
		s++;
	if (*s)
		*s++ = '\0';
	*cur = s;
	return tok;
}

static int mdl_name_valid(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len >= MDL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '_' && c != '.' && c != '-')
			return 0;
	}
	return 1;
}

/* Strict positive decimal (util/text.h refuses "+5", " 5" and "-5"). */
static int mdl_parse_positive(const char *s, uint64_t *out)
{
	uint64_t v;
	if (txt_parse_uint(s, UINT64_MAX, &v) != 0 || v == 0)
		return -1;
	*out = v;
	return 0;
}

static int mdl_mul_capped(uint64_t a, uint64_t b, uint64_t cap, uint64_t *out)
{
	if (b != 0 && a > cap / b)
		return -1;
	*out = a * b;
	return *out <= cap ? 0 : -1;
}

/* Whether M * K * N * COUNT * STEPS stays within MDL_MAX_MACS. */
static int mdl_macs_capped(const uint64_t dims[5])
{
	uint64_t macs = 1;
	for (int i = 0; i < 5; i++)
		if (mdl_mul_capped(macs, dims[i], MDL_MAX_MACS, &macs) != 0)
			return 0;
	return 1;
}

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

static int mdl_parse_node(struct mdl_parser *p, char *rest)
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
		uint32_t cap = p->cap_nodes ? p->cap_nodes * 2 : 16;
		struct mdl_node *nodes = realloc(m->nodes, (size_t)cap * sizeof *nodes);
		if (!nodes)
			return mdl_parse_fail(p, "out of memory");
		m->nodes = nodes;
		p->cap_nodes = cap;
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

/* Longest P or S an estimate_lengths line may give: far beyond any sentence,
 * and small enough that no term's MACs overflow. */
#define MDL_MAX_ESTIMATE_LEN 1000000u

/* estimate_lengths P=N S=N: the lengths a decoder node's table entry (and so
 * every policy's estimate) prices its terms over P and S at. */
static int mdl_parse_estimate_lengths(struct mdl_parser *p, char *rest)
{
	struct mdl_model *m = p->m;
	if (p->estimate_line)
		return mdl_parse_fail(p, "estimate_lengths given twice (first on line %lu)", p->estimate_line);
	char *tok;
	int any = 0;
	while ((tok = mdl_next_token(&rest)) != NULL) {
		uint32_t *dst = strncmp(tok, "P=", 2) == 0 ? &m->estimate_p : strncmp(tok, "S=", 2) == 0 ? &m->estimate_s : NULL;
		uint64_t v;
		if (!dst)
			return mdl_parse_fail(p, "estimate_lengths takes P=N and S=N, not '%s'", tok);
		if (*dst)
			return mdl_parse_fail(p, "estimate_lengths: %c given twice", tok[0]);
		if (mdl_parse_positive(tok + 2, &v) != 0 || v > MDL_MAX_ESTIMATE_LEN)
			return mdl_parse_fail(p, "estimate_lengths: '%s' needs a length from 1 to %u", tok, MDL_MAX_ESTIMATE_LEN);
		*dst = (uint32_t)v;
		any = 1;
	}
	if (!any)
		return mdl_parse_fail(p, "estimate_lengths needs P=N, S=N or both");
	p->estimate_line = p->line;
	return 0;
}

/* A decoder node's terms over P and S at the estimate lengths (its table
 * entry), once the whole file is read. */
static int mdl_instantiate_steps(struct mdl_parser *p)
{
	struct mdl_model *m = p->m;
	if (p->first_p_line && !m->estimate_p) {
		p->line = p->first_p_line;
		return mdl_parse_fail(p, "a term over P needs the estimate_lengths line to give P=N (the length latency "
		                      "estimates assume)");
	}
	if (p->first_s_line && !m->estimate_s) {
		p->line = p->first_s_line;
		return mdl_parse_fail(p, "a term over S needs the estimate_lengths line to give S=N (the length latency "
		                      "estimates assume)");
	}
	if (p->first_s_line && !m->uses_input_len) {
		p->line = p->first_s_line;
		return mdl_parse_fail(p, "a term over S (the input length) needs an encoder or pass node");
	}
	if ((m->estimate_p && !p->first_p_line) || (m->estimate_s && !p->first_s_line)) {
		p->line = p->estimate_line;
		return mdl_parse_fail(p, "estimate_lengths gives %s, which no decoder term uses",
		                      m->estimate_p && !p->first_p_line ? "P" : "S");
	}
	for (uint32_t t = 0; t < m->nnodes; t++) {
		struct mdl_node *n = &m->nodes[t];
		if (!mdl_node_has_step_terms(n))
			continue;
		m->has_step_terms = 1;
		struct mdl_node at;
		mdl_step_node(n, m->estimate_p, m->estimate_s, MDL_STEP_ALL, &at);
		for (uint32_t i = 0; i < at.ngemms; i++) {
			const struct mdl_gemm *g = &at.gemms[i];
			if (!mdl_macs_capped((const uint64_t[5]){ g->m_per_sample, g->k, g->n, g->count, mdl_gemm_steps(g) })) {
				p->line = p->estimate_line;
				return mdl_parse_fail(p, "node '%s': a term at the estimate lengths has M*K*N*COUNT above 2^53",
				                      n->name);
			}
		}
		*n = at;
	}
	return 0;
}

/* input_len / output_len: one spec token, stored verbatim for traces/. */
static int mdl_parse_spec(struct mdl_parser *p, const char *directive, char *rest,
                          unsigned long *seen_line, char *dst)
{
	if (*seen_line)
		return mdl_parse_fail(p, "%s given twice (first on line %lu)", directive, *seen_line);
	char *spec = mdl_next_token(&rest);
	if (!spec)
		return mdl_parse_fail(p, "%s needs a length spec (fixed:N | uniform:A:B | lognormal:MU:SIGMA[:MAX] | file:PATH | N)",
		                      directive);
	if (mdl_next_token(&rest))
		return mdl_parse_fail(p, "%s takes one length spec without spaces", directive);
	if (strlen(spec) >= MDL_SPEC_MAX)
		return mdl_parse_fail(p, "%s spec longer than %d characters", directive, MDL_SPEC_MAX - 1);
	memcpy(dst, spec, strlen(spec) + 1);
	*seen_line = p->line;
	return 0;
}

/* llm KEY=VALUE ...: every key once, all required but mlp (gated by default). */
static int mdl_parse_llm(struct mdl_parser *p, char *rest)
{
	static const struct { const char *key; size_t off; uint32_t max; } keys[] = {
		{ "layers", offsetof(struct mdl_llm, layers), 1024 },
		{ "hidden", offsetof(struct mdl_llm, hidden), 1u << 20 },
		{ "heads", offsetof(struct mdl_llm, heads), 4096 },
		{ "kv_heads", offsetof(struct mdl_llm, kv_heads), 4096 },
		{ "head_dim", offsetof(struct mdl_llm, head_dim), 4096 },
		{ "ffn", offsetof(struct mdl_llm, ffn), 1u << 22 },
		{ "vocab", offsetof(struct mdl_llm, vocab), 1u << 24 },
		{ "context", offsetof(struct mdl_llm, context), 1u << 24 },
		{ "bytes", offsetof(struct mdl_llm, elem_bytes), 8 },
	};
	enum { NKEYS = sizeof keys / sizeof keys[0] };
	struct mdl_llm *l = &p->m->llm;
	int seen[NKEYS] = { 0 }, seen_mlp = 0;
	if (p->llm_line)
		return mdl_parse_fail(p, "llm given twice (first on line %lu)", p->llm_line);
	l->gated = 1;
	char *term;
	while ((term = mdl_next_token(&rest)) != NULL) {
		char *eq = strchr(term, '=');
		if (!eq)
			return mdl_parse_fail(p, "llm term '%s' is not KEY=VALUE", term);
		*eq = '\0';
		const char *value = eq + 1;
		if (strcmp(term, "mlp") == 0) {
			if (seen_mlp++)
				return mdl_parse_fail(p, "llm key mlp given twice");
			if (strcmp(value, "gated") != 0 && strcmp(value, "plain") != 0)
				return mdl_parse_fail(p, "llm mlp must be gated or plain, got '%s'", value);
			l->gated = strcmp(value, "gated") == 0;
			continue;
		}
		size_t k = 0;
		while (k < NKEYS && strcmp(term, keys[k].key) != 0)
			k++;
		if (k == NKEYS)
			return mdl_parse_fail(p, "unknown llm key '%s' (expected layers, hidden, heads, kv_heads, head_dim, "
			                      "ffn, vocab, context, bytes, mlp)", term);
		if (seen[k]++)
			return mdl_parse_fail(p, "llm key %s given twice", term);
		uint64_t v;
		if (txt_parse_uint(value, keys[k].max, &v) != 0 || v == 0)
			return mdl_parse_fail(p, "llm %s must be an integer in [1, %u], got '%s'", term, keys[k].max, value);
		*(uint32_t *)((char *)l + keys[k].off) = (uint32_t)v;
	}
	for (size_t k = 0; k < NKEYS; k++)
		if (!seen[k])
			return mdl_parse_fail(p, "llm needs %s=", keys[k].key);
	if (l->heads % l->kv_heads != 0)
		return mdl_parse_fail(p, "llm heads (%u) must be a multiple of kv_heads (%u): each KV head serves a "
		                      "group of query heads", l->heads, l->kv_heads);
	p->llm_line = p->line;
	p->m->is_llm = 1;
	return 0;
}

uint64_t mdl_llm_weight_bytes(const struct mdl_llm *l)
{
	uint64_t q = (uint64_t)l->heads * l->head_dim, kv = (uint64_t)l->kv_heads * l->head_dim;
	uint64_t per_layer = (uint64_t)l->hidden * (q + 2 * kv) + q * l->hidden +
	                     (uint64_t)(l->gated ? 3 : 2) * l->hidden * l->ffn;
	return ((uint64_t)l->layers * per_layer + 2ull * l->vocab * l->hidden) * l->elem_bytes;
}

static int mdl_parse_line(struct mdl_parser *p, char *line)
{
	struct mdl_model *m = p->m;
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	char *rest = line;
	char *directive = mdl_next_token(&rest);
	if (!directive)
		return 0;

	if (strcmp(directive, "model") == 0) {
		if (p->model_line)
			return mdl_parse_fail(p, "model given twice (first on line %lu)", p->model_line);
		char *name = mdl_next_token(&rest);
		if (!name)
			return mdl_parse_fail(p, "model needs a name");
		if (mdl_next_token(&rest))
			return mdl_parse_fail(p, "model takes one name");
		if (!mdl_name_valid(name))
			return mdl_parse_fail(p, "bad model name '%s' (1-%d characters of A-Z a-z 0-9 _ . -)",
			                      name, MDL_NAME_MAX - 1);
		if (p->expect_name && strcmp(name, p->expect_name) != 0)
			return mdl_parse_fail(p, "model name '%s' does not match the file name '%s%s'",
			                      name, p->expect_name, MDL_EXT);
		memcpy(m->name, name, strlen(name) + 1);
		p->model_line = p->line;
		return 0;
	}
	if (!p->model_line)
		return mdl_parse_fail(p, "'%s' before the model line (model NAME must be the first directive)",
		                      directive);

	if (strcmp(directive, "source") == 0) {
		if (p->source_line)
			return mdl_parse_fail(p, "source given twice (first on line %lu)", p->source_line);
		char *text = txt_trim(rest);
		if (!*text)
			return mdl_parse_fail(p, "source needs text (where the shapes come from)");
		if (strlen(text) >= sizeof m->source)
			return mdl_parse_fail(p, "source text longer than %zu characters", sizeof m->source - 1);
		memcpy(m->source, text, strlen(text) + 1);
		p->source_line = p->line;
		return 0;
	}
	if (strcmp(directive, "input_len") == 0)
		return mdl_parse_spec(p, directive, rest, &p->input_line, m->input_len_spec);
	if (strcmp(directive, "output_len") == 0)
		return mdl_parse_spec(p, directive, rest, &p->output_line, m->output_len_spec);
	if (strcmp(directive, "node") == 0)
		return mdl_parse_node(p, rest);
	if (strcmp(directive, "llm") == 0)
		return mdl_parse_llm(p, rest);
	if (strcmp(directive, "estimate_lengths") == 0)
		return mdl_parse_estimate_lengths(p, rest);
	return mdl_parse_fail(p, "unknown directive '%s' (expected model, source, input_len, output_len, node, llm or "
	                      "estimate_lengths)", directive);
}

/* Checks that need the whole file, then builds the segment list. */
static int mdl_parse_finish(struct mdl_parser *p)
{
	struct mdl_model *m = p->m;
	unsigned long last_line = p->line ? p->line : 1;
	if (!p->model_line) {
		p->line = last_line;
		return mdl_parse_fail(p, "missing model line (model NAME must be the first directive)");
	}
	if (!p->source_line) {
		p->line = p->model_line;
		return mdl_parse_fail(p, "missing source line (source TEXT: where the shapes come from)");
	}
	if (p->llm_line) {
		/* an LLM is its llm line: prefill and decode follow from it, and both lengths are its input */
		if (m->nnodes) {
			p->line = p->llm_line;
			return mdl_parse_fail(p, "an llm model has no node lines (its layers follow from the llm line)");
		}
		if (!p->input_line || !p->output_line) {
			p->line = p->llm_line;
			return mdl_parse_fail(p, "an llm model needs input_len and output_len lines (prompt and output tokens)");
		}
		m->uses_input_len = m->uses_output_len = 1;
		return 0;
	}
	if (m->nnodes == 0) {
		p->line = last_line;
		return mdl_parse_fail(p, "model '%s' has no nodes", m->name);
	}
	m->uses_input_len = p->first_encoder_line != 0 || p->first_leaf_line != 0;
	m->uses_output_len = p->first_decoder_line != 0;
	m->is_tree = p->first_leaf_line != 0;
	if (m->uses_input_len && !p->input_line) {
		p->line = p->first_encoder_line ? p->first_encoder_line : p->first_leaf_line;
		return mdl_parse_fail(p, "model has %s nodes but no input_len line",
		                      p->first_encoder_line ? "encoder or pass" : "leaf");
	}
	if ((p->first_leaf_line != 0) != (p->first_internal_line != 0)) {
		p->line = p->first_leaf_line ? p->first_leaf_line : p->first_internal_line;
		return mdl_parse_fail(p, "a tree model needs both leaf and internal nodes");
	}
	if (p->first_leaf_line && (p->first_encoder_line || p->first_decoder_line)) {
		p->line = p->first_encoder_line ? p->first_encoder_line : p->first_decoder_line;
		return mdl_parse_fail(p, "a tree model cannot also have encoder, pass or decoder nodes");
	}
	if (p->first_leaf_line) {
		/* one tree block: the leaf nodes, then right after them the internal nodes */
		uint32_t first_leaf = UINT32_MAX, last_leaf = 0, nleaf = 0;
		uint32_t first_int = UINT32_MAX, last_int = 0, nint = 0;
		for (uint32_t i = 0; i < m->nnodes; i++) {
			if (m->nodes[i].kind == MDL_LEAF) {
				first_leaf = nleaf++ ? first_leaf : i;
				last_leaf = i;
			} else if (m->nodes[i].kind == MDL_INTERNAL) {
				first_int = nint++ ? first_int : i;
				last_int = i;
			}
		}
		if (last_leaf - first_leaf + 1 != nleaf || last_int - first_int + 1 != nint ||
		    first_int != last_leaf + 1) {
			p->line = p->first_internal_line;
			return mdl_parse_fail(p, "tree nodes must be consecutive: the leaf nodes, then the internal nodes");
		}
	}
	if (m->uses_output_len && !p->output_line) {
		p->line = p->first_decoder_line;
		return mdl_parse_fail(p, "model has decoder nodes but no output_len line");
	}

	uint32_t nseg = 0;
	for (uint32_t i = 0; i < m->nnodes; i++) {
		if (i == 0 || m->nodes[i].kind != m->nodes[i - 1].kind)
			nseg++;
	}
	m->segments = calloc(nseg, sizeof *m->segments);
	if (!m->segments) {
		p->line = last_line;
		return mdl_parse_fail(p, "out of memory");
	}
	uint32_t s = 0;
	for (uint32_t i = 0; i < m->nnodes; i++) {
		if (i > 0 && m->nodes[i].kind != m->nodes[i - 1].kind)
			s++;
		if (m->segments[s].nnodes == 0) {
			m->segments[s].kind = m->nodes[i].kind;
			m->segments[s].first_node = i;
		}
		m->segments[s].nnodes++;
		m->nodes[i].segment = s;
	}
	m->nsegments = nseg;
	return mdl_instantiate_steps(p);
}

static int mdl_load_named(const char *path, const char *expect_name, struct mdl_model **out,
                          char *err, size_t errlen)
{
	struct mdl_model *m = NULL;
	struct lines_reader rd = { 0 };
	char *line = NULL;
	size_t len;
	int got;

	if (out)
		*out = NULL;
	if (!path || !out) {
		snprintf(err, errlen, "mdl_load_file: NULL argument");
		return -1;
	}
	struct mdl_parser p = {
		.path = path, .expect_name = expect_name, .err = err, .errlen = errlen,
	};
	m = calloc(1, sizeof *m);
	if (!m) {
		snprintf(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	p.m = m;
	if (strlen(path) >= sizeof m->path) {
		snprintf(err, errlen, "%s: path longer than %zu characters", path, sizeof m->path - 1);
		goto fail;
	}
	memcpy(m->path, path, strlen(path) + 1);

	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		p.line = rd.lineno;
		if (mdl_parse_line(&p, line) != 0)
			goto fail;
	}
	if (got < 0)
		goto fail;
	if (mdl_parse_finish(&p) != 0)
		goto fail;

	lines_close(&rd);
	*out = m;
	return 0;
fail:
	lines_close(&rd);
	mdl_free(m);
	return -1;
}

int mdl_load_file(const char *path, struct mdl_model **out, char *err, size_t errlen)
{
	return mdl_load_named(path, NULL, out, err, errlen);
}

struct mdl_known {
	char *buf;      /* not owned: the caller's message buffer tail */
	size_t cap;
	size_t len;
	int count;
};

static void mdl_known_add(const char *name, void *ctx)
{
	struct mdl_known *k = ctx;
	if (k->len >= k->cap)
		return;
	int n = snprintf(k->buf + k->len, k->cap - k->len, "%s%s", k->count ? ", " : "", name);
	if (n > 0)
		k->len += (size_t)n;
	k->count++;
}

int mdl_load(const char *name_or_path, struct mdl_model **out, char *err, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!name_or_path || !out) {
		snprintf(err, errlen, "mdl_load: NULL argument");
		return -1;
	}
	size_t len = strlen(name_or_path);
	if (strchr(name_or_path, '/') ||
	    (len >= MDL_EXT_LEN && strcmp(name_or_path + len - MDL_EXT_LEN, MDL_EXT) == 0))
		return mdl_load_file(name_or_path, out, err, errlen);

	const char *dir = mdl_dir();
	char path[sizeof ((struct mdl_model *)0)->path];
	int n = snprintf(path, sizeof path, "%s/%s%s", dir, name_or_path, MDL_EXT);
	struct stat st;
	if (!mdl_name_valid(name_or_path) || n < 0 || (size_t)n >= sizeof path ||
	    (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))) {
		char known[256];
		struct mdl_known k = { .buf = known, .cap = sizeof known, .len = 0, .count = 0 };
		known[0] = '\0';
		if (mdl_list(mdl_known_add, &k) > 0)
			snprintf(err, errlen, "unknown model '%s' (known: %s)", name_or_path, known);
		else
			snprintf(err, errlen, "unknown model '%s' (no model files in %s)", name_or_path, dir);
		return -1;
	}
	return mdl_load_named(path, name_or_path, out, err, errlen);
}

void mdl_free(struct mdl_model *m)
{
	if (!m)
		return;
	free(m->nodes);
	free(m->segments);
	free(m);
}

const char *mdl_dir(void)
{
	const char *env = getenv("SIMBATCH_MODELS");
	return env && env[0] ? env : SB_MODELS_DIR;
}

static int mdl_cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int mdl_list(void (*cb)(const char *name, void *ctx), void *ctx)
{
	DIR *d = opendir(mdl_dir());
	if (!d)
		return -1;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len <= MDL_EXT_LEN || strcmp(e->d_name + len - MDL_EXT_LEN, MDL_EXT) != 0)
			continue;
		char *name = strndup(e->d_name, len - MDL_EXT_LEN);
		if (!name)
			goto done;
		/* Only files that mdl_load could load by that name. */
		if (!mdl_name_valid(name) || n >= (size_t)INT32_MAX) {
			free(name);
			continue;
		}
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 16;
			char **nn = realloc(names, ncap * sizeof *nn);
			if (!nn) {
				free(name);
				goto done;
			}
			names = nn;
			cap = ncap;
		}
		names[n++] = name;
	}
	if (n > 0)
		qsort(names, n, sizeof *names, mdl_cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (cb)
			cb(names[i], ctx);
	}
	rc = (int)n;
done:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}

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
