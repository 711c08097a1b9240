/* tests/test_topup.c: the top-up policy (Amun Sec. 6.1, Algorithms 5-6, the
 * threshold of Sec. 7.2) against decode timelines worked out by hand, where
 * the threshold changes who decodes when, and against the policy contract on
 * random traces of every built-in encoder-decoder model. The model is built
 * here (one encoder node, one decoder node) on a fixed-latency hardware model
 * (every task takes 1 ms whatever its batch) or a node latency table. */
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
#include "result_stats.h"
#include "fixed_hw.h"
#include "policy_check.h"
#include "policy_knobs.h"

static struct test_knobs knobs;   /* top-up's knobs of the test running */

extern const struct pol_ops topup_policy_ops;


static struct mdl_node ed_nodes[2];
static struct mdl_segment ed_segs[2];

static struct mdl_model encdec_model(void)
{
	memset(ed_nodes, 0, sizeof ed_nodes);
	strcpy(ed_nodes[0].name, "enc");
	ed_nodes[0].kind = MDL_ENCODER;
	strcpy(ed_nodes[1].name, "dec");
	ed_nodes[1].kind = MDL_DECODER;
	ed_nodes[1].segment = 1;
	ed_segs[0] = (struct mdl_segment){ .kind = MDL_ENCODER, .first_node = 0, .nnodes = 1 };
	ed_segs[1] = (struct mdl_segment){ .kind = MDL_DECODER, .first_node = 1, .nnodes = 1 };
	struct mdl_model m = { .nnodes = 2, .nodes = ed_nodes, .nsegments = 2, .segments = ed_segs,
	                       .uses_input_len = 1, .uses_output_len = 1 };
	strcpy(m.name, "encdec");
	return m;
}

/* Runs the trace with the given max batch and threshold; checks every finish
 * time (ms) and the contract; the result is left in *out. */
static void run_trace(const struct trc_trace *t, uint32_t max_batch, double threshold, const double *want_ms,
                      struct drv_result *out)
{
	struct mdl_model m = encdec_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-3, 0);
	struct eng_config c = { .policy = pchk_wrap(&topup_policy_ops, t->n), .model = &m, .hw = &hw.base,
	                        .workers = 1, .trace = t, .seed = 1, .sla_ns = 100000000, .keep_request_rows = 1 };
	c.env.max_batch = max_batch;
	c.env.params = test_knobs(&knobs, &topup_policy_ops);
	test_knob(&knobs, "topup-threshold", "%.17g", threshold);
	char err[256] = "";
	int rc = eng_run(&c, out, err, sizeof err);
	if (rc != 0)
		print_message("eng_run: %s\n", err);
	assert_int_equal(rc, 0);
	if (pchk_verdict(out->issued) != 0)
		print_message("contract: %s\n", pchk.first);
	assert_int_equal(pchk.violations, 0);
	assert_int_equal(out->nrows, t->n);
	for (size_t i = 0; i < t->n; i++) {
		if (fabs(out->rows[i].finish_s * 1e3 - want_ms[i]) > 1e-6)
			print_message("threshold %.2f: request %zu finished at %.3f ms, expected %.3f\n", threshold, i,
			              out->rows[i].finish_s * 1e3, want_ms[i]);
		assert_true(fabs(out->rows[i].finish_s * 1e3 - want_ms[i]) < 1e-6);
	}
	pchk_release();
}

