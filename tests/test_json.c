/* tests/test_json.c: json_number_after, how capacity and search read their
 * children's JSON: a top-level key, a key inside a flat object (not one of
 * the same name outside it), an array's element, and what is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "util/json.h"

static void test_number_after(void **state)
{
	(void)state;
	const char *j = "{\"p99\":9,\"latency_ms\":{\"p50\":1.5,\"p99\":2.25},\"bracket_rps\":[17.9,18.2],"
	                "\"llm\":{\"hw_band_rps\":[1e1,3]},\"after\":{\"x\":1},\"y\":4}";
	double v = 0;
	assert_int_equal(json_number_after(j, NULL, "p99", -1, &v), 0);
	assert_true(v == 9);
	assert_int_equal(json_number_after(j, "latency_ms", "p99", -1, &v), 0);
	assert_true(v == 2.25);
	assert_int_equal(json_number_after(j, NULL, "bracket_rps", 1, &v), 0);
	assert_true(v == 18.2);
	assert_int_equal(json_number_after(j, "llm", "hw_band_rps", 0, &v), 0);
	assert_true(v == 10);
	/* a key past the object's end is not the object's; an array asked of a number; absent ones */
	assert_int_equal(json_number_after(j, "llm", "y", -1, &v), -1);
	assert_int_equal(json_number_after(j, NULL, "p99", 0, &v), -1);
	assert_int_equal(json_number_after(j, NULL, "bracket_rps", 2, &v), -1);
	assert_int_equal(json_number_after(j, "nowhere", "x", -1, &v), -1);
	assert_int_equal(json_number_after(j, NULL, "after", -1, &v), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_number_after),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
