/* models/parse_util.c: the model parser's tokens, names and bounded numbers (parse.h). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "parse.h"
#include "../util/lines.h"
#include "../util/text.h"

__attribute__((format(printf, 2, 3)))
int mdl_parse_fail(struct mdl_parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lines_vfail(p->err, p->errlen, p->path, p->line, fmt, ap);
	va_end(ap);
	return -1;
}

static int mdl_is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* Returns the next whitespace-delimited token of *cur (NUL-terminated in
 * place) and advances *cur past it, or NULL at end of line. */
char *mdl_next_token(char **cur)
{
	char *s = *cur;
	while (*s && mdl_is_space(*s))
		s++;
	if (!*s) {
		*cur = s;
		return NULL;
	}
	char *tok = s;
	while (*s && !mdl_is_space(*s))
		s++;
	if (*s)
		*s++ = '\0';
	*cur = s;
	return tok;
}

int mdl_name_valid(const char *s)
{
	size_t len = strlen(s);
	if (len == 0 || len >= MDL_NAME_MAX)
		return 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!isalnum(c) && c != '_' && c != '.' && c != '-')
			return 0;
	}
	return 1;
}

/* Strict positive decimal (util/text.h refuses "+5", " 5" and "-5"). */
int mdl_parse_positive(const char *s, uint64_t *out)
{
	uint64_t v;
	if (txt_parse_uint(s, UINT64_MAX, &v) != 0 || v == 0)
		return -1;
	*out = v;
	return 0;
}

int mdl_mul_capped(uint64_t a, uint64_t b, uint64_t cap, uint64_t *out)
{
	if (b != 0 && a > cap / b)
		return -1;
	*out = a * b;
	return *out <= cap ? 0 : -1;
}

/* Whether M * K * N * COUNT * STEPS stays within MDL_MAX_MACS. */
int mdl_macs_capped(const uint64_t dims[5])
{
	uint64_t macs = 1;
	for (int i = 0; i < 5; i++)
		if (mdl_mul_capped(macs, dims[i], MDL_MAX_MACS, &macs) != 0)
			return 0;
	return 1;
}
