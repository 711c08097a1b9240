/* util/text.c: strict field parsers for the traces/ readers and tools
 * (see parse.h for why they refuse what strtod and strtoul would accept). */
#include "lines.h"
#include "text.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int txt_is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

char *txt_trim(char *s)
{
	while (txt_is_blank(*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && txt_is_blank(s[n - 1]))
		s[--n] = '\0';
	return s;
}

int txt_line_is_blank_or_comment(const char *trimmed)
{
	return trimmed[0] == '\0' || trimmed[0] == '#';
}

int txt_setting(char *line, char **key, char **value)
{
	char *hash = strchr(line, '#');
	if (hash)
		*hash = '\0';
	char *s = txt_trim(line), *eq = strchr(s, '=');
	*key = s;
	*value = NULL;
	if (*s == '\0')
		return 0;
	if (!eq)
		return -1;
	*eq = '\0';
	*key = txt_trim(s);
	*value = txt_trim(eq + 1);
	return 1;
}

size_t txt_split(char *s, char sep, char **fields, size_t max)
{
	size_t n = 0;
	for (;;) {
		char *end = strchr(s, sep);
		if (end)
			*end = '\0';
		if (n < max)
			fields[n] = txt_trim(s);
		n++;
		if (!end)
			return n;
		s = end + 1;
	}
}

int txt_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	if (*s == '\0')
		return -1;
	uint64_t v = 0;
	for (const char *p = s; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		uint64_t digit = (uint64_t)(*p - '0');
		if (v > max / 10)
			return -1;
		v *= 10;
		if (digit > max - v)
			return -1;
		v += digit;
	}
	*out = v;
	return 0;
}

int txt_parse_double(const char *s, double *out)
{
	/* strtod would also take leading blanks, "inf", "nan" and hex floats;
	 * a number in our files starts with a sign, a digit or a point. */
	const char *p = (*s == '-' || *s == '+') ? s + 1 : s;
	if (!((*p >= '0' && *p <= '9') || *p == '.'))
		return -1;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
		return -1;
	char *end = NULL;
	double v = strtod(s, &end);
	if (end == s || *end != '\0' || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

void txt_format_double(char *buf, size_t buflen, double x)
{
	for (int digits = 15; digits <= 17; digits++) {
		snprintf(buf, buflen, "%.*g", digits, x);
		if (strtod(buf, NULL) == x)
			return;
	}
}

int txt_band_decimals(double band)
{
	if (!(band > 0) || !isfinite(band))
		return 6;
	int d = -(int)floor(log10(band));
	return d < 0 ? 0 : d > 9 ? 9 : d;
}

void txt_format_sig(char *buf, size_t buflen, double x, int sig)
{
	int d = 0;
	if (x != 0 && isfinite(x)) {
		d = sig - 1 - (int)floor(log10(fabs(x)));
		d = d < 0 ? 0 : d > 12 ? 12 : d;
	}
	snprintf(buf, buflen, "%.*f", d, x);
}

int txt_sniff_lines(const char *path, int (*judge)(char *line, unsigned long lineno, void *ctx), void *ctx,
                    char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len;
	int rc = 0, got;

	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		int v = judge(line, rd.lineno, ctx);
		if (v >= 0) {
			rc = v;
			break;
		}
	}
	if (got < 0)
		rc = -1;
	lines_close(&rd);
	return rc;
}

int txt_long_option_whole(const char *tok, const char *name)
{
	size_t n = strcspn(tok, "=");
	return strncmp(tok, "--", 2) == 0 && n - 2 == strlen(name) && strncmp(tok + 2, name, n - 2) == 0;
}

int txt_getopt_whole(int argc, char **argv, const char *shortopts, const struct option *longopts,
                     const char **abbreviated)
{
	int longindex = -1;
	int opt = getopt_long(argc, argv, shortopts, longopts, &longindex);
	*abbreviated = NULL;
	if (opt == -1 || longindex < 0)
		return opt;
	const char *tok = argv[optind - 1];
	if (optarg && optarg == tok && optind >= 2)   /* "--name value": the name is the argument before */
		tok = argv[optind - 2];
	if (!txt_long_option_whole(tok, longopts[longindex].name)) {
		*abbreviated = tok;
		return '?';
	}
	return opt;
}

void txt_shell_word(FILE *f, const char *s)
{
	if (*s && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_@%+=:,./-") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}
