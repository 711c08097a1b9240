/* sim/store/results.c: the SQLite results database (DESIGN.md section 4).
 *
 * One row per completed run in `runs`, with every option in `run_config`, the
 * summary in `run_metrics`, 1000 latency quantiles in `run_cdf` (and for an
 * LLM run 1000 of TTFT, TPOT and the inter-token gaps in `run_token_cdf`) and,
 * when asked for, one row per request in `run_requests`. The file is checked and
 * proven writable when it is opened, before a simulation spends its time, and
 * a run is written in one IMMEDIATE transaction so a failure leaves nothing.
 * Values only ever travel as bound parameters of prepared statements.
 *
 * uint64 fields (seed, counts, request ids) are stored as SQLite's signed
 * 64-bit INTEGER: values above INT64_MAX keep their bit pattern and read back
 * negative; cast back to uint64 to recover them.
 */
#include "results.h"
#include "../../util/errkind.h"
#include "results_db.h"
#include "../../util/sqlite_read.h"
#include "capacity_store.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

/* TTFT and TPOT exact, the inter-token gaps from their histogram (within
 * 1/256); `metric` is ttft, tpot or itl, a metric with no value absent. */
#define TOKEN_CDF_TABLE_SQL \
	"CREATE TABLE run_token_cdf(\n" \
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n" \
	"  metric TEXT NOT NULL,\n" \
	"  quantile REAL NOT NULL,\n" \
	"  value_ms REAL,\n" \
	"  PRIMARY KEY(run_id, metric, quantile)) WITHOUT ROWID;\n"

/* A finished configuration search (simbatch search, sim/SEARCH.md): what was
 * asked (its file's text, the goal) and its report (the --json object), and
 * one row a configuration as its results file has it, with its place in the
 * report (on the Pareto front, the answer). Not runs: a search's
 * configurations are capacity searches, each many runs, none stored. */
#define SEARCH_TABLES_SQL \
	"CREATE TABLE searches(\n" \
	"  search_id INTEGER PRIMARY KEY AUTOINCREMENT,\n" \
	"  created_utc TEXT NOT NULL,\n" \
	"  code_version TEXT,\n" \
	"  file TEXT,\n" \
	"  spec_text TEXT,\n" \
	"  target_rps REAL,\n" \
	"  budget_per_hour REAL,\n" \
	"  exhaustive INTEGER,\n" \
	"  answer TEXT,\n" \
	"  report_json TEXT);\n" \
	"CREATE TABLE search_configs(\n" \
	"  search_id INTEGER NOT NULL REFERENCES searches(search_id) ON DELETE CASCADE,\n" \
	"  config TEXT NOT NULL,\n" \
	"  key TEXT,\n" \
	"  status TEXT NOT NULL,\n" \
	"  gpus INTEGER,\n" \
	"  cost_per_hour REAL,\n" \
	"  capacity_rps REAL,\n" \
	"  bracket_lo_rps REAL,\n" \
	"  bracket_hi_rps REAL,\n" \
	"  band_lo_rps REAL,\n" \
	"  band_hi_rps REAL,\n" \
	"  pareto INTEGER NOT NULL,\n" \
	"  answer INTEGER NOT NULL,\n" \
	"  reason TEXT,\n" \
	"  PRIMARY KEY(search_id, config)) WITHOUT ROWID;\n"

/* run_id is AUTOINCREMENT so an id is never reused after a run is deleted:
 * comparisons and plots refer to runs by id. The child tables are WITHOUT
 * ROWID because their primary key is their natural order, which keeps the
 * per-request table small and fast to fill. */
