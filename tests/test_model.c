/* tests/test_model.c: the model loader (models/model.c) and the built-in
 * model files. Checks segment building and unrolling against hand-unrolled
 * chains (LazyBatching Algorithm 1 node types), every loader error (each
 * must name file and line), the models-directory lookup, and the built-in
 * files' MAC and weight totals against closed forms derived here from the
 * published architectures, not from the files.
 *
 * Build with -DSB_MODELS_DIR='"<source>/models"' (as for models/model.c) so
 * the built-in files are found; $SIMBATCH_MODELS, when set, wins.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

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

#include "models/model.h"
#include "models/unroll.h"

#ifndef SB_MODELS_DIR
#define SB_MODELS_DIR "models"
#endif

/* Where the built-in files are, fixed at start-up before any test changes
 * $SIMBATCH_MODELS. */
static char test_builtin_dir[512];

static void test_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* Writes text to a fresh temporary file; returns its path (caller frees and
 * unlinks). */
static char *test_tmp_model(const char *text)
{
	char tmpl[] = "/tmp/test_model_XXXXXX";
	int fd = mkstemp(tmpl);
	assert_true(fd >= 0);
	size_t len = strlen(text);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	char *path = strdup(tmpl);
	assert_non_null(path);
	return path;
}

static struct mdl_model *test_load_ok(const char *text)
{
	char *path = test_tmp_model(text);
	struct mdl_model *m = NULL;
	char err[256] = "";
	int rc = mdl_load_file(path, &m, err, sizeof err);
	if (rc != 0)
		print_error("unexpected error: %s\n", err);
	assert_int_equal(rc, 0);
	assert_non_null(m);
	assert_string_equal(m->path, path);
	unlink(path);
	free(path);
	return m;
}

/* The load must fail with "PATH:LINE: ...what..." and leave *out NULL. */
static void test_load_err(const char *text, unsigned line, const char *what)
{
	char *path = test_tmp_model(text);
	struct mdl_model *m = (struct mdl_model *)&m;  /* must be cleared */
	char err[512] = "";
	int rc = mdl_load_file(path, &m, err, sizeof err);
	char prefix[600];
	snprintf(prefix, sizeof prefix, "%s:%u: ", path, line);
	if (rc != -1 || strncmp(err, prefix, strlen(prefix)) != 0 || !strstr(err, what))
		print_error("input:\n%s\nwant prefix '%s' and '%s'\ngot rc %d: '%s'\n",
		            text, prefix, what, rc, err);
	assert_int_equal(rc, -1);
	assert_null(m);
	assert_int_equal(strncmp(err, prefix, strlen(prefix)), 0);
	assert_non_null(strstr(err, what));
	assert_null(strchr(err, '\n'));
	unlink(path);
	free(path);
}

/* ---- decoder steps over P and S ---- */

static const char *test_step_text =
	"model stepped\n"
	"source hand-made test model\n"
	"input_len fixed:7\n"
	"output_len fixed:5\n"
	"estimate_lengths P=12 S=23\n"
	"node enc  pass    gemm=1,16,16\n"
	"node dec  decoder gemm=1,16,48 attn=1,4,P,x2 attn=1,P,4,x2 attn=1,4,S,x2 elementwise=100 elementwise_P=10 "
	"elementwise_S=3\n";

/* A decoder node's terms over P and S sit at the estimate lengths in the
 * node (what its table entry and every estimate price), and mdl_step_node
 * puts any step's lengths in their place: each shape and element-wise
 * count below from the line's numbers by hand. */
static void test_decoder_step_terms(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(test_step_text);
	assert_true(m->has_step_terms);
	assert_int_equal(m->estimate_p, 12);
	assert_int_equal(m->estimate_s, 23);
	const struct mdl_node *d = &m->nodes[1];
	assert_true(mdl_node_has_step_terms(d));
	assert_false(mdl_node_has_step_terms(&m->nodes[0]));
	assert_int_equal(d->ngemms, 4);
	assert_int_equal(d->gemms[1].n, 12);      /* scores over P = 12 */
	assert_int_equal(d->gemms[2].k, 12);      /* context over P */
	assert_int_equal(d->gemms[3].n, 23);      /* scores over S = 23 */
	assert_int_equal(d->elementwise_per_sample, 100 + 10 * 12 + 3 * 23);
	assert_int_equal(mdl_node_macs_per_sample(d), 16 * 48 + 2 * (4 * 12) * 2 + 2 * 4 * 23);

	struct mdl_node at;
	mdl_step_node(d, 5, 7, MDL_STEP_ALL, &at);
	assert_int_equal(at.ngemms, 4);
	assert_int_equal(at.gemms[0].n, 48);
	assert_int_equal(at.gemms[1].n, 5);
	assert_int_equal(at.gemms[2].k, 5);
	assert_int_equal(at.gemms[2].n, 4);
	assert_int_equal(at.gemms[3].n, 7);
	assert_int_equal(at.elementwise_per_sample, 100 + 10 * 5 + 3 * 7);
	/* again from the step node: the fixed part stays fixed */
	struct mdl_node again;
	mdl_step_node(&at, 1, 1, MDL_STEP_ALL, &again);
	assert_int_equal(again.elementwise_per_sample, 100 + 10 + 3);
	assert_int_equal(again.gemms[1].n, 1);

	mdl_step_node(d, 5, 7, MDL_STEP_P, &at);
	assert_int_equal(at.ngemms, 2);
	assert_int_equal(at.gemms[0].n, 5);
	assert_int_equal(at.gemms[1].k, 5);
	assert_int_equal(at.elementwise_per_sample, 10 * 5);
	mdl_step_node(d, 5, 7, MDL_STEP_S, &at);
	assert_int_equal(at.ngemms, 1);
	assert_int_equal(at.gemms[0].n, 7);
	assert_int_equal(at.gemms[0].count, 2);
	assert_int_equal(at.elementwise_per_sample, 3 * 7);
	mdl_free(m);
}

static void test_decoder_step_errors(void **state)
{
	(void)state;
	const char *head = "model bad\nsource s\ninput_len fixed:3\noutput_len fixed:3\nnode enc pass gemm=1,4,4\n";
	char text[1024];
	snprintf(text, sizeof text, "%sestimate_lengths P=2\nnode dec decoder gemm=1,4,P\n", head);
	test_load_err(text, 7, "only in the K or N of an attn term of a decoder node");
	snprintf(text, sizeof text, "%sestimate_lengths S=2\nnode enc2 pass attn=1,4,S\n", head);
	test_load_err(text, 7, "only in the K or N of an attn term of a decoder node");
	snprintf(text, sizeof text, "%sestimate_lengths P=2\nnode dec decoder attn=1,P,S\n", head);
	test_load_err(text, 7, "names two lengths");
	snprintf(text, sizeof text, "%snode dec decoder attn=1,4,P\n", head);
	test_load_err(text, 6, "needs the estimate_lengths line to give P=N");
	snprintf(text, sizeof text, "%sestimate_lengths P=4\nnode dec decoder gemm=1,4,4 elementwise_S=3\n", head);
	test_load_err(text, 7, "needs the estimate_lengths line to give S=N");
	snprintf(text, sizeof text, "%sestimate_lengths P=4 S=2\nnode dec decoder attn=1,4,P\n", head);
	test_load_err(text, 6, "estimate_lengths gives S, which no decoder term uses");
	snprintf(text, sizeof text, "%sestimate_lengths P=0\nnode dec decoder attn=1,4,P\n", head);
	test_load_err(text, 6, "needs a length from 1 to");
	snprintf(text, sizeof text, "%sestimate_lengths P=2 P=3\nnode dec decoder attn=1,4,P\n", head);
	test_load_err(text, 6, "P given twice");
	snprintf(text, sizeof text, "%sestimate_lengths Q=2\n", head);
	test_load_err(text, 6, "takes P=N and S=N");
	snprintf(text, sizeof text, "%sestimate_lengths P=2\nestimate_lengths P=2\n", head);
	test_load_err(text, 7, "estimate_lengths given twice");
	snprintf(text, sizeof text, "%snode x pass gemm=1,4,4 elementwise_P=3\n", head);
	test_load_err(text, 6, "elementwise_P= is for decoder nodes only");
}

/* ---- segments and unrolling ---- */

static const char *test_mixed_text =
	"# a static stem, a two-node encoder, a two-node decoder, a static tail\n"
	"model mixed\n"
	"source hand-made test model\n"
	"input_len fixed:3\n"
	"output_len uniform:1:4\n"
	"node stem    static  gemm=4,3,2\n"
	"node enc_a   encoder gemm=1,8,8\n"
	"node enc_b   encoder gemm=1,8,8\n"
	"node dec_a   decoder gemm=1,8,8\n"
	"node dec_b   decoder gemm=1,8,16\n"
	"node tail    static  elementwise=10\n";

