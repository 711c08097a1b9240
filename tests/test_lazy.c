/* tests/test_lazy.c: the lazy and oracle policies (policies/lazy.c) and
 * their slack predictor (policies/slack.h), against numbers derived by hand:
 *  - LazyBatching Fig. 10 run through the engine: every task of the
 *    figure's timeline, with the predictor approving (a loose SLA);
 *  - Eq. 1's worked example (SLA 30, wait 2, execution 8: slack 20) on the
 *    figure's graph, with Algorithm 1 profiled from a latency table;
 *  - the exact SLA at which Eq. 2 (lazy) and the exact drain time (oracle)
 *    stop approving a lazy batch, 1 ns either side;
 *  - the oracle's drain time on hand-placed requests;
 *  - Algorithm 1 on Transformer/NPU against the engine's own graph latency;
 * and, for every registered policy on every built-in model with random
 * traffic: every arrival completes exactly once, each request's nodes run
 * one at a time in chain order, tasks obey the policy contract, and no
 * request finishes faster than it would alone on an idle device.
 * Hand-built models and a fixed-latency hardware keep the timeline tests
 * independent of the NPU model and the model files. */
#include <math.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "sim/engine/engine.h"
#include "result_stats.h"
#include "fixed_hw.h"
#include "policy_knobs.h"

static struct test_knobs knobs;   /* the policy's knobs of the run being set up */
#include "policies/slack.h"

extern const struct pol_ops lazy_policy_ops;
extern const struct pol_ops graph_policy_ops;
extern const struct pol_ops serial_policy_ops;
extern const struct pol_ops oracle_policy_ops;

#define MS 1000000LL   /* ns */


/* ---- hand-built models ---- */

/* Fig. 10's graph: eight static nodes A..H, one segment. */
static struct mdl_node fig10_nodes[8];
static struct mdl_segment fig10_segment;

static struct mdl_model fig10_model(void)
{
	memset(fig10_nodes, 0, sizeof fig10_nodes);
	for (int i = 0; i < 8; i++) {
		fig10_nodes[i].name[0] = (char)('A' + i);
		fig10_nodes[i].kind = MDL_STATIC;
	}
	fig10_segment = (struct mdl_segment){ .kind = MDL_STATIC, .first_node = 0, .nnodes = 8 };
	struct mdl_model m = { .nnodes = 8, .nodes = fig10_nodes, .nsegments = 1, .segments = &fig10_segment };
	strcpy(m.name, "fig10");
	return m;
}

/* One encoder node e then one decoder node d. */
static struct mdl_node seq_nodes[2];
static struct mdl_segment seq_segments[2];

static struct mdl_model seq_model(void)
{
	memset(seq_nodes, 0, sizeof seq_nodes);
	strcpy(seq_nodes[0].name, "e");
	seq_nodes[0].kind = MDL_ENCODER;
	strcpy(seq_nodes[1].name, "d");
	seq_nodes[1].kind = MDL_DECODER;
	seq_nodes[1].segment = 1;
	seq_segments[0] = (struct mdl_segment){ .kind = MDL_ENCODER, .first_node = 0, .nnodes = 1 };
	seq_segments[1] = (struct mdl_segment){ .kind = MDL_DECODER, .first_node = 1, .nnodes = 1 };
	struct mdl_model m = { .nnodes = 2, .nodes = seq_nodes, .nsegments = 2, .segments = seq_segments,
	                       .uses_input_len = 1, .uses_output_len = 1 };
	strcpy(m.name, "seq");
	return m;
}

/* ---- a checking shim around a policy: validates every task against the
 * policy contract and each request's progress, and logs the tasks ---- */

struct logged_task {
	int64_t start_ns;
	uint32_t node_type;
	uint32_t nreq;
	uint64_t ids[8];           /* sorted */
};

static struct {
	const struct pol_ops *inner;
	const struct mdl_model *model;
	uint32_t max_batch;
	uint64_t n;                /* id slots */
	uint64_t *chain, *executed, *completions;
	uint8_t *arrived, *in_flight;
	uint64_t arrivals, completed;
	uint64_t runs;             /* tasks that ran as runs of more than one node */
	char why[256];             /* first violation, "" if none */
	struct logged_task log[64];
	size_t nlog;
} shim;

static struct pol_ops shim_ops;

__attribute__((format(printf, 1, 2)))
static void shim_fail(const char *fmt, ...)
{
	if (shim.why[0])
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(shim.why, sizeof shim.why, fmt, ap);
	va_end(ap);
}

static int shim_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	shim.max_batch = env->max_batch;
	shim.model = env->model;
	return shim.inner->init(st, env, err, errlen);
}

static void shim_fini(struct pol_state *st)
{
	if (shim.inner->fini)
		shim.inner->fini(st);
}

static void shim_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	if (r->id >= shim.n || shim.arrived[r->id])
		shim_fail("request %llu arrived twice or out of range", (unsigned long long)r->id);
	else {
		shim.arrived[r->id] = 1;
		shim.chain[r->id] = r->chain_len;
		shim.arrivals++;
	}
	shim.inner->on_arrival(st, r, now_ns);
}

/* Logs an ended task node by node, a run (policy.h) as the run_len nodes it
 * stands for, each taking an equal share of its time: exact for the
 * constant node latencies of the timeline tests. */
static void shim_log(const struct pol_task *t)
{
	shim.runs += t->run_len > 1;
	for (uint64_t n = 0; n < t->run_len && shim.nlog < sizeof shim.log / sizeof shim.log[0]; n++) {
		struct logged_task *l = &shim.log[shim.nlog++];
		*l = (struct logged_task){ .start_ns = t->start_ns + (int64_t)n * ((t->end_ns - t->start_ns) / (int64_t)t->run_len),
		                           .node_type = n ? mdl_run_type(shim.model, t->node_type, n) : t->node_type,
		                           .nreq = t->nreq };
		for (uint32_t i = 0; i < t->nreq && i < 8; i++) {
			uint64_t id = t->reqs[i]->id;
			uint32_t j = i;
			for (; j > 0 && l->ids[j - 1] > id; j--)
				l->ids[j] = l->ids[j - 1];
			l->ids[j] = id;
		}
	}
}

static void shim_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	for (uint32_t i = 0; i < t->nreq; i++) {
		const struct pol_request *r = t->reqs[i];
		uint64_t id = r->id;
		shim.in_flight[id] = 0;
		shim.executed[id] = t->kind == POL_TASK_NODE ? shim.executed[id] + t->run_len : shim.chain[id];
		if (r->next_node != shim.executed[id])
			shim_fail("request %llu at position %llu after %llu nodes", (unsigned long long)id,
			          (unsigned long long)r->next_node, (unsigned long long)shim.executed[id]);
		if (pol_req_done(r)) {
			if (++shim.completions[id] > 1)
				shim_fail("request %llu completed twice", (unsigned long long)id);
			shim.completed++;
		}
	}
	shim_log(t);
	shim.inner->on_task_done(st, t, now_ns);
}

