/* tests/test_cellular.c: the cellular policy (BatchMaker Sec. 3-4,
 * Algorithm 1) against timelines worked out by hand, BatchMaker Fig. 5
 * included, and against the policy contract on random traces of every
 * built-in model:
 *  - Fig. 5: graph batching ends its two batches at t=5 and t=12; cellular
 *    batching lets req1 leave at t=2, req5 join the third task, req2 and req3
 *    leave after it, req6 and req7 join the fourth;
 *  - MaxTasksToSubmit: the same trace with 5 tasks submitted per Schedule;
 *  - tree levels, cell-type priority, the "ready >= Max" rule and per-type
 *    Bsizes (decoder batch below the encoder's), pinning with two workers;
 *  - every arrival completes once, positions in graph order, batches within
 *    limits, and no request served faster than alone on an idle device.
 * Hardware: a node latency table file (DESIGN.md section 4) with a unit cell
 * time, or a fixed-latency model built here, so no timing model is tested. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "sim/engine/engine.h"
#include "fixed_hw.h"
#include "policy_check.h"
#include "policy_knobs.h"

static struct test_knobs knobs;   /* the policy's knobs of the test running */

extern const struct pol_ops cellular_policy_ops;
extern const struct pol_ops graph_policy_ops;


/* ---- models built by hand: segments of one node each ---- */
static struct mdl_node hand_nodes[2];
static struct mdl_segment hand_segs[2];

static struct mdl_model hand_model(const char *name, enum mdl_kind k0, enum mdl_kind k1)
{
	memset(hand_nodes, 0, sizeof hand_nodes);
	int two = k1 != MDL_KIND_COUNT;
	enum mdl_kind kinds[2] = { k0, k1 };
	const char *names[2] = { two ? "first" : "cell", "second" };
	for (int i = 0; i < 1 + two; i++) {
		strcpy(hand_nodes[i].name, names[i]);
		hand_nodes[i].kind = kinds[i];
		hand_nodes[i].segment = (uint32_t)i;
		hand_segs[i] = (struct mdl_segment){ .kind = kinds[i], .first_node = (uint32_t)i, .nnodes = 1 };
	}
	struct mdl_model m = { .nnodes = 1u + two, .nodes = hand_nodes, .nsegments = 1u + two, .segments = hand_segs };
	m.uses_input_len = k0 == MDL_ENCODER || k0 == MDL_LEAF;
	m.uses_output_len = k1 == MDL_DECODER;
	m.is_tree = k0 == MDL_LEAF;
	strcpy(m.name, name);
	return m;
}

static struct eng_config trace_config(const struct pol_ops *p, const struct mdl_model *m,
                                      const struct hw_model *hw, const struct trc_trace *t)
{
	struct eng_config c = { .policy = p, .model = m, .hw = hw, .workers = 1, .trace = t, .seed = 1,
	                        .sla_ns = 100000000, .keep_request_rows = 1 };
	c.env.max_batch = 4;
	c.env.params = test_knobs(&knobs, p);
	test_knob_if_taken(&knobs, "max-tasks", "1");
	return c;
}

/* Runs c (its policy wrapped by the contract checker) and checks the finish
 * times (ms) of every request against want. */
static void run_expect_finish(struct eng_config c, const double *want_ms, size_t n, struct drv_result *keep)
{
	c.policy = pchk_wrap(c.policy, n);
	struct drv_result r;
	char err[256] = "";
	int rc = eng_run(&c, &r, err, sizeof err);
	if (rc != 0)
		print_message("eng_run: %s\n", err);
	assert_int_equal(rc, 0);
	if (pchk_verdict(r.issued) != 0)
		print_message("contract: %s\n", pchk.first);
	assert_int_equal(pchk.violations, 0);
	assert_int_equal(r.nrows, n);
	for (size_t i = 0; i < n; i++) {
		if (fabs(r.rows[i].finish_s * 1e3 - want_ms[i]) > 1e-6)
			print_message("request %zu finished at %.6f ms, expected %.6f\n", i, r.rows[i].finish_s * 1e3,
			              want_ms[i]);
		assert_true(fabs(r.rows[i].finish_s * 1e3 - want_ms[i]) < 1e-6);
	}
	if (keep)
		*keep = r;
	else
		drv_result_free(&r);
}

