/* hwmodels/llm_iter.c: the measured LLM iteration model of llm_iter.h: its
 * file and its prices. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/lines.h"
#include "../util/errkind.h"
#include "../util/text.h"
#include "llm_iter.h"

struct llm_iter_hw {
	struct hw_model base;
	struct llm_iter_coef coef;
	double mem_bytes;
};

enum { LI_MODEL, LI_FIXED, LI_TOKEN, LI_EMIT, LI_PAIR, LI_MEM, LI_NKEYS };
static const char *const li_keys[LI_NKEYS] = { "model", "fixed_us", "token_us", "emit_us", "pair_ns",
                                               "mem_capacity_gb" };

static int li_judge(char *line, unsigned long lineno, void *ctx)
{
	(void)lineno;
	(void)ctx;
	char *key, *value;
	int got = txt_setting(line, &key, &value);
	if (got == 0)
		return -1;
	return got > 0 && strcmp(key, "kind") == 0 && strcmp(value, LLM_ITER_KIND) == 0;
}

int llm_iter_sniff(const char *path, char *err, size_t errlen)
{
	return txt_sniff_lines(path, li_judge, NULL, err, errlen);
}

/* One setting into r (the model's name into name). */
static int li_setting(const char *path, unsigned long line, const char *key, const char *value, unsigned long *seen,
                      double *val, char *name, size_t namelen, char *err, size_t errlen)
{
	for (int k = 0; k < LI_NKEYS; k++) {
		if (strcmp(key, li_keys[k]) != 0)
			continue;
		if (seen[k])
			return lines_fail(err, errlen, path, line, "key '%s' given twice (first on line %lu)", key, seen[k]);
		seen[k] = line;
		if (k == LI_MODEL) {
			if (*value == '\0' || strlen(value) >= namelen)
				return lines_fail(err, errlen, path, line, "key 'model': expected a model name");
			snprintf(name, namelen, "%s", value);
			return 0;
		}
		double v;
		if (txt_parse_double(value, &v) != 0 || !isfinite(v) || v < 0 || (k == LI_MEM && v <= 0))
			return lines_fail(err, errlen, path, line, "key '%s': expected a %s number, got '%s'", key,
			               k == LI_MEM ? "positive" : "non-negative", value);
		val[k] = v;
		return 0;
	}
	return lines_fail(err, errlen, path, line, "unknown key '%s' (known: kind, model, fixed_us, token_us, emit_us, "
	               "pair_ns, mem_capacity_gb)", key);
}

static int li_load(const char *path, struct llm_iter_hw *r, char *name, size_t namelen, char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len;
	unsigned long seen[LI_NKEYS] = { 0 }, kind_line = 0;
	double val[LI_NKEYS] = { 0 };
	int got, rc = -1;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		char *key, *value;
		int kind = txt_setting(line, &key, &value);
		if (kind == 0)
			continue;
		if (kind < 0) {
			lines_fail(err, errlen, path, rd.lineno, "expected KEY = VALUE");
			goto out;
		}
		if (strcmp(key, "kind") == 0) {
			if (kind_line || strcmp(value, LLM_ITER_KIND) != 0) {
				lines_fail(err, errlen, path, rd.lineno, kind_line ? "key 'kind' given twice" :
				        "key 'kind': expected " LLM_ITER_KIND);
				goto out;
			}
			kind_line = rd.lineno;
			continue;
		}
		if (li_setting(path, rd.lineno, key, value, seen, val, name, namelen, err, errlen) != 0)
			goto out;
	}
	if (got < 0)
		goto out;
	for (int k = 0; k < LI_NKEYS; k++)
		if (!seen[k]) {
			lines_fail(err, errlen, path, rd.lineno, "key '%s' is missing (an llm_iter file sets every key)",
			        li_keys[k]);
			goto out;
		}
	r->coef = (struct llm_iter_coef){ val[LI_FIXED] * 1e-6, val[LI_TOKEN] * 1e-6, val[LI_EMIT] * 1e-6,
	                                  val[LI_PAIR] * 1e-9 };
	r->mem_bytes = val[LI_MEM] * 1e9;
	rc = 0;
out:
	lines_close(&rd);
	return rc;
}

static int li_open(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	char name[MDL_NAME_MAX];
	struct llm_iter_hw *r = calloc(1, sizeof *r);
	*out = NULL;
	if (!r) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	if (li_load(arg, r, name, sizeof name, err, errlen) != 0)
		goto fail;
	if (m && (!m->is_llm || strcmp(m->name, name) != 0)) {
		snprintf(err, errlen, "%s: measured for model %s, not %s (an iteration profile prices only its own LLM)",
		         arg, name, m->name);
		goto fail;
	}
	const char *slash = strrchr(arg, '/');
	r->base.ops = &llm_iter_ops;
	r->base.model = m;
	snprintf(r->base.label, sizeof r->base.label, "%s", slash && slash[1] ? slash + 1 : arg);
	*out = &r->base;
	return 0;
fail:
	free(r);
	return -1;
}

static void li_close(struct hw_model *hw)
{
	free(hw);
}

static int li_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out, char *err,
                        size_t errlen)
{
	(void)t;
	(void)b;
	(void)out;
	snprintf(err, errlen, "hw %s prices LLM iterations, not nodes", hw->label);
	return -1;
}

static double li_iter_cost(const struct hw_model *hw, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                           uint32_t emitting, uint32_t pad)
{
	const struct llm_iter_hw *r = (const struct llm_iter_hw *)hw;
	double total = pad, pairs = 0;
	for (uint32_t i = 0; i < n; i++) {
		total += tokens[i];
		pairs += llm_iter_pairs(tokens[i], context[i]);
	}
	return llm_iter_seconds(&r->coef, total, emitting, pairs);
}

static void li_device(const struct hw_model *hw, struct hw_device *out)
{
	*out = (struct hw_device){ .mem_bytes = ((const struct llm_iter_hw *)hw)->mem_bytes };
}

const struct hw_ops llm_iter_ops = {
	.name = LLM_ITER_KIND,
	.help = "an LLM iteration's time fitted to timed iterations (a file: simbatch live --profile-out for an LLM)",
	.open = li_open,
	.close = li_close,
	.node_cost = li_node_cost,
	.iter_cost = li_iter_cost,
	.device = li_device,
};
