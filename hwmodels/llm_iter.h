/* hwmodels/llm_iter.h: an LLM iteration priced as a whole, from times
 * measured on a device: a file of kind llm_iter, which `simbatch live
 * --profile-out=FILE --model=M` writes for an LLM (runtime/profile.h) and
 * `--hw=FILE` reads. An iteration of T tokens (padding included), E of its
 * members emitting a token and A query-key pairs in its attention takes
 *
 *     fixed_us + token_us T + emit_us E + pair_ns A
 *
 * where A sums over members tokens x context + tokens (tokens + 1) / 2 (each
 * new position attends over its cache and the new positions up to itself).
 * Each term is a cost the kernels pay: the per-iteration work that does not
 * grow with the batch (kernel calls over the layers), a token's pass through
 * the layers' products and element-wise work, the output projection of an
 * emitting row, and one query-key pair's dot product and weighted value sum
 * over every layer and head. The coefficients are a least-squares fit to
 * timed iterations, not a datasheet: the file names the machine and the
 * command that measured it.
 *
 * File (KEY = VALUE lines, # comments, every key required once):
 *     kind = llm_iter
 *     model = NAME            the LLM it was measured for; --model must match
 *     fixed_us, token_us, emit_us, pair_ns   >= 0
 *     mem_capacity_gb         > 0: the memory the weights and KV cache share
 * Errors name the file, the line and the key; exit 2. */
#ifndef SB_LLM_ITER_H
#define SB_LLM_ITER_H

#include <stddef.h>
#include "hwmodel.h"

#define LLM_ITER_KIND "llm_iter"

struct llm_iter_coef {
	double fixed_s, token_s, emit_s, pair_s;
};

/* The pairs one member's attention computes: tokens new positions on a
 * cache of context. */
static inline double llm_iter_pairs(uint32_t tokens, uint32_t context)
{
	return (double)tokens * context + (double)tokens * (tokens + 1) / 2.0;
}

static inline double llm_iter_seconds(const struct llm_iter_coef *c, double tokens, double emitting, double pairs)
{
	return c->fixed_s + c->token_s * tokens + c->emit_s * emitting + c->pair_s * pairs;
}

/* 1 when the file's first setting is kind = llm_iter, 0 when not, -1 with
 * err when it cannot be read. */
int llm_iter_sniff(const char *path, char *err, size_t errlen);

extern const struct hw_ops llm_iter_ops;

#endif