static int shim_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *task,
                          int64_t *wake_ns)
{
	int rc = shim.inner->next_task(st, device, now_ns, task, wake_ns);
	if (!rc)
		return rc;
	if (task->nreq < 1 || task->nreq > shim.max_batch) {
		shim_fail("task of %u members (max batch %u)", task->nreq, shim.max_batch);
		return rc;
	}
	uint64_t cells = 0;
	for (uint32_t i = 0; i < task->nreq; i++) {
		const struct pol_request *r = task->reqs[i];
		uint64_t id = r->id;
		if (id >= shim.n || !shim.arrived[id]) {
			shim_fail("task member %llu never arrived", (unsigned long long)id);
			return rc;
		}
		if (shim.in_flight[id] || r->in_flight)
			shim_fail("request %llu issued while in flight or twice in a task", (unsigned long long)id);
		if (pol_req_done(r))
			shim_fail("request %llu issued after completing", (unsigned long long)id);
		if (r->next_node != shim.executed[id])
			shim_fail("request %llu issued at position %llu after %llu nodes", (unsigned long long)id,
			          (unsigned long long)r->next_node, (unsigned long long)shim.executed[id]);
		if (task->kind == POL_TASK_NODE && pol_req_node(r) != task->node_type)
			shim_fail("request %llu at node type %u in a task of node type %u", (unsigned long long)id,
			          pol_req_node(r), task->node_type);
		shim.in_flight[id] = 1;
		cells += task->kind == POL_TASK_NODE ? pol_req_cells(r) : 1;
	}
	if (cells > shim.max_batch && task->nreq > 1)
		shim_fail("task of %llu cells (max batch %u)", (unsigned long long)cells, shim.max_batch);
	return rc;
}

static size_t shim_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	return shim.inner->stats ? shim.inner->stats(st, out, max) : 0;
}

static void shim_reset(const struct pol_ops *inner, uint64_t n)
{
	free(shim.chain);
	free(shim.executed);
	free(shim.completions);
	free(shim.arrived);
	free(shim.in_flight);
	memset(&shim, 0, sizeof shim);
	if (!inner)
		return;
	shim.inner = inner;
	shim.n = n;
	shim.chain = calloc(n, sizeof *shim.chain);
	shim.executed = calloc(n, sizeof *shim.executed);
	shim.completions = calloc(n, sizeof *shim.completions);
	shim.arrived = calloc(n, 1);
	shim.in_flight = calloc(n, 1);
	assert_non_null(shim.chain);
	assert_non_null(shim.executed);
	assert_non_null(shim.completions);
	assert_non_null(shim.arrived);
	assert_non_null(shim.in_flight);
	shim_ops = *inner;
	shim_ops.init = shim_init;
	shim_ops.fini = shim_fini;
	shim_ops.on_arrival = shim_on_arrival;
	shim_ops.on_task_done = shim_on_task_done;
	shim_ops.next_task = shim_next_task;
	shim_ops.stats = inner->stats ? shim_stats : NULL;
}

/* Every arrival completed exactly once, after running its whole chain. */
static void shim_check_all_done(const struct drv_result *r, const char *what)
{
	if (shim.why[0])
		fail_msg("%s: %s", what, shim.why);
	assert_int_equal(shim.arrivals, r->issued);
	assert_int_equal(shim.completed, r->issued);
	assert_int_equal(r->completed, r->issued);
	for (uint64_t id = 0; id < shim.arrivals; id++) {
		if (shim.completions[id] != 1 || shim.executed[id] != shim.chain[id])
			fail_msg("%s: request %llu completed %llu times after %llu of %llu nodes", what,
			         (unsigned long long)id, (unsigned long long)shim.completions[id],
			         (unsigned long long)shim.executed[id], (unsigned long long)shim.chain[id]);
	}
}

static struct eng_config trace_config(const struct pol_ops *p, const struct mdl_model *m, const struct hw_model *hw,
                                      const struct trc_trace *t, int64_t sla_ns)
{
	struct eng_config c = { .policy = p, .model = m, .hw = hw, .workers = 1, .trace = t, .seed = 1,
	                        .sla_ns = sla_ns, .keep_request_rows = 1 };
	c.env.max_batch = p->default_max_batch;
	c.env.sla_ns = sla_ns;
	c.env.params = test_knobs(&knobs, p);
	test_knob_if_taken(&knobs, "profile-len", "fixed:4");    /* dec_timesteps 4 (0 for a model with no decoder) */
	return c;
}

/* ---- LazyBatching Fig. 10 through the engine ---- */

/* Fig. 10's three arrivals through policy p (behind the checking shim), with flag knob (NULL:
 * none) and SLA sla_ms, into r. */
static void run_fig10(const struct pol_ops *p, const char *knob, int64_t sla_ms, struct drv_result *r)
{
	struct mdl_model m = fig10_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	double arr[3] = { 0.002, 0.0035, 0.0045 };
	uint32_t zero[3] = { 0 };
	struct trc_trace t = { .n = 3, .arrival_s = arr, .input_len = zero, .output_len = zero };
	shim_reset(p, 3);
	struct eng_config c = trace_config(&shim_ops, &m, &hw.base, &t, sla_ms * MS);
	if (knob)
		test_knob(&knobs, knob, "1");
	char err[256];
	assert_int_equal(eng_run(&c, r, err, sizeof err), 0);
	shim_check_all_done(r, p->name);
}

/* Node latency 1 ms at any batch. Req1 (id 0) arrives at t=2 (the figure's
 * first push; its earlier wait only shifts the picture), Req2 (id 1) at 3.5
 * while Req1 runs B, Req3 (id 2) at 4.5 while Req2 runs A. Every task of the
 * figure's timeline:
 *   2 A{1}  3 B{1}  4 A{2}  5 A{3}  6 B{2,3}  7 C{1,2,3}  8 D  9 E  10 F  11 G  12 H
 * so all three finish at 13; two preemptions (t=4, t=5) and two merges
 * (t=6, t=7). The SLA of 1000 s makes the predictor approve everything; so does
 * --no-slack-check at any SLA (check_fig10_unchecked). */