static const char results_schema_sql[] =
	"CREATE TABLE simbatch_meta(\n"
	"  key TEXT PRIMARY KEY,\n"
	"  value TEXT NOT NULL);\n"
	"CREATE TABLE runs(\n"
	"  run_id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  created_utc TEXT NOT NULL,\n"
	"  code_version TEXT,\n"
	"  live INTEGER NOT NULL,\n"
	"  policy TEXT,\n"
	"  model TEXT,\n"
	"  hw TEXT,\n"
	"  rate_rps REAL,\n"
	"  seed INTEGER,\n"
	"  sla_ms REAL,\n"
	"  requests INTEGER,\n"
	"  completed INTEGER,\n"
	"  throughput_rps REAL,\n"
	"  mean_batch REAL,\n"
	"  events INTEGER,\n"
	"  wall_s REAL,\n"
	"  summary_json TEXT,\n"
	"  saturated INTEGER,\n"
	"  overloaded INTEGER,\n"
	"  overload_start_s REAL,\n"
	"  overload_end_s REAL);\n"
	"CREATE TABLE run_config(\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
	"  key TEXT NOT NULL,\n"
	"  value TEXT,\n"
	"  PRIMARY KEY(run_id, key)) WITHOUT ROWID;\n"
	"CREATE TABLE run_metrics(\n"
	"  run_id INTEGER PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,\n"
	"  count INTEGER,\n"
	"  mean_ms REAL,\n"
	"  p50_ms REAL,\n"
	"  p90_ms REAL,\n"
	"  p95_ms REAL,\n"
	"  p99_ms REAL,\n"
	"  p999_ms REAL,\n"
	"  max_ms REAL,\n"
	"  min_ms REAL,\n"
	"  queue_mean_ms REAL,\n"
	"  queue_p99_ms REAL,\n"
	"  sla_violation_rate REAL);\n"
	"CREATE TABLE run_cdf(\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
	"  quantile REAL NOT NULL,\n"
	"  latency_ms REAL,\n"
	"  PRIMARY KEY(run_id, quantile)) WITHOUT ROWID;\n"
	"CREATE TABLE run_requests(\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
	"  id INTEGER NOT NULL,\n"
	"  arrival_s REAL,\n"
	"  start_s REAL,\n"
	"  finish_s REAL,\n"
	"  input_len INTEGER,\n"
	"  output_len INTEGER,\n"
	"  first_token_s REAL,\n"
	"  PRIMARY KEY(run_id, id)) WITHOUT ROWID;\n"
	"CREATE TABLE run_stats(\n"
	"  run_id INTEGER NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,\n"
	"  key TEXT NOT NULL,\n"
	"  value REAL,\n"
	"  PRIMARY KEY(run_id, key)) WITHOUT ROWID;\n"
	TOKEN_CDF_TABLE_SQL
	SEARCH_TABLES_SQL
	RESULTS_METRIC_VALUES_TABLE_SQL
	CAPACITY_TABLES_SQL;

static const char sql_insert_meta[] = "INSERT INTO simbatch_meta(key, value) VALUES(?1, ?2)";
static const char sql_insert_run[] =
	"INSERT INTO runs(created_utc, code_version, live, policy, model, hw, rate_rps, seed,"
	" sla_ms, requests, completed, throughput_rps, mean_batch, events, wall_s, summary_json, saturated,"
	" overloaded, overload_start_s, overload_end_s)"
	" VALUES(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
	" ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";

/* The upgrades, each from the version before: version 1 lacked
 * runs.saturated, version 2 the LLM token CDFs and first_token_s (the runs
 * already stored keep NULL there, not known, and have no token CDF), version
 * 3 the configuration searches, version 4 the overload window (runs stored
 * before keep NULL: not judged), version 5 run_metric_values (results_v6.c), version 6 the capacity
 * searches. */
static const char sql_migrate_v1[] =
	"ALTER TABLE runs ADD COLUMN saturated INTEGER;"
	"UPDATE simbatch_meta SET value = '2' WHERE key = 'schema_version';";
static const char sql_migrate_v2[] =
	"ALTER TABLE run_requests ADD COLUMN first_token_s REAL;"
	TOKEN_CDF_TABLE_SQL
	"UPDATE simbatch_meta SET value = '3' WHERE key = 'schema_version';";
static const char sql_migrate_v3[] =
	SEARCH_TABLES_SQL
	"UPDATE simbatch_meta SET value = '4' WHERE key = 'schema_version';";
static const char sql_migrate_v4[] =
	"ALTER TABLE runs ADD COLUMN overloaded INTEGER;"
	"ALTER TABLE runs ADD COLUMN overload_start_s REAL;"
	"ALTER TABLE runs ADD COLUMN overload_end_s REAL;"
	"UPDATE simbatch_meta SET value = '5' WHERE key = 'schema_version';";
