/* tests/test_default_load.c: an LLM run's default load (sim/study/default_load.h), derived here a
 * second way. The table's pairs are read with stdio (not the trace reader) and those within
 * Llama-2-7B's 4,096-token context counted (17,754 of 19,366, the figure docs/VALIDATION.md gives
 * for --over-context=drop) and averaged; the capacity estimate is computed from capacity.c's stated
 * formula (full batches of decodes, as many as the KV cache holds at the mean lengths up to the
 * policy's 256, each request also paying its prefill alone) with the decode iteration priced from
 * its context sum (llm_cost_decode_ns, not the member arrays capacity.c prices); the rate is half
 * of it, rounded down to two significant digits by a loop of its own. The configured run must
 * hold exactly that rate, the table as a pairs trace, and that estimate. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "hwmodels/hwmodel.h"
#include "hwmodels/llm_cost.h"
#include "sim/cli/cli.h"
#include "sim/study/default_load.h"
#include "sim/study/run.h"

#define CONTEXT 4096          /* models/llama2-7b.model */
#define MAX_SEQS 256          /* the continuous policy's default max batch (a run's header: "max 256") */

/* The table's rows within the context: their count, total, and mean prompt and output. */
static void table_means(size_t *kept, size_t *total, double *in_mean, double *out_mean)
{
	FILE *f = fopen(study_load_table(), "r");
	assert_non_null(f);
	char line[512];
	double in_sum = 0, out_sum = 0;
	*kept = *total = 0;
	int header = 0;
	while (fgets(line, sizeof line, f)) {
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!header) {
			assert_string_equal(line, "input_len,output_len\n");
			header = 1;
			continue;
		}
		unsigned long in, out;
		assert_int_equal(sscanf(line, "%lu,%lu", &in, &out), 2);
		(*total)++;
		if (in + out <= CONTEXT) {
			(*kept)++;
			in_sum += (double)in;
			out_sum += (double)out;
		}
	}
	fclose(f);
	*in_mean = in_sum / (double)*kept;
	*out_mean = out_sum / (double)*kept;
}

/* Two significant digits, down, by scaling into [10, 100). */
static double two_digits_down(double x)
{
	double scale = 1;
	while (x * scale < 10)
		scale *= 10;
	while (x * scale >= 100)
		scale /= 10;
	return floor(x * scale) / scale;
}

static void test_default_rate_derived(void **state)
{
	(void)state;
	size_t kept, total;
	double in_mean, out_mean;
	table_means(&kept, &total, &in_mean, &out_mean);
	assert_int_equal(total, 19366);
	assert_int_equal(kept, 17754);

	char err[512] = "";
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	struct llm_cost *c = NULL;
	assert_int_equal(mdl_load("llama2-7b", &m, err, sizeof err), 0);
	if (hw_open_tp("gpu-h100", m, 1, &hw, err, sizeof err) != 0 || llm_cost_create(hw, m, 0, &c, err, sizeof err) != 0)
		fail_msg("%s", err);
	double in = ceil(in_mean), out = ceil(out_mean);
	double fit = (double)llm_cost_kv_blocks(c, 16, err, sizeof err) * 16 / (in + out);
	uint32_t batch = fit >= MAX_SEQS ? MAX_SEQS : fit >= 1 ? (uint32_t)fit : 1;
	int64_t decode_ns = llm_cost_decode_ns(c, batch, (uint64_t)batch * (uint32_t)(in + out / 2));
	uint32_t prompt = (uint32_t)in, none = 0;
	int64_t prefill_ns = llm_cost_iter_ns(c, 1, &prompt, &none, 1, 0, err, sizeof err);
	assert_true(decode_ns > 0 && prefill_ns > 0);
	double estimate = 1.0 / (out * decode_ns * 1e-9 / batch + prefill_ns * 1e-9);
	double rate = two_digits_down(0.5 * estimate);

	struct study_run *j = calloc(1, sizeof *j);
	assert_non_null(j);
	char *argv[] = { "run", "--model=llama2-7b" };
	size_t nopts;
	const struct opt_def *opts = cmd_run_options(&nopts);
	assert_int_equal(opt_parse(&j->o, opts, nopts, 2, argv, 0, err, sizeof err), 0);
	if (study_run_configure(j, err, sizeof err) != 0)
		fail_msg("%s", err);
	print_message("estimate %.6f req/s here, %.6f the run's; rate %g, the run's %g\n", estimate, j->load.estimate_rps,
	              rate, j->c.rate_rps);
	assert_true(j->load.on);
	assert_true(fabs(j->load.estimate_rps / estimate - 1) < 1e-9);
	assert_true(j->c.rate_rps == rate);
	assert_true(j->c.trace_pairs && j->trace && j->trace->lengths_only);
	assert_int_equal(j->trace->n, kept);
	assert_int_equal(j->dropped_over_context, total - kept);
	study_run_free(j);
	free(j);
	llm_cost_destroy(c);
	hw_close(hw);
	mdl_free(m);
}

/* Any load option keeps the run as before: no default load, run's rate of 1000 req/s. */
static void test_chosen_load_kept(void **state)
{
	(void)state;
	const char *given[] = { "--rate=5", "--input-len=300", "--output-len=40", "--concurrency=4" };
	for (size_t i = 0; i < sizeof given / sizeof given[0]; i++) {
		struct study_run *j = calloc(1, sizeof *j);
		char err[512] = "";
		char *argv[] = { "run", "--model=llama2-7b", (char *)given[i] };
		size_t nopts;
		const struct opt_def *opts = cmd_run_options(&nopts);
		assert_int_equal(opt_parse(&j->o, opts, nopts, 3, argv, 0, err, sizeof err), 0);
		if (study_run_configure(j, err, sizeof err) != 0)
			fail_msg("%s: %s", given[i], err);
		assert_false(j->load.on);
		assert_null(j->trace);
		assert_true(j->c.rate_rps == (i == 0 ? 5 : 1000));
		study_run_free(j);
		free(j);
	}
}

static void test_round(void **state)
{
	(void)state;
	const struct { double x; const char *text; } cases[] = {
		{ 6.835, "6.8" }, { 13.67, "13" }, { 0.0456, "0.045" }, { 254, "250" }, { 1, "1.0" }, { 99.9, "99" },
		{ 100, "100" }, { 9.99, "9.9" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[32];
		study_load_round(cases[i].x, out, sizeof out);
		assert_string_equal(out, cases[i].text);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_rate_derived),
		cmocka_unit_test(test_chosen_load_kept),
		cmocka_unit_test(test_round),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
