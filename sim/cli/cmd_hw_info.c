/* sim/cli/cmd_hw_info.c: `hw-info` (one GEMM on a hardware model, or with
 * --sweep-batch every node's latency and throughput against batch size:
 * LazyBatching Fig. 3, BatchMaker Fig. 3). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../util/text.h"
#include "../../util/errkind.h"
#include "cli.h"
#include "../study/run_options.h"
#include "../../hwmodels/llm_cost.h"
#include "../../util/json.h"
#include "../../util/options.h"
#include "../../hwmodels/hwmodel.h"
#include "../../hwmodels/gpu_measured.h"
#include "info_common.h"
#include "../../hwmodels/npu_systolic.h"
#include "../../models/model.h"
#include "../../policies/policy.h"
#include "../../policies/router/router.h"
#include "../../traces/workload.h"
#include "../engine/latency.h"

static const struct opt_def hw_info_opts[] = {
	{ "hw", OPT_STR, "npu", 0, 0, 0, "hardware model: npu, an NPU configuration file, or (with --sweep-batch) any --hw" },
	{ "gemm", OPT_STR, NULL, 0, 0, 0, "M,K,N of one GEMM (M x K times K x N)" },
	{ "dataflow", OPT_STR, NULL, 0, 0, 0, "ws | os | is (weight, output or input stationary; default: the hardware's own)" },
	{ "activations", OPT_FLAG, NULL, 0, 0, 0, "both operands are activations (no weight fetch)" },
	{ "model", OPT_STR, NULL, 0, 0, 0, "with --sweep-batch: the model whose nodes are swept" },
	{ "sweep-batch", OPT_FLAG, NULL, 0, 0, 0, "latency and throughput of every node and the whole graph at batch 1, 2, 4, ..." },
	{ "max-batch", OPT_UINT, "1024", 1, 65536, 0, "largest batch of the sweep" },
	{ "node", OPT_STR, NULL, 0, 0, 0, "with --sweep-batch: only this node (and the graph)" },
	{ "input-len", OPT_UINT, NULL, 1, 1e6, 0, "graph encoder steps (default: mean of the model's distribution, rounded)" },
	{ "output-len", OPT_UINT, NULL, 1, 1e6, 0, "graph decoder steps (default: mean of the model's distribution, rounded)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define HW_INFO_NOPTS (sizeof hw_info_opts / sizeof hw_info_opts[0])

/* Throughput stops growing where it first reaches this share of its maximum
 * over the swept batches, 1 .. the sweep's largest: one definition, whose
 * answer depends on that range (a curve still rising past 64 saturates later
 * over 1-1024 than over 1-64), so every place that prints it names the range. */
#define INFO_SATURATION 0.95

static int parse_gemm(const char *text, uint64_t dims[3])
{
	char buf[96];
	if (!text || strlen(text) >= sizeof buf)
		return -1;
	strcpy(buf, text);
	char *save = NULL, *tok = strtok_r(buf, ",", &save);
	for (int i = 0; i < 3; i++, tok = strtok_r(NULL, ",", &save))
		if (!tok || txt_parse_uint(tok, UINT64_MAX, &dims[i]) != 0 || dims[i] == 0)
			return -1;
	return tok ? -1 : 0;
}

/* One curve of the sweep: latency (s) per swept batch, and where its
 * throughput saturates. */
struct info_curve {
	double *seconds;          /* [nb] */
	enum hw_bound *bound;     /* [nb]; graph: unused */
	double max_tput;          /* samples per second */
	uint32_t sat_batch;       /* smallest swept batch within INFO_SATURATION of max_tput */
};

static void info_saturation(struct info_curve *c, const uint32_t *batches, uint32_t nb)
{
	c->max_tput = 0;
	c->sat_batch = batches[0];
	for (uint32_t i = 0; i < nb; i++)
		if (batches[i] / c->seconds[i] > c->max_tput)
			c->max_tput = batches[i] / c->seconds[i];
	for (uint32_t i = 0; i < nb; i++) {
		if (batches[i] / c->seconds[i] >= INFO_SATURATION * c->max_tput) {
			c->sat_batch = batches[i];
			break;
		}
	}
}

