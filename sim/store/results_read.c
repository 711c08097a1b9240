/* sim/store/results_read.c: reading runs back (results.h): a run's
 * statistics, options, CDFs and description, and runs found by their
 * stored options. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "results.h"
#include "../../util/errkind.h"
#include "results_db.h"

/* A statement that failed: the database's message in err (before anything
 * else can replace it), st finalized; -1. */
static int read_failed(struct results_db *db, sqlite3_stmt *st, char *err, size_t errlen)
{
	results_set_err(err, errlen, "cannot read results database '%s': %s", db->path, err_sqlite_msg(db->db));
	sqlite3_finalize(st);
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
	return read_failed(db, st, err, errlen);
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
	return read_failed(db, st, err, errlen);
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
		results_set_err(err, errlen, "run %lld in %s has no %s CDF (stored before schema version 3)", (long long)run_id,
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
			results_set_err(err, errlen, "no run %lld in %s", (long long)run_id, db->path);
			return -1;
		}
		if (!latency) {
			results_set_err(err, errlen, "run %lld in %s has no %s CDF (not an LLM run%s)", (long long)run_id, db->path,
			        metric, strcmp(metric, "ttft") ? ", or no request of two or more tokens" : "");
			return -1;
		}
	}
	if (malformed || n != METRICS_CDF_POINTS) {
		results_set_err(err, errlen, "run %lld in %s has a malformed %s CDF (%d points, expected %d)",
		        (long long)run_id, db->path, metric, n, METRICS_CDF_POINTS);
		return -1;
	}
	memcpy(cdf_ms, v, sizeof(v));
	return 0;
sql_fail:
	return read_failed(db, st, err, errlen);
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
		results_set_err(err, errlen, "no run %lld in %s", (long long)run_id, db->path);
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
	return read_failed(db, st, err, errlen);
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
		results_set_err(err, errlen, "no run in %s matches '%s'", db->path, selector);
		return -1;
	}
	return 0;
malformed:
	results_set_err(err, errlen, "run selector '%s': expected a run id or key=value[,key=value...]", selector);
	return -1;
sql_fail:
	read_failed(db, runs, err, errlen);
	sqlite3_finalize(cfg);
	ids[0] = 0;
	*nmatch = 0;
	return -1;
}
