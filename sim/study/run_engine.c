/* sim/study/run_engine.c: --engine=VERSION on a run (run_engine.h). */
#include "run_engine.h"

#include <stdio.h>
#include <string.h>
#include "../../hwmodels/gpu_measured.h"
#include "../../models/model.h"
#include "run_options.h"
#include <stdlib.h>

int run_engine_load(struct opt_set *o, struct run_engine *r, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	if (!opt_given(o, "engine"))     /* --engine-off alone is refused by sim/study/rules.c */
		return 0;
	if (eng_profile_load(opt_str(o, "engine"), &r->e, err, errlen) != 0)
		return -1;
	if (opt_given(o, "engine-off") && eng_profile_switch_off(&r->e, opt_str(o, "engine-off"), err, errlen) != 0)
		return -1;
	r->on = 1;
	opt_set_default(o, "policy", r->e.policy);
	return 0;
}

int run_engine_apply(struct run_engine *r, const struct opt_set *o, const char *policy, struct pol_env *env,
                     struct hw_model *hw, char *err, size_t errlen)
{
	if (!r->on)
		return 0;
	const struct eng_profile *e = &r->e;
	if (!opt_given(o, "max-seqs") && !opt_given(o, "max-batch"))
		env->max_batch = e->max_seqs;
	if (!opt_given(o, "max-batched-tokens"))
		env->max_batched_tokens = e->max_batched_tokens;
	if (!opt_given(o, "prefix-cache"))
		env->prefix_cache = e->prefix_caching;
	/* async scheduling is modelled for continuous and chunked (policies/llm/kv.c) */
	int async_here = strcmp(policy, "continuous") == 0 || strcmp(policy, "chunked") == 0;
	if (!opt_given(o, "async-scheduling") && async_here)
		env->async_scheduling = e->async_scheduling;
	if (hw_set_engine(hw, e, env->max_batch, env->max_batched_tokens, err, errlen) != 0)
		return -1;
	char priced[384];
	gpu_measured_engine_note(hw, priced, sizeof priced);
	int n = snprintf(r->line, sizeof r->line, "%s (%s): %s %u tokens, %u sequences, prefix caching %s, "
	                 "async scheduling %s; %s", e->name, e->path, policy, env->max_batched_tokens, env->max_batch,
	                 env->prefix_cache ? "on" : "off", env->async_scheduling ? "on" : "off", priced);
	if (n < 0 || (size_t)n >= sizeof r->line)
		snprintf(r->line + sizeof r->line - 4, 4, "...");
	return 0;
}

/* The value of --name in words, the last one given; NULL when none. */
static const char *launch_opt(char *const *words, size_t n, const char *name)
{
	const char *v = NULL;
	size_t len = strlen(name);
	for (size_t i = 0; i < n; i++)
		if (strncmp(words[i], "--", 2) == 0 && strncmp(words[i] + 2, name, len) == 0 && words[i][2 + len] == '=')
			v = words[i] + 3 + len;
	return v;
}

void run_engine_launch_words(FILE *f, char *const *words, size_t n)
{
	char err[512];
	struct eng_profile e;
	const char *eng = launch_opt(words, n, "engine"), *v;
	struct mdl_model *m = NULL;
	if ((eng && eng_profile_load(eng, &e, err, sizeof err) != 0) ||
	    mdl_load(launch_opt(words, n, "model") ? launch_opt(words, n, "model") : "transformer", &m, err, sizeof err) != 0)
		return;
	const char *policy = launch_opt(words, n, "policy") ? launch_opt(words, n, "policy")
	                     : eng ? e.policy : RUN_DEFAULT_LLM_POLICY;
	const struct pol_ops *pol = pol_find(policy);
	if (m->is_llm && pol) {
		unsigned long tp = (v = launch_opt(words, n, "tp")) ? strtoul(v, NULL, 10) : 1;
		unsigned long seqs = (v = launch_opt(words, n, "max-seqs")) || (v = launch_opt(words, n, "max-batch"))
		                     ? strtoul(v, NULL, 10) : eng ? e.max_seqs : pol->default_max_batch;
		unsigned long budget = (v = launch_opt(words, n, "max-batched-tokens")) ? strtoul(v, NULL, 10)
		                       : eng ? e.max_batched_tokens : pol->default_batched_tokens ? pol->default_batched_tokens
		                       : m->llm.context > 2048 ? m->llm.context : 2048;
		int prefix = (v = launch_opt(words, n, "prefix-cache")) ? strcmp(v, "off") != 0 : eng ? e.prefix_caching : 1;
		fprintf(f, "  launch     vllm serve MODEL --tensor-parallel-size %lu --max-num-batched-tokens %lu "
		        "--max-num-seqs %lu", tp, budget, seqs);
		if (strcmp(policy, "continuous") == 0)
			fputs(" --no-enable-chunked-prefill", f);
		if (!prefix)
			fputs(" --no-enable-prefix-caching", f);
		int async = 0;
		for (size_t i = 0; i < n; i++)
			async |= strcmp(words[i], "--async-scheduling") == 0;
		if (eng && e.async_scheduling && !((v = launch_opt(words, n, "engine-off")) && strstr(v, "async")))
			async = 1;
		fputs(async ? " --async-scheduling" : " --no-async-scheduling", f);
		if (eng && !e.cuda_graphs)
			fputs(" --enforce-eager", f);
		fprintf(f, "   (MODEL: %s's weights; %s%s)\n", m->name, eng ? "engine " : "no --engine: ", eng ? e.name :
		        "simbatch's defaults, each following the vLLM run --help names");
		if ((v = launch_opt(words, n, "replicas")) && strcmp(v, "1") != 0)
			fprintf(f, "             on each replica of --replicas=%s\n", v);
	}
	mdl_free(m);
}