static void test_segments(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(test_mixed_text);
	assert_string_equal(m->name, "mixed");
	assert_int_equal(m->nnodes, 6);
	assert_int_equal(m->nsegments, 4);
	/* Runs of equal kinds: [stem] [enc_a enc_b] [dec_a dec_b] [tail]. */
	const enum mdl_kind kind[4] = { MDL_STATIC, MDL_ENCODER, MDL_DECODER, MDL_STATIC };
	const uint32_t first[4] = { 0, 1, 3, 5 }, count[4] = { 1, 2, 2, 1 };
	for (int s = 0; s < 4; s++) {
		assert_int_equal(m->segments[s].kind, kind[s]);
		assert_int_equal(m->segments[s].first_node, first[s]);
		assert_int_equal(m->segments[s].nnodes, count[s]);
	}
	const uint32_t seg_of[6] = { 0, 1, 1, 2, 2, 3 };
	for (int i = 0; i < 6; i++)
		assert_int_equal(m->nodes[i].segment, seg_of[i]);
	assert_int_equal(m->uses_input_len, 1);
	assert_int_equal(m->uses_output_len, 1);
	assert_string_equal(m->input_len_spec, "fixed:3");
	assert_string_equal(m->output_len_spec, "uniform:1:4");
	assert_string_equal(m->source, "hand-made test model");
	mdl_free(m);
}

/* A tree over L leaves unrolls into its ASAP levels. L = 5, balanced pairing:
 * leaves 5; level 1 pairs 4 of the 5 (2 cells, 3 nodes left); level 2: 1 cell
 * (2 left); level 3: 1 cell (the root). 2+1+1 = 4 = L-1 internal cells,
 * ceil(log2 5) = 3 levels. With a static embedding first and a static
 * classifier last: embed, leaf, int, int, int, classify. */
static void test_tree_levels(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok("model t\nsource s\ninput_len 5\n"
	                                   "node embed static gemm=1,4,4\nnode leaf leaf gemm=1,8,16\n"
	                                   "node int internal gemm=1,16,16\nnode cls static gemm=1,4,2\n");
	assert_true(m->is_tree);
	assert_true(m->uses_input_len);
	const uint32_t types[] = { 0, 1, 2, 2, 2, 3 }, cells[] = { 1, 5, 2, 1, 1, 1 };
	assert_int_equal(mdl_chain_length(m, 5, 0), 6);
	uint32_t internal = 0;
	for (uint64_t pos = 0; pos < 6; pos++) {
		assert_int_equal(mdl_node_at(m, pos, 5, 0), types[pos]);
		assert_int_equal(mdl_cells_at(m, pos, 5, 0), cells[pos]);
		internal += types[pos] == 2 ? cells[pos] : 0;
	}
	assert_int_equal(internal, 4);
	/* L = 8: 4 + 2 + 1 = 7 internal cells in 3 levels; L = 1: no internal level. */
	assert_int_equal(mdl_chain_length(m, 8, 0), 1 + 1 + 3 + 1);
	assert_int_equal(mdl_cells_at(m, 2, 8, 0), 4);
	assert_int_equal(mdl_cells_at(m, 3, 8, 0), 2);
	assert_int_equal(mdl_cells_at(m, 4, 8, 0), 1);
	assert_int_equal(mdl_chain_length(m, 1, 0), 3);
	assert_int_equal(mdl_node_repeats(m, 2, 8, 0), 3);
	mdl_free(m);
}

static void test_unroll(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(test_mixed_text);

	/* input 3, output 2: stem, (enc_a enc_b) x3, (dec_a dec_b) x2, tail. */
	const uint32_t chain32[] = { 0, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 5 };
	assert_int_equal(mdl_chain_length(m, 3, 2), 12);
	for (uint64_t pos = 0; pos < 12; pos++)
		assert_int_equal(mdl_node_at(m, pos, 3, 2), chain32[pos]);
	assert_int_equal(mdl_node_at(m, 12, 3, 2), UINT32_MAX);

	/* input 0: the encoder segment vanishes. */
	const uint32_t chain01[] = { 0, 3, 4, 5 };
	assert_int_equal(mdl_chain_length(m, 0, 1), 4);
	for (uint64_t pos = 0; pos < 4; pos++)
		assert_int_equal(mdl_node_at(m, pos, 0, 1), chain01[pos]);

	/* Long lengths: 1 + 2*1000 + 2*70000 + 1. */
	assert_int_equal(mdl_chain_length(m, 1000, 70000), 142002);
	assert_int_equal(mdl_node_at(m, 2000, 1000, 70000), 2);      /* last enc_b */
	assert_int_equal(mdl_node_at(m, 2001, 1000, 70000), 3);      /* first dec_a */
	assert_int_equal(mdl_node_at(m, 142000, 1000, 70000), 4);    /* last dec_b */
	assert_int_equal(mdl_node_at(m, 142001, 1000, 70000), 5);

	assert_int_equal(mdl_node_repeats(m, 0, 3, 2), 1);
	assert_int_equal(mdl_node_repeats(m, 1, 3, 2), 3);
	assert_int_equal(mdl_node_repeats(m, 2, 3, 2), 3);
	assert_int_equal(mdl_node_repeats(m, 4, 3, 2), 2);
	assert_int_equal(mdl_node_repeats(m, 5, 3, 2), 1);
	assert_int_equal(mdl_node_repeats(m, 6, 3, 2), 0);  /* no such node */
	mdl_free(m);
}

static void test_static_only(void **state)
{
	(void)state;
	/* Extra length specs are allowed on a model that does not use them. */
	struct mdl_model *m = test_load_ok(
		"model cnn\nsource s\ninput_len 5\noutput_len fixed:7\n"
		"node a static gemm=2,2,2\nnode b static gemm=2,2,2\n");
	assert_int_equal(m->nsegments, 1);
	assert_int_equal(m->uses_input_len, 0);
	assert_int_equal(m->uses_output_len, 0);
	assert_string_equal(m->input_len_spec, "5");
	assert_string_equal(m->output_len_spec, "fixed:7");
	assert_int_equal(mdl_chain_length(m, 40, 50), 2);
	assert_int_equal(mdl_node_at(m, 1, 40, 50), 1);
	assert_int_equal(mdl_node_repeats(m, 1, 40, 50), 1);
	mdl_free(m);

	/* Without specs they are empty. */
	m = test_load_ok("model cnn\nsource s\nnode a static gemm=2,2,2\n");
	assert_string_equal(m->input_len_spec, "");
	assert_string_equal(m->output_len_spec, "");
	mdl_free(m);
}

static void test_terms_and_weights(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(
		"model t   # trailing comment\n"
		"\t source   Some Paper 2020, Table 3   # comment\r\n"
		"\n"
		"   # indented comment\n"
		"node x.1-y_z static gemm=2,3,4 gemm=1,5,6,x3\tattn=1,7,8,x2 elementwise=9 # c\r\n"
		"node only_ew static elementwise=12\n");
	assert_string_equal(m->source, "Some Paper 2020, Table 3");
	assert_int_equal(m->nnodes, 2);
	const struct mdl_node *n = &m->nodes[0];
	assert_string_equal(n->name, "x.1-y_z");
	assert_int_equal(n->kind, MDL_STATIC);
	assert_int_equal(n->ngemms, 3);
	assert_int_equal(n->gemms[0].m_per_sample, 2);
	assert_int_equal(n->gemms[0].k, 3);
	assert_int_equal(n->gemms[0].n, 4);
	assert_int_equal(n->gemms[0].count, 1);
	assert_int_equal(n->gemms[0].weight_shared, 0);
	assert_int_equal(n->gemms[1].count, 3);
	assert_int_equal(n->gemms[1].weight_shared, 0);
	assert_int_equal(n->gemms[2].k, 7);
	assert_int_equal(n->gemms[2].n, 8);
	assert_int_equal(n->gemms[2].count, 2);
	assert_int_equal(n->gemms[2].weight_shared, 1);
	assert_int_equal(n->elementwise_per_sample, 9);
	/* weights: 3*4 + 5*6*3 = 12 + 90 = 102 (attn= has none). */
	assert_int_equal(mdl_node_weight_elems(n), 102);
	/* MACs: 2*3*4 + 1*5*6*3 + 1*7*8*2 = 24 + 90 + 112 = 226. */
	assert_int_equal(mdl_node_macs_per_sample(n), 226);
	assert_int_equal(m->nodes[1].ngemms, 0);
	assert_int_equal(m->nodes[1].elementwise_per_sample, 12);
	assert_int_equal(mdl_node_weight_elems(&m->nodes[1]), 0);
	assert_int_equal(mdl_node_index(m, "only_ew"), 1);
	assert_int_equal(mdl_node_index(m, "x.1-y_z"), 0);
	assert_int_equal(mdl_node_index(m, "nope"), -1);
	mdl_free(m);

	/* Exactly MDL_MAX_GEMMS terms is fine; 47-character names are fine. */
	m = test_load_ok("model t\nsource s\nnode n2345678901234567890123456789012345678901234567 static "
	                 "gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 attn=1,1,1 attn=1,1,1 attn=1,1,1 attn=1,1,1\n");
	assert_int_equal(m->nodes[0].ngemms, MDL_MAX_GEMMS);
	mdl_free(m);
}

