/* tests/test_hwtable.c: the node latency table model (hwmodels/node_table.c) and
 * the --hw resolver (hwmodels/registry.c). Each test writes a small table to
 * a temporary file and checks values worked out by hand (linear and Steffen
 * interpolation, in the comments) and every rejection with its line number.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hwmodels/hwmodel.h"
#include "hwmodels/node_table.h"
#include "hwmodels/gpu_memory.h"

#define assert_dbl_near(a, b, eps) assert_true(fabs((double)(a) - (double)(b)) <= (eps))

/* A three-node model: enc (0), dec (1), attn (2). */
static struct mdl_node toy_nodes[3];
static struct mdl_model toy;

static int toy_setup(void **state)
{
	static const char *names[] = { "enc", "dec", "attn" };

	(void)state;
	memset(&toy, 0, sizeof toy);
	memset(toy_nodes, 0, sizeof toy_nodes);
	for (int i = 0; i < 3; i++) {
		strcpy(toy_nodes[i].name, names[i]);
		toy_nodes[i].kind = i == 0 ? MDL_ENCODER : MDL_DECODER;
	}
	strcpy(toy.name, "toy");
	toy.nnodes = 3;
	toy.nodes = toy_nodes;
	return 0;
}

/* Writes text to a fresh /tmp file; returns its path (caller frees and
 * unlinks). */
static char *write_tmp(const char *text)
{
	char *path = strdup("/tmp/test_hwtable_XXXXXX");
	int fd;
	size_t len = strlen(text);

	assert_non_null(path);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	close(fd);
	return path;
}

static void drop_tmp(char *path)
{
	unlink(path);
	free(path);
}

/* Opens text as a table through hw_open; fails the test on error. */
static struct hw_model *open_ok(const char *text, char **path)
{
	struct hw_model *hw = NULL;
	char err[512] = "";

	*path = write_tmp(text);
	if (hw_open(*path, &toy, &hw, err, sizeof err) != 0)
		fail_msg("unexpected error: %s", err);
	assert_non_null(hw);
	return hw;
}

static double cost(const struct hw_model *hw, uint32_t node, uint32_t batch)
{
	struct hw_node_cost c;
	char err[512] = "";

	if (hw_node_cost(hw, node, batch, &c, err, sizeof err) != 0)
		fail_msg("unexpected error: %s", err);
	assert_true(c.compute_seconds == 0 && c.memory_seconds == 0);
	assert_int_equal(c.bound, HW_COMPUTE_BOUND);
	return c.seconds;
}

/* The error for text must name the file and line `line` (0: no line) and
 * contain `what`. */
static void expect_open_error(const char *text, int line, const char *what)
{
	char *path = write_tmp(text);
	struct hw_model *hw = (struct hw_model *)&hw;
	char err[512] = "", where[600];

	assert_int_equal(hw_open(path, &toy, &hw, err, sizeof err), -1);
	assert_null(hw);
	if (line)
		snprintf(where, sizeof where, "%s:%d: ", path, line);
	else
		snprintf(where, sizeof where, "%s: ", path);
	if (strncmp(err, where, strlen(where)) != 0)
		fail_msg("error '%s' does not start with '%s'", err, where);
	if (!strstr(err, what))
		fail_msg("error '%s' does not mention '%s'", err, what);
	drop_tmp(path);
}

static void expect_cost_error(const struct hw_model *hw, uint32_t node, uint32_t batch,
                              const char *what)
{
	struct hw_node_cost c;
	char err[512] = "";

	assert_int_equal(hw_node_cost(hw, node, batch, &c, err, sizeof err), -1);
	if (!strstr(err, what))
		fail_msg("error '%s' does not mention '%s'", err, what);
}

static const char *powers_table =
	"node,batch,latency_s\n"
	"*,1,0.001\n"
	"*,2,0.0015\n"
	"*,4,0.002\n"
	"*,8,0.003\n"
	"*,16,0.005\n"
	"*,32,0.0081\n"
	"*,64,0.015\n";

