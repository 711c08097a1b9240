/* runtime/profile.h: times the live kernels node by node over batch sizes
 * and writes a node latency table (node,batch,latency_s; DESIGN.md section
 * 4), so the simulator can be calibrated against the live runtime itself
 * (`simbatch live --profile-out=FILE`, then `simbatch run --hw=FILE`).
 *
 * Each point: b requests with the given lengths, their states initialised,
 * each at the middle step of the node's segment (a representative attention
 * length); one untimed call, then reps timed calls of run_node followed by
 * the device's finish (wall clock, CLOCK_MONOTONIC, as a live task is
 * timed); the mean is written, not the median: the simulator adds node
 * latencies up, and the expected time of a chain of nodes is the sum of
 * their means (on a shared machine the median misses the slow calls a live
 * run also pays). A latency smaller than one at a smaller batch is raised
 * to it: a batch can always be padded up.
 *
 * Contract: returns 0 with every row written, or -1 with err (the file may
 * hold some rows; the caller removes it).
 */
#ifndef SB_RT_PROFILE_H
#define SB_RT_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../models/model.h"
#include "backend.h"

struct rt_profile_config {
	const struct mdl_model *model;   /* not owned */
	const char *device;              /* "cpu" or "gpu" */
	enum rt_gemm_kind gemm;
	uint64_t seed;
	const uint32_t *batches;         /* increasing */
	size_t nbatches;
	uint32_t input_len, output_len;  /* lengths of the profiled requests */
	uint32_t reps;                   /* timed calls per point */
};

int rt_profile(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen);

#endif
