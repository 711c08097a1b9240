/* calib/store.c: writes calibration tables into SQLite (see store.h). */
#include "store.h"
#include "../util/errkind.h"
#include "../util/sqlite_read.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

static const char calstore_schema_sql[] =
	"CREATE TABLE IF NOT EXISTS calib_tables(\n"
	"  table_id INTEGER PRIMARY KEY AUTOINCREMENT,\n"
	"  created_utc TEXT NOT NULL,\n"
	"  device TEXT NOT NULL,\n"
	"  csv_path TEXT);\n"
	"CREATE TABLE IF NOT EXISTS calib_fields(\n"
	"  table_id INTEGER NOT NULL REFERENCES calib_tables(table_id) ON DELETE CASCADE,\n"
	"  key TEXT NOT NULL,\n"
	"  value TEXT,\n"
	"  PRIMARY KEY(table_id, key)) WITHOUT ROWID;\n"
	"CREATE TABLE IF NOT EXISTS calib_points(\n"
	"  table_id INTEGER NOT NULL REFERENCES calib_tables(table_id) ON DELETE CASCADE,\n"
	"  op TEXT NOT NULL,\n"
	"  m_per_sample INTEGER NOT NULL,\n"
	"  k INTEGER NOT NULL,\n"
	"  n INTEGER NOT NULL,\n"
	"  batch INTEGER NOT NULL,\n"
	"  latency_s REAL NOT NULL,\n"
	"  measured_s REAL NOT NULL,\n"
	"  reps INTEGER,\n"
	"  PRIMARY KEY(table_id, op, m_per_sample, k, n, batch)) WITHOUT ROWID;\n";

#define CALSTORE_BUSY_TIMEOUT_MS 10000

static int calstore_fail(sqlite3 *db, const char *path, const char *what, char *err, size_t errlen)
{
	snprintf(err, errlen, "calibration database '%s': %s: %s", path, what, db ? err_sqlite_msg(db) : "no memory");
	return -1;
}

int calstore_check(const char *db_path, char *err, size_t errlen)
{
	struct stat st;
	if (stat(db_path, &st) != 0) {
		char dir[4096];
		const char *slash = strrchr(db_path, '/');
		snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - db_path) + (slash == db_path) : 1,
		         slash ? db_path : ".");
		if (errno == ENOENT && access(dir, W_OK) == 0)
			return 0;
		snprintf(err, errlen, "calibration database '%s': cannot be created: %s", db_path,
		         errno == ENOENT ? "its directory is missing or not writable" : err_strerror(errno));
		return -1;
	}
	if (!S_ISREG(st.st_mode) || access(db_path, W_OK) != 0) {
		snprintf(err, errlen, "calibration database '%s': not a writable regular file", db_path);
		return -1;
	}
	sqlite3 *db = NULL;
	int ok = sqlite_open_read(db_path, &db) == SQLITE_OK &&
	         sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) == SQLITE_OK;
	if (!ok)
		calstore_fail(db, db_path, "not a database SQLite can read", err, errlen);
	sqlite3_close(db);
	return ok ? 0 : -1;
}

int calstore_write(const char *db_path, const struct caltab *t, const char *csv_path, int64_t *table_id,
                   char *err, size_t errlen)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *ins_table = NULL, *ins_field = NULL, *ins_point = NULL;
	int rc = -1, in_tx = 0;

	*table_id = 0;
	if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
		calstore_fail(db, db_path, "cannot open", err, errlen);
		goto out;
	}
	sqlite3_busy_timeout(db, CALSTORE_BUSY_TIMEOUT_MS);
	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		calstore_fail(db, db_path, "cannot start a transaction", err, errlen);
		goto out;
	}
	in_tx = 1;
	if (sqlite3_exec(db, calstore_schema_sql, NULL, NULL, NULL) != SQLITE_OK) {
		calstore_fail(db, db_path, "cannot create the calibration tables", err, errlen);
		goto out;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO calib_tables(created_utc, device, csv_path) VALUES("
	                       "strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?1, ?2)", -1, &ins_table, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO calib_fields(table_id, key, value) VALUES(?1, ?2, ?3)", -1,
	                       &ins_field, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO calib_points(table_id, op, m_per_sample, k, n, batch, latency_s,"
	                       " measured_s, reps) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", -1, &ins_point,
	                       NULL) != SQLITE_OK) {
		calstore_fail(db, db_path, "cannot prepare", err, errlen);
		goto out;
	}
	sqlite3_bind_text(ins_table, 1, t->device, -1, SQLITE_STATIC);
	sqlite3_bind_text(ins_table, 2, csv_path, -1, SQLITE_STATIC);
	if (sqlite3_step(ins_table) != SQLITE_DONE) {
		calstore_fail(db, db_path, "cannot insert", err, errlen);
		goto out;
	}
	*table_id = sqlite3_last_insert_rowid(db);
	for (size_t i = 0; i < t->nfields; i++) {
		sqlite3_reset(ins_field);
		sqlite3_bind_int64(ins_field, 1, *table_id);
		sqlite3_bind_text(ins_field, 2, t->fields[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(ins_field, 3, t->fields[i].value, -1, SQLITE_STATIC);
		if (sqlite3_step(ins_field) != SQLITE_DONE) {
			calstore_fail(db, db_path, "cannot insert a header field", err, errlen);
			goto out;
		}
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const struct caltab_row *r = &t->rows[i];

		sqlite3_reset(ins_point);
		sqlite3_bind_int64(ins_point, 1, *table_id);
		sqlite3_bind_text(ins_point, 2, caltab_op_name(r->op), -1, SQLITE_STATIC);
		sqlite3_bind_int64(ins_point, 3, (sqlite3_int64)r->m_per_sample);
		sqlite3_bind_int64(ins_point, 4, (sqlite3_int64)r->k);
		sqlite3_bind_int64(ins_point, 5, (sqlite3_int64)r->n);
		sqlite3_bind_int64(ins_point, 6, r->batch);
		sqlite3_bind_double(ins_point, 7, r->latency_s);
		sqlite3_bind_double(ins_point, 8, r->measured_s);
		sqlite3_bind_int64(ins_point, 9, r->reps);
		if (sqlite3_step(ins_point) != SQLITE_DONE) {
			calstore_fail(db, db_path, "cannot insert a point", err, errlen);
			goto out;
		}
	}
	if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		calstore_fail(db, db_path, "cannot commit", err, errlen);
		goto out;
	}
	in_tx = 0;
	rc = 0;
out:
	if (in_tx)
		sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_finalize(ins_table);
	sqlite3_finalize(ins_field);
	sqlite3_finalize(ins_point);
	sqlite3_close(db);
	if (rc != 0)
		*table_id = 0;
	return rc;
}
