/* traces/trace_csv.c: loads a recorded or generated request trace
 * (DESIGN.md section 4: "arrival_s,input_len,output_len", one request a
 * row, row order = request id) for replay instead of generated arrivals.
 * Every rejection names PATH:LINE and the field, because traces are often
 * hand-edited or produced by other people's scripts.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L   /* getline */
#endif
#include "workload.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRC_TRACE_HEADER "arrival_s,input_len,output_len"

/* Makes room for one more row, doubling the capacity. */
static int trc_trace_grow(struct trc_trace *t, size_t *cap)
{
	if (t->n < *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 1024;
	double *a = realloc(t->arrival_s, ncap * sizeof *a);
	if (!a)
		return -1;
	t->arrival_s = a;
	uint32_t *in = realloc(t->input_len, ncap * sizeof *in);
	if (!in)
		return -1;
	t->input_len = in;
	uint32_t *outl = realloc(t->output_len, ncap * sizeof *outl);
	if (!outl)
		return -1;
	t->output_len = outl;
	*cap = ncap;
	return 0;
}

static int trc_trace_length(const char *path, unsigned long lineno, const char *name, const char *field,
                            uint32_t *out, char *err, size_t errlen)
{
	uint64_t v;
	if (txt_parse_uint(field, TRC_LENGTH_LIMIT, &v) != 0) {
		snprintf(err, errlen, "%s:%lu: %s must be an integer in [0, %u], got '%s'",
		         path, lineno, name, TRC_LENGTH_LIMIT, field);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

int trc_trace_load(const char *path, struct trc_trace **out, char *err, size_t errlen)
{
	struct trc_trace *t = NULL;
	struct lines_reader rd;
	char *line = NULL;
	size_t len, cap = 0;
	unsigned long lineno = 0;
	int seen_header = 0, got;

	*out = NULL;
	if (lines_open(&rd, path, LINES_MAX_WORKLOAD_FILE, err, errlen) != 0)
		return -1;
	t = calloc(1, sizeof *t);
	if (!t)
		goto oom;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		lineno = rd.lineno;
		char *s = txt_trim(line);
		if (txt_line_is_blank_or_comment(s))
			continue;
		if (!seen_header) {
			if (strcmp(s, TRC_TRACE_HEADER) != 0) {
				snprintf(err, errlen, "%s:%lu: expected header '" TRC_TRACE_HEADER "', got '%.60s'",
				         path, lineno, s);
				goto fail;
			}
			seen_header = 1;
			continue;
		}
		char *f[4];
		size_t nf = txt_split(s, ',', f, 4);
		if (nf != 3) {
			snprintf(err, errlen, "%s:%lu: expected 3 fields (arrival_s,input_len,output_len), got %zu",
			         path, lineno, nf);
			goto fail;
		}
		double arrival_s;
		if (txt_parse_double(f[0], &arrival_s) != 0 || arrival_s < 0 || arrival_s > TRC_MAX_SPAN_S) {
			snprintf(err, errlen, "%s:%lu: arrival_s must be a number from 0 to %g, got '%.40s'",
			         path, lineno, TRC_MAX_SPAN_S, f[0]);
			goto fail;
		}
		if (t->n > 0 && arrival_s < t->arrival_s[t->n - 1]) {
			char now_text[32], prev_text[32];
			txt_format_double(now_text, sizeof now_text, arrival_s);
			txt_format_double(prev_text, sizeof prev_text, t->arrival_s[t->n - 1]);
			snprintf(err, errlen, "%s:%lu: arrival_s %s is earlier than the previous row's %s",
			         path, lineno, now_text, prev_text);
			goto fail;
		}
		uint32_t in, outl;
		if (trc_trace_length(path, lineno, "input_len", f[1], &in, err, errlen) != 0 ||
		    trc_trace_length(path, lineno, "output_len", f[2], &outl, err, errlen) != 0)
			goto fail;
		if (trc_trace_grow(t, &cap) != 0)
			goto oom;
		t->arrival_s[t->n] = arrival_s;
		t->input_len[t->n] = in;
		t->output_len[t->n] = outl;
		t->n++;
	}
	if (got < 0)
		goto fail;
	if (!seen_header) {
		snprintf(err, errlen, "%s: empty trace: expected header '" TRC_TRACE_HEADER "'", path);
		goto fail;
	}
	if (t->n == 0) {
		snprintf(err, errlen, "%s: trace has a header but no requests", path);
		goto fail;
	}
	lines_close(&rd);
	*out = t;
	return 0;
oom:
	snprintf(err, errlen, "%s: out of memory after %lu lines", path, lineno);
fail:
	lines_close(&rd);
	trc_trace_free(t);
	return -1;
}

void trc_trace_free(struct trc_trace *t)
{
	if (!t)
		return;
	free(t->arrival_s);
	free(t->input_len);
	free(t->output_len);
	free(t);
}
