/* traces/experiment.c: an inference-perf experiment directory read back
 * (experiment.h). config.yaml is read as the block YAML inference-perf
 * writes (a key a line, nesting by indentation, lists of "- key: value"
 * items); the metrics file as the pretty-printed JSON it writes (a key a
 * line). Only the keys make-trace needs are taken; anything else is passed
 * over, and a key that is needed and missing or not a number is refused. */
#include "experiment.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define EXP_DEPTH 16
#define EXP_NAME 96

static const char *const exp_qnames[TRC_EXP_QUANTILES] = { "min", "p0.1", "p1", "p5", "p10", "p25", "median",
                                                           "p75", "p90", "p95", "p99", "p99.9", "max" };
static const double exp_qprob[TRC_EXP_QUANTILES] = { 0, .001, .01, .05, .10, .25, .50, .75, .90, .95, .99, .999, 1 };

/* An open mapping or list item on the way to the current line: its indent, its name, and for a key with
 * no value (a mapping or a list below it) how many list items it had. */
struct exp_level {
	int indent, item;            /* item: a list item's level (its keys at exactly indent) */
	int items;
	char name[EXP_NAME];
};

/* The config's keys make-trace reads, and the line each was on (0: absent). */
enum { K_DATA_TYPE, K_GROUPS, K_PER_GROUP, K_SYS, K_QUESTION, K_OUTPUT, K_MULTI_TURN, K_LOAD_TYPE, K_NKEYS };
static const char *const exp_keys[K_NKEYS] = {
	"data.type", "data.shared_prefix.num_groups", "data.shared_prefix.num_prompts_per_group",
	"data.shared_prefix.system_prompt_len", "data.shared_prefix.question_len", "data.shared_prefix.output_len",
	"data.shared_prefix.enable_multi_turn_chat", "load.type",
};

struct exp_read {
	const char *path;
	unsigned long line[K_NKEYS];
	char value[K_NKEYS][EXP_NAME];
	unsigned long stage_line[TRC_EXP_MAX_STAGES][2];   /* rate, duration */
	char stage_value[TRC_EXP_MAX_STAGES][2][EXP_NAME];
	size_t nstages;
	unsigned long stages_line;                         /* "stages:" */
};

/* One "key: value" (value may be empty) under the path levels[0, depth). */
static int exp_yaml_key(struct exp_read *rd, const struct exp_level *lv, int depth, const char *key,
                        const char *value, unsigned long lineno, char *err, size_t errlen)
{
	char path[EXP_DEPTH * EXP_NAME + EXP_NAME] = "";
	size_t at = 0;
	for (int i = 0; i < depth; i++)
		if (!lv[i].item)
			at += (size_t)snprintf(path + at, sizeof path - at, "%s.", lv[i].name);
	snprintf(path + at, sizeof path - at, "%s", key);
	for (int k = 0; k < K_NKEYS; k++)
		if (strcmp(path, exp_keys[k]) == 0) {
			rd->line[k] = lineno;
			snprintf(rd->value[k], EXP_NAME, "%s", value);
		}
	if (strcmp(path, "load.stages") == 0)
		rd->stages_line = lineno;
	/* a stage's key: the item of load.stages it is in */
	if (depth == 3 && lv[2].item && strcmp(lv[0].name, "load") == 0 && strcmp(lv[1].name, "stages") == 0 &&
	    (strcmp(key, "rate") == 0 || strcmp(key, "duration") == 0)) {
		size_t s = (size_t)lv[1].items - 1;
		if (s >= TRC_EXP_MAX_STAGES)
			return lines_fail(err, errlen, rd->path, lineno, "load.stages: more than %d stages",
			                  TRC_EXP_MAX_STAGES);
		int which = strcmp(key, "duration") == 0;
		rd->stage_line[s][which] = lineno;
		snprintf(rd->stage_value[s][which], EXP_NAME, "%s", value);
		if (s + 1 > rd->nstages)
			rd->nstages = s + 1;
	}
	return 0;
}