static void test_exact_at_listed_points(void **state)
{
	static const uint32_t b[] = { 1, 2, 4, 8, 16, 32, 64 };
	static const double y[] = { 0.001, 0.0015, 0.002, 0.003, 0.005, 0.0081, 0.015 };
	char *path;
	struct hw_model *hw = open_ok(powers_table, &path);

	(void)state;
	for (uint32_t node = 0; node < 3; node++)
		for (size_t i = 0; i < 7; i++)
			assert_true(cost(hw, node, b[i]) == y[i]);  /* bit for bit */
	assert_int_equal(hw_max_batch(hw), 64);
	assert_string_equal(hw->label, path);
	hw_close(hw);
	drop_tmp(path);
}

/* A pass node's rows are by tokens: a batch of requests costs its rows at
 * their tokens, summed, with nothing added per request (the rows hold the
 * requests' attention as measured); the max batch is the other nodes'. */
static void test_pass_node_by_tokens(void **state)
{
	char *path, err[512] = "";
	toy_nodes[0].kind = MDL_PASS;
	struct hw_model *hw = open_ok("node,batch,latency_s\nenc,1,0.001\nenc,640,0.065\n"
	                              "dec,1,0.002\ndec,8,0.004\nattn,1,0.001\nattn,8,0.003\n", &path);
	(void)state;
	assert_int_equal(hw_max_batch(hw), 8);
	struct hw_node_cost own, c;
	assert_int_equal(hw_member_cost(hw, 0, 19, &own, err, sizeof err), 0);
	assert_true(own.seconds == 0 && own.main_seconds == 0 && own.side_seconds == 0);
	/* 3 requests of 19 tokens: the line from (1, 1 ms) to (640, 65 ms) at 57 tokens, 57 ms */
	assert_int_equal(hw_node_cost_at(hw, 0, 3, 19, &c, err, sizeof err), 0);
	assert_dbl_near(c.seconds, 0.001 + 0.064 * 56 / 639, 1e-15);
	assert_int_equal(hw_node_cost(hw, 0, 641, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "no latency for tokens 641 (largest listed is 640)"));
	hw_close(hw);
	drop_tmp(path);
	toy_nodes[0].kind = MDL_ENCODER;
}

static void test_monotone_between_points(void **state)
{
	static const uint32_t b[] = { 1, 2, 4, 8, 16, 32, 64 };
	char *path;
	struct hw_model *hw = open_ok(powers_table, &path);
	double prev = 0;

	(void)state;
	for (uint32_t batch = 1; batch <= 64; batch++) {
		double v = cost(hw, 1, batch);

		assert_true(v >= prev);
		prev = v;
	}
	/* and never outside the bracketing points */
	for (size_t i = 0; i + 1 < 7; i++)
		for (uint32_t batch = b[i]; batch <= b[i + 1]; batch++) {
			double v = cost(hw, 0, batch);

			assert_true(v >= cost(hw, 0, b[i]) && v <= cost(hw, 0, b[i + 1]));
		}
	/* pure: the same answer twice */
	assert_true(cost(hw, 2, 23) == cost(hw, 2, 23));
	hw_close(hw);
	drop_tmp(path);
}

static void test_steffen_value(void **state)
{
	char *path;
	struct hw_model *hw = open_ok("node,batch,latency_s\n"
	                              "*,1,1\n*,2,2\n*,4,4\n*,8,6\n", &path);

	(void)state;
	/* Steffen (1990) on x = 1,2,4,8, y = 1,2,4,6: h = 1,2,4, secants
	 * s = 1, 1, 0.5. Interior slopes y'_i = (sign s_{i-1} + sign s_i) *
	 * min(|s_{i-1}|, |s_i|, |p_i|/2) with p_i = (h_{i-1} s_i + h_i s_{i-1}) /
	 * (h_{i-1} + h_i):
	 *   x=2: p = (1*1 + 2*1)/3 = 1,         y' = 2 * min(1, 1, 0.5) = 1
	 *   x=4: p = (2*0.5 + 4*1)/6 = 5/6,     y' = 2 * min(1, 0.5, 5/12) = 5/6
	 * Hermite cubic on [2,4] (h = 2) at x = 3 (t = 1/2):
	 *   y = (2 + 4)/2 + (h/8) * (y'_2 - y'_4) = 3 + 0.25 * (1 - 5/6) = 73/24 */
	assert_dbl_near(cost(hw, 0, 3), 73.0 / 24.0, 1e-12);
	hw_close(hw);
	drop_tmp(path);
}

