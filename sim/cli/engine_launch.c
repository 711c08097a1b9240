/* sim/cli/engine_launch.c: a configuration's serving-engine launch command (engine_launch.h). */
#include "engine_launch.h"

#include <stdlib.h>
#include <string.h>
#include "../../hwmodels/engine_profile.h"
#include "../../models/model.h"
#include "../../policies/policy.h"
#include "../study/run_options.h"

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