/* ---- BatchMaker Fig. 5 ----
 * The figure's image is not in the text; its lengths and arrivals follow from
 * what the text says (Sec. 3.2), in units of one cell time = 1 ms:
 *  - req1-4 arrive at t=0; graph batching ends their batch at t=5 because
 *    req4, the longest, has length 5;
 *  - req1 leaves at t=2 after two full cellular tasks: length 2;
 *  - req5 has arrived by t=2 and joins the third task, {req2..req5}: req5
 *    arrives in (1, 2] (at t=1 the second task was full anyway);
 *  - req2 and req3 depart after that third task: length 3 each;
 *  - req6 and req7 join the fourth task: they arrive in (2, 3];
 *  - graph batching runs req5-8 as the second batch, 5 to 12: the longest of
 *    req5-8 has length 7, and all four arrive before t=5.
 * Free choices (consistent with all of that): req5 length 4 at 1.5; req6
 * length 7 at 2.2; req7 length 2 at 2.6; req8 length 3 at 3.4. */
static double fig5_arrival_s[8] = { 0, 0, 0, 0, 0.0015, 0.0022, 0.0026, 0.0034 };
static uint32_t fig5_len[8] = { 2, 3, 3, 5, 4, 7, 2, 3 };
static uint32_t fig5_zero[8] = { 0 };

/* A node latency table with unit cell time at every batch up to 8. */
static char *write_unit_table(void)
{
	static char path[64];
	strcpy(path, "/tmp/test_cellular_XXXXXX");
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "# unit cell time\nnode,batch,latency_s\n*,1,0.001\n*,8,0.001\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	return path;
}

static void fig5_run(const struct pol_ops *p, uint32_t max_tasks, const double *want_ms)
{
	struct mdl_model m = hand_model("chain1", MDL_ENCODER, MDL_KIND_COUNT);
	char *path = write_unit_table();
	struct hw_model *hw = NULL;
	char err[256];
	assert_int_equal(hw_open(path, &m, &hw, err, sizeof err), 0);
	struct trc_trace t = { .n = 8, .arrival_s = fig5_arrival_s, .input_len = fig5_len, .output_len = fig5_zero };
	struct eng_config c = trace_config(p, &m, hw, &t);
	test_knob_if_taken(&knobs, "max-tasks", "%u", max_tasks);
	run_expect_finish(c, want_ms, 8, NULL);
	hw_close(hw);
	unlink(path);
}

/* Graph batching, batch size 4: {req1..4} 0-5, {req5..8} 5-12. */
static void test_fig5_graph(void **state)
{
	(void)state;
	const double want[8] = { 5, 5, 5, 5, 12, 12, 12, 12 };
	fig5_run(&graph_policy_ops, 1, want);
}

/* Cellular batching, batch size 4, one task per Schedule (the figure's
 * narrative: every task is formed when the previous one ends). Queues are
 * oldest first. Tasks (members, progress after the task):
 *  0-1 {1,2,3,4}            1:1/2 2:1/3 3:1/3 4:1/5
 *  1-2 {1,2,3,4}            req1 done at 2 (5 arrived at 1.5, batch full)
 *  2-3 {2,3,4,5}            req2, req3 done at 3; 4:3/5 5:1/4
 *  3-4 {4,5,6,7}            (8 arrives at 3.4)   4:4/5 5:2/4 6:1/7 7:1/2
 *  4-5 {4,5,6,7}            req4, req7 done at 5; 5:3/4 6:2/7 (8 waited: 4 older ones)
 *  5-6 {5,6,8}              req5 done at 6; 6:3/7 8:1/3
 *  6-7 {6,8}, 7-8 {6,8}     req8 done at 8; 6:5/7
 *  8-9 {6}, 9-10 {6}        req6 done at 10 */
