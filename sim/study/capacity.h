/* sim/study/capacity.h: capacity's first estimate for a run's options (capacity.c): the rate
 * a run of these options could serve, from the hardware's prices alone (no simulation), where
 * capacity's search starts, and the names its report gives the configuration. Never prints or
 * exits: -1 with one line in err. */
#ifndef SB_STUDY_CAPACITY_H
#define SB_STUDY_CAPACITY_H

#include <stddef.h>
#include <stdint.h>
#include "serving.h"

struct opt_set;

struct study_cap_names {             /* what the report calls the configuration */
	char policy[64], model[256], hw[256];
	uint32_t max_batch;
	int llm;                   /* the model is an LLM */
	struct study_serving serving;   /* TP, replicas, pools, router, engine, GPUs (serving.h) */
};

/* The capacity estimate for the run options ro (policy, model, hw, workers, max batch, mean
 * lengths; every rule of rules.h that capacity shares with run checked), and names for the
 * report in *nm. The estimate in requests a second, or -1 with err. */
double study_cap_estimate(const struct opt_set *ro, struct study_cap_names *nm, char *err, size_t errlen);

#endif
