/* tests/test_llm.c: LLM serving (DESIGN.md section 3b) through the engine:
 * hand-computed iteration timelines of continuous and chunked batching on a
 * device whose every iteration takes 1 ms, a KV cache that fills and
 * preempts the request the documented rule names, conservation of output
 * tokens under both policies, and the cost of an iteration worked out from
 * the model's shapes. */
#include <math.h>
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
#include "policy_knobs.h"
#include "hwmodels/llm_cost.h"
#include "policies/router/router.h"

#define MS 1000000LL

extern const struct pol_ops continuous_policy_ops, chunked_policy_ops;

/* ---- a device whose iteration takes exactly iter_s: the model's 4 x layers
 * GEMMs share it, the LM head and attention cost nothing (infinite peak and
 * bandwidth), and its memory holds the weights and exactly kv_blocks blocks ---- */

struct iter_hw {
	struct hw_model base;
	double iter_s;
	double growth;               /* the iteration takes iter_s x (1 + growth x its tokens) */
	uint64_t kv_blocks;
	uint32_t block_size;
};

static int iter_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out, char *err,
                          size_t errlen)
{
	(void)hw, (void)t, (void)b, (void)out;
	snprintf(err, errlen, "no nodes");
	return -1;
}

static int iter_gemm_cost(const struct hw_model *hw, uint64_t m, uint64_t k, uint64_t n, enum hw_dataflow df,
                          int weight_operand, struct hw_gemm_cost *out, char *err, size_t errlen)
{
	(void)m, (void)k, (void)df, (void)weight_operand, (void)err, (void)errlen;
	const struct iter_hw *h = (const struct iter_hw *)hw;
	const struct mdl_llm *l = &hw->model->llm;
	*out = (struct hw_gemm_cost){ .seconds = n == l->vocab ? 0 : h->iter_s / (4.0 * l->layers) * (1 + h->growth * (double)m) };
	return 0;
}

static void iter_device(const struct hw_model *hw, struct hw_device *out)
{
	const struct iter_hw *h = (const struct iter_hw *)hw;
	const struct mdl_llm *l = &hw->model->llm;
	*out = (struct hw_device){ .mem_bytes = (double)mdl_llm_weight_bytes(l) +
	                                        (double)h->kv_blocks * h->block_size * mdl_llm_kv_bytes_per_token(l),
	                           .mem_bw_bytes_s = INFINITY, .peak_flops = INFINITY };
}

static const struct hw_ops iter_hw_ops = { .name = "iter", .node_cost = iter_node_cost, .gemm_cost = iter_gemm_cost,
	                                       .device = iter_device };

/* ---- a wrapper that logs every iteration and every request's first token ---- */

struct logged_iter {
	int64_t start_ns;
	uint32_t n, pad;
	uint64_t ids[8];
	uint32_t tokens[8], context[8];
};

static struct {
	const struct pol_ops *inner;
	struct logged_iter log[64];
	size_t nlog;
	int64_t first_token_ns[64];
	uint64_t emitted[4096];      /* output tokens seen per request id */
	uint64_t output_len[4096];
	int violations;
	uint64_t ends;               /* task ends the policy heard of (a decode run's inner ones it does not) */
} wrap;

static struct pol_ops wrap_ops;

static int wrap_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return wrap.inner->init(st, env, err, errlen);
}

static void wrap_fini(struct pol_state *st)
{
	wrap.inner->fini(st);
}

static int run_prefix_cache;                  /* the next run_trace's --prefix-cache */
static int run_async;                         /* ... and --async-scheduling */
static const uint64_t *run_prefix_id;         /* [request] its shared prefix (NULL: none) ... */
static const uint32_t *run_prefix_len;        /* ... over this many prompt tokens */
static const uint64_t *run_inner_id;          /* [request] the inner prefix inside it (NULL: none) ... */
static const uint32_t *run_inner_len;         /* ... over this many of its first tokens */

static void wrap_arrival(struct pol_state *st, struct pol_request *r, int64_t now)
{
	if (r->id < 4096)
		wrap.output_len[r->id] = r->output_len;
	wrap.inner->on_arrival(st, r, now);
}

static void wrap_done(struct pol_state *st, const struct pol_task *t, int64_t now)
{
	wrap.ends++;
	if (wrap.nlog < 64) {
		struct logged_iter *l = &wrap.log[wrap.nlog++];
		*l = (struct logged_iter){ .start_ns = t->start_ns, .n = t->nreq, .pad = t->pad_tokens };
		for (uint32_t i = 0; i < t->nreq && i < 8; i++) {
			l->ids[i] = t->reqs[i]->id;
			l->tokens[i] = t->tokens[i];
			l->context[i] = t->context[i];
		}
	}
	for (uint32_t i = 0; i < t->nreq; i++) {
		const struct pol_request *r = t->reqs[i];
		if (r->id < 64 && r->next_node == 1 && wrap.first_token_ns[r->id] < 0)
			wrap.first_token_ns[r->id] = r->first_token_ns;
		if (r->id < 4096)
			wrap.emitted[r->id] = r->next_node;   /* the caller counts them; it may only grow by one */
	}
	wrap.inner->on_task_done(st, t, now);
}

static int wrap_next(struct pol_state *st, uint32_t dev, int64_t now, struct pol_task *t, int64_t *wake)
{
	return wrap.inner->next_task(st, dev, now, t, wake);
}

static size_t wrap_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	return wrap.inner->stats(st, out, max);
}

static void wrap_reset(const struct pol_ops *inner)
{
	memset(&wrap, 0, sizeof wrap);
	for (int i = 0; i < 64; i++)
		wrap.first_token_ns[i] = -1;
	wrap.inner = inner;
	wrap_ops = *inner;
	wrap_ops.init = wrap_init;
	wrap_ops.fini = wrap_fini;
	wrap_ops.on_arrival = wrap_arrival;
	wrap_ops.on_task_done = wrap_done;
	wrap_ops.next_task = wrap_next;
	wrap_ops.stats = wrap_stats;
}

static struct mdl_model *tiny(void)
{
	struct mdl_model *m = NULL;
	char err[256];
	if (mdl_load("llm-tiny", &m, err, sizeof err) != 0)
		fail_msg("%s", err);
	return m;
}

/* Runs the trace under p with 1 ms iterations; the result in *r. */
static double run_growth;      /* iter_hw's growth for the next run_trace (0: every iteration 1 ms) */
static int64_t run_tpot_slo_ns;
static int64_t run_window_ns;
static uint32_t run_workers = 1;
static int64_t run_ttft_slo_ns;
static uint32_t run_replicas;                 /* > 1: a fleet behind run_router (policies/fleet.h) */
static const struct router_ops *run_router;
static int64_t run_refresh_ns;
static const struct fleet_disagg *run_disagg;  /* a fleet split into prefill and decode pools */

static uint64_t run_inner_ends;   /* the last run_trace's iterations that ended inside decode runs */
static double test_link_s(const void *link, double bytes, int *extrapolated);   /* a KV link, below */

/* Two runs of one configuration, iteration by iteration (a) and with decode
 * runs (b): every latency, token figure, counter, row and replica's share. */
