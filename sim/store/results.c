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
#include "../../util/sqlite_read.h"

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
	"  saturated INTEGER);\n"
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
	TOKEN_CDF_TABLE_SQL;

static const char sql_insert_meta[] = "INSERT INTO simbatch_meta(key, value) VALUES(?1, ?2)";
static const char sql_insert_run[] =
	"INSERT INTO runs(created_utc, code_version, live, policy, model, hw, rate_rps, seed,"
	" sla_ms, requests, completed, throughput_rps, mean_batch, events, wall_s, summary_json, saturated)"
	" VALUES(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10,"
	" ?11, ?12, ?13, ?14, ?15, ?16)";

/* The upgrades, each from the version before: version 1 lacked
 * runs.saturated, version 2 the LLM token CDFs and first_token_s; the runs
 * already stored keep NULL there (not known) and have no token CDF. */
static const char sql_migrate_v1[] =
	"ALTER TABLE runs ADD COLUMN saturated INTEGER;"
	"UPDATE simbatch_meta SET value = '2' WHERE key = 'schema_version';";
static const char sql_migrate_v2[] =
	"ALTER TABLE run_requests ADD COLUMN first_token_s REAL;"
	TOKEN_CDF_TABLE_SQL
	"UPDATE simbatch_meta SET value = '3' WHERE key = 'schema_version';";
static const char sql_insert_config[] = "INSERT INTO run_config(run_id, key, value) VALUES(?1, ?2, ?3)";
static const char sql_insert_metrics[] =
	"INSERT INTO run_metrics(run_id, count, mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, p999_ms,"
	" max_ms, min_ms, queue_mean_ms, queue_p99_ms, sla_violation_rate)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";
/* A CDF's 1000 rows go in RESULTS_CDF_ROWS at a time, one statement with
 * that many rows (cdf_insert_sql): a statement a row spent as much again on
 * running the statement as on the row (1.0 against 0.53 ms a CDF, bench/README.md). */
#define RESULTS_CDF_ROWS 100
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

#define RESULTS_BUSY_TIMEOUT_MS 10000  /* how long to wait for another writer's lock */
#define RESULTS_RETRY_MS 10             /* poll step where SQLite will not wait itself */

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
	int version;                  /* schema version: older ones are read as they are (no runs.saturated
	                                 before 2, no run_token_cdf before 3) and upgraded when written */
	int keepable;                 /* opened by results_open, its file known: may be kept open */
	dev_t dev;                    /* the file it opened, to know it again */
	ino_t ino;
};

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

static void set_err(char *err, size_t errlen, const char *fmt, ...)
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
		set_err(err, errlen, "results database '%s' is not writable: %s", r->path, sqlite3_errmsg(r->db));
	else
		set_err(err, errlen, "cannot read results database '%s': %s", r->path, sqlite3_errmsg(r->db));
	return DB_ERROR;
}

/* classify with the refusals every opener shares: another application's file (for a reader, an
 * empty one too) or another schema version sets err and gives DB_ERROR. */
static enum db_kind classify_usable(struct results_db *r, const char *path, int writer, char **version, char *err,
                                    size_t errlen)
{
	enum db_kind kind = classify(r, version, err, errlen);
	if (kind == DB_FOREIGN || (kind == DB_EMPTY && !writer)) {
		set_err(err, errlen, "'%s' is not a simbatch results database", path);
		return DB_ERROR;
	}
	if (kind == DB_OTHER_VERSION) {
		set_err(err, errlen, "results database '%s' has schema version %s; this simbatch %s version %d", path,
		        *version, writer ? "writes" : "reads", RESULTS_SCHEMA_VERSION);
		return DB_ERROR;
	}
	return kind;
}

static int create_schema(struct results_db *r)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(r->db, results_schema_sql, NULL, NULL, NULL) != SQLITE_OK)
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

