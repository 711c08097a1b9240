/* sim/cli/sweep_dirs.h: the directories a sweep makes for its results database, and their
 * removal when it fails before storing anything (sweep_dirs.c). */
#ifndef SB_SWEEP_DIRS_H
#define SB_SWEEP_DIRS_H

#include <stddef.h>

/* The directories a sweep made for its database: the whole directory part of the path and the
 * topmost one that did not exist before (empty: none made), so a sweep that fails before storing
 * anything can take them away again. */
struct sweep_made_dirs {
	char dir[4096];
	size_t top_len;               /* length of dir's prefix naming the topmost made directory; 0: none */
};

/* Like `mkdir -p` for the directory part of path, noting what it made. 0, or -1 with err. */
int sweep_make_parent(const char *path, struct sweep_made_dirs *made, char *err, size_t errlen);
/* Removes what sweep_make_parent made, deepest first; a directory something else has since
 * filled stays (rmdir refuses it). */
void sweep_remove_made(struct sweep_made_dirs *made);

#endif
