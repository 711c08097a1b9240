/* tests/test_options.c: the parameter tables of util/options.h, which the
 * command line, each policy's knobs and the calibrators all parse with:
 * --key=value only, bounds, a repeatable option's values in order, a knob
 * set as if given, and every default before anything is given. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "util/options.h"

static const struct opt_def defs[] = {
	{ "model", OPT_LIST, NULL, 0, 0, 0, "" },
	{ "reps", OPT_UINT, "5", 1, 100, 0, "" },
	{ "time", OPT_DOUBLE, "0.5", 0, 10, 1, "" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "" },
	{ "cache", OPT_STR, "on", 0, 0, 0, "" },
};
#define NDEFS (sizeof defs / sizeof defs[0])

static int parse(struct opt_set *s, char *err, size_t errlen, int argc, char **argv)
{
	return opt_parse(s, defs, NDEFS, argc, argv, 0, err, errlen);
}

static void test_list_keeps_every_value_in_order(void **state)
{
	(void)state;
	struct opt_set s;
	char err[256] = "";
	char *argv[] = { "x", "--model=a,b", "--reps=7", "--model=c", "--quiet", NULL };
	assert_int_equal(parse(&s, err, sizeof err, 5, argv), 0);
	assert_int_equal(opt_list_count(&s, "model"), 2);
	assert_string_equal(opt_list_at(&s, "model", 0), "a,b");
	assert_string_equal(opt_list_at(&s, "model", 1), "c");
	assert_null(opt_list_at(&s, "model", 2));
	assert_int_equal(opt_list_count(&s, "reps"), 0);       /* not a list */
	assert_int_equal(opt_uint(&s, "reps"), 7);
	assert_true(opt_flag(&s, "quiet"));
	assert_true(opt_double(&s, "time") == 0.5);             /* the default */
}

static void test_refusals(void **state)
{
	(void)state;
	struct opt_set s;
	char err[256] = "";
	char *twice[] = { "x", "--reps=2", "--reps=3", NULL };
	assert_int_equal(parse(&s, err, sizeof err, 3, twice), -1);
	assert_non_null(strstr(err, "--reps given twice"));
	char *low[] = { "x", "--reps=0", NULL };
	assert_int_equal(parse(&s, err, sizeof err, 2, low), -1);
	assert_non_null(strstr(err, "--reps=0"));
	char *open_low[] = { "x", "--time=0", NULL };           /* min_open: above 0 */
	assert_int_equal(parse(&s, err, sizeof err, 2, open_low), -1);
	char *empty[] = { "x", "--model=", NULL };
	assert_int_equal(parse(&s, err, sizeof err, 2, empty), -1);
	char *unknown[] = { "x", "--bogus=1", NULL };
	assert_int_equal(parse(&s, err, sizeof err, 2, unknown), -1);
	assert_non_null(strstr(err, "unknown option"));
}

static void test_defaults_and_put(void **state)
{
	(void)state;
	struct opt_set s;
	char err[256] = "";
	opt_defaults(&s, defs, NDEFS);
	assert_string_equal(opt_str(&s, "reps"), "5");
	assert_false(opt_given(&s, "reps"));
	assert_null(opt_str(&s, "model"));
	assert_int_equal(opt_put(&s, "reps", "9", err, sizeof err), 0);
	assert_true(opt_given(&s, "reps"));
	assert_int_equal(opt_uint(&s, "reps"), 9);
	assert_int_equal(opt_put(&s, "reps", "101", err, sizeof err), -1);     /* its bounds */
	assert_int_equal(opt_uint(&s, "reps"), 9);                             /* unchanged */
	assert_int_equal(opt_put(&s, "nope", "1", err, sizeof err), -1);
	assert_ptr_equal(opt_find(defs, NDEFS, "time"), &defs[2]);
	assert_null(opt_find(defs, NDEFS, "nope"));
	assert_null(opt_str(NULL, "reps"));                                    /* no set: nothing */
}

/* A word of two: its index, the default's when not given, and anything else refused naming both. */
static void test_either(void **state)
{
	(void)state;
	struct opt_set s;
	char err[256] = "";
	char *none[] = { "prog" }, *off[] = { "prog", "--cache=off" }, *bad[] = { "prog", "--cache=maybe" };
	assert_int_equal(parse(&s, err, sizeof err, 1, none), 0);
	assert_int_equal(opt_either(&s, "cache", "on", "off", err, sizeof err), 0);
	assert_int_equal(parse(&s, err, sizeof err, 2, off), 0);
	assert_int_equal(opt_either(&s, "cache", "on", "off", err, sizeof err), 1);
	assert_int_equal(parse(&s, err, sizeof err, 2, bad), 0);
	assert_int_equal(opt_either(&s, "cache", "on", "off", err, sizeof err), -1);
	assert_string_equal(err, "--cache must be on or off, got 'maybe'");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_keeps_every_value_in_order),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_defaults_and_put),
		cmocka_unit_test(test_either),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