/* Reads config.yaml's lines into rd. */
static int exp_read_yaml(struct exp_read *rd, char *err, size_t errlen)
{
	struct lines_reader r;
	char *line;
	size_t len;
	int got, depth = 0;
	struct exp_level lv[EXP_DEPTH];
	if (lines_open(&r, rd->path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&r, &line, &len, err, errlen)) > 0) {
		line[strcspn(line, "\r\n")] = '\0';
		int indent = (int)strspn(line, " ");
		char *s = line + indent;
		if (*s == '\0' || *s == '#' || strcmp(s, "---") == 0)
			continue;
		if (*s == '\t') {
			lines_fail(err, errlen, rd->path, r.lineno, "a tab in the indentation (YAML indents with spaces)");
			goto fail;
		}
		int item = s[0] == '-' && (s[1] == ' ' || s[1] == '\0');
		/* close what this line is not inside: a key's children are indented deeper, an item's at its indent */
		while (depth > 0 && (lv[depth - 1].item ? lv[depth - 1].indent > indent || (item && lv[depth - 1].indent >= indent)
		                                         : lv[depth - 1].indent >= indent + (item ? 1 : 0)))
			depth--;
		if (item) {
			if (depth == 0 || lv[depth - 1].item || depth == EXP_DEPTH) {
				lines_fail(err, errlen, rd->path, r.lineno, "a list item outside a key's list");
				goto fail;
			}
			lv[depth - 1].items++;
			lv[depth] = (struct exp_level){ .indent = indent + 2, .item = 1 };
			depth++;
			s = txt_trim(s + 1);
			indent += 2;
			if (*s == '\0')
				continue;
		}
		char *colon = strstr(s, ": ");
		if (!colon && len > 0 && s[strlen(s) - 1] == ':')
			colon = s + strlen(s) - 1;
		if (!colon) {
			if (item)
				continue;             /* a list of plain values (circuit_breakers): none needed */
			lines_fail(err, errlen, rd->path, r.lineno, "expected 'key: value', got '%.60s'", s);
			goto fail;
		}
		*colon = '\0';
		char *key = txt_trim(s), *value = txt_trim(colon + 1);
		if (exp_yaml_key(rd, lv, depth, key, value, r.lineno, err, errlen) != 0)
			goto fail;
		if (*value == '\0') {         /* a mapping or a list follows */
			if (depth == EXP_DEPTH) {
				lines_fail(err, errlen, rd->path, r.lineno, "nested deeper than %d levels", EXP_DEPTH);
				goto fail;
			}
			lv[depth] = (struct exp_level){ .indent = indent };
			snprintf(lv[depth].name, EXP_NAME, "%s", key);
			depth++;
		}
	}
	if (got < 0)
		goto fail;
	lines_close(&r);
	return 0;
fail:
	lines_close(&r);
	return -1;
}

/* The key's value as a whole number in [lo, hi]. */
static int exp_uint(const struct exp_read *rd, int k, uint64_t lo, uint64_t hi, uint64_t *out, char *err,
                    size_t errlen)
{
	if (!rd->line[k])
		return lines_fail(err, errlen, rd->path, 0, "%s is missing (inference-perf's shared_prefix data writes it)",
		                  exp_keys[k]);
	if (txt_parse_uint(rd->value[k], UINT64_MAX, out) != 0 || *out < lo || *out > hi)
		return lines_fail(err, errlen, rd->path, rd->line[k], "%s must be a whole number from %llu to %llu, got "
		                  "'%.40s'", exp_keys[k], (unsigned long long)lo, (unsigned long long)hi, rd->value[k]);
	return 0;
}