static void test_fig5_cellular(void **state)
{
	(void)state;
	const double want[8] = { 2, 3, 3, 5, 6, 10, 5, 8 };
	fig5_run(&cellular_policy_ops, 1, want);
}

/* The same trace with MaxTasksToSubmit = 5 (the paper's default): a Schedule
 * commits up to 5 cells formed from the requests ready at that moment, so
 * req5 cannot join until the worker has run them.
 *  t=0 Schedule, snapshot {1..4}: 0-1 {1,2,3,4}, 1-2 {1,2,3,4} (req1 done 2),
 *      2-3 {2,3,4} (req2, req3 done 3), 3-4 {4}, 4-5 {4} (req4 done 5): 5 cells.
 *  t=5 Schedule, snapshot {5..8}: 5-6 {5,6,7,8}, 6-7 {5,6,7,8} (req7 done 7),
 *      7-8 {5,6,8} (req8 done 8), 8-9 {5,6} (req5 done 9), 9-10 {6}: 5 cells.
 *  t=10 Schedule {6}: 10-11, 11-12: req6 done 12 (7 cells from t=5). */
static void test_fig5_cellular_max_tasks(void **state)
{
	(void)state;
	const double want[8] = { 2, 3, 3, 5, 9, 12, 7, 8 };
	fig5_run(&cellular_policy_ops, 5, want);
}

/* ---- a tree model: leaf and internal cells, 1 ms per task at any batch ----
 * Balanced trees as ASAP levels (models/model.h): 4 leaves: leaf 4, internal
 * levels 2, 1; 3 leaves: leaf 3, internal 1, 1; 2 leaves: leaf 2, internal 1.
 * Requests: A (4 leaves) at 0; B (3) and C (2) at 0.5. Max batch 4 cells.
 *  0-1 leaf {A} 4 cells.
 *  t=1: ready leaf 5 (B 3 + C 2) >= Max 4, internal 2 (A): rule (a) picks
 *       leaf over the higher-priority internal; B fits (3), C would make 5:
 *       1-2 leaf {B} 3 cells.
 *  t=2: ready internal 3 (A 2, B 1), leaf 2 (C): neither >= 4, no running
 *       tasks: priority, internal: 2-3 internal {A,B} 3 cells.
 *  3-4 internal {A,B} 2 cells: A and B done at 4.
 *  4-5 leaf {C} 2 cells; 5-6 internal {C} 1 cell: C done at 6.
 * Mean cells per task: leaf (4+3+2)/3 = 3, internal (3+2+1)/3 = 2. */
static void test_tree_levels_and_priority(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("tree2", MDL_LEAF, MDL_INTERNAL);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[3] = { 0, 0.0005, 0.0005 };
	uint32_t leaves[3] = { 4, 3, 2 }, zero[3] = { 0 };
	struct trc_trace t = { .n = 3, .arrival_s = arr, .input_len = leaves, .output_len = zero };
	struct eng_config c = trace_config(&cellular_policy_ops, &m, &hw.base, &t);
	const double want[3] = { 4, 4, 6 };
	struct drv_result r;
	run_expect_finish(c, want, 3, &r);
	assert_int_equal(r.node_tasks[0], 3);
	assert_int_equal(r.node_cells[0], 9);
	assert_int_equal(r.node_tasks[1], 3);
	assert_int_equal(r.node_cells[1], 6);
	drv_result_free(&r);
}

