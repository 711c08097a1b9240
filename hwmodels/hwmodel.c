/* hwmodels/hwmodel.c: the calls every caller of a hardware model makes
 * through its ops (hwmodel.h), apart from the registry that opens one
 * (registry.c): a model that opens another (a measured GPU its calibration
 * table) closes it here without reaching back into the registry. */
#include <stdio.h>
#include "hwmodel.h"

void hw_close(struct hw_model *hw)
{
	if (hw)
		hw->ops->close(hw);
}

int hw_moe_setup(struct hw_model *hw, uint32_t ep, const char *routing, uint64_t seed, char *err, size_t errlen)
{
	const struct mdl_model *m = hw->model;
	int moe = m && m->is_llm && m->llm.moe.experts;
	if (!moe) {
		if (ep > 1) {
			snprintf(err, errlen, "--ep=%u: expert parallelism spreads a mixture of experts; model %s has none", ep,
			         m ? m->name : "(none)");
			return -1;
		}
		if (routing) {
			snprintf(err, errlen, "--routing applies to a mixture of experts; model %s has none", m ? m->name : "(none)");
			return -1;
		}
		return 0;
	}
	if (!hw->ops->moe_setup) {
		snprintf(err, errlen, "hw %s does not price a mixture of experts (model %s); a measured GPU does (gpu-h100, "
		         "gpu-a100)", hw->label, m->name);
		return -1;
	}
	return hw->ops->moe_setup(hw, ep, routing, seed, err, errlen);
}

int hw_member_cost(const struct hw_model *hw, uint32_t t, uint32_t len, struct hw_node_cost *out,
                   char *err, size_t errlen)
{
	if (!hw->ops->member_cost) {
		snprintf(err, errlen, "hardware model %s cannot price node %s's attention over a request's own tokens "
		         "(a pass node; the npu and roofline models can)", hw->label, hw->model->nodes[t].name);
		return -1;
	}
	return hw->ops->member_cost(hw, t, len, out, err, errlen);
}

int hw_node_cost_at(const struct hw_model *hw, uint32_t t, uint32_t batch, uint32_t input_len,
                    struct hw_node_cost *out, char *err, size_t errlen)
{
	const struct mdl_node *node = &hw->model->nodes[t];
	if (node->kind != MDL_PASS)
		return hw_node_cost(hw, t, batch, out, err, errlen);
	uint64_t tokens = (uint64_t)batch * input_len;
	if (input_len == 0 || tokens > UINT32_MAX) {
		snprintf(err, errlen, "node %s runs over each request's tokens: %u requests of %u tokens cannot be "
		         "priced", node->name, batch, input_len);
		return -1;
	}
	if (hw_node_cost(hw, t, (uint32_t)tokens, out, err, errlen) != 0)
		return -1;
	if (!node->nmember && !node->elementwise_len)
		return 0;
	struct hw_node_cost own;
	if (hw_member_cost(hw, t, input_len, &own, err, errlen) != 0)
		return -1;
	/* the vector unit's work beside the array adds up over the pieces, as the array's does */
	double main = hw_main_seconds(out) + batch * hw_main_seconds(&own);
	double side = out->side_seconds + batch * own.side_seconds;
	out->seconds = side > main ? side : main;
	out->main_seconds = side > 0 ? main : 0;
	out->side_seconds = side;
	out->compute_seconds += batch * own.compute_seconds;
	out->memory_seconds += batch * own.memory_seconds;
	out->bound = out->memory_seconds > out->compute_seconds ? HW_MEMORY_BOUND : HW_COMPUTE_BOUND;
	return 0;
}
