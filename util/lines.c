/* util/lines.c: the bounded line reader (see lines.h). */
#define _POSIX_C_SOURCE 200809L   /* fileno, read */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lines.h"
#include "grow.h"
#include "errkind.h"

/* Bytes read from the file at a time (a read may return fewer: a pipe's, as they come). */
#define LINES_READ_CHUNK ((size_t)1 << 16)

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
	if (!(r->in = malloc(LINES_READ_CHUNK))) {
		err_memory(err, errlen, "%s: out of memory for a read buffer", path);
		lines_close(r);
		return -1;
	}
	return 0;
}

static int lines_grow(struct lines_reader *r, size_t need)
{
	return GROW(r->buf, r->cap, need, 256);
}

/* More of the file into r->in when all of it was returned: 1, 0 at its end, -1 on a read error. */
static int lines_fill(struct lines_reader *r)
{
	if (r->at < r->end)
		return 1;
	if (r->eof)
		return 0;
	ssize_t k;
	do
		k = read(fileno(r->f), r->in, LINES_READ_CHUNK);
	while (k < 0 && errno == EINTR);
	if (k < 0)
		return -1;
	r->at = 0;
	r->end = (size_t)k;
	r->eof = k == 0;
	return k > 0;
}

int lines_next(struct lines_reader *r, char **line, size_t *len, char *err, size_t errlen)
{
	size_t n = 0;
	unsigned long lineno = r->lineno + 1;
	for (;;) {
		int got = lines_fill(r);
		if (got < 0) {
			err_io(err, errlen, "%s: read error: %s", r->path, err_strerror(errno));
			return -1;
		}
		if (got == 0)
			break;
		const char *from = r->in + r->at, *nl = memchr(from, '\n', r->end - r->at);
		size_t take = nl ? (size_t)(nl - from) + 1 : r->end - r->at;
		/* the three limits, each at the first byte that breaks it, as a byte-by-byte reading meets them:
		 * a NUL, then the file's size, then the line's length */
		const char *nul = memchr(from, '\0', take);
		size_t at_nul = nul ? (size_t)(nul - from) : SIZE_MAX;
		size_t at_size = r->bytes + take > r->max_bytes ? (size_t)(r->max_bytes - r->bytes) : SIZE_MAX;
		size_t at_long = n + take > LINES_MAX_LINE ? LINES_MAX_LINE - n : SIZE_MAX;
		if (at_nul != SIZE_MAX && at_nul <= at_size && at_nul <= at_long) {
			snprintf(err, errlen, "%s:%lu: a NUL byte (is this a text file?)", r->path, lineno);
			return -1;
		}
		if (at_size != SIZE_MAX && at_size <= at_long) {
			snprintf(err, errlen, "%s: more than the %llu MiB this kind of file may have", r->path,
			         (unsigned long long)(r->max_bytes >> 20));
			return -1;
		}
		if (at_long != SIZE_MAX) {
			snprintf(err, errlen, "%s:%lu: line longer than %zu bytes (is this a text file?)", r->path,
			         lineno, LINES_MAX_LINE);
			return -1;
		}
		if (lines_grow(r, n + take + 1) != 0) {
			err_memory(err, errlen, "%s: out of memory reading line %lu", r->path, lineno);
			return -1;
		}
		memcpy(r->buf + n, from, take);
		n += take;
		r->bytes += take;
		r->at += take;
		if (nl)
			break;
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
	free(r->in);
	r->f = NULL;
	r->buf = NULL;
	r->in = NULL;
	r->cap = r->at = r->end = 0;
	r->eof = 0;
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
