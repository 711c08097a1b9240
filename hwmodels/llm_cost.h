/* hwmodels/llm_cost.h: how long one iteration of a decoder-only LLM takes
 * on a hardware model, and how many KV cache blocks its memory holds
 * (DESIGN.md section 3b). An iteration runs T new tokens, summed over its
 * members, through every layer:
 *  - the layer GEMMs at M = T (QKV, the attention output projection, the
 *    MLP), priced by the hardware model's own gemm_cost, weights fetched as
 *    it models them (an LLM's weights are far beyond any on-chip SRAM);
 *  - the output projection at M = the members that emit a token (only the
 *    last position of each yields logits);
 *  - each member's attention over its cache, on the roofline of the device:
 *    4 x tokens x (context + tokens) x heads x head_dim FLOPs a layer (the
 *    QK^T and AV products) at its peak, or reading its context's keys and
 *    values and writing its new ones at its memory bandwidth, whichever is
 *    longer. Element-wise work (norms, rotary embedding, activation) is left
 *    out: a few FLOPs per element against thousands in the GEMMs.
 *
 * A hardware model that prices iterations whole (hw_ops.iter_cost: a
 * measured iteration profile, llm_iter.h) is used as it is instead.
 *
 * Contract: the hardware model must offer device and gemm_cost or iter_cost
 * (the NPU, the GPU roofline and llm_iter files do; node tables do not);
 * llm_cost_create says so otherwise.
 * Iteration times are a pure function of the members' (tokens, context). */
#ifndef SB_LLM_COST_H
#define SB_LLM_COST_H

#include <stddef.h>
#include <stdint.h>
#include "hwmodel.h"

struct llm_cost;

/* For model m (an LLM) on hw; iterations of up to max_tokens are cached
 * (larger ones are priced afresh). 0, or -1 with err. */
int llm_cost_create(const struct hw_model *hw, const struct mdl_model *m, uint32_t max_tokens,
                    struct llm_cost **out, char *err, size_t errlen);
void llm_cost_destroy(struct llm_cost *c);

/* One iteration, in ns (at least 1): member i runs tokens[i] new tokens on
 * a cache of context[i]; emitting members yield a token (the LM head); pad
 * tokens of padding (static batching) go through the layer GEMMs too (their
 * attention is not priced). -1 with err if the hardware model fails a GEMM
 * or prices the iteration beyond HW_MAX_TASK_S (hwmodel.h). */
int64_t llm_cost_iter_ns(struct llm_cost *c, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                         uint32_t emitting, uint32_t pad, char *err, size_t errlen);
/* llm_cost_iter_ns of n members decoding one token each, all emitting, on
 * caches of context_sum tokens in all, from the sum alone where the hardware
 * model prices that way (hw_ops.decode_cost); 0 where it does not, or where
 * the sum passes HW_MAX_TASK_S (the caller prices the members). */
int64_t llm_cost_decode_ns(const struct llm_cost *c, uint32_t n, uint64_t context_sum);

/* KV cache blocks of block_size tokens the device's memory holds after the
 * weights. 0 with err when the device models no capacity or the weights
 * alone fill it. */
uint64_t llm_cost_kv_blocks(const struct llm_cost *c, uint32_t block_size, char *err, size_t errlen);

#endif
