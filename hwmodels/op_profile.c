/* hwmodels/op_profile.c: reading, checking and interpolating measured GPU
 * operator and all-reduce profiles (format in op_profile.h). Every problem is
 * reported once, as "FILE:LINE:COLUMN (NAME): problem".
 */
#include "op_profile.h"
#include "../util/grow.h"
#include "../util/errkind.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/lines.h"
#include "../util/text.h"

static const char *const opp_op_names[OPP_COUNT] = {
	"emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
	"mlp_up_proj", "mlp_act", "mlp_down_proj", "add",
};

/* Columns before the operators' times. */
enum { COL_PROFILED_AS, COL_HIDDEN, COL_HEADS, COL_KV_HEADS, COL_FFN, COL_VOCAB, COL_GATED, COL_TP, COL_TOKENS,
       COL_FIRST_OP };
#define OPP_NCOLS (COL_FIRST_OP + OPP_COUNT)
static const char *const opp_lead_names[COL_FIRST_OP] = {
	"profiled_as", "hidden", "heads", "kv_heads", "ffn", "vocab", "gated", "tp", "tokens",
};

const enum opp_op opp_gemms[OPP_NGEMMS] = { OPP_QKV, OPP_ATTN_OUT, OPP_MLP_UP, OPP_MLP_DOWN };

const char *opp_op_name(enum opp_op op)
{
	return (unsigned)op < OPP_COUNT ? opp_op_names[op] : "?";
}

static const char *opp_col_name(size_t col)
{
	return col < COL_FIRST_OP ? opp_lead_names[col] : opp_op_names[col - COL_FIRST_OP];
}

static int opp_first_line_is(const char *path, const char *kind, char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	int got = lines_next(&rd, &line, &len, err, errlen);
	int rc = got < 0 ? -1 : got > 0 && strcmp(txt_trim(line), kind) == 0;
	lines_close(&rd);
	return rc;
}

int opp_sniff(const char *path, char *err, size_t errlen)
{
	return opp_first_line_is(path, OPP_KIND_LINE, err, errlen);
}

static void opp_curve_clear(struct opp_curve *c)
{
	free(c->tokens);
	free(c->ms);
}

void opp_free(struct op_profile *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ncurves; i++)
		opp_curve_clear(&p->curves[i]);
	free(p->curves);
	free(p);
}

/* The parser's state: where it is, for messages. */
struct opp_parse {
	const char *path;
	unsigned long line;
	char *err;
	size_t errlen;
};

static int opp_fail_col(const struct opp_parse *ps, size_t col, const char *what, const char *value)
{
	snprintf(ps->err, ps->errlen, "%s:%lu:%zu (%s): %s%s%s%s", ps->path, ps->line, col + 1, opp_col_name(col), what,
	         value ? " '" : "", value ? value : "", value ? "'" : "");
	return -1;
}

static int opp_fail(const struct opp_parse *ps, const char *what)
{
	return lines_fail(ps->err, ps->errlen, ps->path, ps->line, "%s", what);
}

