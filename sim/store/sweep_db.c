/* sim/store/sweep_db.c: point lookups for sweeps (sweep_db.h). */
#include "sweep_db.h"
#include "../../util/errkind.h"
#include "../../util/sqlite_read.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "results.h"
#include "results_merge.h"

#define SWEEP_DB_BUSY_MS 10000   /* as results.c: other writers hold the lock for a moment */

struct sweep_db {
	sqlite3 *db;                 /* owned */
	char *path;                  /* owned, for messages */
	sqlite3_stmt *has;           /* owned: is a point stored */
	int has_saturated;           /* runs.saturated exists (schema 2; a version-1 file read as it is lacks it) */
	int has_values;              /* run_metric_values exists (schema 6): every metric by its name */
};

void sweep_db_close(struct sweep_db *d)
{
	if (!d)
		return;
	sqlite3_finalize(d->has);
	sqlite3_close(d->db);
	free(d->path);
	free(d);
}

int sweep_db_open(const char *path, int readonly, struct sweep_db **out, char *err, size_t errlen)
{
	char ver[32];
	*out = NULL;
	struct sweep_db *d = calloc(1, sizeof *d);
	if (!d || !(d->path = strdup(path))) {
		err_memory(err, errlen, "out of memory");
		free(d);
		return -1;
	}
	int rc = readonly ? sqlite_open_read(path, &d->db)
	                  : sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE, NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open results database '%s': %s", path,
		         (rc & 0xff) == SQLITE_CANTOPEN ? "no such file, or not readable"
		         : d->db ? err_sqlite_msg(d->db) : err_sqlite_str(rc));
		goto fail;
	}
	sqlite3_busy_timeout(d->db, SWEEP_DB_BUSY_MS);
	char want[24];
	snprintf(want, sizeof want, "%d", RESULTS_SCHEMA_VERSION);
	if (rmerge_read_version(d->db, path, ver, sizeof ver, err, errlen) != 0)
		goto fail;
	/* a summary reads an older file as it is; a sweep writes only after results_open upgraded it */
	if (readonly ? atoi(ver) < 1 || atoi(ver) > RESULTS_SCHEMA_VERSION : strcmp(ver, want) != 0) {
		snprintf(err, errlen, "results database '%s' has schema version %s; this simbatch reads version %d",
		         path, ver, RESULTS_SCHEMA_VERSION);
		goto fail;
	}
	if (!readonly && sqlite3_exec(d->db, "CREATE INDEX IF NOT EXISTS run_config_key_value ON run_config(key, value)",
	                              NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot index results database '%s': %s", path, err_sqlite_msg(d->db));
		goto fail;
	}
	if (sqlite3_prepare_v2(d->db, "SELECT 1 FROM run_config WHERE key = '" SWEEP_POINT_KEY "' AND value = ?1 LIMIT 1",
	                       -1, &d->has, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot read results database '%s': %s", path, err_sqlite_msg(d->db));
		goto fail;
	}
	sqlite3_stmt *probe = NULL;
	d->has_saturated = sqlite3_prepare_v2(d->db, "SELECT saturated FROM runs LIMIT 0", -1, &probe, NULL) == SQLITE_OK;
	sqlite3_finalize(probe);
	probe = NULL;
	d->has_values = sqlite3_prepare_v2(d->db, "SELECT 1 FROM run_metric_values LIMIT 0", -1, &probe, NULL) == SQLITE_OK;
	sqlite3_finalize(probe);
	*out = d;
	return 0;
fail:
	sweep_db_close(d);
	return -1;
}

int sweep_db_has_point(struct sweep_db *d, const char *key, char *err, size_t errlen)
{
	sqlite3_bind_text(d->has, 1, key, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(d->has);
	sqlite3_reset(d->has);
	if (rc == SQLITE_ROW)
		return 1;
	if (rc == SQLITE_DONE)
		return 0;
	snprintf(err, errlen, "cannot read results database '%s': %s", d->path, err_sqlite_msg(d->db));
	return -1;
}

/* Where the file keeps metric m for run r: run_metric_values by its name (schema 6), else where schema 5 kept it
 * (NULL: nowhere; a version-1 file has no runs.saturated). Constant text of the registry's, never input. */
static int point_column(const struct sweep_db *d, const struct metric_name *m, char *buf, size_t len)
{
	if (d->has_values)
		return snprintf(buf, len, "(SELECT v.value FROM run_metric_values v WHERE v.run_id = r.run_id AND "
		                "v.metric = '%s')", m->name);
	int none = !m->v5_sql || (!d->has_saturated && strcmp(m->v5_sql, "r.saturated") == 0);
	return snprintf(buf, len, "%s", none ? "NULL" : m->v5_sql);
}

int sweep_db_point_metrics(struct sweep_db *d, const char *key, const struct metric_name *const *m,
                           size_t n, double *vals, char *err, size_t errlen)
{
	size_t len = 256;
	for (size_t i = 0; i < n; i++)
		len += (size_t)point_column(d, m[i], NULL, 0) + 2;
	char *sql = malloc(len);
	sqlite3_stmt *st = NULL;
	int rc, used;
	if (!sql) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	used = snprintf(sql, len, "SELECT ");
	for (size_t i = 0; i < n; i++) {
		used += snprintf(sql + used, len - (size_t)used, "%s", i ? ", " : "");
		used += point_column(d, m[i], sql + used, len - (size_t)used);
	}
	snprintf(sql + used, len - (size_t)used,
	         " FROM run_config c JOIN runs r ON r.run_id = c.run_id JOIN run_metrics m ON m.run_id = c.run_id"
	         " WHERE c.key = '" SWEEP_POINT_KEY "' AND c.value = ?1 ORDER BY c.run_id LIMIT 1");
	rc = sqlite3_prepare_v2(d->db, sql, -1, &st, NULL);
	free(sql);
	if (rc != SQLITE_OK)
		goto sql_fail;
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		for (size_t i = 0; i < n; i++)   /* NULL (not recorded, or the run has none): NaN, left out */
			vals[i] = sqlite3_column_type(st, (int)i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, (int)i);
		sqlite3_finalize(st);
		return 1;
	}
	if (rc != SQLITE_DONE)
		goto sql_fail;
	sqlite3_finalize(st);
	return 0;
sql_fail:
	snprintf(err, errlen, "cannot read results database '%s': %s", d->path, err_sqlite_msg(d->db));
	sqlite3_finalize(st);
	return -1;
}
