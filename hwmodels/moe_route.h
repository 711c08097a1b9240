/* hwmodels/moe_route.h: which routed experts a MoE layer's tokens reach,
 * and how many tokens each gets (issue 50 item 2).
 *
 * A routing model is how one token picks its top_k distinct experts out of
 * E: uniformly (every k-subset alike: the baseline a balanced router aims
 * at), or by a routing-skew file, a share for each expert: the token's
 * first expert drawn by the shares, each further one by the shares of the
 * experts it has not yet picked (top-k of the router's logits picks k
 * distinct experts; where the shares are measured top-k selection
 * frequencies this is their simplest consistent model).
 *
 * Routing-skew file (CSV; '#' lines are comments, "# source = ..." names
 * where the shares come from):
 *     # simbatch routing skew                    (the first line)
 *     # source = TEXT                            (required)
 *     expert,share                               (the header)
 *     0,0.131                                    (one row an expert, 0 .. E-1 in order)
 * Shares finite and non-negative, summing to 1 within MOE_ROUTE_SUM_TOL, as
 * many rows as the model's experts, at least top_k of them positive.
 *
 * A layer's draw is exact for both models: token by token (k distinct draws
 * each, a repeat drawn again), or for the uniform model, when that is
 * cheaper, expert by expert: the tokens that have picked j experts so far
 * pick expert i with probability (k - j) / (E - i), as each of them picks
 * its remaining k - j among the E - i experts left, so the group splits
 * binomially (the same distribution, in O(E k) draws rather than O(T k)).
 *
 * Contract: a loaded model is read-only; draws use only the generator
 * passed in; a loader reports one line "FILE:LINE: problem" and keeps
 * nothing on failure. */
#ifndef SB_MOE_ROUTE_H
#define SB_MOE_ROUTE_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>

#define MOE_ROUTE_KIND_LINE "# simbatch routing skew"
/* Shares may be given rounded to three decimals (published tables): their
 * sum is then 1 within E x 0.0005; 1e-3 admits that for up to two experts'
 * rounding and refuses anything not meant as a distribution. */
#define MOE_ROUTE_SUM_TOL 1e-3

struct moe_route {
	uint32_t experts, top_k;
	int uniform;          /* 1: every k-subset alike; 0: by share[] */
	double *cum;          /* skew: [experts] cumulative shares, cum[E-1] = their sum; owned */
	char source[256];     /* where the shares come from ("uniform" for the baseline) */
	char path[512];
};

/* The uniform model for experts and top_k (top_k <= experts). 0, or -1 with err (memory). */
int moe_route_uniform(uint32_t experts, uint32_t top_k, struct moe_route **out, char *err, size_t errlen);
/* A routing-skew file for a model of experts and top_k. 0, or -1 with err. */
int moe_route_load(const char *path, uint32_t experts, uint32_t top_k, struct moe_route **out, char *err,
                   size_t errlen);
void moe_route_free(struct moe_route *r);

/* One layer: tokens tokens each pick top_k distinct experts; counts[e]
 * (experts of them) is set to the tokens expert e gets. scratch holds at
 * least experts + top_k + 1 words. */
void moe_route_draw(const struct moe_route *r, gsl_rng *gen, uint32_t tokens, uint32_t *counts, uint32_t *scratch);

/* Experts a batch of b tokens reaches on average under the uniform model:
 * E (1 - (1 - k/E)^b), each expert missed by a token with probability 1 - k/E. */
double moe_route_expected_reached(uint32_t experts, uint32_t top_k, uint32_t b);

#endif
