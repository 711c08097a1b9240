/* util/options.h: command-line parameters as one table per subcommand: every
 * parameter has a name, type, default, bounds and help text, is checked on
 * input, and can be listed back (for --help and for the results database, so
 * every stored result says how it was made).
 *
 * Contract:
 *  - opt_parse accepts only --key=value (and bare --flag for flags); anything
 *    else, an unknown key, a repeated key, or a value outside its type or
 *    bounds, returns -1 with one line in err naming the option.
 *  - After a successful parse every parameter has a value (given or default,
 *    NULL for parameters with no default that were not given).
 */
#ifndef SB_OPTIONS_H
#define SB_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum opt_type { OPT_STR, OPT_UINT, OPT_DOUBLE, OPT_FLAG, OPT_LIST };   /* OPT_LIST: a text that may be given again */

struct opt_def {
	const char *name;       /* without the leading "--" */
	enum opt_type type;
	const char *defval;     /* default as text; NULL = none */
	double min, max;        /* bounds for numbers (inclusive unless min_open) */
	int min_open;           /* 1: value must be > min */
	const char *help;
};

#define OPT_MAX 96
#define OPT_LIST_MAX 32   /* values of OPT_LIST options, all together */

struct opt_set {
	const struct opt_def *defs;     /* not owned */
	size_t ndefs;
	const char *values[OPT_MAX];    /* given or default; not owned (argv or defval) */
	int given[OPT_MAX];
	const char *positional[8];      /* non-option words, in order */
	size_t npositional;
	const char *list[OPT_LIST_MAX]; /* OPT_LIST values, in order given; not owned */
	uint8_t list_of[OPT_LIST_MAX];  /* the index in defs each belongs to */
	size_t nlist;
};

int opt_parse(struct opt_set *s, const struct opt_def *defs, size_t ndefs,
              int argc, char **argv, size_t max_positional, char *err, size_t errlen);
const char *opt_str(const struct opt_set *s, const char *name);
/* An OPT_STR option that takes one of two words: 0 (first), 1 (second), or -1 with err naming both. */
int opt_either(const struct opt_set *s, const char *name, const char *first, const char *second, char *err,
               size_t errlen);
uint64_t opt_uint(const struct opt_set *s, const char *name);
double opt_double(const struct opt_set *s, const char *name);
int opt_flag(const struct opt_set *s, const char *name);
int opt_given(const struct opt_set *s, const char *name);
/* An OPT_LIST option's values: how many were given, and the i-th (an
 * option given once is one; its value is also opt_str's, the last given). */
size_t opt_list_count(const struct opt_set *s, const char *name);
const char *opt_list_at(const struct opt_set *s, const char *name, size_t i);
/* A default that depends on another option (the policy on the model's kind):
 * value (not copied) replaces the parameter's default when it was not given. */
void opt_set_default(struct opt_set *s, const char *name, const char *value);
void opt_print_help(FILE *f, const char *usage, const struct opt_def *defs, size_t ndefs);
/* A set over defs holding every default and nothing given: what a table of
 * parameters means before any is set (a policy's own, say). */
void opt_defaults(struct opt_set *s, const struct opt_def *defs, size_t ndefs);
/* Sets name to value (not copied) as if given, checked like a parsed value:
 * 0, or -1 with one line in err (an unknown name, a value out of bounds). */
int opt_put(struct opt_set *s, const char *name, const char *value, char *err, size_t errlen);
/* The definition of name in defs, or NULL. */
const struct opt_def *opt_find(const struct opt_def *defs, size_t ndefs, const char *name);

/* The knobs of several plug-ins (the policies', the routers') as one table:
 * one name is one option on the command line and one key in the results
 * database, so plug-ins that share a knob declare it alike (same type,
 * bounds and default). Each knob's help ends in the names of the plug-ins
 * that take it, "[a, b]", once opt_union_close has run. */
struct opt_union {
	struct opt_def defs[OPT_MAX];
	char help[OPT_MAX][320];
	size_t n;
};
/* Adds owner's knob d: 0, or -1 when the table is full or d is unlike the
 * knob of its name already there (a mistake in a plug-in's table). */
int opt_union_add(struct opt_union *u, const char *owner, const struct opt_def *d);
void opt_union_close(struct opt_union *u);

#ifdef __cplusplus
}
#endif

#endif