static void assert_same_llm_run(const struct drv_result *a, const struct drv_result *b, const char *what)
{
	if (memcmp(&a->summary, &b->summary, sizeof a->summary) || memcmp(&a->ttft, &b->ttft, sizeof a->ttft) ||
	    memcmp(&a->tpot, &b->tpot, sizeof a->tpot) || a->events != b->events || a->tasks != b->tasks ||
	    a->task_members != b->task_members || a->sim_end_s != b->sim_end_s || a->busy_fraction != b->busy_fraction ||
	    a->itl_count != b->itl_count || a->itl_mean_ms != b->itl_mean_ms ||
	    memcmp(a->itl_cdf_ms, b->itl_cdf_ms, sizeof a->itl_cdf_ms) || a->iter_tokens != b->iter_tokens ||
	    a->kv_mean_fraction != b->kv_mean_fraction || a->goodput_rps != b->goodput_rps)
		fail_msg("%s: decode runs changed a result (tasks %llu by iterations, %llu in runs; latency mean %.9g "
		         "against %.9g ms, ITL mean %.9g against %.9g, KV %.9g against %.9g)", what,
		         (unsigned long long)a->tasks, (unsigned long long)b->tasks, a->summary.mean_ms, b->summary.mean_ms,
		         a->itl_mean_ms, b->itl_mean_ms, a->kv_mean_fraction, b->kv_mean_fraction);
	assert_same_stats_and_rows(a, b, what, "by iterations", "in decode runs");
	assert_int_equal(a->nreplicas, b->nreplicas);
	if (a->nreplicas)
		assert_memory_equal(a->replicas, b->replicas, a->nreplicas * sizeof *a->replicas);
}

static void run_trace(const struct pol_ops *p, struct mdl_model *m, uint64_t kv_blocks, uint32_t budget, double *arr,
                      uint32_t *in, uint32_t *out, size_t n, struct drv_result *r)
{
	struct iter_hw hw = { .base = { .ops = &iter_hw_ops, .model = m }, .iter_s = 1e-3, .kv_blocks = kv_blocks,
	                      .block_size = 4, .growth = run_growth };
	strcpy(hw.base.label, "iter");
	/* the prefixes as a trace's prefix columns give them (a router sees them at arrival) */
	struct trc_trace t = { .n = n, .arrival_s = arr, .input_len = in, .output_len = out,
	                       .prefix_id = (uint64_t *)run_prefix_id, .prefix_len = (uint32_t *)run_prefix_len,
	                       .inner_id = (uint64_t *)run_inner_id, .inner_len = (uint32_t *)run_inner_len };
	wrap_reset(p);
	struct eng_config c = { .policy = &wrap_ops, .model = m, .hw = &hw.base, .workers = run_workers, .trace = &t, .seed = 1,
	                        .sla_ns = 1000 * MS, .keep_request_rows = 1, .replicas = run_replicas, .router = run_router,
	                        .router_refresh_ns = run_refresh_ns, .disagg = run_disagg };
	if (run_replicas > 1)
		c.workers = run_replicas;
	static struct test_knobs knobs;
	c.env = (struct pol_env){ .max_batch = 4, .max_batched_tokens = budget, .block_size = 4, .sla_ns = 1000 * MS,
	                          .tpot_slo_ns = run_tpot_slo_ns, .ttft_slo_ns = run_ttft_slo_ns,
	                          .params = test_knobs(&knobs, p), .prefix_cache = run_prefix_cache,
	                          .async_scheduling = run_async };
	if (run_window_ns)
		test_knob(&knobs, "window", "%.17g", run_window_ns * 1e-6);
	char err[256];
	/* with decode runs (policy.h) first, then iteration by iteration, which the hand-worked checks read
	 * (the wrapper logs every iteration it sees): the two must agree in every number */
	struct drv_result runs;
	if (eng_run(&c, &runs, err, sizeof err) != 0)
		fail_msg("%s: %s", p->name, err);
	run_inner_ends = runs.tasks - wrap.ends;
	wrap_reset(p);
	c.node_by_node = 1;
	if (eng_run(&c, r, err, sizeof err) != 0)
		fail_msg("%s: %s", p->name, err);
	assert_int_equal(r->completed, n);
	assert_same_llm_run(r, &runs, p->name);
	drv_result_free(&runs);
}

static void check_iter(size_t i, int64_t start_ms, uint32_t n, const uint64_t *ids, const uint32_t *tokens,
                       const uint32_t *context)
{
	const struct logged_iter *l = &wrap.log[i];
	if (l->start_ns != start_ms * MS || l->n != n)
		fail_msg("iteration %zu: started %lld ns with %u members, want %lld ms with %u", i, (long long)l->start_ns,
		         l->n, (long long)start_ms, n);
	for (uint32_t j = 0; j < n; j++)
		if (l->ids[j] != ids[j] || l->tokens[j] != tokens[j] || l->context[j] != context[j])
			fail_msg("iteration %zu member %u: request %llu, %u tokens on %u, want %llu, %u on %u", i, j,
			         (unsigned long long)l->ids[j], l->tokens[j], l->context[j], (unsigned long long)ids[j],
			         tokens[j], context[j]);
}

static void check_finish(const struct drv_result *r, const double *finish_ms, const double *ttft_ms, size_t n,
                         const double *arr)
{
	for (size_t i = 0; i < n; i++) {
		if (llround(r->rows[i].finish_s * 1e3) != llround(finish_ms[i]))
			fail_msg("request %zu finished at %g ms, want %g", i, r->rows[i].finish_s * 1e3, finish_ms[i]);
		if (llround((double)(wrap.first_token_ns[i] - llround(arr[i] * 1e9)) * 1e-6 * 10) != llround(ttft_ms[i] * 10))
			fail_msg("request %zu: TTFT %g ms, want %g", i, (double)(wrap.first_token_ns[i] - llround(arr[i] * 1e9)) * 1e-6,
			         ttft_ms[i]);
	}
}

/* Four requests, a budget of 8 tokens an iteration, room for all in the
 * cache. A (5 prompt, 3 output) at 0; B (3, 2) and C (6, 1) at 0.5 ms; D
 * (2, 2) at 2.5 ms. Continuous, worked out by hand:
 *   0: A prefills 5                       -> A's token 1 at 1
 *   1: A decodes; B prefills 3 (4 left); C's 6 do not fit: it waits (FCFS)
 *   2: A, B decode; C prefills 6 (0 left) -> A, B, C end at 3
 *   3: D prefills 2;  4: D decodes        -> D ends at 5
 * TTFT: A 1, B 1.5, C 2.5, D 1.5 ms. */
static void test_continuous_timeline(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[4] = { 0, 0.0005, 0.0005, 0.0025 };
	uint32_t in[4] = { 5, 3, 6, 2 }, out[4] = { 3, 2, 1, 2 };
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 1000, 8, arr, in, out, 4, &r);
	assert_int_equal(wrap.nlog, 5);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 5 }, (uint32_t[]){ 0 });
	check_iter(1, 1, 2, (uint64_t[]){ 0, 1 }, (uint32_t[]){ 1, 3 }, (uint32_t[]){ 5, 0 });
	check_iter(2, 2, 3, (uint64_t[]){ 0, 1, 2 }, (uint32_t[]){ 1, 1, 6 }, (uint32_t[]){ 6, 3, 0 });
	check_iter(3, 3, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 2 }, (uint32_t[]){ 0 });
	check_iter(4, 4, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 1 }, (uint32_t[]){ 2 });
	check_finish(&r, (double[]){ 3, 3, 3, 5 }, (double[]){ 1, 1.5, 2.5, 1.5 }, 4, arr);
	/* TPOT: A (3 - 1) / 2, B (3 - 2) / 1, D (5 - 4) / 1: all 1 ms; C's one token has none */
	assert_int_equal(r.tpot.count, 3);
	assert_true(fabs(r.tpot.mean_ms - 1.0) < 1e-9 && fabs(r.tpot.max_ms - 1.0) < 1e-9);
	assert_true(fabs(r.ttft.mean_ms - (1 + 1.5 + 2.5 + 1.5) / 4) < 1e-9);
	assert_int_equal(stat_of(&r, "preemptions"), 0);
	/* blocks of 4 tokens held in each 1 ms iteration: A 2; A 2 + B 1; A 2 + B 1 + C 2; D 1; D 1:
	 * 12 block-ms over 5 ms of 1000 blocks */
	assert_true(fabs(r.kv_mean_fraction - 12.0 / (5 * 1000)) < 1e-15);
	drv_result_free(&r);
	mdl_free(m);
}

