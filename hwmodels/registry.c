/* hwmodels/registry.c: resolves --hw=ARG to a timing model (DESIGN.md
 * sections 3-4): a registered name ("npu", LazyBatching Table I), or a path to
 * a file whose first line says what it is (a node latency table). The list of
 * named models lives here and nowhere else.
 */
#include "hwmodel.h"
#include "../util/errkind.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrated.h"
#include "gpu_measured.h"
#include "npu_config.h"
#include "npu_systolic.h"
#include "node_table.h"
#include "llm_iter.h"
#include "roofline.h"

/* Models opened by name, gathered the first time the registry is used: these,
 * with every measured GPU (one row each, gpu_memory.c) after the roofline.
 * File-based models (the table) are not listed: they are found by sniffing the
 * file, never by name. */
enum { HW_NAMED_MAX = 48 };
static const struct hw_ops *hw_named[HW_NAMED_MAX];
static size_t hw_named_count;

static void hw_named_add(const struct hw_ops *ops)
{
	if (hw_named_count == HW_NAMED_MAX) {
		fprintf(stderr, "simbatch: more than %d hardware models (hwmodels/registry.c)\n", HW_NAMED_MAX);
		abort();
	}
	hw_named[hw_named_count++] = ops;
}

/* Two models of one name would make --hw ambiguous: the program refuses to
 * go on the first time the registry is used (a mistake in this file). */
static void hw_registry_check(void)
{
	static int checked;
	if (checked)
		return;
	size_t ngpus;
	const struct hw_ops *gpus = gpu_measured_named(&ngpus);
	hw_named_add(&npu_hw_ops);
	hw_named_add(&roofline_h100_ops);
	for (size_t i = 0; i < ngpus; i++)
		hw_named_add(&gpus[i]);
	hw_named_add(&calhw_cpu_ops);
	hw_named_add(&calhw_gpu_ops);   /* listed as gpu-NAME; matched by prefix in hw_open */
	for (size_t i = 0; i < hw_named_count; i++)
		for (size_t j = i + 1; j < hw_named_count; j++)
			if (strcmp(hw_named[i]->name, hw_named[j]->name) == 0) {
				fprintf(stderr, "simbatch: two hardware models are named '%s' (hwmodels/registry.c)\n",
				        hw_named[i]->name);
				abort();
			}
	checked = 1;
}

const struct hw_ops *const *hw_registry(size_t *count)
{
	hw_registry_check();
	*count = hw_named_count;
	return hw_named;
}

static void hw_unknown(const char *arg, char *err, size_t errlen)
{
	char known[256] = "";
	size_t used = 0;

	for (size_t i = 0; i < hw_named_count && used < sizeof known; i++)
		used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "",
		                         hw_named[i]->name);
	snprintf(err, errlen, "unknown hardware '%s' (known: %s; or a path to a node latency table)",
	         arg, known);
}

/* Opens arg with ops at tp GPUs: open, or open_tp for tensor parallelism. */
static int hw_open_with(const struct hw_ops *ops, const char *arg, const struct mdl_model *m, uint32_t tp,
                        struct hw_model **out, char *err, size_t errlen)
{
	if (tp == 1)
		return ops->open(arg, m, out, err, errlen);
	if (!ops->open_tp) {
		char known[256] = "";   /* the named models that take --tp: the measured GPUs */
		size_t used = 0;
		for (size_t i = 0; i < hw_named_count && used < sizeof known; i++)
			if (hw_named[i]->open_tp)
				used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "",
				                         hw_named[i]->name);
		snprintf(err, errlen, "--tp=%u: hw %s models one device; tensor parallelism needs a measured GPU "
		         "(%s or an operator profile file)", tp, arg, known);
		return -1;
	}
	return ops->open_tp(arg, m, tp, out, err, errlen);
}

