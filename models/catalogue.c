/* models/catalogue.c: models by name: the models directory, the names it
 * holds, and loading one by name (or by path). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "parse.h"
#include "../util/grow.h"

/* The build points this at the source models/ directory; a standalone
 * compile falls back to a path relative to the working directory. */
#ifndef SB_MODELS_DIR
#define SB_MODELS_DIR "models"
#endif

struct mdl_known {
	char *buf;      /* not owned: the caller's message buffer tail */
	size_t cap;
	size_t len;
	int count;
};

static void mdl_known_add(const char *name, void *ctx)
{
	struct mdl_known *k = ctx;
	if (k->len >= k->cap)
		return;
	int n = snprintf(k->buf + k->len, k->cap - k->len, "%s%s", k->count ? ", " : "", name);
	if (n > 0)
		k->len += (size_t)n;
	k->count++;
}

int mdl_load(const char *name_or_path, struct mdl_model **out, char *err, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!name_or_path || !out) {
		snprintf(err, errlen, "mdl_load: NULL argument");
		return -1;
	}
	size_t len = strlen(name_or_path);
	if (strchr(name_or_path, '/') ||
	    (len >= MDL_EXT_LEN && strcmp(name_or_path + len - MDL_EXT_LEN, MDL_EXT) == 0))
		return mdl_load_file(name_or_path, out, err, errlen);

	const char *dir = mdl_dir();
	char path[sizeof ((struct mdl_model *)0)->path];
	int n = snprintf(path, sizeof path, "%s/%s%s", dir, name_or_path, MDL_EXT);
	struct stat st;
	if (!mdl_name_valid(name_or_path) || n < 0 || (size_t)n >= sizeof path ||
	    (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR))) {
		char known[256];
		struct mdl_known k = { .buf = known, .cap = sizeof known, .len = 0, .count = 0 };
		known[0] = '\0';
		if (mdl_list(mdl_known_add, &k) > 0)
			snprintf(err, errlen, "unknown model '%s' (known: %s)", name_or_path, known);
		else
			snprintf(err, errlen, "unknown model '%s' (no model files in %s)", name_or_path, dir);
		return -1;
	}
	return mdl_load_named(path, name_or_path, out, err, errlen);
}

const char *mdl_dir(void)
{
	const char *env = getenv("SIMBATCH_MODELS");
	return env && env[0] ? env : SB_MODELS_DIR;
}

static int mdl_cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int mdl_list(void (*cb)(const char *name, void *ctx), void *ctx)
{
	DIR *d = opendir(mdl_dir());
	if (!d)
		return -1;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		if (len <= MDL_EXT_LEN || strcmp(e->d_name + len - MDL_EXT_LEN, MDL_EXT) != 0)
			continue;
		char *name = strndup(e->d_name, len - MDL_EXT_LEN);
		if (!name)
			goto done;
		/* Only files that mdl_load could load by that name. */
		if (!mdl_name_valid(name) || n >= (size_t)INT32_MAX) {
			free(name);
			continue;
		}
		if (GROW(names, cap, n + 1, 16) != 0) {
			free(name);
			goto done;
		}
		names[n++] = name;
	}
	if (n > 0)
		qsort(names, n, sizeof *names, mdl_cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (cb)
			cb(names[i], ctx);
	}
	rc = (int)n;
done:
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	return rc;
}