/* ---- errors ---- */

#define HDR "model a\nsource s\n"

static void test_errors_kinds_and_directives(void **state)
{
	(void)state;
	test_load_err(HDR "node x foo gemm=1,1,1\n", 3,
	              "unknown node kind 'foo' (expected static|encoder|decoder|pass|leaf|internal)");
	test_load_err(HDR "input_len 4\nnode x leaf gemm=1,1,1\n", 4, "a tree model needs both leaf and internal nodes");
	test_load_err(HDR "input_len 4\nnode x internal gemm=1,1,1\n", 4, "a tree model needs both leaf and internal nodes");
	test_load_err(HDR "node x leaf gemm=1,1,1\nnode y internal gemm=1,1,1\n", 3, "no input_len line");
	test_load_err(HDR "input_len 4\nnode x internal gemm=1,1,1\nnode y leaf gemm=1,1,1\n", 4,
	              "tree nodes must be consecutive");
	test_load_err(HDR "input_len 4\noutput_len 4\nnode x leaf gemm=1,1,1\nnode y internal gemm=1,1,1\n"
	              "node z decoder gemm=1,1,1\n", 7, "cannot also have encoder, pass or decoder nodes");
	/* a request's own length L: only in the K or N of a pass node's attn term */
	test_load_err(HDR "input_len 4\nnode x pass gemm=1,64,L\n", 4,
	              "L (the request's length) is allowed only in the K or N of an attn term of a pass node");
	test_load_err(HDR "input_len 4\nnode x encoder attn=1,64,L\n", 4, "allowed only in the K or N");
	test_load_err(HDR "input_len 4\nnode x pass attn=L,64,8\n", 4, "'L' is not a positive decimal integer");
	test_load_err(HDR "input_len 4\nnode x static elementwise_len=5\n", 4, "elementwise_len= is for pass nodes only");
	test_load_err(HDR "input_len 4\nnode x pass elementwise_len=0\n", 4, "elementwise_len=E needs a positive");
	test_load_err(HDR "node x pass gemm=1,4,4\n", 3, "model has encoder or pass nodes but no input_len line");
	test_load_err(HDR "\nbogus 1 2\n", 4, "unknown directive 'bogus'");
	test_load_err(HDR "node x static gemm=1,1,1\nnode y static gemm=1,1,1\nnode x static gemm=1,1,1\n",
	              5, "duplicate node name 'x'");
	test_load_err(HDR "node x\n", 3, "node needs a name and a kind");
	test_load_err(HDR "node\n", 3, "node needs a name and a kind");
	test_load_err(HDR "node a/b static gemm=1,1,1\n", 3, "bad node name 'a/b'");
	test_load_err(HDR "node n23456789012345678901234567890123456789012345678 static gemm=1,1,1\n",
	              3, "bad node name");
	test_load_err(HDR "node x static\n", 3, "node 'x' has no work");
	test_load_err(HDR "node x static foo=1\n", 3, "unknown node attribute 'foo='");
	test_load_err(HDR "node x static gemm\n", 3, "unknown node attribute 'gemm'");
	test_load_err(HDR "node x static elementwise=3 elementwise=4\n", 3, "elementwise= given twice");
	test_load_err(HDR "node x static elementwise=0\n", 3, "malformed 'elementwise=0'");
	test_load_err(HDR "node x static elementwise=1e3\n", 3, "malformed 'elementwise=1e3'");
}

/* The llm line (FORMAT.md "LLMs"): a good one, the numbers derived from it
 * by hand, and each problem named by file and line. */
#define LLM_HDR "model a\nsource s\ninput_len fixed:8\noutput_len fixed:4\n"
#define LLM_OK "layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=256 vocab=256 context=512 bytes=4"
static void test_llm_line(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(LLM_HDR "llm " LLM_OK " mlp=plain\n");
	assert_true(m->is_llm && !m->llm.gated && m->nnodes == 0);
	assert_int_equal(m->llm.kv_heads, 2);
	/* 2 layers x 2 KV heads x 16 x (key + value) x 4 B */
	assert_int_equal(mdl_llm_kv_bytes_per_token(&m->llm), 2 * 2 * 16 * 2 * 4);
	/* per layer QKV 64 x (64 + 2 x 32) + O 64 x 64 + MLP 2 x 64 x 256 (plain), plus embedding and head 2 x 256 x 64 */
	assert_int_equal(mdl_llm_weight_bytes(&m->llm), (2ull * (64 * 128 + 64 * 64 + 2 * 64 * 256) + 2 * 256 * 64) * 4);
	/* a request's chain is its output tokens; it needs a prompt and one token at least */
	assert_int_equal(mdl_chain_length(m, 10, 7), 7);
	assert_int_equal(mdl_chain_length(m, 0, 7), 0);
	assert_int_equal(mdl_chain_length(m, 10, 0), 0);
	mdl_free(m);
	test_load_err(LLM_HDR "llm layers=2 hidden=64 heads=4 kv_heads=3 head_dim=16 ffn=256 vocab=256 context=512 bytes=4\n",
	              5, "heads (4) must be a multiple of kv_heads (3)");
	test_load_err(LLM_HDR "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=256 vocab=256 context=512\n", 5,
	              "llm needs bytes=");
	test_load_err(LLM_HDR "llm " LLM_OK " layers=3\n", 5, "llm key layers given twice");
	test_load_err(LLM_HDR "llm " LLM_OK " experts=8\n", 5, "unknown llm key 'experts'");
	test_load_err(LLM_HDR "llm " LLM_OK " mlp=moe\n", 5, "llm mlp must be gated or plain, got 'moe'");
	test_load_err(LLM_HDR "llm layers=0 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=256 vocab=256 context=512 bytes=4\n",
	              5, "llm layers must be an integer in [1, 1024], got '0'");
	test_load_err(LLM_HDR "llm layers=2 hidden=-64 heads=4 kv_heads=2 head_dim=16 ffn=256 vocab=256 context=512 bytes=4\n",
	              5, "llm hidden must be an integer");
	test_load_err(LLM_HDR "llm " LLM_OK " heads\n", 5, "llm term 'heads' is not KEY=VALUE");
	test_load_err(LLM_HDR "llm " LLM_OK "\nllm " LLM_OK "\n", 6, "llm given twice (first on line 5)");
	test_load_err(LLM_HDR "llm " LLM_OK "\nnode x static gemm=1,1,1\n", 5, "an llm model has no node lines");
	test_load_err("model a\nsource s\ninput_len fixed:8\nllm " LLM_OK "\n", 4,
	              "an llm model needs input_len and output_len lines");
}

static void test_errors_header_lines(void **state)
{
	(void)state;
	test_load_err("# only a comment\n\n", 2, "missing model line");
	test_load_err("", 1, "missing model line");
	test_load_err("source s\nmodel a\n", 1, "'source' before the model line");
	test_load_err("\nnode x static gemm=1,1,1\n", 2, "'node' before the model line");
	test_load_err("model a\nnode x static gemm=1,1,1\n", 1, "missing source line");
	test_load_err(HDR "# nothing else\n", 3, "model 'a' has no nodes");
	test_load_err(HDR "model b\n", 3, "model given twice (first on line 1)");
	test_load_err(HDR "source t\n", 3, "source given twice (first on line 2)");
	test_load_err("model a\nsource    # only a comment\n", 2, "source needs text");
	test_load_err("model a b\n", 1, "model takes one name");
	test_load_err("model\n", 1, "model needs a name");
	test_load_err("model a:b\n", 1, "bad model name 'a:b'");
	test_load_err(HDR "input_len\n", 3, "input_len needs a length spec");
	test_load_err(HDR "output_len fixed:3 extra\n", 3, "output_len takes one length spec");
	test_load_err(HDR "input_len 4\ninput_len 5\n", 4, "input_len given twice (first on line 3)");

	char spec_line[MDL_SPEC_MAX + 64];
	char text[sizeof spec_line + 64];
	char spec[MDL_SPEC_MAX + 1];
	memset(spec, '9', MDL_SPEC_MAX);
	spec[MDL_SPEC_MAX] = '\0';
	snprintf(spec_line, sizeof spec_line, "input_len %s\n", spec);
	snprintf(text, sizeof text, HDR "%s", spec_line);
	test_load_err(text, 3, "input_len spec longer than 127 characters");

	/* Needed lengths: the error points at the first node that needs them. */
	test_load_err(HDR "node s static gemm=1,1,1\nnode e encoder gemm=1,1,1\nnode f encoder gemm=1,1,1\n",
	              4, "model has encoder or pass nodes but no input_len line");
	test_load_err(HDR "input_len 3\nnode e encoder gemm=1,1,1\nnode d decoder gemm=1,1,1\n",
	              5, "model has decoder nodes but no output_len line");
	test_load_err(HDR "output_len 3\nnode e encoder gemm=1,1,1\n", 4,
	              "model has encoder or pass nodes but no input_len line");
}

