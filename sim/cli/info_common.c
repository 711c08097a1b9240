/* sim/cli/info_common.c: what model-info and hw-info share (info_common.h). */
#include "info_common.h"

#include <math.h>
#include <stdio.h>
#include "../../hwmodels/npu_systolic.h"
#include "../../traces/workload.h"

/* A length for model-info: the option, else the rounded mean of the model's spec. */
int info_length(const struct opt_set *o, const char *opt, int used, const char *spec,
                uint32_t *out, char *err, size_t errlen)
{
	*out = 0;
	if (!used)
		return 0;
	if (opt_given(o, opt)) {
		*out = (uint32_t)opt_uint(o, opt);
		return 0;
	}
	struct trc_lengths *d;
	if (trc_lengths_parse(spec, &d, err, errlen) != 0)
		return -1;
	double mean = trc_lengths_mean(d);
	trc_lengths_free(d);
	*out = mean < 1 ? 1 : (uint32_t)lround(mean);
	return 0;
}

/* Opens --hw for model m (may be NULL); a --dataflow value (NULL: none)
 * re-creates an NPU with that dataflow, since an instance is read-only. */
int info_open_hw(const char *arg, const struct mdl_model *m, uint32_t tp, const char *dataflow,
                 struct hw_model **out, char *err, size_t errlen)
{
	struct npu_config cfg;
	char label[sizeof ((struct hw_model *)0)->label];
	enum hw_dataflow df;

	*out = NULL;
	if (dataflow && npu_dataflow_parse(dataflow, &df, err, errlen) != 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "%s", err);
		snprintf(err, errlen, "--dataflow: %s", msg);
		return -1;
	}
	if (hw_open_tp(arg, m, tp, out, err, errlen) != 0)
		return -1;
	if (!dataflow)
		return 0;
	if (!npu_hw_config(*out)) {
		snprintf(err, errlen, "--dataflow applies to an NPU; hardware %s has none", (*out)->label);
		hw_close(*out);
		*out = NULL;
		return -1;
	}
	cfg = *npu_hw_config(*out);
	cfg.dataflow = df;
	snprintf(label, sizeof label, "%s", (*out)->label);
	hw_close(*out);
	return npu_hw_create(&cfg, label, m, out, err, errlen);
}

const char *info_bound(enum hw_bound b)
{
	return b == HW_MEMORY_BOUND ? "memory" : "compute";
}
