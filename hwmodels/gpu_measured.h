/* hwmodels/gpu_measured.h: GPUs priced from measured operator profiles
 * (op_profile.h): `--hw=gpu-h100`, `gpu-a100`, `gpu-a40` read
 * calib/tables/ops-GPU.csv (and allreduce-GPU.csv for tensor parallelism);
 * `--hw=FILE` reads any operator profile (allreduce-GPU.csv beside it).
 *
 * An LLM iteration of T tokens (padding included) on tp GPUs, E of its
 * members emitting a token, costs
 *
 *   emb(T) + layers x [ sum of the layer's operators at T
 *                       + 2 all-reduces of T x hidden x 2 bytes (tp > 1)
 *                       + attention ]
 *   + the LM head at E rows
 *
 * each operator interpolated between the profile's measured token counts
 * for the model's shape at tp. Attention is two terms, because a prefill's
 * query-key work is bound by arithmetic and a decode step's by reading its
 * cache, two orders of magnitude apart per query-key pair:
 *  - prefill (members running more than one token): 4 x heads/tp x head_dim
 *    FLOPs a query-key pair (QK^T and AV), at the GPU's measured GEMM rate
 *    (op_profile.gemm_flops_s; the FlashAttention-2 and -3 papers report the
 *    attention forward pass reaching 70-75% of peak at long sequences on
 *    A100 and H100, as GEMMs do; short prompts reach less, which this
 *    leaves optimistic);
 *  - decode (members running one token): the cached keys and values read,
 *    and every new token's written, at the GPU's measured streaming rate
 *    (op_profile.stream_bytes_s: the largest GEMM weight streamed at one
 *    token), KV heads split over tp GPUs (replicated when fewer than tp).
 * The LM head (hidden x vocab, not profiled by Vidur) is the profile's
 * measured MLP up projection at E rows scaled by vocab / its width: the
 * same K and rows, a time linear in N. The CPU's share of an iteration
 * (scheduling, sampling, detokenising) and of a request (the HTTP front end)
 * is not priced: no published measurement for the servers we validate
 * against gives it (docs/VALIDATION.md says what error remains).
 *
 * Memory: tp GPUs, each what gpu_memory.h defines for the profile's GPU (its
 * row; a GPU with no row: the profile's mem_gb), holding the weights and the
 * KV cache.
 *
 * Contract: opening fails with one line when the model is not an LLM, its
 * shape or element size is not profiled, tp is not a power of two up to 8,
 * does not divide the heads, is not measured for the shape or has no
 * measured all-reduce, or the weights do not fit (the line names the tp
 * they need). iter_cost is a pure function. */
#ifndef SB_GPU_MEASURED_H
#define SB_GPU_MEASURED_H

#include <stddef.h>
#include <stdint.h>
#include "hwmodel.h"
#include "op_profile.h"
#include "gemm_predict.h"
#include "gpu_memory.h"
#include "engine_profile.h"
#include "gpu_moe.h"

/* --hw=gpu-NAME, one for each GPU row (gpu_memory.h), in the rows' order;
 * the registry lists them. */
const struct hw_ops *gpu_measured_named(size_t *count);
extern const struct hw_ops gpu_file_ops;   /* --hw=FILE holding an operator profile */

/* What a measured GPU model was built from, for model-info and summaries;
 * NULL when hw is not one. */
struct gpu_measured_info {
	const struct op_profile *profile;
	const struct opp_curve *curve;   /* the model's shape at tp */
	uint32_t tp;
	int has_allreduce;
	struct gpu_moe *moe;             /* a mixture of experts' layers (gpu_moe.h); NULL for a dense model */
};
const struct gpu_measured_info *gpu_measured_info(const struct hw_model *hw);

/* A node-level model (LSTM, GNMT, ResNet-50 ...) on a measured GPU that has
 * no cuBLAS calibration table of its own (calib/tables/gpu-NAME.csv, which
 * is used when present): each GEMM shape of the model is priced by the
 * GEMM predictor (gemm_predict.h) from every GEMM the GPU's operator profile
 * measured, at batches 1 to GPU_PREDICT_MAX_BATCH; an attention product of
 * b samples as the GEMM of the same FLOPs, but not faster than streaming
 * its b operands at the measured rate; element-wise work on the line fitted
 * to the measured residual adds (one operation an element), as a calibrated
 * model does (calibrated.h). What it was built from, and the shapes that lie
 * outside the measured range of M, K or N: */
#define GPU_PREDICT_MAX_BATCH 2048
struct gpu_predicted_info {
	const struct op_profile *profile;
	size_t nshapes;             /* the model's GEMM shapes */
	size_t noutside;            /* of them, outside the measured range */
	char outside[512];          /* the first of those, e.g. "gemm 1x512x512 (K, N)", then "..." */
};
const struct gpu_predicted_info *gpu_predicted_info(const struct hw_model *hw);
/* A node-level model on a measured GPU (gpu_predicted.c): the cuBLAS table calibrate measured there
 * (calib/tables/gpu-NAME.csv) when named and committed, else its GEMMs predicted from ops_path. */
int gpu_open_node_level(const char *arg, const char *ops_path, const struct mdl_model *m, uint32_t tp, int named,
                        struct hw_model **out, char *err, size_t errlen);

/* The parts of one iteration, in seconds (their sum is iter_cost). */
struct gpu_iter_parts {
	double layers_s;        /* every layer's operators */
	double allreduce_s;     /* tp > 1: two all-reduces a layer */
	double prefill_attn_s;  /* arithmetic of multi-token members' attention */
	double decode_attn_s;   /* KV cache read by one-token members, and written */
	double emb_s, head_s;
	int extrapolated;       /* T past the profile's last row */
};
/* What the engine set on hw prices (hw_set_engine), in one line for the run header; "" without one. */
void gpu_measured_engine_note(const struct hw_model *hw, char *buf, size_t len);
void gpu_measured_iter_parts(const struct hw_model *hw, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                             uint32_t emitting, uint32_t pad, struct gpu_iter_parts *out);

#endif