static void test_errors_gemm_terms(void **state)
{
	(void)state;
	static const struct {
		const char *term;
		const char *what;
	} cases[] = {
		{ "gemm=1,2", "malformed gemm term 'gemm=1,2' (expected gemm=M,K,N[,xCOUNT])" },
		{ "gemm=1,2,3,4,5", "malformed gemm term 'gemm=1,2,3,4,5'" },
		{ "gemm=", "malformed gemm term 'gemm='" },
		{ "attn=1,2", "malformed attn term 'attn=1,2' (expected attn=M,K,N[,xCOUNT])" },
		{ "gemm=1,2,3,4", "count must be written xCOUNT" },
		{ "gemm=1,2,0", "'0' is not a positive decimal integer" },
		{ "gemm=1,-2,3", "'-2' is not a positive decimal integer" },
		{ "gemm=1,+2,3", "'+2' is not a positive decimal integer" },
		{ "gemm=a,2,3", "'a' is not a positive decimal integer" },
		{ "gemm=1,,3", "'' is not a positive decimal integer" },
		{ "gemm=1,2,3x", "'3x' is not a positive decimal integer" },
		{ "gemm=1,2,3,x0", "'0' is not a positive decimal integer" },
		{ "gemm=1,2,3,x", "'' is not a positive decimal integer" },
		{ "gemm=99999999999999999999,1,1", "'99999999999999999999' is not a positive decimal integer" },
		{ "gemm=1,1,1,x4294967296", "count above 4294967295" },
		/* 2^27 * 2^27 * 1 = 2^54 > 2^53 */
		{ "gemm=134217728,134217728,1", "M*K*N*COUNT above 2^53" },
		{ "attn=4294967296,4294967296,4294967296,x4294967295", "M*K*N*COUNT above 2^53" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, HDR "\nnode x static %s\n", cases[i].term);
		test_load_err(text, 4, cases[i].what);
	}
	/* 2^26 * 2^26 * 2 = 2^53 is the largest allowed. */
	struct mdl_model *m = test_load_ok(HDR "node x static gemm=67108864,67108864,2\n");
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[0]), UINT64_C(1) << 53);
	mdl_free(m);

	test_load_err(HDR "node x static gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 "
	              "gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 attn=1,1,1\n",
	              3, "node 'x' has more than 8 gemm/attn terms");
}

static void test_error_unreadable(void **state)
{
	(void)state;
	struct mdl_model *m = (struct mdl_model *)&m;
	char err[256];
	assert_int_equal(mdl_load_file("/nonexistent/dir/x.model", &m, err, sizeof err), -1);
	assert_null(m);
	assert_string_equal(err, "/nonexistent/dir/x.model: cannot open: No such file or directory");
	/* A path (has '/' or ends in .model) is never looked up as a built-in. */
	m = (struct mdl_model *)&m;
	assert_int_equal(mdl_load("nonexistent.model", &m, err, sizeof err), -1);
	assert_null(m);
	assert_string_equal(err, "nonexistent.model: cannot open: No such file or directory");
}

/* ---- the models directory ---- */

/* More than the built-in models, so every name is kept. */
#define TEST_MAX_NAMES 32

struct test_names {
	char names[TEST_MAX_NAMES][MDL_NAME_MAX];
	int n;
};

static void test_collect(const char *name, void *ctx)
{
	struct test_names *t = ctx;
	if (t->n < TEST_MAX_NAMES)
		snprintf(t->names[t->n], MDL_NAME_MAX, "%s", name);
	t->n++;
}

static void test_models_dir(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_model_dir_XXXXXX";
	assert_non_null(mkdtemp(dir));
	char p_beta[600], p_alpha[600], p_txt[600], p_wrong[600];
	snprintf(p_beta, sizeof p_beta, "%s/beta.model", dir);
	snprintf(p_alpha, sizeof p_alpha, "%s/alpha.model", dir);
	snprintf(p_txt, sizeof p_txt, "%s/notes.txt", dir);
	snprintf(p_wrong, sizeof p_wrong, "%s/wrong.model", dir);
	assert_int_equal(setenv("SIMBATCH_MODELS", dir, 1), 0);
	assert_string_equal(mdl_dir(), dir);

	char err[512];
	struct mdl_model *m = (struct mdl_model *)&m;
	assert_int_equal(mdl_load("gamma", &m, err, sizeof err), -1);
	assert_null(m);
	char want[700];
	snprintf(want, sizeof want, "unknown model 'gamma' (no model files in %s)", dir);
	assert_string_equal(err, want);

	test_write_file(p_beta, "model beta\nsource s\nnode x static gemm=1,1,1\n");
	test_write_file(p_alpha, "model alpha\nsource s\nnode x static gemm=1,1,1\n");
	test_write_file(p_txt, "not a model\n");

	struct test_names t = { .n = 0 };
	assert_int_equal(mdl_list(test_collect, &t), 2);
	assert_int_equal(t.n, 2);
	assert_string_equal(t.names[0], "alpha");
	assert_string_equal(t.names[1], "beta");
	assert_int_equal(mdl_list(NULL, NULL), 2);

	m = (struct mdl_model *)&m;
	assert_int_equal(mdl_load("gamma", &m, err, sizeof err), -1);
	assert_null(m);
	assert_string_equal(err, "unknown model 'gamma' (known: alpha, beta)");
	assert_int_equal(mdl_load("../alpha", &m, err, sizeof err), -1);  /* a path, relative to cwd */
	assert_null(m);

	assert_int_equal(mdl_load("alpha", &m, err, sizeof err), 0);
	assert_string_equal(m->name, "alpha");
	assert_string_equal(m->path, p_alpha);
	mdl_free(m);
	assert_int_equal(mdl_load(p_beta, &m, err, sizeof err), 0);  /* by path */
	assert_string_equal(m->name, "beta");
	mdl_free(m);

	/* A built-in's model line must repeat its file name. */
	test_write_file(p_wrong, "model other\nsource s\nnode x static gemm=1,1,1\n");
	assert_int_equal(mdl_load("wrong", &m, err, sizeof err), -1);
	assert_null(m);
	snprintf(want, sizeof want, "%s:1: model name 'other' does not match the file name 'wrong.model'", p_wrong);
	assert_string_equal(err, want);
	/* Loaded as a path, the name is free. */
	assert_int_equal(mdl_load(p_wrong, &m, err, sizeof err), 0);
	assert_string_equal(m->name, "other");
	mdl_free(m);

	unlink(p_beta);
	unlink(p_alpha);
	unlink(p_txt);
	unlink(p_wrong);
	rmdir(dir);
	assert_int_equal(setenv("SIMBATCH_MODELS", test_builtin_dir, 1), 0);
}

static void test_kind_names(void **state)
{
	(void)state;
	assert_string_equal(mdl_kind_name(MDL_STATIC), "static");
	assert_string_equal(mdl_kind_name(MDL_ENCODER), "encoder");
	assert_string_equal(mdl_kind_name(MDL_DECODER), "decoder");
	assert_string_equal(mdl_kind_name(MDL_LEAF), "leaf");
	assert_string_equal(mdl_kind_name(MDL_INTERNAL), "internal");
	assert_string_equal(mdl_kind_name(MDL_KIND_COUNT), "unknown");
}

/* ---- built-in models ---- */

static struct mdl_model *test_builtin(const char *name)
{
	struct mdl_model *m = NULL;
	char err[512] = "";
	int rc = mdl_load(name, &m, err, sizeof err);
	if (rc != 0)
		print_error("%s: %s\n", name, err);
	assert_int_equal(rc, 0);
	assert_string_equal(m->name, name);
	assert_true(strlen(m->source) > 20);
	return m;
}

/* Sums over the nodes of one kind: MACs per sample per pass and weights. */
static void test_totals(const struct mdl_model *m, enum mdl_kind kind, uint64_t *macs, uint64_t *weights)
{
	*macs = 0;
	*weights = 0;
	for (uint32_t i = 0; i < m->nnodes; i++) {
		if (m->nodes[i].kind != kind)
			continue;
		*macs += mdl_node_macs_per_sample(&m->nodes[i]);
		*weights += mdl_node_weight_elems(&m->nodes[i]);
	}
}

