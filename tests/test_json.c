/* tests/test_json.c: json_number_after, how capacity and search read their
 * children's JSON: a top-level key, a key inside a flat object (not one of
 * the same name outside it), an array's element, and what is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "util/json.h"
#include "util/json_read.h"

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

/* The parser's reading of the same document: each number at its path, an
 * integer beyond 64 bits signed (a seed) read as a double, a key only inside
 * an object not found at the top, and text that is no JSON object refused. */
static void test_doc_number(void **state)
{
	(void)state;
	const char *j = "{\"p99\":9,\"latency_ms\":{\"p50\":1.5,\"p99\":2.25},\"bracket_rps\":[17.9,18.2],"
	                "\"llm\":{\"hw_band_rps\":[1e1,3]},\"after\":{\"x\":1},\"y\":4,\"seed\":18446744073709551615,"
	                "\"saturated\":true,\"steady\":false}";
	struct json_doc *d = json_doc_parse(j);
	assert_non_null(d);
	double v = 0;
	assert_int_equal(json_doc_number(d, NULL, "p99", -1, &v), 0);
	assert_true(v == 9);
	assert_int_equal(json_doc_number(d, "latency_ms", "p99", -1, &v), 0);
	assert_true(v == 2.25);
	assert_int_equal(json_doc_number(d, NULL, "bracket_rps", 1, &v), 0);
	assert_true(v == 18.2);
	assert_int_equal(json_doc_number(d, "llm", "hw_band_rps", 0, &v), 0);
	assert_true(v == 10);
	assert_int_equal(json_doc_number(d, NULL, "seed", -1, &v), 0);
	assert_true(v == 18446744073709551615.0);
	assert_int_equal(json_doc_number(d, "llm", "y", -1, &v), -1);
	assert_int_equal(json_doc_number(d, NULL, "p99", 0, &v), -1);
	assert_int_equal(json_doc_number(d, NULL, "bracket_rps", 2, &v), -1);
	assert_int_equal(json_doc_number(d, "nowhere", "x", -1, &v), -1);
	assert_int_equal(json_doc_number(d, NULL, "after", -1, &v), -1);
	assert_int_equal(json_doc_number(d, NULL, "p50", -1, &v), -1);     /* only latency_ms has one */
	assert_int_equal(json_doc_number(d, "y", "x", -1, &v), -1);        /* a number is no object */
	assert_int_equal(json_doc_true(d, "saturated"), 1);
	assert_int_equal(json_doc_true(d, "steady"), 0);
	assert_int_equal(json_doc_true(d, "absent"), 0);
	json_doc_free(d);
	assert_null(json_doc_parse("{\"a\":1"));
	assert_null(json_doc_parse("[1,2]"));
	assert_null(json_doc_parse(""));
	json_doc_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_number_after),
		cmocka_unit_test(test_doc_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
