/* tests/test_json.c: util/json_read, how capacity and search read their
 * children's JSON: a top-level key, a key inside an object (not one of the
 * same name outside it), an array's element, an array of objects, and what
 * is not there. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "util/json_read.h"

/* Each number at its path, an
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
	assert_int_equal(json_doc_has_object(d, "latency_ms"), 1);
	assert_int_equal(json_doc_has_object(d, "y"), 0);
	assert_int_equal(json_doc_has_object(d, "absent"), 0);
	json_doc_free(d);
	/* an array of objects, as capacity's points */
	d = json_doc_parse("{\"points\":[{\"rate_rps\":4.5,\"saturated\":false},{\"rate_rps\":9,\"saturated\":true},"
	                   "{\"saturated\":true},3],\"o\":null}");
	assert_non_null(d);
	assert_int_equal(json_doc_count(d, "points"), 4);
	assert_int_equal(json_doc_count(d, "o"), 0);
	assert_int_equal(json_doc_count(d, "absent"), 0);
	assert_int_equal(json_doc_item_number(d, "points", 1, "rate_rps", &v), 0);
	assert_true(v == 9);
	assert_int_equal(json_doc_item_true(d, "points", 0, "saturated"), 0);
	assert_int_equal(json_doc_item_true(d, "points", 1, "saturated"), 1);
	assert_int_equal(json_doc_item_number(d, "points", 2, "rate_rps", &v), -1);
	assert_int_equal(json_doc_item_number(d, "points", 3, "rate_rps", &v), -1);   /* a number, not an object */
	assert_int_equal(json_doc_item_number(d, "points", 4, "rate_rps", &v), -1);   /* past the end */
	assert_int_equal(json_doc_has_object(d, "o"), 0);                            /* null is no object */
	json_doc_free(d);
	assert_null(json_doc_parse("{\"a\":1"));
	assert_null(json_doc_parse("[1,2]"));
	assert_null(json_doc_parse(""));
	json_doc_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doc_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
