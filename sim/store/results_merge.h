/* sim/store/results_merge.h: folds results databases (shards written on other
 * cores, machines or Slurm array tasks) into one, without duplicates.
 *
 * Identity of a run: a simulated run is fully determined by its code version
 * and its configuration (DESIGN.md: same seed + same inputs = same numbers),
 * so two runs are the same run when code_version and every stored option
 * agree, options that only route output (--db, --json, --quiet,
 * --requests-out, --timeline-out, --db-requests) left out; a live run
 * (measured, not reproducible) is also identified by the time it was made.
 * A sweep run's options include its sweep point key, so a sweep split over
 * shards merges back to each point exactly once.
 *
 * Contract:
 *  - Every shard is checked before anything is written: a missing file,
 *    another application's database, another schema version than OUT's, or a
 *    table or column OUT does not have is refused (RMERGE_BAD_INPUT) with one
 *    line in err, and OUT is not touched beyond being created if missing.
 *  - OUT is created with the current schema when missing; the copy is one
 *    IMMEDIATE transaction: all shards merge, or (on any failure) none does.
 *  - Runs get fresh ids in OUT; their rows in every table that references
 *    runs(run_id) (config, metrics, CDF, per-request rows, and tables added
 *    later) come along. Configuration searches (schema version 4) likewise,
 *    with their search_configs rows; a search is the same search when its
 *    code version, file, file text and report agree. Shards are opened
 *    read-only and never changed.
 */
#ifndef SB_RESULTS_MERGE_H
#define SB_RESULTS_MERGE_H

#include <stddef.h>
#include <sqlite3.h>

#define RMERGE_BAD_INPUT (-2)

struct rmerge_stats {
	size_t shards;
	size_t runs_read;        /* runs found in the shards */
	size_t runs_added;       /* copied into OUT */
	size_t runs_duplicate;   /* already in OUT (or earlier in the shard list) */
	size_t searches_added;   /* configuration searches copied (the same one, code, file, text and report alike,
	                          * once) ... */
	size_t searches_duplicate;   /* ... and already there */
	size_t capacities_added;     /* capacity answers copied (code, options and report alike, once) ... */
	size_t capacities_duplicate; /* ... and already there */
};

/* 0 with *st filled, RMERGE_BAD_INPUT or -1 (I/O, out of memory) with err. */
int rmerge_merge(const char *out_path, const char *const *shards, size_t nshards,
                 struct rmerge_stats *st, char *err, size_t errlen);

/* Reads an open database's simbatch schema version into ver (its text in
 * simbatch_meta). 0, or RMERGE_BAD_INPUT with err when the file is not a
 * simbatch results database, or -1 on an SQLite error. */
int rmerge_read_version(sqlite3 *db, const char *path, char *ver, size_t verlen, char *err, size_t errlen);

#endif
