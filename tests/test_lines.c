/* tests/test_lines.c: the bounded line reader (util/lines.h) at its edges:
 * a line of exactly LINES_MAX_LINE bytes is read and one byte more is
 * refused; the last line needs no newline; a NUL byte is refused on the line
 * it is on; the size limit holds for regular files (by their size, before
 * reading) and for pipes (by the bytes delivered). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "../util/lines.h"

static char tmp_path[] = "/tmp/test_lines.XXXXXX";

static const char *write_tmp(const char *data, size_t n)
{
	FILE *f = fopen(tmp_path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
	return tmp_path;
}

/* Reads the whole file; returns lines read, or -1 with err. */
static long read_all(const char *path, uint64_t max_bytes, char *err, size_t errlen, size_t *last_len)
{
	struct lines_reader r;
	char *line;
	size_t len;
	long n = 0;
	int got;
	if (lines_open(&r, path, max_bytes, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&r, &line, &len, err, errlen)) > 0) {
		assert_int_equal(strlen(line), len);
		*last_len = len;
		n++;
	}
	lines_close(&r);
	return got < 0 ? -1 : n;
}

static void test_line_length_edge(void **state)
{
	(void)state;
	char err[256];
	size_t last = 0;
	char *buf = malloc(LINES_MAX_LINE + 2);
	assert_non_null(buf);
	/* the limit counts the newline: LINES_MAX_LINE bytes in all */
	memset(buf, 'a', LINES_MAX_LINE + 1);
	buf[LINES_MAX_LINE - 1] = '\n';
	assert_int_equal(read_all(write_tmp(buf, LINES_MAX_LINE), LINES_MAX_SMALL_FILE, err, sizeof err, &last), 1);
	assert_int_equal(last, LINES_MAX_LINE);
	buf[LINES_MAX_LINE - 1] = 'a';
	buf[LINES_MAX_LINE] = '\n';
	assert_int_equal(read_all(write_tmp(buf, LINES_MAX_LINE + 1), LINES_MAX_SMALL_FILE, err, sizeof err, &last), -1);
	assert_non_null(strstr(err, ":1: line longer than 1048576 bytes"));
	free(buf);
}

static void test_last_line_and_nul(void **state)
{
	(void)state;
	char err[256];
	size_t last = 0;
	assert_int_equal(read_all(write_tmp("a\nbc", 4), 100, err, sizeof err, &last), 2);
	assert_int_equal(last, 2);
	assert_int_equal(read_all(write_tmp("", 0), 100, err, sizeof err, &last), 0);
	assert_int_equal(read_all(write_tmp("a\nb\nc\0d\n", 8), 100, err, sizeof err, &last), -1);
	assert_non_null(strstr(err, ":3: a NUL byte"));
}

static void test_size_limit(void **state)
{
	(void)state;
	char err[256];
	size_t last = 0;
	/* a regular file: refused at open by its size */
	assert_int_equal(read_all(write_tmp("0123456789\n", 11), 10, err, sizeof err, &last), -1);
	assert_non_null(strstr(err, "11 bytes, more than"));
	assert_int_equal(read_all(write_tmp("012345678\n", 10), 10, err, sizeof err, &last), 1);
	/* a pipe: refused when the bytes it delivers pass the limit */
	FILE *p = popen("printf '0123456789\\n'", "r");
	assert_non_null(p);
	char path[64];
	snprintf(path, sizeof path, "/dev/fd/%d", fileno(p));
	assert_int_equal(read_all(path, 10, err, sizeof err, &last), -1);
	assert_non_null(strstr(err, "more than the"));
	pclose(p);
}

/* The one error form of a file: PATH:LINE: message, PATH: message for line 0,
 * cut short (terminated) when err is small, nothing written when it has no room. */
static void test_fail_format(void **state)
{
	(void)state;
	char err[64];
	assert_int_equal(lines_fail(err, sizeof err, "a.csv", 3, "bad %s %d", "x", 7), -1);
	assert_string_equal(err, "a.csv:3: bad x 7");
	lines_fail(err, sizeof err, "a.csv", 0, "empty");
	assert_string_equal(err, "a.csv: empty");
	char small[8];
	lines_fail(small, sizeof small, "long-name.csv", 12, "whatever");
	assert_string_equal(small, "long-na");
	assert_int_equal(lines_fail(NULL, 0, "a", 1, "x"), -1);
}

int main(void)
{
	int fd = mkstemp(tmp_path);
	if (fd < 0)
		return 1;
	close(fd);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_length_edge),
		cmocka_unit_test(test_last_line_and_nul),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_fail_format),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(tmp_path);
	return rc;
}
