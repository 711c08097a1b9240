/* hwmodels/engine_profile.h: a serving engine's profile (engines/NAME.engine,
 * engines/FORMAT.md): what one version of a serving engine does on top of the
 * GPU's kernels, apart from the GPU profile. The scheduler defaults it names
 * become the run's defaults (an experiment's own options override them); the
 * pricing terms reach a measured GPU through hw_set_engine (hwmodel.h). */
#ifndef SIMBATCH_ENGINE_PROFILE_H
#define SIMBATCH_ENGINE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define ENG_MAX_TP 8          /* the switch sizes are tabled at 2, 4 and 8 GPUs */

struct eng_profile {
	char name[64];              /* "vllm-0.15": the file's engine key */
	char path[512];
	/* scheduler defaults of the version */
	char policy[32];            /* chunked */
	uint32_t max_batched_tokens, max_seqs;
	int prefix_caching, async_scheduling;
	/* CUDA graphs: decode-sized iterations replayed at the next captured token count */
	int cuda_graphs;
	uint32_t graph_max_size;    /* the largest captured size before the max-seqs and token-budget caps */
	double launch_s;            /* a kernel's host launch latency, paid by an eager iteration's every kernel */
	uint32_t kernels_per_layer; /* kernels an eager decoder layer launches (all-reduces apart) */
	/* all-reduce algorithm switch sizes on allreduce_gpu, by GPUs: 0 = algorithm not used */
	char allreduce_gpu[16];     /* "h100": the GPU generation the switch sizes are tabled for */
	uint64_t custom_max[ENG_MAX_TP + 1];   /* custom all-reduce below this many bytes */
	uint64_t symm_max[ENG_MAX_TP + 1];     /* then torch symmetric memory up to and including this many */
	/* the pricing terms, each switched off by --engine-off=TERM (an ablation; 1 = priced); all three off
	 * price the GPU's kernels alone, as without an engine */
	int use_allreduce_algos;    /* allreduce: vLLM's algorithm at each size (off: NCCL, Vidur's rows) */
	int use_padding;            /* padding: an iteration run at its captured graph's size */
	int use_launch;             /* launch: an eager iteration waits for its kernels' host launches */
};

/* Switches off the terms named in list ("allreduce,padding,launch", "async" its scheduling default;
 * "" none). Returns 0, or -1 with err naming the option and the terms there are. */
int eng_profile_switch_off(struct eng_profile *e, const char *list, char *err, size_t errlen);

/* The directory --engine=NAME reads NAME.engine from (SIMBATCH_ENGINES overrides the built-in one). */
const char *eng_profiles_dir(void);

/* Loads --engine=ARG: a name in eng_profiles_dir() or a file path. Returns 0, or -1 with err: one
 * line naming the file, line and key, or for an unknown name the ones there. */
int eng_profile_load(const char *arg, struct eng_profile *out, char *err, size_t errlen);

/* The captured CUDA-graph sizes of vLLM for max_seqs and the token budget: 1, 2, 4, then every 8
 * to 248, then every 16, up to min(graph_max_size, 2 x max_seqs, max_batched_tokens); and the
 * smallest one at or above tokens, or 0 when tokens is past the largest. */
uint32_t eng_graph_cap(const struct eng_profile *e, uint32_t max_seqs, uint32_t max_batched_tokens);
uint32_t eng_graph_pad(uint32_t tokens, uint32_t cap);

/* Which algorithm vLLM runs an all-reduce of bytes across gpus GPUs with (0 custom, 1 symmetric
 * memory, 2 NCCL), on the GPU the profile's switch sizes are tabled for. */
enum eng_ar_algo { ENG_AR_CUSTOM, ENG_AR_SYMM, ENG_AR_NCCL };
enum eng_ar_algo eng_allreduce_algo(const struct eng_profile *e, uint32_t gpus, double bytes);

#endif
