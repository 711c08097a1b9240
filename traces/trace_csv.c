/* traces/trace_csv.c: loads a recorded or generated request trace
 * (DESIGN.md section 4: "arrival_s,input_len,output_len", one request a
 * row, row order = request id) for replay instead of generated arrivals,
 * or the Azure LLM inference trace's own format (section 3b:
 * "TIMESTAMP,ContextTokens,GeneratedTokens", arrivals relative to the
 * first timestamp, prompt tokens as the input length), or a table of
 * (prompt, output) pairs without arrivals ("input_len,output_len").
 * Every rejection names PATH:LINE and the field, because traces are often
 * hand-edited or produced by other people's scripts.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L   /* getline */
#endif
#include "workload.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRC_TRACE_HEADER "arrival_s,input_len,output_len"
#define TRC_PREFIX_HEADER TRC_TRACE_HEADER ",prefix_id,prefix_len"
#define TRC_SESSION_HEADER TRC_PREFIX_HEADER ",session_id"
/* a two-level prefix: a whole prompt that recurs (prefix_id) and its group's system prompt inside it (inner_id) */
#define TRC_INNER_HEADER TRC_PREFIX_HEADER ",inner_id,inner_len"
/* The Azure LLM inference trace 2023 (Splitwise; DESIGN.md section 3b):
 * wall-clock timestamps, prompt and output tokens, CRLF line ends. */
#define TRC_AZURE_HEADER "TIMESTAMP,ContextTokens,GeneratedTokens"
/* (prompt, output) pairs without arrival times (scripts/trace-lengths --pairs): lengths to draw from */
#define TRC_PAIRS_HEADER "input_len,output_len"

enum trc_format { TRC_FORMAT_SIMBATCH, TRC_FORMAT_AZURE, TRC_FORMAT_PAIRS };

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

/* Days from 1970-01-01 to the civil date y-m-d (proleptic Gregorian):
 * the era-based count (400-year eras of 146097 days, March-based years so
 * the leap day ends a year). */
static int64_t trc_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);                           /* [0, 399] */
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;       /* [0, 365] */
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;               /* [0, 146096] */
	return era * 146097 + (int64_t)doe - 719468;
}

/* n decimal digits at *s, advancing it; -1 if any is not a digit. */
static int64_t trc_digits(const char **s, int n)
{
	int64_t v = 0;
	for (int i = 0; i < n; i++, (*s)++) {
		if (**s < '0' || **s > '9')
			return -1;
		v = v * 10 + (**s - '0');
	}
	return v;
}

/* "YYYY-MM-DD HH:MM:SS" with an optional fraction of 1 to 9 digits, as
 * integer nanoseconds since 1970-01-01 (the zone does not matter: arrivals
 * are taken relative to the first row). 0, or -1 if malformed. */
static int trc_azure_time_ns(const char *s, int64_t *ns)
{
	static const unsigned mdays[12] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int64_t y = trc_digits(&s, 4);
	int64_t mo = *s++ == '-' ? trc_digits(&s, 2) : -1;
	int64_t d = *s++ == '-' ? trc_digits(&s, 2) : -1;
	int64_t h = *s++ == ' ' ? trc_digits(&s, 2) : -1;
	int64_t mi = *s++ == ':' ? trc_digits(&s, 2) : -1;
	int64_t se = *s++ == ':' ? trc_digits(&s, 2) : -1;
	/* 1970 to 2199: any two such times are less than the int64 nanoseconds' 292 years apart */
	if (y < 1970 || y > 2199 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    se < 0 || se > 59)
		return -1;
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (mo == 2 && d == 29 && !leap)
		return -1;
	int64_t frac = 0;
	if (*s == '.') {
		s++;
		int n = 0;
		for (; *s >= '0' && *s <= '9'; s++, n++) {
			if (n == 9)
				return -1;
			frac = frac * 10 + (*s - '0');
		}
		if (n == 0)
			return -1;
		for (; n < 9; n++)
			frac *= 10;
	}
	if (*s != '\0')
		return -1;
	*ns = ((trc_days_from_civil(y, (unsigned)mo, (unsigned)d) * 24 + h) * 60 + mi) * 60 * 1000000000LL +
	      se * 1000000000LL + frac;
	return 0;
}

