/* util/lines.h: a bounded line reader for every text file simbatch reads.
 *
 * getline() grows its buffer for as long as no newline comes, so a binary
 * file, /dev/zero or a 10 GB one-line file would eat memory before any format
 * check ran. This reader stops at the first of: a line longer than
 * LINES_MAX_LINE bytes, a file larger than the caller's limit, a NUL byte
 * (never part of our text formats), each with one message naming the file
 * and the line.
 *
 * Contract: lines_open opens PATH ("-" is not special); lines_next returns
 * 1 with the next line in *line (NUL-terminated, its newline kept as
 * getline keeps it, writable until the next call) and its length in *len,
 * 0 at the end of the file, -1 with err set; lines_close frees everything
 * and may be called on a reader that failed to open. Never prints, never
 * exits.
 */
#ifndef SB_UTIL_LINES_H
#define SB_UTIL_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

/* No format of ours needs a line near this long: the longest legitimate lines
 * (a sweep axis, a model's node list) are a few kilobytes. */
#define LINES_MAX_LINE ((size_t)1 << 20)

/* File size limits by kind of file. Tables, configurations, models, sweeps
 * and CDFs are kilobytes; traces and length files are the only inputs that
 * scale with a workload (the Azure 2023 trace is 0.7 MB for 19k requests, so
 * 1 GiB holds some 27 million requests). */
#define LINES_MAX_SMALL_FILE ((uint64_t)64 << 20)
#define LINES_MAX_WORKLOAD_FILE ((uint64_t)1 << 30)

struct lines_reader {
	FILE *f;
	const char *path;
	uint64_t max_bytes, bytes;
	unsigned long lineno;       /* of the line last returned, from 1 */
	char *buf;                  /* the line returned last */
	size_t cap;
	char *in;                   /* what was read from the file and not yet returned: in[at, end) */
	size_t at, end;
	int eof;
};

int lines_open(struct lines_reader *r, const char *path, uint64_t max_bytes, char *err, size_t errlen);
int lines_next(struct lines_reader *r, char **line, size_t *len, char *err, size_t errlen);
void lines_close(struct lines_reader *r);

/* The one form of a file's error: "PATH:LINE: message" into err (line 0:
 * "PATH: message", for the file as a whole). Returns -1, for
 * `return lines_fail(...)`. */
int lines_fail(char *err, size_t errlen, const char *path, unsigned long line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
int lines_vfail(char *err, size_t errlen, const char *path, unsigned long line, const char *fmt, va_list ap)
	__attribute__((format(printf, 5, 0)));

#endif
