/* util/mt19937.h: the Mersenne Twister MT19937 (Matsumoto and Nishimura,
 * ACM TOMACS 8(1), 1998, with their 2002 initialisation) as a GSL generator
 * type, for the run's random streams (util/rng.h).
 *
 * Why not gsl_rng_mt19937 itself: its state update decides each word's
 * twist with a branch on a random bit, which the CPU mispredicts half the
 * time; this one applies the twist with a mask, a loop the compiler
 * vectorizes. A 10M-request serial run draws 10M uniforms, and the two
 * differ by about 4 ns a draw (bench/README.md).
 *
 * Contract: for every seed, everything drawn through a generator of this
 * type (gsl_rng_get, gsl_rng_uniform, gsl_rng_uniform_int, gsl_ran_*) is the
 * number gsl_rng_mt19937 gives for that seed, in the same order (seed 0 is
 * 4357 as in GSL; 32 bits of a seed are used). tests/test_rng.c holds it to
 * GSL's own generator across several state updates and seeds.
 */
#ifndef SB_UTIL_MT19937_H
#define SB_UTIL_MT19937_H

#include <gsl/gsl_rng.h>

extern const gsl_rng_type *const mt19937_type;

#endif