static void check_fig10(const struct pol_ops *p, const char *knob, int64_t sla_ms)
{
	struct drv_result r;
	run_fig10(p, knob, sla_ms, &r);
	static const struct { int64_t start_ms; uint32_t node; uint32_t n; uint64_t ids[3]; } want[] = {
		{ 2, 0, 1, { 0 } }, { 3, 1, 1, { 0 } }, { 4, 0, 1, { 1 } }, { 5, 0, 1, { 2 } },
		{ 6, 1, 2, { 1, 2 } }, { 7, 2, 3, { 0, 1, 2 } }, { 8, 3, 3, { 0, 1, 2 } }, { 9, 4, 3, { 0, 1, 2 } },
		{ 10, 5, 3, { 0, 1, 2 } }, { 11, 6, 3, { 0, 1, 2 } }, { 12, 7, 3, { 0, 1, 2 } },
	};
	size_t nwant = sizeof want / sizeof want[0];
	assert_int_equal(shim.nlog, nwant);
	for (size_t i = 0; i < nwant; i++) {
		assert_int_equal(shim.log[i].start_ns, want[i].start_ms * MS);
		assert_int_equal(shim.log[i].node_type, want[i].node);
		assert_int_equal(shim.log[i].nreq, want[i].n);
		for (uint32_t j = 0; j < want[i].n; j++)
			assert_int_equal(shim.log[i].ids[j], want[i].ids[j]);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(llround(r.rows[i].finish_s * 1e3), 13);
	assert_int_equal(stat_of(&r, "preemptions"), 2);
	assert_int_equal(stat_of(&r, "merges"), 2);
	assert_int_equal(stat_of(&r, "slack_rejections"), 0);
	assert_int_equal(stat_of(&r, "max_stack_depth"), 3);
	drv_result_free(&r);
	shim_reset(NULL, 0);
}

static void test_fig10_lazy(void **state)
{
	(void)state;
	check_fig10(&lazy_policy_ops, NULL, 1000000);
}

static void test_fig10_oracle(void **state)
{
	(void)state;
	check_fig10(&oracle_policy_ops, NULL, 1000000);
}

/* Fig. 10's arrivals with --no-preemption: Req2 (3.5) and Req3 (4.5) arrive while Req1 runs and
 * wait for it; Req1 runs its eight nodes alone, 2..10, and the two then start together and run
 * A..H as one batch, 10..18. No preemption, no merge, the stack never deeper than one.
 * The same timeline comes from the slack check alone at an SLA of 1 ms: at every boundary
 * with inputs pending (t = 4 .. 9, six) Req1 has waited 2 ms or more, so the slack is negative
 * and the check refuses; at 10 the table is empty and they start unchecked. */
static void check_fig10_drained(const struct pol_ops *p, const char *knob, int64_t sla_ms, uint64_t rejections)
{
	struct drv_result r;
	run_fig10(p, knob, sla_ms, &r);
	assert_int_equal(shim.nlog, 16);
	for (size_t i = 0; i < 16; i++) {
		int second = i >= 8;
		assert_int_equal(shim.log[i].start_ns, (int64_t)(2 + i) * MS);
		assert_int_equal(shim.log[i].node_type, i % 8);
		assert_int_equal(shim.log[i].nreq, second ? 2 : 1);
		assert_int_equal(shim.log[i].ids[0], second ? 1 : 0);
		if (second)
			assert_int_equal(shim.log[i].ids[1], 2);
	}
	assert_int_equal(llround(r.rows[0].finish_s * 1e3), 10);
	assert_int_equal(llround(r.rows[1].finish_s * 1e3), 18);
	assert_int_equal(llround(r.rows[2].finish_s * 1e3), 18);
	assert_int_equal(stat_of(&r, "preemptions"), 0);
	assert_int_equal(stat_of(&r, "merges"), 0);
	assert_int_equal(stat_of(&r, "slack_rejections"), rejections);
	assert_int_equal(stat_of(&r, "max_stack_depth"), 1);
	drv_result_free(&r);
	shim_reset(NULL, 0);
}

static void test_fig10_no_preemption(void **state)
{
	(void)state;
	check_fig10_drained(&lazy_policy_ops, "no-preemption", 1000000, 0);
	check_fig10_drained(&oracle_policy_ops, "no-preemption", 1000000, 0);
}

/* --no-slack-check changes the check alone: at an SLA of 1 ms the check keeps Req2 and Req3
 * off Req1's table (six rejections, the drained timeline); without it they preempt as in
 * Fig. 10, and --no-preemption with it is refused (each knob changes one thing). */
static void test_fig10_no_slack_check(void **state)
{
	(void)state;
	const struct pol_ops *pols[] = { &lazy_policy_ops, &oracle_policy_ops };
	for (size_t i = 0; i < 2; i++) {
		check_fig10_drained(pols[i], NULL, 1, 6);
		check_fig10(pols[i], "no-slack-check", 1);
		struct mdl_model m = fig10_model();
		struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
		double arr[1] = { 0.002 };
		uint32_t zero[1] = { 0 };
		struct trc_trace t = { .n = 1, .arrival_s = arr, .input_len = zero, .output_len = zero };
		struct eng_config c = trace_config(pols[i], &m, &hw.base, &t, 1 * MS);
		test_knob(&knobs, "no-slack-check", "1");
		test_knob(&knobs, "no-preemption", "1");
		struct drv_result r;
		char err[256] = "";
		assert_int_not_equal(eng_run(&c, &r, err, sizeof err), 0);
		assert_non_null(strstr(err, "--no-slack-check"));
	}
}

/* ---- Eq. 1 worked example ---- */

struct owned_latency {
	struct eng_latency *l;
	struct pol_latency pl;
};

/* max_len, max_out: the longest input (a pass node's tokens) and output (a decoder step's P) priced for */
static struct owned_latency latency_of(const struct mdl_model *m, const struct hw_model *hw, uint32_t max_cells,
                                       uint32_t max_len, uint32_t max_out)
{
	char err[256];
	struct owned_latency o = { .l = eng_latency_create(m, hw, max_cells, max_len, max_out, err, sizeof err) };
	assert_non_null(o.l);
	o.pl = eng_latency_estimates(o.l);
	return o;
}

/* Sec. IV-C: Req1 of Fig. 10 waits 2 time units and its eight nodes take one
 * unit each, so with an SLA of 30 units its slack without batching is
 * 30 - (2 + 8) = 20 (Eq. 1); batched with Req2 (also 8 units alone) Eq. 2
 * gives 30 - (2 + 8 + 8) = 12. One unit = 1 ms here. */
static void test_eq1_worked_example(void **state)
{
	(void)state;
	struct mdl_model m = fig10_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0.5);   /* batching costs do not enter Eq. 1-2 */
	struct owned_latency o = latency_of(&m, &hw.base, 64, 0, 0);
	struct slk_table t;
	char err[256];
	assert_int_equal(slk_init(&t, &m, &o.pl, 0, err, sizeof err), 0);
	for (uint32_t n = 0; n < 8; n++)
		assert_int_equal(t.node_ns[n], 1 * MS);           /* NodeLatency(n), profiled */
	int64_t exec_ns = slk_single_exec_ns(&t, 0);          /* Algorithm 1: A..H */
	assert_int_equal(exec_ns, 8 * MS);
	assert_int_equal(slk_slack_ns(30 * MS, 2 * MS, exec_ns), 20 * MS);
	assert_int_equal(slk_slack_ns(30 * MS, 2 * MS, exec_ns + slk_single_exec_ns(&t, 0)), 12 * MS);
	slk_fini(&t);
	eng_latency_destroy(o.l);
}

/* ---- where the predictors stop approving ---- */

/* Fig. 10's graph, 1 ms per node alone and 1.5 ms per node at batch 2.
 * Req1 arrives at 0 and runs; Req2 arrives at 1.5, during B. At the node
 * boundary t=2 Req1 has waited and run 2 ms with C..H (6 nodes, 6 ms alone)
 * left. With Req2 admitted:
 *  - lazy (Eq. 2): Req1's slack = SLA - (2 + 6 + 8): approved iff SLA >= 16;
 *  - oracle: Req2 runs A, B alone (2 ms), then C..H at batch 2 (6 x 1.5 =
 *    9 ms): drain 11 ms, slack SLA - (2 + 11): approved iff SLA >= 13.
 * Approved: A{2} 2-3, B{2} 3-4, C..H{1,2} 4-13: both finish at 13.
 * Refused: Req1's predicted slack is the same at every later boundary (lazy)
 * or smaller (oracle: 3 + 3 + 7.5 at t=3, ...), so Req2 waits until Req1
 * finishes at 8 (refusals at t=2..7: six) and finishes at 16. With an SLA
 * of 5 ms Req1 is late in any case, and still counts: refused. */