static void info_curve_json(const struct info_curve *c, const uint32_t *batches, uint32_t nb, int bounds)
{
	printf("\"latency_ms\":[");
	for (uint32_t i = 0; i < nb; i++)
		printf("%s%.10g", i ? "," : "", c->seconds[i] * 1e3);
	printf("],\"throughput_per_s\":[");
	for (uint32_t i = 0; i < nb; i++)
		printf("%s%.10g", i ? "," : "", batches[i] / c->seconds[i]);
	printf("]");
	if (bounds) {
		printf(",\"bound\":[");
		for (uint32_t i = 0; i < nb; i++)
			printf("%s\"%s\"", i ? "," : "", info_bound(c->bound[i]));
		printf("]");
	}
	printf(",\"max_throughput_per_s\":%.10g,\"saturation_batch\":%u", c->max_tput, c->sat_batch);
}

static void info_curve_text(const struct info_curve *c, const uint32_t *batches, uint32_t nb, int bounds)
{
	printf("  %6s %14s %14s %16s%s\n", "batch", "latency_ms", "ms_per_sample", "throughput_per_s",
	       bounds ? "  bound" : "");
	for (uint32_t i = 0; i < nb; i++) {
		printf("  %6u %14.6f %14.6f %16.1f", batches[i], c->seconds[i] * 1e3,
		       c->seconds[i] * 1e3 / batches[i], batches[i] / c->seconds[i]);
		if (bounds)
			printf("  %s", info_bound(c->bound[i]));
		printf("\n");
	}
	printf("  throughput reaches %.0f%% of its maximum over batches %u-%u (%.1f/s) at batch %u\n",
	       100 * INFO_SATURATION, batches[0], batches[nb - 1], c->max_tput, c->sat_batch);
}

/* hw-info --sweep-batch: LazyBatching Fig. 3 and BatchMaker Fig. 3, per
 * node and for the whole graph (every node at its repeat count, all the
 * batch's requests with the same lengths). */
/* The sweep's curves, the graph's and each node's (or --node's alone), as text or JSON. */
static void info_sweep_print(const struct mdl_model *m, const struct hw_model *hw, const struct info_curve *graph,
                             const struct info_curve *nodes, const uint32_t *batches, uint32_t nb, uint32_t in_len,
                             uint32_t out_len, int only_idx, int json)
{
	const struct npu_config *npu = npu_hw_config(hw);
	if (json) {
		printf("{\"model\":");
		json_write_string(stdout, m->name);
		printf(",\"hw\":");
		json_write_string(stdout, hw->label);
		if (npu)
			printf(",\"dataflow\":\"%s\"", npu_dataflow_name(npu->dataflow));
		printf(",\"input_len\":%u,\"output_len\":%u,\"saturation_share\":%g,\"saturation_max_batch\":%u,"
		       "\"batches\":[", in_len, out_len, INFO_SATURATION, batches[nb - 1]);
		for (uint32_t i = 0; i < nb; i++)
			printf("%s%u", i ? "," : "", batches[i]);
		printf("],\"graph\":{");
		info_curve_json(graph, batches, nb, 0);
		printf("},\"nodes\":[");
		for (uint32_t t = 0, first = 1; t < m->nnodes; t++) {
			if (only_idx >= 0 && (int)t != only_idx)
				continue;
			printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"repeat\":%u,", first ? "" : ",", m->nodes[t].name,
			       mdl_kind_name(m->nodes[t].kind), mdl_node_repeats(m, t, in_len, out_len));
			info_curve_json(&nodes[t], batches, nb, 1);
			printf("}");
			first = 0;
		}
		printf("]}\n");
	} else {
		printf("%s on %s: latency and throughput against batch size\n", m->name, hw->label);
		if (npu) {
			char desc[400];
			npu_config_describe(npu, desc, sizeof desc);
			printf("hardware: %s\n", desc);
		}
		if (m->uses_input_len || m->uses_output_len)
			printf("graph: one request's whole graph (input_len %u, output_len %u), the batch's "
			       "requests run together\n", in_len, out_len);
		else
			printf("graph: one request's whole graph, the batch's requests run together\n");
		info_curve_text(graph, batches, nb, 0);
		for (uint32_t t = 0; t < m->nnodes; t++) {
			if (only_idx >= 0 && (int)t != only_idx)
				continue;
			printf("node %s (%s, %u per request)\n", m->nodes[t].name, mdl_kind_name(m->nodes[t].kind),
			       mdl_node_repeats(m, t, in_len, out_len));
			info_curve_text(&nodes[t], batches, nb, 1);
		}
	}
}