/* The same requests and E (2 tokens, 1 out, at 5.5 ms), with vLLM's async scheduling: the iteration
 * starting at t was planned at the start of the one before (t - 1), with what had arrived by then.
 *   0: A prefills 5 (the device was idle: planned at A's arrival)
 *   1: A decodes (planned at 0: B and C, at 0.5, not yet there)
 *   2: A decodes, B prefills 3 (planned at 1; C's 6 would pass the budget of 8) -> A ends at 3
 *   3: B decodes, C prefills 6 (planned at 2; D, at 2.5, not yet there)     -> B, C end at 4
 *   4: D prefills 2 (planned at 3)
 *   5: D decodes (planned at 4)                                              -> D ends at 6
 *   6: E prefills 2: the plan made at 5 had nothing to run (D's last token, nothing waiting), so vLLM
 *      launched none and planned again at 6, with E                          -> E ends at 7
 * Without it (test_continuous_timeline) A, B, C end at 3, D at 5; E would run 5.5-6.5. */
static void test_async_scheduling_timeline(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[5] = { 0, 0.0005, 0.0005, 0.0025, 0.0055 };
	uint32_t in[5] = { 5, 3, 6, 2, 2 }, out[5] = { 3, 2, 1, 2, 1 };
	struct drv_result r;
	run_async = 1;
	run_trace(&continuous_policy_ops, m, 1000, 8, arr, in, out, 5, &r);
	run_async = 0;
	assert_int_equal(wrap.nlog, 7);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 5 }, (uint32_t[]){ 0 });
	check_iter(1, 1, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 1 }, (uint32_t[]){ 5 });
	check_iter(2, 2, 2, (uint64_t[]){ 0, 1 }, (uint32_t[]){ 1, 3 }, (uint32_t[]){ 6, 0 });
	check_iter(3, 3, 2, (uint64_t[]){ 1, 2 }, (uint32_t[]){ 1, 6 }, (uint32_t[]){ 3, 0 });
	check_iter(4, 4, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 2 }, (uint32_t[]){ 0 });
	check_iter(5, 5, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 1 }, (uint32_t[]){ 2 });
	check_iter(6, 6, 1, (uint64_t[]){ 4 }, (uint32_t[]){ 2 }, (uint32_t[]){ 0 });
	check_finish(&r, (double[]){ 3, 4, 4, 6, 7 }, (double[]){ 1, 2.5, 3.5, 2.5, 1.5 }, 5, arr);
	drv_result_free(&r);
	mdl_free(m);
}

/* The same with C's prompt 10 tokens and 2 outputs, chunked: C's prompt
 * splits at the budget.
 *   0: A prefills 5
 *   1: A decodes (7 left); B prefills 3 (4 left); C a chunk of 4 (0 left)
 *   2: A, B decode (6 left); C its last 6      -> A, B end at 3; C's token 1 at 3
 *   3: C decodes (7 left); D prefills 2        -> C ends at 4; D's token 1 at 4
 *   4: D decodes                               -> D ends at 5 */
static void test_chunked_timeline(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[4] = { 0, 0.0005, 0.0005, 0.0025 };
	uint32_t in[4] = { 5, 3, 10, 2 }, out[4] = { 3, 2, 2, 2 };
	struct drv_result r;
	run_trace(&chunked_policy_ops, m, 1000, 8, arr, in, out, 4, &r);
	assert_int_equal(wrap.nlog, 5);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 5 }, (uint32_t[]){ 0 });
	check_iter(1, 1, 3, (uint64_t[]){ 0, 1, 2 }, (uint32_t[]){ 1, 3, 4 }, (uint32_t[]){ 5, 0, 0 });
	check_iter(2, 2, 3, (uint64_t[]){ 0, 1, 2 }, (uint32_t[]){ 1, 1, 6 }, (uint32_t[]){ 6, 3, 4 });
	check_iter(3, 3, 2, (uint64_t[]){ 2, 3 }, (uint32_t[]){ 1, 2 }, (uint32_t[]){ 10, 0 });
	check_iter(4, 4, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 1 }, (uint32_t[]){ 2 });
	check_finish(&r, (double[]){ 3, 3, 4, 5 }, (double[]){ 1, 1.5, 2.5, 1.5 }, 4, arr);
	drv_result_free(&r);
	mdl_free(m);
}

/* A cache of 4 blocks of 4 tokens. A and B (6 prompt, 4 output each) both
 * arrive at 0:
 *   0: A and B prefill 6 (2 blocks each: the cache is full)
 *   1, 2: both decode (7, then 8 tokens: still 2 blocks each)
 *   3: A's 9th token needs a third block and none is free: the request
 *      admitted last, B, is preempted (its blocks freed, back to the head of
 *      the queue); A decodes alone           -> A ends at 4, freeing 3 blocks
 *   4: B is prefilled again over its prompt and 3 generated tokens (9 tokens,
 *      3 blocks), which yields its 4th token -> B ends at 5
 * One preemption; the cache was full (peak fraction 1). */
static void test_cache_fills_and_preempts(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[2] = { 0, 0 };
	uint32_t in[2] = { 6, 6 }, out[2] = { 4, 4 };
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 4, 16, arr, in, out, 2, &r);
	assert_int_equal(wrap.nlog, 5);
	check_iter(0, 0, 2, (uint64_t[]){ 0, 1 }, (uint32_t[]){ 6, 6 }, (uint32_t[]){ 0, 0 });
	check_iter(1, 1, 2, (uint64_t[]){ 0, 1 }, (uint32_t[]){ 1, 1 }, (uint32_t[]){ 6, 6 });
	check_iter(2, 2, 2, (uint64_t[]){ 0, 1 }, (uint32_t[]){ 1, 1 }, (uint32_t[]){ 7, 7 });
	check_iter(3, 3, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 1 }, (uint32_t[]){ 8 });
	check_iter(4, 4, 1, (uint64_t[]){ 1 }, (uint32_t[]){ 9 }, (uint32_t[]){ 0 });
	check_finish(&r, (double[]){ 4, 5 }, (double[]){ 1, 1 }, 2, arr);
	assert_int_equal(stat_of(&r, "preemptions"), 1);
	assert_true(stat_of(&r, "kv_peak_fraction") == 1.0);
	/* blocks held a millisecond each: 4, 4, 4, then A's 3 alone, then B's 3: 18 of 5 x 4 */
	assert_true(fabs(r.kv_mean_fraction - 18.0 / 20) < 1e-15);
	/* gaps between tokens: A 1, 1, 1 ms; B 1, 1 and then 2 ms, the iteration it waited through */
	assert_int_equal(r.itl_count, 6);
	assert_true(r.itl_max_ms == 2.0);
	assert_true(fabs(r.itl_mean_ms - 7.0 / 6) < 1e-9);
	drv_result_free(&r);
	mdl_free(m);
}

/* Conservation: 400 requests at random lengths and a load that makes a
 * small cache overflow, under every LLM policy: every request ends after
 * exactly its output tokens, one at a time, and the cache never holds more
 * than its blocks. */
