/* util/options.c: parses --key=value arguments against a parameter table
 * (see options.h). getopt_long does the scanning; the table does the rest. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "options.h"
#include "text.h"

_Static_assert(OPT_MAX <= 256, "opt_set.list_of holds an index");

static int opt_index(const struct opt_set *s, const char *name)
{
	for (size_t i = 0; s && i < s->ndefs; i++)
		if (strcmp(s->defs[i].name, name) == 0)
			return (int)i;
	return -1;
}

static int opt_check(const struct opt_def *d, const char *v, char *err, size_t errlen)
{
	double x = 0;
	uint64_t u;
	switch (d->type) {
	case OPT_STR:
	case OPT_LIST:
		if (!*v) {
			snprintf(err, errlen, "--%s needs a value", d->name);
			return -1;
		}
		return 0;
	case OPT_FLAG:
		return 0;
	case OPT_UINT:
		if (txt_parse_uint(v, UINT64_MAX, &u) != 0) {
			snprintf(err, errlen, "--%s=%s: expected a non-negative integer", d->name, v);
			return -1;
		}
		x = (double)u;
		break;
	case OPT_DOUBLE:
		if (txt_parse_double(v, &x) != 0) {
			snprintf(err, errlen, "--%s=%s: expected a number", d->name, v);
			return -1;
		}
		break;
	}
	if ((d->min_open ? x <= d->min : x < d->min) || x > d->max) {
		snprintf(err, errlen, "--%s=%s: must be %s %g and <= %g", d->name, v,
		         d->min_open ? ">" : ">=", d->min, d->max);
		return -1;
	}
	return 0;
}

/* getopt_long_only also takes -key, unambiguous prefixes (--po=serial) and
 * "--key value"; the contract is --key=value with the whole name, so that a
 * command line reads the same in a year and in the results database. */
static int opt_exact_form(char **argv, int optind_after, const struct opt_def *d, char *err, size_t errlen)
{
	const char *tok = argv[optind_after - 1];
	if (d->type != OPT_FLAG && optarg == tok) {
		snprintf(err, errlen, "%s: write --%s=VALUE in one argument", argv[optind_after - 2], d->name);
		return -1;
	}
	if (!txt_long_option_whole(tok, d->name)) {
		snprintf(err, errlen, "unknown option '%.*s' (did you mean --%s? see --help)", (int)strcspn(tok, "="), tok,
		         d->name);
		return -1;
	}
	return 0;
}

int opt_parse(struct opt_set *s, const struct opt_def *defs, size_t ndefs,
              int argc, char **argv, size_t max_positional, char *err, size_t errlen)
{
	struct option longopts[OPT_MAX + 1];
	memset(s, 0, sizeof *s);
	if (ndefs > OPT_MAX) {
		snprintf(err, errlen, "internal: too many options");
		return -1;
	}
	s->defs = defs;
	s->ndefs = ndefs;
	for (size_t i = 0; i < ndefs; i++) {
		longopts[i] = (struct option){ defs[i].name,
			defs[i].type == OPT_FLAG ? no_argument : required_argument, NULL, (int)(256 + i) };
		s->values[i] = defs[i].defval;
	}
	longopts[ndefs] = (struct option){ 0 };
	optind = 1;
	opterr = 0;
	for (;;) {
		int longindex = -1;
		int c = getopt_long_only(argc, argv, "", longopts, &longindex);
		if (c == -1)
			break;
		if (c == '?' || c == ':') {
			const char *arg = argv[optind - 1];
			if (optopt && c == ':')
				snprintf(err, errlen, "%s needs a value (--key=value)", arg);
			else if (optopt >= 256 && (size_t)(optopt - 256) < ndefs &&
			         defs[optopt - 256].type == OPT_FLAG)
				snprintf(err, errlen, "%s takes no value", arg);
			else if (optopt >= 256)
				snprintf(err, errlen, "%s needs a value (--key=value)", arg);
			else
				snprintf(err, errlen, "unknown option '%s' (see --help)", arg);
			return -1;
		}
		size_t i = (size_t)(c - 256);
		if (opt_exact_form(argv, optind, &defs[i], err, errlen) != 0)
			return -1;
		if (s->given[i] && defs[i].type != OPT_LIST) {
			snprintf(err, errlen, "--%s given twice", defs[i].name);
			return -1;
		}
		const char *v = defs[i].type == OPT_FLAG ? "1" : optarg;
		if (opt_check(&defs[i], v, err, errlen) != 0)
			return -1;
		if (defs[i].type == OPT_LIST) {
			if (s->nlist == OPT_LIST_MAX) {
				snprintf(err, errlen, "--%s: more than %d values of repeatable options", defs[i].name, OPT_LIST_MAX);
				return -1;
			}
			s->list[s->nlist] = v;
			s->list_of[s->nlist++] = (uint8_t)i;
		}
		s->values[i] = v;
		s->given[i] = 1;
	}
	for (int i = optind; i < argc; i++) {
		if (s->npositional >= max_positional || s->npositional >= 8) {
			snprintf(err, errlen, "unexpected argument '%s' (see --help)", argv[i]);
			return -1;
		}
		s->positional[s->npositional++] = argv[i];
	}
	return 0;
}

