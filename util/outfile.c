/* util/outfile.c: write to a temporary file, rename on success (see outfile.h). */
#define _POSIX_C_SOURCE 200809L   /* mkstemp, fchmod, strdup */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "outfile.h"
#include "errkind.h"

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

/* Where an output named path really goes, in a malloc'd *target: path
 * itself, or, through symbolic links (dangling ones too), the file they name,
 * so that the link stays a link. *kind: 0 a regular file or none yet (written
 * beside and renamed), 1 a character device or FIFO (written in place). A
 * directory, a block device, a socket or a loop of links is refused. */
static int outfile_target(const char *path, char **target, int *kind, char *err, size_t errlen)
{
	char *t = strdup(path);
	struct stat st;
	*target = NULL;
	for (int hops = 0; t; hops++) {
		if (lstat(t, &st) != 0) {
			if (errno != ENOENT)
				goto io;
			*kind = 0;             /* a new file (a dangling link's target included) */
			*target = t;
			return 0;
		}
		if (!S_ISLNK(st.st_mode))
			break;
		if (hops == 40) {
			snprintf(err, errlen, "cannot write '%s': too many symbolic links", path);
			free(t);
			return -1;
		}
		char link[4096];
		ssize_t n = readlink(t, link, sizeof link - 1);
		if (n < 0)
			goto io;
		link[n] = '\0';
		const char *slash = strrchr(t, '/');
		char *next = malloc(strlen(t) + (size_t)n + 2);
		if (next) {        /* a relative link is relative to the link's own directory */
			if (link[0] == '/' || !slash)
				snprintf(next, strlen(t) + (size_t)n + 2, "%s", link);
			else
				snprintf(next, strlen(t) + (size_t)n + 2, "%.*s/%s", (int)(slash - t), t, link);
		}
		free(t);
		t = next;
	}
	if (!t) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	if (S_ISREG(st.st_mode) || S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
		*kind = S_ISREG(st.st_mode) ? 0 : 1;
		*target = t;
		return 0;
	}
	snprintf(err, errlen, "cannot write '%s': it is %s", path, S_ISDIR(st.st_mode) ? "a directory"
	         : S_ISBLK(st.st_mode) ? "a block device (simbatch writes outputs to files, character devices and FIFOs)"
	         : "not a file, character device or FIFO");
	free(t);
	return -1;
io:
	snprintf(err, errlen, "cannot write '%s': %s", path, err_strerror(errno));
	free(t);
	return -1;
}

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen)
{
	char *target;
	int kind;
	memset(o, 0, sizeof *o);
	if (outfile_target(path, &target, &kind, err, errlen) != 0)
		return -1;
	o->path = target;
	if (kind == 1) {          /* a device or FIFO: written in place, never renamed over */
		if (!(o->f = fopen(target, "w"))) {
			snprintf(err, errlen, "cannot write '%s': %s", path, err_strerror(errno));
			goto fail;
		}
		return 0;
	}
	if (!(o->tmp = outfile_tmp_name(target))) {
		err_memory(err, errlen, "out of memory");
		goto fail;
	}
	int fd = mkstemp(o->tmp);
	if (fd < 0) {
		snprintf(err, errlen, "cannot write '%s': %s", path, err_strerror(errno));
		free(o->tmp);
		o->tmp = NULL;
		goto fail;
	}
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "w"))) {
		snprintf(err, errlen, "cannot write '%s': %s", path, err_strerror(errno));
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
		err_io(err, errlen, "error writing '%s': %s", o->path, err_strerror(errno));
		outfile_abort(o);
		return -1;
	}
	if (o->tmp && rename(o->tmp, o->path) != 0) {
		snprintf(err, errlen, "cannot replace '%s': %s", o->path, err_strerror(errno));
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
	char *target;
	int kind;
	if (outfile_target(path, &target, &kind, err, errlen) != 0)
		return -1;
	if (kind == 1) {          /* opening a FIFO would wait for its reader, and closing it end the reader's input */
		int ok = access(target, W_OK) == 0;
		if (!ok)
			snprintf(err, errlen, "cannot write '%s': %s", path, err_strerror(errno));
		free(target);
		return ok ? 0 : -1;
	}
	free(target);
	struct outfile o;
	if (outfile_open(&o, path, err, errlen) != 0)
		return -1;
	outfile_abort(&o);
	return 0;
}