/* One Azure row: TIMESTAMP,ContextTokens,GeneratedTokens. The arrival is
 * the time since the first row's timestamp (*first_ns, set by row 1). */
static int trc_azure_row(const char *path, unsigned long lineno, char **f, size_t n, int64_t *first_ns,
                         double *arrival_s, uint32_t *in, uint32_t *outl, char *err, size_t errlen)
{
	if (n == 0 && trc_azure_time_ns(f[0], first_ns) != 0)
		goto bad_time;
	int64_t t_ns;
	if (trc_azure_time_ns(f[0], &t_ns) != 0)
		goto bad_time;
	*arrival_s = (double)(t_ns - *first_ns) * 1e-9;     /* negative: refused as earlier than the row before */
	if (*arrival_s > TRC_MAX_SPAN_S) {
		snprintf(err, errlen, "%s:%lu: TIMESTAMP %.40s is more than %g s after the first row's", path, lineno, f[0],
		         TRC_MAX_SPAN_S);
		return -1;
	}
	static const char *names[2] = { "ContextTokens", "GeneratedTokens" };
	uint32_t *lens[2] = { in, outl };
	for (int i = 0; i < 2; i++) {
		uint64_t v;
		if (txt_parse_uint(f[1 + i], TRC_LENGTH_LIMIT, &v) != 0 || v == 0) {
			snprintf(err, errlen, "%s:%lu: %s must be an integer in [1, %u], got '%.40s'", path, lineno, names[i],
			         TRC_LENGTH_LIMIT, f[1 + i]);
			return -1;
		}
		*lens[i] = (uint32_t)v;
	}
	return 0;
bad_time:
	snprintf(err, errlen, "%s:%lu: TIMESTAMP must read YYYY-MM-DD HH:MM:SS.fffffff (a real date from 1970 to "
	         "2199, up to 9 fractional digits), got '%.40s'", path, lineno, f[0]);
	return -1;
}

/* One simbatch row: arrival_s,input_len,output_len. */
static int trc_simbatch_row(const char *path, unsigned long lineno, char **f, double *arrival_s, uint32_t *in,
                            uint32_t *outl, char *err, size_t errlen)
{
	if (txt_parse_double(f[0], arrival_s) != 0 || *arrival_s < 0 || *arrival_s > TRC_MAX_SPAN_S) {
		snprintf(err, errlen, "%s:%lu: arrival_s must be a number from 0 to %g, got '%.40s'",
		         path, lineno, TRC_MAX_SPAN_S, f[0]);
		return -1;
	}
	if (trc_trace_length(path, lineno, "input_len", f[1], in, err, errlen) != 0 ||
	    trc_trace_length(path, lineno, "output_len", f[2], outl, err, errlen) != 0)
		return -1;
	return 0;
}

/* A row's inner prefix: inner_id,inner_len (fields 5 and 6), the first inner_len of its prefix_len
 * prefix tokens. */
static int trc_inner_row(const char *path, unsigned long lineno, char **f, uint32_t prefix_len, uint64_t *id,
                         uint32_t *len, char *err, size_t errlen)
{
	if (txt_parse_uint(f[5], UINT64_MAX, id) != 0) {
		snprintf(err, errlen, "%s:%lu: inner_id must be a non-negative integer (0: none), got '%.40s'", path,
		         lineno, f[5]);
		return -1;
	}
	if (trc_trace_length(path, lineno, "inner_len", f[6], len, err, errlen) != 0)
		return -1;
	if (*len > prefix_len || (*len > 0) != (*id > 0)) {
		snprintf(err, errlen, "%s:%lu: inner_len %u must be at most prefix_len %u (the inner prefix lies inside the "
		         "outer), and given exactly when inner_id is (0 and 0: none)", path, lineno, *len, prefix_len);
		return -1;
	}
	return 0;
}

/* A two-level trace's rows by outer prefix, to check that one prefix has one inner prefix. */
struct trc_inner_seen {
	uint64_t prefix_id, inner_id;
	uint32_t inner_len;
	unsigned long lineno;
};

static int trc_inner_seen_cmp(const void *pa, const void *pb)
{
	const struct trc_inner_seen *a = pa, *b = pb;
	if (a->prefix_id != b->prefix_id)
		return a->prefix_id < b->prefix_id ? -1 : 1;
	return (a->lineno > b->lineno) - (a->lineno < b->lineno);
}