static void test_builtin_list(void **state)
{
	(void)state;
	static const char *const want[] = { "gnmt", "lstm", "resnet50", "seq2seq", "transformer",
	                                    "vgg16", "mobilenet", "bert_base", "las", "deepspeech2" };
	struct test_names t = { .n = 0 };
	int n = mdl_list(test_collect, &t);
	assert_true(n >= 10 && n <= TEST_MAX_NAMES);
	for (int i = 1; i < n; i++)
		assert_true(strcmp(t.names[i - 1], t.names[i]) < 0);
	for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
		int found = 0;
		for (int i = 0; i < n; i++)
			found |= strcmp(t.names[i], want[w]) == 0;
		assert_true(found);
	}
}

static void test_builtin_resnet50(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("resnet50");
	/* 1 stem conv + 16 bottlenecks x 3 convs + 4 projections + 1 FC = 54. */
	assert_int_equal(m->nnodes, 54);
	assert_int_equal(m->nsegments, 1);
	assert_int_equal(m->segments[0].kind, MDL_STATIC);
	assert_int_equal(m->uses_input_len, 0);
	assert_int_equal(m->uses_output_len, 0);
	assert_int_equal(mdl_chain_length(m, 17, 23), 54);

	/* Closed form from He et al. Table 1 with the v1.5 stride placement
	 * (stride 2 in the first block's 3x3 conv): conv1 7x7x3->64 on 112x112;
	 * stage s has `blocks` bottlenecks of c -> c -> 4c channels at HxW, the
	 * first block's 1x1 reduce runs at the previous stage's resolution and a
	 * 1x1 projection (prev channels -> 4c) at HxW; FC 2048x1000. */
	static const struct { uint64_t blocks, c, hw, prev_hw, prev_ch; } st[4] = {
		{ 3, 64, 56, 56, 64 }, { 4, 128, 28, 56, 256 },
		{ 6, 256, 14, 28, 512 }, { 3, 512, 7, 14, 1024 },
	};
	uint64_t macs = 112 * 112 * (7 * 7 * 3) * 64, weights = 7 * 7 * 3 * 64;
	for (int s = 0; s < 4; s++) {
		uint64_t c = st[s].c, px = st[s].hw * st[s].hw, prev_px = st[s].prev_hw * st[s].prev_hw;
		/* first block: reduce at prev resolution, 3x3, expand, projection */
		macs += prev_px * st[s].prev_ch * c + px * 9 * c * c + px * c * 4 * c + px * st[s].prev_ch * 4 * c;
		weights += st[s].prev_ch * c + 9 * c * c + c * 4 * c + st[s].prev_ch * 4 * c;
		/* other blocks: 4c -> c, 3x3 c -> c, c -> 4c */
		macs += (st[s].blocks - 1) * px * (4 * c * c + 9 * c * c + 4 * c * c);
		weights += (st[s].blocks - 1) * (4 * c * c + 9 * c * c + 4 * c * c);
	}
	macs += 2048 * 1000;
	weights += 2048 * 1000;
	/* = 4,089,184,256 MACs and 25,502,912 weights. */
	assert_int_equal(macs, UINT64_C(4089184256));
	assert_int_equal(weights, UINT64_C(25502912));

	uint64_t got_macs, got_weights;
	test_totals(m, MDL_STATIC, &got_macs, &got_weights);
	assert_int_equal(got_macs, macs);
	assert_int_equal(got_weights, weights);
	/* The published figure: about 4.1 G multiply-adds per 224x224 image. */
	assert_true(fabs((double)got_macs - 4.1e9) <= 0.02 * 4.1e9);
	assert_int_equal(m->nodes[0].gemms[0].m_per_sample, 112 * 112);
	assert_int_equal(mdl_node_index(m, "fc1000"), 53);
	mdl_free(m);
}

/* Checks "lognormal:MU:SIGMA:MAX" against expected values. */
static void test_lognormal_spec(const char *spec, double mu, double sigma, double max)
{
	double got_mu, got_sigma, got_max;
	assert_int_equal(sscanf(spec, "lognormal:%lf:%lf:%lf", &got_mu, &got_sigma, &got_max), 3);
	assert_true(fabs(got_mu - mu) < 0.001);
	assert_true(fabs(got_sigma - sigma) < 0.001);
	assert_true(got_max == max);
}

static void test_builtin_gnmt(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("gnmt");
	const uint64_t h = 1024, v = 32320, s = 23;
	assert_int_equal(m->nsegments, 2);
	assert_int_equal(m->segments[0].kind, MDL_ENCODER);
	assert_int_equal(m->segments[1].kind, MDL_DECODER);
	assert_int_equal(m->uses_input_len, 1);
	assert_int_equal(m->uses_output_len, 1);
	/* 5 encoder nodes x 10 steps + 6 decoder nodes x 12 steps. */
	assert_int_equal(mdl_chain_length(m, 10, 12), 5 * 10 + 6 * 12);

	/* An LSTM layer with input width i has (i + h) x 4h weights.
	 * Encoder: 2 directions x (h+h)4h + (2h+h)4h + 2 x (h+h)4h + h^2 (keys)
	 *        = 16h^2 + 12h^2 + 16h^2 + h^2 = 45h^2.
	 * Decoder: (h+h)4h + h^2 (query) + 3 x (2h+h)4h + hV = 45h^2 + hV.
	 * Per step (M = 1) the weight GEMMs' MACs equal their weights; decoder
	 * attention adds score h*S and context S*h. */
	uint64_t macs, weights;
	test_totals(m, MDL_ENCODER, &macs, &weights);
	assert_int_equal(weights, 45 * h * h);
	assert_int_equal(macs, 45 * h * h);
	test_totals(m, MDL_DECODER, &macs, &weights);
	assert_int_equal(weights, 45 * h * h + h * v);
	assert_int_equal(macs, 45 * h * h + h * v + 2 * s * h);

	/* sigma = (ln 30 - ln 20) / (z_.90 - z_.70), mu = ln 20 - z_.70 sigma. */
	/* LazyBatching Sec. VI-C: 90% of lengths <= 32 and 16% <= 10 (rounded). */
	double sigma = (log(32.5) - log(10.5)) / (1.2815516 + 0.9944579);
	double mu = log(32.5) - 1.2815516 * sigma;
	test_lognormal_spec(m->input_len_spec, mu, sigma, 80);
	test_lognormal_spec(m->output_len_spec, mu, sigma, 80);
	mdl_free(m);
}

static void test_builtin_transformer(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("transformer");
	const uint64_t d = 512, v = 37000, s = 23, p = 12;
	assert_int_equal(m->nsegments, 2);
	assert_int_equal(m->segments[0].kind, MDL_PASS);
	assert_int_equal(m->segments[0].nnodes, 7);
	assert_int_equal(m->segments[1].nnodes, 7);
	/* the encoder's 7 nodes once, over all 20 input tokens; the decoder a step a token */
	assert_int_equal(mdl_chain_length(m, 20, 30), 7 + 7 * 30);

	/* Encoder layer: QKV 3d^2 + output d^2 + FFN 2 x 4d^2 = 12d^2 a token;
	 * the cross-attention K,V of 6 decoder layers: 6 x 2d^2. 72 + 12 = 84 d^2.
	 * Decoder layer: self QKV 3d^2 + self out, cross Q, cross out 3d^2 +
	 * FFN 8d^2 = 14d^2; x6 = 84d^2; projection dV. In all 168 d^2 + dV,
	 * about 63 M (the paper: 65 M parameters, with biases and norms).
	 * Decoder attention per layer and step (8 heads x 64 = d): 2 x len x d. */
	uint64_t macs, weights, total_weights;
	test_totals(m, MDL_PASS, &macs, &weights);
	assert_int_equal(weights, 84 * d * d);
	assert_int_equal(macs, 84 * d * d);   /* a token's; its attention is the request's own (test below) */
	total_weights = weights;
	test_totals(m, MDL_DECODER, &macs, &weights);
	assert_int_equal(weights, 84 * d * d + d * v);
	assert_int_equal(macs, 84 * d * d + d * v + 6 * 2 * (s + p) * d);
	total_weights += weights;
	assert_int_equal(total_weights, 168 * d * d + d * v);
	assert_int_equal(total_weights, UINT64_C(62984192));

	double sigma = (log(32.5) - log(10.5)) / (1.2815516 + 0.9944579);
	test_lognormal_spec(m->input_len_spec, log(32.5) - 1.2815516 * sigma, sigma, 80);
	test_lognormal_spec(m->output_len_spec, log(32.5) - 1.2815516 * sigma, sigma, 80);
	mdl_free(m);
}

