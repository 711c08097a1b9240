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
};

/* A mt19937 generator (util/mt19937.h: gsl_rng_mt19937's numbers) seeded from (run seed, stream). NULL on allocation failure. */
gsl_rng *rng_create(uint64_t seed, enum rng_stream stream);

#endif
