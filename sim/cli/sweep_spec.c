/* sim/cli/sweep_spec.c: reads a sweep description (sim/SWEEP.md) and enumerates
 * its points. Every option is checked here, against the run subcommand's own
 * option table, so a typo is reported with its line before any run starts.
 * A point's options are built in sweep_point.c. */
#include "../../util/text.h"
#include "sweep_spec.h"
#include "../../util/lines.h"
#include "../../util/errkind.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWEEP_MAX_POINTS 10000000u   /* a grid beyond this is a mistake, not an experiment */
#define SWEEP_MAX_TOKENS 4096        /* per line */

/* Options the sweep sets for every point itself, or that make no sense once
 * per point (every point would overwrite the same output file). */
static const char *const sweep_forbidden[] = {
	"db", "no-db", "json", "quiet", "help", "seed", "sweep-point", "sweep-name", "sweep-variant", "dry-run",
	"requests-out", "timeline-out",
};

struct sp_ctx {
	const char *path;
	const struct opt_def *defs;
	size_t ndefs;
	struct sweep_spec *s;
	char *err;
	size_t errlen;
	int seeds_line;          /* line of the seeds directive, 0 = none yet */
	long variant_axis;       /* index of the variant axis in s->axes, -1 = none yet */
};

static int sp_fail(struct sp_ctx *c, unsigned line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lines_vfail(c->err, c->errlen, c->path, line, fmt, ap);
	va_end(ap);
	return -1;
}

static int sp_oom(struct sp_ctx *c, unsigned line)
{
	err_kind_mark(ERR_MEMORY);
	return sp_fail(c, line, "out of memory");
}

/* Grows *arr (of elements of size sz) to hold n + 1; 0 or -1. */
static int sp_grow(void **arr, size_t n, size_t sz)
{
	/* capacity: 4, then doubling; grow exactly when n reaches it */
	if (n != 0 && (n < 4 || (n & (n - 1)) != 0))
		return 0;
	size_t cap = n ? 2 * n : 4;
	void *p = realloc(*arr, cap * sz);
	if (!p)
		return -1;
	*arr = p;
	return 0;
}

static void sp_opt_free(struct sweep_opt *o)
{
	free(o->name);
	free(o->value);
}

static void sp_group_free(struct sweep_group *g)
{
	for (size_t i = 0; i < g->nopts; i++)
		sp_opt_free(&g->opts[i]);
	free(g->opts);
	free(g->label);
}

void sweep_spec_free(struct sweep_spec *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nfixed; i++)
		sp_opt_free(&s->fixed[i]);
	free(s->fixed);
	for (size_t a = 0; a < s->naxes; a++) {
		for (size_t v = 0; v < s->axes[a].nvalues; v++)
			sp_group_free(&s->axes[a].values[v]);
		free(s->axes[a].values);
		free(s->axes[a].name);
	}
	free(s->axes);
	free(s->seeds);
	free(s->path);
	free(s);
}

/* Checks one "--name=value" token with the run option table and fills *o
 * with its canonical name (getopt accepts unambiguous abbreviations). */
static int sp_parse_opt(struct sp_ctx *c, unsigned line, const char *tok, struct sweep_opt *o)
{
	char e[384];
	struct opt_set set;
	char *argv[] = { "sweep", (char *)tok, NULL };
	memset(o, 0, sizeof *o);
	if (strncmp(tok, "--", 2) != 0 || tok[2] == '\0' || tok[2] == '=')
		return sp_fail(c, line, "'%s': expected a run option --name=value", tok);
	if (opt_parse(&set, c->defs, c->ndefs, 2, argv, 0, e, sizeof e) != 0)
		return sp_fail(c, line, "%s", e);
	size_t i = 0;
	while (i < c->ndefs && !set.given[i])
		i++;
	if (i == c->ndefs)
		return sp_fail(c, line, "'%s': expected a run option --name=value", tok);
	const struct opt_def *d = &c->defs[i];
	for (size_t f = 0; f < sizeof sweep_forbidden / sizeof sweep_forbidden[0]; f++)
		if (strcmp(d->name, sweep_forbidden[f]) == 0)
			return sp_fail(c, line, "--%s cannot be set in a sweep file%s", d->name,
			               strcmp(d->name, "seed") == 0 ? " (use a 'seeds' line)"
			               : strcmp(d->name, "db") == 0 ? " (give --db to simbatch sweep)" : "");
	o->line = line;
	if (!(o->name = strdup(d->name)))
		return sp_oom(c, line);
	if (d->type != OPT_FLAG && !(o->value = strdup(set.values[i]))) {
		free(o->name);
		o->name = NULL;
		return sp_oom(c, line);
	}
	return 0;
}