/* The one-pass encoder for L input tokens (Vaswani et al. 2017, Sec. 3.2):
 * projections L x d x 3d, L x d x d, FFN L x d x 4d and L x 4d x d; per head
 * (8 of d_k = 64) scores Q K^T, L x 64 x L, and context P V, L x L x 64;
 * softmax 5 ops a score. */
static void test_transformer_encoder_shapes(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("transformer");
	const uint64_t d = 512;
	static const uint32_t lens[] = { 1, 7, 80 };
	const struct mdl_node *enc = &m->nodes[mdl_node_index(m, "enc_l1")];
	static const uint64_t kn[4][2] = { { 512, 1536 }, { 512, 512 }, { 512, 2048 }, { 2048, 512 } };
	assert_int_equal(enc->ngemms, 4);
	for (uint32_t g = 0; g < 4; g++) {
		/* M a token: a request of L tokens runs them with M = L */
		assert_int_equal(enc->gemms[g].m_per_sample, 1);
		assert_int_equal(enc->gemms[g].k, kn[g][0]);
		assert_int_equal(enc->gemms[g].n, kn[g][1]);
		assert_int_equal(enc->gemms[g].weight_shared, 0);
	}
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		uint64_t L = lens[i];
		struct mdl_node own;
		mdl_member_node(enc, lens[i], &own);
		assert_int_equal(own.ngemms, 2);
		assert_int_equal(own.gemms[0].m_per_sample, L);
		assert_int_equal(own.gemms[0].k, 64);
		assert_int_equal(own.gemms[0].n, L);
		assert_int_equal(own.gemms[1].m_per_sample, L);
		assert_int_equal(own.gemms[1].k, L);
		assert_int_equal(own.gemms[1].n, 64);
		for (uint32_t g = 0; g < 2; g++) {
			assert_int_equal(own.gemms[g].count, 8);
			assert_int_equal(own.gemms[g].weight_shared, 1);
		}
		/* 2 x 8 heads x L x 64 x L = 2 d L^2 */
		assert_int_equal(mdl_node_macs_per_sample(&own), 2 * d * L * L);
		assert_int_equal(own.elementwise_per_sample, 5 * 8 * L * L);
		/* with the projections' 12 d^2 a token: the layer's 12 d^2 L + 2 d L^2 */
		assert_int_equal(L * mdl_node_macs_per_sample(enc) + mdl_node_macs_per_sample(&own),
		                 12 * d * d * L + 2 * d * L * L);
	}
	mdl_free(m);
}

static void test_builtin_lstm(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("lstm");
	const uint64_t h = 1024;
	assert_int_equal(m->nnodes, 1);
	assert_int_equal(m->nodes[0].kind, MDL_ENCODER);
	assert_int_equal(m->uses_output_len, 0);
	assert_int_equal(mdl_chain_length(m, 24, 99), 24);
	/* BatchMaker: one b x 2h by 2h x 4h GEMM per step: 8h^2 weights. */
	assert_int_equal(mdl_node_weight_elems(&m->nodes[0]), 8 * h * h);
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[0]), 8 * h * h);
	/* Mean 24 with sigma 0.535: mu = ln 24 - sigma^2 / 2; max 330. */
	test_lognormal_spec(m->input_len_spec, log(24.0) - 0.535 * 0.535 / 2, 0.535, 330);
	mdl_free(m);
}

static void test_builtin_seq2seq(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("seq2seq");
	const uint64_t h = 1024, v = 30000;
	assert_int_equal(m->nsegments, 2);
	assert_int_equal(mdl_chain_length(m, 24, 26), 24 + 2 * 26);
	uint64_t macs, weights;
	test_totals(m, MDL_ENCODER, &macs, &weights);
	assert_int_equal(weights, 8 * h * h);
	test_totals(m, MDL_DECODER, &macs, &weights);
	/* decoder cell 8h^2 + projection hV */
	assert_int_equal(weights, 8 * h * h + h * v);
	assert_int_equal(macs, 8 * h * h + h * v);
	test_lognormal_spec(m->input_len_spec, log(24.0) - 0.535 * 0.535 / 2, 0.535, 330);
	test_lognormal_spec(m->output_len_spec, log(24.0) - 0.535 * 0.535 / 2, 0.535, 330);
	mdl_free(m);
}

/* ---- conv= and sSTEPS terms ---- */

static void test_conv_terms(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(
		"model c\nsource s\n"
		"node a static conv=224,224,3,7,7,64,2,3\n"          /* ResNet-50 conv1 */
		"node b static conv=112,112,32,3,3,32,2,1,g32\n"     /* depthwise, stride 2 */
		"node c static conv=742,161,1,20,5,32,2,0\n"         /* non-square, no padding */
		"node d static conv=10,20,4,3,5,8,1x2,2x0 gemm=1,2,3\n"  /* per-axis stride and pad */
		"node e static conv=8,8,6,1,1,9,1,0,g3\n");          /* grouped 1x1 */
	const struct mdl_gemm *g = &m->nodes[0].gemms[0];
	/* OH = OW = (224 + 2*3 - 7) / 2 + 1 = 112: M = 12544, K = 3*7*7 = 147 */
	assert_int_equal(g->is_conv, 1);
	assert_int_equal(g->conv.out_h, 112);
	assert_int_equal(g->conv.out_w, 112);
	assert_int_equal(g->m_per_sample, 12544);
	assert_int_equal(g->k, 147);
	assert_int_equal(g->n, 64);
	assert_int_equal(g->count, 1);
	assert_int_equal(g->weight_shared, 0);
	assert_int_equal(mdl_gemm_steps(g), 1);
	assert_int_equal(g->conv.h, 224);
	assert_int_equal(g->conv.c, 3);
	assert_int_equal(g->conv.r, 7);
	assert_int_equal(g->conv.k, 64);
	assert_int_equal(g->conv.stride_h, 2);
	assert_int_equal(g->conv.stride_w, 2);
	assert_int_equal(g->conv.pad_h, 3);
	assert_int_equal(g->conv.pad_w, 3);
	assert_int_equal(g->conv.groups, 1);
	assert_int_equal(mdl_node_weight_elems(&m->nodes[0]), 7 * 7 * 3 * 64);
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[0]), 12544ull * 147 * 64);

	/* depthwise: (112 + 2 - 3) / 2 + 1 = 56; one 3x3 filter per channel:
	 * 32 GEMMs of M = 3136, K = 9, N = 1 */
	g = &m->nodes[1].gemms[0];
	assert_int_equal(g->m_per_sample, 56 * 56);
	assert_int_equal(g->k, 9);
	assert_int_equal(g->n, 1);
	assert_int_equal(g->count, 32);
	assert_int_equal(g->conv.groups, 32);
	assert_int_equal(mdl_node_weight_elems(&m->nodes[1]), 3 * 3 * 32);
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[1]), 3136ull * 9 * 32);

	/* (742 - 20) / 2 + 1 = 362, (161 - 5) / 2 + 1 = 79 */
	g = &m->nodes[2].gemms[0];
	assert_int_equal(g->conv.out_h, 362);
	assert_int_equal(g->conv.out_w, 79);
	assert_int_equal(g->m_per_sample, 362 * 79);
	assert_int_equal(g->k, 100);

	/* OH = (10 + 2*2 - 3) / 1 + 1 = 12, OW = (20 + 0 - 5) / 2 + 1 = 8:
	 * M = 96, K = 4*3*5 = 60, N = 8; a conv= term mixes with gemm= terms */
	g = &m->nodes[3].gemms[0];
	assert_int_equal(g->conv.stride_h, 1);
	assert_int_equal(g->conv.stride_w, 2);
	assert_int_equal(g->conv.pad_h, 2);
	assert_int_equal(g->conv.pad_w, 0);
	assert_int_equal(g->m_per_sample, 96);
	assert_int_equal(g->k, 60);
	assert_int_equal(g->n, 8);
	assert_int_equal(m->nodes[3].ngemms, 2);
	assert_int_equal(m->nodes[3].gemms[1].is_conv, 0);

	/* 3 groups of 6/3 = 2 input and 9/3 = 3 output channels, 8x8 pixels */
	g = &m->nodes[4].gemms[0];
	assert_int_equal(g->m_per_sample, 64);
	assert_int_equal(g->k, 2);
	assert_int_equal(g->n, 3);
	assert_int_equal(g->count, 3);
	mdl_free(m);
}