int hw_set_engine(struct hw_model *hw, const struct eng_profile *e, uint32_t max_seqs, uint32_t max_batched_tokens,
                  char *err, size_t errlen)
{
	if (!e)
		return 0;
	if (!hw->ops->set_engine) {
		snprintf(err, errlen, "--engine prices an LLM's iterations on a measured GPU (gpu-h100, gpu-a100, gpu-a40 or "
		         "an operator profile file); hw %s is not one", hw->label);
		return -1;
	}
	return hw->ops->set_engine(hw, e, max_seqs, max_batched_tokens, err, errlen);
}

int hw_open(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	return hw_open_tp(arg, m, 1, out, err, errlen);
}

/* The registered hardware arg names, or NULL (a file, or nothing). */
static const struct hw_ops *hw_named_ops(const char *arg)
{
	for (size_t i = 0; i < hw_named_count; i++)
		if (strcmp(arg, hw_named[i]->name) == 0)
			return hw_named[i];
	return calhw_is_gpu_name(arg) ? &calhw_gpu_ops : NULL;
}

/* A file's hardware path: -1 with err when nothing readable is there. */
static int hw_path_there(const char *arg, struct stat *st, char *err, size_t errlen)
{
	if (stat(arg, st) == 0)
		return 0;
	if (errno == ENOENT || errno == ENOTDIR)
		hw_unknown(arg, err, errlen);
	else
		snprintf(err, errlen, "%s: cannot read: %s", arg, err_strerror(errno));
	return -1;
}

int hw_exists(const char *arg, char *err, size_t errlen)
{
	struct stat st;
	hw_registry_check();
	if (!arg || !*arg) {
		hw_unknown("", err, errlen);
		return -1;
	}
	const struct hw_ops *named = hw_named_ops(arg);
	char path[1024];
	if (named == &calhw_gpu_ops)              /* gpu-NAME: known when its measured table is there */
		return calhw_table_there(arg, path, sizeof path, err, errlen);
	return named ? 0 : hw_path_there(arg, &st, err, errlen);
}

int hw_open_tp(const char *arg, const struct mdl_model *m, uint32_t tp, struct hw_model **out, char *err,
               size_t errlen)
{
	hw_registry_check();
	struct stat st;
	unsigned long line;
	int rc;

	*out = NULL;
	if (!arg || !*arg) {
		hw_unknown("", err, errlen);
		return -1;
	}
	const struct hw_ops *named = hw_named_ops(arg);
	if (named)
		return hw_open_with(named, arg, m, tp, out, err, errlen);
	if (hw_path_there(arg, &st, err, errlen) != 0)
		return -1;
	/* the file is read twice (sniff, then parse), which a pipe cannot do */
	if (!S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", arg);
		return -1;
	}
	rc = opp_sniff(arg, err, errlen);          /* "# simbatch llm operator profile": a measured GPU */
	if (rc != 0)
		return rc < 0 ? -1 : hw_open_with(&gpu_file_ops, arg, m, tp, out, err, errlen);
	if (tp != 1)
		return hw_open_with(&calhw_file_ops, arg, m, tp, out, err, errlen);   /* refused: one device */
	rc = caltab_sniff(arg, err, errlen);
	if (rc != 0)
		return rc < 0 ? -1 : calhw_file_ops.open(arg, m, out, err, errlen);
	rc = llm_iter_sniff(arg, err, errlen);     /* "kind = llm_iter": a measured LLM iteration model */
	if (rc != 0)
		return rc < 0 ? -1 : llm_iter_ops.open(arg, m, out, err, errlen);
	rc = npu_config_sniff(arg, err, errlen);   /* "kind = npu": an NPU configuration */
	if (rc != 0)
		return rc < 0 ? -1 : npu_config_open(arg, m, out, err, errlen);
	rc = hwtable_sniff(arg, &line, err, errlen);
	if (rc < 0)
		return -1;
	if (rc == 0) {
		if (line)
			snprintf(err, errlen, "%s:%lu: not a simbatch hardware file: expected header %s (or kind = npu)",
			         arg, line, HWTABLE_HEADER);
		else
			snprintf(err, errlen, "%s: not a simbatch hardware file: expected header %s (or kind = npu)",
			         arg, HWTABLE_HEADER);
		return -1;
	}
	return hwtable_ops.open(arg, m, out, err, errlen);
}
