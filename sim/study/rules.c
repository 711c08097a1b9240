/* sim/study/rules.c: a run's cross-option rules, one table (rules.h). */
#include "rules.h"

#include <stdio.h>
#include <string.h>
#include "../../models/model.h"
#include "../../policies/policy.h"
#include "../../util/options.h"
#include "scenario.h"

#define G(name) opt_given(f->o, name)
#define FLAG(name) opt_flag(f->o, name)

static int requests_or_duration(const struct study_facts *f, char *err, size_t errlen)
{
	if (!G("requests") || !G("duration"))
		return 0;
	snprintf(err, errlen, "give --requests or --duration, not both");
	return 1;
}

static int no_db_alone(const struct study_facts *f, char *err, size_t errlen)
{
	if (!FLAG("no-db") || !(G("db") || FLAG("db-requests")))
		return 0;
	snprintf(err, errlen, "give --%s or --no-db, not both: --no-db stores nothing", G("db") ? "db=PATH"
	         : "db-requests");
	return 1;
}

static int profile_one_device(const struct study_facts *f, char *err, size_t errlen)
{
	if (strcmp(opt_str(f->o, "hw"), "profile") != 0 || opt_uint(f->o, "tp") == 1)
		return 0;
	snprintf(err, errlen, "--tp=%llu: the profile is this machine's one device; tensor parallelism needs a "
	         "measured GPU", (unsigned long long)opt_uint(f->o, "tp"));
	return 1;
}

static int llm_only(const struct study_facts *f, char *err, size_t errlen)
{
	static const char *const names[] = { "max-batched-tokens", "max-seqs", "block-size", "kv-blocks", "ttft-slo",
	                                     "tpot-slo", "over-context", "prefix-cache", "async-scheduling" };
	for (size_t i = 0; !f->m->is_llm && i < sizeof names / sizeof names[0]; i++)
		if (G(names[i])) {
			snprintf(err, errlen, "--%s applies to an LLM; model %s is node-level", names[i], f->m->name);
			return 1;
		}
	return 0;
}

static int lengths_with_trace(const struct study_facts *f, char *err, size_t errlen)
{
	const char *given = G("input-len") ? "input-len" : G("output-len") ? "output-len" : NULL;
	if (!f->has_trace || !given)
		return 0;
	snprintf(err, errlen, "--%s does not apply to a trace, whose rows give each request's lengths "
	         "(--trace-pairs too): give one or the other", given);
	return 1;
}

static int lengths_unused(const struct study_facts *f, char *err, size_t errlen)
{
	static const char *const lengths[2] = { "input-len", "output-len" };
	const int used[2] = { f->m->uses_input_len, f->m->uses_output_len };
	for (int k = 0; k < 2; k++)
		if (G(lengths[k]) && !used[k]) {
			snprintf(err, errlen, "--%s does not apply to model %s, whose graph takes no %s length", lengths[k],
			         f->m->name, k ? "output" : "input");
			return 1;
		}
	return 0;
}

static int max_seqs_or_batch(const struct study_facts *f, char *err, size_t errlen)
{
	if (!f->m->is_llm || !G("max-seqs") || !G("max-batch"))
		return 0;
	snprintf(err, errlen, "give --max-seqs or --max-batch, not both: for an LLM they are one limit, the "
	         "requests an iteration may run (--max-seqs wins)");
	return 1;
}

static int trace_sets_arrivals(const struct study_facts *f, char *err, size_t errlen)
{
	if (!f->has_trace || FLAG("trace-pairs") || !(G("rate") || G("arrival-cv")))
		return 0;
	snprintf(err, errlen, "--%s does not apply to a replayed trace, whose timestamps set the arrivals "
	         "(--trace-speedup scales them; --trace-pairs takes only its lengths, at --rate)",
	         G("rate") ? "rate" : "arrival-cv");
	return 1;
}

static int closed_loop_alone(const struct study_facts *f, char *err, size_t errlen)
{
	if (!G("concurrency"))
		return 0;
	const char *clash = G("rate") ? "--rate (open-loop arrivals)"
	                    : G("arrival-cv") ? "--arrival-cv (open-loop arrivals)"
	                    : G("duration") ? "--duration (the clients send --requests requests)"
	                    : f->has_trace && !FLAG("trace-pairs") ? "a trace's timestamps (--trace-pairs "
	                      "draws only its lengths)" : NULL;
	if (!clash)
		return 0;
	snprintf(err, errlen, "--concurrency sends a request when one is answered; it does not take %s", clash);
	return 1;
}

static int think_time_closed_loop(const struct study_facts *f, char *err, size_t errlen)
{
	if (G("concurrency") || !G("think-time"))
		return 0;
	snprintf(err, errlen, "--think-time is closed-loop clients' (--concurrency)");
	return 1;
}

static int trace_options_need_trace(const struct study_facts *f, char *err, size_t errlen)
{
	if (f->has_trace || !(G("trace-speedup") || FLAG("trace-pairs")))
		return 0;
	snprintf(err, errlen, "--%s needs --trace", G("trace-speedup") ? "trace-speedup" : "trace-pairs");
	return 1;
}

static int speedup_or_pairs(const struct study_facts *f, char *err, size_t errlen)
{
	if (!f->has_trace || !G("trace-speedup") || !FLAG("trace-pairs"))
		return 0;
	snprintf(err, errlen, "--trace-speedup replays a trace's timestamps faster; --trace-pairs does not use "
	         "them (set --rate instead)");
	return 1;
}

static int trace_sets_duration(const struct study_facts *f, char *err, size_t errlen)
{
	if (!f->has_trace || !G("duration") || FLAG("trace-pairs"))
		return 0;
	snprintf(err, errlen, "--duration does not apply to a trace (use --requests to replay a prefix)");
	return 1;
}

