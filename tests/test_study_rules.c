/* tests/test_study_rules.c: walks the table of a run's cross-option rules
 * (sim/study/rules.h): every rule has a case here that breaks it alone, and
 * the check names that rule and gives its line, written out here from the
 * contract's wording; a run that breaks none passes, and capacity's scope
 * checks only the rules marked shared. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "models/model.h"
#include "sim/cli/cli.h"
#include "sim/study/rules.h"
#include "util/options.h"

enum kind { NODES, SEQ2SEQ, LLM };

struct rule_case {
	const char *rule;
	enum kind model;
	int has_trace;
	const char *argv[4];
	const char *line;
};

static const struct rule_case cases[] = {
	{ "requests-or-duration", NODES, 0, { "--requests=5", "--duration=1" }, "give --requests or --duration, not both" },
	{ "no-db-alone", NODES, 0, { "--no-db", "--db-requests" },
	  "give --db-requests or --no-db, not both: --no-db stores nothing" },
	{ "profile-one-device", NODES, 0, { "--hw=profile", "--tp=2" },
	  "--tp=2: the profile is this machine's one device; tensor parallelism needs a measured GPU" },
	{ "llm-only", NODES, 0, { "--kv-blocks=8" }, "--kv-blocks applies to an LLM; model m is node-level" },
	{ "lengths-with-trace", SEQ2SEQ, 1, { "--output-len=4" },
	  "--output-len does not apply to a trace, whose rows give each request's lengths (--trace-pairs too): give one "
	  "or the other" },
	{ "lengths-unused", NODES, 0, { "--input-len=4" },
	  "--input-len does not apply to model m, whose graph takes no input length" },
	{ "max-seqs-or-batch", LLM, 0, { "--max-seqs=4", "--max-batch=4" },
	  "give --max-seqs or --max-batch, not both: for an LLM they are one limit, the requests an iteration may run "
	  "(--max-seqs wins)" },
	{ "trace-sets-arrivals", LLM, 1, { "--arrival-cv=2" },
	  "--arrival-cv does not apply to a replayed trace, whose timestamps set the arrivals (--trace-speedup scales "
	  "them; --trace-pairs takes only its lengths, at --rate)" },
	{ "closed-loop-alone", LLM, 0, { "--concurrency=4", "--duration=2" },
	  "--concurrency sends a request when one is answered; it does not take --duration (the clients send --requests "
	  "requests)" },
	{ "think-time-closed-loop", LLM, 0, { "--think-time=5" }, "--think-time is closed-loop clients' (--concurrency)" },
	{ "trace-options-need-trace", LLM, 0, { "--trace-pairs" }, "--trace-pairs needs --trace" },
	{ "speedup-or-pairs", LLM, 1, { "--trace-pairs", "--trace-speedup=2" },
	  "--trace-speedup replays a trace's timestamps faster; --trace-pairs does not use them (set --rate instead)" },
	{ "trace-sets-duration", LLM, 1, { "--duration=3" },
	  "--duration does not apply to a trace (use --requests to replay a prefix)" },
	{ "engine-off-needs-engine", LLM, 0, { "--engine-off=launch" },
	  "--engine-off switches off terms of an --engine profile; give --engine=VERSION" },
	{ "engine-llm-only", NODES, 0, { "--engine=vllm-0.15" }, "--engine applies to an LLM; model m is node-level" },
	{ "scenario-known", NODES, 0, { "--scenario=interactive" },
	  "--scenario=interactive is MLPerf's for LLM models; model m is node-level (its scenarios: offline, server, "
	  "single-stream, multi-stream)" },
	{ "scenario-sets-arrivals", NODES, 0, { "--scenario=offline", "--rate=5" },
	  "--rate contradicts --scenario=offline, which sets the arrivals (and sends --requests): give one or the other" },
};
#define NCASES (sizeof cases / sizeof cases[0])

static struct mdl_model *model_of(enum kind k)
{
	struct mdl_model *m = calloc(1, sizeof *m);
	assert_non_null(m);
	snprintf(m->name, sizeof m->name, "m");
	m->is_llm = k == LLM;
	m->uses_input_len = m->uses_output_len = k == SEQ2SEQ;
	return m;
}

static void parse(struct opt_set *o, const char *const *words)
{
	char *argv[5] = { "run" };
	int argc = 1;
	for (size_t i = 0; i < 4 && words[i]; i++)
		argv[argc++] = (char *)words[i];
	size_t nopts;
	const struct opt_def *opts = cmd_run_options(&nopts);
	char err[256] = "";
	assert_int_equal(opt_parse(o, opts, nopts, argc, argv, 0, err, sizeof err), 0);
}

static const struct rule_case *case_of(const char *rule)
{
	for (size_t i = 0; i < NCASES; i++)
		if (strcmp(cases[i].rule, rule) == 0)
			return &cases[i];
	return NULL;
}

static void test_every_rule_is_triggered_with_its_line(void **state)
{
	(void)state;
	size_t n;
	const struct study_rule *rules = study_rules(&n);
	assert_int_equal(n, NCASES);           /* a case for each rule, and no case for a rule gone */
	for (size_t i = 0; i < n; i++) {
		const struct rule_case *c = case_of(rules[i].name);
		if (!c)
			fail_msg("rule %s has no case in tests/test_study_rules.c", rules[i].name);
		struct opt_set o;
		parse(&o, c->argv);
		struct mdl_model *m = model_of(c->model);
		struct study_facts f = { &o, m, c->has_trace };
		char err[512] = "";
		size_t which = n;
		assert_int_equal(study_check(&f, STUDY_RUN, &which, err, sizeof err), -1);
		assert_string_equal(rules[which].name, rules[i].name);
		assert_string_equal(err, c->line);
		/* capacity's scope: the rule is checked there only if it is marked shared */
		err[0] = '\0';
		int shared_rc = study_check(&f, STUDY_SHARED, NULL, err, sizeof err);
		assert_int_equal(shared_rc, rules[i].shared ? -1 : 0);
		if (rules[i].shared)
			assert_string_equal(err, c->line);
		free(m);
	}
}

static void test_a_run_breaking_no_rule_passes(void **state)
{
	(void)state;
	static const char *const clean[][4] = {
		{ "--requests=5", "--rate=10" },
		{ "--concurrency=4", "--think-time=5" },
		{ "--trace-pairs", "--rate=3", "--duration=2" },
		{ "--engine=vllm-0.15", "--engine-off=launch", "--max-seqs=8" },
	};
	static const int trace[] = { 0, 0, 1, 0 };
	for (size_t i = 0; i < sizeof clean / sizeof clean[0]; i++) {
		struct opt_set o;
		parse(&o, clean[i]);
		struct mdl_model *m = model_of(LLM);
		struct study_facts f = { &o, m, trace[i] };
		char err[512] = "";
		assert_int_equal(study_check(&f, STUDY_RUN, NULL, err, sizeof err), 0);
		assert_string_equal(err, "");
		free(m);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_rule_is_triggered_with_its_line),
		cmocka_unit_test(test_a_run_breaking_no_rule_passes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
