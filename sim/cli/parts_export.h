/* sim/cli/parts_export.h: a job spread over machines as parts, printed as a
 * GNU parallel job list or a Slurm array script (`simbatch sweep FILE
 * --export=...`, `simbatch search FILE --export=...`): part I of N runs
 * `EXE SUBCOMMAND FILE OUT --part=I/N` writing DIR/PREFIX-I.EXT, and a join
 * command folds the parts' files back into one. */
#ifndef SB_PARTS_EXPORT_H
#define SB_PARTS_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#define PARTS_EXPORT_DEFAULT 64          /* parts by default at most: enough to keep a few dozen hosts' cores busy */

struct parts_export {
	const char *kind;                /* --export: "parallel" or "slurm" */
	const char *subcommand;          /* "sweep", "search" */
	const char *path;                /* the file, as given (made absolute for the jobs) */
	const char *exe;                 /* the simbatch the jobs run */
	size_t items;                    /* what is split: */
	const char *items_name;          /* "points", "configurations" */
	uint64_t parts;                  /* 0: min(items, PARTS_EXPORT_DEFAULT) */
	const char *dir;                 /* where the parts write */
	const char *out_option;          /* "db", "out": each part's --OPTION=DIR/PREFIX-I.EXT */
	const char *prefix, *ext;        /* "shard", ".db" */
	const char *what_each_writes;    /* "database shard (resumable: ...)" for the script's header */
	const char *join;                /* the join command, before "DIR/PREFIX-*.EXT" */
	int quiet;                       /* no hint on stderr */
};

/* Prints the parts on stdout and what to do with them on stderr. 0, or -1
 * with err (a bad kind, more parts than items, a file that cannot be
 * resolved: the input's; a write that failed: marked the machine's,
 * util/errkind.h). */
int parts_export_print(const struct parts_export *e, char *err, size_t errlen);

#endif
