/* sim/cli/info_gpu.c: what model-info says of a measured GPU (info_gpu.h). */
#include "info_gpu.h"

#include <stdio.h>
#include "../../util/json.h"

/* What a measured GPU model was built from and how far to trust it: the
 * profile, the measured range, the rates attention is priced at, the
 * interpolation's leave-one-row-out error, and one prefill's and one decode
 * step's time split into the model's terms. */
void info_gpu_measured(const struct gpu_measured_info *g, const struct gpu_iter_parts *pre,
                              const struct gpu_iter_parts *dec, int json)
{
	const struct op_profile *p = g->profile;
	const struct gpu_iter_parts *parts[2] = { pre, dec };
	if (json) {
		printf(",\"gpu_profile\":{\"gpu\":");
		json_write_string(stdout, p->gpu);
		printf(",\"path\":");
		json_write_string(stdout, p->path);
		printf(",\"source\":");
		json_write_string(stdout, p->source);
		printf(",\"profiled_as\":");
		json_write_string(stdout, g->curve->profiled_as);
		printf(",\"tp\":%u,\"max_tokens\":%u,\"gemm_flops_s\":%.6g,\"stream_bytes_s\":%.6g,\"leave_out\":{", g->tp,
		       opp_curve_max_tokens(g->curve), p->gemm_flops_s, p->stream_bytes_s);
		for (size_t i = 0; i < p->nleave_out; i++) {
			printf("%s", i ? "," : "");
			json_write_string(stdout, p->leave_out[i].op);
			printf(":{\"median_pct\":%g,\"p90_pct\":%g,\"rows\":%lu}", p->leave_out[i].median_pct,
			       p->leave_out[i].p90_pct, p->leave_out[i].rows);
		}
		printf("}");
		for (int k = 0; k < 2; k++)
			printf(",\"%s_parts_ms\":{\"layers\":%.6g,\"allreduce\":%.6g,\"prefill_attention\":%.6g,"
			       "\"decode_attention\":%.6g,\"embedding\":%.6g,\"lm_head\":%.6g,\"extrapolated\":%s}",
			       k ? "first_decode" : "prefill", parts[k]->layers_s * 1e3, parts[k]->allreduce_s * 1e3,
			       parts[k]->prefill_attn_s * 1e3, parts[k]->decode_attn_s * 1e3, parts[k]->emb_s * 1e3,
			       parts[k]->head_s * 1e3, parts[k]->extrapolated ? "true" : "false");
		printf("}");
		return;
	}
	printf("measured GPU %s, %u GPU%s in tensor parallelism: %s\n", p->gpu, g->tp, g->tp > 1 ? "s" : "", p->path);
	printf("  source: %s\n", p->source[0] ? p->source : "(not given)");
	if (g->moe)   /* a mixture of experts: no curve of its shape (hwmodels/gpu_moe.h) */
		printf("  a mixture of experts: every GEMM from the GEMM predictor, each MoE layer's experts drawn (routing %s, "
		       "--ep=%u); the element-wise operators on %s's curve, measured at 1 to %u tokens\n",
		       gpu_moe_routing(g->moe), gpu_moe_ep(g->moe), g->curve->profiled_as, opp_curve_max_tokens(g->curve));
	else
		printf("  the operators of %s's shape measured at 1 to %u tokens (beyond: extrapolated, and runs say so)\n",
		       g->curve->profiled_as, opp_curve_max_tokens(g->curve));
	printf("  attention priced at the GPU's measured GEMM rate %.0f TFLOP/s (prefill) and streaming rate %.2f TB/s "
	       "(decode)\n", p->gemm_flops_s * 1e-12, p->stream_bytes_s * 1e-12);
	const struct gpu_memory_row *row = gpu_memory_row(p->gpu);
	if (row && row->device_bytes != p->mem_bytes)
		printf("  the profile's # mem_gb = %g is not used: every table of %s has its row's %.4f GB "
		       "(hwmodels/gpu_memory.c)\n", p->mem_bytes * 1e-9, p->gpu, row->device_bytes * 1e-9);
	printf("  interpolation between rows, leave-one-row-out |error| median/p90:");
	for (size_t i = 0; i < p->nleave_out; i++)
		printf("%s %s %.2f%%/%.2f%%", i ? "," : "", p->leave_out[i].op, p->leave_out[i].median_pct,
		       p->leave_out[i].p90_pct);
	printf("%s\n", p->nleave_out ? "" : " not given by the profile");
	for (int k = 0; k < 2; k++)
		printf("  %s ms: layers %.4f, all-reduce %.4f, attention prefill %.4f, decode %.4f, embedding %.4f, "
		       "LM head %.4f%s\n", k ? "first decode step" : "prefill", parts[k]->layers_s * 1e3,
		       parts[k]->allreduce_s * 1e3, parts[k]->prefill_attn_s * 1e3, parts[k]->decode_attn_s * 1e3,
		       parts[k]->emb_s * 1e3, parts[k]->head_s * 1e3, parts[k]->extrapolated ? " (extrapolated)" : "");
}

