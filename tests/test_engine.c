/* tests/test_engine.c: the engine with the serial and graph policies against
 * numbers derived independently of the code:
 *  - M/D/1 and M/G/1 mean waiting time (Pollaczek-Khinchine),
 *  - hand-computed graph-batching timelines (window, padding, bucketing),
 *  - graph with max batch 1 equals serial, and a run repeated is identical.
 * Hardware and models are built here by hand, so these tests depend on
 * neither the NPU model nor the model files. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <stdio.h>
#include <unistd.h>
#include "sim/engine/engine.h"
#include "sim/engine/latency.h"
#include "fixed_hw.h"
#include "policy_knobs.h"


/* ---- one-node models ---- */
static struct mdl_node one_node;
static struct mdl_segment one_segment;

static struct mdl_model one_node_model(enum mdl_kind kind)
{
	memset(&one_node, 0, sizeof one_node);
	strcpy(one_node.name, "cell");
	one_node.kind = kind;
	one_segment = (struct mdl_segment){ .kind = kind, .first_node = 0, .nnodes = 1 };
	struct mdl_model m = { .nnodes = 1, .nodes = &one_node, .nsegments = 1, .segments = &one_segment,
	                       .uses_input_len = kind == MDL_ENCODER, .uses_output_len = kind == MDL_DECODER };
	strcpy(m.name, kind == MDL_STATIC ? "static1" : "chain1");
	return m;
}

extern const struct pol_ops serial_policy_ops;
extern const struct pol_ops graph_policy_ops;

static struct eng_config base_config(const struct pol_ops *p, const struct mdl_model *m, const struct hw_model *hw)
{
	struct eng_config c = { .policy = p, .model = m, .hw = hw, .workers = 1, .rate_rps = 100,
	                        .arrival_cv = 1, .requests = 1000, .seed = 1, .sla_ns = 100000000 };
	c.env.max_batch = p->default_max_batch;
	return c;
}

/* Mean waiting time of M/G/1: lambda E[S^2] / (2 (1 - rho)). */
static double pk_wait_s(double lambda, double es, double es2)
{
	return lambda * es2 / (2 * (1 - lambda * es));
}

static void check_mg1(const struct mdl_model *m, const char *len_spec, double cell_s, double rho,
                      uint64_t n, double rel_tol)
{
	struct fixed_hw hw = fixed_hw(m, cell_s, 0);
	struct trc_lengths *len = NULL;
	char err[256];
	assert_int_equal(trc_lengths_parse(len_spec, &len, err, sizeof err), 0);
	double el = trc_lengths_mean(len), el2 = trc_lengths_second_moment(len);
	if (m->nodes[0].kind == MDL_STATIC)
		el = el2 = 1;
	double es = cell_s * el, es2 = cell_s * cell_s * el2;
	struct eng_config c = base_config(&serial_policy_ops, m, &hw.base);
	c.rate_rps = rho / es;
	c.requests = n;
	c.warmup = n / 20;
	c.input_len = len;
	c.output_len = len;
	c.seed = 7;
	struct drv_result r;
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	double expect_ms = pk_wait_s(c.rate_rps, es, es2) * 1e3;
	double got_ms = r.summary.queue_mean_ms;
	print_message("  %s rho=%.2f: mean wait %.5f ms, theory %.5f ms (%+.2f%%)\n", len_spec, rho, got_ms,
	              expect_ms, 100 * (got_ms / expect_ms - 1));
	assert_true(fabs(got_ms / expect_ms - 1) < rel_tol);
	/* latency = wait + service on average */
	assert_true(fabs(r.summary.mean_ms - got_ms - es * 1e3) < 0.02 * es * 1e3 + 1e-9 + 0.05 * got_ms);
	drv_result_free(&r);
	trc_lengths_free(len);
}

/* M/D/1: a static one-node model, constant service 1 ms. Tolerances: with
 * 400k requests the relative standard error of the mean wait is about 0.5%
 * at rho 0.3 and 1.5% at rho 0.7 (relaxation time ~ 1/(1-sqrt(rho))^2
 * services), so 5% is more than 3 sigma at every load. */
static void test_md1(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_STATIC);
	check_mg1(&m, "fixed:1", 1e-3, 0.3, 400000, 0.05);
	check_mg1(&m, "fixed:1", 1e-3, 0.5, 400000, 0.05);
	check_mg1(&m, "fixed:1", 1e-3, 0.7, 400000, 0.05);
}

/* M/G/1: a chain of L cells of 0.1 ms, L uniform on 1..20:
 * E[L] = 10.5, E[L^2] = (20*21*41/6)/20 = 143.5. */
