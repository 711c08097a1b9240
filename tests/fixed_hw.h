/* tests/fixed_hw.h: a hardware model for timeline tests whose node latency is
 * base * (1 + growth * (b - 1)) for every node type, so expected timelines can
 * be worked out by hand, independent of the NPU model and the model files.
 * Header-only: each test program includes it once. */
#ifndef SB_TEST_FIXED_HW_H
#define SB_TEST_FIXED_HW_H

#include <string.h>
#include "hwmodels/hwmodel.h"

struct fixed_hw {
	struct hw_model base;
	double seconds;      /* latency at batch 1 */
	double growth;       /* added fraction of it per extra batch member */
	double cold_s;       /* fixed_hw_cold: refill after cold_full_s idle or more ... */
	double cold_full_s;  /* ... and linear in the idle below it */
	double member_s;     /* a pass node's own part for a request of L tokens: member_s * L^2 */
};

static int fixed_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out,
                           char *err, size_t errlen)
{
	(void)t;
	(void)err;
	(void)errlen;
	const struct fixed_hw *f = (const struct fixed_hw *)hw;
	*out = (struct hw_node_cost){ .seconds = f->seconds * (1 + f->growth * (b - 1)) };
	return 0;
}

/* A pass node's per-request part, quadratic in its length like attention
 * (nothing unless member_s is set, so every node then costs the same). */
static int fixed_member_cost(const struct hw_model *hw, uint32_t t, uint32_t len, struct hw_node_cost *out,
                             char *err, size_t errlen)
{
	(void)t;
	(void)err;
	(void)errlen;
	const struct fixed_hw *f = (const struct fixed_hw *)hw;
	*out = (struct hw_node_cost){ .seconds = f->member_s * len * len };
	return 0;
}

static const struct hw_ops fixed_hw_ops = { .name = "fixed", .node_cost = fixed_node_cost,
	                                        .member_cost = fixed_member_cost };

static double fixed_cold_start(const struct hw_model *hw, uint32_t t, double idle_s)
{
	(void)t;
	const struct fixed_hw *f = (const struct fixed_hw *)hw;
	return idle_s >= f->cold_full_s ? f->cold_s : f->cold_s * idle_s / f->cold_full_s;
}

static const struct hw_ops fixed_cold_hw_ops = { .name = "fixed", .node_cost = fixed_node_cost,
	                                             .cold_start = fixed_cold_start, .member_cost = fixed_member_cost };

/* fixed_hw with a cold start (hwmodel.h): cold_s after cold_full_s idle. */
static inline struct fixed_hw fixed_hw_cold(const struct mdl_model *m, double seconds, double cold_s,
                                            double cold_full_s)
{
	struct fixed_hw f = { .base = { .ops = &fixed_cold_hw_ops, .model = m }, .seconds = seconds,
	                      .cold_s = cold_s, .cold_full_s = cold_full_s };
	strcpy(f.base.label, "fixed");
	return f;
}

static inline struct fixed_hw fixed_hw(const struct mdl_model *m, double seconds, double growth)
{
	struct fixed_hw f = { .base = { .ops = &fixed_hw_ops, .model = m }, .seconds = seconds, .growth = growth };
	strcpy(f.base.label, "fixed");
	return f;
}

#endif
