/* runtime/kern_registry.c: the list of kernel families, explicit, in the
 * order they are tried; a family uses the helpers of kernels.c, and only
 * this file names the families. */
#include <stdio.h>
#include "kernels.h"

extern const struct rt_model_ops rt_kern_rnn;
extern const struct rt_model_ops rt_kern_transformer;
extern const struct rt_model_ops rt_kern_mlp;
extern const struct rt_model_ops rt_kern_llm;

static const struct rt_model_ops *const kern_families[] = {
	&rt_kern_rnn,
	&rt_kern_transformer,
	&rt_kern_mlp,
	&rt_kern_llm,
};

/* Built-in model files these families run (for the error message; any other
 * file of the same structure runs too). */
#define KERN_LIVE_MODELS "lstm, gru, seq2seq, transformer, transformer-per-token, mlp, llm-tiny"

const struct rt_model_ops *rt_kernels_find(const struct mdl_model *m, char *err, size_t errlen)
{
	char why[4][200];
	_Static_assert(sizeof kern_families / sizeof kern_families[0] == 4, "a reason for each family");
	for (size_t i = 0; i < sizeof kern_families / sizeof kern_families[0]; i++) {
		why[i][0] = '\0';
		if (kern_families[i]->match(m, why[i], sizeof why[i]))
			return kern_families[i];
	}
	snprintf(err, errlen, "model %s has no live kernels (live models: " KERN_LIVE_MODELS
	         "; rnn: %s; transformer: %s; mlp: %s; llm: %s)", m->name, why[0], why[1], why[2], why[3]);
	return NULL;
}
