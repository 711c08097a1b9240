/* runtime/backend.c: finds a backend by name. The CUDA backend is a shared
 * module (libsimbatch-live-cuda.so, built by meson only where nvcc and
 * cuBLAS are found) next to the simbatch binary, opened only when a live run
 * asks for --device=gpu: simbatch itself never links the CUDA libraries. */
#include "backend.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define RT_CUDA_MODULE "libsimbatch-live-cuda.so"
#define RT_CUDA_SYMBOL "rt_backend_cuda"

/* The module's path: $SIMBATCH_LIVE_CUDA, else beside the running program. */
static int backend_module_path(char *out, size_t len)
{
	const char *env = getenv("SIMBATCH_LIVE_CUDA");
	if (env && *env)
		return (size_t)snprintf(out, len, "%s", env) < len ? 0 : -1;
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	char *slash = strrchr(self, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	return (size_t)snprintf(out, len, "%s/%s", self, RT_CUDA_MODULE) < len ? 0 : -1;
}

const struct rt_backend_ops *rt_backend_find(const char *name, char *err, size_t errlen)
{
	if (strcmp(name, "cpu") == 0)
		return &rt_backend_cpu;
	if (strcmp(name, "gpu") != 0) {
		snprintf(err, errlen, "unknown live device '%s' (known: cpu, gpu)", name);
		return NULL;
	}
	char path[PATH_MAX + 64];
	if (backend_module_path(path, sizeof path) != 0) {
		snprintf(err, errlen, "cannot locate the CUDA backend module");
		return NULL;
	}
	if (access(path, R_OK) != 0) {
		snprintf(err, errlen, "--device=gpu: the CUDA backend was not built (%s missing: meson found no nvcc "
		         "and cuBLAS, or -Dcuda=disabled)", path);
		return NULL;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "--device=gpu: cannot load %s: %s", path, dlerror());
		return NULL;
	}
	const struct rt_backend_ops *ops = (const struct rt_backend_ops *)dlsym(h, RT_CUDA_SYMBOL);
	if (!ops || ops->abi != RT_BACKEND_ABI) {
		snprintf(err, errlen, "--device=gpu: %s is not a simbatch CUDA backend of this version", path);
		dlclose(h);
		return NULL;
	}
	return ops;   /* the module stays loaded for the process */
}