static int info_sweep(const struct opt_set *o, const struct mdl_model *m, const struct hw_model *hw,
                      char *err, size_t errlen)
{
	uint32_t batches[17], nb = 0, in_len, out_len, limit = hw_max_batch(hw);
	uint32_t max_b = (uint32_t)opt_uint(o, "max-batch");
	const char *only = opt_str(o, "node");
	int only_idx = -1, rc = -1, json = opt_flag(o, "json");
	struct info_curve graph = { 0 }, *nodes = NULL;

	if (only && (only_idx = mdl_node_index(m, only)) < 0) {
		snprintf(err, errlen, "--node=%s: model %s has no such node", only, m->name);
		return -1;
	}
	if (info_length(o, "input-len", m->uses_input_len, m->input_len_spec, &in_len, err, errlen) != 0 ||
	    info_length(o, "output-len", m->uses_output_len, m->output_len_spec, &out_len, err, errlen) != 0)
		return -1;
	for (uint32_t b = 1; b <= max_b && (!limit || b <= limit); b *= 2)
		batches[nb++] = b;
	if (nb == 0) {
		snprintf(err, errlen, "hardware %s answers no batch of the sweep", hw->label);
		return -1;
	}
	nodes = calloc(m->nnodes, sizeof *nodes);
	graph.seconds = calloc(nb, sizeof *graph.seconds);
	if (!nodes || !graph.seconds)
		goto oom;
	for (uint32_t t = 0; t < m->nnodes; t++) {
		nodes[t].seconds = calloc(nb, sizeof *nodes[t].seconds);
		nodes[t].bound = calloc(nb, sizeof *nodes[t].bound);
		if (!nodes[t].seconds || !nodes[t].bound)
			goto oom;
		for (uint32_t i = 0; i < nb; i++) {
			struct hw_node_cost c;
			if (hw_node_cost_at(hw, t, batches[i], in_len, &c, err, errlen) != 0)
				goto done;
			if (!(c.seconds > 0) || !isfinite(c.seconds)) {
				snprintf(err, errlen, "hardware %s gave latency %g s for node %s at batch %u",
				         hw->label, c.seconds, m->nodes[t].name, batches[i]);
				goto done;
			}
			nodes[t].seconds[i] = c.seconds;
			nodes[t].bound[i] = c.bound;
			graph.seconds[i] += c.seconds * mdl_node_repeats(m, t, in_len, out_len);
		}
		info_saturation(&nodes[t], batches, nb);
	}
	info_saturation(&graph, batches, nb);

	info_sweep_print(m, hw, &graph, nodes, batches, nb, in_len, out_len, only_idx, json);
	rc = 0;
	goto done;
oom:
	err_memory(err, errlen, "out of memory");
	rc = -2;
done:
	for (uint32_t t = 0; nodes && t < m->nnodes; t++) {
		free(nodes[t].seconds);
		free(nodes[t].bound);
	}
	free(nodes);
	free(graph.seconds);
	return rc;
}