static void test_conservation(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	enum { N = 400 };
	static double arr[N];
	static uint32_t in[N], out[N];
	uint64_t seed = 99;
	double t = 0;
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		t += 0.0002 * (double)((seed >> 40) % 10);
		arr[i] = t;
		in[i] = 1 + (uint32_t)((seed >> 20) % 60);
		out[i] = 1 + (uint32_t)((seed >> 30) % 40);
	}
	extern const struct pol_ops slo_policy_ops, static_policy_ops;
	const struct pol_ops *pols[4] = { &continuous_policy_ops, &chunked_policy_ops, &slo_policy_ops, &static_policy_ops };
	for (int p = 0; p < 8; p++) {
		/* one device, then three sharing the queue, each with a cache of its own */
		run_workers = p < 4 ? 1 : 3;
		/* slo with a TTFT target takes the waiting by slack, from anywhere in the queue's head */
		run_ttft_slo_ns = pols[p % 4] == &slo_policy_ops ? 5 * MS : 0;
		struct drv_result r;
		run_trace(pols[p % 4], m, 40, 128, arr, in, out, N, &r);
		run_workers = 1;
		run_ttft_slo_ns = 0;
		for (int i = 0; i < N; i++)
			if (wrap.emitted[i] != out[i])
				fail_msg("%s: request %d produced %llu of its %u tokens", pols[p % 4]->name, i,
				         (unsigned long long)wrap.emitted[i], out[i]);
		print_message("  %s, %d device(s): %g preemptions, KV peak %.3f\n", pols[p % 4]->name, p < 4 ? 1 : 3,
		              stat_of(&r, "preemptions"), stat_of(&r, "kv_peak_fraction"));
		/* the cache overflows, so all but static (which reserves a batch's room up front) preempt */
		if (p < 4)
			assert_true(pols[p] == &static_policy_ops ? stat_of(&r, "preemptions") == 0 : stat_of(&r, "preemptions") > 0);
		assert_true(stat_of(&r, "kv_peak_fraction") <= 1.0);
		assert_int_equal(r.ttft.count, N);
		drv_result_free(&r);
	}
	mdl_free(m);
}

/* Decode runs change nothing (run_trace compares every run with and
 * without them): 300 requests with long outputs, their prompts under four
 * shared prefixes, arriving in bursts with gaps that let decodes run on;
 * every policy of the registry that offers decode runs, the prefix cache on
 * and off, a cache small enough to evict and preempt, iterations whose price
 * grows with their tokens; one device, fleets of three behind every router
 * of the registry (least-kv's view of each replica's blocks a run must keep
 * up to date), now and scraped every 2 ms, and a disaggregated one (a
 * prefill replica, two decode replicas) behind the first router. Each configuration must end some iterations inside
 * runs, or it checked nothing. */
static void test_decode_runs_change_nothing(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	enum { N = 300 };
	static double arr[N];
	static uint32_t in[N], out[N], plen[N];
	static uint64_t pid[N];
	uint64_t seed = 7;
	double t = 0;
	for (int i = 0; i < N; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		t += (i % 10 == 0) ? 0.02 * (double)((seed >> 50) % 4) : 0.0003 * (double)((seed >> 40) % 5);
		arr[i] = t;
		in[i] = 6 + (uint32_t)((seed >> 20) % 40);
		out[i] = 1 + (uint32_t)((seed >> 30) % 90);
		pid[i] = 1 + (seed >> 44) % 4;
		plen[i] = in[i] < 8 ? in[i] : 8;
	}
	extern const struct pol_ops slo_policy_ops;
	size_t npol_all, nrouters, npols = 0;
	const struct pol_ops *const *pol_all = pol_registry(&npol_all);
	const struct pol_ops *pols[16];
	for (size_t i = 0; i < npol_all; i++)
		if (pol_all[i]->decode_run && npols < 16)
			pols[npols++] = pol_all[i];
	assert_true(npols >= 1);
	const struct router_ops *const *routers = router_registry(&nrouters);
	int nconf = (int)nrouters + 2;   /* one device, each router, the disaggregated fleet */
	/* the last: one prefill replica and two decode replicas, whose runs a KV move ends as an arrival does */
	struct fleet_disagg dis = { .prefill = 1, .move_s = test_link_s, .pairs = 1, .layers = m->llm.layers,
	                            .kv_bytes_per_token = (double)mdl_llm_kv_bytes_per_token(&m->llm) };
	/* first one request alone: its cache grows block by block inside its runs, and its peak with it */
	double one_arr[1] = { 0 };
	uint32_t one_in[1] = { 4 }, one_out[1] = { 90 };
	struct drv_result one;
	run_trace(&continuous_policy_ops, m, 60, 256, one_arr, one_in, one_out, 1, &one);
	assert_true(run_inner_ends > 0 && stat_of(&one, "kv_peak_fraction") == 24.0 / 60);   /* 94 tokens: 24 blocks */
	drv_result_free(&one);
	run_growth = 0.05;
	run_prefix_id = pid;
	run_prefix_len = plen;
	for (int spread = 1; spread <= 4; spread *= 4)       /* loaded (preempting), then light (mostly runs) */
	for (size_t p = 0; p < npols; p++)
		for (int cache = 0; cache < 2; cache++)
			for (int k = 0; k < nconf; k++)
				for (int refresh = 0; refresh < (k ? 2 : 1); refresh++) {
					int disagg = k == nconf - 1;
					const struct router_ops *router = !k ? NULL : disagg ? routers[0] : routers[k - 1];
					static double at[N];
					for (int i = 0; i < N; i++)
						at[i] = arr[i] * spread;
					run_prefix_cache = cache;
					run_replicas = k ? 3 : 0;
					run_router = router;
					run_refresh_ns = refresh ? 2 * MS : 0;
					run_disagg = disagg ? &dis : NULL;
					/* the chunking policies chunk prompts by 16 tokens; slo takes the waiting by TTFT slack */
					run_ttft_slo_ns = pols[p] == &slo_policy_ops ? 20 * MS : 0;
					struct drv_result r;
					run_trace(pols[p], m, 60, pols[p] == &continuous_policy_ops ? 256 : 16, at, in, out, N, &r);
					const char *where = router ? router->name : "one device";
					if (run_inner_ends == 0)
						fail_msg("%s, cache %d, %s: no decode run", pols[p]->name, cache, where);
					print_message("  x%d %s, cache %d, %s%s%s: %llu of %llu iterations inside runs, %g preemptions, "
					              "%g evictions\n", spread, pols[p]->name, cache, where,
					              disagg ? ", disaggregated 1+2" : "",
					              refresh ? " (2 ms scrapes)" : "", (unsigned long long)run_inner_ends,
					              (unsigned long long)r.tasks, stat_of(&r, "preemptions"),
					              cache ? stat_of(&r, "prefix_evictions") : 0.0);
					drv_result_free(&r);
				}
	run_ttft_slo_ns = 0;
	run_disagg = NULL;
	run_prefix_cache = 0;
	run_replicas = 0;
	run_router = NULL;
	run_refresh_ns = 0;
	run_growth = 0;
	run_prefix_id = NULL;
	run_prefix_len = NULL;
	mdl_free(m);
}

/* static: A (5 prompt, 3 output) at 0; B (3, 1) and C (4, 2) at 0.5 ms;
 * 1 ms iterations. Without a window:
 *   0: A alone, prefill 5                  1, 2: A decodes -> A ends at 3
 *   3: B and C, prompts padded to 4 (1 pad) -> B ends at 4 (one token)
 *   4: C decodes, B's slot as 1 pad        -> C ends at 5
 * With a 2 ms window nothing starts before 2 (fewer than 4 wait):
 *   2: A, B, C, padded to 5 (0 + 2 + 1 = 3 pad) -> B ends at 3
 *   3: A, C decode, 1 pad                  -> C ends at 4
 *   4: A decodes, 2 pad                    -> A ends at 5 */