/* Appends options tok[0..n) to *opts, refusing an option set twice there. */
static int sp_add_opts(struct sp_ctx *c, unsigned line, char **tok, size_t n,
                       struct sweep_opt **opts, size_t *nopts)
{
	for (size_t t = 0; t < n; t++) {
		struct sweep_opt o;
		if (sp_parse_opt(c, line, tok[t], &o) != 0)
			return -1;
		for (size_t k = 0; k < *nopts; k++)
			if (strcmp((*opts)[k].name, o.name) == 0) {
				unsigned other = (*opts)[k].line;
				sp_opt_free(&o);
				return other == line ? sp_fail(c, line, "--%s given twice", (*opts)[k].name)
				                     : sp_fail(c, line, "--%s is already set on line %u", (*opts)[k].name, other);
			}
		if (sp_grow((void **)opts, *nopts, sizeof **opts) != 0) {
			sp_opt_free(&o);
			return sp_oom(c, line);
		}
		(*opts)[(*nopts)++] = o;
	}
	return 0;
}

static int sp_add_axis(struct sp_ctx *c, unsigned line, const char *name)
{
	struct sweep_spec *s = c->s;
	if (sp_grow((void **)&s->axes, s->naxes, sizeof *s->axes) != 0)
		return sp_oom(c, line);
	struct sweep_axis *a = &s->axes[s->naxes];
	memset(a, 0, sizeof *a);
	a->line = line;
	if (!(a->name = strdup(name)))
		return sp_oom(c, line);
	s->naxes++;
	return 0;
}

/* Appends a value (group) to axis a with the given label; the caller fills
 * its options. */
static struct sweep_group *sp_add_group(struct sp_ctx *c, unsigned line, struct sweep_axis *a, const char *label)
{
	for (size_t v = 0; v < a->nvalues; v++)
		if (strcmp(a->values[v].label, label) == 0) {
			sp_fail(c, line, "%s '%s' is already listed on line %u",
			        strcmp(a->name, "variant") == 0 ? "variant" : "value", label, a->values[v].line);
			return NULL;
		}
	if (sp_grow((void **)&a->values, a->nvalues, sizeof *a->values) != 0) {
		sp_oom(c, line);
		return NULL;
	}
	struct sweep_group *g = &a->values[a->nvalues];
	memset(g, 0, sizeof *g);
	g->line = line;
	if (!(g->label = strdup(label))) {
		sp_oom(c, line);
		return NULL;
	}
	a->nvalues++;
	return g;
}

/* axis NAME = V1 V2 ... */
static int sp_axis(struct sp_ctx *c, unsigned line, char **tok, size_t n)
{
	if (n < 4 || strcmp(tok[2], "=") != 0)
		return sp_fail(c, line, "expected 'axis NAME = VALUE...'");
	char *name = tok[1];
	if (strncmp(name, "--", 2) == 0)
		name += 2;
	if (strcmp(name, "variant") == 0)
		return sp_fail(c, line, "'variant' is the axis of the variant lines; name the option the axis sets");
	/* the first value names the canonical option (and checks it exists) */
	size_t need = strlen(name) + strlen(tok[3]) + 4;
	char *first = malloc(need);
	if (!first)
		return sp_oom(c, line);
	snprintf(first, need, "--%s=%s", name, tok[3]);
	struct sweep_opt probe;
	int rc = sp_parse_opt(c, line, first, &probe);
	free(first);
	if (rc != 0)
		return -1;
	for (size_t a = 0; a < c->s->naxes; a++)
		if (strcmp(c->s->axes[a].name, probe.name) == 0) {
			sp_fail(c, line, "axis %s is already defined on line %u", probe.name, c->s->axes[a].line);
			sp_opt_free(&probe);
			return -1;
		}
	rc = sp_add_axis(c, line, probe.name);
	sp_opt_free(&probe);
	if (rc != 0)
		return -1;
	struct sweep_axis *a = &c->s->axes[c->s->naxes - 1];
	for (size_t t = 3; t < n; t++) {
		struct sweep_group *g = sp_add_group(c, line, a, tok[t]);
		if (!g)
			return -1;
		need = strlen(a->name) + strlen(tok[t]) + 4;
		char *arg = malloc(need);
		if (!arg)
			return sp_oom(c, line);
		snprintf(arg, need, "--%s=%s", a->name, tok[t]);
		rc = sp_add_opts(c, line, &arg, 1, &g->opts, &g->nopts);
		free(arg);
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int sp_valid_label(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '-' || *s == '.' || *s == '+'))
			return 0;
	return 1;
}