static void test_mg1(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_ENCODER);
	check_mg1(&m, "uniform:1:20", 1e-4, 0.3, 400000, 0.05);
	check_mg1(&m, "uniform:1:20", 1e-4, 0.6, 400000, 0.06);
}

/* ---- hand-computed graph timelines on a six-request trace, 1 ms per cell ---- */
static double trace_arrival[6] = { 0, 0, 0.001, 0.002, 0.006, 0.0065 };
static uint32_t trace_len[6] = { 2, 5, 3, 1, 4, 2 };
static uint32_t trace_zero[6] = { 0 };

static void run_trace(uint32_t max_batch, double window_ms, uint32_t bucket_width,
                      const double *start_ms, const double *finish_ms)
{
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	struct trc_trace t = { .n = 6, .arrival_s = trace_arrival, .input_len = trace_len, .output_len = trace_zero };
	struct eng_config c = base_config(&graph_policy_ops, &m, &hw.base);
	c.trace = &t;
	c.requests = 0;
	c.env.max_batch = max_batch;
	struct test_knobs k;
	c.env.params = test_knobs(&k, &graph_policy_ops);
	test_knob(&k, "window", "%.17g", window_ms);
	test_knob(&k, "bucket-width", "%u", bucket_width);
	c.keep_request_rows = 1;
	struct drv_result r;
	char err[256];
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	assert_int_equal(r.nrows, 6);
	for (int i = 0; i < 6; i++) {
		assert_int_equal(r.rows[i].id, i);
		assert_true(fabs(r.rows[i].start_s * 1e3 - start_ms[i]) < 1e-6);
		assert_true(fabs(r.rows[i].finish_s * 1e3 - finish_ms[i]) < 1e-6);
	}
	drv_result_free(&r);
}

/* Cold start: 1 ms a cell, 2 ms of refill after 10 ms idle or more (linear
 * below). r0 (0 ms, 2 cells) runs on a device that never ran: 0-4; r1 (1 ms,
 * 1 cell) follows back to back: 4-5; r2 (8 ms) after 3 ms idle pays 0.6 ms:
 * 8-9.6; r3 (30 ms) after 20.4 ms idle pays 2 ms: 30-33. */
static void test_cold_start_timeline(void **state)
{
	(void)state;
	static double arrival[4] = { 0, 0.001, 0.008, 0.030 };
	static uint32_t len[4] = { 2, 1, 1, 1 }, zero[4] = { 0 };
	const double start[4] = { 0, 4, 8, 30 }, finish[4] = { 4, 5, 9.6, 33 };
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw_cold(&m, 1e-3, 2e-3, 10e-3);
	struct trc_trace t = { .n = 4, .arrival_s = arrival, .input_len = len, .output_len = zero };
	struct eng_config c = base_config(&serial_policy_ops, &m, &hw.base);
	c.trace = &t;
	c.requests = 0;
	c.keep_request_rows = 1;
	struct drv_result r;
	char err[256];
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	assert_int_equal(r.nrows, 4);
	for (int i = 0; i < 4; i++) {
		assert_true(fabs(r.rows[i].start_s * 1e3 - start[i]) < 1e-6);
		assert_true(fabs(r.rows[i].finish_s * 1e3 - finish[i]) < 1e-6);
	}
	assert_int_equal(r.cold_starts, 3);
	drv_result_free(&r);
	/* the graph policy's whole-graph tasks pay the same way */
	c.policy = &graph_policy_ops;
	c.env.max_batch = 1;
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	for (int i = 0; i < 4; i++)
		assert_true(fabs(r.rows[i].finish_s * 1e3 - finish[i]) < 1e-6);
	drv_result_free(&r);
}

/* max batch 2, no window: {r0,r1} 0-5 (padded to 5), {r2,r3} 5-8 (padded to 3),
 * {r4,r5} 8-12 (padded to 4). Every member leaves when its batch ends. */
static void test_graph_timeline_padding(void **state)
{
	(void)state;
	const double start[6] = { 0, 0, 5, 5, 8, 8 };
	const double finish[6] = { 5, 5, 8, 8, 12, 12 };
	run_trace(2, 0, 0, start, finish);
}

/* max batch 4, window 3 ms: r0,r1 wait for the window (would close at 3), but
 * r3 at t=2 fills the batch: {r0..r3} 2-7. At 7, r4 (arrived 6) and r5 wait
 * for r4's window to close at 9: {r4,r5} 9-13. */
