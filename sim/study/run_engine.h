/* sim/study/run_engine.h: --engine=VERSION on a run (hwmodels/engine_profile.h): the version's
 * scheduler defaults under the run's own options, its pricing terms on the run's GPU, the line
 * the run prints and stores (the engine's launch command for a configuration: sim/cli/engine_launch.h). */
#ifndef SIMBATCH_RUN_ENGINE_H
#define SIMBATCH_RUN_ENGINE_H

#include <stdio.h>
#include "../../hwmodels/engine_profile.h"
#include "../../hwmodels/hwmodel.h"
#include "../../policies/policy.h"
#include "../../util/options.h"

struct run_engine {
	int on;                     /* --engine was given */
	struct eng_profile e;
	char line[640];             /* what it set and prices, for the header and run_config */
};

/* Loads --engine (and --engine-off) from o; without --engine, r->on = 0 and nothing changes. With
 * it, the version's policy becomes the default policy. Returns 0, or -1 with err. */
int run_engine_load(struct opt_set *o, struct run_engine *r, char *err, size_t errlen);

/* The version's defaults for whatever the run's options leave unsaid (max-seqs, max-batched-tokens,
 * prefix-cache, async-scheduling for continuous and chunked), then its terms on hw. */
int run_engine_apply(struct run_engine *r, const struct opt_set *o, const char *policy, struct pol_env *env,
                     struct hw_model *hw, char *err, size_t errlen);


#endif