/* ---- encoder + decoder: priority and per-type Bsizes ----
 * Max batch 4 for encoder cells, 2 for decoder cells (--max-batch-decoder),
 * 1 ms per task. Requests at t=0 (input, output): r0 (1,2) r1 (1,2) r2 (1,1)
 * r3 (2,1).
 *  0-1 enc {r0..r3}: ready 4 >= 4. r0, r1, r2 enter the decoder queue.
 *  t=1: dec ready 3 >= its Max 2 (rule a): 1-2 dec {r0,r1}.
 *  t=2: dec ready 3 again (r0, r1 keep their places ahead of r2): 2-3 dec
 *       {r0,r1}: both done at 3.
 *  t=3: dec 1 (r2), enc 1 (r3): neither full, no running task: priority:
 *       3-4 dec {r2}, done at 4.
 *  4-5 enc {r3}; 5-6 dec {r3}, done at 6. */
static void test_seq2seq_priority_and_bsizes(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("encdec", MDL_ENCODER, MDL_DECODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[4] = { 0, 0, 0, 0 };
	uint32_t in[4] = { 1, 1, 1, 2 }, out[4] = { 2, 2, 1, 1 };
	struct trc_trace t = { .n = 4, .arrival_s = arr, .input_len = in, .output_len = out };
	struct eng_config c = trace_config(&cellular_policy_ops, &m, &hw.base, &t);
	test_knob(&knobs, "max-batch-decoder", "2");
	const double want[4] = { 3, 3, 4, 6 };
	run_expect_finish(c, want, 4, NULL);
}

/* ---- pinning with two workers ----
 * Max batch 2, MaxTasksToSubmit 5, 1 ms per task. r0 (1), r1 (1), r2 (3) at
 * t=0; r3 (1) at 0.5.
 *  t=0 dev0: ready 3 >= 2: {r0,r1}. dev1: ready 1, the type runs on dev0, so
 *      rule (c): {r2}, pinned to dev1.
 *  t=1: dev0's members are done and its snapshot holds only r2, pinned to
 *      dev1: its Batch ends. dev1 forms its next cell {r2}. Offered first,
 *      idle dev0 must leave r2 alone and takes r3: 1-2 dev0 {r3}, 1-2 dev1 {r2}.
 *  2-3 dev1 {r2}: r2 done at 3, every cell on dev1. */
static void test_pinning_two_workers(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("chain1", MDL_ENCODER, MDL_KIND_COUNT);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[4] = { 0, 0, 0, 0.0005 };
	uint32_t len[4] = { 1, 1, 3, 1 }, zero[4] = { 0 };
	struct trc_trace t = { .n = 4, .arrival_s = arr, .input_len = len, .output_len = zero };
	struct eng_config c = trace_config(&cellular_policy_ops, &m, &hw.base, &t);
	c.workers = 2;
	c.env.max_batch = 2;
	test_knob(&knobs, "max-tasks", "5");
	const double want[4] = { 1, 1, 3, 2 };
	run_expect_finish(c, want, 4, NULL);
	assert_int_equal(pchk.first_dev[2], 1);
	assert_int_equal(pchk.moved[2], 0);
	assert_int_equal(pchk.first_dev[3], 0);
}

/* --min-batch stops a Batch call's later cells (Algorithm 1, line 16) but
 * never its first. Max batch 4, min 3, MaxTasksToSubmit 5: r0 (1), r1 (1),
 * r2 (3) at t=0. 0-1 {r0,r1,r2} (first cell: 3 >= 3 anyway); after it only r2
 * is left, 1 < 3: the call ends; a new Schedule submits {r2} alone (a first
 * cell) 1-2, then again 2-3: r2 done at 3. With min 1 the same times; the
 * difference is the number of Schedules: 3 against 1. */
static void test_min_batch_ends_batch(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("chain1", MDL_ENCODER, MDL_KIND_COUNT);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[3] = { 0, 0, 0 };
	uint32_t len[3] = { 1, 1, 3 }, zero[3] = { 0 };
	struct trc_trace t = { .n = 3, .arrival_s = arr, .input_len = len, .output_len = zero };
	struct eng_config c = trace_config(&cellular_policy_ops, &m, &hw.base, &t);
	test_knob(&knobs, "max-tasks", "5");
	const double want[3] = { 1, 1, 3 };
	for (uint32_t minb = 1; minb <= 3; minb += 2) {
		test_knob(&knobs, "min-batch", "%u", minb);
		struct drv_result r;
		run_expect_finish(c, want, 3, &r);
		double schedules = -1;
		for (size_t i = 0; i < r.npolicy_stats; i++)
			if (strcmp(r.policy_stats[i].name, "schedules") == 0)
				schedules = r.policy_stats[i].value;
		assert_true(schedules == (minb == 1 ? 1 : 3));
		drv_result_free(&r);
	}
}

/* ---- the contract on random traces of every built-in model ---- */
/* Runs policy p on Poisson traffic of model name's default lengths, checks
 * the contract and that no request's service (first start to finish) beats
 * its isolated latency. Returns 0 when the policy refused the model. */
static int check_random_run(const struct pol_ops *p, const char *name, uint32_t workers, uint32_t max_tasks,
                            uint64_t seed)
{
	struct mdl_model *m = NULL;
	char err[256];
	assert_int_equal(mdl_load(name, &m, err, sizeof err), 0);
	const double cell_s = 2e-5, growth = 0.02;
	struct fixed_hw hw = fixed_hw(m, cell_s, growth);
	struct trc_lengths *in = NULL, *out = NULL;
	assert_int_equal(trc_lengths_parse(m->uses_input_len ? m->input_len_spec : "fixed:0", &in, err, sizeof err), 0);
	assert_int_equal(trc_lengths_parse(m->uses_output_len ? m->output_len_spec : "fixed:0", &out, err, sizeof err), 0);
	/* load: about 8 requests per isolated mean latency, so batches form */
	double mean_nodes = mdl_chain_length(m, (uint32_t)ceil(trc_lengths_mean(in)), (uint32_t)ceil(trc_lengths_mean(out)));
	const uint64_t n = 300;
	struct eng_config c = { .policy = pchk_wrap(p, n), .model = m, .hw = &hw.base, .workers = workers,
	                        .rate_rps = 8 / (mean_nodes * cell_s), .arrival_cv = 1, .requests = n,
	                        .seed = seed, .input_len = in, .output_len = out, .sla_ns = 100000000,
	                        .keep_request_rows = 1 };
	c.env.max_batch = 64;
	c.env.params = test_knobs(&knobs, p);
	test_knob_if_taken(&knobs, "max-batch-decoder", "32");
	test_knob_if_taken(&knobs, "max-tasks", "%u", max_tasks);
	struct drv_result r;
	int rc = eng_run(&c, &r, err, sizeof err);
	int ran = rc == 0;
	if (rc != 0) {
		/* only a refusal at init is acceptable, and only before any arrival */
		assert_int_equal(pchk.tasks, 0);
		assert_non_null(strstr(err, p->name));
	} else {
		if (pchk_verdict(r.issued) != 0)
			print_message("%s on %s: %s\n", p->name, name, pchk.first);
		assert_int_equal(pchk.violations, 0);
		assert_int_equal(r.completed, n);
		assert_int_equal(r.nrows, n);
		for (size_t i = 0; i < r.nrows; i++) {
			const struct drv_request_row *w = &r.rows[i];
			int64_t iso = isolated_ns(m, cell_s, growth, w->input_len, w->output_len);
			double service_ns = (w->finish_s - w->start_s) * 1e9;
			if (service_ns < iso - 1)
				print_message("%s on %s: request %zu served in %.0f ns, alone %lld ns\n", p->name, name, i,
				              service_ns, (long long)iso);
			assert_true(service_ns >= iso - 1);
		}
		drv_result_free(&r);
	}
	trc_lengths_free(in);
	trc_lengths_free(out);
	mdl_free(m);
	return ran;
}

static void test_contract_every_model(void **state)
{
	(void)state;
	char names[64][MDL_NAME_MAX] = { { 0 } };
	assert_true(mdl_list(name_cb, names) >= 6);
	for (int i = 0; i < 64 && names[i][0]; i++) {
		struct mdl_model *m = NULL;
		char err[256];
		assert_int_equal(mdl_load(names[i], &m, err, sizeof err), 0);
		int llm = m->is_llm;           /* served by iterations, not cells */
		mdl_free(m);
		if (llm)
			continue;
		assert_int_equal(check_random_run(&cellular_policy_ops, names[i], 1, 5, 11), 1);
		assert_int_equal(check_random_run(&cellular_policy_ops, names[i], 1, 1, 12), 1);
		assert_int_equal(check_random_run(&cellular_policy_ops, names[i], 3, 5, 13), 1);
	}
	pchk_release();
}

/* Same config twice: the same numbers; another seed: other numbers. */
static void test_determinism(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("encdec", MDL_ENCODER, MDL_DECODER);
	struct fixed_hw hw = fixed_hw(&m, 1e-5, 0.05);
	struct trc_lengths *len;
	char err[256];
	assert_int_equal(trc_lengths_parse("uniform:1:40", &len, err, sizeof err), 0);
	struct eng_config c = { .policy = &cellular_policy_ops, .model = &m, .hw = &hw.base, .workers = 2,
	                        .rate_rps = 20000, .arrival_cv = 1, .requests = 20000, .seed = 5,
	                        .input_len = len, .output_len = len, .sla_ns = 100000000 };
	c.env.max_batch = 64;
	c.env.params = test_knobs(&knobs, &cellular_policy_ops);
	test_knob(&knobs, "max-tasks", "5");
	struct drv_result a, b, d;
	assert_int_equal(eng_run(&c, &a, err, sizeof err), 0);
	assert_int_equal(eng_run(&c, &b, err, sizeof err), 0);
	assert_memory_equal(&a.summary, &b.summary, sizeof a.summary);
	assert_int_equal(a.events, b.events);
	assert_int_equal(a.npolicy_stats, b.npolicy_stats);
	for (size_t i = 0; i < a.npolicy_stats; i++)
		assert_true(a.policy_stats[i].value == b.policy_stats[i].value);
	c.seed = 6;
	assert_int_equal(eng_run(&c, &d, err, sizeof err), 0);
	assert_true(a.summary.mean_ms != d.summary.mean_ms);
	drv_result_free(&a);
	drv_result_free(&b);
	drv_result_free(&d);
	trc_lengths_free(len);
}

/* Refusals: graph batching cannot pad trees; a decoder Bsize above the max. */
static void test_refusals(void **state)
{
	(void)state;
	struct mdl_model m = hand_model("tree2", MDL_LEAF, MDL_INTERNAL);
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[1] = { 0 };
	uint32_t leaves[1] = { 4 }, zero[1] = { 0 };
	struct trc_trace t = { .n = 1, .arrival_s = arr, .input_len = leaves, .output_len = zero };
	struct eng_config c = trace_config(&graph_policy_ops, &m, &hw.base, &t);
	struct drv_result r;
	char err[256] = "";
	assert_int_equal(eng_run(&c, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "tree"));
	struct mdl_model e = hand_model("encdec", MDL_ENCODER, MDL_DECODER);
	c = trace_config(&cellular_policy_ops, &e, &hw.base, &t);
	test_knob(&knobs, "max-batch-decoder", "5");
	err[0] = 0;
	assert_int_equal(eng_run(&c, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "max-batch-decoder"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fig5_graph),
		cmocka_unit_test(test_fig5_cellular),
		cmocka_unit_test(test_fig5_cellular_max_tasks),
		cmocka_unit_test(test_tree_levels_and_priority),
		cmocka_unit_test(test_seq2seq_priority_and_bsizes),
		cmocka_unit_test(test_pinning_two_workers),
		cmocka_unit_test(test_min_batch_ends_batch),
		cmocka_unit_test(test_contract_every_model),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
