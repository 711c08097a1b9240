/* models/model.c: the loader for model description files (format in
 * models/FORMAT.md): the file, its directives, the checks of the whole
 * model and its segments. A node line is node_parse.c's, models by name
 * catalogue.c's, the unrolling of one request's chain unroll.c's.
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
#include "../util/errkind.h"
#include "model.h"
#include "unroll.h"
#include "parse.h"
#include "../util/text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	int seen[NKEYS] = { 0 }, seen_mlp = 0, seen_dtype = 0, seen_kv_dtype = 0;
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
		if (strcmp(term, "dtype") == 0 || strcmp(term, "kv_dtype") == 0) {
			int kv = term[0] == 'k';
			if ((*(kv ? &seen_kv_dtype : &seen_dtype))++)
				return mdl_parse_fail(p, "llm key %s given twice", term);
			uint32_t t = mdl_dtype_parse(value);
			if (!t)
				return mdl_parse_fail(p, "llm %s must be fp32, fp16, bf16 or fp8, got '%s'", term, value);
			*(kv ? &l->kv_dtype : &l->dtype) = t;
			continue;
		}
		size_t k = 0;
		while (k < NKEYS && strcmp(term, keys[k].key) != 0)
			k++;
		if (k == NKEYS)
			return mdl_parse_fail(p, "unknown llm key '%s' (expected layers, hidden, heads, kv_heads, head_dim, "
			                      "ffn, vocab, context, bytes, mlp, dtype, kv_dtype)", term);
		if (seen[k]++)
			return mdl_parse_fail(p, "llm key %s given twice", term);
		uint64_t v;
		if (txt_parse_uint(value, keys[k].max, &v) != 0 || v == 0)
			return mdl_parse_fail(p, "llm %s must be an integer in [1, %u], got '%s'", term, keys[k].max, value);
		*(uint32_t *)((char *)l + keys[k].off) = (uint32_t)v;
	}
	for (size_t k = 0; k < NKEYS; k++)
		if (!seen[k] && !(strcmp(keys[k].key, "bytes") == 0 && seen_dtype))
			return mdl_parse_fail(p, "llm needs %s=", strcmp(keys[k].key, "bytes") == 0 ? "bytes= or dtype" :
			                      keys[k].key);
	if (mdl_llm_dtypes(p, l, seen[NKEYS - 1]) != 0)
		return -1;
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
	uint64_t attn = (uint64_t)l->hidden * (q + 2 * kv) + q * l->hidden;
	uint64_t dense_mlp = (uint64_t)(l->gated ? 3 : 2) * l->hidden * l->ffn;
	uint64_t moe_layers = mdl_llm_moe_layers(l);
	/* a MoE layer: each routed and shared expert a gated MLP, and the router's hidden x experts */
	uint64_t moe_mlp = 3ull * l->hidden * ((uint64_t)l->moe.experts * l->moe.expert_ffn +
	                                       (uint64_t)l->moe.shared_experts * l->moe.shared_ffn) +
	                   (uint64_t)l->hidden * l->moe.experts;
	return ((uint64_t)l->layers * attn + (l->layers - moe_layers) * dense_mlp + moe_layers * moe_mlp +
	        2ull * l->vocab * l->hidden) * l->elem_bytes;
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
	if (strcmp(directive, "moe") == 0)
		return mdl_parse_moe(p, rest);
	return mdl_parse_fail(p, "unknown directive '%s' (expected model, source, input_len, output_len, node, llm, moe "
	                      "or estimate_lengths)", directive);
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
		return mdl_moe_finish(p);
	}
	if (p->moe_line) {
		p->line = p->moe_line;
		return mdl_parse_fail(p, "a moe line describes an llm model's MLPs; this model has no llm line");
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
		err_kind_mark(ERR_MEMORY);
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

int mdl_load_named(const char *path, const char *expect_name, struct mdl_model **out,
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
		err_memory(err, errlen, "%s: out of memory", path);
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

void mdl_free(struct mdl_model *m)
{
	if (!m)
		return;
	free(m->nodes);
	free(m->segments);
	free(m);
}