static void rollback(sqlite3 *db)
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
	set_err(err, errlen, "results database '%s' is not a regular file (%s)", path,
	        S_ISDIR(st.st_mode) ? "a directory" : S_ISCHR(st.st_mode) ? "a character device"
	        : S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISBLK(st.st_mode) ? "a block device" : "a socket");
	return -1;
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
		set_err(err, errlen, "results database '%s' is damaged (database disk image is malformed: %s)", r->path,
		        why ? (const char *)why : sqlite3_errmsg(r->db));
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
	struct stat st;
	char *version = NULL;
	if (results_check_path(path, err, errlen) != 0)
		return -1;
	if (stat(path, &st) != 0) {         /* none yet: its directory must let us create it */
		char dir[4096];
		const char *slash = strrchr(path, '/');
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + (slash == path) : 1, slash ? path : ".");
		if (access(dir, W_OK) == 0)
			return 0;
		set_err(err, errlen, "cannot create results database '%s': %s", path,
		        errno == ENOENT ? "no such directory" : strerror(errno));
		return -1;
	}
	struct results_db r = { .path = (char *)path };
	int rc = -1;
	if (sqlite_open_read(path, &r.db) != SQLITE_OK) {
		set_err(err, errlen, "cannot open results database '%s': %s", path, sqlite3_errmsg(r.db));
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
		if (results_damaged(&r, err, errlen))
			goto done;
		break;
	}
	if (access(path, W_OK) != 0) {
		set_err(err, errlen, "results database '%s' is not writable: %s", path, strerror(errno));
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
	if (results_check_path(path, err, errlen) != 0)
		return -1;
	struct results_db *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		set_err(err, errlen, "cannot open results database '%s': out of memory", path);
		goto fail;
	}
	/* NOMUTEX: one thread uses a connection (the run's), so SQLite need not
	 * lock one around every call: a sixth of storing a run */
	int rc = sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		set_err(err, errlen, "cannot open results database '%s': %s", path,
		        r->db ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
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
		set_err(err, errlen, "results database '%s' is not writable: %s", path,
		        sqlite3_errstr(SQLITE_READONLY));
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
			rollback(r->db);
			if (kind == DB_FOREIGN)
				set_err(err, errlen, "'%s' is not a simbatch results database", path);
			else if (kind == DB_OTHER_VERSION)
				set_err(err, errlen, "results database '%s' has schema version %s; this simbatch writes version %d",
				        path, version, RESULTS_SCHEMA_VERSION);
			goto fail;
		}
		if (sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
	} else if (kind == DB_OLDER) {
		/* another process may have upgraded it since: look again under the lock */
		kind = classify(r, &version, err, errlen);
		if (kind == DB_ERROR) {
			rollback(r->db);
			goto fail;
		}
		int upgrade = kind == DB_OLDER;
		if ((upgrade && r->version == 1 && sqlite3_exec(r->db, sql_migrate_v1, NULL, NULL, NULL) != SQLITE_OK) ||
		    (upgrade && sqlite3_exec(r->db, sql_migrate_v2, NULL, NULL, NULL) != SQLITE_OK) ||
		    sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
	} else {
		/* a real page write proves the file, its journal and directory writable now */
		if (sqlite3_exec(r->db, "UPDATE simbatch_meta SET value = value WHERE key = 'application'",
		                 NULL, NULL, NULL) != SQLITE_OK)
			goto not_writable;
		rollback(r->db);
	}
	/* In WAL mode NORMAL keeps the database consistent after a crash and only
	 * risks the last commits on power loss, and saves an fsync per run, which
	 * dominates the cost of a short run in a sweep. */
	if (sqlite3_exec(r->db, "PRAGMA foreign_keys=ON; PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
		set_err(err, errlen, "cannot configure results database '%s': %s", path, sqlite3_errmsg(r->db));
		goto fail;
	}
	r->version = RESULTS_SCHEMA_VERSION;   /* created, upgraded or found so */
	struct stat st;
	r->keepable = stat(path, &st) == 0;    /* known again only by its device and inode */
	r->dev = st.st_dev;
	r->ino = st.st_ino;
	if (!(cdf_sql = cdf_insert_sql(sql_insert_cdf_head, 0, 2)) ||
	    !(token_cdf_sql = cdf_insert_sql(sql_insert_token_cdf_head, 1, 3))) {
		set_err(err, errlen, "cannot open results database '%s': out of memory", path);
		goto fail;
	}
	/* preparing every insert now also checks the tables have the columns we write */
	if (sqlite3_prepare_v2(r->db, sql_insert_run, -1, &r->ins_run, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_config, -1, &r->ins_config, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_metrics, -1, &r->ins_metrics, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, cdf_sql, -1, &r->ins_cdf, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, token_cdf_sql, -1, &r->ins_token_cdf, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_request, -1, &r->ins_request, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(r->db, sql_insert_stat, -1, &r->ins_stat, NULL) != SQLITE_OK) {
		set_err(err, errlen, "results database '%s' does not match schema version %d: %s", path,
		        RESULTS_SCHEMA_VERSION, sqlite3_errmsg(r->db));
		goto fail;
	}
	free(cdf_sql);
	free(token_cdf_sql);
	*out = r;
	return 0;

not_writable:
	set_err(err, errlen, "results database '%s' is not writable: %s", path, sqlite3_errmsg(r->db));
	rollback(r->db);
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

/* Steps an INSERT and resets it for the next row; 0 or -1 with err. */
static int step_insert(struct results_db *r, sqlite3_stmt *st, char *err, size_t errlen)
{
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		set_err(err, errlen, "cannot write run to results database '%s': %s", r->path,
		        sqlite3_errmsg(r->db));
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		return -1;
	}
	sqlite3_reset(st);
	return 0;
}

/* Stores one CDF with the statement cdf_insert_sql made (its first shared
 * parameters bound), RESULTS_CDF_ROWS quantiles a step. */
static int insert_cdf(struct results_db *r, sqlite3_stmt *st, int first_param, const double *cdf_ms,
                      char *err, size_t errlen)
{
	/* non-decreasing by construction (metrics.c); a CDF that is not is a bug, never stored */
	for (int i = 1; i < METRICS_CDF_POINTS; i++)
		if (!(cdf_ms[i] >= cdf_ms[i - 1])) {
			set_err(err, errlen, "a CDF decreases at point %d (%.17g after %.17g ms): not stored (a bug of "
			        "simbatch's; please report it)", i, cdf_ms[i], cdf_ms[i - 1]);
			return -1;
		}
	for (int i = 0; i < METRICS_CDF_POINTS; i += RESULTS_CDF_ROWS) {
		for (int k = 0; k < RESULTS_CDF_ROWS; k++) {
			sqlite3_bind_double(st, first_param + 2 * k, (double)(i + k + 1) / METRICS_CDF_POINTS);
			sqlite3_bind_double(st, first_param + 2 * k + 1, cdf_ms[i + k]);
		}
		if (step_insert(r, st, err, errlen) < 0)
			return -1;
	}
	return 0;
}

static void bind_u64(sqlite3_stmt *st, int i, uint64_t v)
{
	sqlite3_bind_int64(st, i, (sqlite3_int64)v);
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* Inside the write transaction: 1 with *run_id when a run already has the
 * run's once_key value, 0 when none has, -1 with err. */
static int find_once(struct results_db *db, const struct results_run *run, int64_t *run_id,
                     char *err, size_t errlen)
{
	const char *value = NULL;
	for (size_t i = 0; i < run->nconfig; i++)
		if (strcmp(run->config[i].key, run->once_key) == 0)
			value = run->config[i].value;
	if (!value)
		return 0;
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db->db, "SELECT run_id FROM run_config WHERE key = ?1 AND value = ?2 LIMIT 1",
	                            -1, &st, NULL);
	if (rc == SQLITE_OK) {
		sqlite3_bind_text(st, 1, run->once_key, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
	}
	if (rc == SQLITE_ROW)
		*run_id = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (rc == SQLITE_ROW || rc == SQLITE_DONE)
		return rc == SQLITE_ROW;
	set_err(err, errlen, "cannot write run to results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	return -1;
}

int results_write_run(struct results_db *db, const struct results_run *run, int64_t *run_id,
                      char *err, size_t errlen)
{
	*run_id = 0;
	if (!run->summary) {
		set_err(err, errlen, "cannot write run to results database '%s': run has no metrics summary",
		        db->path);
		return -1;
	}
	if (sqlite3_exec(db->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		set_err(err, errlen, "cannot write run to results database '%s': %s", db->path,
		        sqlite3_errmsg(db->db));
		return -1;
	}
	if (run->once_key) {
		int found = find_once(db, run, run_id, err, errlen);
		if (found != 0) {
			rollback(db->db);
			return found;
		}
	}

	sqlite3_stmt *st = db->ins_run;
	bind_text(st, 1, run->code_version);
	sqlite3_bind_int(st, 2, run->live);
	bind_text(st, 3, run->policy);
	bind_text(st, 4, run->model);
	bind_text(st, 5, run->hw);
	sqlite3_bind_double(st, 6, run->rate_rps);
	bind_u64(st, 7, run->seed);
	sqlite3_bind_double(st, 8, run->sla_ms);
	bind_u64(st, 9, run->requests);
	bind_u64(st, 10, run->completed);
	sqlite3_bind_double(st, 11, run->throughput_rps);
	sqlite3_bind_double(st, 12, run->mean_batch);
	bind_u64(st, 13, run->events);
	sqlite3_bind_double(st, 14, run->wall_s);
	bind_text(st, 15, run->summary_json);
	sqlite3_bind_int(st, 16, run->saturated);
	if (step_insert(db, st, err, errlen) < 0)
		goto fail;
	sqlite3_clear_bindings(st);
	sqlite3_int64 id = sqlite3_last_insert_rowid(db->db);

	st = db->ins_config;
	for (size_t i = 0; i < run->nconfig; i++) {
		sqlite3_bind_int64(st, 1, id);
		bind_text(st, 2, run->config[i].key);
		bind_text(st, 3, run->config[i].value);
		if (step_insert(db, st, err, errlen) < 0)
			goto fail;
	}
	sqlite3_clear_bindings(st);

	const struct metrics_summary *s = run->summary;
	st = db->ins_metrics;
	sqlite3_bind_int64(st, 1, id);
	bind_u64(st, 2, s->count);
	const double mv[] = {s->mean_ms, s->p50_ms, s->p90_ms, s->p95_ms, s->p99_ms, s->p999_ms,
	                     s->max_ms, s->min_ms, s->queue_mean_ms, s->queue_p99_ms, s->sla_violation_rate};
	for (int i = 0; i < (int)(sizeof(mv) / sizeof(mv[0])); i++)
		sqlite3_bind_double(st, 3 + i, mv[i]);
	if (step_insert(db, st, err, errlen) < 0)
		goto fail;

	st = db->ins_cdf;
	sqlite3_bind_int64(st, 1, id);
	if (insert_cdf(db, st, 2, s->cdf_ms, err, errlen) < 0)
		goto fail;

	st = db->ins_token_cdf;
	sqlite3_bind_int64(st, 1, id);
	for (int m = 0; m < RESULTS_TOKEN_METRICS; m++) {
		if (!run->token_cdf_ms[m])
			continue;
		sqlite3_bind_text(st, 2, results_token_metrics[m], -1, SQLITE_STATIC);
		if (insert_cdf(db, st, 3, run->token_cdf_ms[m], err, errlen) < 0)
			goto fail;
	}

	st = db->ins_stat;
	sqlite3_bind_int64(st, 1, id);
	for (size_t i = 0; i < run->nstats; i++) {
		bind_text(st, 2, run->stats[i].key);
		sqlite3_bind_double(st, 3, run->stats[i].value);
		if (step_insert(db, st, err, errlen) < 0)
			goto fail;
	}

	st = db->ins_request;
	sqlite3_bind_int64(st, 1, id);
	for (size_t i = 0; i < run->nrequest_rows; i++) {
		const struct drv_request_row *q = &run->request_rows[i];
		bind_u64(st, 2, q->id);
		sqlite3_bind_double(st, 3, q->arrival_s);
		sqlite3_bind_double(st, 4, q->start_s);
		sqlite3_bind_double(st, 5, q->finish_s);
		sqlite3_bind_int64(st, 6, q->input_len);
		sqlite3_bind_int64(st, 7, q->output_len);
		if (q->first_token_s >= 0)
			sqlite3_bind_double(st, 8, q->first_token_s);
		else
			sqlite3_bind_null(st, 8);
		if (step_insert(db, st, err, errlen) < 0)
			goto fail;
	}

	if (sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		set_err(err, errlen, "cannot write run to results database '%s': %s", db->path,
		        sqlite3_errmsg(db->db));
		goto fail;
	}
	*run_id = id;
	return 0;
fail:
	rollback(db->db);
	return -1;
}

int results_read_stat(struct results_db *db, int64_t run_id, const char *key, double *value, char *err,
                      size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->db, "SELECT value FROM run_stats WHERE run_id = ?1 AND key = ?2", -1, &st, NULL) !=
	    SQLITE_OK)
		goto sql_fail;
	sqlite3_bind_int64(st, 1, run_id);
	sqlite3_bind_text(st, 2, key, -1, SQLITE_STATIC);
	int rc = sqlite3_step(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto sql_fail;
	if (rc == SQLITE_ROW)
		*value = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return rc == SQLITE_ROW;
sql_fail:
	set_err(err, errlen, "cannot read results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	sqlite3_finalize(st);
	return -1;
}

int results_each_option(struct results_db *db, int64_t run_id,
                        void (*fn)(void *ctx, const char *key, const char *value), void *ctx,
                        char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc;
	if (sqlite3_prepare_v2(db->db, "SELECT key, value FROM run_config WHERE run_id = ?1 ORDER BY key", -1, &st,
	                       NULL) != SQLITE_OK)
		goto sql_fail;
	sqlite3_bind_int64(st, 1, run_id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *key = (const char *)sqlite3_column_text(st, 0);
		const char *value = (const char *)sqlite3_column_text(st, 1);
		fn(ctx, key ? key : "", value ? value : "");
	}
	if (rc != SQLITE_DONE)
		goto sql_fail;
	sqlite3_finalize(st);
	return 0;
sql_fail:
	set_err(err, errlen, "cannot read results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	sqlite3_finalize(st);
	return -1;
}

const char *const results_token_metrics[RESULTS_TOKEN_METRICS] = { "ttft", "tpot", "itl" };

int results_read_cdf(struct results_db *db, int64_t run_id, double *cdf_ms, char *err, size_t errlen)
{
	return results_read_metric_cdf(db, run_id, "latency", cdf_ms, err, errlen);
}

int results_read_metric_cdf(struct results_db *db, int64_t run_id, const char *metric, double *cdf_ms,
                            char *err, size_t errlen)
{
	double v[METRICS_CDF_POINTS];
	sqlite3_stmt *st = NULL;
	int n = 0, malformed = 0, latency = strcmp(metric, "latency") == 0;
	if (!latency && db->version < 3) {
		set_err(err, errlen, "run %lld in %s has no %s CDF (stored before schema version 3)", (long long)run_id,
		        db->path, metric);
		return -1;
	}
	int rc = sqlite3_prepare_v2(db->db, latency
	                            ? "SELECT quantile, latency_ms FROM run_cdf WHERE run_id = ?1 ORDER BY quantile"
	                            : "SELECT quantile, value_ms FROM run_token_cdf WHERE run_id = ?1 AND metric = ?2"
	                              " ORDER BY quantile", -1, &st, NULL);
	if (rc != SQLITE_OK)
		goto sql_fail;
	sqlite3_bind_int64(st, 1, run_id);
	if (!latency)
		sqlite3_bind_text(st, 2, metric, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		double q = sqlite3_column_double(st, 0);
		if (n >= METRICS_CDF_POINTS || fabs(q - (double)(n + 1) / METRICS_CDF_POINTS) > 1e-12) {
			malformed = 1;
			break;
		}
		v[n++] = sqlite3_column_double(st, 1);
	}
	if (!malformed && rc != SQLITE_DONE)
		goto sql_fail;
	sqlite3_finalize(st);
	st = NULL;
	if (n == 0 && !malformed) {
		/* no CDF rows: tell a missing run from a damaged one */
		rc = sqlite3_prepare_v2(db->db, "SELECT 1 FROM runs WHERE run_id = ?1", -1, &st, NULL);
		if (rc != SQLITE_OK)
			goto sql_fail;
		sqlite3_bind_int64(st, 1, run_id);
		rc = sqlite3_step(st);
		if (rc != SQLITE_ROW && rc != SQLITE_DONE)
			goto sql_fail;
		sqlite3_finalize(st);
		if (rc == SQLITE_DONE) {
			set_err(err, errlen, "no run %lld in %s", (long long)run_id, db->path);
			return -1;
		}
		if (!latency) {
			set_err(err, errlen, "run %lld in %s has no %s CDF (not an LLM run%s)", (long long)run_id, db->path,
			        metric, strcmp(metric, "ttft") ? ", or no request of two or more tokens" : "");
			return -1;
		}
	}
	if (malformed || n != METRICS_CDF_POINTS) {
		set_err(err, errlen, "run %lld in %s has a malformed %s CDF (%d points, expected %d)",
		        (long long)run_id, db->path, metric, n, METRICS_CDF_POINTS);
		return -1;
	}
	memcpy(cdf_ms, v, sizeof(v));
	return 0;
sql_fail:
	set_err(err, errlen, "cannot read results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	sqlite3_finalize(st);
	return -1;
}

/* ---- reading: compare and plots open a database without changing it ---- */

int results_open_readonly(const char *path, struct results_db **out, char *err, size_t errlen)
{
	char *version = NULL;
	*out = NULL;
	if (results_check_path(path, err, errlen) != 0)
		return -1;
	struct results_db *r = calloc(1, sizeof(*r));
	if (!r || !(r->path = strdup(path))) {
		set_err(err, errlen, "cannot open results database '%s': out of memory", path);
		goto fail;
	}
	/* never SQLITE_OPEN_CREATE: a mistyped path must not leave an empty database behind */
	int rc = sqlite_open_read(path, &r->db);
	if (rc != SQLITE_OK) {
		set_err(err, errlen, "cannot open results database '%s': %s", path,
		        (rc & 0xff) == SQLITE_CANTOPEN ? "no such file, or not readable"
		        : r->db ? sqlite3_errmsg(r->db) : sqlite3_errstr(rc));
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

static void copy_column(sqlite3_stmt *st, int col, char *dst, size_t len)
{
	const unsigned char *v = sqlite3_column_text(st, col);
	snprintf(dst, len, "%s", v ? (const char *)v : "");
}

int results_read_run_info(struct results_db *db, int64_t run_id, struct results_run_info *out,
                          char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	*out = (struct results_run_info){ 0 };
	if (sqlite3_prepare_v2(db->db, db->version < 2 ? "SELECT policy, model, hw, rate_rps, seed, sla_ms, completed, live,"
	                       " NULL FROM runs WHERE run_id = ?1" : "SELECT policy, model, hw, rate_rps, seed, sla_ms,"
	                       " completed, live, saturated FROM runs WHERE run_id = ?1", -1, &st, NULL) != SQLITE_OK)
		goto sql_fail;
	sqlite3_bind_int64(st, 1, run_id);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		sqlite3_finalize(st);
		set_err(err, errlen, "no run %lld in %s", (long long)run_id, db->path);
		return -1;
	}
	if (rc != SQLITE_ROW)
		goto sql_fail;
	out->run_id = run_id;
	copy_column(st, 0, out->policy, sizeof out->policy);
	copy_column(st, 1, out->model, sizeof out->model);
	copy_column(st, 2, out->hw, sizeof out->hw);
	out->rate_rps = sqlite3_column_double(st, 3);
	out->seed = (uint64_t)sqlite3_column_int64(st, 4);
	out->sla_ms = sqlite3_column_double(st, 5);
	out->completed = (uint64_t)sqlite3_column_int64(st, 6);
	out->live = sqlite3_column_int(st, 7);
	out->saturated = sqlite3_column_type(st, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 8);
	sqlite3_finalize(st);
	return 0;
sql_fail:
	set_err(err, errlen, "cannot read results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	sqlite3_finalize(st);
	return -1;
}

/* A stored option value matches a selector value when the texts are equal or
 * both are whole numbers of equal value ("rate=500" finds "500.0"). */
static int selector_value_matches(const char *stored, const char *want)
{
	if (strcmp(stored, want) == 0)
		return 1;
	char *e1, *e2;
	double a = strtod(stored, &e1), b = strtod(want, &e2);
	return *stored && *want && !*e1 && !*e2 && a == b;
}

#define RESULTS_SELECTOR_TERMS 16

int results_find_run(struct results_db *db, const char *selector, int64_t *run_id, size_t *nmatch,
                     char *err, size_t errlen)
{
	return results_find_runs(db, selector, run_id, 1, nmatch, err, errlen);
}

int results_find_runs(struct results_db *db, const char *selector, int64_t *ids, size_t maxids, size_t *nmatch,
                      char *err, size_t errlen)
{
	char buf[1024];
	char *key[RESULTS_SELECTOR_TERMS], *val[RESULTS_SELECTOR_TERMS];
	size_t nterms = 0;
	sqlite3_stmt *runs = NULL, *cfg = NULL;
	ids[0] = 0;
	*nmatch = 0;
	if (strlen(selector) >= sizeof buf)
		goto malformed;
	strcpy(buf, selector);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(t, '=');
		if (!eq || eq == t || !eq[1] || nterms == RESULTS_SELECTOR_TERMS)
			goto malformed;
		*eq = '\0';
		key[nterms] = t;
		val[nterms++] = eq + 1;
	}
	if (nterms == 0)
		goto malformed;
	if (sqlite3_prepare_v2(db->db, db->version < 2 ? "SELECT run_id, live, NULL FROM runs ORDER BY run_id DESC"
	                       : "SELECT run_id, live, saturated FROM runs ORDER BY run_id DESC", -1, &runs, NULL)
	    != SQLITE_OK ||
	    sqlite3_prepare_v2(db->db, "SELECT value FROM run_config WHERE run_id = ?1 AND key = ?2", -1, &cfg,
	                       NULL) != SQLITE_OK)
		goto sql_fail;
	int rc;
	while ((rc = sqlite3_step(runs)) == SQLITE_ROW) {
		sqlite3_int64 id = sqlite3_column_int64(runs, 0);
		int all = 1;
		for (size_t i = 0; i < nterms && all; i++) {
			/* live and saturated are columns of the run, not options */
			int col = strcmp(key[i], "live") == 0 ? 1 : strcmp(key[i], "saturated") == 0 ? 2 : 0;
			if (col) {
				const unsigned char *v = sqlite3_column_text(runs, col);
				all = v && selector_value_matches((const char *)v, val[i]);
				continue;
			}
			sqlite3_bind_int64(cfg, 1, id);
			sqlite3_bind_text(cfg, 2, key[i], -1, SQLITE_STATIC);
			int crc = sqlite3_step(cfg);
			if (crc == SQLITE_ROW) {
				const unsigned char *v = sqlite3_column_text(cfg, 0);
				all = v && selector_value_matches((const char *)v, val[i]);
			} else if (crc == SQLITE_DONE) {
				all = 0;
			} else {
				goto sql_fail;
			}
			sqlite3_reset(cfg);
		}
		if (all && *nmatch < maxids)
			ids[*nmatch] = id;    /* rows come newest first */
		*nmatch += all;
	}
	if (rc != SQLITE_DONE)
		goto sql_fail;
	sqlite3_finalize(runs);
	sqlite3_finalize(cfg);
	if (*nmatch == 0) {
		set_err(err, errlen, "no run in %s matches '%s'", db->path, selector);
		return -1;
	}
	return 0;
malformed:
	set_err(err, errlen, "run selector '%s': expected a run id or key=value[,key=value...]", selector);
	return -1;
sql_fail:
	set_err(err, errlen, "cannot read results database '%s': %s", db->path, sqlite3_errmsg(db->db));
	sqlite3_finalize(runs);
	sqlite3_finalize(cfg);
	ids[0] = 0;
	*nmatch = 0;
	return -1;
}