static void test_linear_two_points(void **state)
{
	char *path;
	struct hw_model *hw = open_ok("node,batch,latency_s\n"
	                              "*,1,0.001\n*,9,0.005\n", &path);

	(void)state;
	/* slope (0.005 - 0.001) / 8 = 0.0005 per batch */
	assert_dbl_near(cost(hw, 0, 5), 0.003, 1e-15);
	assert_dbl_near(cost(hw, 1, 3), 0.002, 1e-15);
	assert_dbl_near(cost(hw, 2, 8), 0.0045, 1e-15);
	expect_cost_error(hw, 0, 10, "largest listed is 9");
	hw_close(hw);
	drop_tmp(path);
}

static void test_star_and_override(void **state)
{
	char *path;
	struct hw_model *hw = open_ok("# measured on the toy device\n"
	                              "node,batch,latency_s\n"
	                              "*,1,0.001\n"
	                              "*,16,0.004\n"
	                              "enc,1,0.010   # enc is slower\n"
	                              "enc,4,0.040\n", &path);

	(void)state;
	/* dec, attn: the `*` line 0.001 + (b - 1) * 0.0002 */
	assert_dbl_near(cost(hw, 1, 6), 0.002, 1e-15);
	assert_dbl_near(cost(hw, 2, 16), 0.004, 1e-15);
	/* enc: its own line 0.010 + (b - 1) * 0.010; the `*` rows do not apply */
	assert_dbl_near(cost(hw, 0, 2), 0.020, 1e-15);
	assert_true(cost(hw, 0, 4) == 0.040);
	expect_cost_error(hw, 0, 8, "node enc has no latency for batch 8 (largest listed is 4)");
	/* smallest "largest listed batch" over the nodes: enc's 4 */
	assert_int_equal(hw_max_batch(hw), 4);
	hw_close(hw);
	drop_tmp(path);
}

static void test_single_point_and_range(void **state)
{
	char *path;
	struct hw_model *hw = open_ok("\n  node , batch , latency_s \r\n"
	                              "\n# only batch 4 was measured\n"
	                              "*,4,0.002\r\n", &path);
	char want[600];

	(void)state;
	assert_true(cost(hw, 0, 4) == 0.002);
	snprintf(want, sizeof want, "%s: node dec has no latency for batch 5 (largest listed is 4)",
	         path);
	expect_cost_error(hw, 1, 5, want);
	expect_cost_error(hw, 1, 3, "smallest listed is 4");
	expect_cost_error(hw, 3, 4, "out of range");
	hw_close(hw);
	drop_tmp(path);
}

static void test_non_monotone_accepted(void **state)
{
	char *path;
	struct hw_model *hw = open_ok("node,batch,latency_s\n"
	                              "*,1,0.002\n*,2,0.001\n*,4,0.003\n*,8,0\n", &path);

	(void)state;
	assert_true(cost(hw, 0, 2) == 0.001);
	assert_true(cost(hw, 0, 8) == 0.0);
	/* Steffen stays inside each interval's bracket: [2,4] -> [0.001, 0.003] */
	assert_true(cost(hw, 0, 3) >= 0.001 && cost(hw, 0, 3) <= 0.003);
	assert_true(cost(hw, 0, 6) >= 0.0 && cost(hw, 0, 6) <= 0.003);
	hw_close(hw);
	drop_tmp(path);
}

