/* sim/cli/search_spec.c: the configuration search file (search_spec.h,
 * sim/SEARCH.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../util/grow.h"
#include "../study/run_options.h"
#include "search_spec.h"
#include "search_config.h"
#include "cli.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../../util/errkind.h"
#include "../../util/lines.h"
#include "../../util/options.h"
#include "../../util/text.h"


/* Options the search sets for each configuration, or that make no sense in one. */
static const char *const search_forbidden[] = { "json", "quiet", "jobs", "help", "rate", "db", "no-db" };

void search_spec_free(struct search_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfixed; i++)
		free(s->fixed[i]);
	free(s->fixed);
	free(s->fixed_line);
	for (size_t a = 0; a < s->naxes; a++) {
		for (size_t v = 0; v < s->axes[a].nvalues; v++)
			free(s->axes[a].values[v]);
		free(s->axes[a].values);
		free(s->axes[a].name);
	}
	free(s->axes);
	for (size_t i = 0; i < s->nprices; i++)
		free(s->prices[i].hw);
	free(s->prices);
	free(s->default_hw);
	free(s->text);
	free(s->path);
	free(s);
}

/* Checks --name=value against capacity's, then run's, option table: 0, or -1 with err. */
static int search_check_option(const char *name, const char *value, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof search_forbidden / sizeof search_forbidden[0]; i++)
		if (strcmp(name, search_forbidden[i]) == 0) {
			snprintf(err, errlen, "--%s is the search's own to set, not the file's", name);
			return -1;
		}
	size_t n;
	const struct opt_def *defs = cmd_capacity_options(&n), *d = opt_find(defs, n, name);
	if (!d) {
		defs = cmd_run_options(&n);
		d = opt_find(defs, n, name);
	}
	if (!d) {
		snprintf(err, errlen, "unknown option --%s (simbatch capacity --help, simbatch run --help)", name);
		return -1;
	}
	if ((d->type == OPT_FLAG) != (value == NULL)) {
		snprintf(err, errlen, d->type == OPT_FLAG ? "--%s is a flag: it takes no value" : "--%s needs a value", name);
		return -1;
	}
	if (!value)
		return 0;
	struct opt_set one;
	opt_defaults(&one, d, 1);
	return opt_put(&one, name, value, err, errlen);
}

static int search_add_fixed(struct search_spec *s, const char *word, unsigned line, char *err, size_t errlen)
{
	if (strncmp(word, "--", 2) != 0 || !word[2]) {
		snprintf(err, errlen, "%s:%u: expected --option=value, not '%s'", s->path, line, word);
		return -1;
	}
	char name[128];
	const char *eq = strchr(word, '=');
	size_t len = eq ? (size_t)(eq - word - 2) : strlen(word + 2);
	snprintf(name, sizeof name, "%.*s", (int)len, word + 2);
	char why[512];
	if (search_check_option(name, eq ? eq + 1 : NULL, why, sizeof why) != 0) {
		snprintf(err, errlen, "%s:%u: %s", s->path, line, why);
		return -1;
	}
	if (search_fixed_value(s, name, NULL) || search_axis(s, name)) {
		snprintf(err, errlen, "%s:%u: --%s is set twice", s->path, line, name);
		return -1;
	}
	char **f = realloc(s->fixed, (s->nfixed + 1) * sizeof *f);
	if (f)
		s->fixed = f;
	unsigned *l = f ? realloc(s->fixed_line, (s->nfixed + 1) * sizeof *l) : NULL;
	if (l)
		s->fixed_line = l;
	if (!l || !(s->fixed[s->nfixed] = strdup(word)))
		return err_memory(err, errlen, "out of memory");
	s->fixed_line[s->nfixed++] = line;
	return 0;
}