void info_gpu_memory(const struct hw_model *hw, const struct mdl_llm *l, uint64_t blocks, int json)
{
	struct hw_device dev = { 0 };
	if (hw->ops->device)
		hw->ops->device(hw, &dev);
	if (!dev.gpus)
		return;
	struct gpu_memory mem;
	gpu_memory_parts(dev.gpu_bytes, dev.gpus, (double)mdl_llm_weight_bytes(l), &mem);
	/* a block: 16 tokens x layers x (K, V) x KV heads x head_dim x bytes, over the GPUs */
	double block_bytes = 16.0 * (double)mdl_llm_kv_bytes_per_token(l) / dev.gpus;
	if (json) {
		printf(",\"memory\":{\"gpus\":%u,\"device_bytes\":%.17g,\"device_source\":", dev.gpus, mem.device_bytes);
		json_write_string(stdout, dev.gpu_bytes_source);
		printf(",\"utilization\":%g,\"weights_bytes\":%.17g,\"activation_bytes\":null,\"non_torch_bytes\":null,"
		       "\"graph_bytes\":0,\"kv_bytes\":%.17g,\"block_bytes\":%.17g,\"kv_blocks_of_16\":%llu}",
		       mem.utilization, mem.weights_bytes, mem.kv_bytes, block_bytes, (unsigned long long)blocks);
		return;
	}
	printf("memory of each of %u GPU%s, as vLLM v0.15 sizes its KV cache (hwmodels/gpu_memory.h):\n", dev.gpus,
	       dev.gpus > 1 ? "s" : "");
	printf("  device %.4f GB: %s\n", mem.device_bytes * 1e-9, dev.gpu_bytes_source);
	printf("  x gpu_memory_utilization %g = %.4f GB, less the weights' %.4f GB\n", mem.utilization,
	       gpu_memory_usable_bytes(mem.device_bytes) * 1e-9, mem.weights_bytes * 1e-9);
	printf("  activations (the profile run's torch peak) and non-torch memory (NCCL, cuBLAS): not priced, no "
	       "measurement; CUDA graphs: none (captured after the KV cache is sized)\n");
	printf("  KV cache %.4f GB: %llu blocks of 16 tokens x %u layers x 2 x %u KV heads x %u x %u bytes / %u GPU%s "
	       "(%.0f bytes)\n", mem.kv_bytes * 1e-9, (unsigned long long)blocks, l->layers, l->kv_heads, l->head_dim,
	       l->elem_bytes, dev.gpus, dev.gpus > 1 ? "s" : "", block_bytes);
}

/* A node-level model whose GEMMs a measured GPU's predictor prices: the
 * shapes beyond the measured range, and the predictor's leave-one-model-out
 * error on the GPU's own measurements. */
int info_gpu_predicted(const struct gpu_predicted_info *g, int json, char *err, size_t errlen)
{
	struct gemmp_error per[64], all;
	int n = gemmp_leave_one_model_out(g->profile, per, 64, &all, err, errlen);
	if (n < 0)
		return -1;
	if (json) {
		printf(",\"gpu_predicted\":{\"profile\":");
		json_write_string(stdout, g->profile->path);
		printf(",\"shapes\":%zu,\"shapes_outside_measured\":%zu,\"outside\":", g->nshapes, g->noutside);
		json_write_string(stdout, g->outside);
		printf(",\"leave_one_model_out\":{\"median_pct\":%.4g,\"p90_pct\":%.4g,\"rows\":%zu,\"models\":[",
		       all.median_pct, all.p90_pct, all.rows);
		for (int i = 0; i < n; i++) {
			printf("%s{\"model\":", i ? "," : "");
			json_write_string(stdout, per[i].model);
			printf(",\"median_pct\":%.4g,\"p90_pct\":%.4g,\"rows\":%zu}", per[i].median_pct, per[i].p90_pct,
			       per[i].rows);
		}
		printf("]}}");
		return 0;
	}
	printf("GEMMs predicted from the %s GEMMs measured in %s (no cuBLAS table of its own)\n", g->profile->gpu,
	       g->profile->path);
	printf("  %zu of %zu GEMM shapes outside the measured M, K or N (extrapolated)%s%s\n", g->noutside, g->nshapes,
	       g->noutside ? ": " : "", g->outside);
	printf("  predictor's leave-one-model-out |error|: median %.1f%%, p90 %.1f%% over %zu measured rows;", all.median_pct,
	       all.p90_pct, all.rows);
	for (int i = 0; i < n; i++)
		printf("%s %s %.1f%%", i ? "," : "", per[i].model, per[i].median_pct);
	printf("\n");
	return 0;
}
