/* sim/cli/search_results.c: a configuration search's results file (search_results.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "search_results.h"
#include "../../util/errkind.h"
#include "../../util/lines.h"
#include "../../util/text.h"

/* The most configurations a search has (search_spec.c) times the longest line search_results_format writes,
 * and the header: no file a search wrote is larger. */
#define SEARCH_RESULTS_MAX_LINE 4096
#define SEARCH_RESULTS_MAX_BYTES ((uint64_t)1000001 * SEARCH_RESULTS_MAX_LINE)

/* A CSV field: quoted (a key holds blanks, a value may hold commas), quotes doubled. */
static size_t search_csv_quoted(char *buf, size_t len, const char *s)
{
	size_t used = 0;
	if (used < len)
		buf[used++] = '"';
	for (; *s && used + 2 < len; s++) {
		if (*s == '"')
			buf[used++] = '"';
		buf[used++] = *s == '\n' ? ' ' : *s;
	}
	if (used < len)
		buf[used++] = '"';
	return used;
}

size_t search_results_format(char *buf, size_t len, const char *key, const struct study_search_row *w)
{
	size_t n = search_csv_quoted(buf, len, key);
	int k = snprintf(buf + n, len - n, ",%u,%.10g,%s,%.10g,%.10g,%.10g,%.10g,%.10g,", w->gpus, w->cost,
	                 search_status_name[w->status], w->capacity, w->lo, w->hi, w->band_lo, w->band_hi);
	if (k < 0 || (size_t)k + 3 >= len - n)
		return 0;
	n += (size_t)k;
	n += search_csv_quoted(buf + n, len - n - 1, w->reason);
	buf[n++] = '\n';
	return n;
}

/* Reads a quoted field at *p into out (at most len - 1 bytes kept); *p moves past it and its comma. 0, or -1. */
static int search_csv_read_quoted(const char **p, char *out, size_t len)
{
	const char *s = *p;
	size_t used = 0;
	if (*s++ != '"')
		return -1;
	for (;;) {
		if (!*s)
			return -1;
		if (*s == '"') {
			if (s[1] != '"')
				break;
			s++;
		}
		if (used + 1 < len)
			out[used++] = *s;
		s++;
	}
	out[used] = '\0';
	s++;
	if (*s == ',')
		s++;
	*p = s;
	return 0;
}

/* The next comma-ended field at *p into out: 0, or -1 (no comma, or longer than len - 1). */
static int search_csv_field(const char **p, char *out, size_t len)
{
	const char *comma = strchr(*p, ',');
	if (!comma || (size_t)(comma - *p) >= len)
		return -1;
	memcpy(out, *p, (size_t)(comma - *p));
	out[comma - *p] = '\0';
	*p = comma + 1;
	return 0;
}

/* A number of a row: finite and not negative, or with may_be_nan "nan" (none known). */
static int search_results_number(const char *s, int may_be_nan, double *v)
{
	if (may_be_nan && strcmp(s, "nan") == 0) {
		*v = NAN;
		return 0;
	}
	return txt_parse_double(s, v) == 0 && *v >= 0 ? 0 : -1;
}

/* One line (newline removed) into key and w: NULL, or what is wrong with it. */
static const char *search_results_parse(const char *line, char *key, size_t keylen, struct study_search_row *w, char *why,
                                        size_t whylen)
{
	static const char *const names[] = { "gpus", "cost_per_hour", "status", "capacity_rps", "bracket_lo_rps",
	                                     "bracket_hi_rps", "band_lo_rps", "band_hi_rps" };
	double *const numbers[] = { NULL, &w->cost, NULL, &w->capacity, &w->lo, &w->hi, &w->band_lo, &w->band_hi };
	const char *p = line;
	char field[64];
	uint64_t gpus = 0;
	memset(w, 0, sizeof *w);
	if (search_csv_read_quoted(&p, key, keylen) != 0 || !*key)
		return "not a line a search wrote (a quoted configuration key first)";
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		int bad = search_csv_field(&p, field, sizeof field) != 0;
		if (!bad && k == 0)
			bad = txt_parse_uint(field, UINT32_MAX, &gpus) != 0 || gpus == 0;
		else if (!bad && k == 2)
			bad = strcmp(field, "ok") == 0 ? (w->status = STUDY_SR_OK, 0)
			      : strcmp(field, "infeasible") == 0 ? (w->status = STUDY_SR_INFEASIBLE, 0) : 1;
		else if (!bad)
			bad = search_results_number(field, k >= 6, numbers[k]) != 0;
		if (bad) {
			snprintf(why, whylen, "%s: %s", names[k], k == 0 ? "expected a whole number of GPUs, at least 1"
			         : k == 2 ? "expected ok or infeasible" : k >= 6 ? "expected a number >= 0 or nan"
			         : "expected a finite number >= 0");
			return why;
		}
	}
	w->gpus = (uint32_t)gpus;
	if (search_csv_read_quoted(&p, w->reason, sizeof w->reason) != 0 || *p)
		return "reason: expected one quoted field, the last";
	if (w->status == STUDY_SR_OK && !(w->capacity > 0))
		return "capacity_rps: an ok configuration's capacity must be positive";
	if (w->lo > w->hi)
		return "bracket_lo_rps is above bracket_hi_rps";
	if (isnan(w->band_lo) != isnan(w->band_hi) || w->band_lo > w->band_hi)
		return "band_lo_rps and band_hi_rps: both nan, or low <= high";
	return NULL;
}

int search_results_read(const char *path, int own, search_results_fn fn, void *ctx, off_t *keep, char *err,
                        size_t errlen)
{
	off_t whole = 0;
	struct stat st;
	if (keep)
		*keep = 0;
	if (own && stat(path, &st) != 0 && errno == ENOENT)
		return 0;                            /* a new results file */
	if (own && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		const char *kind = S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device"
		                   : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISBLK(st.st_mode) ? "a block device"
		                   : "a socket";
		snprintf(err, errlen, "--out=%s: not a regular file (%s); the results file is read and written in "
		         "place: give a file's path", path, kind);
		return -1;
	}
	struct lines_reader rd;
	if (lines_open(&rd, path, SEARCH_RESULTS_MAX_BYTES, err, errlen) != 0)
		return -1;
	char *line, key[2048], why_buf[128];
	size_t len;
	int got = 0, rc = 0;
	while (rc == 0 && (got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		int whole_line = len > 0 && line[len - 1] == '\n';
		if (!whole_line && rd.lineno > 1)
			break;                           /* a last line a kill cut short: run again */
		if (whole_line)
			line[--len] = '\0';
		if (rd.lineno == 1) {
			if (!whole_line || strcmp(line, SEARCH_RESULTS_HEADER) != 0)
				rc = lines_fail(err, errlen, path, 1, "not a search results file (its header must be "
				                "%s)%s", SEARCH_RESULTS_HEADER, own ? "; give another --out" : "");
			whole += (off_t)len + 1;
			continue;
		}
		struct study_search_row w;
		const char *why = len >= SEARCH_RESULTS_MAX_LINE ? "longer than any line a search writes"
		                  : search_results_parse(line, key, sizeof key, &w, why_buf,
		                                                                         sizeof why_buf);
		if (why)
			rc = lines_fail(err, errlen, path, rd.lineno, "%s; not a line a search wrote%s", why,
			                own ? " (give another --out)" : "");
		else
			rc = fn(ctx, key, &w, err, errlen);
		whole += (off_t)len + 1;
	}
	if (rc == 0 && got < 0)
		rc = -1;
	lines_close(&rd);
	if (rc == 0 && keep)
		*keep = whole;
	return rc;
}
