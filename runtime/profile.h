/* runtime/profile.h: times the live kernels node by node over batch sizes
 * and writes a node latency table (node,batch,latency_s; DESIGN.md section
 * 4), so the simulator can be calibrated against the live runtime itself
 * (`simbatch live --profile-out=FILE`, then `simbatch run --hw=FILE`).
 *
 * Each point: b requests with the given lengths, their states initialised,
 * each at the middle step of the node's segment (a representative attention
 * length); untimed calls, then reps timed calls of run_node followed by
 * the device's finish, each on a worker thread, handed over and handed back
 * by condition variables as live hands a task to its worker and is woken by
 * its end (wall clock, CLOCK_MONOTONIC: the two thread wake-ups are part of
 * every live task, and of a small model's most); the mean is written, not the median: the simulator adds node
 * latencies up, and the expected time of a chain of nodes is the sum of
 * their means (on a shared machine the median misses the slow calls a live
 * run also pays). A latency smaller than one at a smaller batch is raised
 * to it: a batch can always be padded up.
 *
 * On the CPU, a node whose weights a live run would not find cached (the
 * weights that run between two of its runs exceed the last-level cache,
 * runtime/profile.c) is timed with the cache evicted before each call; the
 * file's comments name those nodes.
 *
 * A pass node (models/FORMAT.md) is listed by the tokens it runs instead
 * of requests: 1, 2, 4, ... up to the largest batch times longest_input,
 * each point requests of input_len tokens (the last one shorter), and a
 * point whose call runs long is timed fewer times (runtime/profile.c).
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
	uint32_t longest_input;          /* pass nodes: rows up to the largest batch times this many tokens */
	uint32_t reps;                   /* timed calls per point */
	uint32_t max_tokens;             /* LLM: the most tokens an iteration runs (prefill points up to it) */
	FILE *progress;                  /* a line per node (per point, an LLM) timed; NULL: silent */
};

int rt_profile(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen);

/* An LLM (an `llm` line) instead: times whole iterations and writes the
 * measured iteration model of hwmodels/llm_iter.h, its coefficients fitted
 * by least squares (GSL) to
 *  - prefills of one request at 1, 2, 4, ... max_tokens tokens (emitting),
 *  - decode steps of each batch in batches, at caches of 8, 64 and 256
 *    tokens where the context allows (all emitting),
 *  - prompt chunks of 16, 64 and 256 tokens on a cache of 128 (none),
 * each point timed as above; every point and its fitted value are written as
 * comments. A term the fit makes negative is left out and the rest refitted
 * (no cost is negative). mem_capacity_gb is this machine's physical memory,
 * which a CPU's weights and caches share. Same contract as rt_profile. */
int rt_profile_llm(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen);

#endif