void opt_defaults(struct opt_set *s, const struct opt_def *defs, size_t ndefs)
{
	memset(s, 0, sizeof *s);
	s->defs = defs;
	s->ndefs = ndefs < OPT_MAX ? ndefs : OPT_MAX;
	for (size_t i = 0; i < s->ndefs; i++)
		s->values[i] = defs[i].defval;
}

int opt_put(struct opt_set *s, const char *name, const char *value, char *err, size_t errlen)
{
	int i = opt_index(s, name);
	if (i < 0) {
		snprintf(err, errlen, "unknown option '--%s'", name);
		return -1;
	}
	const char *v = s->defs[i].type == OPT_FLAG ? "1" : value;
	if (opt_check(&s->defs[i], v, err, errlen) != 0)
		return -1;
	s->values[i] = v;
	s->given[i] = 1;
	return 0;
}

const struct opt_def *opt_find(const struct opt_def *defs, size_t ndefs, const char *name)
{
	for (size_t i = 0; i < ndefs; i++)
		if (strcmp(defs[i].name, name) == 0)
			return &defs[i];
	return NULL;
}

void opt_set_default(struct opt_set *s, const char *name, const char *value)
{
	int i = opt_index(s, name);
	if (i >= 0 && !s->given[i])
		s->values[i] = value;
}

const char *opt_str(const struct opt_set *s, const char *name)
{
	int i = opt_index(s, name);
	return i < 0 ? NULL : s->values[i];
}

int opt_either(const struct opt_set *s, const char *name, const char *first, const char *second, char *err,
               size_t errlen)
{
	const char *v = opt_str(s, name);
	if (v && strcmp(v, first) == 0)
		return 0;
	if (v && strcmp(v, second) == 0)
		return 1;
	snprintf(err, errlen, "--%s must be %s or %s, got '%s'", name, first, second, v ? v : "");
	return -1;
}

uint64_t opt_uint(const struct opt_set *s, const char *name)
{
	uint64_t v = 0;
	const char *t = opt_str(s, name);
	if (t)
		txt_parse_uint(t, UINT64_MAX, &v);
	return v;
}

double opt_double(const struct opt_set *s, const char *name)
{
	double v = 0;
	const char *t = opt_str(s, name);
	if (t)
		txt_parse_double(t, &v);
	return v;
}

int opt_flag(const struct opt_set *s, const char *name)
{
	int i = opt_index(s, name);
	return i >= 0 && s->given[i];
}

int opt_given(const struct opt_set *s, const char *name)
{
	return opt_flag(s, name);
}

size_t opt_list_count(const struct opt_set *s, const char *name)
{
	int k = opt_index(s, name);
	size_t n = 0;
	for (size_t j = 0; k >= 0 && j < s->nlist; j++)
		n += s->list_of[j] == (uint8_t)k;
	return n;
}

const char *opt_list_at(const struct opt_set *s, const char *name, size_t i)
{
	int k = opt_index(s, name);
	for (size_t j = 0; k >= 0 && j < s->nlist; j++)
		if (s->list_of[j] == (uint8_t)k && i-- == 0)
			return s->list[j];
	return NULL;
}

void opt_print_help(FILE *f, const char *usage, const struct opt_def *defs, size_t ndefs)
{
	fprintf(f, "%s\n\noptions:\n", usage);
	for (size_t i = 0; i < ndefs; i++) {
		char left[64];
		snprintf(left, sizeof left, "--%s%s", defs[i].name, defs[i].type == OPT_FLAG ? "" : "=V");
		fprintf(f, "  %-22s %s%s", left, defs[i].help, defs[i].type == OPT_LIST ? " (repeatable)" : "");
		if (defs[i].defval)
			fprintf(f, " (default %s", defs[i].defval);
		/* the bounds opt_check enforces, so a reader knows them before trying */
		if (defs[i].type == OPT_UINT || defs[i].type == OPT_DOUBLE)
			fprintf(f, "%s%s%g..%g", defs[i].defval ? "; " : " (", defs[i].min_open ? ">" : "", defs[i].min,
			        defs[i].max);
		if (defs[i].defval || defs[i].type == OPT_UINT || defs[i].type == OPT_DOUBLE)
			fputc(')', f);
		fputc('\n', f);
	}
}

int opt_union_add(struct opt_union *u, const char *owner, const struct opt_def *d)
{
	size_t i = 0;
	while (i < u->n && strcmp(u->defs[i].name, d->name) != 0)
		i++;
	if (i == u->n) {
		if (i == OPT_MAX)
			return -1;
		u->defs[i] = *d;
		snprintf(u->help[i], sizeof u->help[i], "%s [%s", d->help, owner);
		u->defs[i].help = u->help[i];
		u->n++;
		return 0;
	}
	const struct opt_def *k = &u->defs[i];
	int same_default = (!k->defval && !d->defval) || (k->defval && d->defval && strcmp(k->defval, d->defval) == 0);
	if (k->type != d->type || k->min != d->min || k->max != d->max || k->min_open != d->min_open || !same_default)
		return -1;
	size_t len = strlen(u->help[i]);
	snprintf(u->help[i] + len, sizeof u->help[i] - len, ", %s", owner);
	return 0;
}

void opt_union_close(struct opt_union *u)
{
	for (size_t i = 0; i < u->n; i++) {
		size_t len = strlen(u->help[i]);
		snprintf(u->help[i] + len, sizeof u->help[i] - len, "]");
	}
}