/* hw-info --gemm: one GEMM's cycles. */
static int info_gemm(const struct opt_set *o, const struct hw_model *hw, char *err, size_t errlen)
{
	uint64_t d[3];
	const struct npu_config *npu = npu_hw_config(hw);
	enum hw_dataflow df = npu ? npu->dataflow : HW_DF_WS;
	struct npu_gemm_detail det = { 0 };
	struct hw_gemm_cost c;
	int weights = !opt_flag(o, "activations");

	if (parse_gemm(opt_str(o, "gemm"), d) != 0) {
		snprintf(err, errlen, "--gemm=M,K,N is required, three positive integers (got '%s')",
		         opt_str(o, "gemm") ? opt_str(o, "gemm") : "");
		return -1;
	}
	if (npu) {
		const struct npu_gemm_req r = {
			.m = d[0], .k = d[1], .n = d[2], .steps = 1, .runs = 1, .weight_operand = weights, .df = df,
		};
		if (npu_gemm_runs(npu, &r, &c, &det, err, errlen) != 0)
			return -1;
	} else if (!hw->ops->gemm_cost) {
		snprintf(err, errlen, "hardware %s has no GEMM model (an NPU has one)", hw->label);
		return -1;
	} else if (hw->ops->gemm_cost(hw, d[0], d[1], d[2], df, weights, &c, err, errlen) != 0) {
		return -1;
	}
	if (opt_flag(o, "json")) {
		printf("{\"hw\":");
		json_write_string(stdout, hw->label);
		printf(",\"gemm\":[%llu,%llu,%llu],\"dataflow\":\"%s\",\"cycles\":%llu,"
		       "\"compute_cycles\":%llu,\"memory_cycles\":%llu,\"ms\":%.10g,\"utilization\":%.10g,"
		       "\"bound\":\"%s\"", (unsigned long long)d[0], (unsigned long long)d[1],
		       (unsigned long long)d[2], npu_dataflow_name(df), (unsigned long long)c.cycles,
		       (unsigned long long)c.compute_cycles, (unsigned long long)c.memory_cycles,
		       c.seconds * 1e3, c.utilization, info_bound(c.bound));
		if (npu)
			printf(",\"folds\":%llu,\"stream_cycles\":%llu,\"tiles\":%llu,\"dram_bytes\":%llu,"
			       "\"weights_resident\":%s,\"activations_spill\":%s,\"weight_double_buffer\":%s",
			       (unsigned long long)det.folds, (unsigned long long)det.stream_cycles,
			       (unsigned long long)det.tiles, (unsigned long long)det.dram_bytes,
			       det.weights_resident ? "true" : "false", det.activations_spill ? "true" : "false",
			       npu->weight_double_buffer ? "true" : "false");
		printf("}\n");
		return 0;
	}
	printf("%s: GEMM %llux%llux%llu (%s): %llu cycles (compute %llu, memory %llu), %.6f ms, "
	       "utilization %.1f%%, %s-bound\n", hw->label, (unsigned long long)d[0],
	       (unsigned long long)d[1], (unsigned long long)d[2], npu_dataflow_name(df),
	       (unsigned long long)c.cycles, (unsigned long long)c.compute_cycles,
	       (unsigned long long)c.memory_cycles, c.seconds * 1e3, 100 * c.utilization, info_bound(c.bound));
	if (npu) {
		char desc[400];
		npu_config_describe(npu, desc, sizeof desc);
		printf("  %llu folds streaming %llu rows each; %llu bytes across DRAM (weights %s, "
		       "activations %s)\n  hardware: %s\n", (unsigned long long)det.folds,
		       (unsigned long long)det.stream_cycles, (unsigned long long)det.dram_bytes,
		       !weights ? "none" : det.weights_resident ? "resident" : "streamed",
		       det.activations_spill ? "spill to DRAM" : "on chip", desc);
	}
	return 0;
}

int cmd_hw_info(int argc, char **argv)
{
	char err[512];
	struct opt_set o;
	struct hw_model *hw = NULL;
	struct mdl_model *m = NULL;
	int rc = CLI_BAD_INPUT;
	if (opt_parse(&o, hw_info_opts, HW_INFO_NOPTS, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, "usage: simbatch hw-info --hw=H --gemm=M,K,N [--dataflow=ws|os|is] [--json]\n"
		               "       simbatch hw-info --hw=H --model=M --sweep-batch [--max-batch=B] [--node=NAME] [--json]",
		               hw_info_opts, HW_INFO_NOPTS);
		return CLI_OK;
	}
	int sweep = opt_flag(&o, "sweep-batch");
	if (sweep && opt_given(&o, "gemm")) {
		snprintf(err, sizeof err, "give --gemm=M,K,N or --sweep-batch, not both");
		goto fail;
	}
	if (sweep != opt_given(&o, "model")) {
		snprintf(err, sizeof err, sweep ? "--sweep-batch needs --model=M" : "--model=M goes with --sweep-batch");
		goto fail;
	}
	if (!sweep) {
		static const char *const sweep_only[] = { "max-batch", "node", "input-len", "output-len" };
		for (size_t i = 0; i < sizeof sweep_only / sizeof sweep_only[0]; i++) {
			if (opt_given(&o, sweep_only[i])) {
				snprintf(err, sizeof err, "--%s goes with --sweep-batch", sweep_only[i]);
				goto fail;
			}
		}
	} else if (opt_flag(&o, "activations")) {
		snprintf(err, sizeof err, "--activations goes with --gemm");
		goto fail;
	}
	if (sweep && mdl_load(opt_str(&o, "model"), &m, err, sizeof err) != 0)
		goto fail;
	if (info_open_hw(opt_str(&o, "hw"), m, 1, opt_str(&o, "dataflow"), &hw, err, sizeof err) != 0)
		goto fail;
	int r = sweep ? info_sweep(&o, m, hw, err, sizeof err) : info_gemm(&o, hw, err, sizeof err);
	if (r != 0) {
		rc = r == -2 ? CLI_FAILED : CLI_BAD_INPUT;
		goto fail;
	}
	hw_close(hw);
	mdl_free(m);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	hw_close(hw);
	mdl_free(m);
	return rc;
}
