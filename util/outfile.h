/* util/outfile.h: output files that appear whole or not at all.
 *
 * An output (--requests-out, --timeline-out, a live run's files, a
 * calibration table, a made trace) is written to a temporary file beside its
 * target, named .NAME.XXXXXX, and renamed onto the target only when the run
 * has succeeded. A refused, failed or interrupted run therefore leaves an
 * existing file byte for byte as it was and never a truncated one; a run
 * killed with SIGKILL can leave only the hidden temporary file.
 *
 * What a path names decides how: a regular file (or none yet) is replaced
 * as above; through a symbolic link, the file the link names is (the link
 * stays a link); a character device or a FIFO is written in place, since
 * renaming over one would replace a node others use (/dev/null, a reader's
 * pipe), and a write error there (a full device) still fails the commit; a
 * directory, a block device or a socket is refused.
 * Contract: outfile_open creates the temporary file (mode 0666 less the
 * umask, as fopen would) and gives its stream in o->f; outfile_commit flushes,
 * closes and renames it onto the target, reporting any write error;
 * outfile_abort closes and removes it. After either, o holds nothing and
 * both may be called again harmlessly. outfile_check says whether a target
 * could be written, touching nothing. None print or exit.
 */
#ifndef SB_UTIL_OUTFILE_H
#define SB_UTIL_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

struct outfile {
	FILE *f;
	char *path;     /* the target */
	char *tmp;      /* the temporary file beside it */
};

int outfile_open(struct outfile *o, const char *path, char *err, size_t errlen);
int outfile_commit(struct outfile *o, char *err, size_t errlen);
void outfile_abort(struct outfile *o);
int outfile_check(const char *path, char *err, size_t errlen);

#endif
