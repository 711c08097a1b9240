/* hwmodels/gpu_moe.h: the layers of a mixture-of-experts LLM on a measured
 * GPU (gpu_measured.h), issue 50 items 2 and 3. No operator profile holds a
 * MoE model's shape, so a layer is priced from its parts:
 *  - every weight GEMM (QKV, attention output, router, each reached
 *    expert's gate-and-up and down, a dense layer's MLP, the LM head) by the
 *    GEMM predictor (gemm_predict.h) at its own M, K and N on one GPU, its
 *    error the predictor's leave-one-model-out p90 (the run's band);
 *  - the element-wise operators (the two norms, rotary embedding, the
 *    residual add, the MLP's activation, the embedding lookup), which stream
 *    their elements, on the measured curve of the profiled model nearest in
 *    hidden size at the same tp, at the token count that streams as many
 *    elements (norms, add and lookup: hidden a token; rotary: the query and
 *    key heads on one GPU; activation: the expert widths its tokens reach).
 * The attention over the cache and the all-reduces are gpu_measured's, as
 * for a dense model.
 *
 * A MoE layer's experts: the routing model (moe_route.h) draws each layer's
 * tokens per expert, from a stream seeded by the run's seed and the
 * iteration's shape (its tokens, members and cached tokens), so a price is
 * a pure function of the iteration and the seed, whether the engine or a
 * policy's estimate asks. Each reached expert runs its two GEMMs at its own
 * tokens: vLLM's fused-MoE kernels (one for gate-and-up, one for down:
 * vllm/model_executor/layers/fused_moe/fused_moe.py) each run one tile grid
 * over every reached expert's token blocks, priced as the sum of the
 * experts' GEMMs without the kernel floor (gemmp_seconds_unfloored), the
 * floor (the fastest GEMM measured) paid once a kernel: 104 experts of
 * Qwen3-235B at TP 8 are two kernels, not 208.
 *  - TP, no EP (vLLM's default): every GPU holds 1/tp of every expert's
 *    intermediate width (FusedMoE shards w13 and w2 over the TP ranks), so
 *    each GPU runs every reached expert at expert_ffn / tp.
 *  - --ep=N (vLLM's --enable-expert-parallel, N = tp: FusedMoEParallelConfig
 *    sets ep_size = tp_size x dp_size and tp_size 1 for the experts): rank
 *    r holds experts r E/N .. (r + 1) E/N - 1 whole (determine_expert_map's
 *    linear placement), runs those its tokens reached, and the layer waits
 *    for the busiest rank. With data parallelism 1 vLLM runs no all-to-all
 *    (use_all2all_kernels is dp_size > 1 and use_ep): every rank holds every
 *    token after the attention's all-reduce, and the experts' outputs are
 *    summed by the all-reduce that tensor parallelism already pays.
 * Each MoE layer adds its draw to the run's routing figures (gpu_moe_stats).
 *
 * Contract: create fails with one line when the model's data type has no
 * measurement (FP8), --ep does not divide the experts or is not the GPUs of
 * the replica, or no curve at tp prices the element-wise operators. */
#ifndef SB_GPU_MOE_H
#define SB_GPU_MOE_H

#include <stddef.h>
#include <stdint.h>
#include "op_profile.h"
#include "../models/model.h"

struct gpu_moe;

/* The routing figures of every MoE layer priced so far (the engine's
 * iterations, and a policy's estimates where it asks for any). */
struct gpu_moe_stats {
	uint64_t layers;            /* MoE layers drawn */
	double reached_sum;         /* experts reached, summed over them */
	double tokens_sum;          /* tokens a reached expert got, averaged in each layer, summed */
	double imbalance_sum;       /* max / mean tokens over the experts (all E), summed */
	double imbalance_max;
	double rank_imbalance_sum;  /* --ep: the busiest rank's tokens / the ranks' mean, summed */
};

struct gpu_moe_opts {
	uint32_t ep;                /* 1: no expert parallelism */
	const char *routing;        /* NULL or "uniform": the uniform model; else a routing-skew file */
	uint64_t seed;
};

int gpu_moe_create(const struct op_profile *p, const struct mdl_model *m, uint32_t tp, const struct gpu_moe_opts *o,
                   struct gpu_moe **out, char *err, size_t errlen);
void gpu_moe_free(struct gpu_moe *g);

/* Every layer's operators at total tokens (padding included; the attention over the cache and the all-reduces
 * aside), the embedding lookup, and the LM head at emitting rows, in s. key: the iteration's shape, which with
 * the seed seeds its routing. */
double gpu_moe_layers_s(struct gpu_moe *g, uint64_t total, uint64_t key);
double gpu_moe_emb_s(struct gpu_moe *g, uint64_t total);
double gpu_moe_head_s(struct gpu_moe *g, uint32_t emitting);

const struct gpu_moe_stats *gpu_moe_stats(const struct gpu_moe *g);
/* The GEMM predictor's leave-one-model-out error over the profile's GEMMs (median and p90, %), computed when
 * first asked. 0, or -1 with err (memory). */
int gpu_moe_error(struct gpu_moe *g, double *median_pct, double *p90_pct, char *err, size_t errlen);
/* The curve the element-wise operators are priced on. */
const struct opp_curve *gpu_moe_curve(const struct gpu_moe *g);
/* The routing model's source ("uniform" or the skew file's), and --ep. */
const char *gpu_moe_routing(const struct gpu_moe *g);
uint32_t gpu_moe_ep(const struct gpu_moe *g);

#endif
