/* tests/test_cpu_contention.c: the schedstat and PSI parsers (runtime/cpu_contention.h) on files
 * of the test's own in a temporary directory, never the machine's /proc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "../runtime/cpu_contention.h"

static char dir[64];

static const char *put(const char *name, const char *text)
{
	static char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
	return path;
}

static void test_schedstat(void **state)
{
	(void)state;
	struct cpu_schedstat s;
	char err[256];
	/* a line as Linux writes it: CPU ns, run-queue wait ns, timeslices */
	assert_int_equal(cpu_schedstat_read(put("ok", "867319 10760851 3\n"), &s, err, sizeof err), 0);
	assert_int_equal(s.cpu_ns, 867319);
	assert_int_equal(s.runq_wait_ns, 10760851);
	assert_int_equal(s.timeslices, 3);
	assert_int_equal(cpu_schedstat_read(put("max", "18446744073709551615 0 0"), &s, err, sizeof err), 0);
	assert_true(s.cpu_ns == UINT64_MAX && s.runq_wait_ns == 0);
	static const char *const bad[] = { "", "1 2\n", "1 2 3 4\n", "1 -2 3\n", "1 2.5 3\n", "a b c\n",
	                                   "18446744073709551616 0 0\n" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		s = (struct cpu_schedstat){ 7, 7, 7 };
		err[0] = '\0';
		const char *path = put("bad", bad[i]);
		assert_int_equal(cpu_schedstat_read(path, &s, err, sizeof err), -1);
		assert_non_null(strstr(err, path));
		assert_true(s.cpu_ns == 7 && s.runq_wait_ns == 7);        /* untouched */
	}
	char missing[128];
	snprintf(missing, sizeof missing, "%s/none", dir);
	assert_int_equal(cpu_schedstat_read(missing, &s, err, sizeof err), -1);
	assert_non_null(strstr(err, missing));
}

static void test_pressure(void **state)
{
	(void)state;
	uint64_t us = 0;
	char err[256];
	assert_int_equal(cpu_pressure_some_us(put("psi", "some avg10=96.19 avg60=93.95 avg300=70.93 total=4398825906\n"
	                                              "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"),
	                                      &us, err, sizeof err), 0);
	assert_int_equal(us, 4398825906ULL);
	/* the "full" line first (its total is not the "some" one's) */
	assert_int_equal(cpu_pressure_some_us(put("psi2", "full avg10=0.00 total=5\nsome avg10=1.00 total=12\n"),
	                                      &us, err, sizeof err), 0);
	assert_int_equal(us, 12);
	static const char *const bad[] = { "", "full avg10=0.00 total=5\n", "some avg10=1.00\n", "some total=x\n",
	                                   "somewhat total=5\n" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		us = 99;
		assert_int_equal(cpu_pressure_some_us(put("psibad", bad[i]), &us, err, sizeof err), -1);
		assert_int_equal(us, 99);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "/tmp/simbatch-contention-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	static const char *const names[] = { "ok", "max", "bad", "psi", "psi2", "psibad" };
	char path[128];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
	return rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_schedstat),
		cmocka_unit_test(test_pressure),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
