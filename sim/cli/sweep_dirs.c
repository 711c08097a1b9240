/* sim/cli/sweep_dirs.c: see sweep_dirs.h. */
#include "sweep_dirs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../util/errkind.h"

/* Like `mkdir -p` for the directory part of path, noting what it made. */
int sweep_make_parent(const char *path, struct sweep_made_dirs *made, char *err, size_t errlen)
{
	char *dir = made->dir;
	const char *slash = strrchr(path, '/');
	made->top_len = 0;
	if (!slash || slash == path)
		return 0;
	if ((size_t)(slash - path) >= sizeof made->dir) {
		snprintf(err, errlen, "path too long: '%s'", path);
		return -1;
	}
	memcpy(dir, path, (size_t)(slash - path));
	dir[slash - path] = '\0';
	for (char *p = dir + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(dir, 0777) == 0) {
				if (!made->top_len)
					made->top_len = (size_t)(p - dir);
			} else if (errno != EEXIST) {
				snprintf(err, errlen, "cannot create directory '%.900s' for the results database: %s", dir,
				         err_strerror(errno));
				*p = c;
				return -1;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	return 0;
}

/* Removes what sweep_make_parent made, deepest first; a directory something else has since
 * filled stays (rmdir refuses it). */
void sweep_remove_made(struct sweep_made_dirs *made)
{
	if (!made->top_len)
		return;
	char *dir = made->dir;
	for (;;) {
		if (rmdir(dir) != 0)
			return;
		size_t len = strlen(dir);
		if (len <= made->top_len)
			return;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < made->top_len)
			return;
		*slash = '\0';
	}
}
