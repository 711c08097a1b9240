/* util/json.c: see json.h. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

void json_write_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

int json_number_after(const char *json, const char *obj, const char *key, int k, double *out)
{
	char pat[128];
	const char *p = json, *end = NULL;
	if (obj) {
		snprintf(pat, sizeof pat, "\"%s\":{", obj);
		if (!(p = strstr(json, pat)))
			return -1;
		p += strlen(pat);
		end = strchr(p, '}');
	}
	snprintf(pat, sizeof pat, "\"%s\":", key);
	if (!(p = strstr(p, pat)) || (end && p > end))
		return -1;
	p += strlen(pat);
	if (k >= 0) {
		if (*p++ != '[')
			return -1;
		for (int j = 0; j < k; j++)
			if (!(p = strchr(p, ',')) || !*++p)
				return -1;
	}
	char *stop;
	*out = strtod(p, &stop);
	return stop == p ? -1 : 0;
}
