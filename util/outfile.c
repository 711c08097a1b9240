/* util/outfile.c: write to a temporary file, rename on success (see outfile.h). */
#define _POSIX_C_SOURCE 200809L   /* mkstemp, fchmod, strdup */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"

/* "dir/.name.XXXXXX" for "dir/name" */
static char *outfile_tmp_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	size_t dirlen = slash ? (size_t)(slash - path) + 1 : 0;
	size_t n = strlen(path) + 9;
	char *t = malloc(n);
	if (t)
		snprintf(t, n, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
	return t;
}

static int outfile_refuse_dir(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "cannot write '%s': it is a directory", path);
		return -1;
	}
	return 0;
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	memset(o, 0, sizeof *o);
	if (outfile_refuse_dir(path, err, errlen) != 0)
		return -1;
	if (!(o->path = strdup(path)) || !(o->tmp = outfile_tmp_name(path))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		goto fail;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
		snprintf(err, errlen, "cannot write '%s': %s", path, strerror(errno));
		close(fd);
		goto fail;
	}
	return 0;
fail:
	outfile_abort(o);
	return -1;
}

int outfile_commit(struct outfile *o, char *err, size_t errlen)
{
	if (!o->f)
		return 0;
	int bad = fflush(o->f) != 0 || ferror(o->f);
	bad |= fclose(o->f) != 0;
	o->f = NULL;
	if (bad) {
		snprintf(err, errlen, "error writing '%s': %s", o->path, strerror(errno));
		outfile_abort(o);
		return -1;
	}
	if (rename(o->tmp, o->path) != 0) {
		snprintf(err, errlen, "cannot replace '%s': %s", o->path, strerror(errno));
		outfile_abort(o);
		return -1;
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
	return 0;
}

void outfile_abort(struct outfile *o)
{
	if (o->f)
		fclose(o->f);
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof *o);
}

int outfile_check(const char *path, char *err, size_t errlen)
{
	struct outfile o;
	if (outfile_open(&o, path, err, errlen) != 0)
		return -1;
	outfile_abort(&o);
	return 0;
}
