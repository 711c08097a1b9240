/* sim/study/kernel_profile.c: the live kernels' node latency table, timed on
 * this machine: `live --profile-out` writes it, and --hw=profile (live's
 * default, accepted by run) opens it as a hardware model. Its own file so
 * that run and live each use it without using each other. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kernel_profile.h"
#include "../../util/errkind.h"
#include "../../hwmodels/hwmodel.h"
#include "../../runtime/kernels.h"
#include "../../runtime/profile.h"
#include "../../traces/workload.h"

int live_gemm_kind(const char *s, enum rt_gemm_kind *out, char *err, size_t errlen)
{
	if (strcmp(s, "packed") == 0)
		*out = RT_GEMM_PACKED;
	else if (strcmp(s, "blas") == 0)
		*out = RT_GEMM_BLAS;
	else {
		snprintf(err, errlen, "--gemm=%s: expected packed or blas", s);
		return -1;
	}
	return 0;
}

int live_profile_write(const struct opt_set *o, const struct mdl_model *m, uint32_t maxb, FILE *f,
                              FILE *progress, char *err, size_t errlen)
{
	struct trc_lengths *in = NULL, *out = NULL;
	uint32_t batches[40], nb = 0;
	enum rt_gemm_kind g;
	const char *device = opt_str(o, "device") ? opt_str(o, "device") : "cpu";
	const char *gemm = opt_str(o, "gemm") ? opt_str(o, "gemm") : "packed";
	int rc = -1;

	if (!rt_kernels_find(m, err, errlen) || live_gemm_kind(gemm, &g, err, errlen) != 0 ||
	    !rt_backend_find(device, err, errlen))
		return -1;
	for (uint32_t b = 1; b < maxb && nb < 39; b *= 2)
		batches[nb++] = b;
	batches[nb++] = maxb;
	/* representative lengths: the means of the model's (or the given) distributions */
	const char *ins = opt_str(o, "input-len") ? opt_str(o, "input-len") : m->input_len_spec;
	const char *outs = opt_str(o, "output-len") ? opt_str(o, "output-len") : m->output_len_spec;
	uint32_t in_len = 0, out_len = 0;
	if (m->uses_input_len) {
		if (trc_lengths_parse(ins, &in, err, errlen) != 0)
			goto out;
		in_len = (uint32_t)lround(trc_lengths_mean(in));
	}
	if (m->uses_output_len) {
		if (trc_lengths_parse(outs, &out, err, errlen) != 0)
			goto out;
		out_len = (uint32_t)lround(trc_lengths_mean(out));
	}
	struct rt_profile_config pc = {
		.model = m, .device = device, .gemm = g, .seed = opt_str(o, "seed") ? opt_uint(o, "seed") : 1,
		.batches = batches, .nbatches = nb, .input_len = m->uses_input_len ? (in_len ? in_len : 1) : 0,
		.longest_input = in ? trc_lengths_max(in) : 0,
		.output_len = m->uses_output_len ? (out_len ? out_len : 1) : 0,
		.reps = opt_str(o, "profile-reps") ? (uint32_t)opt_uint(o, "profile-reps") : 11,
		.progress = progress,
	};
	if (m->is_llm) {
		/* prefills up to the token budget, within the context (rt_profile_llm) */
		pc.max_tokens = opt_given(o, "max-batched-tokens") ? (uint32_t)opt_uint(o, "max-batched-tokens")
		                                                   : m->llm.context;
		rc = rt_profile_llm(&pc, f, err, errlen);
	} else {
		rc = rt_profile(&pc, f, err, errlen);
	}
out:
	trc_lengths_free(in);
	trc_lengths_free(out);
	return rc;
}

int live_profile_hw(const struct opt_set *o, const struct mdl_model *m, uint32_t max_batch, struct hw_model **out,
                    char *err, size_t errlen)
{
	char path[64];
	FILE *f = tmpfile();          /* anonymous: gone when closed, whatever happens */
	if (!f) {
		snprintf(err, errlen, "--hw=profile: cannot create a temporary file");
		return -1;
	}
	int rc = live_profile_write(o, m, max_batch, f, NULL, err, errlen);
	if (rc == 0 && fflush(f) != 0) {
		err_io(err, errlen, "--hw=profile: error writing the temporary table");
		rc = -1;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fileno(f));
	if (rc == 0 && (rc = hw_open(path, m, out, err, errlen)) == 0)
		snprintf((*out)->label, sizeof (*out)->label, "profile");
	fclose(f);
	return rc;
}

