/* sim/cli/cmd_info.c: `model-info` (a model's per-node latency on a hardware
 * model: the profiled NodeLatency table of LazyBatching Sec. IV-C, with each
 * node's GEMMs on an NPU); `hw-info` is cmd_hw_info.c. */
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
#include "info_gpu.h"
#include "info_common.h"
#include "../../hwmodels/npu_systolic.h"
#include "../../models/model.h"
#include "../../policies/policy.h"
#include "../../policies/router/router.h"
#include "../../traces/workload.h"
#include "../engine/latency.h"

static const struct opt_def model_info_opts[] = {
	{ "model", OPT_STR, "transformer", 0, 0, 0, "model name or .model file" },
	{ "hw", OPT_STR, "npu", 0, 0, 0, "hardware model name, NPU configuration or node latency table (an LLM's "
	  "default: gpu-h100)" },
	{ "tp", OPT_UINT, "1", 1, 8, 0, "LLM: GPUs in tensor parallelism (1, 2, 4 or 8; a measured GPU)" },
	{ "batch", OPT_UINT, "1", 1, 65536, 0, "batch size" },
	{ "input-len", OPT_UINT, NULL, 1, 1e6, 0, "encoder steps (default: mean of the model's distribution, rounded)" },
	{ "output-len", OPT_UINT, NULL, 1, 1e6, 0, "decoder steps (default: mean of the model's distribution, rounded)" },
	{ "dataflow", OPT_STR, NULL, 0, 0, 0, "ws | os | is: the NPU's dataflow (default: the hardware's own)" },
	{ "gemms", OPT_FLAG, NULL, 0, 0, 0, "text: also list each node's GEMMs (convolutions lowered by im2col) with their cycles" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define MODEL_INFO_NOPTS (sizeof model_info_opts / sizeof model_info_opts[0])

/* One GEMM term of a node at `batch`: its shape as run and, on an NPU
 * (terms != NULL), its cost. */
static void info_gemm_json(const struct mdl_gemm *g, uint32_t batch, const struct npu_term_cost *t)
{
	uint64_t m = g->weight_shared ? g->m_per_sample : g->m_per_sample * batch;
	uint64_t runs = g->weight_shared ? (uint64_t)g->count * batch : g->count;

	printf("{\"m\":%llu,\"k\":%llu,\"n\":%llu,\"count\":%u,\"runs\":%llu,\"steps\":%u,\"weights\":%s",
	       (unsigned long long)m, (unsigned long long)g->k, (unsigned long long)g->n, g->count,
	       (unsigned long long)runs, mdl_gemm_steps(g), g->weight_shared ? "false" : "true");
	if (g->is_conv) {
		const struct mdl_conv *c = &g->conv;
		printf(",\"conv\":{\"h\":%u,\"w\":%u,\"c\":%u,\"r\":%u,\"s\":%u,\"k\":%u,\"stride\":[%u,%u],"
		       "\"pad\":[%u,%u],\"groups\":%u,\"out\":[%u,%u]}", c->h, c->w, c->c, c->r, c->s, c->k,
		       c->stride_h, c->stride_w, c->pad_h, c->pad_w, c->groups, c->out_h, c->out_w);
	}
	if (t)
		printf(",\"cycles\":%llu,\"compute_cycles\":%llu,\"memory_cycles\":%llu,\"ms\":%.10g,"
		       "\"utilization\":%.10g,\"bound\":\"%s\",\"folds\":%llu,\"dram_bytes\":%llu",
		       (unsigned long long)t->cost.cycles, (unsigned long long)t->cost.compute_cycles,
		       (unsigned long long)t->cost.memory_cycles, t->cost.seconds * 1e3, t->cost.utilization,
		       info_bound(t->cost.bound), (unsigned long long)t->detail.folds,
		       (unsigned long long)t->detail.dram_bytes);
	putchar('}');
}

static void info_gemm_text(const struct mdl_gemm *g, uint32_t batch, const struct npu_term_cost *t)
{
	uint64_t m = g->weight_shared ? g->m_per_sample : g->m_per_sample * batch;
	uint64_t runs = g->weight_shared ? (uint64_t)g->count * batch : g->count;
	char shape[64], k[24], n[24];
	/* a decoder term over P or S shows which, at the estimate length */
	const char *var = g->len_var == MDL_VAR_P ? "P=" : g->len_var == MDL_VAR_S ? "S=" : "";
	snprintf(k, sizeof k, "%s%llu", g->len_dims & MDL_LEN_K ? var : "", (unsigned long long)g->k);
	snprintf(n, sizeof n, "%s%llu", g->len_dims & MDL_LEN_N ? var : "", (unsigned long long)g->n);
	snprintf(shape, sizeof shape, "%llux%sx%s", (unsigned long long)m, k, n);
	printf("    %-4s %-20s x%-5llu", g->weight_shared ? "attn" : g->is_conv ? "conv" : "gemm", shape,
	       (unsigned long long)runs);
	if (mdl_gemm_steps(g) > 1)
		printf(" steps %u", mdl_gemm_steps(g));
	if (t)
		printf(" %10llu cycles (compute %llu, memory %llu) util %5.1f%% %s-bound",
		       (unsigned long long)t->cost.cycles, (unsigned long long)t->cost.compute_cycles,
		       (unsigned long long)t->cost.memory_cycles, 100 * t->cost.utilization,
		       info_bound(t->cost.bound));
	printf("\n");
	if (g->is_conv) {
		const struct mdl_conv *c = &g->conv;
		printf("         im2col of conv %ux%ux%u, %ux%u filter -> %u channels, stride %ux%u, pad %ux%u",
		       c->h, c->w, c->c, c->r, c->s, c->k, c->stride_h, c->stride_w, c->pad_h, c->pad_w);
		if (c->groups > 1)
			printf(", %u groups", c->groups);
		printf(": M = %ux%u outputs%s, K = %u*%u*%u, N = %u\n", c->out_h, c->out_w,
		       batch > 1 ? " per sample" : "", c->c / c->groups, c->r, c->s, c->k / c->groups);
	}
}

/* The node as --gemms lists it at a batch: a pass node's GEMMs as requests
 * of in_len tokens run them (its weight GEMMs' M per request the tokens;
 * its attention L x d x L, one run a request a head; the cycles shown for
 * the batch's attention chain all of it, where the simulator charges each
 * request's on its own). */
static void info_shown_node(const struct mdl_model *m, uint32_t t, uint32_t in_len, struct mdl_node *out)
{
	*out = m->nodes[t];
	if (!mdl_is_pass(m, t))
		return;
	struct mdl_node own;
	mdl_member_node(&m->nodes[t], in_len, &own);
	for (uint32_t g = 0; g < out->ngemms; g++)
		out->gemms[g].m_per_sample *= in_len;
	for (uint32_t g = 0; g < own.ngemms && out->ngemms < MDL_MAX_GEMMS; g++)
		out->gemms[out->ngemms++] = own.gemms[g];
	out->nmember = 0;
}

/* The batch's graph as the simulator charges it as one task (eng_latency_graph_ns): for decoder nodes
 * over P and S, step p at P = p and S = in_len, in place of the rows' sum at the estimate lengths; on
 * hardware with a task overhead, that overhead once. */
static int info_graph_ms(const struct mdl_model *m, const struct hw_model *hw, uint32_t batch, uint32_t in_len,
                         uint32_t out_len, double *total_ms, char *err, size_t errlen)
{
	struct eng_latency *l = eng_latency_create(m, hw, batch, in_len, out_len, err, errlen);
	if (!l)
		return -1;
	*total_ms = (double)eng_latency_graph_ns(l, batch, in_len, out_len) * 1e-6;
	eng_latency_destroy(l);
	return 0;
}

/* model-info --json's first members, the same for every model. */
static void info_json_head(const struct mdl_model *m, const struct hw_model *hw, uint32_t batch, uint32_t in_len,
                           uint32_t out_len, double total_ms)
{
	printf("{\"model\":");
	json_write_string(stdout, m->name);
	printf(",\"hw\":");
	json_write_string(stdout, hw->label);
	printf(",\"batch\":%u,\"input_len\":%u,\"output_len\":%u,\"total_ms\":%.10g", batch, in_len, out_len, total_ms);
}

/* model-info for an LLM: its architecture, what it holds in memory, and
 * what batch requests of in_len prompt and out_len output tokens cost on hw
 * run together: one prefill, then a decode step per further token with the
 * cache growing (hwmodels/llm_cost.h). */
static int info_llm(const struct mdl_model *m, const struct hw_model *hw, uint32_t batch, uint32_t in_len,
                    uint32_t out_len, int json, char *err, size_t errlen)
{
	const struct mdl_llm *l = &m->llm;
	struct llm_cost *c = NULL;
	uint32_t *tokens = calloc(batch, sizeof *tokens), *context = calloc(batch, sizeof *context);
	int rc = -1;
	if (!tokens || !context) {
		err_memory(err, errlen, "out of memory");
		goto done;
	}
	if (llm_cost_create(hw, m, 0, &c, err, errlen) != 0)
		goto done;
	for (uint32_t i = 0; i < batch; i++)
		tokens[i] = in_len;
	const struct gpu_measured_info *gpu = gpu_measured_info(hw);
	struct gpu_iter_parts parts[2];
	if (gpu)
		gpu_measured_iter_parts(hw, batch, tokens, context, batch, 0, &parts[0]);
	int64_t prefill = llm_cost_iter_ns(c, batch, tokens, context, batch, 0, err, errlen), decodes = 0, first = -1;
	if (prefill < 0)
		goto done;
	for (uint32_t k = 1; k < out_len; k++) {
		for (uint32_t i = 0; i < batch; i++) {
			tokens[i] = 1;
			context[i] = in_len + k - 1;
		}
		int64_t ns = llm_cost_iter_ns(c, batch, tokens, context, batch, 0, err, errlen);
		if (ns < 0)
			goto done;
		if (first < 0 && gpu)
			gpu_measured_iter_parts(hw, batch, tokens, context, batch, 0, &parts[1]);
		first = first < 0 ? ns : first;
		decodes += ns;
	}
	char blocks_err[256];
	uint64_t blocks = llm_cost_kv_blocks(c, 16, blocks_err, sizeof blocks_err);
	double total_ms = (prefill + decodes) * 1e-6;
	if (json) {
		info_json_head(m, hw, batch, in_len, out_len, total_ms);
		printf(",\"nodes\":[],\"llm\":{\"layers\":%u,\"hidden\":%u,\"heads\":%u,\"kv_heads\":%u,\"head_dim\":%u,\"ffn\":%u,"
		       "\"vocab\":%u,\"context\":%u,\"bytes\":%u,\"gated\":%s,\"weight_bytes\":%llu,\"kv_bytes_per_token\":%llu,"
		       "\"prefill_ms\":%.10g,\"first_decode_ms\":%.10g,\"kv_blocks_of_16\":%llu}",
		       l->layers, l->hidden, l->heads, l->kv_heads, l->head_dim, l->ffn, l->vocab, l->context,
		       l->elem_bytes, l->gated ? "true" : "false", (unsigned long long)mdl_llm_weight_bytes(l),
		       (unsigned long long)mdl_llm_kv_bytes_per_token(l), prefill * 1e-6, first > 0 ? first * 1e-6 : 0.0,
		       (unsigned long long)blocks);
		info_gpu_memory(hw, l, blocks, 1);
		if (gpu) {
			if (first < 0)
				parts[1] = (struct gpu_iter_parts){ 0 };
			info_gpu_measured(gpu, &parts[0], &parts[1], 1);
		}
		printf("}\n");
	} else {
		printf("%s on %s: an LLM of %u layers, d_model %u, %u heads of %u (%u KV heads), %s MLP %u, vocab %u, "
		       "context %u, %u-byte elements\n", m->name, hw->label, l->layers, l->hidden, l->heads, l->head_dim,
		       l->kv_heads, l->gated ? "gated" : "plain", l->ffn, l->vocab, l->context, l->elem_bytes);
		if (l->moe.experts)   /* a mixture of experts: the moe line (the dense MLP above only where not MoE) */
			printf("a mixture of experts in %u of its layers: %u experts of gated MLP %u, %u a token, %u shared, "
			       "router %s; weights %s, KV cache %s\n", mdl_llm_moe_layers(l), l->moe.experts, l->moe.expert_ffn,
			       l->moe.top_k, l->moe.shared_experts, mdl_router_name(l->moe.router), mdl_dtype_name(l->dtype),
			       mdl_dtype_name(l->kv_dtype));
		printf("weights %.3f GB; KV cache %llu bytes a token", mdl_llm_weight_bytes(l) * 1e-9,
		       (unsigned long long)mdl_llm_kv_bytes_per_token(l));
		if (blocks)
			printf("; the device holds %llu blocks of 16 tokens (%llu tokens)\n", (unsigned long long)blocks,
			       (unsigned long long)blocks * 16);
		else
			printf("; %s\n", blocks_err);
		info_gpu_memory(hw, l, blocks, 0);
		printf("%u request%s of %u prompt and %u output tokens together: prefill %.6f ms, first decode step %.6f ms, "
		       "all %.6f ms\n", batch, batch == 1 ? "" : "s", in_len, out_len, prefill * 1e-6,
		       first > 0 ? first * 1e-6 : 0.0, total_ms);
		if (gpu) {
			if (first < 0)
				parts[1] = (struct gpu_iter_parts){ 0 };
			info_gpu_measured(gpu, &parts[0], &parts[1], 0);
		}
	}
	rc = 0;
done:
	llm_cost_destroy(c);
	free(tokens);
	free(context);
	return rc;
}

/* model-info's table: a row a node (its GEMMs too with --gemms), then the total; text or JSON. */
static void info_print_nodes(const struct mdl_model *m, const struct hw_model *hw, const struct hw_node_cost *costs,
                             const struct npu_term_cost *terms, uint32_t batch, uint32_t in_len, uint32_t out_len,
                             double total_ms, int json, int gemms)
{
	const struct npu_config *npu = npu_hw_config(hw);
	if (json) {
		info_json_head(m, hw, batch, in_len, out_len, total_ms);
		if (npu)
			printf(",\"dataflow\":\"%s\"", npu_dataflow_name(npu->dataflow));
		printf(",\"nodes\":[");
	} else {
		printf("%s on %s, batch %u, input_len %u, output_len %u\n", m->name, hw->label, batch, in_len, out_len);
		if (npu) {
			char desc[400];
			npu_config_describe(npu, desc, sizeof desc);
			printf("hardware: %s\n", desc);
		}
		if (m->has_step_terms)
			printf("decoder nodes over P and S (*): their rows at the estimate lengths P=%u S=%u; the total runs "
			       "step p at P=p and S=input_len\n", m->estimate_p, m->estimate_s);
		printf("%-28s %-8s %6s %12s %12s %12s  %s\n", "node", "type", "repeat", "ms", "compute_ms",
		       "memory_ms", "bound");
	}
	for (uint32_t t = 0; t < m->nnodes; t++) {
		struct mdl_node shown;
		info_shown_node(m, t, in_len, &shown);
		const struct mdl_node *n = &shown;
		const struct hw_node_cost *c = &costs[t];
		const struct npu_term_cost *nt = npu ? &terms[(size_t)t * MDL_MAX_GEMMS] : NULL;
		uint32_t rep = mdl_node_repeats(m, t, in_len, out_len);
		if (json) {
			printf("%s{\"name\":\"%s\",\"type\":\"%s\",\"repeat\":%u,\"ms\":%.10g,\"compute_ms\":%.10g,"
			       "\"memory_ms\":%.10g,\"bound\":\"%s\",\"gemms\":[", t ? "," : "", n->name,
			       mdl_kind_name(n->kind), rep, c->seconds * 1e3, c->compute_seconds * 1e3,
			       c->memory_seconds * 1e3, info_bound(c->bound));
			for (uint32_t g = 0; g < n->ngemms; g++) {
				printf("%s", g ? "," : "");
				info_gemm_json(&n->gemms[g], batch, nt ? &nt[g] : NULL);
			}
			printf("]}");
		} else {
			char name[MDL_NAME_MAX + 2];
			snprintf(name, sizeof name, "%.47s%s", n->name, mdl_node_has_step_terms(n) ? "*" : "");
			printf("%-28s %-8s %6u %12.6f %12.6f %12.6f  %s\n", name, mdl_kind_name(n->kind), rep,
			       c->seconds * 1e3, c->compute_seconds * 1e3, c->memory_seconds * 1e3,
			       info_bound(c->bound));
			for (uint32_t g = 0; gemms && g < n->ngemms; g++)
				info_gemm_text(&n->gemms[g], batch, nt ? &nt[g] : NULL);
		}
	}
	if (json)
		printf("]");
	else
		printf("total %.6f ms (one request%s)\n", total_ms, batch > 1 ? " batch" : "");
}

int cmd_model_info(int argc, char **argv)
{
	char err[512];
	struct opt_set o;
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	struct hw_node_cost *costs = NULL;
	struct npu_term_cost *terms = NULL;
	int rc = CLI_BAD_INPUT;
	if (opt_parse(&o, model_info_opts, MODEL_INFO_NOPTS, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, "usage: simbatch model-info --model=M --hw=H [--batch=B] [--input-len=L --output-len=L] [--dataflow=ws|os|is] [--gemms] [--json]",
		               model_info_opts, MODEL_INFO_NOPTS);
		return CLI_OK;
	}
	if (mdl_load(opt_str(&o, "model"), &m, err, sizeof err) != 0)
		goto fail;
	if (m->is_llm && !opt_given(&o, "hw"))
		opt_set_default(&o, "hw", RUN_DEFAULT_LLM_HW);    /* as run's */
	if (info_open_hw(opt_str(&o, "hw"), m, (uint32_t)opt_uint(&o, "tp"), opt_str(&o, "dataflow"), &hw, err,
	                 sizeof err) != 0)
		goto fail;
	uint32_t batch = (uint32_t)opt_uint(&o, "batch"), in_len, out_len;
	if (info_length(&o, "input-len", m->uses_input_len, m->input_len_spec, &in_len, err, sizeof err) != 0 ||
	    info_length(&o, "output-len", m->uses_output_len, m->output_len_spec, &out_len, err, sizeof err) != 0)
		goto fail;
	if (m->is_llm) {
		if (info_llm(m, hw, batch, in_len, out_len, opt_flag(&o, "json"), err, sizeof err) != 0)
			goto fail;
		hw_close(hw);
		mdl_free(m);
		return CLI_OK;
	}
	const struct npu_config *npu = npu_hw_config(hw);
	costs = calloc(m->nnodes, sizeof *costs);
	terms = npu ? calloc((size_t)m->nnodes * MDL_MAX_GEMMS, sizeof *terms) : NULL;
	if (!costs || (npu && !terms)) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	double total_ms = 0;
	for (uint32_t t = 0; t < m->nnodes; t++) {
		struct mdl_node shown;
		info_shown_node(m, t, in_len, &shown);
		if (hw_node_cost_at(hw, t, batch, in_len, &costs[t], err, sizeof err) != 0 ||
		    (npu && npu_node_terms(npu, &shown, batch, &terms[(size_t)t * MDL_MAX_GEMMS], err, sizeof err) != 0))
			goto fail;
		total_ms += costs[t].seconds * 1e3 * mdl_node_repeats(m, t, in_len, out_len);
	}
	/* the graph as one task, priced once: a model with decoder steps over P and S shows it as its total; a task
	 * overhead (in every row) is paid once in it */
	double overhead_ms = hw_task_overhead(hw) * 1e3, graph_ms = 0;
	if ((m->has_step_terms || overhead_ms > 0) &&
	    info_graph_ms(m, hw, batch, in_len, out_len, &graph_ms, err, sizeof err) != 0)
		goto fail;
	if (m->has_step_terms)
		total_ms = graph_ms;
	int json = opt_flag(&o, "json");
	info_print_nodes(m, hw, costs, terms, batch, in_len, out_len, total_ms, json, opt_flag(&o, "gemms"));
	if (overhead_ms > 0) {
		uint64_t nodes = mdl_chain_length(m, in_len, out_len);
		if (json)
			printf(",\"task_overhead_ms\":%.10g,\"graph_task_ms\":%.10g", overhead_ms, graph_ms);
		else
			printf("task overhead %.6f ms in every row, paid once a task: the %llu nodes as one graph task %.6f ms\n",
			       overhead_ms, (unsigned long long)nodes, graph_ms);
	}
	const struct gpu_predicted_info *pred = gpu_predicted_info(hw);
	if (pred && info_gpu_predicted(pred, json, err, sizeof err) != 0)
		goto fail;
	if (json)
		printf("}\n");
	free(costs);
	free(terms);
	hw_close(hw);
	mdl_free(m);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(costs);
	free(terms);
	hw_close(hw);
	mdl_free(m);
	return rc;
}