static void test_open_errors(void **state)
{
	(void)state;
	expect_open_error("", 0, "not a simbatch hardware file: expected header node,batch,latency_s");
	expect_open_error("# nothing\n\n", 0, "not a simbatch hardware file: expected header node,batch,latency_s");
	/* through hw_open a wrong first line is "not a simbatch hardware file" */
	expect_open_error("enc,1,0.001\n", 1, "not a simbatch hardware file");
	expect_open_error("# c\n\nnode,batch,latency\n*,1,1\n", 3, "not a simbatch hardware file");
	/* line numbers count comments and blank lines */
	expect_open_error("# c\nnode,batch,latency_s\n\n*,1\n", 4, "expected 3 fields");
	expect_open_error("node,batch,latency_s\n*,1,0.1,7\n", 2, "got 4");
	expect_open_error("node,batch,latency_s\n*,abc,0.1\n", 2, "batch 'abc' is not a positive integer");
	expect_open_error("node,batch,latency_s\n*,0,0.1\n", 2, "batch '0'");
	expect_open_error("node,batch,latency_s\n*,-2,0.1\n", 2, "batch '-2'");
	expect_open_error("node,batch,latency_s\n*,1.5,0.1\n", 2, "batch '1.5'");
	expect_open_error("node,batch,latency_s\n*,4294967296,0.1\n", 2, "batch '4294967296'");
	expect_open_error("node,batch,latency_s\n*,1,-0.1\n", 2, "latency '-0.1'");
	expect_open_error("node,batch,latency_s\n*,1,inf\n", 2, "latency 'inf'");
	expect_open_error("node,batch,latency_s\n*,1,nan\n", 2, "latency 'nan'");
	expect_open_error("node,batch,latency_s\n*,1,fast\n", 2, "latency 'fast'");
	expect_open_error("node,batch,latency_s\n*,1,\n", 2, "latency ''");
	expect_open_error("node,batch,latency_s\n*,1,1\n*,2,2\nenc,1,1\n*,1,3\n", 5,
	                  "duplicate row for node * batch 1 (first at line 2)");
	expect_open_error("node,batch,latency_s\nenc,2,1\nenc,2,1\nenc,2,1\n", 3,
	                  "duplicate row for node enc batch 2 (first at line 2)");
	expect_open_error("node,batch,latency_s\n*,1,1\nfoo,1,1\n", 3, "node 'foo' is not a node of model toy");
	expect_open_error("node,batch,latency_s\nenc,1,1\ndec,1,1\n", 0,
	                  "node attn of model toy has no rows and the table has no '*' rows");
	/* the task overhead: a number >= 0, once, within every row (each row holds it) */
	expect_open_error("node,batch,latency_s\n*,1,1\n# task_overhead_s: fast\n", 3, "task_overhead_s 'fast'");
	expect_open_error("node,batch,latency_s\n*,1,1\n# task_overhead_s: -1e-6\n", 3, "task_overhead_s '-1e-6'");
	expect_open_error("node,batch,latency_s\n*,1,1\n# task_overhead_s: nan\n", 3, "task_overhead_s 'nan'");
	expect_open_error("node,batch,latency_s\n*,1,1\n# task_overhead_s: 1e-6 s\n", 3, "task_overhead_s '1e-6 s'");
	expect_open_error("# task_overhead_s: 0.1\nnode,batch,latency_s\n*,1,1\n# task_overhead_s: 0.1\n", 4,
	                  "task_overhead_s given again (first on line 1)");
	expect_open_error("node,batch,latency_s\n*,1,1\nenc,2,0.01\ndec,1,1\nattn,1,1\n# task_overhead_s: 0.1\n", 3,
	                  "latency 0.01 s is below the task_overhead_s of line 6 (0.1 s)");
}

/* "# task_overhead_s: S" is read wherever it stands; without it a table has none. Rows are not changed
 * by it (a node task pays its row); hwmodel.h's task_overhead reports it. */