static void test_static_timeline(void **state)
{
	(void)state;
	extern const struct pol_ops static_policy_ops;
	struct mdl_model *m = tiny();
	double arr[3] = { 0, 0.0005, 0.0005 };
	uint32_t in[3] = { 5, 3, 4 }, out[3] = { 3, 1, 2 };
	struct drv_result r;
	run_trace(&static_policy_ops, m, 1000, 2048, arr, in, out, 3, &r);
	assert_int_equal(wrap.nlog, 5);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 5 }, (uint32_t[]){ 0 });
	check_iter(2, 2, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 1 }, (uint32_t[]){ 6 });
	check_iter(3, 3, 2, (uint64_t[]){ 1, 2 }, (uint32_t[]){ 3, 4 }, (uint32_t[]){ 0, 0 });
	check_iter(4, 4, 1, (uint64_t[]){ 2 }, (uint32_t[]){ 1 }, (uint32_t[]){ 4 });
	assert_int_equal(wrap.log[3].pad, 1);
	assert_int_equal(wrap.log[4].pad, 1);
	check_finish(&r, (double[]){ 3, 4, 5 }, (double[]){ 1, 3.5, 3.5 }, 3, arr);
	drv_result_free(&r);

	run_window_ns = 2 * MS;
	run_trace(&static_policy_ops, m, 1000, 2048, arr, in, out, 3, &r);
	run_window_ns = 0;
	assert_int_equal(wrap.nlog, 3);
	check_iter(0, 2, 3, (uint64_t[]){ 0, 1, 2 }, (uint32_t[]){ 5, 3, 4 }, (uint32_t[]){ 0, 0, 0 });
	check_iter(1, 3, 2, (uint64_t[]){ 0, 2 }, (uint32_t[]){ 1, 1 }, (uint32_t[]){ 5, 4 });
	check_iter(2, 4, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 1 }, (uint32_t[]){ 6 });
	assert_int_equal(wrap.log[0].pad, 3);
	assert_int_equal(wrap.log[1].pad, 1);
	assert_int_equal(wrap.log[2].pad, 2);
	check_finish(&r, (double[]){ 5, 3, 4 }, (double[]){ 3, 2.5, 2.5 }, 3, arr);
	drv_result_free(&r);
	mdl_free(m);
}

/* slo holds a prompt's chunks to the TPOT target. Iterations take 1 ms x
 * (1 + T / 100) for T tokens; --tpot-slo 1.5 ms. A (10 prompt, 5 output)
 * at 0, B (100, 2) at 0.5 ms:
 *   0:    A prefills 10, alone (nothing to protect)        1.1 ms  -> 1.1
 *   1.1:  A decodes; B's 100 would make 2.01 ms: the most that keeps
 *         1.5 ms is 1 + 49 tokens: B a chunk of 49           1.5 ms  -> 2.6
 *   2.6:  A decodes; B 49 more                               1.5 ms  -> 4.1
 *   4.1:  A decodes; B its last 2 (its token 1 at 5.13)      1.03 ms -> 5.13
 *   5.13: A, B decode: both end                              1.02 ms -> 6.15
 * Every gap between A's tokens is at most 1.5 ms; chunked (budget 2048)
 * would have run B's 100 at once, a 2.01 ms gap. */
static void test_slo_holds_chunks_to_tpot(void **state)
{
	(void)state;
	extern const struct pol_ops slo_policy_ops;
	struct mdl_model *m = tiny();
	double arr[2] = { 0, 0.0005 };
	uint32_t in[2] = { 10, 100 }, out[2] = { 5, 2 };
	struct drv_result r;
	run_growth = 0.01;
	run_tpot_slo_ns = 1500000;
	run_trace(&slo_policy_ops, m, 1000, 2048, arr, in, out, 2, &r);
	run_growth = 0;
	run_tpot_slo_ns = 0;
	assert_int_equal(wrap.nlog, 5);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 10 }, (uint32_t[]){ 0 });
	const int64_t starts_us[5] = { 0, 1100, 2600, 4100, 5130 };
	const uint32_t b_tokens[5] = { 0, 49, 49, 2, 1 }, b_context[5] = { 0, 0, 49, 98, 100 };
	for (size_t i = 1; i < 5; i++) {
		const struct logged_iter *l = &wrap.log[i];
		if (l->start_ns != starts_us[i] * 1000 || l->n != 2 || l->ids[0] != 0 || l->tokens[0] != 1 ||
		    l->ids[1] != 1 || l->tokens[1] != b_tokens[i] || l->context[1] != b_context[i])
			fail_msg("iteration %zu: at %lld ns, %u members, B %u tokens on %u", i, (long long)l->start_ns, l->n,
			         l->tokens[1], l->context[1]);
	}
	assert_int_equal(llround(r.rows[0].finish_s * 1e6), 6150);
	assert_int_equal(llround(r.rows[1].finish_s * 1e6), 6150);
	assert_int_equal(wrap.first_token_ns[1], 5130000);
	assert_true(r.itl_max_ms <= 1.5);
	drv_result_free(&r);
	mdl_free(m);
}

/* The iteration cost on the GPU roofline, from the shapes by hand: Llama-2-7B,
 * one request decoding its 2nd token on a cache of 1,000 tokens. Layer GEMMs
 * at M = 1 are bound by their weights: 4096 x 12288 (QKV) + 4096 x 4096 (O)
 * + 4096 x 22016 (gate and up) + 11008 x 4096 (down), 2 bytes each, plus the
 * 1-row inputs and outputs, at 3.35 TB/s, 32 layers; the LM head 4096 x
 * 32000; attention reads 1,001 tokens of 512 KiB of KV at 3.35 TB/s. */
static void test_roofline_iteration(void **state)
{
	(void)state;
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	struct llm_cost *c = NULL;
	char err[256];
	if (mdl_load("llama2-7b", &m, err, sizeof err) != 0 || hw_open("gpu-h100-roofline", m, &hw, err, sizeof err) != 0 ||
	    llm_cost_create(hw, m, 64, &c, err, sizeof err) != 0)
		fail_msg("%s", err);
	double bw = 3.35e12;
	double layer_bytes = 2.0 * ((4096.0 * 12288 + 4096 + 12288) + (4096.0 * 4096 + 4096 + 4096) +
	                            (4096.0 * 22016 + 4096 + 22016) + (11008.0 * 4096 + 11008 + 4096));
	double head_bytes = 2.0 * (4096.0 * 32000 + 4096 + 32000);
	double kv_bytes = 1001.0 * 32 * 32 * 128 * 2 * 2;
	double want_s = (32 * layer_bytes + head_bytes + kv_bytes) / bw;
	uint32_t tokens = 1, context = 1000;
	int64_t got = llm_cost_iter_ns(c, 1, &tokens, &context, 1, 0, err, sizeof err);
	assert_true(llabs(got - llround(want_s * 1e9)) <= 1);
	/* the H100's memory (hwmodels/gpu_memory.h): 0.9 of the 85.0175e9 bytes it reports, 76.5 GB; 13.5 GB of
	 * weights leave 63.0 GB: blocks of 16 tokens of 512 KiB */
	uint64_t blocks = llm_cost_kv_blocks(c, 16, err, sizeof err);
	assert_int_equal(blocks,
	                 (uint64_t)floor((0.9 * 85.0175e9 - (double)mdl_llm_weight_bytes(&m->llm)) / (16.0 * 524288)));
	assert_int_equal(mdl_llm_weight_bytes(&m->llm), 2ull * (32ull * (4096ull * 12288 + 4096ull * 4096 +
	                                                                  3ull * 4096 * 11008) + 2ull * 32000 * 4096));
	llm_cost_destroy(c);
	hw_close(hw);
	mdl_free(m);
}

/* ---- the prefix cache (vLLM V1's automatic prefix caching), by hand ----
 * Blocks of 4 tokens, 1 ms iterations, one output token each so a request
 * is one prefill. P and Q are shared prefixes of 8 tokens (2 blocks).
 *   r0 at 0: 12 tokens, P's first 8 -> computes 12; its blocks P0, P1 and
 *            its own third enter the cache, evictable when it ends at 1
 *   r1 at 2: 10 tokens, P -> P0, P1 hit: computes 2 on a cache of 8
 *   r2 at 4:  8 tokens, P -> its whole prompt is cached, but one token is
 *            always computed: P1 is not used, 4 computed on P0's 4
 *   r3 at 6: 12 tokens, Q -> nothing cached: 12 on 0
 * Blocks asked (full blocks of each prompt) 3 + 2 + 2 + 3 = 10; hit 2 + 1. */