static void test_conv_errors(void **state)
{
	(void)state;
	static const struct {
		const char *term;
		const char *what;
	} cases[] = {
		{ "conv=1,2,3", "malformed conv term 'conv=1,2,3' (expected conv=H,W,C,R,S,K,STRIDE,PAD[,gGROUPS])" },
		{ "conv=1,1,1,1,1,1,1,0,g1,5", "malformed conv term" },
		{ "conv=224,224,0,3,3,64,1,1", "C '0' is not a positive decimal integer" },
		{ "conv=8,8,4,3,3,x8,1,1", "K 'x8' is not a positive decimal integer" },
		{ "conv=8,8,4,3,3,8,0,1", "STRIDE '0' must be N or AxB" },
		{ "conv=8,8,4,3,3,8,1x,1", "STRIDE '1x' must be N or AxB" },
		{ "conv=8,8,4,3,3,8,1,-1", "PAD '-1' must be N or AxB" },
		{ "conv=8,8,4,3,3,8,1,1x2x3", "PAD '1x2x3' must be N or AxB" },
		{ "conv=8,8,4,3,3,8,1,1,3", "groups must be written gGROUPS" },
		{ "conv=8,8,4,3,3,8,1,1,g0", "groups must be written gGROUPS" },
		{ "conv=8,8,4,3,3,8,1,1,g3", "3 groups do not divide C = 4 and K = 8" },
		{ "conv=2,2,4,5,5,8,1,1", "the 5x5 filter is larger than the padded 4x4 input" },
		/* M = 2^32 pixels, K = 2^16, N = 2^16: 2^64 MACs */
		{ "conv=65536,65536,65536,1,1,65536,1,0", "M*K*N*GROUPS above 2^53" },
		/* (1 + 2 * (2^32 - 1) - 1) / 1 + 1 = 2^33 - 1 rows */
		{ "conv=1,1,1,1,1,1,1,4294967295x0", "output 8589934591x1 larger than 2^32 a side" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, HDR "node x static %s\n", cases[i].term);
		test_load_err(text, 3, cases[i].what);
	}
	test_load_err(HDR "node x static gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 "
	              "gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 gemm=1,1,1 conv=1,1,1,1,1,1,1,0\n",
	              3, "node 'x' has more than 8 gemm/attn terms");
}

static void test_steps_terms(void **state)
{
	(void)state;
	struct mdl_model *m = test_load_ok(
		"model s\nsource s\ninput_len 4\n"
		"node a encoder gemm=1,296,1024,x2,s8\n"
		"node b encoder attn=1,4,5,s3,x2 gemm=2,3,4,s2 gemm=1,1,1\n");
	const struct mdl_gemm *g = &m->nodes[0].gemms[0];
	assert_int_equal(g->count, 2);
	assert_int_equal(g->steps, 8);
	assert_int_equal(mdl_gemm_steps(g), 8);
	/* weights count once, MACs every step: 296*1024*2 and x 8 */
	assert_int_equal(mdl_node_weight_elems(&m->nodes[0]), 296 * 1024 * 2);
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[0]), 296ull * 1024 * 2 * 8);
	/* either order of xCOUNT and sSTEPS; attn takes steps too */
	g = &m->nodes[1].gemms[0];
	assert_int_equal(g->weight_shared, 1);
	assert_int_equal(g->count, 2);
	assert_int_equal(g->steps, 3);
	assert_int_equal(m->nodes[1].gemms[1].count, 1);
	assert_int_equal(m->nodes[1].gemms[1].steps, 2);
	assert_int_equal(mdl_gemm_steps(&m->nodes[1].gemms[2]), 1);
	/* 4*5*2*3 + 2*3*4*2 + 1 = 120 + 48 + 1 */
	assert_int_equal(mdl_node_macs_per_sample(&m->nodes[1]), 169);
	assert_int_equal(mdl_node_weight_elems(&m->nodes[1]), 12 + 1);
	mdl_free(m);

	static const struct {
		const char *term;
		const char *what;
	} cases[] = {
		{ "gemm=1,2,3,s0", "'0' is not a positive decimal integer" },
		{ "gemm=1,2,3,s", "'' is not a positive decimal integer" },
		{ "gemm=1,2,3,x2,x3", "xCOUNT given twice" },
		{ "attn=1,2,3,s2,s2", "malformed attn term 'attn=1,2,3,s2,s2': sSTEPS given twice" },
		{ "gemm=1,2,3,x2,s2,s2", "malformed gemm term 'gemm=1,2,3,x2,s2,s2'" },
		{ "gemm=1,2,3,t2", "count must be written xCOUNT and steps sSTEPS" },
		{ "gemm=1,1,1,s4294967296", "steps above 4294967295" },
		/* 2^26 * 2^26 * 2 = 2^53 MACs, times 2 steps */
		{ "gemm=67108864,67108864,2,s2", "M*K*N*COUNT*STEPS above 2^53" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char text[256];
		snprintf(text, sizeof text, HDR "node x static %s\n", cases[i].term);
		test_load_err(text, 3, cases[i].what);
	}
}

/* ---- the sensitivity-study models (LazyBatching Sec. VI-C) and DS2 ---- */

static void test_vgg16(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("vgg16");
	/* Simonyan & Zisserman Table 1, configuration D: blocks of 3x3 convs at
	 * 224, 112, 56, 28, 14 with 2, 2, 3, 3, 3 layers of 64, 128, 256, 512,
	 * 512 channels; FC 7*7*512 -> 4096 -> 4096 -> 1000. */
	static const uint64_t res[5] = { 224, 112, 56, 28, 14 }, layers[5] = { 2, 2, 3, 3, 3 },
	                      ch[5] = { 64, 128, 256, 512, 512 };
	uint64_t macs = 0, weights = 0, cin = 3;
	uint32_t node = 0;
	for (int b = 0; b < 5; b++) {
		for (uint64_t l = 0; l < layers[b]; l++, node++) {
			const struct mdl_gemm *g = &m->nodes[node].gemms[0];
			macs += res[b] * res[b] * 9 * cin * ch[b];
			weights += 9 * cin * ch[b];
			assert_int_equal(g->is_conv, 1);
			assert_int_equal(g->conv.out_h, res[b]);   /* 3x3, stride 1, pad 1 */
			assert_int_equal(g->conv.c, cin);
			cin = ch[b];
		}
	}
	macs += 7 * 7 * 512 * 4096 + 4096 * 4096 + 4096 * 1000;
	weights += 7 * 7 * 512 * 4096 + 4096 * 4096 + 4096 * 1000;
	assert_int_equal(macs, UINT64_C(15470264320));
	assert_int_equal(weights, UINT64_C(138344128));
	assert_int_equal(m->nnodes, 16);
	assert_int_equal(m->nsegments, 1);
	uint64_t got_macs, got_weights;
	test_totals(m, MDL_STATIC, &got_macs, &got_weights);
	assert_int_equal(got_macs, macs);
	assert_int_equal(got_weights, weights);
	/* the paper's Table 2: 138 M parameters (biases included) */
	assert_true(fabs((double)got_weights - 138e6) <= 0.005 * 138e6);
	assert_int_equal(m->nodes[mdl_node_index(m, "fc6")].gemms[0].k, 25088);
	mdl_free(m);
}

static void test_mobilenet(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("mobilenet");
	/* Howard et al. Table 1: 3x3/2 conv 3 -> 32 at 112; then (input
	 * resolution, Cin, Cout, depthwise stride) for the 13 blocks; 7x7 avg
	 * pool; FC 1024 -> 1000. A depthwise 3x3 has 9 * C weights and
	 * out^2 * 9 * C MACs, a pointwise out^2 * Cin * Cout. */
	static const uint64_t blk[13][4] = {
		{ 112, 32, 64, 1 }, { 112, 64, 128, 2 }, { 56, 128, 128, 1 }, { 56, 128, 256, 2 },
		{ 28, 256, 256, 1 }, { 28, 256, 512, 2 }, { 14, 512, 512, 1 }, { 14, 512, 512, 1 },
		{ 14, 512, 512, 1 }, { 14, 512, 512, 1 }, { 14, 512, 512, 1 }, { 14, 512, 1024, 2 },
		{ 7, 1024, 1024, 1 },
	};
	uint64_t macs = 112 * 112 * 27 * 32, weights = 27 * 32;
	for (int b = 0; b < 13; b++) {
		uint64_t out = blk[b][0] / blk[b][3], cin = blk[b][1], cout = blk[b][2];
		const struct mdl_gemm *dw = &m->nodes[1 + 2 * b].gemms[0];
		macs += out * out * 9 * cin + out * out * cin * cout;
		weights += 9 * cin + cin * cout;
		assert_int_equal(dw->conv.out_h, out);
		assert_int_equal(dw->count, cin);      /* one GEMM per channel */
		assert_int_equal(dw->k, 9);
		assert_int_equal(dw->n, 1);
	}
	macs += 1024 * 1000;
	weights += 1024 * 1000;
	assert_int_equal(macs, UINT64_C(568740352));
	assert_int_equal(weights, UINT64_C(4209088));
	assert_int_equal(m->nnodes, 28);
	uint64_t got_macs, got_weights;
	test_totals(m, MDL_STATIC, &got_macs, &got_weights);
	assert_int_equal(got_macs, macs);
	assert_int_equal(got_weights, weights);
	/* the paper: 569 million mult-adds and 4.2 million parameters */
	assert_true(fabs((double)got_macs - 569e6) <= 0.005 * 569e6);
	assert_true(fabs((double)got_weights - 4.2e6) <= 0.01 * 4.2e6);
	mdl_free(m);
}