/* "# KEY = VALUE" settings and "# leave_out OP = A% B% N" lines before the header. */
static int opp_setting(struct op_profile *p, char *line, const struct opp_parse *ps)
{
	char *key, *value;
	char *body = txt_trim(line + 1);   /* after '#' */
	char *eq = strchr(body, '=');
	if (!eq)
		return 0;                  /* free text */
	*eq = '\0';
	key = txt_trim(body);
	value = txt_trim(eq + 1);
	if (strcmp(key, "gpu") == 0) {
		if (!*value || strlen(value) >= sizeof p->gpu)
			return opp_fail(ps, "gpu must name the GPU in 1 to 31 characters");
		snprintf(p->gpu, sizeof p->gpu, "%s", value);
	} else if (strcmp(key, "mem_gb") == 0) {
		double gb;
		if (txt_parse_double(value, &gb) != 0 || !(gb > 0))
			return opp_fail(ps, "mem_gb must be a positive number of GB");
		p->mem_bytes = gb * 1e9;
	} else if (strcmp(key, "exclude") == 0) {
		static const char *const terms[] = { "allreduce", "attention_prefill", "attention_decode", "lm_head" };
		for (char *tok = strtok(value, ", "); tok; tok = strtok(NULL, ", ")) {
			unsigned bit = OPP_TERM_COUNT;
			for (unsigned i = 0; i < OPP_TERM_COUNT; i++)
				if (strcmp(tok, i < OPP_COUNT ? opp_op_names[i] : terms[i - OPP_COUNT]) == 0)
					bit = i;
			if (bit == OPP_TERM_COUNT) {
				char msg[160];
				snprintf(msg, sizeof msg, "exclude: unknown term '%.40s' (an operator's name, allreduce, "
				         "attention_prefill, attention_decode or lm_head)", tok);
				return opp_fail(ps, msg);
			}
			p->exclude |= 1u << bit;
		}
	} else if (strcmp(key, "source") == 0) {
		snprintf(p->source, sizeof p->source, "%s", value);
	} else if (strncmp(key, "leave_out ", 10) == 0 && p->nleave_out < OPP_COUNT + 1) {
		struct opp_leave_out *l = &p->leave_out[p->nleave_out];
		if (sscanf(value, "%lf%% %lf%% %lu", &l->median_pct, &l->p90_pct, &l->rows) != 3 ||
		    !(l->median_pct >= 0) || !(l->p90_pct >= 0))
			return opp_fail(ps, "a leave_out line reads: # leave_out OP = MEDIAN% P90% ROWS");
		snprintf(l->op, sizeof l->op, "%s", txt_trim(key + 10));
		p->nleave_out++;
	}
	return 0;
}

static int opp_header(char *line, const struct opp_parse *ps)
{
	char *f[OPP_NCOLS + 1];
	size_t n = txt_split(line, ',', f, OPP_NCOLS + 1);
	for (size_t i = 0; i < OPP_NCOLS; i++) {
		if (i >= n) {
			snprintf(ps->err, ps->errlen, "%s:%lu: missing column '%s'", ps->path, ps->line, opp_col_name(i));
			return -1;
		}
		if (strcmp(f[i], opp_col_name(i)) != 0) {
			snprintf(ps->err, ps->errlen, "%s:%lu:%zu: column '%s' where '%s' belongs (header %s", ps->path,
			         ps->line, i + 1, f[i], opp_col_name(i), "profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,OPS...)");
			return -1;
		}
	}
	if (n > OPP_NCOLS)
		return opp_fail(ps, "more columns than the operator profile's header has");
	return 0;
}

static int opp_same_curve(const struct opp_curve *c, const struct opp_shape *s, uint32_t tp)
{
	return c->tp == tp && memcmp(&c->shape, s, sizeof *s) == 0;
}

/* Appends one row's tokens and times to curve c. */
static int opp_curve_push(struct opp_curve *c, uint32_t tokens, const double *ms, size_t *cap)
{
	if (c->n == *cap) {
		size_t ncap = grow_capacity(*cap, c->n + 1, 64, OPP_COUNT * sizeof *c->ms);
		if (!ncap || grow_to(&c->tokens, ncap, sizeof *c->tokens) != 0 ||
		    grow_to(&c->ms, ncap, OPP_COUNT * sizeof *c->ms) != 0)
			return -1;
		*cap = ncap;
	}
	c->tokens[c->n] = tokens;
	memcpy(&c->ms[c->n * OPP_COUNT], ms, OPP_COUNT * sizeof *ms);
	c->n++;
	return 0;
}