/* axis NAME = V1 V2 ... (w[0] is "axis") */
static int search_add_axis(struct search_spec *s, char **w, size_t n, unsigned line, char *err, size_t errlen)
{
	if (n < 4 || strcmp(w[2], "=") != 0) {
		snprintf(err, errlen, "%s:%u: expected 'axis NAME = VALUE ...'", s->path, line);
		return -1;
	}
	if (search_axis(s, w[1]) || search_fixed_value(s, w[1], NULL)) {
		snprintf(err, errlen, "%s:%u: --%s is set twice", s->path, line, w[1]);
		return -1;
	}
	struct search_axis *a = realloc(s->axes, (s->naxes + 1) * sizeof *a);
	if (!a)
		return err_memory(err, errlen, "out of memory");
	s->axes = a;
	a = &s->axes[s->naxes];
	memset(a, 0, sizeof *a);
	a->line = line;
	if (!(a->name = strdup(w[1])) || !(a->values = calloc(n - 3, sizeof *a->values)))
		return err_memory(err, errlen, "out of memory");
	s->naxes++;
	for (size_t i = 3; i < n; i++) {
		char why[512];
		const char *plus = strcmp(w[1], "replicas") == 0 ? strchr(w[i], '+') : NULL;
		uint64_t p, d;
		if (plus) {
			char pool[2][128];
			snprintf(pool[0], sizeof pool[0], "%.*s", (int)(plus - w[i]), w[i]);
			snprintf(pool[1], sizeof pool[1], "%s", plus + 1);
			for (int k = 0; k < 2; k++)
				pool[k][strcspn(pool[k], ":")] = '\0';     /* P:HW: the count before the pool's hardware */
			if (txt_parse_uint(pool[0], 4096, &p) != 0 || txt_parse_uint(pool[1], 4096, &d) != 0 || !p || !d) {
				snprintf(err, errlen, "%s:%u: replicas value '%s': expected N or P[:HW]+D[:HW] (prefill and decode "
				         "replicas, at least one each, each pool on its own hardware or the configuration's)",
				         s->path, line, w[i]);
				return -1;
			}
		} else if (search_check_option(w[1], w[i], why, sizeof why) != 0) {
			snprintf(err, errlen, "%s:%u: %s", s->path, line, why);
			return -1;
		}
		for (size_t k = 0; k < a->nvalues; k++)
			if (strcmp(a->values[k], w[i]) == 0) {
				snprintf(err, errlen, "%s:%u: value '%s' given twice", s->path, line, w[i]);
				return -1;
			}
		if (!(a->values[a->nvalues++] = strdup(w[i])))
			return err_memory(err, errlen, "out of memory");
	}
	return 0;
}

/* cost HW = DOLLARS */
static int search_add_price(struct search_spec *s, char **w, size_t n, unsigned line, char *err, size_t errlen)
{
	double dollars;
	if (n != 4 || strcmp(w[2], "=") != 0 || txt_parse_double(w[3], &dollars) != 0) {
		snprintf(err, errlen, "%s:%u: expected 'cost HW = DOLLARS' (one GPU of kind HW an hour)", s->path, line);
		return -1;
	}
	if (!(dollars > 0) || dollars > 1e9) {
		snprintf(err, errlen, "%s:%u: a GPU-hour of %s must cost a positive number of dollars, not %s", s->path, line,
		         w[1], w[3]);
		return -1;
	}
	for (size_t i = 0; i < s->nprices; i++)
		if (strcmp(s->prices[i].hw, w[1]) == 0) {
			snprintf(err, errlen, "%s:%u: %s is priced twice (line %u)", s->path, line, w[1], s->prices[i].line);
			return -1;
		}
	struct search_price *p = realloc(s->prices, (s->nprices + 1) * sizeof *p);
	if (!p)
		return err_memory(err, errlen, "out of memory");
	s->prices = p;
	p[s->nprices] = (struct search_price){ .hw = strdup(w[1]), .dollars_per_gpu_hour = dollars, .line = line };
	if (!p[s->nprices].hw)
		return err_memory(err, errlen, "out of memory");
	s->nprices++;
	return 0;
}

/* target RATE | budget DOLLARS */
static int search_add_goal(struct search_spec *s, char **w, size_t n, unsigned line, char *err, size_t errlen)
{
	double v;
	if (n != 2 || txt_parse_double(w[1], &v) != 0 || !(v > 0) || v > 1e12) {
		snprintf(err, errlen, "%s:%u: expected '%s %s' with a positive number", s->path, line, w[0],
		         strcmp(w[0], "target") == 0 ? "REQ_PER_S" : "DOLLARS_PER_HOUR");
		return -1;
	}
	if (s->target_rps > 0 || s->budget > 0) {
		snprintf(err, errlen, "%s:%u: one goal a search: a target rate or a budget, not both or twice", s->path, line);
		return -1;
	}
	*(strcmp(w[0], "target") == 0 ? &s->target_rps : &s->budget) = v;
	return 0;
}

