/* sim/cli/search_config.c: one configuration of a search file (search_config.h): its run
 * options, key, cost and GPUs, and the lookups into the file that building it needs. */
#include "search_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../study/run_options.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../../policies/router/router.h"
#include "../../util/errkind.h"
#include "../../util/options.h"
#include "../../util/text.h"

/* The value of name in the file's fixed options, or NULL. */
const char *search_fixed_value(const struct search_spec *s, const char *name, size_t *at)
{
	size_t len = strlen(name);
	for (size_t i = 0; i < s->nfixed; i++)
		if (strncmp(s->fixed[i] + 2, name, len) == 0 && (s->fixed[i][2 + len] == '=' || !s->fixed[i][2 + len])) {
			if (at)
				*at = i;
			return s->fixed[i][2 + len] == '=' ? s->fixed[i] + 3 + len : "";
		}
	return NULL;
}

const struct search_axis *search_axis(const struct search_spec *s, const char *name)
{
	for (size_t a = 0; a < s->naxes; a++)
		if (strcmp(s->axes[a].name, name) == 0)
			return &s->axes[a];
	return NULL;
}

/* The price of one hw GPU an hour, or 0. */
static double search_price_of(const struct search_spec *s, const char *hw)
{
	for (size_t i = 0; hw && i < s->nprices; i++)
		if (strcmp(s->prices[i].hw, hw) == 0)
			return s->prices[i].dollars_per_gpu_hour;
	return 0;
}

void search_config_free(struct search_config *c)
{
	for (size_t i = 0; i < c->nopts; i++)
		free(c->opts[i]);
	memset(c, 0, sizeof *c);
}

/* "--NAME=" and len bytes of value, a new string; NULL: out of memory. */
static char *search_opt_new(const char *name, const char *value, size_t len)
{
	size_t n = strlen(name) + len + 4;
	char *opt = malloc(n);
	if (opt)
		snprintf(opt, n, "--%s=%.*s", name, (int)len, value);
	return opt;
}

static int search_cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Leaves out of c the options that start with prefix. */
static void search_drop_opt(struct search_config *c, const char *prefix)
{
	for (size_t k = 0; k < c->nopts;)
		if (strncmp(c->opts[k], prefix, strlen(prefix)) == 0) {
			free(c->opts[k]);
			c->opts[k] = c->opts[--c->nopts];
		} else {
			k++;
		}
}

/* A router that reads no replica state (round-robin, the default) refuses --router-refresh: a fixed
 * refresh given for the search's routers is left out of such a configuration. */
static void search_drop_blind_refresh(struct search_config *c)
{
	const char *router = NULL;
	for (size_t k = 0; k < c->nopts; k++)
		if (strncmp(c->opts[k], "--router=", 9) == 0)
			router = c->opts[k] + 9;
	if (!router) {
		size_t ndefs;
		const struct opt_def *defs = cmd_run_options(&ndefs);
		router = opt_find(defs, ndefs, "router")->defval;
	}
	const struct router_ops *r = router_find(router);
	if (r && r->blind)
		search_drop_opt(c, "--router-refresh=");
}

