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

static const struct sweep_metric sweep_metric_table[] = {
	{ "mean_ms", "m.mean_ms", "mean latency, ms" },
	{ "p50_ms", "m.p50_ms", "median latency, ms" },
	{ "p90_ms", "m.p90_ms", "90th percentile latency, ms" },
	{ "p95_ms", "m.p95_ms", "95th percentile latency, ms" },
	{ "p99_ms", "m.p99_ms", "99th percentile latency, ms" },
	{ "p999_ms", "m.p999_ms", "99.9th percentile latency, ms" },
	{ "max_ms", "m.max_ms", "largest latency, ms" },
	{ "queue_mean_ms", "m.queue_mean_ms", "mean queueing time, ms" },
	{ "queue_p99_ms", "m.queue_p99_ms", "99th percentile queueing time, ms" },
	{ "sla_violation_rate", "m.sla_violation_rate", "fraction of requests over the SLA" },
	{ "throughput_rps", "r.throughput_rps", "completed requests per second" },
	{ "mean_batch", "r.mean_batch", "requests per task" },
	{ "saturated", "r.saturated", "1 when the run was saturated (its queue grew throughout), 0 when not" },
	/* an LLM run's token figures, stored in run_stats (a node-level run has none: NULL, left out) */
#define SWEEP_STAT(key) "(SELECT s.value FROM run_stats s WHERE s.run_id = r.run_id AND s.key = '" key "')"
	{ "ttft_mean_ms", SWEEP_STAT("ttft_ms.mean"), "LLM: mean time to first token, ms" },
	{ "ttft_p50_ms", SWEEP_STAT("ttft_ms.p50"), "LLM: median time to first token, ms" },
	{ "ttft_p90_ms", SWEEP_STAT("ttft_ms.p90"), "LLM: 90th percentile time to first token, ms" },
	{ "ttft_p99_ms", SWEEP_STAT("ttft_ms.p99"), "LLM: 99th percentile time to first token, ms" },
	{ "tpot_mean_ms", SWEEP_STAT("tpot_ms.mean"), "LLM: mean time per output token, ms" },
	{ "tpot_p50_ms", SWEEP_STAT("tpot_ms.p50"), "LLM: median time per output token, ms" },
	{ "tpot_p90_ms", SWEEP_STAT("tpot_ms.p90"), "LLM: 90th percentile time per output token, ms" },
	{ "tpot_p99_ms", SWEEP_STAT("tpot_ms.p99"), "LLM: 99th percentile time per output token, ms" },
	{ "itl_p50_ms", SWEEP_STAT("itl_ms.p50"), "LLM: median gap between tokens, ms" },
	{ "itl_p99_ms", SWEEP_STAT("itl_ms.p99"), "LLM: 99th percentile gap between tokens, ms" },
	{ "goodput_rps", SWEEP_STAT("goodput_rps"), "LLM: requests a second meeting both SLOs" },
	{ "slo_attainment", SWEEP_STAT("slo_attainment"), "LLM: fraction of requests meeting both SLOs" },
	{ "kv_mean_fraction", SWEEP_STAT("kv_mean_fraction"), "LLM: the KV cache's occupancy averaged over time" },
#undef SWEEP_STAT
};

const struct sweep_metric *sweep_metrics(size_t *n)
{
	*n = sizeof sweep_metric_table / sizeof sweep_metric_table[0];
	return sweep_metric_table;
}

const struct sweep_metric *sweep_metric_find(const char *name)
{
	size_t n;
	const struct sweep_metric *m = sweep_metrics(&n);
	for (size_t i = 0; i < n; i++)
		if (strcmp(m[i].name, name) == 0)
			return &m[i];
	return NULL;
}

struct sweep_db {
	sqlite3 *db;                 /* owned */
	char *path;                  /* owned, for messages */
	sqlite3_stmt *has;           /* owned: is a point stored */
	int has_saturated;           /* runs.saturated exists (schema 2; a version-1 file read as it is lacks it) */
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

int sweep_db_point_metrics(struct sweep_db *d, const char *key, const struct sweep_metric *const *m,
                           size_t n, double *vals, char *err, size_t errlen)
{
	/* column expressions come from the constant metric table, never from input */
	size_t len = 256;
	for (size_t i = 0; i < n; i++)
		len += strlen(m[i]->column) + 2;
	char *sql = malloc(len);
	sqlite3_stmt *st = NULL;
	int rc, used;
	if (!sql) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	used = snprintf(sql, len, "SELECT ");
	for (size_t i = 0; i < n; i++)
		used += snprintf(sql + used, len - (size_t)used, "%s%s", i ? ", " : "",
		                 !d->has_saturated && strcmp(m[i]->column, "r.saturated") == 0 ? "NULL" : m[i]->column);
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
		for (size_t i = 0; i < n; i++)   /* NULL (saturation not recorded): NaN, left out of the statistics */
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