static void test_prefix_hits(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[4] = { 0, 0.002, 0.004, 0.006 };
	uint32_t in[4] = { 12, 10, 8, 12 }, out[4] = { 1, 1, 1, 1 }, len[4] = { 8, 8, 8, 8 };
	uint64_t id[4] = { 11, 11, 11, 22 };
	run_prefix_cache = 1;
	run_prefix_id = id;
	run_prefix_len = len;
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 1000, 64, arr, in, out, 4, &r);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 12 }, (uint32_t[]){ 0 });
	check_iter(1, 2, 1, (uint64_t[]){ 1 }, (uint32_t[]){ 2 }, (uint32_t[]){ 8 });
	check_iter(2, 4, 1, (uint64_t[]){ 2 }, (uint32_t[]){ 4 }, (uint32_t[]){ 4 });
	check_iter(3, 6, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 12 }, (uint32_t[]){ 0 });
	assert_int_equal(stat_of(&r, "prefix_queried_blocks"), 10);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 3);
	drv_result_free(&r);
	/* off: every request computes its whole prompt */
	run_prefix_cache = 0;
	run_trace(&continuous_policy_ops, m, 1000, 64, arr, in, out, 4, &r);
	check_iter(1, 2, 1, (uint64_t[]){ 1 }, (uint32_t[]){ 10 }, (uint32_t[]){ 0 });
	drv_result_free(&r);
	run_prefix_id = NULL;
	run_prefix_len = NULL;
	mdl_free(m);
}

/* Eviction, least recently released first, never of a block a request holds.
 * A cache of 8 blocks of 4 tokens; A and B are prefixes of 8 tokens.
 *   r0 at 0: 8 tokens of A -> A0, A1 cached; released at 1 (A1, then A0)
 *   r1 at 2: 8 tokens of B -> B0, B1 cached; released at 3. 4 blocks free
 *   r2 at 4: 24 tokens of its own needs 6: A1 and A0, the least recent, go
 *   r3 at 6: 9 tokens, B's 8 first -> B0, B1 hit (now held: not evictable)
 *            though older than r2's blocks: its one more block evicts r2's
 *            last, the least recent left: 1 computed on 8
 *   r4 at 8: 9 tokens, A's first -> A was evicted: 9 on 0; it needs 3
 *            blocks and r3's own third is free: 2 more of r2's evicted
 * Evictions 2 + 1 + 2; hits 2 of 2 + 2 + 6 + 2 + 2 blocks. */
static void test_prefix_eviction_lru(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[5] = { 0, 0.002, 0.004, 0.006, 0.008 };
	uint32_t in[5] = { 8, 8, 24, 9, 9 }, out[5] = { 1, 1, 1, 1, 1 }, len[5] = { 8, 8, 0, 8, 8 };
	uint64_t id[5] = { 1, 2, 0, 2, 1 };
	run_prefix_cache = 1;
	run_prefix_id = id;
	run_prefix_len = len;
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 8, 64, arr, in, out, 5, &r);
	check_iter(3, 6, 1, (uint64_t[]){ 3 }, (uint32_t[]){ 1 }, (uint32_t[]){ 8 });
	check_iter(4, 8, 1, (uint64_t[]){ 4 }, (uint32_t[]){ 9 }, (uint32_t[]){ 0 });
	assert_int_equal(stat_of(&r, "prefix_evictions"), 5);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 2);
	assert_int_equal(stat_of(&r, "prefix_queried_blocks"), 14);
	drv_result_free(&r);
	run_prefix_cache = 0;
	run_prefix_id = NULL;
	run_prefix_len = NULL;
	mdl_free(m);
}

/* A pool of 3 whole prompts sent in one shuffled order (request k gets pool
 * prompt k mod 3: X, Z, Y, X, Z, Y), each 12 tokens (3 blocks of 4): its
 * group's 4-token system prompt (inner prefix: G for X and Y, H for Z) and a
 * question of 8. Arrivals every 2 ms, one output token: each request is one
 * 1 ms prefill, alone. A request whose whole prompt is cached still computes
 * its last block (vLLM computes at least one token): it asks 3 blocks and
 * can hit 2. Releases go deepest first, so a prompt's blocks join the LRU
 * list as its block 2, block 1, then its system prompt's block 0.
 * A cache of 6 blocks (2 prompts' worth):
 *   r0 X at 0:  nothing cached: 12 on 0; LRU after: X2 X1 G0 (3 free)
 *   r1 Z at 2:  nothing cached: 12 on 0, the 3 free; LRU: X2 X1 G0 Z2 Z1 H0 (0 free)
 *   r2 Y at 4:  G0 hit (held), Y1 new: 8 on 4; evicts X2, X1 (the least recently released);
 *               LRU after: Z2 Z1 H0 Y2 Y1 G0
 *   r3 X at 6:  G0 hit, X1 evicted: 8 on 4; evicts Z2, Z1; LRU: H0 Y2 Y1 X2 X1 G0
 *   r4 Z at 8:  H0 hit (the oldest, but still there), Z1 evicted: 8 on 4; evicts Y2, Y1
 *   r5 Y at 10: G0 hit, 8 on 4; evicts X2, X1
 *   The cyclic order defeats LRU: each whole prompt is evicted just before it recurs, and only
 *   the system prompts hit. Asked 6 x 3 = 18 blocks, hit 4; 8 evictions.
 * A cache of 9 blocks (all three prompts): r0, r1 and r2 as above (r2: 8 on 4, 8 blocks cached, 1
 * free); r3, r4, r5 find their whole prompts: 2 blocks hit, 4 tokens on 8 (the last block computed
 * in the free block, then dropped as a copy of the cached one). Hit 1 + 3 x 2 = 7; no eviction. */
static void test_prompt_pool_lru(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[6] = { 0, 0.002, 0.004, 0.006, 0.008, 0.010 };
	uint32_t in[6] = { 12, 12, 12, 12, 12, 12 }, out[6] = { 1, 1, 1, 1, 1, 1 };
	uint32_t len[6] = { 12, 12, 12, 12, 12, 12 }, inner_len[6] = { 4, 4, 4, 4, 4, 4 };
	uint64_t prompt[6] = { 1, 3, 2, 1, 3, 2 }, group[6] = { 1, 2, 1, 1, 2, 1 };   /* X 1, Y 2, Z 3; G 1, H 2 */
	run_prefix_cache = 1;
	run_prefix_id = prompt;
	run_prefix_len = len;
	run_inner_id = group;
	run_inner_len = inner_len;
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 6, 64, arr, in, out, 6, &r);
	check_iter(0, 0, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 12 }, (uint32_t[]){ 0 });
	check_iter(1, 2, 1, (uint64_t[]){ 1 }, (uint32_t[]){ 12 }, (uint32_t[]){ 0 });
	for (uint64_t k = 2; k < 6; k++)
		check_iter(k, 2 * (int64_t)k, 1, (uint64_t[]){ k }, (uint32_t[]){ 8 }, (uint32_t[]){ 4 });
	assert_int_equal(stat_of(&r, "prefix_queried_blocks"), 18);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 4);
	assert_int_equal(stat_of(&r, "prefix_evictions"), 8);
	drv_result_free(&r);
	run_trace(&continuous_policy_ops, m, 9, 64, arr, in, out, 6, &r);
	check_iter(2, 4, 1, (uint64_t[]){ 2 }, (uint32_t[]){ 8 }, (uint32_t[]){ 4 });
	for (uint64_t k = 3; k < 6; k++)
		check_iter(k, 2 * (int64_t)k, 1, (uint64_t[]){ k }, (uint32_t[]){ 4 }, (uint32_t[]){ 8 });
	assert_int_equal(stat_of(&r, "prefix_queried_blocks"), 18);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 7);
	assert_int_equal(stat_of(&r, "prefix_evictions"), 0);
	drv_result_free(&r);
	run_prefix_cache = 0;
	run_prefix_id = NULL;
	run_prefix_len = NULL;
	run_inner_id = NULL;
	run_inner_len = NULL;
	mdl_free(m);
}