/* 1 with err when hw has no price. */
static int search_unpriced(const struct search_spec *s, const char *hw, unsigned line, char *err, size_t errlen)
{
	for (size_t i = 0; i < s->nprices; i++)
		if (strcmp(s->prices[i].hw, hw) == 0)
			return 0;
	snprintf(err, errlen, "%s:%u: %s has no price: add 'cost %s = DOLLARS' (one GPU an hour)", s->path, line, hw, hw);
	return 1;
}

/* Each configuration's GPU kind has a price: the --hw values the file can
 * give, or the default for its model's kind when it gives none. */
static int search_check_prices(struct search_spec *s, char *err, size_t errlen)
{
	const struct search_axis *hw_axis = search_axis(s, "hw");
	size_t hw_at = 0;
	const char *hw_fixed = search_fixed_value(s, "hw", &hw_at);
	const char *one[1];
	const char *const *kinds = hw_axis ? (const char *const *)hw_axis->values : one;
	size_t nkinds = hw_axis ? hw_axis->nvalues : 1;
	unsigned line = hw_axis ? hw_axis->line : hw_fixed ? s->fixed_line[hw_at] : 0;
	if (!hw_axis && !hw_fixed) {
		/* the default hardware: an LLM's gpu-h100, else run's default; every model must agree */
		const struct search_axis *ma = search_axis(s, "model");
		size_t m_at = 0;
		const char *mf = search_fixed_value(s, "model", &m_at);
		size_t nm = ma ? ma->nvalues : 1;
		int llm = -1;
		for (size_t i = 0; i < nm; i++) {
			struct mdl_model *m = NULL;
			char why[512];
			const char *name = ma ? ma->values[i] : mf ? mf : "transformer";
			if (mdl_load(name, &m, why, sizeof why) != 0) {
				snprintf(err, errlen, "%s:%u: %s", s->path, ma ? ma->line : mf ? s->fixed_line[m_at] : 1, why);
				return -1;
			}
			if (llm >= 0 && llm != (m->is_llm != 0)) {
				snprintf(err, errlen, "%s:%u: LLMs and node-level models run on different default hardware: give "
				         "--hw", s->path, ma->line);
				mdl_free(m);
				return -1;
			}
			llm = m->is_llm != 0;
			mdl_free(m);
		}
		size_t nr;
		const struct opt_def *rd = cmd_run_options(&nr);
		one[0] = llm ? RUN_DEFAULT_LLM_HW : opt_find(rd, nr, "hw")->defval;
		if (!(s->default_hw = strdup(one[0])))
			return err_memory(err, errlen, "out of memory");
	} else if (!hw_axis) {
		one[0] = hw_fixed;
	}
	for (size_t k = 0; k < nkinds; k++)
		if (search_unpriced(s, kinds[k], line ? line : 1, err, errlen))
			return -1;
	/* a pool's own hardware, P:HW+D:HW */
	const struct search_axis *ra = search_axis(s, "replicas");
	for (size_t v = 0; ra && v < ra->nvalues; v++) {
		char *buf = strdup(ra->values[v]);
		if (!buf)
			return err_memory(err, errlen, "out of memory");
		for (char *save = NULL, *pool = strtok_r(buf, "+", &save); pool; pool = strtok_r(NULL, "+", &save)) {
			char *colon = strchr(pool, ':');
			if (colon && search_unpriced(s, colon + 1, ra->line, err, errlen)) {
				free(buf);
				return -1;
			}
		}
		free(buf);
	}
	return 0;
}

/* Whether a count of replicas (a fleet's, or a pool's: N of N[:HW]) is one run takes: 1 up to the devices a
 * run may have (run's bound on --workers). */
static int search_count_ok(const char *text, size_t len)
{
	char count[32];
	size_t n;
	uint64_t v;
	const struct opt_def *run = cmd_run_options(&n), *w = opt_find(run, n, "workers");
	snprintf(count, sizeof count, "%.*s", (int)(len < sizeof count ? len : sizeof count - 1), text);
	return len < sizeof count && txt_parse_uint(count, (uint64_t)w->max, &v) == 0 && v >= 1;
}

/* One value of --hw, --tp, --replicas, --prefill-replicas or --decode-replicas (others: nothing to check here)
 * names a deployment at all: known hardware (the registry's, or a file there), a tensor parallelism some GPU
 * takes, 1 or more replicas, each group's or pool's hardware known. 0, or -1 with why. */