static void test_bert_base(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("bert_base");
	const uint64_t d = 768, ff = 3072, s = 128, layers = 12;
	/* A layer: QKV 3d^2, output d^2, FFN 2 d ff = 12 d^2 weights, applied to
	 * S tokens; attention 2 S^2 d (scores and context over all heads). Plus
	 * the pooler's d^2 on one token. */
	uint64_t weights = layers * (4 * d * d + 2 * d * ff) + d * d;
	uint64_t macs = layers * (s * (4 * d * d + 2 * d * ff) + 2 * s * s * d) + d * d;
	assert_int_equal(weights, UINT64_C(85524480));
	assert_int_equal(macs, UINT64_C(11174215680));
	assert_int_equal(m->nnodes, 14);
	assert_int_equal(m->nsegments, 2);   /* embed and the layers one pass each, then the pooler */
	assert_int_equal(m->segments[0].kind, MDL_PASS);
	/* a request of S tokens: each pass node's GEMMs at M = S, plus its own attention at L = S */
	uint64_t got_macs = 0, got_weights = 0;
	for (uint32_t i = 0; i < m->nnodes; i++) {
		const struct mdl_node *n = &m->nodes[i];
		struct mdl_node own;
		mdl_member_node(n, (uint32_t)s, &own);
		got_macs += (n->kind == MDL_PASS ? s : 1) * mdl_node_macs_per_sample(n) + mdl_node_macs_per_sample(&own);
		got_weights += mdl_node_weight_elems(n);
	}
	assert_int_equal(got_macs, macs);
	assert_int_equal(got_weights, weights);
	assert_int_equal(m->nodes[mdl_node_index(m, "layer1")].gemms[0].m_per_sample, 1);
	assert_string_equal(m->input_len_spec, "fixed:128");
	mdl_free(m);
}

static void test_las(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("las");
	const uint64_t h = 256, in = 40, sp = 512, v = 43, u = 93;
	/* An LSTM with input i and h cells has (i + h) x 4h weights; the
	 * listener's layers are bidirectional (x2) and run 8, 4, 2, 1 timesteps
	 * per listener output; pBLSTM inputs are two 2h outputs: 4h. Keys psi:
	 * 2h x 2h once per listener output. */
	uint64_t bottom = (in + h) * 4 * h * 2, pyr = (4 * h + h) * 4 * h * 2, keys = 2 * h * 2 * h;
	uint64_t macs, weights;
	test_totals(m, MDL_ENCODER, &macs, &weights);
	assert_int_equal(weights, bottom + 3 * pyr + keys);
	assert_int_equal(macs, 8 * bottom + (4 + 2 + 1) * pyr + keys);
	assert_int_equal(macs, UINT64_C(23461888));
	/* Speller: layer 1 reads [y (V), c (2h)] + its 512 cells; layer 2
	 * [512, 512]; phi 512^2; CharacterDistribution [s, c] (1024) x V;
	 * attention 2 U 2h. */
	uint64_t spell = (v + 2 * h + sp) * 4 * sp + (sp + sp) * 4 * sp + sp * sp + (sp + 2 * h) * v;
	test_totals(m, MDL_DECODER, &macs, &weights);
	assert_int_equal(weights, spell);
	assert_int_equal(macs, spell + 2 * u * 2 * h);
	assert_int_equal(macs, UINT64_C(4683776));
	assert_string_equal(m->input_len_spec, "fixed:93");
	assert_string_equal(m->output_len_spec, "fixed:108");
	/* U in the attention terms is the input length */
	assert_int_equal(m->nodes[mdl_node_index(m, "spl_attn")].gemms[1].n, u);
	assert_int_equal(mdl_gemm_steps(&m->nodes[0].gemms[0]), 8);
	assert_int_equal(mdl_chain_length(m, 93, 108), 5 * 93 + 4 * 108);
	mdl_free(m);
}

static void test_deepspeech2(void **state)
{
	(void)state;
	struct mdl_model *m = test_builtin("deepspeech2");
	/* DeepMark's DS2 on a 742-frame, 161-bin spectrogram: conv1 20x5/2x2,
	 * conv2 10x5/2x1, no padding, 32 channels; 7 BiRNN layers of 1760 with
	 * the input projection shared by both directions; FC 1760 -> 1760 and
	 * 1760 -> 29 on every frame. */
	const uint64_t hd = 1760;
	uint64_t t1 = (742 - 20) / 2 + 1, f1 = (161 - 5) / 2 + 1;   /* 362, 79 */
	uint64_t t2 = (t1 - 10) / 2 + 1, f2 = f1 - 5 + 1;           /* 177, 75 */
	uint64_t feat = 32 * f2;                                    /* 2400 */
	uint64_t conv = t1 * f1 * (20 * 5 * 1) * 32 + t2 * f2 * (10 * 5 * 32) * 32;
	uint64_t fc = t2 * hd * hd + t2 * hd * 29;
	uint64_t step = feat * hd + 2 * hd * hd + 6 * 3 * hd * hd;
	assert_int_equal(m->nsegments, 3);
	assert_int_equal(m->segments[0].kind, MDL_STATIC);
	assert_int_equal(m->segments[1].kind, MDL_ENCODER);
	assert_int_equal(m->segments[2].kind, MDL_STATIC);
	assert_int_equal(m->segments[1].nnodes, 7);
	uint64_t macs, weights;
	test_totals(m, MDL_STATIC, &macs, &weights);
	assert_int_equal(macs, conv + fc);
	assert_int_equal(macs, UINT64_C(1328502880));
	test_totals(m, MDL_ENCODER, &macs, &weights);
	assert_int_equal(macs, step);
	assert_int_equal(weights, step);
	assert_int_equal(step, UINT64_C(66176000));
	/* the RNN runs once per conv2 output frame, and the FC layers see them all */
	assert_int_equal(feat, m->nodes[mdl_node_index(m, "rnn_l1")].gemms[0].k);
	assert_string_equal(m->input_len_spec, "fixed:177");
	assert_int_equal(t2, 177);
	assert_int_equal(m->nodes[mdl_node_index(m, "fc1")].gemms[0].m_per_sample, t2);
	assert_int_equal(m->nodes[mdl_node_index(m, "conv2")].gemms[0].conv.out_h, t2);
	assert_int_equal(mdl_chain_length(m, 177, 0), 2 + 7 * 177 + 2);
	mdl_free(m);
}

int main(void)
{
	const char *env = getenv("SIMBATCH_MODELS");
	snprintf(test_builtin_dir, sizeof test_builtin_dir, "%s", env && env[0] ? env : SB_MODELS_DIR);
	if (setenv("SIMBATCH_MODELS", test_builtin_dir, 1) != 0)
		return 1;

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segments),
		cmocka_unit_test(test_unroll),
		cmocka_unit_test(test_tree_levels),
		cmocka_unit_test(test_static_only),
		cmocka_unit_test(test_terms_and_weights),
		cmocka_unit_test(test_errors_kinds_and_directives),
		cmocka_unit_test(test_errors_header_lines),
		cmocka_unit_test(test_llm_line),
		cmocka_unit_test(test_errors_gemm_terms),
		cmocka_unit_test(test_error_unreadable),
		cmocka_unit_test(test_models_dir),
		cmocka_unit_test(test_kind_names),
		cmocka_unit_test(test_builtin_list),
		cmocka_unit_test(test_builtin_resnet50),
		cmocka_unit_test(test_builtin_gnmt),
		cmocka_unit_test(test_builtin_transformer),
		cmocka_unit_test(test_transformer_encoder_shapes),
		cmocka_unit_test(test_builtin_lstm),
		cmocka_unit_test(test_builtin_seq2seq),
		cmocka_unit_test(test_conv_terms),
		cmocka_unit_test(test_conv_errors),
		cmocka_unit_test(test_steps_terms),
		cmocka_unit_test(test_vgg16),
		cmocka_unit_test(test_mobilenet),
		cmocka_unit_test(test_bert_base),
		cmocka_unit_test(test_las),
		cmocka_unit_test(test_decoder_step_terms),
		cmocka_unit_test(test_decoder_step_errors),
		cmocka_unit_test(test_deepspeech2),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
