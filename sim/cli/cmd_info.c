/* sim/cli/cmd_info.c: the inspection subcommands: `list`, `model-info` (a
 * model's per-node latency on a hardware model: the profiled NodeLatency table
 * of LazyBatching Sec. IV-C, with each node's GEMMs on an NPU) and `hw-info`
 * (one GEMM on a hardware model, or with --sweep-batch every node's latency
 * and throughput against batch size: LazyBatching Fig. 3, BatchMaker Fig. 3). */
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

/* Opens --hw for model m (may be NULL); a --dataflow value (NULL: none)
 * re-creates an NPU with that dataflow, since an instance is read-only. */
static int info_open_hw(const char *arg, const struct mdl_model *m, uint32_t tp, const char *dataflow,
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

static const char *info_bound(enum hw_bound b)
{
	return b == HW_MEMORY_BOUND ? "memory" : "compute";
}

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
	int json = opt_flag(&o, "json"), gemms = opt_flag(&o, "gemms");
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
 * over the swept batches. */
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
	printf("  throughput reaches %.0f%% of its maximum (%.1f/s) at batch %u\n", 100 * INFO_SATURATION,
	       c->max_tput, c->sat_batch);
}

/* hw-info --sweep-batch: LazyBatching Fig. 3 and BatchMaker Fig. 3, per
 * node and for the whole graph (every node at its repeat count, all the
 * batch's requests with the same lengths). */
static int info_sweep(const struct opt_set *o, const struct mdl_model *m, const struct hw_model *hw,
                      char *err, size_t errlen)
{
	uint32_t batches[17], nb = 0, in_len, out_len, limit = hw_max_batch(hw);
	uint32_t max_b = (uint32_t)opt_uint(o, "max-batch");
	const char *only = opt_str(o, "node");
	int only_idx = -1, rc = -1, json = opt_flag(o, "json");
	struct info_curve graph = { 0 }, *nodes = NULL;
	const struct npu_config *npu = npu_hw_config(hw);

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

	if (json) {
		printf("{\"model\":");
		json_write_string(stdout, m->name);
		printf(",\"hw\":");
		json_write_string(stdout, hw->label);
		if (npu)
			printf(",\"dataflow\":\"%s\"", npu_dataflow_name(npu->dataflow));
		printf(",\"input_len\":%u,\"output_len\":%u,\"saturation_share\":%g,\"batches\":[", in_len,
		       out_len, INFO_SATURATION);
		for (uint32_t i = 0; i < nb; i++)
			printf("%s%u", i ? "," : "", batches[i]);
		printf("],\"graph\":{");
		info_curve_json(&graph, batches, nb, 0);
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
		info_curve_text(&graph, batches, nb, 0);
		for (uint32_t t = 0; t < m->nnodes; t++) {
			if (only_idx >= 0 && (int)t != only_idx)
				continue;
			printf("node %s (%s, %u per request)\n", m->nodes[t].name, mdl_kind_name(m->nodes[t].kind),
			       mdl_node_repeats(m, t, in_len, out_len));
			info_curve_text(&nodes[t], batches, nb, 1);
		}
	}
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
