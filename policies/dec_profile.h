/* policies/dec_profile.h: the decoder steps LazyBatching's Algorithm 1
 * assumes for a request whose output length it cannot know (dec_timesteps,
 * Sec. IV-C), from a profile of output lengths. */
#ifndef SB_DEC_PROFILE_H
#define SB_DEC_PROFILE_H

#include <stddef.h>
#include <stdint.h>

/* The smallest L that at least a coverage fraction (0 < coverage <= 1) of
 * 30,000 draws from the length distribution spec (traces/
 * workload.h's syntax) do not exceed. The draws come from a generator with
 * a fixed seed of its own: a sample kept apart from any run's traffic, and
 * the same for every --seed, as a deployment profiles once. 0, or -1 with
 * one line in err naming --profile-len (a bad spec, no length of 1 or more). */
int dec_profile_timesteps(const char *spec, double coverage, uint32_t *out, char *err, size_t errlen);

#endif
