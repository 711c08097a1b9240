/* runtime/cpu_contention.c: schedstat and PSI counters (cpu_contention.h). */
#include <stdio.h>
#include <string.h>
#include "cpu_contention.h"
#include "../util/lines.h"
#include "../util/text.h"

/* Both files are one or two short lines; a kilobyte is far more than either holds. */
#define CPU_STAT_FILE_MAX 4096

/* The first line of path whose first word is want (NULL: the first line), trimmed, into buf. */
static int cpu_stat_line(const char *path, const char *want, char *buf, size_t len, char *err, size_t errlen)
{
	struct lines_reader r;
	char *line;
	size_t n;
	int rc;
	if (lines_open(&r, path, CPU_STAT_FILE_MAX, err, errlen) != 0)
		return -1;
	while ((rc = lines_next(&r, &line, &n, err, errlen)) == 1) {
		char *t = txt_trim(line);
		size_t w = want ? strlen(want) : 0;
		if (want && (strncmp(t, want, w) != 0 || (t[w] != ' ' && t[w] != '\t')))
			continue;
		if (strlen(t) >= len)
			break;
		strcpy(buf, t);
		lines_close(&r);
		return 0;
	}
	if (rc == 0)
		lines_fail(err, errlen, path, 0, want ? "no '%s' line" : "empty%s", want ? want : "");
	else if (rc == 1)
		lines_fail(err, errlen, path, r.lineno, "line too long");
	lines_close(&r);
	return -1;
}

int cpu_schedstat_read(const char *path, struct cpu_schedstat *out, char *err, size_t errlen)
{
	char buf[256], *f[4];
	if (cpu_stat_line(path, NULL, buf, sizeof buf, err, errlen) != 0)
		return -1;
	/* fields are separated by single blanks; a tab or a double blank would give an empty field */
	size_t nf = txt_split(buf, ' ', f, 4);
	struct cpu_schedstat s;
	if (nf != 3 || txt_parse_uint(f[0], UINT64_MAX, &s.cpu_ns) != 0 ||
	    txt_parse_uint(f[1], UINT64_MAX, &s.runq_wait_ns) != 0 || txt_parse_uint(f[2], UINT64_MAX, &s.timeslices) != 0)
		return lines_fail(err, errlen, path, 1, "expected three whole numbers (CPU ns, run-queue wait ns, "
		                  "timeslices)");
	*out = s;
	return 0;
}

int cpu_pressure_some_us(const char *path, uint64_t *total_us, char *err, size_t errlen)
{
	char buf[256], *f[8];
	if (cpu_stat_line(path, "some", buf, sizeof buf, err, errlen) != 0)
		return -1;
	size_t nf = txt_split(buf, ' ', f, 8);
	for (size_t i = 1; i < nf && i < 8; i++)
		if (strncmp(f[i], "total=", 6) == 0 && txt_parse_uint(f[i] + 6, UINT64_MAX, total_us) == 0)
			return 0;
	return lines_fail(err, errlen, path, 0, "its 'some' line has no total=MICROSECONDS");
}

int cpu_schedstat_self(struct cpu_schedstat *out)
{
	char err[256];
	return cpu_schedstat_read("/proc/thread-self/schedstat", out, err, sizeof err);
}

int cpu_pressure_self_us(uint64_t *total_us)
{
	char err[256];
	return cpu_pressure_some_us("/proc/pressure/cpu", total_us, err, sizeof err);
}
