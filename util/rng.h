/* util/rng.h: the run's random streams. Every draw in a run goes through a
 * GSL generator created here from the run's seed, one stream per purpose, so
 * adding draws to one purpose (say, lengths) never shifts another (arrivals).
 *
 * Contract: rng_create is a pure function of (seed, stream): the same pair
 * gives the same sequence on every machine and in every tool (simbatch,
 * make-trace); different seeds or streams give different mt19937 seeds.
 */
#ifndef SB_UTIL_RNG_H
#define SB_UTIL_RNG_H

#include <stdint.h>
#include <gsl/gsl_rng.h>

enum rng_stream {
	RNG_ARRIVALS = 1,   /* inter-arrival gaps */
	RNG_LENGTHS = 2,    /* request input/output lengths */
	RNG_ROUTING = 3,    /* a MoE layer's experts (hwmodels/moe_route.h), one stream an iteration */
};

/* A mt19937 generator (util/mt19937.h: gsl_rng_mt19937's numbers) seeded from (run seed, stream). NULL on allocation failure. */
gsl_rng *rng_create(uint64_t seed, enum rng_stream stream);

/* Reseeds r (made by rng_create) to the stream of (seed, stream, key): a pure
 * function of the three, for draws that must not depend on what was drawn
 * before (a MoE iteration's routing, keyed by the iteration's shape). */
void rng_reseed_keyed(gsl_rng *r, uint64_t seed, enum rng_stream stream, uint64_t key);

#endif