static int opp_row(struct op_profile *p, char *line, const struct opp_parse *ps, size_t *cap)
{
	char *f[OPP_NCOLS + 1];
	size_t n = txt_split(line, ',', f, OPP_NCOLS + 1);
	if (n != OPP_NCOLS) {
		snprintf(ps->err, ps->errlen, "%s:%lu: %zu fields where the header has %d", ps->path, ps->line, n, OPP_NCOLS);
		return -1;
	}
	struct opp_shape s;
	uint32_t *dims[] = { &s.hidden, &s.heads, &s.kv_heads, &s.ffn, &s.vocab, &s.gated };
	uint64_t v;
	if (!*f[COL_PROFILED_AS] || strlen(f[COL_PROFILED_AS]) >= sizeof p->curves[0].profiled_as)
		return opp_fail_col(ps, COL_PROFILED_AS, "must name the profiled model in 1 to 95 characters", NULL);
	for (size_t i = 0; i < 6; i++) {
		size_t col = COL_HIDDEN + i;
		if (txt_parse_uint(f[col], col == COL_GATED ? 1 : UINT32_MAX, &v) != 0 || (col != COL_GATED && v == 0))
			return opp_fail_col(ps, col, col == COL_GATED ? "must be 0 or 1, not" : "must be a positive integer, not",
			                    f[col]);
		*dims[i] = (uint32_t)v;
	}
	if (txt_parse_uint(f[COL_TP], 64, &v) != 0 || !opp_tp_supported(v))
		return opp_fail_col(ps, COL_TP, "must be 1, 2, 4 or 8 GPUs (the tensor parallelism a measured GPU runs), "
		                    "not", f[COL_TP]);
	uint32_t tp = (uint32_t)v;
	if (txt_parse_uint(f[COL_TOKENS], UINT32_MAX, &v) != 0 || v == 0)
		return opp_fail_col(ps, COL_TOKENS, "must be a positive token count, not", f[COL_TOKENS]);
	uint32_t tokens = (uint32_t)v;
	double ms[OPP_COUNT];
	unsigned present = 0;
	for (size_t op = 0; op < OPP_COUNT; op++) {
		const char *cell = f[COL_FIRST_OP + op];
		if (op == OPP_POST_NORM && strcmp(cell, "-") == 0) {
			ms[op] = 0;
			continue;
		}
		if (txt_parse_double(cell, &ms[op]) != 0 || !(ms[op] > 0))
			return opp_fail_col(ps, COL_FIRST_OP + op, "must be a positive, finite time in ms, not", cell);
		if (ms[op] > OPP_MAX_MS)
			return opp_fail_col(ps, COL_FIRST_OP + op, "is more than the 1e+09 ms (1e+06 s) a task may take in "
			                    "simulated time:", cell);
		present |= 1u << op;
	}
	struct opp_curve *c = p->ncurves ? &p->curves[p->ncurves - 1] : NULL;
	if (!c || !opp_same_curve(c, &s, tp)) {
		for (size_t i = 0; i < p->ncurves; i++)
			if (opp_same_curve(&p->curves[i], &s, tp))
				return opp_fail_col(ps, COL_TP, "rows of one shape and tp must stand together; this shape and tp "
				                    "came earlier", f[COL_TP]);
		struct opp_curve *nc = realloc(p->curves, (p->ncurves + 1) * sizeof *nc);
		if (!nc) {
			err_kind_mark(ERR_MEMORY);
			return opp_fail(ps, "out of memory");
		}
		p->curves = nc;
		c = &p->curves[p->ncurves++];
		memset(c, 0, sizeof *c);
		snprintf(c->profiled_as, sizeof c->profiled_as, "%s", f[COL_PROFILED_AS]);
		c->shape = s;
		c->tp = tp;
		c->present = present;
		*cap = 0;
	} else {
		if (tokens <= c->tokens[c->n - 1]) {
			char msg[128];
			snprintf(msg, sizeof msg, "token counts must increase within a shape and tp: %u after %.0f,", tokens,
			         c->tokens[c->n - 1]);
			return opp_fail_col(ps, COL_TOKENS, msg, f[COL_TOKENS]);
		}
		if (present != c->present)
			return opp_fail_col(ps, COL_FIRST_OP + OPP_POST_NORM, "is '-' in some rows of this shape and tp and "
			                    "a time in others:", f[COL_FIRST_OP + OPP_POST_NORM]);
	}
	if (opp_curve_push(c, tokens, ms, cap) != 0) {
		err_kind_mark(ERR_MEMORY);
		return opp_fail(ps, "out of memory");
	}
	return 0;
}

