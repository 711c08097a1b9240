/* tests/test_errkind.c: the kind of a failure kept beside its message
 * (util/errkind.h): marked where the failure is found, from errno or
 * SQLite's result code, never read from the text. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <sqlite3.h>
#include "util/errkind.h"

static void test_formatters_mark(void **state)
{
	(void)state;
	char err[64];
	err_kind_reset();
	assert_int_equal(err_kind(), ERR_NONE);
	assert_int_equal(err_memory(err, sizeof err, "x: %d", 3), -1);
	assert_string_equal(err, "x: 3");
	assert_int_equal(err_kind(), ERR_MEMORY);
	err_io(err, sizeof err, "y");
	assert_int_equal(err_kind(), ERR_IO);
	err_kind_reset();
	assert_int_equal(err_kind(), ERR_NONE);
}

/* errno: the machine's failures marked, a path's (missing, forbidden) left the input's */
static void test_errno_kinds(void **state)
{
	(void)state;
	const struct { int e; enum err_kind k; } cases[] = {
		{ ENOMEM, ERR_MEMORY }, { EIO, ERR_IO }, { ENOSPC, ERR_IO }, { EDQUOT, ERR_IO }, { EFBIG, ERR_IO },
		{ ENOENT, ERR_NONE }, { EACCES, ERR_NONE }, { EISDIR, ERR_NONE },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err_kind_reset();
		assert_string_equal(err_strerror(cases[i].e), strerror(cases[i].e));
		assert_int_equal(err_kind(), cases[i].k);
	}
}

/* SQLite's result codes, extended ones by their primary code */
static void test_sqlite_kinds(void **state)
{
	(void)state;
	const struct { int rc; enum err_kind k; } cases[] = {
		{ SQLITE_NOMEM, ERR_MEMORY }, { SQLITE_IOERR, ERR_IO }, { SQLITE_IOERR_WRITE, ERR_IO },
		{ SQLITE_FULL, ERR_IO }, { SQLITE_BUSY, ERR_IO }, { SQLITE_LOCKED, ERR_IO },
		{ SQLITE_CORRUPT, ERR_INPUT }, { SQLITE_NOTADB, ERR_INPUT },
		{ SQLITE_CANTOPEN, ERR_NONE }, { SQLITE_READONLY, ERR_NONE }, { SQLITE_CONSTRAINT, ERR_NONE },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		err_kind_reset();
		assert_string_equal(err_sqlite_str(cases[i].rc), sqlite3_errstr(cases[i].rc));
		assert_int_equal(err_kind(), cases[i].k);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formatters_mark),
		cmocka_unit_test(test_errno_kinds),
		cmocka_unit_test(test_sqlite_kinds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