static void check_boundary(const struct pol_ops *p, int64_t sla_ns, int approved)
{
	struct mdl_model m = fig10_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0.5);
	double arr[2] = { 0, 0.0015 };
	uint32_t zero[2] = { 0 };
	struct trc_trace t = { .n = 2, .arrival_s = arr, .input_len = zero, .output_len = zero };
	shim_reset(p, 2);
	struct eng_config c = trace_config(&shim_ops, &m, &hw.base, &t, sla_ns);
	struct drv_result r;
	char err[256];
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	shim_check_all_done(&r, p->name);
	assert_int_equal(llround(r.rows[0].finish_s * 1e3), approved ? 13 : 8);
	assert_int_equal(llround(r.rows[1].start_s * 1e3), approved ? 2 : 8);
	assert_int_equal(llround(r.rows[1].finish_s * 1e3), approved ? 13 : 16);
	assert_int_equal(stat_of(&r, "preemptions"), approved ? 1 : 0);
	assert_int_equal(stat_of(&r, "slack_rejections"), approved ? 0 : 6);
	drv_result_free(&r);
	shim_reset(NULL, 0);
}

static void test_eq2_boundary_lazy(void **state)
{
	(void)state;
	check_boundary(&lazy_policy_ops, 5 * MS, 0);
	check_boundary(&lazy_policy_ops, 16 * MS - 1, 0);
	check_boundary(&lazy_policy_ops, 16 * MS, 1);
}

static void test_exact_boundary_oracle(void **state)
{
	(void)state;
	check_boundary(&oracle_policy_ops, 5 * MS, 0);
	check_boundary(&oracle_policy_ops, 13 * MS - 1, 0);
	check_boundary(&oracle_policy_ops, 13 * MS, 1);
}

/* ---- the oracle's drain time on hand-placed requests ---- */

/* 1 ms alone, 1.5 ms at batch 2.
 * Fig. 10 at t=4: Req1 waits at C (position 2), Req2 starts at A: A, B for
 * Req2 alone (2 ms), C..H for both (6 x 1.5 ms): 11 ms.
 * Seq model (e then d): R1 (3 input, 4 output steps) at position 0 has
 * e x3 and d x4 left; R2 (1 input, 2 output steps) at position 2 (e and one
 * d run) has d x1 left: e runs 3 x 1 ms, d once at batch 2 (1.5 ms) and
 * three times alone (3 ms): 7.5 ms. */
static void test_oracle_drain(void **state)
{
	(void)state;
	char err[256];
	struct mdl_model m = fig10_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0.5);
	struct owned_latency o = latency_of(&m, &hw.base, 64, 0, 0);
	struct slk_exact x;
	assert_int_equal(slk_exact_init(&x, &m, &o.pl, 64, err, sizeof err), 0);
	struct pol_request a = { .next_node = 2, .chain_len = 8 }, b = { .next_node = 0, .chain_len = 8 };
	struct pol_request *ab[2] = { &a, &b };
	assert_int_equal(slk_exact_drain_ns(&x, ab, 2), 11 * MS);
	assert_int_equal(slk_exact_drain_ns(&x, ab, 1), 6 * MS);       /* Req1 alone: C..H */
	slk_exact_fini(&x);
	eng_latency_destroy(o.l);

	struct mdl_model s = seq_model();
	struct fixed_hw hs = fixed_hw(&s, 1e-3, 0.5);
	o = latency_of(&s, &hs.base, 64, 0, 0);
	assert_int_equal(slk_exact_init(&x, &s, &o.pl, 64, err, sizeof err), 0);
	struct pol_request r1 = { .input_len = 3, .output_len = 4, .chain_len = 7, .next_node = 0 };
	struct pol_request r2 = { .input_len = 1, .output_len = 2, .chain_len = 3, .next_node = 2 };
	struct pol_request *rr[2] = { &r1, &r2 };
	assert_int_equal(slk_exact_drain_ns(&x, rr, 2), 7500000);
	assert_int_equal(slk_exact_drain_ns(&x, rr, 2), 7500000);      /* scratch is cleared between calls */
	slk_exact_fini(&x);
	eng_latency_destroy(o.l);
}

/* ---- Algorithm 1 on a real model ---- */

/* Transformer on the NPU: Algorithm 1 from the profiled per-node table
 * (static once, encoder input_len times, decoder dec_timesteps times) equals
 * the engine's latency of the same graph at batch 1 with the output length
 * set to dec_timesteps. */