int opp_gemm_dims(const struct opp_shape *s, uint32_t tp, enum opp_op op, double *k, double *n)
{
	double head_dim = (double)s->hidden / s->heads;
	switch (op) {
	case OPP_QKV: *k = s->hidden; *n = (s->heads + 2.0 * s->kv_heads) * head_dim / tp; return 1;
	case OPP_ATTN_OUT: *k = s->heads * head_dim / tp; *n = s->hidden; return 1;
	case OPP_MLP_UP: *k = s->hidden; *n = (s->gated ? 2.0 : 1.0) * s->ffn / tp; return 1;
	case OPP_MLP_DOWN: *k = (double)s->ffn / tp; *n = s->hidden; return 1;
	default: *k = *n = 0; return 0;
	}
}

static void opp_derive(struct op_profile *p)
{
	double most_weight = 0, most_flops = 0;
	for (size_t i = 0; i < p->ncurves; i++) {
		const struct opp_curve *c = &p->curves[i];
		if (c->tp != 1)
			continue;
		for (size_t g = 0; g < OPP_NGEMMS; g++) {
			double k, n;
			opp_gemm_dims(&c->shape, 1, opp_gemms[g], &k, &n);
			if (c->tokens[0] == 1 && k * n > most_weight) {
				most_weight = k * n;
				p->stream_bytes_s = OPP_ELEM_BYTES * k * n / (c->ms[opp_gemms[g]] * OPP_S_PER_MS);
			}
			size_t last = c->n - 1;
			double flops = 2.0 * c->tokens[last] * k * n;
			if (flops > most_flops) {
				most_flops = flops;
				p->gemm_flops_s = flops / (c->ms[last * OPP_COUNT + opp_gemms[g]] * OPP_S_PER_MS);
			}
		}
	}
}

int opp_load(const char *path, struct op_profile **out, char *err, size_t errlen)
{
	struct lines_reader rd;
	struct opp_parse ps = { .path = path, .err = err, .errlen = errlen };
	char *line;
	size_t len, cap = 0;
	int got, header = 0;
	*out = NULL;
	struct op_profile *p = calloc(1, sizeof *p);
	if (!p) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	snprintf(p->path, sizeof p->path, "%s", path);
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		ps.line = rd.lineno;
		char *t = txt_trim(line);
		if (rd.lineno == 1) {
			if (strcmp(t, OPP_KIND_LINE) != 0) {
				opp_fail(&ps, "not an operator profile (its first line must be '" OPP_KIND_LINE "')");
				goto fail_rd;
			}
			continue;
		}
		if (*t == '#') {
			if (!header && opp_setting(p, t, &ps) != 0)
				goto fail_rd;
			continue;
		}
		if (!*t)
			continue;
		if (!header) {
			if (opp_header(t, &ps) != 0)
				goto fail_rd;
			header = 1;
		} else if (opp_row(p, t, &ps, &cap) != 0) {
			goto fail_rd;
		}
	}
	if (got < 0)
		goto fail_rd;
	lines_close(&rd);
	if (!p->gpu[0] || !(p->mem_bytes > 0) || !p->ncurves) {
		snprintf(err, errlen, "%s: an operator profile needs '# gpu = NAME', '# mem_gb = GB' and at least one row",
		         path);
		goto fail;
	}
	opp_derive(p);
	if (!(p->stream_bytes_s > 0) || !(p->gemm_flops_s > 0)) {
		snprintf(err, errlen, "%s: no row at tp 1 and 1 token: the GPU's streaming and GEMM rates, at which "
		         "attention is priced, are measured from the tp 1 rows and their 1-token row", path);
		goto fail;
	}
	*out = p;
	return 0;
