/* tests/test_sweep.c: the sweep file format (sim/sweep_spec.c) against
 * hand-enumerated grids and malformed files, and the across-seed statistics
 * (sim/aggregate.c) against values worked by hand with Student-t quantiles
 * from printed tables. The option table here is a small stand-in for the run
 * subcommand's: sweep_spec takes the table it checks against as an argument.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/store/aggregate.h"
#include "sim/cli/sweep_spec.h"

static const struct opt_def defs[] = {
	{ "policy", OPT_STR, "graph", 0, 0, 0, "" },
	{ "rate", OPT_DOUBLE, "1000", 0, 1e12, 1, "" },
	{ "requests", OPT_UINT, NULL, 1, 1e12, 0, "" },
	{ "model", OPT_STR, "transformer", 0, 0, 0, "" },
	{ "window", OPT_DOUBLE, "0", 0, 1e9, 0, "" },
	{ "max-batch", OPT_UINT, NULL, 1, 65536, 0, "" },
	{ "seed", OPT_UINT, "1", 0, 1.8e19, 0, "" },
	{ "db", OPT_STR, "x.db", 0, 0, 0, "" },
	{ "db-requests", OPT_FLAG, NULL, 0, 0, 0, "" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "" },
};
#define NDEFS (sizeof defs / sizeof defs[0])

static char path[64];

static const char *write_file(const char *text)
{
	snprintf(path, sizeof path, "/tmp/test_sweep_%d.sweep", (int)getpid());
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path;
}

static struct sweep_spec *load_ok(const char *text)
{
	char err[512] = "";
	struct sweep_spec *s = NULL;
	int rc = sweep_spec_load(write_file(text), defs, NDEFS, &s, err, sizeof err);
	if (rc != 0)
		fail_msg("unexpected error: %s", err);
	assert_non_null(s);
	return s;
}

static void expect_key(const struct sweep_spec *s, size_t i, const char *key)
{
	struct sweep_point p;
	assert_int_equal(sweep_point_make(s, i, &p), 0);
	assert_string_equal(p.key, key);
	sweep_point_free(&p);
}

static void test_grid_order_and_keys(void **state)
{
	(void)state;
	struct sweep_spec *s = load_ok(
		"# comment line\n"
		"fixed --model=gnmt --requests=500   # trailing comment\n"
		"axis rate = 100 200 300\n"
		"variant serial = --policy=serial\n"
		"variant g5 = --policy=graph --window=5 --max-batch=16\n"
		"seeds 1..2 7\n");
	/* 3 rates x 2 variants x 3 seeds, the first axis outermost, seeds innermost */
	assert_int_equal(s->naxes, 2);
	assert_int_equal(s->nconfigs, 6);
	assert_int_equal(s->nseeds, 3);
	assert_int_equal(s->npoints, 18);
	expect_key(s, 0, "model=gnmt policy=serial rate=100 requests=500 seed=1");
	expect_key(s, 2, "model=gnmt policy=serial rate=100 requests=500 seed=7");
	expect_key(s, 3, "max-batch=16 model=gnmt policy=graph rate=100 requests=500 seed=1 window=5");
	expect_key(s, 6, "model=gnmt policy=serial rate=200 requests=500 seed=1");
	expect_key(s, 17, "max-batch=16 model=gnmt policy=graph rate=300 requests=500 seed=7 window=5");
	struct sweep_point p;
	assert_int_equal(sweep_point_make(s, 10, &p), 0);
	assert_int_equal(p.config, 3);
	assert_int_equal(p.seed, 2);
	assert_int_equal(p.choice[0], 1);   /* rate 200 */
	assert_int_equal(p.choice[1], 1);   /* variant g5 */
	assert_string_equal(s->axes[1].values[p.choice[1]].label, "g5");
	/* args are the key's options with their dashes, sorted by name */
	assert_int_equal(p.nargs, 7);
	assert_string_equal(p.args[0], "--max-batch=16");
	assert_string_equal(p.args[6], "--window=5");
	sweep_point_free(&p);
	sweep_spec_free(s);
}

static void expect_error(const char *text, const char *where, const char *words);

static void test_defaults_flags_no_abbreviations(void **state)
{
	(void)state;
	/* no seeds line: one seed, 1; a flag has no value */
	struct sweep_spec *s = load_ok("fixed --db-requests --policy=serial\n");
	assert_int_equal(s->npoints, 1);
	expect_key(s, 0, "db-requests policy=serial seed=1");
	sweep_spec_free(s);
	/* getopt would take an unambiguous prefix; the contract is the whole name */
	expect_error("fixed --db-requests --pol=serial\n", ":1:", "unknown option '--pol'");
}

static void expect_error(const char *text, const char *where, const char *words)
{
	char err[512] = "", want[128];
	struct sweep_spec *s = (struct sweep_spec *)1;
	int rc = sweep_spec_load(write_file(text), defs, NDEFS, &s, err, sizeof err);
	if (rc == 0)
		fail_msg("accepted: %s", text);
	assert_null(s);
	snprintf(want, sizeof want, "%s%s", path, where);
	if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, words))
		fail_msg("error '%s' should start with '%s' and mention '%s'", err, want, words);
}