/* stage_0_lifecycle_metrics.json's successes.prompt_len quantiles, when the file exists. */
static int exp_read_quantiles(struct trc_experiment *x, char *err, size_t errlen)
{
	struct stat st;
	if (stat(x->quantile_path, &st) != 0 && errno == ENOENT)
		return 0;                     /* not measured: the configured lengths stand */
	struct lines_reader r;
	char *line;
	size_t len;
	int got, depth = 0, found = 0;
	char path[EXP_DEPTH][EXP_NAME];
	unsigned long first = 0;
	if (lines_open(&r, x->quantile_path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&r, &line, &len, err, errlen)) > 0) {
		char *s = txt_trim(line);
		if (*s == '}' || *s == ']') {
			depth -= depth > 0;
			continue;
		}
		if (*s != '"')
			continue;
		char *end = strchr(s + 1, '"');
		if (!end || end[1] != ':')
			continue;
		*end = '\0';
		char *key = s + 1, *value = txt_trim(end + 2);
		size_t vl = strlen(value);
		if (vl > 0 && value[vl - 1] == ',')
			value[--vl] = '\0';
		if (*value == '{' || *value == '[') {
			if (value[1] == '\0' && depth < EXP_DEPTH)
				snprintf(path[depth++], EXP_NAME, "%s", key);
			continue;
		}
		if (depth != 2 || strcmp(path[0], "successes") != 0 || strcmp(path[1], "prompt_len") != 0)
			continue;
		for (int q = 0; q < TRC_EXP_QUANTILES; q++)
			if (strcmp(key, exp_qnames[q]) == 0) {
				double v;
				if (txt_parse_double(value, &v) != 0 || v < 1 || v > 1e6 ||
				    (q > 0 && (found >> (q - 1) & 1) && v < x->prompt_q[q - 1])) {
					lines_fail(err, errlen, x->quantile_path, r.lineno, "successes.prompt_len.%s must be a number of "
					           "tokens from 1 to 1e6, not below the quantile before, got '%.40s'", key, value);
					goto fail;
				}
				x->prompt_q[q] = v;
				found |= 1 << q;
				first = first ? first : r.lineno;
			}
	}
	if (got < 0)
		goto fail;
	lines_close(&r);
	if (found != (1 << TRC_EXP_QUANTILES) - 1) {
		int q = 0;
		while (found >> q & 1)
			q++;
		return lines_fail(err, errlen, x->quantile_path, first, "successes.prompt_len.%s is missing (the measured "
		                  "prompt lengths: min, p0.1, p1, ... p99.9, max)", exp_qnames[q]);
	}
	x->measured = 1;
	return 0;
fail:
	lines_close(&r);
	return -1;
}