static int engine_off_needs_engine(const struct study_facts *f, char *err, size_t errlen)
{
	if (G("engine") || !G("engine-off"))
		return 0;
	snprintf(err, errlen, "--engine-off switches off terms of an --engine profile; give --engine=VERSION");
	return 1;
}

static int engine_llm_only(const struct study_facts *f, char *err, size_t errlen)
{
	if (!G("engine") || f->m->is_llm)
		return 0;
	snprintf(err, errlen, "--engine applies to an LLM; model %s is node-level", f->m->name);
	return 1;
}


/* --scenario (scenario.h): a name MLPerf defines, for this model's kind */
static int scenario_known(const struct study_facts *f, char *err, size_t errlen)
{
	const char *name = opt_str(f->o, "scenario");
	const struct study_scenario_def *d = study_scenario_find(name);
	if (!G("scenario"))
		return 0;
	if (!d) {
		char list[128];
		study_scenario_names(list, sizeof list);
		snprintf(err, errlen, "--scenario=%s: unknown (MLPerf's: %s)", name, list);
		return 1;
	}
	if (f->m->is_llm ? d->llm : d->node)
		return 0;
	snprintf(err, errlen, "--scenario=%s is MLPerf's for %s models; model %s is %s (its scenarios: %s)", name,
	         d->llm ? "LLM" : "node-level", f->m->name, f->m->is_llm ? "an LLM" : "node-level",
	         f->m->is_llm ? "offline, server, interactive" : "offline, server, single-stream, multi-stream");
	return 1;
}

/* A scenario sets the arrivals (and an LLM server's constraints): options that would set them too */
static int scenario_sets_arrivals(const struct study_facts *f, char *err, size_t errlen)
{
	const struct study_scenario_def *d = study_scenario_find(opt_str(f->o, "scenario"));
	if (!G("scenario") || !d)
		return 0;
	int open_loop = d->id == SCN_SERVER || d->id == SCN_INTERACTIVE;
	static const char *const closed[] = { "rate", "arrival-cv", "duration", "concurrency", "think-time" };
	static const char *const poisson[] = { "arrival-cv", "concurrency", "think-time", "ttft-slo", "tpot-slo" };
	_Static_assert(sizeof closed == sizeof poisson, "one count for both lists");
	const char *const *names = open_loop ? poisson : closed;
	for (size_t i = 0; i < sizeof closed / sizeof closed[0]; i++)
		if (G(names[i]) && (f->m->is_llm || strstr(names[i], "-slo") == NULL)) {
			snprintf(err, errlen, "--%s contradicts --scenario=%s, which sets %s: give one or the other", names[i],
			         d->name, !open_loop ? "the arrivals (and sends --requests)"
			         : strstr(names[i], "-slo") ? "MLPerf's TTFT and TPOT constraints" : "Poisson arrivals at --rate");
			return 1;
		}
	if (f->has_trace && !FLAG("trace-pairs")) {
		snprintf(err, errlen, "a trace's timestamps contradict --scenario=%s, which sets the arrivals (--trace-pairs "
		         "draws only its lengths)", d->name);
		return 1;
	}
	if (d->id == SCN_OFFLINE && G("requests") && opt_uint(f->o, "requests") > 1000000) {
		snprintf(err, errlen, "--scenario=offline holds every request at once: at most 1000000 (--requests=%llu)",
		         (unsigned long long)opt_uint(f->o, "requests"));
		return 1;
	}
	return 0;
}

static const struct study_rule rules[] = {
	{ "requests-or-duration", 0, requests_or_duration },
	{ "no-db-alone", 0, no_db_alone },
	{ "profile-one-device", 0, profile_one_device },
	{ "llm-only", 0, llm_only },
	{ "lengths-with-trace", 1, lengths_with_trace },
	{ "lengths-unused", 1, lengths_unused },
	{ "max-seqs-or-batch", 1, max_seqs_or_batch },
	{ "trace-sets-arrivals", 0, trace_sets_arrivals },
	{ "closed-loop-alone", 0, closed_loop_alone },
	{ "think-time-closed-loop", 0, think_time_closed_loop },
	{ "trace-options-need-trace", 0, trace_options_need_trace },
	{ "speedup-or-pairs", 0, speedup_or_pairs },
	{ "trace-sets-duration", 0, trace_sets_duration },
	{ "engine-off-needs-engine", 0, engine_off_needs_engine },
	{ "engine-llm-only", 0, engine_llm_only },
	{ "scenario-known", 0, scenario_known },
	{ "scenario-sets-arrivals", 0, scenario_sets_arrivals },
};

const struct study_rule *study_rules(size_t *n)
{
	*n = sizeof rules / sizeof rules[0];
	return rules;
}

int study_check(const struct study_facts *f, enum study_scope scope, size_t *which, char *err, size_t errlen)
{
	for (size_t i = 0; i < sizeof rules / sizeof rules[0]; i++) {
		if (scope == STUDY_SHARED && !rules[i].shared)
			continue;
		if (rules[i].broken(f, err, errlen)) {
			if (which)
				*which = i;
			return -1;
		}
	}
	return 0;
}

void study_unknown_policy(const char *name, char *err, size_t errlen)
{
	size_t n, used = 0;
	const struct pol_ops *const *reg = pol_registry(&n);
	used += snprintf(err, errlen, "unknown policy '%s' (known:", name);
	for (size_t i = 0; i < n && used < errlen; i++)
		used += snprintf(err + used, errlen - used, "%s %s", i ? "," : "", reg[i]->name);
	if (used < errlen)
		snprintf(err + used, errlen - used, ")");
}