/* ---- the threshold matters ----
 * Max batch 4. Eight sentences at t=0, one encoder step each, decoding
 * lengths r0..r7 = 1, 2, 3, 6, 2, 2, 2, 2. Encoding batches take up to 4
 * sentences; the encoder wants the device while it has work and q holds
 * fewer than 4; with unit task times the equal-time share between encoder
 * and decoder alternates their steps, ties to the decoder.
 *
 * Threshold 1 (mini-batching, Amun Algorithm 1): top up only an empty batch.
 *  0-1 enc {r0..r3} -> q.   1-2 dec {r0..r3}: r0 done 2 (tie: decoder).
 *  2-3 enc {r4..r7} -> q (the decoder has used 1 ms more).
 *  3-4 dec {r1,r2,r3}: r1 done 4.  4-5 dec {r2,r3}: r2 done 5.
 *  5-8 dec {r3}: r3 done 8 (its 6 steps: 1-2, 3-4, 4-5, 5-6, 6-7, 7-8).
 *  8-10 dec {r4..r7} (the batch emptied, refilled): all done 10.
 * Threshold 0.5 (Sec. 7.2): top up when at least 2 of 4 slots are free.
 *  Same until 4: at t=2 and t=3 one slot is free, 1 < 2: no top-up.
 *  t=4: {r2,r3} leaves 2 free: add r4, r5. 4-5 dec {r2,r3,r4,r5}: r2 done 5.
 *  t=5: 1 free. 5-6 dec {r3,r4,r5}: r4, r5 done 6 (r3 at 4/6).
 *  t=6: 3 free: add r6, r7. 6-7, 7-8 dec {r3,r6,r7}: all done 8.
 * Threshold 0: top up whenever a slot is free (Algorithm 6 as written).
 *  t=2: 1 free but q is empty; 2-3 enc {r4..r7}.
 *  t=3: add r4. 3-4 dec {r1,r2,r3,r4}: r1 done 4.
 *  t=4: add r5. 4-5 dec {r2,r3,r4,r5}: r2, r4 done 5.
 *  t=5: add r6, r7. 5-6 dec {r3,r5,r6,r7}: r5 done 6.
 *  6-7 dec {r3,r6,r7}: r6, r7 done 7. 7-8 dec {r3}: r3 done 8. */
static double eight_arr[8] = { 0 };
static uint32_t eight_in[8] = { 1, 1, 1, 1, 1, 1, 1, 1 };
static uint32_t eight_out[8] = { 1, 2, 3, 6, 2, 2, 2, 2 };

static void test_threshold_timelines(void **state)
{
	(void)state;
	struct trc_trace t = { .n = 8, .arrival_s = eight_arr, .input_len = eight_in, .output_len = eight_out };
	struct drv_result r;
	const double minibatch[8] = { 2, 4, 5, 8, 10, 10, 10, 10 };
	run_trace(&t, 4, 1.0, minibatch, &r);
	assert_true(stat_of(&r, "topups") == 0);
	assert_true(stat_of(&r, "decode_batches") == 2);
	/* decode steps: 1-2, 3-4, 4-5, 5-6, 6-7, 7-8, 8-9, 9-10 */
	assert_true(stat_of(&r, "decode_steps") == 8);
	drv_result_free(&r);

	const double half[8] = { 2, 4, 5, 8, 6, 6, 8, 8 };
	run_trace(&t, 4, 0.5, half, &r);
	assert_true(stat_of(&r, "topups") == 2);
	assert_true(stat_of(&r, "topup_sentences") == 4);
	drv_result_free(&r);

	const double eager[8] = { 2, 4, 5, 8, 5, 6, 7, 7 };
	run_trace(&t, 4, 0.0, eager, &r);
	assert_true(stat_of(&r, "topups") == 3);
	assert_true(stat_of(&r, "topup_sentences") == 4);
	drv_result_free(&r);
}

/* ---- encoding batches and the equal-time share ----
 * Max batch 2, threshold 0.5 (top up when 1 of 2 slots is free).
 * (input, output): r0 (2, 1) and r1 (1, 2) at t=0, r2 (1, 1) at 0.5.
 *  0-1 enc {r0,r1}: r1 encoded -> q; r0 stays for its second step.
 *  t=1: the empty decoder takes r1; both sides want the device; the decoder
 *       starts with the encoder's 1 ms (no credit for idle time), a tie:
 *       1-2 dec {r1}.
 *  2-3 enc {r0}: its batch goes on (r2 waits for the next batch): r0 -> q.
 *  t=3: 1 free: top up r0. Tie again: 3-4 dec {r1,r0}: both done at 4.
 *  4-5 enc {r2}; 5-6 dec {r2}: done 6.
 * Counters: 2 encoding batches, 2 decoder batches started empty, 1 top-up,
 * 3 decoder steps. */