static void test_graph_timeline_window(void **state)
{
	(void)state;
	const double start[6] = { 2, 2, 2, 2, 9, 9 };
	const double finish[6] = { 7, 7, 7, 7, 13, 13 };
	run_trace(4, 3, 0, start, finish);
}

/* max batch 2, bucket width 2: buckets (0,2] (2,4] (4,6] hold r0,r3,r5 | r2,r4 | r1.
 * Round robin: b0 {r0} 0-2; b1 {r2} 2-5; b2 {r1} 5-10; b0 {r3,r5} 10-12 (padded 2);
 * b1 {r4} 12-16. */
static void test_graph_timeline_buckets(void **state)
{
	(void)state;
	const double start[6] = { 0, 5, 2, 10, 12, 10 };
	const double finish[6] = { 2, 10, 5, 12, 16, 12 };
	run_trace(2, 0, 2, start, finish);
}

/* Graph batching limited to batch 1 is the serial policy, bit for bit. */
static void test_graph_batch1_is_serial(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-4, 0.5);
	struct trc_lengths *len;
	char err[256];
	assert_int_equal(trc_lengths_parse("uniform:1:30", &len, err, sizeof err), 0);
	struct eng_config a = base_config(&serial_policy_ops, &m, &hw.base);
	a.rate_rps = 400;
	a.requests = 50000;
	a.input_len = a.output_len = len;
	struct eng_config b = a;
	b.policy = &graph_policy_ops;
	b.env.max_batch = 1;
	struct drv_result ra, rb;
	assert_int_equal(eng_run(&a, &ra, err, sizeof err), 0);
	assert_int_equal(eng_run(&b, &rb, err, sizeof err), 0);
	assert_memory_equal(&ra.summary, &rb.summary, sizeof ra.summary);
	assert_int_equal(ra.events, rb.events);
	assert_true(ra.throughput_rps == rb.throughput_rps);
	drv_result_free(&ra);
	drv_result_free(&rb);
	trc_lengths_free(len);
}

/* Same config twice: identical results; another seed: different ones. */
static void test_determinism(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-4, 0.1);
	struct trc_lengths *len;
	char err[256];
	assert_int_equal(trc_lengths_parse("uniform:1:30", &len, err, sizeof err), 0);
	struct eng_config c = base_config(&graph_policy_ops, &m, &hw.base);
	c.rate_rps = 2000;
	c.requests = 20000;
	struct test_knobs k;
	c.env.params = test_knobs(&k, &graph_policy_ops);
	test_knob(&k, "window", "2");
	c.input_len = c.output_len = len;
	struct drv_result r1, r2, r3;
	assert_int_equal(eng_run(&c, &r1, err, sizeof err), 0);
	assert_int_equal(eng_run(&c, &r2, err, sizeof err), 0);
	assert_memory_equal(&r1.summary, &r2.summary, sizeof r1.summary);
	c.seed = 2;
	assert_int_equal(eng_run(&c, &r3, err, sizeof err), 0);
	assert_true(r1.summary.mean_ms != r3.summary.mean_ms);
	drv_result_free(&r1);
	drv_result_free(&r2);
	drv_result_free(&r3);
	trc_lengths_free(len);
}

/* Two workers halve the wait of a saturating burst: 4 requests at t=0, 1 ms
 * each, serial on two devices finish at 1, 1, 2, 2 ms. */
static void test_two_workers(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[4] = { 0, 0, 0, 0 };
	uint32_t len[4] = { 1, 1, 1, 1 }, zero[4] = { 0 };
	struct trc_trace t = { .n = 4, .arrival_s = arr, .input_len = len, .output_len = zero };
	struct eng_config c = base_config(&serial_policy_ops, &m, &hw.base);
	c.trace = &t;
	c.requests = 0;
	c.workers = 2;
	c.keep_request_rows = 1;
	struct drv_result r;
	char err[256];
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	const double finish[4] = { 1, 1, 2, 2 };
	for (int i = 0; i < 4; i++)
		assert_true(fabs(r.rows[i].finish_s * 1e3 - finish[i]) < 1e-9);
	assert_true(fabs(r.summary.mean_ms - 1.5) < 1e-9);
	drv_result_free(&r);
}

/* Warm-up requests are excluded: 4 back-to-back requests, warm-up 2, measure
 * only the last two (latencies 3 and 4 ms). */