static void test_malformed_files_name_the_line(void **state)
{
	(void)state;
	expect_error("axis rate = 1 2\nbogus line\n", ":2:", "unknown directive");
	expect_error("axis rate = 1 fast\n", ":1:", "--rate=fast");
	expect_error("fixed --no-such=1\n", ":1:", "unknown option");
	expect_error("\n\nfixed --seed=3\n", ":3:", "seeds");
	expect_error("fixed --db=x.db\n", ":1:", "--db");
	expect_error("fixed --json\n", ":1:", "--json");
	expect_error("axis rate 1 2\n", ":1:", "axis NAME = VALUE");
	expect_error("axis rate = 1 2\naxis rate = 3\n", ":2:", "line 1");
	expect_error("axis rate = 1 1\n", ":1:", "already listed");
	expect_error("fixed --rate=5\n# x\naxis rate = 1 2\n", ":3:", "line 1");
	expect_error("axis window = 1 2\nvariant g = --policy=graph --window=5\n", ":2:", "--window");
	expect_error("variant a = --policy=serial\nvariant a = --policy=graph\n", ":2:", "already listed");
	expect_error("variant a/b = --policy=serial\n", ":1:", "variant name");
	expect_error("seeds 5..1\n", ":1:", "5..1");
	expect_error("seeds 1..3\nseeds 4\n", ":2:", "line 1");
	expect_error("seeds 1 2 1\n", ":1:", "twice");
	expect_error("fixed rate=5\n", ":1:", "--name=value");
	expect_error("fixed --rate=1 --rate=2\n", ":1:", "twice");
	expect_error("axis db-requests = 1\n", ":1:", "takes no value");
	expect_error("# only a comment\n", ":", "empty sweep");
}

static void test_missing_file(void **state)
{
	(void)state;
	char err[512];
	struct sweep_spec *s;
	assert_int_equal(sweep_spec_load("/nonexistent/x.sweep", defs, NDEFS, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/x.sweep"));
}

static void assert_close(double got, double want, double abs_tol)
{
	if (!(fabs(got - want) <= abs_tol))
		fail_msg("got %.12g, want %.12g", got, want);
}

static void test_aggregate_by_hand(void **state)
{
	(void)state;
	struct agg_stats st;
	/* 5 samples: mean 3, s = sqrt(2.5); t(0.975, 4) = 2.776445 (t tables);
	 * half width 2.776445 * 1.5811388 / sqrt(5) = 1.963243; quartiles by
	 * linear interpolation at (n - 1) q = 1 and 3: the values 2 and 4 */
	double v[] = { 5, 1, 4, 2, 3 };
	agg_compute(v, 5, &st);
	assert_int_equal(st.count, 5);
	assert_close(st.mean, 3, 1e-12);
	assert_close(st.sd, 1.5811388, 1e-6);
	assert_close(st.p25, 2, 1e-12);
	assert_close(st.p75, 4, 1e-12);
	assert_close(st.ci_hi - st.mean, 1.963243, 1e-5);
	assert_close(st.mean - st.ci_lo, 1.963243, 1e-5);
	/* 2 samples: t(0.975, 1) = 12.7062; s / sqrt(2) = 1; quartiles at 0.25 and 0.75 of the gap */
	double w[] = { 4, 2 };
	agg_compute(w, 2, &st);
	assert_close(st.p25, 2.5, 1e-12);
	assert_close(st.p75, 3.5, 1e-12);
	assert_close(st.ci_hi, 3 + 12.7062, 1e-3);
	/* 20 seeds, the LazyBatching error-bar count: t(0.975, 19) = 2.093024 */
	double u[20];
	for (int i = 0; i < 20; i++)
		u[i] = i;
	agg_compute(u, 20, &st);
	assert_close(st.ci_hi - st.mean, 2.093024 * st.sd / sqrt(20), 1e-5);
	assert_close(st.p25, 4.75, 1e-12);
}

static void test_aggregate_degenerate(void **state)
{
	(void)state;
	struct agg_stats st;
	double one = 7;
	agg_compute(&one, 1, &st);
	assert_int_equal(st.count, 1);
	assert_close(st.mean, 7, 0);
	assert_close(st.p25, 7, 0);
	assert_true(isnan(st.ci_lo) && isnan(st.ci_hi));
	agg_compute(NULL, 0, &st);
	assert_int_equal(st.count, 0);
	assert_true(isnan(st.mean));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grid_order_and_keys),
		cmocka_unit_test(test_defaults_flags_no_abbreviations),
		cmocka_unit_test(test_malformed_files_name_the_line),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_aggregate_by_hand),
		cmocka_unit_test(test_aggregate_degenerate),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(path);
	return rc;
}
