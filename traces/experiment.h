/* traces/experiment.h: what an inference-perf client sent, read back from
 * its experiment directory, for make-trace --from-experiment.
 *
 * inference-perf (kubernetes-sigs/inference-perf) writes the configuration
 * it actually ran to results/config.yaml; for the shared_prefix data
 * generator (inference_perf/datagen/shared_prefix_datagen.py) that is
 * num_groups system prompts of system_prompt_len random tokens,
 * num_prompts_per_group questions of question_len random tokens each, every
 * whole prompt (system prompt and question) made once, the pool shuffled
 * once, and a stage's request k sent pool prompt k mod the pool's size
 * (inference_perf/loadgen/load_generator.py, run_stage: a stage numbers its
 * requests from 0). The stages (load.stages: rate, duration) send
 * int(rate x duration) requests each, at a fixed interval (load.type
 * constant) or Poisson (poisson). What the server was sent is longer than
 * the configured lengths (the random token ids are decoded to text and the
 * text tokenised again): results/stage_0_lifecycle_metrics.json's
 * successes.prompt_len quantiles are the measured lengths.
 *
 * Contract: never prints, never exits; 0, or -1 with one line in err naming
 * FILE:LINE and the key (FILE alone for a key that is missing). */
#ifndef SB_TRACES_EXPERIMENT_H
#define SB_TRACES_EXPERIMENT_H

#include <stddef.h>
#include <stdint.h>

#define TRC_EXP_MAX_STAGES 64
#define TRC_EXP_QUANTILES 13     /* min, p0.1, p1, p5, p10, p25, median, p75, p90, p95, p99, p99.9, max */

struct trc_experiment {
	uint64_t groups, prompts_per_group;          /* the pool: groups x prompts_per_group whole prompts */
	uint64_t system_prompt_len, question_len, output_len;   /* tokens, as configured */
	int poisson;                                 /* load.type poisson; else constant (a fixed interval) */
	size_t nstages;
	double rate[TRC_EXP_MAX_STAGES], duration[TRC_EXP_MAX_STAGES];   /* requests/s, s */
	uint64_t requests[TRC_EXP_MAX_STAGES];       /* int(rate x duration), as inference-perf sends */
	int measured;                                /* prompt_q holds measured prompt lengths (else none found) */
	double prompt_q[TRC_EXP_QUANTILES];          /* stage 0's prompt_len quantiles, tokens */
	char quantile_path[4096];                    /* the file they came from */
};

/* Reads DIR/results/config.yaml (required) and, when it exists,
 * DIR/results/stage_0_lifecycle_metrics.json (its prompt_len quantiles). */
int trc_experiment_load(const char *dir, struct trc_experiment *x, char *err, size_t errlen);

/* The measured prompt length at probability p in [0, 1]: the inverse of the
 * piecewise-linear CDF through the quantiles. */
double trc_experiment_prompt_len(const struct trc_experiment *x, double p);

#endif
