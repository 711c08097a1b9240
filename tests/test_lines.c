/* tests/test_lines.c: the bounded line reader (util/lines.h) at its edges:
 * a line of exactly LINES_MAX_LINE bytes is read and one byte more is
 * refused; the last line needs no newline; a NUL byte is refused on the line
 * it is on; the size limit holds for regular files (by their size, before
 * reading) and for pipes (by the bytes delivered). And on random inputs fed
 * through a FIFO (NULs, long and short lines, size limits, reads of any
 * size), every line and every message is the one a byte-by-byte reading
 * (a second implementation, here) gives. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
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

/* ---- a byte-by-byte reader, the reference ---- */

struct ref_line {
	int got;                     /* 1 a line, 0 the end, -1 an error */
	size_t len;
	char msg[512];
};

/* The next line of data[*at, n) as the reader must give it: each byte, in order, a NUL, then the size
 * limit (bytes so far), then the line's length checked; the line ends with its newline. */
static struct ref_line ref_next(const char *data, size_t n, size_t *at, uint64_t max_bytes, uint64_t *bytes,
                                unsigned long lineno, const char *path, char *line)
{
	struct ref_line out = { 0 };
	size_t len = 0;
	while (*at < n) {
		char c = data[(*at)++];
		if (c == '\0') {
			snprintf(out.msg, sizeof out.msg, "%s:%lu: a NUL byte (is this a text file?)", path, lineno);
			out.got = -1;
			return out;
		}
		if (++*bytes > max_bytes) {
			snprintf(out.msg, sizeof out.msg, "%s: more than the %llu MiB this kind of file may have", path,
			         (unsigned long long)(max_bytes >> 20));
			out.got = -1;
			return out;
		}
		if (len >= LINES_MAX_LINE) {
			snprintf(out.msg, sizeof out.msg, "%s:%lu: line longer than %zu bytes (is this a text file?)", path,
			         lineno, LINES_MAX_LINE);
			out.got = -1;
			return out;
		}
		line[len++] = c;
		if (c == '\n')
			break;
	}
	out.got = len > 0;
	out.len = len;
	return out;
}

static uint64_t rng = 88172645463325252u;
static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng % n;
}

/* data through a FIFO in a private directory, written by a child in pieces of random size, read by the
 * reader with the limit max_bytes; every answer compared with ref_next's. */
static void compare_through_fifo(const char *dir, const char *data, size_t n, uint64_t max_bytes, char *ref_buf)
{
	char fifo[256];
	snprintf(fifo, sizeof fifo, "%s/in", dir);
	unlink(fifo);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		FILE *w = fopen(fifo, "wb");
		for (size_t at = 0; w && at < n;) {
			size_t piece = 1 + (size_t)(rng % 70000), left = n - at;
			piece = piece < left ? piece : left;
			if (fwrite(data + at, 1, piece, w) != piece)
				_exit(1);
			fflush(w);
			at += piece;
			rng = rng * 6364136223846793005u + 1;
		}
		_exit(0);
	}
	struct lines_reader r;
	char err[256], *line;
	size_t len, at = 0;
	uint64_t bytes = 0;
	assert_int_equal(lines_open(&r, fifo, max_bytes, err, sizeof err), 0);
	for (unsigned long lineno = 1;; lineno++) {
		struct ref_line want = ref_next(data, n, &at, max_bytes, &bytes, lineno, fifo, ref_buf);
		int got = lines_next(&r, &line, &len, err, sizeof err);
		assert_int_equal(got, want.got);
		if (got < 0) {
			assert_string_equal(err, want.msg);
			break;
		}
		if (got == 0)
			break;
		assert_int_equal(len, want.len);
		assert_memory_equal(line, ref_buf, len);
	}
	lines_close(&r);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	unlink(fifo);
}

static void test_against_byte_by_byte(void **state)
{
	(void)state;
	char dir[] = "/tmp/test_lines_fifo.XXXXXX";
	assert_non_null(mkdtemp(dir));
	signal(SIGPIPE, SIG_IGN);      /* a child writing to a reader that stopped at an error */
	size_t cap = LINES_MAX_LINE + 300000;
	char *data = malloc(cap), *ref_buf = malloc(cap);
	assert_non_null(data);
	assert_non_null(ref_buf);
	for (int round = 0; round < 48; round++) {
		/* 0: plain text to its end; 1: cut by the size limit; 2: a rare NUL; 3: a first line about
		 * LINES_MAX_LINE long (as long, or longer: refused). Lines of 0-200 bytes, now and then one of
		 * 60-200 kB (across reads), a last line without a newline now and then */
		int mode = round % 4;
		size_t n = 0, want = mode == 3 ? LINES_MAX_LINE + 1000 + rnd(200000) : 1 + rnd(300000);
		while (n < want) {
			size_t line = rnd(20) == 0 ? 60000 + rnd(140000) : rnd(200);
			if (mode == 3 && n == 0)
				line = LINES_MAX_LINE - 2 + rnd(4);
			for (size_t k = 0; k < line && n < want; k++)
				data[n++] = mode == 2 && rnd(100000) == 0 ? '\0' : (char)('a' + rnd(26));
			if (n < want && rnd(50) != 0)
				data[n++] = '\n';
		}
		/* the size limit anywhere, or where a line's newline is the byte past it or the last within it */
		uint64_t max_bytes = n + rnd(10);
		if (mode == 1) {
			const char *nl = memchr(data + rnd(n), '\n', n / 2);
			max_bytes = nl && rnd(3) ? (uint64_t)(nl - data) + rnd(2) : 1 + rnd(n);
		}
		compare_through_fifo(dir, data, n, max_bytes, ref_buf);
	}
	/* where the limits meet on one byte: a NUL is reported before the size, the size before the length */
	static const struct { const char *text; size_t n; uint64_t max_bytes; } edges[] = {
		{ "ab\0d\n", 5, 2 },        /* the NUL is the byte past the limit: the NUL */
		{ "abcd\0\n", 6, 2 },       /* past the limit before the NUL: the size */
		{ "ab\nc\0", 5, 3 },        /* line 1 within, line 2's first byte past it: the size */
		{ "ab\ncd\n", 6, 6 },       /* exactly the limit: both lines */
		{ "ab\ncd\n", 6, 5 },       /* one short: the size, on line 2's newline */
	};
	for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
		compare_through_fifo(dir, edges[i].text, edges[i].n, edges[i].max_bytes, ref_buf);
	free(data);
	free(ref_buf);
	assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
	int fd = mkstemp(tmp_path);
	if (fd < 0)
		return 1;
	close(fd);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_length_edge),
		cmocka_unit_test(test_against_byte_by_byte),
		cmocka_unit_test(test_last_line_and_nul),
		cmocka_unit_test(test_size_limit),
		cmocka_unit_test(test_fail_format),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	unlink(tmp_path);
	return rc;
}