int search_config_make(const struct search_spec *s, size_t i, struct search_config *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof *c);
	c->tp = c->replicas = 1;
	for (size_t k = 0; k < s->nfixed; k++)
		if (!(c->opts[c->nopts++] = strdup(s->fixed[k])))
			goto oom;
	size_t rest = i;
	for (size_t a = s->naxes; a-- > 0;) {     /* the first axis outermost: the last varies fastest */
		const struct search_axis *ax = &s->axes[a];
		const char *v = ax->values[rest % ax->nvalues];
		rest /= ax->nvalues;
		const char *plus = strcmp(ax->name, "replicas") == 0 ? strchr(v, '+') : NULL;
		/* each option whole, however long its value (a path): a cut one would be another configuration */
		char *opt;
		if (plus) {
			if (!(c->opts[c->nopts++] = search_opt_new("prefill-replicas", v, (size_t)(plus - v))))
				goto oom;
			opt = search_opt_new("decode-replicas", plus + 1, strlen(plus + 1));
		} else {
			opt = search_opt_new(ax->name, v, strlen(v));
		}
		if (!(c->opts[c->nopts++] = opt))
			goto oom;
	}
	/* what it costs: its GPU kind's price x replicas x GPUs each */
	const char *hw = NULL;
	for (size_t k = 0; k < c->nopts; k++) {
		const char *o = c->opts[k];
		uint64_t v;
		if (strncmp(o, "--hw=", 5) == 0)
			hw = o + 5;
		else if (strncmp(o, "--tp=", 5) == 0 && txt_parse_uint(o + 5, 8, &v) == 0)
			c->tp = (uint32_t)v;
		else if ((strncmp(o, "--replicas=", 11) == 0 && txt_parse_uint(o + 11, 4096, &v) == 0) ||
		         (strncmp(o, "--workers=", 10) == 0 && txt_parse_uint(o + 10, 4096, &v) == 0))
			c->replicas = (uint32_t)v;
	}
	if (!hw)
		hw = s->default_hw;
	for (size_t k = 0; k < s->nprices; k++)
		if (strcmp(s->prices[k].hw, hw) == 0)
			c->hw = s->prices[k].hw;
	c->cost_per_hour = search_price_of(s, hw) * c->replicas * c->tp;
	/* prefill and decode pools: each its count, on its own hardware (P:HW) or the configuration's */
	const char *pool[2] = { NULL, NULL };
	for (size_t k = 0; k < c->nopts; k++) {
		if (strncmp(c->opts[k], "--prefill-replicas=", 19) == 0)
			pool[0] = c->opts[k] + 19;
		if (strncmp(c->opts[k], "--decode-replicas=", 18) == 0)
			pool[1] = c->opts[k] + 18;
	}
	if (pool[0] && pool[1]) {
		c->replicas = 0;
		c->cost_per_hour = 0;
		for (int k = 0; k < 2; k++) {
			char count[32];
			uint64_t n = 0;
			snprintf(count, sizeof count, "%.*s", (int)strcspn(pool[k], ":"), pool[k]);
			txt_parse_uint(count, 4096, &n);
			const char *colon = strchr(pool[k], ':');
			c->replicas += (uint32_t)n;
			c->cost_per_hour += search_price_of(s, colon ? colon + 1 : hw) * (double)n * c->tp;
		}
	}
	/* one replica has no router to choose among replicas: a router given for the fleets of the search
	 * (fixed, or an axis) is left out of it, as a run without a fleet refuses one */
	if (c->replicas == 1 && !pool[0]) {
		search_drop_opt(c, "--router=");
		search_drop_opt(c, "--router-refresh=");
	}
	search_drop_blind_refresh(c);
	/* the key: its options sorted */
	char *sorted[SEARCH_MAX_OPTS];
	memcpy(sorted, c->opts, c->nopts * sizeof *sorted);
	qsort(sorted, c->nopts, sizeof *sorted, search_cmp_str);
	size_t used = 0;
	for (size_t k = 0; k < c->nopts; k++) {
		int w = snprintf(c->key + used, sizeof c->key - used, "%s%s", k ? " " : "", sorted[k] + 2);
		if (w < 0 || (size_t)w >= sizeof c->key - used) {
			search_config_free(c);
			snprintf(err, errlen, "%s: configuration %zu's options are longer than %zu characters", s->path, i,
			         sizeof c->key - 1);
			return -1;
		}
		used += (size_t)w;
	}
	return 0;
oom:
	search_config_free(c);
	return err_memory(err, errlen, "out of memory");
}

int search_config_value(const struct search_config *c, const char *name, const char **value)
{
	size_t n = strlen(name);
	for (size_t k = 0; k < c->nopts; k++)
		if (strncmp(c->opts[k] + 2, name, n) == 0 && c->opts[k][2 + n] == '=') {
			*value = c->opts[k] + 3 + n;
			return 1;
		}
	return 0;
}

/* 1 when c's model fits its hardware at its --tp (cached by model, hardware and tp), else 0 with why. */
int search_fits(const struct search_config *c, struct search_fit **cache, size_t *ncache, char *why,
                       size_t whylen)
{
	const char *model = "transformer";
	search_config_value(c, "model", &model);
	char key[300];
	int cut = snprintf(key, sizeof key, "%s|%s|%u", model, c->hw, c->tp) >= (int)sizeof key;
	for (size_t i = 0; !cut && i < *ncache; i++)      /* a key cut short could name another: not cached */
		if (strcmp((*cache)[i].key, key) == 0) {
			snprintf(why, whylen, "%s", (*cache)[i].reason);
			return (*cache)[i].ok;
		}
	struct search_fit f = { .ok = 1 };
	snprintf(f.key, sizeof f.key, "%s", key);
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	if (mdl_load(model, &m, f.reason, sizeof f.reason) != 0 ||
	    hw_open_tp(c->hw, m, c->tp, &hw, f.reason, sizeof f.reason) != 0)
		f.ok = 0;
	hw_close(hw);
	mdl_free(m);
	struct search_fit *grown = cut ? NULL : realloc(*cache, (*ncache + 1) * sizeof *grown);
	if (grown) {
		*cache = grown;
		grown[(*ncache)++] = f;
	}
	snprintf(why, whylen, "%s", f.reason);
	return f.ok;
}