static void test_encoding_batches_share(void **state)
{
	(void)state;
	double arr[3] = { 0, 0, 0.0005 };
	uint32_t in[3] = { 2, 1, 1 }, out[3] = { 1, 2, 1 };
	struct trc_trace t = { .n = 3, .arrival_s = arr, .input_len = in, .output_len = out };
	struct drv_result r;
	const double want[3] = { 4, 4, 6 };
	run_trace(&t, 2, 0.5, want, &r);
	assert_true(stat_of(&r, "encode_batches") == 2);
	assert_true(stat_of(&r, "decode_batches") == 2);
	assert_true(stat_of(&r, "topups") == 1);
	assert_true(stat_of(&r, "topup_sentences") == 1);
	assert_true(stat_of(&r, "decode_steps") == 3);  /* 1-2, 3-4, 5-6 */
	drv_result_free(&r);
}

/* The share is in time, not steps: with a decoder step 3x as long as an
 * encoder step the encoder gets three steps per decoder step. Encoder 1 ms,
 * decoder 3 ms (a table of two node types), max batch 4, threshold 1:
 * r0 (in 1, out 2), r1 (in 4, out 1), r2 (in 4, out 1) at t=0.
 *  0-1 enc {r0,r1,r2}: r0 -> q.  t=1: dec takes r0, starts level with the
 *  encoder at 1 ms: 1-4 dec {r0} (decoder 4 ms used).
 *  4-5, 5-6, 6-7 enc {r1,r2} (encoder 2, 3, 4 ms): r1, r2 encoded at 7.
 *  (Alternating steps would have given 4-5 enc, 5-8 dec, ...)
 *  t=7: nothing left to encode: 7-10 dec {r0}: r0 done 10 (thr 1: r1, r2 wait).
 *  t=10: the batch is empty: top up r1, r2; 10-13 dec: both done 13. */
static void test_share_is_time(void **state)
{
	(void)state;
	double arr[3] = { 0, 0, 0 };
	uint32_t in[3] = { 1, 4, 4 }, out[3] = { 2, 1, 1 };
	struct trc_trace t = { .n = 3, .arrival_s = arr, .input_len = in, .output_len = out };
	struct mdl_model m = encdec_model();
	char path[] = "/tmp/test_topup_XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	const char text[] = "node,batch,latency_s\nenc,1,0.001\nenc,8,0.001\ndec,1,0.003\ndec,8,0.003\n";
	assert_int_equal(write(fd, text, sizeof text - 1), (ssize_t)(sizeof text - 1));
	close(fd);
	struct hw_model *hw = NULL;
	char err[256];
	assert_int_equal(hw_open(path, &m, &hw, err, sizeof err), 0);
	struct eng_config c = { .policy = pchk_wrap(&topup_policy_ops, 3), .model = &m, .hw = hw, .workers = 1,
	                        .trace = &t, .seed = 1, .sla_ns = 100000000, .keep_request_rows = 1 };
	c.env.max_batch = 4;
	c.env.params = test_knobs(&knobs, &topup_policy_ops);
	test_knob(&knobs, "topup-threshold", "1");
	struct drv_result r;
	assert_int_equal(eng_run(&c, &r, err, sizeof err), 0);
	assert_int_equal(pchk_verdict(r.issued), 0);
	const double want[3] = { 10, 13, 13 };
	for (int i = 0; i < 3; i++)
		assert_true(fabs(r.rows[i].finish_s * 1e3 - want[i]) < 1e-6);
	drv_result_free(&r);
	hw_close(hw);
	unlink(path);
	pchk_release();
}

/* ---- the contract on random traces of every built-in model ----
 * topup runs the encoder-decoder models and refuses the others at init. */