static int search_check_value(const char *name, const char *v, char *why, size_t whylen)
{
	uint64_t tp;
	if (strcmp(name, "hw") == 0)
		return hw_exists(v, why, whylen);
	if (strcmp(name, "tp") == 0)
		return txt_parse_uint(v, UINT32_MAX, &tp) != 0 ? -1 : hw_tp_supported((uint32_t)tp, why, whylen);
	int pools = strcmp(name, "prefill-replicas") == 0 || strcmp(name, "decode-replicas") == 0;
	if (!pools && strcmp(name, "replicas") != 0)
		return 0;
	/* replicas: N or P[:HW]+D[:HW] (pools; a fleet of groups, N:HW,..., has no one price: search_config_make);
	 * a pool's option: N[:HW] */
	const char *plus = pools ? NULL : strchr(v, '+');
	for (int k = 0; k < (plus ? 2 : 1); k++) {
		const char *part = k ? plus + 1 : v, *end = plus && !k ? plus : v + strlen(v);
		const char *colon = memchr(part, ':', (size_t)(end - part));
		if (!search_count_ok(part, (size_t)((colon ? colon : end) - part)) || (colon && !plus && !pools) ||
		    (colon && (colon + 1 == end || memchr(colon + 1, ':', (size_t)(end - colon - 1)) ||
		               memchr(colon + 1, '+', (size_t)(end - colon - 1))))) {
			snprintf(why, whylen, "--%s=%s: expected %s", name, v, pools ? "N or N:HW (N replicas, 1 "
			         "or more)" : "N (1 or more replicas) or P[:HW]+D[:HW] (prefill and decode pools; a "
			         "fleet of groups on hardware of several kinds, N:HW,..., has no one price a search can "
			         "give it)");
			return -1;
		}
		char *hw = colon ? strndup(colon + 1, (size_t)(end - colon - 1)) : NULL;
		int known = !colon || (hw && hw_exists(hw, why, whylen) == 0);
		if (colon && !hw)
			snprintf(why, whylen, "out of memory");
		free(hw);
		if (!known)
			return -1;
	}
	return 0;
}

/* Every value of the options that name the deployment (search_check_value), fixed or an axis's, at its line. */
static int search_check_values(const struct search_spec *s, char *err, size_t errlen)
{
	char why[512], name[128];
	for (size_t i = 0; i < s->nfixed; i++) {
		const char *eq = strchr(s->fixed[i], '=');
		if (!eq)
			continue;
		snprintf(name, sizeof name, "%.*s", (int)(eq - s->fixed[i] - 2), s->fixed[i] + 2);
		if (search_check_value(name, eq + 1, why, sizeof why) != 0) {
			snprintf(err, errlen, "%s:%u: %s", s->path, s->fixed_line[i], why);
			return -1;
		}
	}
	for (size_t a = 0; a < s->naxes; a++)
		for (size_t v = 0; v < s->axes[a].nvalues; v++)
			if (search_check_value(s->axes[a].name, s->axes[a].values[v], why, sizeof why) != 0) {
				snprintf(err, errlen, "%s:%u: %s", s->path, s->axes[a].line, why);
				return -1;
			}
	return 0;
}

/* capacity takes each model's targets (one configuration a model value):
 * else its message, at the line of the option it names. */
static int search_check_targets(struct search_spec *s, char *err, size_t errlen)
{
	const struct search_axis *ma = search_axis(s, "model");
	size_t nm = ma ? ma->nvalues : 1, checked = 0;
	int *seen = calloc(nm, sizeof *seen);
	if (!seen)
		return err_memory(err, errlen, "out of memory");
	for (size_t i = 0; i < s->nconfigs && checked < nm && i < 100000; i++) {
		struct search_config c;
		if (search_config_make(s, i, &c, err, errlen) != 0) {
			free(seen);
			return -1;
		}
		const char *model = NULL;
		size_t mi = 0;
		for (size_t k = 0; k < c.nopts; k++)
			if (strncmp(c.opts[k], "--model=", 8) == 0)
				model = c.opts[k] + 8;
		while (ma && mi < nm && strcmp(ma->values[mi], model) != 0)
			mi++;
		if (mi == nm || seen[mi]) {       /* mi < nm: a configuration's model is an axis value, whole */
			search_config_free(&c);
			continue;
		}
		seen[mi] = 1;
		checked++;
		char *argv[SEARCH_MAX_OPTS + 1], why[1024];
		argv[0] = "capacity";
		memcpy(argv + 1, c.opts, c.nopts * sizeof *argv);
		int rc = cmd_capacity_check_targets((int)c.nopts + 1, argv, why, sizeof why);
		search_config_free(&c);
		if (rc != 0) {
			unsigned line = 0;
			for (size_t k = 0; k < s->nfixed && !line; k++) {
				char name[130];
				snprintf(name, sizeof name, "%.*s", (int)strcspn(s->fixed[k], "="), s->fixed[k]);
				if (strstr(why, name))
					line = s->fixed_line[k];
			}
			if (line)
				snprintf(err, errlen, "%s:%u: %s", s->path, line, why);
			else
				snprintf(err, errlen, "%s: %s", s->path, why);
			free(seen);
			return -1;
		}
	}
	free(seen);
	return 0;
}

