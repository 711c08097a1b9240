/* tests/policy_knobs.h: a policy's knobs for a test (policy.h pol_env.params):
 * every default of its table, then the ones a test sets, checked against the
 * table's bounds like a command line's. */
#ifndef SB_TEST_POLICY_KNOBS_H
#define SB_TEST_POLICY_KNOBS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../policies/policy.h"

struct test_knobs {
	struct opt_set set;
	char text[OPT_MAX][64];      /* the values set (an opt_set keeps pointers) */
};

/* k's set at policy p's defaults; returns it, for pol_env.params. */
static inline const struct opt_set *test_knobs(struct test_knobs *k, const struct pol_ops *p)
{
	opt_defaults(&k->set, p->params, p->nparams);
	return &k->set;
}

/* Sets knob name to the formatted value; a knob the policy does not take is
 * left alone when only_if_taken (a test looping over policies), and fails the
 * test otherwise, as does a value outside the knob's bounds. */
static inline void test_knob_v(struct test_knobs *k, int only_if_taken, const char *name, const char *fmt, va_list ap)
{
	size_t i = 0;
	while (i < k->set.ndefs && strcmp(k->set.defs[i].name, name) != 0)
		i++;
	if (i == k->set.ndefs && only_if_taken)
		return;
	char err[256] = "";
	vsnprintf(k->text[i < OPT_MAX ? i : 0], sizeof k->text[0], fmt, ap);
	if (i == k->set.ndefs || opt_put(&k->set, name, k->text[i], err, sizeof err) != 0) {
		fprintf(stderr, "test_knob --%s: %s\n", name, *err ? err : "not a knob of this policy");
		abort();
	}
}

static inline void test_knob(struct test_knobs *k, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	test_knob_v(k, 0, name, fmt, ap);
	va_end(ap);
}

static inline void test_knob_if_taken(struct test_knobs *k, const char *name, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	test_knob_v(k, 1, name, fmt, ap);
	va_end(ap);
}

#endif
