/* kernels/cpu_select.c: reads the CPU's flags and picks the OpenBLAS kernel
 * set (see cpu_select.h for why this is needed). */
#include "cpu_select.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether the space-separated list has word as one of its words. */
static int calsel_has_word(const char *list, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = list; (p = strstr(p, word)) != NULL; p += len) {
		int starts = p == list || p[-1] == ' ' || p[-1] == '\t';
		int ends = p[len] == '\0' || p[len] == ' ' || p[len] == '\t' || p[len] == '\n';

		if (starts && ends)
			return 1;
	}
	return 0;
}

/* The value after "key<blanks>:" at the start of line, or NULL. */
static const char *calsel_value(const char *line, const char *key)
{
	size_t len = strlen(key);
	const char *p;

	if (strncmp(line, key, len) != 0)
		return NULL;
	p = line + len;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != ':')
		return NULL;
	p++;
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

void calsel_parse_cpuinfo(const char *text, struct calsel_cpu *out)
{
	const char *line = text;
	int have_flags = 0;

	memset(out, 0, sizeof *out);
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[8192];
		const char *v;

		if (len >= sizeof buf)
			len = sizeof buf - 1;
		memcpy(buf, line, len);
		buf[len] = '\0';
		if (calsel_value(buf, "processor"))
			out->online_cpus++;
		else if ((v = calsel_value(buf, "model name")) && !out->model_name[0])
			snprintf(out->model_name, sizeof out->model_name, "%s", v);
		else if ((v = calsel_value(buf, "cpu MHz")) && out->mhz == 0)
			out->mhz = strtod(v, NULL);
		else if ((v = calsel_value(buf, "flags")) && !have_flags) {
			have_flags = 1;
			out->avx = calsel_has_word(v, "avx");
			out->avx2 = calsel_has_word(v, "avx2");
			out->fma = calsel_has_word(v, "fma");
			out->avx512f = calsel_has_word(v, "avx512f");
			out->avx512cd = calsel_has_word(v, "avx512cd");
			out->avx512bw = calsel_has_word(v, "avx512bw");
			out->avx512dq = calsel_has_word(v, "avx512dq");
			out->avx512vl = calsel_has_word(v, "avx512vl");
		}
		line = end ? end + 1 : NULL;
	}
}

#define CALSEL_MAX_CPUINFO (16 << 20)

int calsel_read_cpuinfo(const char *path, struct calsel_cpu *out, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t cap = 0, used = 0;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (!f) {
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	/* /proc files report size 0: read until EOF */
	for (;;) {
		if (cap - used < 4096) {
			char *grown = realloc(text, cap + 65536);

			if (!grown) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			text = grown;
			cap += 65536;
		}
		size_t got = fread(text + used, 1, cap - used - 1, f);
		used += got;
		if (got == 0)
			break;
		/* a 1,024-CPU machine's cpuinfo is about 1.5 MB */
		if (used > CALSEL_MAX_CPUINFO) {
			snprintf(err, errlen, "%s: more than %d MiB; not a cpuinfo file", path, CALSEL_MAX_CPUINFO >> 20);
			goto out;
		}
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error: %s", path, strerror(errno));
		goto out;
	}
	text[used] = '\0';
	calsel_parse_cpuinfo(text, out);
	rc = 0;
out:
	free(text);
	fclose(f);
	return rc;
}

const char *calsel_pick_coretype(const struct calsel_cpu *cpu, char *why, size_t whylen)
{
	if (cpu->avx512f && cpu->avx512cd && cpu->avx512bw && cpu->avx512dq && cpu->avx512vl) {
		snprintf(why, whylen, "flags avx512f avx512cd avx512bw avx512dq avx512vl");
		return "SkylakeX";
	}
	if (cpu->avx2 && cpu->fma) {
		snprintf(why, whylen, "flags avx2 fma (no full AVX-512)");
		return "Haswell";
	}
	if (cpu->avx) {
		snprintf(why, whylen, "flag avx (no avx2)");
		return "Sandybridge";
	}
	snprintf(why, whylen, "no avx flag: the library's own choice");
	return NULL;
}