int search_spec_load(const char *path, struct search_spec **out, char *err, size_t errlen)
{
	*out = NULL;
	struct search_spec *s = calloc(1, sizeof *s);
	if (!s || !(s->path = strdup(path))) {
		free(s);
		return err_memory(err, errlen, "out of memory");
	}
	struct lines_reader rd;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	char *line;
	size_t len;
	int got;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		/* the text kept as read, within the reader's bound */
		if (GROW(s->text, s->text_cap, s->text_len + len + 1, 256) != 0) {
			err_memory(err, errlen, "out of memory");
			goto fail_rd;
		}
		memcpy(s->text + s->text_len, line, len);
		s->text[s->text_len += len] = '\0';
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *w[SEARCH_MAX_OPTS + 4];
		size_t n = 0;
		for (char *save = NULL, *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
			if (n == sizeof w / sizeof w[0]) {
				snprintf(err, errlen, "%s:%lu: more than %zu words", path, rd.lineno, sizeof w / sizeof w[0]);
				goto fail_rd;
			}
			w[n++] = t;
		}
		unsigned ln = (unsigned)rd.lineno;
		int rc = 0;
		if (n == 0)
			continue;
		if (strcmp(w[0], "fixed") == 0)
			for (size_t i = 1; i < n && rc == 0; i++)
				rc = search_add_fixed(s, w[i], ln, err, errlen);
		else if (strcmp(w[0], "axis") == 0)
			rc = search_add_axis(s, w, n, ln, err, errlen);
		else if (strcmp(w[0], "cost") == 0)
			rc = search_add_price(s, w, n, ln, err, errlen);
		else if (strcmp(w[0], "target") == 0 || strcmp(w[0], "budget") == 0)
			rc = search_add_goal(s, w, n, ln, err, errlen);
		else {
			snprintf(err, errlen, "%s:%u: unknown directive '%s' (fixed, axis, cost, target, budget)", path, ln, w[0]);
			rc = -1;
		}
		if (rc != 0)
			goto fail_rd;
		if (s->nfixed + s->naxes > SEARCH_MAX_OPTS - 2) {
			snprintf(err, errlen, "%s:%u: more than %d options a configuration", path, ln, SEARCH_MAX_OPTS - 2);
			goto fail_rd;
		}
	}
	if (got < 0)
		goto fail_rd;
	lines_close(&rd);
	if (!(s->target_rps > 0) && !(s->budget > 0)) {
		snprintf(err, errlen, "%s: no goal: add 'target REQ_PER_S' (the cheapest meeting it) or 'budget DOLLARS' "
		         "(the most capacity an hour's dollars buy)", path);
		goto fail;
	}
	if (search_check_values(s, err, errlen) != 0 || search_check_prices(s, err, errlen) != 0)
		goto fail;
	s->nconfigs = 1;
	for (size_t a = 0; a < s->naxes; a++) {
		if (s->nconfigs > 1000000 / s->axes[a].nvalues) {
			snprintf(err, errlen, "%s:%u: more than 1,000,000 configurations", path, s->axes[a].line);
			goto fail;
		}
		s->nconfigs *= s->axes[a].nvalues;
	}
	if (search_check_targets(s, err, errlen) != 0)
		goto fail;
	*out = s;
	return 0;
fail_rd:
	lines_close(&rd);
fail:
	search_spec_free(s);
	return -1;
}