static void test_task_overhead(void **state)
{
	(void)state;
	char *path;
	struct hw_model *hw = open_ok("# a profile\nnode,batch,latency_s\n*,1,0.001\n*,2,0.0015\n"
	                              "  #  task_overhead_s:   0.0004  \n", &path);
	assert_dbl_near(hw_task_overhead(hw), 0.0004, 0);
	assert_dbl_near(cost(hw, 0, 1), 0.001, 0);
	assert_dbl_near(cost(hw, 1, 2), 0.0015, 0);
	hw_close(hw);
	drop_tmp(path);
	hw = open_ok("node,batch,latency_s\n*,1,0.001\n# task_overhead_s is not this line\n", &path);
	assert_dbl_near(hw_task_overhead(hw), 0, 0);
	hw_close(hw);
	drop_tmp(path);
}

static void test_direct_open_errors(void **state)
{
	struct hw_model *hw = (struct hw_model *)&hw;
	char err[512] = "";
	char *path;

	(void)state;
	/* the table's own open reports a bad header with its line */
	path = write_tmp("\n# c\nnode,latency_s,batch\n");
	assert_int_equal(hwtable_ops.open(path, &toy, &hw, err, sizeof err), -1);
	assert_null(hw);
	assert_non_null(strstr(err, ":3: expected header node,batch,latency_s"));
	/* a table needs a model */
	assert_int_equal(hwtable_ops.open(path, NULL, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "needs a model"));
	drop_tmp(path);
	assert_int_equal(hwtable_ops.open("/nonexistent/t.csv", &toy, &hw, err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/t.csv: cannot open"));
	{
		unsigned long line = 7;

		assert_int_equal(hwtable_sniff("/nonexistent/t.csv", &line, err, sizeof err), -1);
		assert_int_equal(line, 0);
	}
}

static void test_registry(void **state)
{
	struct hw_model *hw = (struct hw_model *)&hw;
	char err[512] = "";
	size_t n;
	const struct hw_ops *const *all = hw_registry(&n);

	(void)state;
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			assert_string_not_equal(all[i]->name, all[j]->name);

	assert_int_equal(hw_open("npu", &toy, &hw, err, sizeof err), 0);
	assert_string_equal(hw->label, "npu");
	assert_string_equal(hw->ops->name, "npu");
	hw_close(hw);
	hw_close(NULL);

	assert_int_equal(hw_open("tpu9", &toy, &hw, err, sizeof err), -1);
	assert_null(hw);
	char want[512];   /* the registry's names, in its order, as the message lists them */
	size_t used = (size_t)snprintf(want, sizeof want, "unknown hardware 'tpu9' (known: ");
	for (size_t i = 0; i < n; i++)
		used += (size_t)snprintf(want + used, sizeof want - used, "%s%s", i ? ", " : "", all[i]->name);
	snprintf(want + used, sizeof want - used, "; or a path to a node latency table)");
	assert_string_equal(err, want);
	/* every GPU row is a name --hw takes, gpu-ROW, a measured GPU that --tp may split */
	size_t rows;
	const struct gpu_memory_row *row = gpu_memory_rows(&rows);
	assert_true(rows >= 1);
	for (size_t r = 0; r < rows; r++) {
		char name[64];
		snprintf(name, sizeof name, "gpu-%s", row[r].gpu);
		size_t i = 0;
		while (i < n && strcmp(all[i]->name, name) != 0)
			i++;
		assert_true(i < n);
		assert_string_equal(all[i]->help, row[r].help);
		assert_non_null(all[i]->open_tp);
	}
	assert_int_equal(hw_open("/tmp", &toy, &hw, err, sizeof err), -1);
	assert_string_equal(err, "/tmp: not a regular file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exact_at_listed_points),
		cmocka_unit_test(test_monotone_between_points),
		cmocka_unit_test(test_pass_node_by_tokens),
		cmocka_unit_test(test_steffen_value),
		cmocka_unit_test(test_linear_two_points),
		cmocka_unit_test(test_star_and_override),
		cmocka_unit_test(test_single_point_and_range),
		cmocka_unit_test(test_non_monotone_accepted),
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_task_overhead),
		cmocka_unit_test(test_direct_open_errors),
		cmocka_unit_test(test_registry),
	};
	return cmocka_run_group_tests(tests, toy_setup, NULL);
}
