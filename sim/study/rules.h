/* sim/study/rules.h: every cross-option rule of a run in one table, checked
 * in one pass (rules.c). A rule is one refusal: options that contradict each
 * other, or that this model or workload would silently ignore (a run does
 * what its options say). Each refusal is one line naming the options and the
 * fix; the layer never prints or exits, so the command prints it (exit 2).
 *
 * tests/test_study_rules.c walks the table: every rule triggered, its line
 * checked. */
#ifndef SB_STUDY_RULES_H
#define SB_STUDY_RULES_H

#include <stddef.h>

struct opt_set;
struct mdl_model;

/* What the rules read: a run's options (run's table, sim/cli/run_options.c),
 * its model, and whether it replays a trace. */
struct study_facts {
	const struct opt_set *o;
	const struct mdl_model *m;
	int has_trace;
};

enum study_scope {
	STUDY_RUN,        /* every rule: run and live */
	STUDY_SHARED,     /* the rules capacity applies to the runs it makes (the options a run would ignore) */
};

struct study_rule {
	const char *name;            /* for the test and the table's readers */
	int shared;                  /* capacity applies it too (STUDY_SHARED) */
	/* 1 with the one line in err when f breaks the rule, else 0 */
	int (*broken)(const struct study_facts *f, char *err, size_t errlen);
};

/* The table, in the order the rules are checked; *n gets its length. */
const struct study_rule *study_rules(size_t *n);

/* Checks f against every rule of the scope, in order: -1 with the first
 * broken rule's line in err (and its index in *which, if not NULL), or 0. */
int study_check(const struct study_facts *f, enum study_scope scope, size_t *which, char *err, size_t errlen);

/* "unknown policy 'x' (known: a, b)" into err: the refusal of a policy no registry holds. */
void study_unknown_policy(const char *name, char *err, size_t errlen);

#endif