fail_rd:
	lines_close(&rd);
fail:
	opp_free(p);
	return -1;
}

const struct opp_curve *opp_find(const struct op_profile *p, const struct opp_shape *s, uint32_t tp)
{
	for (size_t i = 0; i < p->ncurves; i++)
		if (opp_same_curve(&p->curves[i], s, tp))
			return &p->curves[i];
	return NULL;
}

/* y at x on the polyline (xs, ys) of n points, ys read with stride: linear
 * between points, the first y below them, past them the last two points'
 * slope (never below the last y; one point: proportional to x). */
static double opp_polyline(size_t n, const double *xs, const double *ys, size_t stride, double x, int *extrapolated)
{
	if (x <= xs[0])
		return ys[0];
	if (n == 1) {
		*extrapolated = 1;
		return ys[0] * x / xs[0];
	}
	size_t lo = 0, hi = n - 1;
	if (x > xs[hi]) {
		*extrapolated = 1;
		lo = n - 2;
	} else {
		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;
			if (xs[mid] <= x)
				lo = mid;
			else
				hi = mid;
		}
	}
	double y0 = ys[lo * stride], y1 = ys[(lo + 1) * stride];
	double y = y0 + (y1 - y0) * (x - xs[lo]) / (xs[lo + 1] - xs[lo]);
	return x > xs[n - 1] && y < y1 ? y1 : y;
}

double opp_curve_ms(const struct opp_curve *c, enum opp_op op, double tokens, int *extrapolated)
{
	if (!(c->present & (1u << op)))
		return 0;
	return opp_polyline(c->n, c->tokens, &c->ms[op], OPP_COUNT, tokens, extrapolated);
}

void opp_collective_free(struct opp_collective *a)
{
	if (!a)
		return;
	free(a->key);
	free(a->bytes);
	free(a->ms);
	free(a);
}

/* What tells one collective's file from another's. */
struct opp_collective_kind {
	const char *kind_line, *what;    /* "an all-reduce profile" */
	const char *key;                 /* the first column's name */
	uint64_t key_min, key_max;
	int (*key_ok)(uint64_t key);     /* a further check of the key, or NULL */
	const char *key_must;            /* "must be ..., not" */
};