static void test_contract_every_model(void **state)
{
	(void)state;
	char names[64][MDL_NAME_MAX] = { { 0 } };
	assert_true(mdl_list(name_cb, names) >= 6);
	int ran = 0;
	for (int i = 0; i < 64 && names[i][0]; i++) {
		struct mdl_model *m = NULL;
		char err[256];
		assert_int_equal(mdl_load(names[i], &m, err, sizeof err), 0);
		if (m->is_llm) {               /* served by iterations, not nodes */
			mdl_free(m);
			continue;
		}
		int encdec = m->uses_output_len && !m->is_tree;
		const double cell_s = 2e-5, growth = 0.02;
		struct fixed_hw hw = fixed_hw(m, cell_s, growth);
		struct trc_lengths *in = NULL, *out = NULL;
		assert_int_equal(trc_lengths_parse(m->uses_input_len ? m->input_len_spec : "fixed:0", &in, err, sizeof err), 0);
		assert_int_equal(trc_lengths_parse(m->uses_output_len ? m->output_len_spec : "fixed:0", &out, err, sizeof err), 0);
		double mean_nodes = mdl_chain_length(m, (uint32_t)ceil(trc_lengths_mean(in)),
		                                     (uint32_t)ceil(trc_lengths_mean(out)));
		for (int k = 0; k < 4; k++) {
			const double thresholds[4] = { 0, 0.5, 1, 0.5 };
			const uint64_t n = 300;
			struct eng_config c = { .policy = pchk_wrap(&topup_policy_ops, n), .model = m, .hw = &hw.base,
			                        .workers = k == 3 ? 3 : 1, .rate_rps = 8 / (mean_nodes * cell_s),
			                        .arrival_cv = 1, .requests = n, .seed = 21 + (uint64_t)k, .input_len = in,
			                        .output_len = out, .sla_ns = 100000000, .keep_request_rows = 1 };
			c.env.max_batch = 64;
			c.env.params = test_knobs(&knobs, &topup_policy_ops);
			test_knob(&knobs, "max-batch-decoder", "32");
			test_knob(&knobs, "topup-threshold", "%.17g", thresholds[k]);
			struct drv_result r;
			err[0] = 0;
			int rc = eng_run(&c, &r, err, sizeof err);
			if (!encdec) {
				assert_int_equal(rc, -1);
				assert_non_null(strstr(err, "topup"));
				continue;
			}
			if (rc != 0)
				print_message("%s: %s\n", names[i], err);
			assert_int_equal(rc, 0);
			ran++;
			if (pchk_verdict(r.issued) != 0)
				print_message("topup on %s: %s\n", names[i], pchk.first);
			assert_int_equal(pchk.violations, 0);
			assert_int_equal(r.completed, n);
			for (size_t j = 0; j < r.nrows; j++) {
				const struct drv_request_row *w = &r.rows[j];
				double service_ns = (w->finish_s - w->start_s) * 1e9;
				assert_true(service_ns >= isolated_ns(m, cell_s, growth, w->input_len, w->output_len) - 1);
			}
			drv_result_free(&r);
		}
		trc_lengths_free(in);
		trc_lengths_free(out);
		mdl_free(m);
	}
	assert_true(ran >= 3 * 4);  /* seq2seq, gnmt, transformer at least */
	pchk_release();
}

/* Same config twice: the same numbers. */
static void test_determinism(void **state)
{
	(void)state;
	struct mdl_model m = encdec_model();
	struct fixed_hw hw = fixed_hw(&m, 1e-5, 0.05);
	struct trc_lengths *len;
	char err[256];
	assert_int_equal(trc_lengths_parse("uniform:1:40", &len, err, sizeof err), 0);
	struct eng_config c = { .policy = &topup_policy_ops, .model = &m, .hw = &hw.base, .workers = 2,
	                        .rate_rps = 5000, .arrival_cv = 1, .requests = 20000, .seed = 5,
	                        .input_len = len, .output_len = len, .sla_ns = 100000000 };
	c.env.max_batch = 64;
	c.env.params = test_knobs(&knobs, &topup_policy_ops);
	struct drv_result a, b;
	assert_int_equal(eng_run(&c, &a, err, sizeof err), 0);
	assert_int_equal(eng_run(&c, &b, err, sizeof err), 0);
	assert_memory_equal(&a.summary, &b.summary, sizeof a.summary);
	assert_int_equal(a.events, b.events);
	for (size_t i = 0; i < a.npolicy_stats; i++)
		assert_true(a.policy_stats[i].value == b.policy_stats[i].value);
	drv_result_free(&a);
	drv_result_free(&b);
	trc_lengths_free(len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threshold_timelines),
		cmocka_unit_test(test_encoding_batches_share),
		cmocka_unit_test(test_share_is_time),
		cmocka_unit_test(test_contract_every_model),
		cmocka_unit_test(test_determinism),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