static void test_warmup(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_ENCODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[4] = { 0, 0, 0, 0 };
	uint32_t len[4] = { 1, 1, 1, 1 }, zero[4] = { 0 };
	struct trc_trace t = { .n = 4, .arrival_s = arr, .input_len = len, .output_len = zero };
	struct eng_config c = base_config(&serial_policy_ops, &m, &hw.base);
	c.trace = &t;
	c.requests = 0;
	c.warmup = 2;
	struct drv_result r;
	char err[256];
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	assert_int_equal(r.completed, 4);
	assert_int_equal(r.summary.count, 2);
	assert_true(fabs(r.summary.mean_ms - 3.5) < 1e-9);
	assert_true(fabs(r.summary.max_ms - 4) < 1e-9);
	drv_result_free(&r);
}

/* Policy names are unique (the registry is the one list). */
/* ---- the driver refuses a policy that breaks the policy.h contract ---- */

struct bad_state {
	struct pol_request *r;     /* the one waiting request */
	int mode;                  /* 0: the request twice in one task; 1: more requests than the max batch */
};
static int bad_mode;

static int bad_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	(void)env, (void)err, (void)errlen;
	((struct bad_state *)st)->mode = bad_mode;
	return 0;
}
static void bad_arrival(struct pol_state *st, struct pol_request *r, int64_t now)
{
	(void)now;
	((struct bad_state *)st)->r = r;
}
static void bad_done(struct pol_state *st, const struct pol_task *t, int64_t now)
{
	(void)st, (void)t, (void)now;
}
static int bad_next(struct pol_state *st, uint32_t dev, int64_t now, struct pol_task *t, int64_t *wake)
{
	(void)dev, (void)now, (void)wake;
	struct bad_state *b = (struct bad_state *)st;
	if (!b->r)
		return 0;
	t->kind = POL_TASK_GRAPH;
	t->nreq = b->mode == 0 ? 2 : 3;
	for (uint32_t i = 0; i < 2; i++)    /* reqs has max_batch = 2 slots: a third member is only counted */
		t->reqs[i] = b->r;
	return 1;
}
static const struct pol_ops bad_policy_ops = {
	.name = "bad", .help = "breaks the contract on purpose", .state_size = sizeof(struct bad_state),
	.default_max_batch = 2, .init = bad_init, .on_arrival = bad_arrival, .on_task_done = bad_done,
	.next_task = bad_next,
};

static void test_driver_refuses_broken_contract(void **state)
{
	(void)state;
	struct mdl_model m = one_node_model(MDL_STATIC);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	static const char *const expect[2] = {
		"policy bad broke its contract: request 0 in a task it cannot join",
		"policy bad broke its contract: a task of 3 requests (max batch 2)",
	};
	for (bad_mode = 0; bad_mode < 2; bad_mode++) {
		struct eng_config c = base_config(&bad_policy_ops, &m, &hw.base);
		struct drv_result r;
		char err[256] = "";
		assert_int_equal(eng_run(&c, &r, err, sizeof err), -1);
		assert_string_equal(err, expect[bad_mode]);
	}
}

static void test_policy_registry_unique(void **state)
{
	(void)state;
	size_t n;
	const struct pol_ops *const *reg = pol_registry(&n);
	for (size_t i = 0; i < n; i++) {
		assert_ptr_equal(pol_find(reg[i]->name), reg[i]);
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(reg[i]->name, reg[j]->name);
	}
}

/* ---- decoder steps that attend to their own lengths ---- */

static struct mdl_model *step_model(void)
{
	/* a pass encoder, then one decoder node whose 8 heads score against P keys of width 4096 */
	static const char text[] = "model stepped\nsource hand-made\ninput_len fixed:7\noutput_len fixed:5\n"
	                           "estimate_lengths P=3\nnode enc pass gemm=1,64,64\n"
	                           "node dec decoder gemm=1,64,64 attn=1,4096,P,x8\n";
	char path[] = "/tmp/test_engine_model_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	struct mdl_model *m = NULL;
	char err[256];
	assert_int_equal(mdl_load_file(path, &m, err, sizeof err), 0);
	unlink(path);
	return m;
}

/* A request at decoder step p of this model (one pass node, then the decoder). */
static struct pol_request at_step(uint32_t p)
{
	return (struct pol_request){ .input_len = 7, .output_len = 5, .chain_len = 6, .next_node = p,
	                             .node_type_cache = 1, .cells_cache = 1, .span_end_cache = 6 };
}

/* The roofline by hand (hwmodels/roofline.c: 2-byte elements, 989e12
 * FLOP/s, 3.35e12 B/s). The decoder node at batch b with every member at P =
 * 1: compute 2 b 64 64 + 8 b (2 4096 1) FLOPs, memory ((b 64 + 64 64 + b 64)
 * + 8 b (4096 + 4096 1 + 1)) 2 bytes, the longer. A member at P adds its 8
 * score GEMMs' growth from P = 1: memory-bound (4096 + 4096 P + P elements
 * against 2 4096 P FLOPs), 8 (4097 (P - 1)) 2 bytes. */