/* test_cache_fills_and_preempts with the prefix cache: B's two computed
 * blocks stay cached when it is preempted at 3; A's third block evicts the
 * least recent, B's second (released deepest first); at 4 B finds its first
 * block still cached and computes 5 tokens on it, not 9 on nothing. */
static void test_prefix_survives_preemption(void **state)
{
	(void)state;
	struct mdl_model *m = tiny();
	double arr[2] = { 0, 0 };
	uint32_t in[2] = { 6, 6 }, out[2] = { 4, 4 };
	run_prefix_cache = 1;
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 4, 16, arr, in, out, 2, &r);
	run_prefix_cache = 0;
	check_iter(3, 3, 1, (uint64_t[]){ 0 }, (uint32_t[]){ 1 }, (uint32_t[]){ 8 });
	check_iter(4, 4, 1, (uint64_t[]){ 1 }, (uint32_t[]){ 5 }, (uint32_t[]){ 4 });
	assert_int_equal(stat_of(&r, "preemptions"), 1);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 1);
	drv_result_free(&r);
	mdl_free(m);
}

/* ---- a fleet: two replicas behind each router, worked out by hand ----
 * Continuous batching, 1 ms iterations, room for all. Five requests: r0 (20
 * prompt tokens, 4 output) at 0; r1 (4, 1) at 0.5 ms; r2 (4, 2) at 1.2; r3
 * (4, 1) at 1.6; r4 (4, 1) at 3.7. A prompt prefills in one iteration, which
 * yields the first token; each further token is a decode iteration. KV
 * blocks hold 4 tokens: r0's prefill holds 5, its first decode 6.
 *
 * round-robin: r0, r2, r4 on 0; r1, r3 on 1. Replica 0: r0 0-1, 1-2; r2
 * joins at 2 (arrived 1.2): 2-3, 3-4, both end at 4; r4 (3.7) 4-5. Replica
 * 1: r1 0.5-1.5; r3 1.6-2.6. The refresh interval changes nothing.
 *
 * least-outstanding, the state now (ties in turn, router.h): r0 -> 0 (tie,
 * the turn 0); r1 -> 1 (1 vs 0); r2 -> 0 (1 vs 1, r1 not done till 1.5: the
 * turn, past r1's 1, is 0); r3 -> 1 (2 vs 0); r4 -> 1 (2 vs 0). Replica 1:
 * r1 0.5-1.5, r3 1.6-2.6, r4 3.7-4.7.
 *
 * least-outstanding scraped every 2 ms: the scrape at 0 sees (0, 0) until
 * the next, at 2, so r0..r3 are all ties, taken in turn: 0, 1, 0, 1, as the
 * state now placed them. The scrape at 2 sees (2, 1) (r0 and r2 on 0, r3 on
 * 1): r4 -> 1, 3.7-4.7, where round-robin's turn sends it to 0. (Ties to the
 * lowest index sent r0..r3 all to 0 here.)
 *
 * least-kv, the state now: r0 -> 0; r1 at 0.5 sees 5 blocks vs 0 -> 1; r2
 * at 1.2 sees 6 (r0's decode) vs 1 (r1's prefill) -> 1, where outstanding
 * would have tied; r3 at 1.6 sees 6 vs 1 (r2's prefill, 1.5-2.5) -> 1; r4 at
 * 3.7 sees 6 vs 0 (idle since 3.5) -> 1. Replica 1: r1 0.5-1.5; r2 1.5-2.5;
 * r2's decode with r3's prefill 2.5-3.5; r4 3.7-4.7. Scraped every 2 ms it
 * sees (0, 0) blocks and requests, ties taken in turn, then 6 or 7 blocks on
 * replica 0 against r3's 1 on replica 1, and places as least-outstanding
 * did. */
static void run_fleet(const char *router, double refresh_ms, const double *finish_ms, const uint64_t *routed)
{
	struct mdl_model *m = tiny();
	double arr[5] = { 0, 0.0005, 0.0012, 0.0016, 0.0037 };
	uint32_t in[5] = { 20, 4, 4, 4, 4 }, out[5] = { 4, 1, 2, 1, 1 };
	run_replicas = 2;
	run_router = router_find(router);
	assert_non_null(run_router);
	run_refresh_ns = llround(refresh_ms * 1e6);
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 1000, 64, arr, in, out, 5, &r);
	run_replicas = 0;
	run_router = NULL;
	run_refresh_ns = 0;
	for (int i = 0; i < 5; i++)
		if (fabs(r.rows[i].finish_s * 1e3 - finish_ms[i]) > 1e-6)
			fail_msg("%s, refresh %g ms: request %d finished at %.6f ms, want %g", router, refresh_ms, i,
			         r.rows[i].finish_s * 1e3, finish_ms[i]);
	assert_int_equal(r.nreplicas, 2);
	for (int k = 0; k < 2; k++) {
		assert_int_equal(r.replicas[k].routed, routed[k]);
		assert_int_equal(r.replicas[k].completed, routed[k]);
	}
	drv_result_free(&r);
	mdl_free(m);
}

static void test_fleet_routers(void **state)
{
	(void)state;
	const double rr[5] = { 4, 1.5, 4, 2.6, 5 }, lo[5] = { 4, 1.5, 4, 2.6, 4.7 };
	const double kv[5] = { 4, 1.5, 3.5, 3.5, 4.7 };
	run_fleet("round-robin", 0, rr, (const uint64_t[]){ 3, 2 });
	run_fleet("round-robin", 2, rr, (const uint64_t[]){ 3, 2 });
	run_fleet("least-outstanding", 0, lo, (const uint64_t[]){ 2, 3 });
	run_fleet("least-outstanding", 2, lo, (const uint64_t[]){ 2, 3 });
	run_fleet("least-kv", 0, kv, (const uint64_t[]){ 1, 4 });
	run_fleet("least-kv", 2, lo, (const uint64_t[]){ 2, 3 });
}

/* ---- disaggregation: a prefill replica (0) and a decode replica (1) ----
 * 1 ms iterations; llm-tiny's KV is 512 bytes a token (2 layers x 2 KV
 * heads x 16 x key and value x 4 bytes); a link of 0.1 ms a message and
 * 2048 bytes a ms: a 4-token prompt's KV moves in 0.1 + 1 ms, an 8-token
 * one's in 0.1 + 2. r0 (4 prompt, 3 out) at 0; r1 (4, 1) at 0.2; r2 (8, 2)
 * at 0.5.
 * After the prefill: r0 prefills 0-1, moves 1-2.1 (its first token seen at
 * 2.1), decodes on replica 1 2.1-3.1, 3.1-4.1. r1 and r2 prefill together
 * 1-2: r1's one token ends it there (TTFT 1.8, nothing moves); r2's move
 * waits for the link until 2.1 and ends at 4.2; it decodes 4.2-5.2.
 * Layerwise (each layer's half of the KV sent as the prefill finishes the
 * layer, 0.5 ms a layer): r0's two messages of 0.1 + 0.5 ms follow layers
 * ending at 0.5 and 1: sent 0.5-1.1 and 1.1-1.7, so it is seen at 1.7 and
 * ends at 3.7; r2's messages (0.1 + 1 each) wait for the link (free at 1.7):
 * 1.7-2.8, 2.8-3.9; it decodes 3.9-4.9. */
