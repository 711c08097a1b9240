/* util/mt19937.c: MT19937 as a GSL generator type (mt19937.h). The
 * recurrence and tempering constants are the published algorithm's. */
#include "mt19937.h"

#include <stdint.h>

#define MT_N 624                   /* state words */
#define MT_M 397                   /* the recurrence's middle offset */
#define MT_MATRIX_A 0x9908b0dfu    /* the twist's xor, applied when the word's low bit is set */
#define MT_DEFAULT_SEED 4357u      /* what seed 0 means (GSL's convention) */

struct mt_state {
	uint32_t word[MT_N];
	unsigned next;             /* the next word to temper; MT_N: update the state first */
};

/* The upper bit of a and the lower 31 of b, shifted and twisted; the
 * twist's xor is selected by a mask made from the low bit, not a branch. */
static inline uint32_t mt_twist(uint32_t a, uint32_t b)
{
	uint32_t y = (a & 0x80000000u) | (b & 0x7fffffffu);
	return (y >> 1) ^ (-(y & 1u) & MT_MATRIX_A);
}

/* All MT_N words at once, in the reference order: word k from words k,
 * k + 1 and k + M (mod N), the last ones from words already updated. */
static void mt_update(uint32_t *w)
{
	unsigned k = 0;
	for (; k < MT_N - MT_M; k++)
		w[k] = w[k + MT_M] ^ mt_twist(w[k], w[k + 1]);
	for (; k < MT_N - 1; k++)
		w[k] = w[k + MT_M - MT_N] ^ mt_twist(w[k], w[k + 1]);
	w[MT_N - 1] = w[MT_M - 1] ^ mt_twist(w[MT_N - 1], w[0]);
}

static void mt_set(void *vs, unsigned long seed)
{
	struct mt_state *s = vs;
	if (seed == 0)
		seed = MT_DEFAULT_SEED;
	s->word[0] = (uint32_t)seed;
	/* Knuth's multiplier (TAOCP vol. 2, 3rd ed., p. 106), as the 2002 reference initialises */
	for (uint32_t i = 1; i < MT_N; i++)
		s->word[i] = 1812433253u * (s->word[i - 1] ^ (s->word[i - 1] >> 30)) + i;
	s->next = MT_N;
}

static inline uint32_t mt_next(struct mt_state *s)
{
	if (s->next >= MT_N) {
		mt_update(s->word);
		s->next = 0;
	}
	uint32_t y = s->word[s->next++];
	y ^= y >> 11;
	y ^= (y << 7) & 0x9d2c5680u;
	y ^= (y << 15) & 0xefc60000u;
	y ^= y >> 18;
	return y;
}

static unsigned long mt_get(void *vs)
{
	return mt_next(vs);
}

/* [0, 1) in steps of 2^-32, as GSL's mt19937 gives it */
static double mt_get_double(void *vs)
{
	return mt_next(vs) / 4294967296.0;
}

static const gsl_rng_type mt_type = {
	.name = "mt19937",
	.max = 0xffffffffUL,
	.min = 0,
	.size = sizeof(struct mt_state),
	.set = mt_set,
	.get = mt_get,
	.get_double = mt_get_double,
};

const gsl_rng_type *const mt19937_type = &mt_type;
