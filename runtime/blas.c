/* runtime/blas.c: loads OpenBLAS with the kernel set calib would pick (see
 * blas.h for why at run time, and why no re-execution is needed). */
#include "blas.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../kernels/cpu_select.h"

/* Sonames tried in order: Debian's alternatives link, then the dev link. */
static const char *const blas_sonames[] = { "libopenblas.so.0", "libopenblas.so" };

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static struct rt_blas blas_table;
static int blas_ok;
static char blas_err[320];

static void blas_load(void)
{
	const char *env = getenv("OPENBLAS_CORETYPE");
	const char *want = NULL;
	char pick_why[160] = "";

	if (env && *env) {
		want = env;
		snprintf(blas_table.why, sizeof blas_table.why, "OPENBLAS_CORETYPE=%s from the environment", env);
	} else {
		struct calsel_cpu cpu;
		char err[120];
		if (calsel_read_cpuinfo("/proc/cpuinfo", &cpu, err, sizeof err) == 0)
			want = calsel_pick_coretype(&cpu, pick_why, sizeof pick_why);
		else
			snprintf(pick_why, sizeof pick_why, "%s", err);
		if (want && setenv("OPENBLAS_CORETYPE", want, 1) != 0) {
			snprintf(blas_err, sizeof blas_err, "cannot set OPENBLAS_CORETYPE in the environment");
			return;
		}
		snprintf(blas_table.why, sizeof blas_table.why, "%s from /proc/cpuinfo (%s)",
		         want ? want : "the library's own choice", pick_why);
	}
	/* the pthread build starts its thread pool at load unless told one thread */
	if (!getenv("OPENBLAS_NUM_THREADS"))
		setenv("OPENBLAS_NUM_THREADS", "1", 1);

	void *h = NULL;
	for (size_t i = 0; i < sizeof blas_sonames / sizeof blas_sonames[0] && !h; i++) {
		h = dlopen(blas_sonames[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			snprintf(blas_table.library, sizeof blas_table.library, "%s", blas_sonames[i]);
	}
	if (!h) {
		snprintf(blas_err, sizeof blas_err, "cannot load OpenBLAS (libopenblas.so.0): %s; install libopenblas0",
		         dlerror());
		return;
	}
	void (*set_threads)(int) = (void (*)(int))dlsym(h, "openblas_set_num_threads");
	char *(*corename)(void) = (char *(*)(void))dlsym(h, "openblas_get_corename");
	char *(*config)(void) = (char *(*)(void))dlsym(h, "openblas_get_config");
	*(void **)&blas_table.sgemm = dlsym(h, "cblas_sgemm");
	*(void **)&blas_table.sgemv = dlsym(h, "cblas_sgemv");
	if (!set_threads || !corename || !config || !blas_table.sgemm || !blas_table.sgemv) {
		snprintf(blas_err, sizeof blas_err, "%s lacks cblas_sgemm or the openblas_* functions: not OpenBLAS",
		         blas_table.library);
		return;   /* the handle stays open: a process loads at most one */
	}
	set_threads(1);
	snprintf(blas_table.corename, sizeof blas_table.corename, "%s", corename());
	snprintf(blas_table.config, sizeof blas_table.config, "%s", config());
	if (want && strcasecmp(blas_table.corename, want) != 0) {
		snprintf(blas_err, sizeof blas_err,
		         "OpenBLAS ignored OPENBLAS_CORETYPE=%s and runs its '%s' kernels: not a core name it knows "
		         "(e.g. SkylakeX, Haswell, Sandybridge)", want, blas_table.corename);
		return;
	}
	blas_ok = 1;
}

const struct rt_blas *rt_blas_get(char *err, size_t errlen)
{
	pthread_once(&blas_once, blas_load);
	if (!blas_ok) {
		snprintf(err, errlen, "%s", blas_err);
		return NULL;
	}
	return &blas_table;
}
