/* sim/cli/cmd_calibrate.c: `simbatch calibrate --device=cpu|gpu [options]`:
 * runs the calibration microbenchmarks (DESIGN.md section 1, calib/) by
 * executing the calib-cpu or calib-cuda program that the build puts next to
 * simbatch, with the remaining options. They are separate programs so the
 * simulator itself never loads a BLAS or the CUDA runtime, and so OpenBLAS
 * can be loaded with the kernel set the calibration chose (calib-cpu sets
 * OPENBLAS_CORETYPE, which OpenBLAS reads only when it is loaded).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../../util/errkind.h"

#define CAL_MAX_ARGS 256

static void cal_usage(FILE *f)
{
	fprintf(f, "usage: simbatch calibrate --device=cpu|gpu [options]\n"
	           "  --device=cpu   OpenBLAS microbenchmarks on this CPU (calib-cpu; see --device=cpu --help)\n"
	           "  --device=gpu   cuBLAS microbenchmarks on the first CUDA GPU (calib-cuda, built when meson\n"
	           "                 found nvcc and cuBLAS; see --device=gpu --help)\n"
	           "  --device=gpu --ops   an LLM's operator profile on that GPU, the format of calib/tables/ops-*.csv\n"
	           "                 (calib-cuda-ops; see --device=gpu --ops --help)\n");
}

/* DIR/name where DIR holds the running simbatch. */
static int cal_helper_path(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	char *slash;

	if (n <= 0)
		return -1;
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return (size_t)snprintf(out, len, "%s/%s", self, name) < len ? 0 : -1;
}

int cmd_calibrate(int argc, char **argv)
{
	const char *device = NULL, *helper;
	char *args[CAL_MAX_ARGS + 2], path[PATH_MAX + 32];
	int nargs = 1, help = 0, ops = 0;

	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "--device=", 9) == 0) {
			if (device) {
				fprintf(stderr, "simbatch: --device given twice\n");
				return CLI_BAD_INPUT;
			}
			device = argv[i] + 9;
			continue;
		}
		if (strcmp(argv[i], "--ops") == 0) {   /* an operator profile: another program */
			ops = 1;
			continue;
		}
		help |= strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0;
		if (nargs == CAL_MAX_ARGS) {
			fprintf(stderr, "simbatch: calibrate: too many arguments\n");
			return CLI_BAD_INPUT;
		}
		args[nargs++] = argv[i];
	}
	args[nargs] = NULL;
	if (!device) {
		if (help) {
			cal_usage(stdout);
			return CLI_OK;
		}
		fprintf(stderr, "simbatch: calibrate needs --device=cpu or --device=gpu\n");
		return CLI_BAD_INPUT;
	}
	if (ops && strcmp(device, "gpu") != 0) {
		fprintf(stderr, "simbatch: --ops measures a GPU's operator profile: it needs --device=gpu\n");
		return CLI_BAD_INPUT;
	}
	if (strcmp(device, "cpu") == 0)
		helper = "calib-cpu";
	else if (strcmp(device, "gpu") == 0)
		helper = ops ? "calib-cuda-ops" : "calib-cuda";
	else {
		fprintf(stderr, "simbatch: --device=%s: expected cpu or gpu\n", device);
		return CLI_BAD_INPUT;
	}
	if (cal_helper_path(helper, path, sizeof path) != 0) {
		fprintf(stderr, "simbatch: cannot locate the simbatch program to find %s next to it\n", helper);
		return CLI_FAILED;
	}
	args[0] = path;
	fflush(NULL);
	execv(path, args);
	if (errno == ENOENT && strcmp(device, "gpu") == 0)
		fprintf(stderr, "simbatch: GPU calibration was not built: %s is missing (meson found no nvcc and cuBLAS; "
		        "-Dcuda=enabled makes that an error)\n", path);
	else
		fprintf(stderr, "simbatch: cannot run %s: %s\n", path, err_strerror(errno));
	return CLI_FAILED;
}
