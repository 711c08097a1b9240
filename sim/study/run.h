/* sim/study/run.h: one run's whole configuration as one value (run.c): its
 * options, model, hardware, workload, fleet and policy, checked and set up
 * for the engine (struct eng_config). The command line parses the options
 * and prints; this layer never prints or exits: a refusal is -1 with one
 * line in err (its kind, where the machine failed, marked in util/errkind.h),
 * and a run holds no state outside its value, so another program can link it.
 *
 *   opt_parse(&r->o, ...) -> study_run_configure(r) -> the engine or live -> study_run_free(r)
 */
#ifndef SB_STUDY_RUN_H
#define SB_STUDY_RUN_H

#include <stddef.h>
#include <stdint.h>
#include "../../util/options.h"
#include "../../models/model.h"
#include "../engine/engine.h"
#include "fleet.h"
#include "run_engine.h"
#include "rules.h"           /* study_unknown_policy */
#include "default_load.h"

struct study_run {
	struct opt_set o;            /* the run's options, parsed by the caller (run's table, or live's) */
	struct opt_set pol_params;   /* the policy's own knobs, from o (c.env.params points here) */
	struct eng_config c;         /* what the engine runs */
	struct mdl_model *model;
	struct hw_model *hw;
	struct run_fleet fleet;      /* a heterogeneous or disaggregated fleet's groups (fleet.h) */
	struct trc_lengths *input_len, *output_len;
	struct trc_trace *trace;
	char input_spec[MDL_SPEC_MAX + 8], output_spec[MDL_SPEC_MAX + 8];
	uint64_t dropped_over_context;      /* LLM: trace rows left out (--over-context=drop) */
	char fleet_hw[256];          /* every replica names its hardware: the first group's, the run's --hw */
	struct run_engine engine;    /* --engine (run_engine.h) */
	struct study_load load;      /* an LLM's default load, when it took it (default_load.h) */
	char note[256];              /* a line for the user that is no refusal (a trace replayed in part), or "" */
};

/* Loads and checks everything r->o names, in order (every cross-option rule
 * in one pass, rules.h; then the model, the engine profile, the policy and
 * its knobs, the hardware, the workload, the fleet, the limits no run could
 * survive, and for an LLM the policy's own set-up), and fills r->c. 0, or -1
 * with one line in err; study_run_free releases r either way. */
int study_run_configure(struct study_run *r, char *err, size_t errlen);
void study_run_free(struct study_run *r);     /* what configure loaded; r itself is the caller's */

/* The policy's view of a configured run: c's knobs, the model, and the
 * latency estimates of c's hardware model, which *est holds (the caller
 * releases it with run_estimates_free): node latencies, and for an LLM the
 * iteration prices and the KV cache (eng_llm_env). 0, or -1 with err. */
struct run_estimates {
	struct eng_latency *lat;
	struct llm_cost *llm;
};
int run_policy_env(const struct eng_config *c, struct pol_env *env, struct run_estimates *est, char *err,
                   size_t errlen);
void run_estimates_free(struct run_estimates *est);
/* Asks c's policy whether it takes c's model and knobs (its init on a trial
 * driver): 0, or -1 with the policy's refusal in err. `run --dry-run`,
 * sweeps' checks and live use it before anything runs. */
int run_check_policy(const struct eng_config *c, char *err, size_t errlen);

#endif