/* The rows of one prefix_id are one token run, so they give one inner prefix: the first row that gives
 * another is refused (its blocks past the inner prefix would be keyed apart from the others'). */
static int trc_inner_consistent(const char *path, struct trc_inner_seen *seen, size_t n, char *err, size_t errlen)
{
	qsort(seen, n, sizeof *seen, trc_inner_seen_cmp);
	for (size_t i = 1; i < n; i++) {
		const struct trc_inner_seen *a = &seen[i - 1], *b = &seen[i];
		if (a->prefix_id && a->prefix_id == b->prefix_id && (a->inner_id != b->inner_id ||
		                                                     a->inner_len != b->inner_len)) {
			snprintf(err, errlen, "%s:%lu: inner_id,inner_len %llu,%u for prefix_id %llu, which line %lu gave "
			         "%llu,%u: one prefix (one prompt) has one inner prefix inside it", path, b->lineno,
			         (unsigned long long)b->inner_id, b->inner_len, (unsigned long long)b->prefix_id, a->lineno,
			         (unsigned long long)a->inner_id, a->inner_len);
			return -1;
		}
	}
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
	enum trc_format format = TRC_FORMAT_SIMBATCH;
	int64_t first_ns = 0;
	char prev_stamp[48] = "";                 /* the previous row's time field, for the message */
	struct trc_inner_seen *seen = NULL;       /* a two-level trace's rows, checked at the end */
	size_t seen_cap = 0;

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
			if (s[0] == '{') {            /* JSON lines: a Mooncake trace */
				lines_close(&rd);
				trc_trace_free(t);
				return trc_mooncake_load(path, out, err, errlen);
			}
			if (strcmp(s, TRC_AZURE_HEADER) == 0) {
				format = TRC_FORMAT_AZURE;
			} else if (strcmp(s, TRC_PAIRS_HEADER) == 0) {
				format = TRC_FORMAT_PAIRS;
				t->lengths_only = 1;
			} else if (strcmp(s, TRC_PREFIX_HEADER) == 0 || strcmp(s, TRC_SESSION_HEADER) == 0 ||
			           strcmp(s, TRC_INNER_HEADER) == 0) {
				/* the prefix (and session, or inner prefix) columns: their arrays grow with the others (a
				 * first, empty allocation here) */
				t->prefix_id = malloc(sizeof *t->prefix_id);
				t->prefix_len = malloc(sizeof *t->prefix_len);
				if (strcmp(s, TRC_SESSION_HEADER) == 0 && !(t->session_id = malloc(sizeof *t->session_id)))
					goto oom;
				if (strcmp(s, TRC_INNER_HEADER) == 0 && (!(t->inner_id = malloc(sizeof *t->inner_id)) ||
				                                         !(t->inner_len = malloc(sizeof *t->inner_len))))
					goto oom;
				if (!t->prefix_id || !t->prefix_len)
					goto oom;
			} else if (strcmp(s, TRC_TRACE_HEADER) != 0) {
				snprintf(err, errlen, "%s:%lu: expected header '" TRC_TRACE_HEADER "' (or the Azure LLM "
				         "trace's '" TRC_AZURE_HEADER "', or pairs' '" TRC_PAIRS_HEADER "'), got '%.60s'", path,
				         lineno, s);
				goto fail;
			}
			seen_header = 1;
			continue;
		}
		char *f[8];
		size_t nf = txt_split(s, ',', f, 8), want = t->inner_id ? 7 : t->session_id ? 6 : t->prefix_id ? 5
		                                            : format == TRC_FORMAT_PAIRS ? 2 : 3;
		if (nf != want) {
			snprintf(err, errlen, "%s:%lu: expected %zu fields (%s), got %zu", path, lineno, want,
			         format == TRC_FORMAT_AZURE ? TRC_AZURE_HEADER : format == TRC_FORMAT_PAIRS ? TRC_PAIRS_HEADER
			         : t->inner_id ? TRC_INNER_HEADER
			         : t->session_id ? TRC_SESSION_HEADER : t->prefix_id ? TRC_PREFIX_HEADER : TRC_TRACE_HEADER, nf);
			goto fail;
		}
		double arrival_s = 0;            /* pairs: none */
		uint32_t in, outl;
		if (format == TRC_FORMAT_AZURE
		    ? trc_azure_row(path, lineno, f, t->n, &first_ns, &arrival_s, &in, &outl, err, errlen) != 0
		    : format == TRC_FORMAT_PAIRS
		    ? trc_trace_length(path, lineno, "input_len", f[0], &in, err, errlen) != 0 ||
		      trc_trace_length(path, lineno, "output_len", f[1], &outl, err, errlen) != 0
		    : trc_simbatch_row(path, lineno, f, &arrival_s, &in, &outl, err, errlen) != 0)
			goto fail;
		if (t->n > 0 && arrival_s < t->arrival_s[t->n - 1]) {
			char now_text[32], prev_text[32];
			txt_format_double(now_text, sizeof now_text, arrival_s);
			txt_format_double(prev_text, sizeof prev_text, t->arrival_s[t->n - 1]);
			if (format == TRC_FORMAT_AZURE)
				snprintf(err, errlen, "%s:%lu: TIMESTAMP %.40s is earlier than the previous row's %s",
				         path, lineno, f[0], prev_stamp);
			else
				snprintf(err, errlen, "%s:%lu: arrival_s %s is earlier than the previous row's %s",
				         path, lineno, now_text, prev_text);
			goto fail;
		}
		snprintf(prev_stamp, sizeof prev_stamp, "%.40s", f[0]);
		if (trc_trace_grow(t, &cap) != 0)
			goto oom;
		t->arrival_s[t->n] = arrival_s;
		t->input_len[t->n] = in;
		t->output_len[t->n] = outl;
		if (t->prefix_id) {
			uint64_t pid;
			uint32_t plen;
			if (txt_parse_uint(f[3], UINT64_MAX, &pid) != 0) {
				snprintf(err, errlen, "%s:%lu: prefix_id must be a non-negative integer (0: none), got '%.40s'", path,
				         lineno, f[3]);
				goto fail;
			}
			if (trc_trace_length(path, lineno, "prefix_len", f[4], &plen, err, errlen) != 0)
				goto fail;
			if (plen > in || (plen > 0) != (pid > 0)) {
				snprintf(err, errlen, "%s:%lu: prefix_len %u must be at most input_len %u, and given exactly when "
				         "prefix_id is (0 and 0: no shared prefix)", path, lineno, plen, in);
				goto fail;
			}
			t->prefix_id[t->n] = pid;
			t->prefix_len[t->n] = plen;
		}
		if (t->inner_id) {
			if (trc_inner_row(path, lineno, f, t->prefix_len[t->n], &t->inner_id[t->n], &t->inner_len[t->n], err,
			                  errlen) != 0)
				goto fail;
			if (GROW(seen, seen_cap, t->n + 1, 1024) != 0)
				goto oom;
			seen[t->n] = (struct trc_inner_seen){ .prefix_id = t->prefix_id[t->n], .inner_id = t->inner_id[t->n],
			                                      .inner_len = t->inner_len[t->n], .lineno = lineno };
		}
		if (t->session_id && txt_parse_uint(f[5], UINT64_MAX, &t->session_id[t->n]) != 0) {
			snprintf(err, errlen, "%s:%lu: session_id must be a non-negative integer (0: none), got '%.40s'", path,
			         lineno, f[5]);
			goto fail;
		}
		t->n++;
	}
	if (got < 0)
		goto fail;
	if (!seen_header) {
		snprintf(err, errlen, "%s: empty trace: expected header '" TRC_TRACE_HEADER "' (or '" TRC_AZURE_HEADER "')",
		         path);
		goto fail;
	}
	if (t->n == 0) {
		snprintf(err, errlen, "%s: trace has a header but no requests", path);
		goto fail;
	}
	if (seen && trc_inner_consistent(path, seen, t->n, err, errlen) != 0)
		goto fail;
	free(seen);
	lines_close(&rd);
	*out = t;
	return 0;
oom:
	err_memory(err, errlen, "%s: out of memory after %lu lines", path, lineno);
fail:
	free(seen);
	lines_close(&rd);
	trc_trace_free(t);
	return -1;
}