static int64_t hand_base_ns(uint32_t b)
{
	double c = (2.0 * b * 64 * 64 + 8.0 * b * 2 * 4096) / 989e12;
	double mem = ((b * 64.0 + 64 * 64 + b * 64.0) + 8.0 * b * (4096 + 4096 + 1)) * 2 / 3.35e12;
	return (int64_t)nearbyint((c > mem ? c : mem) * 1e9);
}

static int64_t hand_member_ns(uint32_t p)
{
	return (int64_t)nearbyint(8.0 * 4097 * (p - 1) * 2 / 3.35e12 * 1e9);
}

static void test_decoder_steps_priced_by_member(void **state)
{
	(void)state;
	struct mdl_model *m = step_model();
	struct hw_model *hw = NULL;
	char err[256];
	assert_int_equal(hw_open("gpu-h100-roofline", m, &hw, err, sizeof err), 0);
	struct eng_latency *l = eng_latency_create(m, hw, 4, 7, 5, err, sizeof err);
	assert_non_null(l);
	assert_true(eng_latency_step_varies(l, 1));
	struct pol_request r[3] = { at_step(1), at_step(3), at_step(5) };
	struct pol_request *reqs[3] = { &r[0], &r[1], &r[2] };
	int64_t want = hand_base_ns(3) + hand_member_ns(1) + hand_member_ns(3) + hand_member_ns(5);
	assert_true(hand_member_ns(5) > 70);     /* the growth is not lost in rounding */
	assert_int_equal(eng_latency_step_ns(l, 1, 3, reqs, 0), want);
	/* a run's later pass: every member one step on */
	struct pol_request *two[2] = { &r[0], &r[1] };
	assert_int_equal(eng_latency_step_ns(l, 1, 2, two, 2), hand_base_ns(2) + hand_member_ns(3) + hand_member_ns(5));
	/* the policies' estimate is the node at the estimate length P = 3 for every member */
	struct pol_latency est = eng_latency_estimates(l);
	assert_int_equal(est.task_node_ns(est.ctx, 1, 3, reqs, 3, 0), want);
	double c3 = (2.0 * 3 * 64 * 64 + 8.0 * 3 * 2 * 4096 * 3) / 989e12;
	double m3 = ((3 * 64.0 + 64 * 64 + 3 * 64.0) + 8.0 * 3 * (4096 + 4096 * 3 + 3)) * 2 / 3.35e12;
	assert_int_equal(est.node_ns(est.ctx, 1, 3), (int64_t)nearbyint((c3 > m3 ? c3 : m3) * 1e9));
	/* a padded graph batch of two: the pass node, then step p at P = p for both */
	int64_t graph = pol_pass_ns(&est, 0, 2, two);
	for (uint32_t p = 1; p <= 5; p++)
		graph += hand_base_ns(2) + 2 * hand_member_ns(p);
	assert_int_equal(eng_latency_graph_ns(l, 2, 7, 5), graph);
	eng_latency_destroy(l);
	hw_close(hw);

	/* on the Table I NPU a 1 x 4096 x P GEMM is one fold of columns while P
	 * <= 128, so the steps cost the same up to there and differ beyond */
	assert_int_equal(hw_open("npu", m, &hw, err, sizeof err), 0);
	l = eng_latency_create(m, hw, 4, 7, 128, err, sizeof err);
	assert_non_null(l);
	assert_false(eng_latency_step_varies(l, 1));
	eng_latency_destroy(l);
	l = eng_latency_create(m, hw, 4, 7, 129, err, sizeof err);
	assert_non_null(l);
	assert_true(eng_latency_step_varies(l, 1));
	eng_latency_destroy(l);
	hw_close(hw);
	mdl_free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_md1),
		cmocka_unit_test(test_mg1),
		cmocka_unit_test(test_cold_start_timeline),
		cmocka_unit_test(test_graph_timeline_padding),
		cmocka_unit_test(test_graph_timeline_window),
		cmocka_unit_test(test_graph_timeline_buckets),
		cmocka_unit_test(test_graph_batch1_is_serial),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_two_workers),
		cmocka_unit_test(test_warmup),
		cmocka_unit_test(test_driver_refuses_broken_contract),
		cmocka_unit_test(test_policy_registry_unique),
		cmocka_unit_test(test_decoder_steps_priced_by_member),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
