/* util/rng.c: derives one independent-looking seed per stream from the run
 * seed with splitmix64 (a bijective mixer), so seeds 1 and 2 do not give
 * overlapping streams the way seed and seed+1 of a plain counter might. */
#include "rng.h"
#include "mt19937.h"

static uint64_t rng_splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

gsl_rng *rng_create(uint64_t seed, enum rng_stream stream)
{
	gsl_rng *r = gsl_rng_alloc(mt19937_type);
	if (!r)
		return NULL;
	/* mt19937 uses 32 bits of its seed and maps 0 to its default seed:
	 * keep the value non-zero so every run seed gives its own stream. */
	uint64_t mixed = rng_splitmix64(rng_splitmix64(seed) ^ (uint64_t)stream);
	unsigned long s = (unsigned long)(mixed & 0xffffffffUL);
	gsl_rng_set(r, s ? s : 1UL);
	return r;
}

void rng_reseed_keyed(gsl_rng *r, uint64_t seed, enum rng_stream stream, uint64_t key)
{
	uint64_t mixed = rng_splitmix64(rng_splitmix64(rng_splitmix64(seed) ^ (uint64_t)stream) ^ key);
	unsigned long s = (unsigned long)(mixed & 0xffffffffUL);
	gsl_rng_set(r, s ? s : 1UL);
}