static void test_algorithm1_transformer(void **state)
{
	(void)state;
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	char err[256];
	assert_int_equal(mdl_load("transformer", &m, err, sizeof err), 0);
	assert_int_equal(hw_open("npu", m, &hw, err, sizeof err), 0);
	struct owned_latency o = latency_of(m, hw, 1, 80, 80);
	struct slk_table t;
	assert_int_equal(slk_init(&t, m, &o.pl, 32, err, sizeof err), 0);
	for (uint32_t in = 1; in <= 80; in += 13)
		assert_int_equal(slk_single_exec_ns(&t, in), eng_latency_graph_ns(o.l, 1, in, 32));
	slk_fini(&t);
	eng_latency_destroy(o.l);

	/* lazy profiles its dec_timesteps: the --coverage quantile of --profile-len's lengths (Sec. IV-C).
	 * Uniform 1..10 at 0.85: P(<= 8) = 0.8 < 0.85 <= P(<= 9) = 0.9, so 9; among 30,000 draws the count
	 * at or below 8 is 24,000 give or take 69 (one sigma), far from the 25,500 that would flip it. */
	struct test_knobs k;
	struct eng_config c = { .policy = &lazy_policy_ops, .model = m, .hw = hw, .workers = 1, .rate_rps = 10,
	                        .arrival_cv = 1, .requests = 1, .seed = 1, .sla_ns = 100 * MS };
	struct trc_lengths *len;
	assert_int_equal(trc_lengths_parse("fixed:3", &len, err, sizeof err), 0);
	c.input_len = c.output_len = len;
	c.env.max_batch = 64;
	c.env.sla_ns = 100 * MS;
	c.env.params = test_knobs(&k, &lazy_policy_ops);
	struct drv_result r;
	const struct { const char *profile, *coverage; uint32_t want; } cases[] = {
		{ "fixed:3", "0.9", 3 }, { "uniform:1:10", "0.85", 9 }, { "uniform:1:10", "1", 10 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		c.env.params = test_knobs(&k, &lazy_policy_ops);
		test_knob(&k, "profile-len", "%s", cases[i].profile);
		test_knob(&k, "coverage", "%s", cases[i].coverage);
		assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
		assert_int_equal(stat_of(&r, "dec_timesteps"), cases[i].want);
		drv_result_free(&r);
	}
	/* a profile with no output length of 1 or more is refused, naming the knob */
	c.env.params = test_knobs(&k, &lazy_policy_ops);
	test_knob(&k, "profile-len", "fixed:0");
	assert_int_equal(eng_run(&c, &r, err, sizeof err), -1);
	assert_non_null(strstr(err, "--profile-len"));
	trc_lengths_free(len);
	hw_close(hw);
	mdl_free(m);
}

/* A run's single-input time (lazy's remaining estimate after a run) is the
 * node-by-node sum by definition: from every node type, every length up to
 * three passes round its segment, on a model with encoder, decoder and pass
 * segments (transformer-per-token has no pass; transformer has). */
static void test_run_single_is_node_sum(void **state)
{
	(void)state;
	const char *names[] = { "gnmt", "transformer", "transformer-per-token" };
	for (size_t k = 0; k < sizeof names / sizeof *names; k++) {
		struct mdl_model *m = NULL;
		struct hw_model *hw = NULL;
		char err[256];
		assert_int_equal(mdl_load(names[k], &m, err, sizeof err), 0);
		assert_int_equal(hw_open("npu", m, &hw, err, sizeof err), 0);
		struct owned_latency o = latency_of(m, hw, 1, 80, 80);
		struct slk_table t;
		assert_int_equal(slk_init(&t, m, &o.pl, 32, err, sizeof err), 0);
		for (uint32_t type = 0; type < m->nnodes; type++) {
			uint32_t nn = m->segments[m->nodes[type].segment].nnodes;
			uint64_t most = mdl_is_pass(m, type) ? nn - (type - m->segments[m->nodes[type].segment].first_node)
			                                     : 3ull * nn;
			uint64_t sum = 0;
			for (uint64_t n = 1; n <= most; n++) {
				sum += (uint64_t)slk_node_single_ns(&t, mdl_run_type(m, type, n - 1), 1, 17);
				assert_int_equal(slk_run_single_ns(&t, type, n, 17), sum);
			}
		}
		slk_fini(&t);
		eng_latency_destroy(o.l);
		hw_close(hw);
		mdl_free(m);
	}
}

/* ---- a pass node (a one-pass encoder) through the engine ---- */

/* A node P run once per request over all its L tokens, then one decoder
 * step D. Hardware: every node 1 ms a row (P: a token, D: a request), and P
 * costs each request 0.1 ms L^2 more (its attention). R0 (L = 3) and R1
 * (L = 2) arrive together at 0, one output step each. By hand:
 *  - lazy: P{0,1} over 5 tokens, 5 + 0.1 (9 + 4) = 6.3 ms; D{0,1} at batch 2,
 *    2 ms: both finish at 8.3.
 *  - graph: the batch padded to 3 tokens each: P over 6 tokens and 2 x 0.9:
 *    7.8 ms; D at batch 2: both at 9.8.
 *  - serial: R0 P 3 + 0.9, D 1: 4.9; then R1 P 2 + 0.4, D 1: 4.9 + 3.4 = 8.3. */
static void test_pass_node_timeline(void **state)
{
	(void)state;
	char err[256];
	const char *text = "model p\nsource test\ninput_len 3\noutput_len 1\n"
	                   "node P pass gemm=1,4,4 attn=1,4,L\nnode D decoder gemm=1,4,4\n";
	char path[] = "/tmp/simbatch-pass-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct mdl_model *m = NULL;
	assert_int_equal(mdl_load_file(path, &m, err, sizeof err), 0);
	unlink(path);
	struct fixed_hw hw = fixed_hw(m, 1e-3, 1);
	hw.member_s = 1e-4;
	double arr[2] = { 0, 0 };
	uint32_t in[2] = { 3, 2 }, out[2] = { 1, 1 };
	struct trc_trace t = { .n = 2, .arrival_s = arr, .input_len = in, .output_len = out };
	static const struct { const struct pol_ops *p; double finish_ms[2]; } want[] = {
		{ &lazy_policy_ops, { 8.3, 8.3 } }, { &oracle_policy_ops, { 8.3, 8.3 } },
		{ &graph_policy_ops, { 9.8, 9.8 } }, { &serial_policy_ops, { 4.9, 8.3 } },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		struct eng_config c = trace_config(want[i].p, m, &hw.base, &t, 1000 * MS);
		test_knob_if_taken(&knobs, "profile-len", "fixed:1");
		struct drv_result r;
		if (eng_run(&c, &r, err, sizeof err) != 0)
			fail_msg("%s: %s", want[i].p->name, err);
		assert_int_equal(r.completed, 2);
		for (int k = 0; k < 2; k++)
			if (llround(r.rows[k].finish_s * 1e7) != llround(want[i].finish_ms[k] * 1e4))
				fail_msg("%s: request %d finished at %.4f ms, not %.1f", want[i].p->name, k,
				         r.rows[k].finish_s * 1e3, want[i].finish_ms[k]);
		drv_result_free(&r);
	}
	mdl_free(m);
}

/* ---- every policy, every built-in model, random traffic ---- */

struct model_names {
	char names[32][MDL_NAME_MAX];
	int n;
};

static void collect_model(const char *name, void *ctx)
{
	struct model_names *mn = ctx;
	if (mn->n < 32)
		snprintf(mn->names[mn->n++], MDL_NAME_MAX, "%s", name);
}

/* Loads built-in model name with the NPU: 1, or 0 (nothing held) for an
 * LLM, which is served by iterations, not nodes. */
static int open_node_model(const char *name, struct mdl_model **m, struct hw_model **hw)
{
	char err[256];
	if (mdl_load(name, m, err, sizeof err) != 0)
		fail_msg("%s", err);
	if ((*m)->is_llm) {
		mdl_free(*m);
		return 0;
	}
	if (hw_open("npu", *m, hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	return 1;
}

/* Runs policy p on model m (NPU) with Poisson traffic at about twice what
 * one request at a time can serve, so every batching policy batches and
 * lazy preempts. Checks conservation and order (the shim) and that no
 * request's latency is below its graph's latency alone at batch 1, the
 * service it would get on an idle device. */
static void check_policy_on_model(const struct pol_ops *p, const struct mdl_model *m, struct hw_model *hw,
                                  uint32_t workers, uint64_t n)
{
	char err[256], what[128];
	snprintf(what, sizeof what, "%s on %s, %u worker(s)", p->name, m->name, workers);
	struct trc_lengths *in = NULL, *out = NULL;
	assert_int_equal(trc_lengths_parse(m->uses_input_len ? m->input_len_spec : "fixed:0", &in, err, sizeof err), 0);
	assert_int_equal(trc_lengths_parse(m->uses_output_len ? m->output_len_spec : "fixed:0", &out, err, sizeof err), 0);
	uint32_t in_max = trc_lengths_max(in), out_max = trc_lengths_max(out);
	uint32_t max_cells = m->is_tree && in_max > p->default_max_batch ? in_max : p->default_max_batch;
	struct owned_latency o = latency_of(m, hw, max_cells, in_max, out_max);
	double alone_s = eng_latency_graph_ns(o.l, 1, (uint32_t)ceil(trc_lengths_mean(in)),
	                                      (uint32_t)ceil(trc_lengths_mean(out))) * 1e-9;

	struct eng_config c = { .policy = &shim_ops, .model = m, .hw = hw, .workers = workers,
	                        .rate_rps = 2.0 * workers / alone_s, .arrival_cv = 1, .requests = n, .seed = 11,
	                        .input_len = in, .output_len = out, .sla_ns = 100 * MS, .keep_request_rows = 1 };
	c.env.max_batch = p->default_max_batch;
	c.env.sla_ns = c.sla_ns;     /* every knob its default: lazy profiles the model's output lengths */
	/* A policy may refuse a model it does not serve (top-up batching needs an
	 * encoder-decoder model): ask its init first, and skip with its reason. */
	struct pol_env env = c.env;
	env.model = m;
	env.workers = workers;
	env.lat = o.pl;
	void *probe = calloc(1, p->state_size ? p->state_size : 1);
	assert_non_null(probe);
	int refused = p->init((struct pol_state *)probe, &env, err, sizeof err) != 0;
	if (!refused && p->fini)
		p->fini((struct pol_state *)probe);
	free(probe);
	if (refused) {
		print_message("  %-9s %-12s skipped: %s\n", p->name, m->name, err);
		goto done;
	}
	shim_reset(p, n);
	c.policy = &shim_ops;
	struct drv_result r;
	if (eng_run(&c, &r, err, sizeof err) != 0)
		fail_msg("%s: %s", what, err);
	shim_check_all_done(&r, what);
	assert_int_equal(r.nrows, n);
	for (size_t i = 0; i < r.nrows; i++) {
		const struct drv_request_row *w = &r.rows[i];
		assert_true(w->input_len <= in_max && w->output_len <= out_max);
		int64_t alone_ns = eng_latency_graph_ns(o.l, 1, w->input_len, w->output_len);
		int64_t got_ns = llround((w->finish_s - w->arrival_s) * 1e9);
		/* 1 ns of slack for the rounding of the row's seconds */
		if (got_ns + 1 < alone_ns)
			fail_msg("%s: request %llu took %lld ns, alone it takes %lld ns", what,
			         (unsigned long long)w->id, (long long)got_ns, (long long)alone_ns);
	}
	print_message("  %-9s %-12s w=%u: mean %.2f ms, mean batch %.2f\n", p->name, m->name, workers,
	              r.summary.mean_ms, r.mean_batch);
	drv_result_free(&r);
	shim_reset(NULL, 0);
done:
	eng_latency_destroy(o.l);
	trc_lengths_free(in);
	trc_lengths_free(out);
}

static void test_every_policy_every_model(void **state)
{
	(void)state;
	struct model_names mn = { .n = 0 };
	assert_true(mdl_list(collect_model, &mn) >= 5);
	size_t npol;
	const struct pol_ops *const *pols = pol_registry(&npol);
	for (int i = 0; i < mn.n; i++) {
		struct mdl_model *m = NULL;
		struct hw_model *hw = NULL;
		if (!open_node_model(mn.names[i], &m, &hw))
			continue;
		/* long chains cost events, not accuracy: fewer requests for them */
		uint64_t n = m->uses_output_len || m->uses_input_len ? 150 : 400;
		for (size_t p = 0; p < npol; p++) {
			check_policy_on_model(pols[p], m, hw, 1, n);
			if (pols[p] == &lazy_policy_ops || pols[p] == &oracle_policy_ops)
				check_policy_on_model(pols[p], m, hw, 2, n);
		}
		hw_close(hw);
		mdl_free(m);
	}
}

/* Remaining runs of node type t from r's position, position by position. */
static uint32_t runs_left(const struct mdl_model *m, const struct pol_request *r, uint32_t t)
{
	uint32_t n = 0;
	for (uint64_t pos = r->next_node; pos < r->chain_len; pos++)
		n += mdl_node_at(m, pos, r->input_len, r->output_len) == t;
	return n;
}

/* The drain by its definition, from each request's remaining runs of each
 * type (left[i * nnodes + t]): type by type, the k-th remaining run batches
 * every request with more than k left, priced at that batch (split at 64). */
static int64_t drain_split_by_definition(const struct mdl_model *m, struct eng_latency *l, const uint32_t *left,
                                         uint32_t n, uint32_t max_cells)
{
	int64_t total = 0;
	for (uint32_t t = 0; t < m->nnodes; t++)
		for (uint32_t k = 0;; k++) {
			uint32_t c = 0;
			for (uint32_t i = 0; i < n; i++)
				c += left[i * m->nnodes + t] > k;
			if (!c)
				break;
			total += (c / max_cells) * eng_latency_node_ns(l, t, max_cells) +
			         (c % max_cells ? eng_latency_node_ns(l, t, c % max_cells) : 0);
		}
	return total;
}

static int64_t drain_by_definition(const struct mdl_model *m, struct eng_latency *l, const uint32_t *left, uint32_t n)
{
	return drain_split_by_definition(m, l, left, n, 64);
}

static void count_left(const struct mdl_model *m, const struct pol_request *r, uint32_t *left)
{
	for (uint32_t t = 0; t < m->nnodes; t++)
		left[t] = runs_left(m, r, t);
}

/* The oracle's drain three ways on GNMT at the NPU's latencies, 40 requests
 * at random lengths and positions: the definition above; slk_exact_drain_ns
 * (a histogram of the counts when there are many and they are short, a
 * sort when they are long: lengths up to 80, then up to 800); and the walk,
 * which keeps the sorted counts and moves one count per request and node
 * while five requests at the same node run 40 nodes together. */
static void check_drain_three_ways(uint32_t max_len)
{
	char err[256];
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	if (mdl_load("gnmt", &m, err, sizeof err) != 0 || hw_open("npu", m, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	struct owned_latency o = latency_of(m, hw, 64, 0, 0);
	struct slk_exact x;
	assert_int_equal(slk_exact_init(&x, m, &o.pl, 64, err, sizeof err), 0);
	struct pol_request r[40], *reqs[40];
	uint64_t seed = 12345;
	for (uint32_t i = 0; i < 40; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		r[i] = (struct pol_request){ .input_len = 1 + (uint32_t)(seed >> 33) % max_len,
		                             .output_len = 1 + (uint32_t)(seed >> 45) % max_len };
		r[i].chain_len = mdl_chain_length(m, r[i].input_len, r[i].output_len);
		reqs[i] = &r[i];
	}
	/* the first five stand at the decoder's first node with at least 8 steps to go, the rest anywhere */
	for (uint32_t i = 0; i < 40; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (i < 5) {
			r[i].output_len = 8 + (uint32_t)(seed >> 40) % (max_len - 10);
			r[i].chain_len = mdl_chain_length(m, r[i].input_len, r[i].output_len);
			r[i].next_node = 5ull * r[i].input_len + 6ull * ((seed >> 20) % 3);
		} else {
			r[i].next_node = (seed >> 20) % r[i].chain_len;
		}
	}
	uint32_t left[40 * 16];
	assert_true(m->nnodes <= 16);
	for (uint32_t i = 0; i < 40; i++)
		count_left(m, &r[i], left + i * m->nnodes);
	int64_t want = drain_by_definition(m, o.l, left, 40);
	assert_int_equal(slk_exact_drain_ns(&x, reqs, 40), want);
	assert_int_equal(slk_exact_walk_begin(&x, reqs, 40), want);
	int64_t walked = want;
	for (uint32_t step = 0; step < 40; step++) {
		uint32_t t = mdl_node_at(m, r[0].next_node, r[0].input_len, r[0].output_len);
		for (uint32_t i = 0; i < 5; i++) {
			assert_int_equal(mdl_node_at(m, r[i].next_node, r[i].input_len, r[i].output_len), t);
			walked += slk_exact_walk_step(&x, t, left[i * m->nnodes + t]);
			r[i].next_node++;
			count_left(m, &r[i], left + i * m->nnodes);    /* from the new position, not by the walk's rule */
		}
		assert_int_equal(walked, drain_by_definition(m, o.l, left, 40));
	}
	slk_exact_walk_end(&x);
	assert_int_equal(slk_exact_drain_ns(&x, reqs, 40), walked);
	slk_exact_fini(&x);
	eng_latency_destroy(o.l);
	hw_close(hw);
	mdl_free(m);
}

/* slk_exact_drain_ns (a repeating segment from one key a request) and the
 * walk's start (a count a type) against the definition: 60 requests at
 * random lengths and positions, batches split at max_cells. */
static void check_drain_by_definition(const char *model, uint32_t max_len, uint32_t max_cells)
{
	char err[256];
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	if (mdl_load(model, &m, err, sizeof err) != 0 || hw_open("npu", m, &hw, err, sizeof err) != 0)
		fail_msg("%s", err);
	struct owned_latency o = latency_of(m, hw, 64, 0, 0);
	struct slk_exact x;
	assert_int_equal(slk_exact_init(&x, m, &o.pl, max_cells, err, sizeof err), 0);
	enum { N = 60 };
	struct pol_request r[N], *reqs[N];
	uint32_t *left = calloc((size_t)N * m->nnodes, sizeof *left);
	assert_non_null(left);
	uint64_t seed = 777;
	for (uint32_t n = 1; n <= N; n += 19) {
		for (uint32_t i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			r[i] = (struct pol_request){ .input_len = 1 + (uint32_t)(seed >> 33) % max_len,
			                             .output_len = 1 + (uint32_t)(seed >> 45) % max_len };
			r[i].chain_len = mdl_chain_length(m, r[i].input_len, r[i].output_len);
			/* a quarter not started, the rest anywhere */
			r[i].next_node = (seed >> 20) % 4 == 0 ? 0 : (seed >> 22) % r[i].chain_len;
			reqs[i] = &r[i];
			count_left(m, &r[i], left + i * m->nnodes);
		}
		int64_t want = drain_split_by_definition(m, o.l, left, n, max_cells);
		assert_int_equal(slk_exact_drain_ns(&x, reqs, n), want);
		assert_int_equal(slk_exact_walk_begin(&x, reqs, n), want);
		slk_exact_walk_end(&x);
	}
	free(left);
	slk_exact_fini(&x);
	eng_latency_destroy(o.l);
	hw_close(hw);
	mdl_free(m);
}

static void test_oracle_drain_three_ways(void **state)
{
	(void)state;
	check_drain_three_ways(80);
	check_drain_three_ways(800);
	check_drain_by_definition("gnmt", 40, 64);
	check_drain_by_definition("gnmt", 12, 16);     /* levels of more than 16: split */
	check_drain_by_definition("gnmt", 3, 4);       /* short: many requests share a level */
	check_drain_by_definition("deepspeech2", 30, 8);   /* static, encoder, static */
	check_drain_by_definition("las", 50, 64);
	check_drain_by_definition("resnet50", 1, 16);  /* one static segment */
}

/* One run of p on m through the shim, with runs (policy.h) on or off. */
static void run_with_runs(const struct pol_ops *p, const struct mdl_model *m, struct hw_model *hw, uint32_t workers,
                          double load, int64_t sla_ns, int runs, struct drv_result *r, uint64_t *nruns)
{
	char err[256];
	struct trc_lengths *in = NULL, *out = NULL;
	assert_int_equal(trc_lengths_parse(m->uses_input_len ? m->input_len_spec : "fixed:0", &in, err, sizeof err), 0);
	assert_int_equal(trc_lengths_parse(m->uses_output_len ? m->output_len_spec : "fixed:0", &out, err, sizeof err), 0);
	double cap = eng_capacity_rps(m, hw, workers, 1, (uint32_t)ceil(trc_lengths_mean(in)),
	                              (uint32_t)ceil(trc_lengths_mean(out)), err, sizeof err);
	assert_true(cap > 0);
	uint64_t n = sla_ns < 100 * MS ? 1000 : 300;   /* decisions the tight SLA flips need a longer run */
	struct eng_config c = { .policy = &shim_ops, .model = m, .hw = hw, .workers = workers, .rate_rps = load * cap,
	                        .arrival_cv = 1, .requests = n, .seed = 5, .input_len = in, .output_len = out,
	                        .sla_ns = sla_ns, .keep_request_rows = 1 };
	c.env.max_batch = p->default_max_batch;
	c.env.sla_ns = c.sla_ns;     /* every knob its default */
	shim_reset(p, n);
	c.node_by_node = !runs;
	int rc = eng_run(&c, r, err, sizeof err);
	if (rc != 0)
		fail_msg("%s on %s: %s", p->name, m->name, err);
	shim_check_all_done(r, p->name);
	*nruns = shim.runs;
	shim_reset(NULL, 0);
	trc_lengths_free(in);
	trc_lengths_free(out);
}

/* Whether a request's chain has two nodes in a row inside one segment
 * span that a run may cover: not in a tree. */
static int runs_possible(const struct mdl_model *m)
{
	for (uint32_t s = 0; !m->is_tree && s < m->nsegments; s++) {
		enum mdl_kind k = m->segments[s].kind;
		if (m->segments[s].nnodes > 1 || k == MDL_ENCODER || k == MDL_DECODER)
			return 1;
	}
	return 0;
}

/* Two runs of one configuration, node by node (a) and in runs (b): every
 * latency, every counter, every row. */
static void assert_same_run(const struct drv_result *a, const struct drv_result *b, const struct mdl_model *m,
                            const char *what)
{
	assert_memory_equal(&a->summary, &b->summary, sizeof a->summary);
	assert_int_equal(a->events, b->events);
	assert_int_equal(a->tasks, b->tasks);
	assert_int_equal(a->task_members, b->task_members);
	assert_true(a->sim_end_s == b->sim_end_s && a->busy_fraction == b->busy_fraction);
	assert_memory_equal(a->node_tasks, b->node_tasks, m->nnodes * sizeof *a->node_tasks);
	assert_memory_equal(a->node_cells, b->node_cells, m->nnodes * sizeof *a->node_cells);
	assert_same_stats_and_rows(a, b, what, "node by node", "in runs");
}

/* Runs are a shortcut, not a model: every built-in model under lazy and the
 * oracle, 1 and 3 workers, light load and overload at the paper's SLA, and
 * near capacity at a tight SLA (slack rejections, where the members'
 * remaining estimates after a run decide), gives the same result
 * run by run as node by node (the second implementation): every latency,
 * every counter, every row. Each case whose chain allows them must have taken runs. */
static void runs_against_nodes(const struct mdl_model *m, struct hw_model *hw)
{
	const struct pol_ops *pols[2] = { &lazy_policy_ops, &oracle_policy_ops };
	const double loads[3] = { 0.3, 3.0, 1.3 };    /* of the serial capacity */
	const int64_t slas_ns[3] = { 100 * MS, 100 * MS, 20 * MS };
	static const uint32_t workers[3] = { 1, 3, 8 };
	char what[160];
	for (int p = 0; p < 2; p++)
		for (int wi = 0; wi < 3; wi++)
			for (int l = 0; l < 3; l++) {
				uint32_t w = workers[wi];
				struct drv_result a, b;
				uint64_t runs_a, runs_b;
				run_with_runs(pols[p], m, hw, w, loads[l], slas_ns[l], 0, &a, &runs_a);
				run_with_runs(pols[p], m, hw, w, loads[l], slas_ns[l], 1, &b, &runs_b);
				print_message("  %-7s %-12s w=%u load %.1f SLA %lld ms: %llu events, %llu runs\n",
				              pols[p]->name, m->name, w, loads[l], (long long)(slas_ns[l] / MS),
				              (unsigned long long)b.events, (unsigned long long)runs_b);
				assert_int_equal(runs_a, 0);
				if (runs_possible(m))
					assert_true(runs_b > 0);
				snprintf(what, sizeof what, "%s on %s, %u worker(s), load %.1f", pols[p]->name, m->name,
				         w, loads[l]);
				assert_same_run(&a, &b, m, what);
				drv_result_free(&a);
				drv_result_free(&b);
			}
}

/* ... on the NPU for every built-in model, and on the roofline for the
 * models whose decoder steps attend to their own lengths (there a run prices
 * each step apart: the NPU's cycles do not change with them). */
static void test_runs_change_nothing(void **state)
{
	(void)state;
	struct model_names mn = { .n = 0 };
	char err[256];
	assert_true(mdl_list(collect_model, &mn) >= 5);
	int stepped = 0;
	for (int i = 0; i < mn.n; i++) {
		struct mdl_model *m = NULL;
		struct hw_model *hw = NULL;
		if (!open_node_model(mn.names[i], &m, &hw))
			continue;
		runs_against_nodes(m, hw);
		hw_close(hw);
		if (m->has_step_terms) {
			if (hw_open("gpu-h100-roofline", m, &hw, err, sizeof err) != 0)
				fail_msg("%s", err);
			runs_against_nodes(m, hw);
			hw_close(hw);
			stepped++;
		}
		mdl_free(m);
	}
	assert_true(stepped >= 1);
}

/* Cut runs where arrivals meet boundaries (policy.h, "Optional capability: runs": on several
 * devices an arrival ends only the runs whose boundaries wait for it). Every
 * node costs 1 ms (then 1 ms more per extra member: boundaries on a whole
 * millisecond either way) and requests arrive on whole milliseconds, two in
 * three alone and the rest together, so an arrival often falls on a
 * boundary of several devices at once, where node by node every device
 * ending there is offered in device order after the instant's events.
 * Lazy and the oracle on 2, 3 and 5 devices, a loose and a tight SLA: the
 * same result as node by node, with runs taken. */
static void test_cut_runs_at_shared_instants(void **state)
{
	(void)state;
	enum { N = 600 };
	static double arr[N];
	static uint32_t in[N], out[N];
	uint64_t x = 7;
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		arr[i] = (double)((i * 2) / 3 * 3) * 1e-3;
		in[i] = 1 + (uint32_t)(x >> 33) % 12;
		out[i] = 1 + (uint32_t)(x >> 45) % 12;
	}
	struct trc_trace t = { .n = N, .arrival_s = arr, .input_len = in, .output_len = out };
	struct mdl_model m = seq_model();
	const struct pol_ops *pols[2] = { &lazy_policy_ops, &oracle_policy_ops };
	const uint32_t workers[3] = { 2, 3, 5 };
	const double growth[2] = { 0, 1 };
	const int64_t slas_ns[2] = { 1000 * MS, 40 * MS };
	char err[256], what[160];
	for (int p = 0; p < 2; p++)
		for (int w = 0; w < 3; w++)
			for (int g = 0; g < 2; g++)
				for (int k = 0; k < 2; k++) {
					struct fixed_hw hw = fixed_hw(&m, 1e-3, growth[g]);
					struct eng_config c = trace_config(&shim_ops, &m, &hw.base, &t, slas_ns[k]);
					c.workers = workers[w];
					c.env.max_batch = 8;
					struct drv_result r[2];
					uint64_t runs[2];
					for (int by_runs = 0; by_runs < 2; by_runs++) {
						shim_reset(pols[p], N);
						c.env.params = test_knobs(&knobs, pols[p]);   /* shim_ops was another's at trace_config */
						test_knob_if_taken(&knobs, "profile-len", "fixed:4");
						c.node_by_node = !by_runs;
						int rc = eng_run(&c, &r[by_runs], err, sizeof err);
						if (rc != 0)
							fail_msg("%s: %s", pols[p]->name, err);
						shim_check_all_done(&r[by_runs], pols[p]->name);
						runs[by_runs] = shim.runs;
						shim_reset(NULL, 0);
					}
					snprintf(what, sizeof what, "%s, %u workers, growth %g, SLA %lld ms", pols[p]->name,
					         workers[w], growth[g], (long long)(slas_ns[k] / MS));
					print_message("  %s: %llu tasks, %llu runs\n", what, (unsigned long long)r[1].tasks,
					              (unsigned long long)runs[1]);
					assert_int_equal(runs[0], 0);
					assert_true(runs[1] > 0);
					assert_same_run(&r[0], &r[1], &m, what);
					drv_result_free(&r[0]);
					drv_result_free(&r[1]);
				}
}

/* Same config twice: identical results. */
static void test_determinism(void **state)
{
	(void)state;
	struct mdl_model m = seq_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-4, 0.1);
	struct trc_lengths *len;
	char err[256];
	assert_int_equal(trc_lengths_parse("uniform:1:20", &len, err, sizeof err), 0);
	const struct pol_ops *pols[2] = { &lazy_policy_ops, &oracle_policy_ops };
	for (int p = 0; p < 2; p++) {
		struct eng_config c = trace_config(pols[p], &m, &hw.base, NULL, 5 * MS);
		c.rate_rps = 800;
		c.arrival_cv = 1;
		c.requests = 5000;
		c.keep_request_rows = 0;
		c.input_len = c.output_len = len;
		test_knob_if_taken(&knobs, "profile-len", "fixed:18");
		struct drv_result r1, r2;
		assert_int_equal(eng_run(&c, &r1, err, sizeof err), 0);
		assert_int_equal(eng_run(&c, &r2, err, sizeof err), 0);
		assert_memory_equal(&r1.summary, &r2.summary, sizeof r1.summary);
		assert_int_equal(r1.events, r2.events);
		assert_int_equal(r1.npolicy_stats, r2.npolicy_stats);
		for (size_t i = 0; i < r1.npolicy_stats; i++)
			assert_true(r1.policy_stats[i].value == r2.policy_stats[i].value);
		drv_result_free(&r1);
		drv_result_free(&r2);
	}
	trc_lengths_free(len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fig10_lazy),
		cmocka_unit_test(test_fig10_oracle),
		cmocka_unit_test(test_fig10_no_preemption),
		cmocka_unit_test(test_fig10_no_slack_check),
		cmocka_unit_test(test_eq1_worked_example),
		cmocka_unit_test(test_eq2_boundary_lazy),
		cmocka_unit_test(test_exact_boundary_oracle),
		cmocka_unit_test(test_oracle_drain),
		cmocka_unit_test(test_oracle_drain_three_ways),
		cmocka_unit_test(test_algorithm1_transformer),
		cmocka_unit_test(test_pass_node_timeline),
		cmocka_unit_test(test_determinism),
		cmocka_unit_test(test_every_policy_every_model),
		cmocka_unit_test(test_runs_change_nothing),
		cmocka_unit_test(test_cut_runs_at_shared_instants),
		cmocka_unit_test(test_run_single_is_node_sum),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
