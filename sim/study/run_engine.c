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