/* variant NAME = OPT... */
static int sp_variant(struct sp_ctx *c, unsigned line, char **tok, size_t n)
{
	if (n < 3 || strcmp(tok[2], "=") != 0)
		return sp_fail(c, line, "expected 'variant NAME = --option=value...'");
	if (!sp_valid_label(tok[1]))
		return sp_fail(c, line, "variant name '%s': use letters, digits and _ - . +", tok[1]);
	if (c->variant_axis < 0) {
		if (sp_add_axis(c, line, "variant") != 0)
			return -1;
		c->variant_axis = (long)c->s->naxes - 1;
	}
	struct sweep_axis *a = &c->s->axes[c->variant_axis];
	struct sweep_group *g = sp_add_group(c, line, a, tok[1]);
	if (!g)
		return -1;
	return sp_add_opts(c, line, tok + 3, n - 3, &g->opts, &g->nopts);
}

static int sp_u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* seeds A..B | S ... (mixed) */
static int sp_seeds(struct sp_ctx *c, unsigned line, char **tok, size_t n)
{
	struct sweep_spec *s = c->s;
	if (c->seeds_line)
		return sp_fail(c, line, "seeds are already given on line %d", c->seeds_line);
	if (n < 2)
		return sp_fail(c, line, "expected 'seeds FIRST..LAST' or 'seeds S1 S2 ...'");
	c->seeds_line = (int)line;
	for (size_t t = 1; t < n; t++) {
		uint64_t lo, hi;
		char *dots = strstr(tok[t], "..");
		if (dots) {
			*dots = '\0';
			int bad = txt_parse_uint(tok[t], UINT64_MAX, &lo) != 0 || txt_parse_uint(dots + 2, UINT64_MAX, &hi) != 0;
			*dots = '.';
			if (bad || hi < lo)
				return sp_fail(c, line, "seed range '%s': expected FIRST..LAST with FIRST <= LAST", tok[t]);
		} else if (txt_parse_uint(tok[t], UINT64_MAX, &lo) != 0) {
			return sp_fail(c, line, "seed '%s': expected a non-negative integer", tok[t]);
		} else {
			hi = lo;
		}
		if (hi - lo >= SWEEP_MAX_POINTS || s->nseeds + (hi - lo) >= SWEEP_MAX_POINTS)
			return sp_fail(c, line, "too many seeds (at most %u)", SWEEP_MAX_POINTS);
		for (uint64_t v = lo;; v++) {
			if (sp_grow((void **)&s->seeds, s->nseeds, sizeof *s->seeds) != 0)
				return sp_oom(c, line);
			s->seeds[s->nseeds++] = v;
			if (v == hi)
				break;
		}
	}
	/* duplicates, found on a sorted copy: a seed list can be long */
	uint64_t *sorted = malloc(s->nseeds * sizeof *sorted);
	if (!sorted)
		return sp_oom(c, line);
	memcpy(sorted, s->seeds, s->nseeds * sizeof *sorted);
	qsort(sorted, s->nseeds, sizeof *sorted, sp_u64_cmp);
	for (size_t k = 1; k < s->nseeds; k++)
		if (sorted[k] == sorted[k - 1]) {
			unsigned long long dup = sorted[k];
			free(sorted);
			return sp_fail(c, line, "seed %llu is listed twice", dup);
		}
	free(sorted);
	return 0;
}

/* The same option from two sources of one point (fixed + an axis value, or
 * values of two different axes) is ambiguous: refused, naming both lines. */
static int sp_check_conflicts(struct sp_ctx *c)
{
	struct sweep_spec *s = c->s;
	for (size_t a = 0; a < s->naxes; a++)
		for (size_t v = 0; v < s->axes[a].nvalues; v++) {
			const struct sweep_group *g = &s->axes[a].values[v];
			for (size_t k = 0; k < g->nopts; k++) {
				const struct sweep_opt *o = &g->opts[k];
				for (size_t f = 0; f < s->nfixed; f++)
					if (strcmp(s->fixed[f].name, o->name) == 0) {
						unsigned l1 = o->line, l2 = s->fixed[f].line;
						return sp_fail(c, l1 > l2 ? l1 : l2, "--%s is also set on line %u", o->name,
						               l1 > l2 ? l2 : l1);
					}
				for (size_t b = a + 1; b < s->naxes; b++)
					for (size_t w = 0; w < s->axes[b].nvalues; w++)
						for (size_t j = 0; j < s->axes[b].values[w].nopts; j++)
							if (strcmp(s->axes[b].values[w].opts[j].name, o->name) == 0) {
								unsigned l1 = o->line, l2 = s->axes[b].values[w].opts[j].line;
								return sp_fail(c, l1 > l2 ? l1 : l2, "--%s is also set on line %u",
								               o->name, l1 > l2 ? l2 : l1);
							}
			}
		}
	return 0;
}