static int opp_collective_load(const char *path, const struct opp_collective_kind *k, struct opp_collective **out,
                               char *err, size_t errlen)
{
	const char *const names[] = { k->key, "bytes", "ms" };
	struct lines_reader rd;
	char *line, *f[4];
	size_t len, cap = 0;
	int got, header = 0;
	*out = NULL;
	struct opp_collective *a = calloc(1, sizeof *a);
	if (!a) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	snprintf(a->path, sizeof a->path, "%s", path);
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		char *t = txt_trim(line);
		if (rd.lineno == 1 && strcmp(t, k->kind_line) != 0) {
			snprintf(err, errlen, "%s:1: not %s (its first line must be '%s')", path, k->what, k->kind_line);
			goto fail_rd;
		}
		if (txt_line_is_blank_or_comment(t))
			continue;
		size_t n = txt_split(t, ',', f, 4);
		if (!header) {
			for (size_t i = 0; i < 3; i++)
				if (i >= n || strcmp(f[i], names[i]) != 0) {
					snprintf(err, errlen, "%s:%lu: missing column '%s' (header %s,bytes,ms)", path, rd.lineno,
					         names[i], k->key);
					goto fail_rd;
				}
			header = 1;
			continue;
		}
		uint64_t key, bytes;
		double ms;
		size_t bad = n != 3 ? 3 : txt_parse_uint(f[0], k->key_max, &key) != 0 || key < k->key_min
		                          || (k->key_ok && !k->key_ok(key)) ? 0
		             : txt_parse_uint(f[1], UINT64_MAX, &bytes) != 0 || bytes == 0 ? 1
		             : txt_parse_double(f[2], &ms) != 0 || !(ms > 0) || ms > OPP_MAX_MS ? 2 : SIZE_MAX;
		if (bad == 3) {
			snprintf(err, errlen, "%s:%lu: %zu fields where the header has 3", path, rd.lineno, n);
			goto fail_rd;
		}
		if (bad != SIZE_MAX) {
			snprintf(err, errlen, "%s:%lu:%zu (%s): %s '%s'", path, rd.lineno, bad + 1, names[bad],
			         bad == 0 ? k->key_must : bad == 1 ? "must be a positive byte count, not"
			         : "must be a positive time in ms up to 1e+09 (1e+06 s, the most a task may take in simulated "
			           "time), not", f[bad]);
			goto fail_rd;
		}
		if (a->n && (key < a->key[a->n - 1] || (key == a->key[a->n - 1] && (double)bytes <= a->bytes[a->n - 1]))) {
			snprintf(err, errlen, "%s:%lu:%d (%s): rows must be sorted by %s, then by increasing bytes", path,
			         rd.lineno, key < a->key[a->n - 1] ? 1 : 2, key < a->key[a->n - 1] ? k->key : "bytes", k->key);
			goto fail_rd;
		}
		if (a->n == cap) {
			size_t ncap = grow_capacity(cap, a->n + 1, 256, sizeof *a->ms);
			if (!ncap || grow_to(&a->key, ncap, sizeof *a->key) != 0 ||
			    grow_to(&a->bytes, ncap, sizeof *a->bytes) != 0 || grow_to(&a->ms, ncap, sizeof *a->ms) != 0) {
				err_memory(err, errlen, "out of memory");
				goto fail_rd;
			}
			cap = ncap;
		}
		a->key[a->n] = (uint32_t)key;
		a->bytes[a->n] = (double)bytes;
		a->ms[a->n] = ms;
		a->n++;
	}
	if (got < 0)
		goto fail_rd;
	lines_close(&rd);
	if (!a->n) {
		snprintf(err, errlen, "%s: no rows", path);
		goto fail;
	}
	*out = a;
	return 0;
fail_rd:
	lines_close(&rd);
fail:
	opp_collective_free(a);
	return -1;
}

int opp_allreduce_load(const char *path, struct opp_collective **out, char *err, size_t errlen)
{
	static const struct opp_collective_kind k = { OPP_ALLREDUCE_KIND_LINE, "an all-reduce profile", "gpus", 2, 8,
	                                              opp_tp_supported, "must be 2, 4 or 8 GPUs (the tensor "
	                                              "parallelism a measured GPU runs), not" };
	return opp_collective_load(path, &k, out, err, errlen);
}

int opp_sendrecv_load(const char *path, struct opp_collective **out, char *err, size_t errlen)
{
	static const struct opp_collective_kind k = { OPP_SENDRECV_KIND_LINE, "a send-recv profile", "nodes", 1, 2,
	                                              NULL, "must be 1 (one node) or 2 (two nodes), not" };
	return opp_collective_load(path, &k, out, err, errlen);
}

int opp_collective_has(const struct opp_collective *a, uint32_t key)
{
	for (size_t i = 0; a && i < a->n; i++)
		if (a->key[i] == key)
			return 1;
	return 0;
}

void opp_collective_rows(const struct opp_collective *a, uint32_t key, size_t *first, size_t *n)
{
	*first = *n = 0;
	while (*first < a->n && a->key[*first] != key)
		(*first)++;
	while (*first + *n < a->n && a->key[*first + *n] == key)
		(*n)++;
}

double opp_collective_rows_ms(const struct opp_collective *a, size_t first, size_t n, double bytes, int *extrapolated)
{
	return n ? opp_polyline(n, &a->bytes[first], &a->ms[first], 1, bytes, extrapolated) : 0;
}

double opp_collective_ms(const struct opp_collective *a, uint32_t key, double bytes, int *extrapolated)
{
	size_t first, n;
	opp_collective_rows(a, key, &first, &n);
	return opp_collective_rows_ms(a, first, n, bytes, extrapolated);
}
