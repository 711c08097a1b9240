/* sim/store/results_write.c: storing one run (results.h results_write_run):
 * its row, options, statistics, CDFs and requests in one IMMEDIATE
 * transaction, from the statements results_open prepared. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "results.h"
#include "../../util/errkind.h"
#include "results_db.h"

/* Steps an INSERT and resets it for the next row; 0 or -1 with err. */
static int step_insert(struct results_db *r, sqlite3_stmt *st, char *err, size_t errlen)
{
	int rc = sqlite3_step(st);
	if (rc != SQLITE_DONE) {
		results_set_err(err, errlen, "cannot write run to results database '%s': %s", r->path,
		        err_sqlite_msg(r->db));
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
			results_set_err(err, errlen, "a CDF decreases at point %d (%.17g after %.17g ms): not stored (a bug of "
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

/* Stores n (name, value) rows of run id with st (run_stats, run_metric_values): 0, or -1 with err. */
static int insert_named(struct results_db *db, sqlite3_stmt *st, sqlite3_int64 id, const struct results_stat *rows,
                        size_t n, char *err, size_t errlen)
{
	sqlite3_bind_int64(st, 1, id);
	for (size_t i = 0; i < n; i++) {
		bind_text(st, 2, rows[i].key);
		sqlite3_bind_double(st, 3, rows[i].value);
		if (step_insert(db, st, err, errlen) < 0)
			return -1;
	}
	return 0;
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
	results_set_err(err, errlen, "cannot write run to results database '%s': %s", db->path, err_sqlite_msg(db->db));
	return -1;
}

int results_write_run(struct results_db *db, const struct results_run *run, int64_t *run_id,
                      char *err, size_t errlen)
{
	*run_id = 0;
	if (!run->summary) {
		results_set_err(err, errlen, "cannot write run to results database '%s': run has no metrics summary",
		        db->path);
		return -1;
	}
	if (sqlite3_exec(db->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		results_set_err(err, errlen, "cannot write run to results database '%s': %s", db->path,
		        err_sqlite_msg(db->db));
		return -1;
	}
	if (run->once_key) {
		int found = find_once(db, run, run_id, err, errlen);
		if (found != 0) {
			results_rollback(db->db);
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
	sqlite3_bind_int(st, 17, run->overloaded);
	if (run->overloaded) {                 /* else NULL: no window */
		sqlite3_bind_double(st, 18, run->overload_start_s);
		sqlite3_bind_double(st, 19, run->overload_end_s);
	}
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

	if (insert_named(db, db->ins_stat, id, run->stats, run->nstats, err, errlen) < 0 ||
	    insert_named(db, db->ins_value, id, run->metric_values, run->nmetric_values, err, errlen) < 0)
		goto fail;

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
		results_set_err(err, errlen, "cannot write run to results database '%s': %s", db->path,
		        err_sqlite_msg(db->db));
		goto fail;
	}
	*run_id = id;
	return 0;
fail:
	results_rollback(db->db);
	return -1;
}

int results_end_write(struct results_db *db, sqlite3_stmt *st, int ok, const char *what, char *err, size_t errlen)
{
	sqlite3_finalize(st);
	if (ok && sqlite3_exec(db->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK)
		return 0;
	results_set_err(err, errlen, "cannot write %s to results database '%s': %s", what, db->path,
	                err_sqlite_msg(db->db));
	results_rollback(db->db);
	return -1;
}