/* The config's values, read into rd, checked into x; the measured lengths read after. */
static int exp_take(const struct exp_read *rd, struct trc_experiment *x, char *err, size_t errlen)
{
	if (!rd->line[K_DATA_TYPE] || strcmp(rd->value[K_DATA_TYPE], "shared_prefix") != 0)
		return lines_fail(err, errlen, rd->path, rd->line[K_DATA_TYPE], "data.type must be shared_prefix (the prompt "
		                  "pool make-trace rebuilds), got '%.40s'", rd->value[K_DATA_TYPE]);
	if (rd->line[K_MULTI_TURN] && strcmp(rd->value[K_MULTI_TURN], "false") != 0 &&
	    strcmp(rd->value[K_MULTI_TURN], "null") != 0)
		return lines_fail(err, errlen, rd->path, rd->line[K_MULTI_TURN], "%s: multi-turn sessions are not a prompt "
		                  "pool (make-trace --shared-prefix=N:S:U:T writes conversations), got '%.40s'",
		                  exp_keys[K_MULTI_TURN], rd->value[K_MULTI_TURN]);
	/* a pool of zero prompts sends nothing: refused */
	if (exp_uint(rd, K_GROUPS, 1, 1000000, &x->groups, err, errlen) != 0 ||
	    exp_uint(rd, K_PER_GROUP, 1, 1000000, &x->prompts_per_group, err, errlen) != 0 ||
	    exp_uint(rd, K_SYS, 0, 1000000, &x->system_prompt_len, err, errlen) != 0 ||
	    exp_uint(rd, K_QUESTION, 0, 1000000, &x->question_len, err, errlen) != 0 ||
	    exp_uint(rd, K_OUTPUT, 1, 1000000, &x->output_len, err, errlen) != 0)
		return -1;
	if (x->groups * x->prompts_per_group > 10000000)
		return lines_fail(err, errlen, rd->path, rd->line[K_PER_GROUP], "a pool of %llu prompts: at most 10000000",
		                  (unsigned long long)(x->groups * x->prompts_per_group));
	if (!rd->line[K_LOAD_TYPE] || (strcmp(rd->value[K_LOAD_TYPE], "constant") != 0 &&
	                              strcmp(rd->value[K_LOAD_TYPE], "poisson") != 0))
		return lines_fail(err, errlen, rd->path, rd->line[K_LOAD_TYPE], "load.type must be constant or poisson, got "
		                  "'%.40s'", rd->value[K_LOAD_TYPE]);
	x->poisson = strcmp(rd->value[K_LOAD_TYPE], "poisson") == 0;
	if (rd->nstages == 0)
		return lines_fail(err, errlen, rd->path, rd->stages_line, "load.stages has no stage (- rate: R, duration: S)");
	x->nstages = rd->nstages;
	for (size_t s = 0; s < rd->nstages; s++) {
		static const char *const names[2] = { "rate", "duration" };
		double *v[2] = { &x->rate[s], &x->duration[s] };
		for (int w = 0; w < 2; w++) {
			if (!rd->stage_line[s][w])
				return lines_fail(err, errlen, rd->path, rd->stages_line, "load.stages[%zu].%s is missing", s, names[w]);
			if (txt_parse_double(rd->stage_value[s][w], v[w]) != 0 || !(*v[w] > 0) || *v[w] > 1e9)
				return lines_fail(err, errlen, rd->path, rd->stage_line[s][w], "load.stages[%zu].%s must be a positive "
				                  "number up to 1e9, got '%.40s'", s, names[w], rd->stage_value[s][w]);
		}
		double n = floor(x->rate[s] * x->duration[s]);     /* inference-perf: int(rate * duration) */
		if (n < 1 || n > 1e9)
			return lines_fail(err, errlen, rd->path, rd->stage_line[s][0], "load.stages[%zu] sends %.0f requests "
			                  "(int(rate x duration)): need 1 to 1e9", s, n);
		x->requests[s] = (uint64_t)n;
	}
	if (exp_read_quantiles(x, err, errlen) != 0)
		return -1;
	if (x->measured && x->prompt_q[0] < (double)x->system_prompt_len)
		return lines_fail(err, errlen, rd->path, rd->line[K_SYS], "%s %llu is longer than the shortest measured prompt "
		                  "(%s: prompt_len min %g): the system prompt must lie inside the prompt", exp_keys[K_SYS],
		                  (unsigned long long)x->system_prompt_len, x->quantile_path, x->prompt_q[0]);
	return 0;
}

int trc_experiment_load(const char *dir, struct trc_experiment *x, char *err, size_t errlen)
{
	char config[4096];
	memset(x, 0, sizeof *x);
	if ((size_t)snprintf(config, sizeof config, "%s/results/config.yaml", dir) >= sizeof config ||
	    (size_t)snprintf(x->quantile_path, sizeof x->quantile_path, "%s/results/stage_0_lifecycle_metrics.json",
	                     dir) >= sizeof x->quantile_path)
		return lines_fail(err, errlen, dir, 0, "path too long");
	struct exp_read *rd = calloc(1, sizeof *rd);    /* 13 KB of stage values: not on the stack */
	if (!rd)
		return err_memory(err, errlen, "%s: out of memory", config);
	rd->path = config;
	int status = exp_read_yaml(rd, err, errlen) != 0 || exp_take(rd, x, err, errlen) != 0 ? -1 : 0;
	free(rd);
	return status;
}

double trc_experiment_prompt_len(const struct trc_experiment *x, double p)
{
	for (int q = 1; q < TRC_EXP_QUANTILES; q++)
		if (p <= exp_qprob[q]) {
			double q0 = exp_qprob[q - 1], q1 = exp_qprob[q];
			return x->prompt_q[q - 1] + (x->prompt_q[q] - x->prompt_q[q - 1]) * (p - q0) / (q1 - q0);
		}
	return x->prompt_q[TRC_EXP_QUANTILES - 1];
}
