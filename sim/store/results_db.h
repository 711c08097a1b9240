/* sim/store/results_db.h: the results database's connection, shared by
 * its files (results.c: schema, opening, checking, closing; results_write.c:
 * storing a run; results_read.c: reading runs back). Private to sim/store. */
#ifndef SB_RESULTS_DB_H
#define SB_RESULTS_DB_H

#include <math.h>
#include <stddef.h>
#include <sys/types.h>
#include <sqlite3.h>

/* A CDF's 1000 rows go in RESULTS_CDF_ROWS at a time, one statement with
 * that many rows (cdf_insert_sql): a statement a row spent as much again on
 * running the statement as on the row (1.0 against 0.53 ms a CDF, bench/README.md). */
#define RESULTS_CDF_ROWS 100
#define RESULTS_BUSY_TIMEOUT_MS 10000  /* how long to wait for another writer's lock */

struct results_db {
	sqlite3 *db;                  /* owned connection */
	char *path;                   /* owned copy, for messages */
	sqlite3_stmt *ins_run;        /* owned prepared statements, reused for every run */
	sqlite3_stmt *ins_config;
	sqlite3_stmt *ins_metrics;
	sqlite3_stmt *ins_cdf;
	sqlite3_stmt *ins_token_cdf;
	sqlite3_stmt *ins_request;
	sqlite3_stmt *ins_stat;
	sqlite3_stmt *ins_value;      /* run_metric_values (schema 6) */
	int version;                  /* schema version: older ones are read as they are (no runs.saturated
	                                 before 2, no run_token_cdf before 3) and upgraded when written */
	int keepable;                 /* opened by results_open, its file known: may be kept open */
	dev_t dev;                    /* the file it opened, to know it again */
	ino_t ino;
};

/* Schema 6: a run's metrics by their one name (metric_names.h); absent: the run has no such metric. And the
 * names themselves, so a reader of the file knows every metric's name (metric_names: results_list_metrics). */
#define RESULTS_METRIC_VALUES_TABLE_SQL \
	"CREATE TABLE run_metric_values(\n" \
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n" \
	"  metric TEXT NOT NULL,\n" \
	"  value REAL,\n" \
	"  PRIMARY KEY(run_id, metric)) WITHOUT ROWID;\n" \
	"CREATE TABLE metric_names(\n" \
	"  name TEXT PRIMARY KEY,\n" \
	"  unit TEXT,\n" \
	"  runs TEXT,\n" \
	"  meaning TEXT) WITHOUT ROWID;\n"
/* Upgrades a version-5 file to 6 inside the caller's transaction: the table, and the metrics its runs stored
 * then (run_metrics, runs, run_stats) under their names. 0, or -1 (sqlite3_errmsg says why). */
int results_migrate_v5(sqlite3 *db);
/* Every run of db with no row in run_metric_values (stored before schema 6, or merged from a shard of then)
 * gets the metrics it stored then under their names, inside the caller's transaction. 0, or -1. */
int results_name_metrics(sqlite3 *db);
/* Fills metric_names with the registry (name, unit, runs: all, llm or llm_slo, meaning). 0, or -1. */
int results_list_metrics(sqlite3 *db);

/* One line into err, printf-style (nothing when err is NULL or empty). */
__attribute__((format(printf, 3, 4)))
void results_set_err(char *err, size_t errlen, const char *fmt, ...);
/* Rolls back the transaction open on db, if any. */
void results_rollback(sqlite3 *db);

/* Ends a write begun with BEGIN IMMEDIATE: st finalized, then COMMIT when ok; otherwise, or when the
 * commit fails, the transaction rolled back and err says "cannot write WHAT to results database ...".
 * 0 when committed, or -1 (results_write.c). */
int results_end_write(struct results_db *db, sqlite3_stmt *st, int ok, const char *what, char *err, size_t errlen);

/* Binds s, or NULL where there is none (NULL or empty). */
static inline void results_bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
	if (s && *s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* Binds a number, or NULL where it is not one (NaN: not known) or, with zero_null, 0 (not given). */
static inline void results_bind_number(sqlite3_stmt *st, int i, double v, int zero_null)
{
	if (isnan(v) || (zero_null && v == 0))
		sqlite3_bind_null(st, i);
	else
		sqlite3_bind_double(st, i, v);
}

#endif
