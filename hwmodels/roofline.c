/* hwmodels/roofline.c: the roofline of an NVIDIA H100 SXM5 from its
 * datasheet (NVIDIA H100 Tensor Core GPU datasheet, SXM5 column): dense
 * Tensor Core peaks of 1,979 TFLOP/s in FP8, 989 in FP16/BF16 and 495 in
 * TF32 (half the datasheet's "with sparsity" figures), 3.35 TB/s of HBM3;
 * its memory is the H100's, as every H100 model's (gpu_memory.h). A GEMM of
 * M x K x N takes the longer of 2MKN FLOPs at the peak for its element size
 * and moving its operands through memory once (M x K in, the K x N
 * operand, M x N out; in a node's attention each
 * sample has its own K x N operand, its keys or values). Nothing
 * here is measured: no launch overhead, no tile quantization, no cache
 * reuse; bench/README.md "LLM serving" sets it against the H100 GEMM times
 * the Vidur project measured. Node-level models run at 2-byte elements; an
 * LLM at its own element size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "roofline.h"
#include "gpu_memory.h"
#include "../util/errkind.h"

struct roofline_hw {
	struct hw_model base;
	struct hw_device dev;
	uint32_t elem_bytes;
};

static double roofline_peak(uint32_t elem_bytes)
{
	return elem_bytes <= 1 ? 1979e12 : elem_bytes == 2 ? 989e12 : 495e12;
}

static void roofline_gemm(const struct roofline_hw *r, uint64_t m, uint64_t k, uint64_t n, int weights,
                          double *compute_s, double *memory_s)
{
	double bytes = ((double)m * k + (weights ? (double)k * n : 0) + (double)m * n) * r->elem_bytes;
	*compute_s = 2.0 * m * k * n / r->dev.peak_flops;
	*memory_s = bytes / r->dev.mem_bw_bytes_s;
}

static int roofline_gemm_cost(const struct hw_model *hw, uint64_t m, uint64_t k, uint64_t n, enum hw_dataflow df,
                              int weight_operand, struct hw_gemm_cost *out, char *err, size_t errlen)
{
	(void)df;
	(void)err;
	(void)errlen;
	const struct roofline_hw *r = (const struct roofline_hw *)hw;
	double c, mem;
	roofline_gemm(r, m, k, n, weight_operand, &c, &mem);
	*out = (struct hw_gemm_cost){ .seconds = c > mem ? c : mem, .bound = c >= mem ? HW_COMPUTE_BOUND : HW_MEMORY_BOUND };
	out->utilization = out->seconds > 0 ? c / out->seconds : 0;
	return 0;
}

static void roofline_node(const struct roofline_hw *r, const struct mdl_node *node, uint32_t b,
                          struct hw_node_cost *out)
{
	double compute = 0, memory = 0;
	for (uint32_t i = 0; i < node->ngemms; i++) {
		const struct mdl_gemm *g = &node->gemms[i];
		double c, mem, runs = (double)g->count * mdl_gemm_steps(g);
		if (g->weight_shared) {
			/* attention: each sample reads its own K x N operand (its keys or values) */
			roofline_gemm(r, g->m_per_sample, g->k, g->n, 1, &c, &mem);
			runs *= b;
		} else {
			roofline_gemm(r, (uint64_t)b * g->m_per_sample, g->k, g->n, 1, &c, &mem);
		}
		compute += c * runs;
		memory += mem * runs;
	}
	memory += (double)node->elementwise_per_sample * b * 2 * r->elem_bytes / r->dev.mem_bw_bytes_s;
	*out = (struct hw_node_cost){ .seconds = compute > memory ? compute : memory, .compute_seconds = compute,
	                              .memory_seconds = memory, .bound = compute >= memory ? HW_COMPUTE_BOUND : HW_MEMORY_BOUND };
}

static int roofline_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out,
                              char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	roofline_node((const struct roofline_hw *)hw, &hw->model->nodes[t], b, out);
	return 0;
}

/* A pass node's per-request terms (mdl_member_node) at batch 1. */
static int roofline_member_cost(const struct hw_model *hw, uint32_t t, uint32_t len, struct hw_node_cost *out,
                                char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct mdl_node member;
	mdl_member_node(&hw->model->nodes[t], len, &member);
	roofline_node((const struct roofline_hw *)hw, &member, 1, out);
	return 0;
}

static int roofline_shape_cost(const struct hw_model *hw, const struct mdl_node *node, uint32_t b,
                               struct hw_node_cost *out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	roofline_node((const struct roofline_hw *)hw, node, b, out);
	return 0;
}

static void roofline_device(const struct hw_model *hw, struct hw_device *out)
{
	*out = ((const struct roofline_hw *)hw)->dev;
}

static int roofline_open(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	struct roofline_hw *r = calloc(1, sizeof *r);
	if (!r) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	r->base.ops = &roofline_h100_ops;
	r->base.model = m;
	snprintf(r->base.label, sizeof r->base.label, "%s", arg);
	r->elem_bytes = m && m->is_llm ? m->llm.elem_bytes : 2;
	const struct gpu_memory_row *mem = gpu_memory_row("h100");
	r->dev = (struct hw_device){ .mem_bytes = gpu_memory_usable_bytes(mem->device_bytes), .mem_bw_bytes_s = 3.35e12,
	                             .peak_flops = roofline_peak(r->elem_bytes), .gpus = 1,
	                             .gpu_bytes = mem->device_bytes, .gpu_bytes_source = mem->source };
	*out = &r->base;
	return 0;
}

static void roofline_close(struct hw_model *hw)
{
	free(hw);
}

const struct hw_ops roofline_h100_ops = {
	.name = "gpu-h100-roofline",
	.help = "roofline of an NVIDIA H100 SXM5 from its datasheet (989 TFLOP/s BF16, 3.35 TB/s; memory as gpu-h100): a model, not a measurement",
	.open = roofline_open,
	.close = roofline_close,
	.node_cost = roofline_node_cost,
	.member_cost = roofline_member_cost,
	.shape_cost = roofline_shape_cost,
	.gemm_cost = roofline_gemm_cost,
	.device = roofline_device,
};
