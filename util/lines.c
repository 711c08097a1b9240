/* util/lines.c: the bounded line reader (see lines.h). */
#define _POSIX_C_SOURCE 200809L   /* getc_unlocked */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lines.h"
#include "errkind.h"

int lines_open(struct lines_reader *r, const char *path, uint64_t max_bytes, char *err, size_t errlen)
{
	memset(r, 0, sizeof *r);
	r->path = path;
	r->max_bytes = max_bytes;
	if (!(r->f = fopen(path, "r"))) {
		snprintf(err, errlen, "%s: cannot open: %s", path, err_strerror(errno));
		return -1;
	}
	struct stat st;
	int known = fstat(fileno(r->f), &st) == 0;
	if (known && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory, not a file", path);
		lines_close(r);
		return -1;
	}
	/* a regular file is judged by its size before a byte is read; anything
	 * else (a pipe, a device) by the bytes it delivers */
	if (known && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max_bytes) {
		snprintf(err, errlen, "%s: %llu bytes, more than the %llu MiB this kind of file may have", path,
		         (unsigned long long)st.st_size, (unsigned long long)(max_bytes >> 20));
		lines_close(r);
		return -1;
	}
	return 0;
}

static int lines_grow(struct lines_reader *r, size_t need)
{
	if (need <= r->cap)
		return 0;
	size_t cap = r->cap ? r->cap : 256;
	while (cap < need)
		cap *= 2;
	char *b = realloc(r->buf, cap);
	if (!b)
		return -1;
	r->buf = b;
	r->cap = cap;
	return 0;
}

int lines_next(struct lines_reader *r, char **line, size_t *len, char *err, size_t errlen)
{
	size_t n = 0;
	int c = EOF;
	unsigned long lineno = r->lineno + 1;
	while ((c = getc_unlocked(r->f)) != EOF) {
		if (c == '\0') {
			snprintf(err, errlen, "%s:%lu: a NUL byte (is this a text file?)", r->path, lineno);
			return -1;
		}
		if (++r->bytes > r->max_bytes) {
			snprintf(err, errlen, "%s: more than the %llu MiB this kind of file may have", r->path,
			         (unsigned long long)(r->max_bytes >> 20));
			return -1;
		}
		if (n >= LINES_MAX_LINE) {
			snprintf(err, errlen, "%s:%lu: line longer than %zu bytes (is this a text file?)", r->path,
			         lineno, LINES_MAX_LINE);
			return -1;
		}
		if (lines_grow(r, n + 2) != 0) {
			err_memory(err, errlen, "%s: out of memory reading line %lu", r->path, lineno);
			return -1;
		}
		r->buf[n++] = (char)c;
		if (c == '\n')
			break;
	}
	if (ferror(r->f)) {
		err_io(err, errlen, "%s: read error: %s", r->path, err_strerror(errno));
		return -1;
	}
	if (n == 0)
		return 0;
	r->buf[n] = '\0';
	r->lineno = lineno;
	*line = r->buf;
	*len = n;
	return 1;
}

void lines_close(struct lines_reader *r)
{
	if (r->f)
		fclose(r->f);
	free(r->buf);
	r->f = NULL;
	r->buf = NULL;
	r->cap = 0;
}

int lines_vfail(char *err, size_t errlen, const char *path, unsigned long line, const char *fmt, va_list ap)
{
	if (!err || errlen == 0)
		return -1;
	int n = line ? snprintf(err, errlen, "%s:%lu: ", path, line) : snprintf(err, errlen, "%s: ", path);
	if (n >= 0 && (size_t)n < errlen)
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
	return -1;
}

int lines_fail(char *err, size_t errlen, const char *path, unsigned long line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lines_vfail(err, errlen, path, line, fmt, ap);
	va_end(ap);
	return -1;
}