static double test_link_s(const void *link, double bytes, int *extrapolated)
{
	(void)link, (void)extrapolated;
	return 1e-4 + bytes / 2048e3;
}

static void run_disaggregated(int layerwise, const double *finish_ms, const double *ttft_ms)
{
	struct mdl_model *m = tiny();
	double arr[3] = { 0, 0.0002, 0.0005 };
	uint32_t in[3] = { 4, 4, 8 }, out[3] = { 3, 1, 2 };
	struct fleet_disagg dis = { .prefill = 1, .move_s = test_link_s, .pairs = 1,
	                            .layers = m->llm.layers, .kv_bytes_per_token = (double)mdl_llm_kv_bytes_per_token(&m->llm),
	                            .layerwise = layerwise };
	assert_int_equal(dis.kv_bytes_per_token, 512);
	run_replicas = 2;
	run_router = router_find("round-robin");
	run_disagg = &dis;
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 1000, 64, arr, in, out, 3, &r);
	run_replicas = 0;
	run_router = NULL;
	run_disagg = NULL;
	for (int i = 0; i < 3; i++)
		if (fabs(r.rows[i].finish_s * 1e3 - finish_ms[i]) > 1e-6 ||
		    fabs((r.rows[i].first_token_s - arr[i]) * 1e3 - ttft_ms[i]) > 1e-6)
			fail_msg("%s: request %d finished at %.6f ms (TTFT %.6f), want %g (%g)", layerwise ? "layerwise" : "after",
			         i, r.rows[i].finish_s * 1e3, (r.rows[i].first_token_s - arr[i]) * 1e3, finish_ms[i], ttft_ms[i]);
	assert_int_equal(r.prefill_replicas, 1);
	assert_int_equal(r.replicas[0].pool, FLEET_POOL_PREFILL);
	assert_int_equal(r.replicas[1].pool, FLEET_POOL_DECODE);
	assert_int_equal(r.replicas[0].routed, 3);
	assert_int_equal(r.replicas[0].completed, 1);            /* r1, of one token */
	assert_int_equal(r.replicas[1].routed, 2);
	assert_int_equal(r.replicas[1].completed, 2);
	assert_int_equal(r.replicas[0].moves, 2);
	assert_true(r.replicas[0].moved_bytes == (4 + 8) * 512.0 && r.replicas[1].moved_bytes == (4 + 8) * 512.0);
	/* the decode replica starts each from its moved prompt: one token on 4 (r0), on 8 (r2) */
	int seen = 0;
	for (size_t i = 0; i < wrap.nlog; i++)
		if (wrap.log[i].n == 1 && wrap.log[i].tokens[0] == 1 && wrap.log[i].context[0] == in[wrap.log[i].ids[0]])
			seen |= 1 << wrap.log[i].ids[0];
	assert_int_equal(seen, 1 | 4);
	drv_result_free(&r);
	mdl_free(m);
}

static void test_disaggregation(void **state)
{
	(void)state;
	run_disaggregated(0, (const double[]){ 4.1, 2, 5.2 }, (const double[]){ 2.1, 1.8, 3.7 });
	run_disaggregated(1, (const double[]){ 3.7, 2, 4.9 }, (const double[]){ 1.7, 1.8, 3.4 });
}

/* prefix-affinity (vLLM's and SGLang's cache-aware routing) on two replicas,
 * with the prefix cache. Prompts of 10 tokens whose first 8 are prefix A or
 * B (a match of 8 is 0.8 of a prompt, above the 0.3 threshold); blocks of 4.
 *   r0 (A, 4 out) at 0 -> 0, both records empty: the lowest index
 *   r1 (B, 1 out) at 0.5 -> 1, the smaller record (0 tokens against 10)
 *   r2 (B, 1 out) at 1.2 -> 1, where B went (least-outstanding would say 0:
 *      one outstanding each); replica 1 finds B0, B1 cached by r1 (ended at
 *      1.5): 2 tokens on 8, 1.5-2.5
 *   r3 (A, 1 out) at 1.6 -> 0, where A went; at 2 it joins r0's decode and
 *      finds A0, A1, which r0 holds: 2 tokens on 8, ends at 3; r0 ends at 4. */
static void run_prefix_affinity(double refresh_ms)
{
	struct mdl_model *m = tiny();
	double arr[4] = { 0, 0.0005, 0.0012, 0.0016 };
	uint32_t in[4] = { 10, 10, 10, 10 }, out[4] = { 4, 1, 1, 1 }, len[4] = { 8, 8, 8, 8 };
	uint64_t id[4] = { 1, 2, 2, 1 };
	run_prefix_cache = 1;
	run_prefix_id = id;
	run_prefix_len = len;
	run_replicas = 2;
	run_router = router_find("prefix-affinity");
	assert_non_null(run_router);
	run_refresh_ns = llround(refresh_ms * 1e6);
	struct drv_result r;
	run_trace(&continuous_policy_ops, m, 1000, 64, arr, in, out, 4, &r);
	run_prefix_cache = 0;
	run_prefix_id = NULL;
	run_prefix_len = NULL;
	run_replicas = 0;
	run_router = NULL;
	run_refresh_ns = 0;
	const double finish_ms[4] = { 4, 1.5, 2.5, 3 };
	for (int i = 0; i < 4; i++)
		if (fabs(r.rows[i].finish_s * 1e3 - finish_ms[i]) > 1e-6)
			fail_msg("request %d finished at %.6f ms, want %g", i, r.rows[i].finish_s * 1e3, finish_ms[i]);
	assert_int_equal(r.replicas[0].routed, 2);
	assert_int_equal(r.replicas[1].routed, 2);
	/* completion order: replica 0's 0-1, 1's 0.5-1.5, 0's 1-2, 1's 1.5-2.5 (r2), 0's 2-3 (r0 and r3) */
	assert_int_equal(wrap.log[3].ids[0], 2);
	assert_int_equal(wrap.log[3].tokens[0], 2);
	assert_int_equal(wrap.log[3].context[0], 8);
	assert_int_equal(wrap.log[4].n, 2);
	assert_int_equal(wrap.log[4].ids[1], 3);
	assert_int_equal(wrap.log[4].tokens[1], 2);
	assert_int_equal(wrap.log[4].context[1], 8);
	assert_int_equal(stat_of(&r, "prefix_hit_blocks"), 4);
	drv_result_free(&r);
	mdl_free(m);
}

/* Its record is its own, and the load (1 and 1 outstanding) never nears the
 * balance thresholds: scraped every 2 ms the choices, and so the timeline,
 * are the same. */
static void test_prefix_affinity_router(void **state)
{
	(void)state;
	run_prefix_affinity(0);
	run_prefix_affinity(2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_continuous_timeline),
		cmocka_unit_test(test_chunked_timeline),
		cmocka_unit_test(test_async_scheduling_timeline),
		cmocka_unit_test(test_static_timeline),
		cmocka_unit_test(test_cache_fills_and_preempts),
		cmocka_unit_test(test_conservation),
		cmocka_unit_test(test_decode_runs_change_nothing),
		cmocka_unit_test(test_slo_holds_chunks_to_tpot),
		cmocka_unit_test(test_roofline_iteration),
		cmocka_unit_test(test_fleet_routers),
		cmocka_unit_test(test_disaggregation),
		cmocka_unit_test(test_prefix_hits),
		cmocka_unit_test(test_prefix_eviction_lru),
		cmocka_unit_test(test_prompt_pool_lru),
		cmocka_unit_test(test_prefix_survives_preemption),
		cmocka_unit_test(test_prefix_affinity_router),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