/* version 6 is every metric under its one name (results_migrate_v5, results_v6.c); 7 the capacity searches */
static const char sql_migrate_v6[] =
	CAPACITY_TABLES_SQL
	"UPDATE simbatch_meta SET value = '7' WHERE key = 'schema_version';";
static const char sql_insert_config[] = "INSERT INTO run_config(run_id, key, value) VALUES(?1, ?2, ?3)";
static const char sql_insert_metrics[] =
	"INSERT INTO run_metrics(run_id, count, mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, p999_ms,"
	" max_ms, min_ms, queue_mean_ms, queue_p99_ms, sla_violation_rate)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
_Static_assert(METRICS_CDF_POINTS % RESULTS_CDF_ROWS == 0, "a CDF is whole statements");
static const char sql_insert_cdf_head[] = "INSERT INTO run_cdf(run_id, quantile, latency_ms) VALUES";
static const char sql_insert_token_cdf_head[] = "INSERT INTO run_token_cdf(run_id, metric, quantile, value_ms) VALUES";

/* head, then RESULTS_CDF_ROWS rows "(?1[, ?2], ?q, ?v)": the run's id (and the
 * metric, when shared) in every row, each row's quantile and value in the
 * next two parameters from first_param on. malloc'd; NULL when out of memory. */
static char *cdf_insert_sql(const char *head, int shared, int first_param)
{
	size_t cap = strlen(head) + RESULTS_CDF_ROWS * 32, used;
	char *sql = malloc(cap);
	if (!sql)
		return NULL;
	used = (size_t)snprintf(sql, cap, "%s", head);
	for (int i = 0; i < RESULTS_CDF_ROWS; i++)
		used += (size_t)snprintf(sql + used, cap - used, "%s(?1%s, ?%d, ?%d)", i ? "," : "", shared ? ", ?2" : "",
		                         first_param + 2 * i, first_param + 2 * i + 1);
	return sql;
}

static const char sql_insert_stat[] = "INSERT INTO run_stats(run_id, key, value) VALUES(?1, ?2, ?3)";
static const char sql_insert_request[] =
	"INSERT INTO run_requests(run_id, id, arrival_s, start_s, finish_s, input_len, output_len, first_token_s)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

#define RESULTS_RETRY_MS 10             /* poll step where SQLite will not wait itself */

/* A process that stores run after run into one database (a sweep's worker,
 * results_keep_open) keeps the last one open between runs: opening, checking
 * and preparing it cost a short run about as much as storing it. */
static struct {
	int on;
	struct results_db *db;        /* closed by its last user, kept for the next */
} results_kept;

enum db_kind {
	DB_EMPTY,                     /* no schema objects at all: ours to create */
	DB_OURS,                      /* simbatch_meta says simbatch, this schema version */
	DB_OLDER,                     /* simbatch, an older schema version: upgraded when opened for writing */
	DB_OTHER_VERSION,             /* simbatch, a newer (or unknown) schema version */
	DB_FOREIGN,                   /* not SQLite, or another application's database */
	DB_ERROR,                     /* could not tell (I/O error, locked, ...) */
};

void results_set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || errlen == 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Runs a one-column query; *text gets a malloc'd copy of the first row's
 * value (NULL when there is no row). Returns the SQLite result code. */
