/* policies/dec_profile.c: LazyBatching's dec_timesteps from a profile of
 * output lengths (dec_profile.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <gsl/gsl_rng.h>
#include "dec_profile.h"
#include "../util/errkind.h"
#include "../traces/workload.h"

/* LazyBatching's dec_timesteps (Sec. IV-C): the --coverage quantile of a
 * profile of output lengths, standing in for the training set the paper
 * characterizes (30000 WMT sentence pairs, Fig. 11). The profile is
 * DEC_PROFILE_DRAWS draws from --profile-len (default: the model's own
 * distribution) by a generator with a fixed seed of its own: a sample kept
 * apart from the traffic, and the same for every --seed, as a deployment
 * profiles once. The result is the smallest L that at least a coverage
 * fraction of the draws do not exceed. */
#define DEC_PROFILE_DRAWS 30000
#define DEC_PROFILE_SEED 30000u

int dec_profile_timesteps(const char *spec, double coverage, uint32_t *out, char *err, size_t errlen)
{
	struct trc_lengths *d = NULL;
	char why[400];
	*out = 0;
	if (trc_lengths_parse(spec, &d, why, sizeof why) != 0) {
		snprintf(err, errlen, "--profile-len: %s", why);
		return -1;
	}
	gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
	uint32_t *v = malloc(DEC_PROFILE_DRAWS * sizeof *v);
	if (!g || !v) {
		err_memory(err, errlen, "out of memory profiling output lengths");
		goto done;
	}
	gsl_rng_set(g, DEC_PROFILE_SEED);
	uint32_t hist_max = 0;
	for (size_t i = 0; i < DEC_PROFILE_DRAWS; i++) {
		v[i] = trc_lengths_draw(d, g);
		if (v[i] > hist_max)
			hist_max = v[i];
	}
	/* counting select: the k-th smallest draw, k = ceil(coverage * N) */
	size_t k = (size_t)ceil(coverage * DEC_PROFILE_DRAWS - 1e-9);
	if (k < 1)
		k = 1;
	if (k > DEC_PROFILE_DRAWS)
		k = DEC_PROFILE_DRAWS;
	size_t *count = calloc((size_t)hist_max + 1, sizeof *count);
	if (!count) {
		err_memory(err, errlen, "out of memory profiling output lengths");
		goto done;
	}
	for (size_t i = 0; i < DEC_PROFILE_DRAWS; i++)
		count[v[i]]++;
	size_t seen = 0;
	for (uint32_t L = 0; L <= hist_max; L++) {
		seen += count[L];
		if (seen >= k) {
			*out = L;
			break;
		}
	}
	free(count);
	if (*out == 0)
		snprintf(err, errlen, "--profile-len=%s: the profile needs output lengths of at least 1", spec);
done:
	free(v);
	if (g)
		gsl_rng_free(g);
	trc_lengths_free(d);
	return *out ? 0 : -1;
}

