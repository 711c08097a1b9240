/* tests/test_text.c: the text summaries' rounding (util/text.h), by hand:
 * a figure shown to the place of its band's leading digit, and a number to
 * so many significant digits with no exponent. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>
#include "../util/text.h"

static void test_band_decimals(void **state)
{
	(void)state;
	assert_int_equal(txt_band_decimals(0.87), 1);    /* 17.4297 within +-0.87: 17.4 */
	assert_int_equal(txt_band_decimals(1.0), 0);
	assert_int_equal(txt_band_decimals(0.099), 2);
	assert_int_equal(txt_band_decimals(390), 0);     /* never negative: a plain integer */
	assert_int_equal(txt_band_decimals(0), 6);       /* no band known */
	assert_int_equal(txt_band_decimals(1e-12), 9);
}

static void test_format_sig(void **state)
{
	(void)state;
	char buf[64];
	txt_format_sig(buf, sizeof buf, 11093.4, 3);     /* no 1.11e+04 */
	assert_string_equal(buf, "11093");
	txt_format_sig(buf, sizeof buf, 0.012345, 3);
	assert_string_equal(buf, "0.0123");
	txt_format_sig(buf, sizeof buf, 17.4297, 4);
	assert_string_equal(buf, "17.43");
	txt_format_sig(buf, sizeof buf, 0, 3);
	assert_string_equal(buf, "0");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_band_decimals),
		cmocka_unit_test(test_format_sig),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