static int query_text(sqlite3 *db, const char *sql, const char *param, char **text)
{
	sqlite3_stmt *st = NULL;
	*text = NULL;
	int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
	if (rc != SQLITE_OK)
		return rc;
	if (param)
		sqlite3_bind_text(st, 1, param, -1, SQLITE_STATIC);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *v = sqlite3_column_text(st, 0);
		*text = strdup(v ? (const char *)v : "");
		rc = *text ? SQLITE_OK : SQLITE_NOMEM;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/* Decides what the file holds; on DB_OTHER_VERSION *version gets the stored
 * version text (malloc'd), on DB_ERROR err gets the reason. */
static enum db_kind classify(struct results_db *r, char **version, char *err, size_t errlen)
{
	char *t = NULL;
	*version = NULL;
	int rc = query_text(r->db, "SELECT count(*) FROM sqlite_master", NULL, &t);
	if (rc == SQLITE_NOTADB)
		return DB_FOREIGN;
	if (rc != SQLITE_OK)
		goto fail;
	if (strcmp(t, "0") == 0) {
		free(t);
		return DB_EMPTY;
	}
	free(t);
	rc = query_text(r->db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'simbatch_meta'",
	                NULL, &t);
	if (rc != SQLITE_OK)
		goto fail;
	if (!t)
		return DB_FOREIGN;
	free(t);
	rc = query_text(r->db, "SELECT value FROM simbatch_meta WHERE key = ?1", "application", &t);
	if (rc != SQLITE_OK)
		goto fail;
	int ours = t && strcmp(t, "simbatch") == 0;
	free(t);
	if (!ours)
		return DB_FOREIGN;
	rc = query_text(r->db, "SELECT value FROM simbatch_meta WHERE key = ?1", "schema_version", &t);
	if (rc != SQLITE_OK)
		goto fail;
	char want[24];
	snprintf(want, sizeof(want), "%d", RESULTS_SCHEMA_VERSION);
	if (t && strcmp(t, want) == 0) {
		free(t);
		r->version = RESULTS_SCHEMA_VERSION;
		return DB_OURS;
	}
	for (int v = 1; v < RESULTS_SCHEMA_VERSION; v++) {
		snprintf(want, sizeof(want), "%d", v);
		if (t && strcmp(t, want) == 0) {
			free(t);
			r->version = v;
			return DB_OLDER;
		}
	}
	*version = t ? t : strdup("(none)");
	return DB_OTHER_VERSION;
fail:
	free(t);
	/* a WAL file in a read-only directory fails even to read (no -shm file) */
	if ((rc & 0xff) == SQLITE_READONLY)
		results_set_err(err, errlen, "results database '%s' is not writable: %s", r->path, err_sqlite_msg(r->db));
	else
		results_set_err(err, errlen, "cannot read results database '%s': %s", r->path, err_sqlite_msg(r->db));
	return DB_ERROR;
}

/* classify with the refusals every opener shares: another application's file (for a reader, an
 * empty one too) or another schema version sets err and gives DB_ERROR. */
static enum db_kind classify_usable(struct results_db *r, const char *path, int writer, char **version, char *err,
                                    size_t errlen)
{
	enum db_kind kind = classify(r, version, err, errlen);
	if (kind == DB_FOREIGN || (kind == DB_EMPTY && !writer)) {
		results_set_err(err, errlen, "'%s' is not a simbatch results database", path);
		return DB_ERROR;
	}
	if (kind == DB_OTHER_VERSION) {
		results_set_err(err, errlen, "results database '%s' has schema version %s; this simbatch %s version %d", path,
		        *version, writer ? "writes" : "reads", RESULTS_SCHEMA_VERSION);
		return DB_ERROR;
	}
	return kind;
}

static int create_schema(struct results_db *r)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(r->db, results_schema_sql, NULL, NULL, NULL) != SQLITE_OK || results_list_metrics(r->db) != 0)
		return -1;
	if (sqlite3_prepare_v2(r->db, sql_insert_meta, -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, "application", -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, "simbatch", -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	if (rc == SQLITE_DONE) {
		sqlite3_bind_text(st, 1, "schema_version", -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 2, RESULTS_SCHEMA_VERSION);   /* TEXT affinity stores '1' */
		rc = sqlite3_step(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* SQLite does not call the busy handler when two connections switch a new
 * file to WAL at the same moment; the loser gets SQLITE_BUSY at once. */
static int exec_retry_busy(sqlite3 *db, const char *sql)
{
	for (int waited_ms = 0;; waited_ms += RESULTS_RETRY_MS) {
		int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
		if ((rc & 0xff) != SQLITE_BUSY || waited_ms >= RESULTS_BUSY_TIMEOUT_MS)
			return rc;
		sqlite3_sleep(RESULTS_RETRY_MS);
	}
}

void results_rollback(sqlite3 *db)
{
	if (!sqlite3_get_autocommit(db))
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
}

static void results_free(struct results_db *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->ins_run);
	sqlite3_finalize(r->ins_config);
	sqlite3_finalize(r->ins_metrics);
	sqlite3_finalize(r->ins_cdf);
	sqlite3_finalize(r->ins_token_cdf);
	sqlite3_finalize(r->ins_request);
	sqlite3_finalize(r->ins_stat);
	sqlite3_finalize(r->ins_value);
	sqlite3_close(r->db);
	free(r->path);
	free(r);
}

/* The kept database, if it is still the file at path (not removed or replaced
 * since), handed over; NULL otherwise (and a kept one for another file closed). */
static struct results_db *results_take_kept(const char *path)
{
	struct results_db *k = results_kept.db;
	struct stat st;
	results_kept.db = NULL;
	if (k && strcmp(k->path, path) == 0 && stat(path, &st) == 0 && st.st_dev == k->dev && st.st_ino == k->ino)
		return k;
	results_free(k);
	return NULL;
}

void results_keep_open(int on)
{
	results_kept.on = on;
	if (!on) {
		results_free(results_kept.db);
		results_kept.db = NULL;
	}
}

/* A database path must name a regular file or nothing yet (through links):
 * SQLite on a device or FIFO fails late, as an I/O error, and leaves its
 * journal beside it (/dev/null-journal in /dev). -1 with err otherwise. */
static int results_check_path(const char *path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(path, &st) != 0 || S_ISREG(st.st_mode))
		return 0;
	results_set_err(err, errlen, "results database '%s' is not a regular file (%s)", path,
	        S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device"
	        : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISBLK(st.st_mode) ? "a block device" : "a socket");
	return -1;
}

/* A connection's record for path, checked first (results_check_path); NULL with err. */
static struct results_db *results_new(const char *path, char *err, size_t errlen)
{
	if (results_check_path(path, err, errlen) != 0)
		return NULL;
	struct results_db *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		err_memory(err, errlen, "cannot open results database '%s': out of memory", path);
		free(r);
		return NULL;
	}
	return r;
}

/* 1 with err when a database not yet in WAL mode fails SQLite's quick check
 * (pages and indexes readable and consistent): switching it to WAL would
 * rewrite its header before any run could find the damage. A file already in
 * WAL mode is not read whole here (a sweep opens it once a point); its damage
 * surfaces when a run is stored. */
static int results_damaged(struct results_db *r, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int wal = 0, damaged = 0;
	if (sqlite3_prepare_v2(r->db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		wal = strcmp((const char *)sqlite3_column_text(st, 0), "wal") == 0;
	sqlite3_finalize(st);
	if (wal)
		return 0;
	st = NULL;
	if (sqlite3_prepare_v2(r->db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW || strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		const unsigned char *why = st ? sqlite3_column_text(st, 0) : NULL;
		results_set_err(err, errlen, "results database '%s' is damaged (database disk image is malformed: %s)", r->path,
		        why ? (const char *)why : err_sqlite_msg(r->db));
		for (char *c = err; *c; c++)      /* quick_check's report spans lines: one line */
			if (*c == '\n')
				*c = ' ';
		damaged = 1;
	}
	sqlite3_finalize(st);
	return damaged;
}

int results_check(const char *path, char *err, size_t errlen)
{
	return results_check_empty(path, NULL, err, errlen);
}

int results_check_empty(const char *path, int *empty, char *err, size_t errlen)
{
	struct stat st;
	char *version = NULL;
	if (empty)
		*empty = 1;
	if (results_check_path(path, err, errlen) != 0)
		return -1;
	if (stat(path, &st) != 0) {         /* none yet: its directory must let us create it */
		char dir[4096];
		const char *slash = strrchr(path, '/');
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
		if (access(dir, W_OK) == 0)
			return 0;
		results_set_err(err, errlen, "cannot create results database '%s': %s", path,
		        errno == ENOENT ? "no such directory" : err_strerror(errno));
		return -1;
	}
	struct results_db r = { .path = (char *)path };
	int rc = -1;
	if (sqlite_open_read(path, &r.db) != SQLITE_OK) {
		results_set_err(err, errlen, "cannot open results database '%s': %s", path, err_sqlite_msg(r.db));
		goto done;
	}
	sqlite3_busy_timeout(r.db, RESULTS_BUSY_TIMEOUT_MS);
	switch (classify_usable(&r, path, 1, &version, err, errlen)) {
	case DB_ERROR:
	case DB_FOREIGN:
	case DB_OTHER_VERSION:
		goto done;
	case DB_EMPTY:
		break;
	case DB_OURS:
	case DB_OLDER:
		if (empty)
			*empty = 0;
		if (results_damaged(&r, err, errlen))
			goto done;
		break;
	}
	if (access(path, W_OK) != 0) {
		results_set_err(err, errlen, "results database '%s' is not writable: %s", path, err_strerror(errno));
		goto done;
	}
	rc = 0;
done:
	free(version);
	sqlite3_close(r.db);
	return rc;
}

int results_open(const char *path, struct results_db **out, char *err, size_t errlen)
{
	char *version = NULL, *cdf_sql = NULL, *token_cdf_sql = NULL;
	*out = results_take_kept(path);
	if (*out)
		return 0;
	struct results_db *r = results_new(path, err, errlen);
	if (!r)
		return -1;
	/* NOMUTEX: one thread uses a connection (the run's), so SQLite need not
	 * lock one around every call: a sixth of storing a run */
	int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		results_set_err(err, errlen, "cannot open results database '%s': %s", path,
		        r->db ? err_sqlite_msg(r->db) : err_sqlite_str(rc));
		goto fail;
	}
	/* other simbatch processes (sweeps) may hold the write lock for a moment */
	sqlite3_busy_timeout(r->db, RESULTS_BUSY_TIMEOUT_MS);

	enum db_kind kind = classify_usable(r, path, 1, &version, err, errlen);
	if (kind == DB_ERROR)
		goto fail;
	/* SQLite silently opens a file it may not write read-only, and then even
	 * BEGIN IMMEDIATE succeeds: ask directly */
	if (sqlite3_db_readonly(r->db, "main") == 1) {
		results_set_err(err, errlen, "results database '%s' is not writable: %s", path,
		        err_sqlite_str(SQLITE_READONLY));
		goto fail;
	}
	/* the journal mode is a property of the file: set only once the file is known to be ours, and,
	 * where that changes its header, known whole: a damaged file is refused as it is */
	if (kind != DB_EMPTY && results_damaged(r, err, errlen))
		goto fail;
	if (exec_retry_busy(r->db, "PRAGMA journal_mode=WAL") != SQLITE_OK)
		goto not_writable;
	/* creating the schema under the write lock settles a race between two
	 * processes that both found the file empty */
	if (sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto not_writable;
	if (kind == DB_EMPTY) {
		kind = classify(r, &version, err, errlen);
		if (kind == DB_EMPTY) {
			if (create_schema(r) < 0)
				goto not_writable;
			kind = DB_OURS;
		}
		if (kind != DB_OURS) {
			results_rollback(r->db);
			if (kind == DB_FOREIGN)
				results_set_err(err, errlen, "'%s' is not a simbatch results database", path);
			else if (kind == DB_OTHER_VERSION)
				results_set_err(err, errlen, "results database '%s' has schema version %s; this simbatch writes version %d",
				        path, version, RESULTS_SCHEMA_VERSION);
			goto fail;
		}
		if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
	} else if (kind == DB_OLDER) {
		/* another process may have upgraded it since: look again under the lock */
		kind = classify(r, &version, err, errlen);
		if (kind == DB_ERROR) {
			results_rollback(r->db);
			goto fail;
		}
		int upgrade = kind == DB_OLDER;
		if ((upgrade && r->version <= 1 && sqlite3_exec(r->db, sql_migrate_v1, NULL, NULL, NULL) != SQLITE_OK) ||
		    (upgrade && r->version <= 2 && sqlite3_exec(r->db, sql_migrate_v2, NULL, NULL, NULL) != SQLITE_OK) ||
		    (upgrade && r->version <= 3 && sqlite3_exec(r->db, sql_migrate_v3, NULL, NULL, NULL) != SQLITE_OK) ||
		    (upgrade && r->version <= 4 && sqlite3_exec(r->db, sql_migrate_v4, NULL, NULL, NULL) != SQLITE_OK) ||
		    (upgrade && r->version <= 5 && results_migrate_v5(r->db) != 0) ||
		    (upgrade && sqlite3_exec(r->db, sql_migrate_v6, NULL, NULL, NULL) != SQLITE_OK) ||
		    sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
	} else {
		/* a real page write proves the file, its journal and directory writable now */
		if (sqlite3_exec(r->db, "UPDATE simbatch_meta SET value = value WHERE key = 'application'",
		                 NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
		results_rollback(r->db);
	}
	/* In WAL mode NORMAL keeps the database consistent after a crash and only
	 * risks the last commits on power loss, and saves an fsync per run, which
	 * dominates the cost of a short run in a sweep. */
	if (sqlite3_exec(r->db, "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
		results_set_err(err, errlen, "cannot configure results database '%s': %s", path, err_sqlite_msg(r->db));
		goto fail;
	}
	r->version = RESULTS_SCHEMA_VERSION;   /* created, upgraded or found so */
	struct stat st;
	r->keepable = stat(path, &st) == 0;    /* known again only by its device and inode */
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	if (!(cdf_sql = cdf_insert_sql(sql_insert_cdf_head, 0, 2)) ||
	    !(token_cdf_sql = cdf_insert_sql(sql_insert_token_cdf_head, 1, 3))) {
		err_memory(err, errlen, "cannot open results database '%s': out of memory", path);
		goto fail;
	}
	/* preparing every insert now also checks the tables have the columns we write */
	if (sqlite3_prepare_v2(r->db, sql_insert_run, -1, &r->ins_run, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_config, -1, &r->ins_config, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_metrics, -1, &r->ins_metrics, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, cdf_sql, -1, &r->ins_cdf, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, token_cdf_sql, -1, &r->ins_token_cdf, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_request, -1, &r->ins_request, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_stat, -1, &r->ins_stat, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, "INSERT INTO run_metric_values(run_id, metric, value) VALUES(?1, ?2, ?3)", -1,
	                       &r->ins_value, NULL) != SQLITE_OK) {
		results_set_err(err, errlen, "results database '%s' does not match schema version %d: %s", path,
		        RESULTS_SCHEMA_VERSION, err_sqlite_msg(r->db));
		goto fail;
	}
	free(cdf_sql);
	free(token_cdf_sql);
	*out = r;
	return 0;

not_writable:
	results_set_err(err, errlen, "results database '%s' is not writable: %s", path, err_sqlite_msg(r->db));
	results_rollback(r->db);
fail:
	free(version);
	free(cdf_sql);
	free(token_cdf_sql);
	results_free(r);
	return -1;
}

void results_close(struct results_db *db)
{
	if (db && results_kept.on && db->keepable && sqlite3_get_autocommit(db->db)) {
		results_free(results_kept.db);
		results_kept.db = db;
		return;
	}
	results_free(db);
}

void results_remove(const char *path)
{
	if (results_kept.db && strcmp(results_kept.db->path, path) == 0) {
		results_free(results_kept.db);
		results_kept.db = NULL;
	}
	static const char *const side[] = { "", "-journal", "-wal", "-shm" };
	char p[4096];
	for (size_t i = 0; i < sizeof side / sizeof side[0]; i++)
		if ((size_t)snprintf(p, sizeof p, "%s%s", path, side[i]) < sizeof p)
			unlink(p);
}

/* ---- reading: compare and plots open a database without changing it ---- */

int results_open_readonly(const char *path, struct results_db **out, char *err, size_t errlen)
{
	char *version = NULL;
	*out = NULL;
	struct results_db *r = results_new(path, err, errlen);
	if (!r)
		return -1;
	/* never SQLITE_OPEN_CREATE: a mistyped path must not leave an empty database behind */
	int rc = sqlite_open_read(path, &r->db);
	if (rc != SQLITE_OK) {
		results_set_err(err, errlen, "cannot open results database '%s': %s", path,
		        (rc & 0xff) == SQLITE_CANTOPEN ? "no such file, or not readable"
		        : r->db ? err_sqlite_msg(r->db) : err_sqlite_str(rc));
		goto fail;
	}
	sqlite3_busy_timeout(r->db, RESULTS_BUSY_TIMEOUT_MS);
	if (classify_usable(r, path, 0, &version, err, errlen) == DB_ERROR)
		goto fail;
	*out = r;
	return 0;
fail:
	free(version);
	results_free(r);
	return -1;
}