/* Splits line in place at blanks, dropping a # comment; returns the count,
 * or SIZE_MAX when there are too many tokens. */
static size_t sp_tokenize(char *line, char **tok, size_t max)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	size_t n = 0;
	for (char *save = NULL, *t = strtok_r(line, " \t\r\n\v\f", &save); t;
	     t = strtok_r(NULL, " \t\r\n\v\f", &save)) {
		if (n == max)
			return (size_t)-1;
		tok[n++] = t;
	}
	return n;
}

int sweep_spec_load(const char *path, const struct opt_def *defs, size_t ndefs,
                    struct sweep_spec **out, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len;
	char **tok = NULL;
	struct lines_reader rd = { 0 };
	unsigned line = 0;
	int any = 0, got;
	struct sp_ctx c = { .path = path, .defs = defs, .ndefs = ndefs, .err = err, .errlen = errlen,
	                    .variant_axis = -1 };
	*out = NULL;
	if (!(c.s = calloc(1, sizeof *c.s)) || !(c.s->path = strdup(path)) ||
	    !(tok = malloc(SWEEP_MAX_TOKENS * sizeof *tok))) {
		sp_oom(&c, 0);
		goto fail;
	}
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &buf, &len, err, errlen)) > 0) {
		line = (unsigned)rd.lineno;
		size_t n = sp_tokenize(buf, tok, SWEEP_MAX_TOKENS);
		if (n == (size_t)-1) {
			sp_fail(&c, line, "more than %d words on one line", SWEEP_MAX_TOKENS);
			goto fail;
		}
		if (n == 0)
			continue;
		any = 1;
		int rc;
		if (strcmp(tok[0], "fixed") == 0) {
			if (n < 2) {
				sp_fail(&c, line, "expected 'fixed --option=value...'");
				goto fail;
			}
			rc = sp_add_opts(&c, line, tok + 1, n - 1, &c.s->fixed, &c.s->nfixed);
		} else if (strcmp(tok[0], "axis") == 0) {
			rc = sp_axis(&c, line, tok, n);
		} else if (strcmp(tok[0], "variant") == 0) {
			rc = sp_variant(&c, line, tok, n);
		} else if (strcmp(tok[0], "seeds") == 0) {
			rc = sp_seeds(&c, line, tok, n);
		} else {
			rc = sp_fail(&c, line, "unknown directive '%s' (expected fixed, axis, variant or seeds)", tok[0]);
		}
		if (rc != 0)
			goto fail;
	}
	if (got < 0)
		goto fail;
	if (!any) {
		sp_fail(&c, 0, "empty sweep (no fixed, axis, variant or seeds line)");
		goto fail;
	}
	if (sp_check_conflicts(&c) != 0)
		goto fail;
	if (c.s->nseeds == 0) {
		if (!(c.s->seeds = malloc(sizeof *c.s->seeds))) {
			sp_oom(&c, 0);
			goto fail;
		}
		c.s->seeds[0] = 1;
		c.s->nseeds = 1;
	}
	c.s->nconfigs = 1;
	for (size_t a = 0; a < c.s->naxes; a++) {
		if (c.s->axes[a].nvalues > SWEEP_MAX_POINTS / c.s->nconfigs) {
			sp_fail(&c, c.s->axes[a].line, "the grid has more than %u configurations", SWEEP_MAX_POINTS);
			goto fail;
		}
		c.s->nconfigs *= c.s->axes[a].nvalues;
	}
	if (c.s->nseeds > SWEEP_MAX_POINTS / c.s->nconfigs) {
		sp_fail(&c, (unsigned)c.seeds_line, "the sweep has more than %u points", SWEEP_MAX_POINTS);
		goto fail;
	}
	c.s->npoints = c.s->nconfigs * c.s->nseeds;
	lines_close(&rd);
	free(tok);
	*out = c.s;
	return 0;
fail:
	lines_close(&rd);
	free(tok);
	sweep_spec_free(c.s);
	return -1;
}
