/* tests/test_example_policy.c: the worked example policy of docs/ARCHITECTURE.md
 * (docs/examples/shortest_first.c) built and run through the engine, behind
 * the contract checker, on timelines worked out by hand: one encoder node of
 * 1 ms at any batch, so a request of input length L runs L ms and a batch
 * runs its longest member's length (padding). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <math.h>
#include "sim/engine/engine.h"
#include "fixed_hw.h"
#include "policy_check.h"
#include "policy_knobs.h"

extern const struct pol_ops shortest_first_policy_ops;

static struct mdl_node cell;
static struct mdl_segment seg;

static struct mdl_model encoder_model(void)
{
	memset(&cell, 0, sizeof cell);
	strcpy(cell.name, "cell");
	cell.kind = MDL_ENCODER;
	seg = (struct mdl_segment){ .kind = MDL_ENCODER, .first_node = 0, .nnodes = 1 };
	struct mdl_model m = { .nnodes = 1, .nodes = &cell, .nsegments = 1, .segments = &seg, .uses_input_len = 1 };
	strcpy(m.name, "enc1");
	return m;
}

/* Four requests (lengths len, arriving at arr_ms) under shortest-first with
 * this max batch and --age-cap; each one's finish checked against want_ms. */
static void run_four(const double *arr_ms, const uint32_t *len, uint32_t max_batch, const char *age_cap,
                     const double *want_ms)
{
	struct mdl_model m = encoder_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr_s[4];
	uint32_t zero[4] = { 0 }, in[4];
	for (int i = 0; i < 4; i++) {
		arr_s[i] = arr_ms[i] * 1e-3;
		in[i] = len[i];
	}
	struct trc_trace t = { .n = 4, .arrival_s = arr_s, .input_len = in, .output_len = zero };
	struct eng_config c = { .policy = pchk_wrap(&shortest_first_policy_ops, 4), .model = &m, .hw = &hw.base,
	                        .workers = 1, .trace = &t, .seed = 1, .sla_ns = 1000000000, .keep_request_rows = 1 };
	struct test_knobs k;
	c.env.max_batch = max_batch;
	c.env.params = test_knobs(&k, &shortest_first_policy_ops);
	test_knob(&k, "age-cap", "%s", age_cap);
	struct drv_result r;
	char err[256];
	if (eng_run(&c, &r, err, sizeof err) != 0)
		fail_msg("%s", err);
	if (pchk_verdict(4) != 0)
		fail_msg("contract: %s", pchk.first);
	pchk_release();
	assert_int_equal(r.nrows, 4);
	for (int i = 0; i < 4; i++)
		if (fabs(r.rows[i].finish_s * 1e3 - want_ms[i]) > 1e-6)
			fail_msg("age cap %s, max batch %u: request %d finished at %.6f ms, not %.6f", age_cap, max_batch, i,
			         r.rows[i].finish_s * 1e3, want_ms[i]);
	drv_result_free(&r);
}

/* r0 (5) at 0, r1 (4) at 1, r2 (1) at 4, r3 (2) at 4.5, one at a time. r0
 * runs 0-5. At 5 without a cap the shortest go first: r2 5-6, r3 6-8, r1
 * 8-12. With a 3 ms cap r1 has waited 4 > 3 at 5: r1 5-9; at 9 r2 (5) and r3
 * (4.5) have both waited past it, so the older first: r2 9-10, r3 10-12. */
static void test_age_cap_timeline(void **state)
{
	(void)state;
	const double arr[4] = { 0, 1, 4, 4.5 };
	const uint32_t len[4] = { 5, 4, 1, 2 };
	run_four(arr, len, 1, "0", (const double[]){ 5, 12, 6, 8 });
	run_four(arr, len, 1, "3", (const double[]){ 5, 9, 10, 12 });
}

/* r0 (5) at 0; r1 (4), r2 (1), r3 (2) at 1; batches of two. r0 runs 0-5;
 * at 5 the two shortest, r2 and r3, padded to 2: 5-7; then r1: 7-11. */
static void test_shortest_batched_first(void **state)
{
	(void)state;
	run_four((const double[]){ 0, 1, 1, 1 }, (const uint32_t[]){ 5, 4, 1, 2 }, 2, "0",
	         (const double[]){ 5, 11, 7, 7 });
}

/* The knob's table is the policy's: its bounds refuse a negative cap. */
static void test_knob_bounds(void **state)
{
	(void)state;
	struct opt_set s;
	char err[256] = "";
	opt_defaults(&s, shortest_first_policy_ops.params, shortest_first_policy_ops.nparams);
	assert_int_equal(opt_put(&s, "age-cap", "-1", err, sizeof err), -1);
	assert_non_null(strstr(err, "--age-cap=-1"));
	assert_string_equal(opt_str(&s, "age-cap"), "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_age_cap_timeline),
		cmocka_unit_test(test_shortest_batched_first),
		cmocka_unit_test(test_knob_bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
