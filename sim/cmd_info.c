/* sim/cmd_info.c: the inspection subcommands: `list`, `model-info` (a
 * model's per-node latency on a hardware model: the profiled NodeLatency table
 * of LazyBatching Sec. IV-C) and `hw-info` (one GEMM on a hardware model). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "options.h"
#include "../hwmodels/hwmodel.h"
#include "../hwmodels/npu_systolic.h"
#include "../models/model.h"
#include "../policies/policy.h"
#include "../traces/workload.h"

void cli_unknown_policy(const char *name, char *err, size_t errlen)
{
	size_t n, used = 0;
	const struct pol_ops *const *reg = pol_registry(&n);
	used += snprintf(err, errlen, "unknown policy '%s' (known:", name);
	for (size_t i = 0; i < n && used < errlen; i++)
		used += snprintf(err + used, errlen - used, "%s %s", i ? "," : "", reg[i]->name);
	if (used < errlen)
		snprintf(err + used, errlen - used, ")");
}

static void list_model_cb(const char *name, void *ctx)
{
	(void)ctx;
	printf("%s\n", name);
}

int cmd_list(int argc, char **argv)
{
	const char *what = argc >= 2 ? argv[1] : "";
	if (strcmp(what, "policies") == 0) {
		size_t n;
		const struct pol_ops *const *reg = pol_registry(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-10s %s\n", reg[i]->name, reg[i]->help);
		return CLI_OK;
	}
	if (strcmp(what, "models") == 0) {
		if (mdl_list(list_model_cb, NULL) < 0) {
			fprintf(stderr, "simbatch: cannot read the models directory '%s'\n", mdl_dir());
			return CLI_FAILED;
		}
		return CLI_OK;
	}
	if (strcmp(what, "hw") == 0) {
		size_t n;
		const struct hw_ops *const *reg = hw_registry(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-10s %s\n", reg[i]->name, reg[i]->help);
		printf("%-10s %s\n", "FILE", "a node latency table: CSV node,batch,latency_s");
		return CLI_OK;
	}
	if (strcmp(what, "--help") == 0) {
		printf("usage: simbatch list models | policies | hw\n");
		return CLI_OK;
	}
	fprintf(stderr, "simbatch: usage: simbatch list models | policies | hw\n");
	return CLI_BAD_INPUT;
}

static const struct opt_def model_info_opts[] = {
	{ "model", OPT_STR, "transformer", 0, 0, 0, "model name or .model file" },
	{ "hw", OPT_STR, "npu", 0, 0, 0, "hardware model name or node latency table" },
	{ "batch", OPT_UINT, "1", 1, 65536, 0, "batch size" },
	{ "input-len", OPT_UINT, NULL, 1, 1e6, 0, "encoder steps (default: mean of the model's distribution, rounded)" },
	{ "output-len", OPT_UINT, NULL, 1, 1e6, 0, "decoder steps (default: mean of the model's distribution, rounded)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define MODEL_INFO_NOPTS (sizeof model_info_opts / sizeof model_info_opts[0])

/* A length for model-info: the option, else the rounded mean of the model's spec. */
static int info_length(const struct opt_set *o, const char *opt, int used, const char *spec,
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

int cmd_model_info(int argc, char **argv)
{
	char err[512];
	struct opt_set o;
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	int rc = CLI_BAD_INPUT;
	if (opt_parse(&o, model_info_opts, MODEL_INFO_NOPTS, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, "usage: simbatch model-info --model=M --hw=H [--batch=B] [--input-len=L --output-len=L] [--json]",
		               model_info_opts, MODEL_INFO_NOPTS);
		return CLI_OK;
	}
	if (mdl_load(opt_str(&o, "model"), &m, err, sizeof err) != 0 ||
	    hw_open(opt_str(&o, "hw"), m, &hw, err, sizeof err) != 0)
		goto fail;
	uint32_t batch = (uint32_t)opt_uint(&o, "batch"), in_len, out_len;
	if (info_length(&o, "input-len", m->uses_input_len, m->input_len_spec, &in_len, err, sizeof err) != 0 ||
	    info_length(&o, "output-len", m->uses_output_len, m->output_len_spec, &out_len, err, sizeof err) != 0)
		goto fail;
	struct hw_node_cost *costs = calloc(m->nnodes, sizeof *costs);
	if (!costs) {
		snprintf(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	double total_ms = 0;
	for (uint32_t t = 0; t < m->nnodes; t++) {
		if (hw_node_cost(hw, t, batch, &costs[t], err, sizeof err) != 0) {
			free(costs);
			goto fail;
		}
		total_ms += costs[t].seconds * 1e3 * mdl_node_repeats(m, t, in_len, out_len);
	}
	int json = opt_flag(&o, "json");
	if (json) {
		printf("{\"model\":\"%s\",\"hw\":\"%s\",\"batch\":%u,\"input_len\":%u,\"output_len\":%u,"
		       "\"total_ms\":%.10g,\"nodes\":[", m->name, hw->label, batch, in_len, out_len, total_ms);
	} else {
		printf("%s on %s, batch %u, input_len %u, output_len %u\n", m->name, hw->label, batch, in_len, out_len);
		printf("%-28s %-8s %6s %12s %12s %12s  %s\n", "node", "type", "repeat", "ms", "compute_ms",
		       "memory_ms", "bound");
	}
	for (uint32_t t = 0; t < m->nnodes; t++) {
		const struct mdl_node *n = &m->nodes[t];
		const struct hw_node_cost *c = &costs[t];
		uint32_t rep = mdl_node_repeats(m, t, in_len, out_len);
		const char *bound = c->bound == HW_MEMORY_BOUND ? "memory" : "compute";
		if (json) {
			printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"repeat\":%u,\"ms\":%.10g,\"compute_ms\":%.10g,"
			       "\"memory_ms\":%.10g,\"bound\":\"%s\",\"gemms\":[", t ? "," : "", n->name,
			       mdl_kind_name(n->kind), rep, c->seconds * 1e3, c->compute_seconds * 1e3,
			       c->memory_seconds * 1e3, bound);
			for (uint32_t g = 0; g < n->ngemms; g++) {
				const struct mdl_gemm *gm = &n->gemms[g];
				printf("%s{\"m\":%llu,\"k\":%llu,\"n\":%llu,\"count\":%u,\"weights\":%s}", g ? "," : "",
				       (unsigned long long)(gm->m_per_sample * batch), (unsigned long long)gm->k,
				       (unsigned long long)gm->n, gm->count, gm->weight_shared ? "false" : "true");
			}
			printf("]}");
		} else {
			printf("%-28s %-8s %6u %12.6f %12.6f %12.6f  %s\n", n->name, mdl_kind_name(n->kind), rep,
			       c->seconds * 1e3, c->compute_seconds * 1e3, c->memory_seconds * 1e3, bound);
		}
	}
	if (json)
		printf("]}\n");
	else
		printf("total %.6f ms (one request%s)\n", total_ms, batch > 1 ? " batch" : "");
	free(costs);
	hw_close(hw);
	mdl_free(m);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	hw_close(hw);
	mdl_free(m);
	return rc;
}

static const struct opt_def hw_info_opts[] = {
	{ "hw", OPT_STR, "npu", 0, 0, 0, "hardware model with a GEMM model (npu)" },
	{ "gemm", OPT_STR, NULL, 0, 0, 0, "M,K,N of one GEMM (M x K times K x N)" },
	{ "dataflow", OPT_STR, "ws", 0, 0, 0, "ws | os | is (weight, output or input stationary)" },
	{ "activations", OPT_FLAG, NULL, 0, 0, 0, "both operands are activations (no weight fetch)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define HW_INFO_NOPTS (sizeof hw_info_opts / sizeof hw_info_opts[0])

static int parse_gemm(const char *text, uint64_t dims[3])
{
	char buf[96];
	if (!text || strlen(text) >= sizeof buf)
		return -1;
	strcpy(buf, text);
	char *save = NULL, *tok = strtok_r(buf, ",", &save);
	for (int i = 0; i < 3; i++, tok = strtok_r(NULL, ",", &save))
		if (!tok || opt_parse_uint(tok, &dims[i]) != 0 || dims[i] == 0)
			return -1;
	return tok ? -1 : 0;
}

int cmd_hw_info(int argc, char **argv)
{
	char err[512];
	struct opt_set o;
	struct hw_model *hw = NULL;
	if (opt_parse(&o, hw_info_opts, HW_INFO_NOPTS, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, "usage: simbatch hw-info --hw=H --gemm=M,K,N [--dataflow=ws|os|is] [--json]",
		               hw_info_opts, HW_INFO_NOPTS);
		return CLI_OK;
	}
	uint64_t d[3];
	if (parse_gemm(opt_str(&o, "gemm"), d) != 0) {
		snprintf(err, sizeof err, "--gemm=M,K,N is required, three positive integers (got '%s')",
		         opt_str(&o, "gemm") ? opt_str(&o, "gemm") : "");
		goto fail;
	}
	static const char *const df_names[] = { "ws", "os", "is" };
	const char *dfs = opt_str(&o, "dataflow");
	int df = -1;
	for (int i = 0; i < 3; i++)
		if (strcmp(dfs, df_names[i]) == 0)
			df = i;
	if (df < 0) {
		snprintf(err, sizeof err, "--dataflow=%s: expected ws, os or is", dfs);
		goto fail;
	}
	if (hw_open(opt_str(&o, "hw"), NULL, &hw, err, sizeof err) != 0)
		goto fail;
	if (!hw->ops->gemm_cost) {
		snprintf(err, sizeof err, "hardware %s has no GEMM model (only npu has one)", hw->label);
		goto fail;
	}
	struct hw_gemm_cost c;
	if (hw->ops->gemm_cost(hw, d[0], d[1], d[2], (enum hw_dataflow)df, !opt_flag(&o, "activations"),
	                       &c, err, sizeof err) != 0)
		goto fail;
	const char *bound = c.bound == HW_MEMORY_BOUND ? "memory" : "compute";
	if (opt_flag(&o, "json"))
		printf("{\"hw\":\"%s\",\"gemm\":[%llu,%llu,%llu],\"dataflow\":\"%s\",\"cycles\":%llu,"
		       "\"compute_cycles\":%llu,\"memory_cycles\":%llu,\"ms\":%.10g,\"utilization\":%.10g,"
		       "\"bound\":\"%s\"}\n", hw->label, (unsigned long long)d[0], (unsigned long long)d[1],
		       (unsigned long long)d[2], df_names[df], (unsigned long long)c.cycles,
		       (unsigned long long)c.compute_cycles, (unsigned long long)c.memory_cycles,
		       c.seconds * 1e3, c.utilization, bound);
	else
		printf("%s: GEMM %llux%llux%llu (%s): %llu cycles (compute %llu, memory %llu), %.6f ms, "
		       "utilization %.1f%%, %s-bound\n", hw->label, (unsigned long long)d[0],
		       (unsigned long long)d[1], (unsigned long long)d[2], df_names[df],
		       (unsigned long long)c.cycles, (unsigned long long)c.compute_cycles,
		       (unsigned long long)c.memory_cycles, c.seconds * 1e3, 100 * c.utilization, bound);
	hw_close(hw);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	hw_close(hw);
	return CLI_BAD_INPUT;
}
