/* tests/test_results.c: sim/results.c. Runs are written through the module
 * and read back with the plain SQLite API, field by field; files that are not
 * ours, of another schema version or not writable are refused with their
 * message and left untouched; a write that fails midway leaves no trace; two
 * processes writing one file both land; a connection kept open between runs
 * (results_keep_open) serves only the file it opened.
 */
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "sim/store/results.h"
#include "sim/store/metric_names.h"

static char tmpdir[64];

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb; (void)flag; (void)ftw;
	return remove(path);
}

static int group_setup(void **state)
{
	(void)state;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_results_XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	return nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void tmp_path(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

/* distinct, non-round values so a swapped column shows */
static void fill_summary(struct metrics_summary *s, double k)
{
	memset(s, 0, sizeof(*s));
	s->count = 19997;
	s->mean_ms = 12.5 * k;
	s->p50_ms = 10.25 * k;
	s->p90_ms = 20.125 * k;
	s->p95_ms = 25.0625 * k;
	s->p99_ms = 40.03125 * k;
	s->p999_ms = 70.015625 * k;
	s->max_ms = 99.1 * k;
	s->min_ms = 0.3 * k;
	s->queue_mean_ms = 1.7 * k;
	s->queue_p99_ms = 9.9 * k;
	s->sla_violation_rate = 0.0123;
	for (int i = 0; i < METRICS_CDF_POINTS; i++)
		s->cdf_ms[i] = k * (0.3 + sqrt((double)i) * 3.1);
}

static const struct results_kv test_config[] = {
	{"policy", "lazy"}, {"rate", "1000.5"}, {"max-batch", "64"}, {"trace", NULL},
};

static void fill_run(struct results_run *r, const struct metrics_summary *s,
                     const struct drv_request_row *rows, size_t nrows)
{
	memset(r, 0, sizeof(*r));
	r->policy = "lazy";
	r->model = "transformer";
	r->hw = "npu";
	r->rate_rps = 1000.5;
	r->seed = 42;
	r->sla_ms = 100;
	r->requests = 20000;
	r->completed = 19997;
	r->throughput_rps = 998.25;
	r->mean_batch = 7.375;
	r->events = 123456789012ull;
	r->wall_s = 1.5;
	r->live = 0;
	r->code_version = "v0.1-3-gabcdef";
	r->summary_json = "{\"policy\":\"lazy\",\"p99\":40.03}";
	r->summary = s;
	r->nconfig = sizeof(test_config) / sizeof(test_config[0]);
	r->config = test_config;
	r->nrequest_rows = nrows;
	r->request_rows = rows;
}

static sqlite3 *open_plain(const char *path)
{
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
	return db;
}

static int64_t count_rows(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void assert_text(sqlite3_stmt *st, int col, const char *want)
{
	const char *got = (const char *)sqlite3_column_text(st, col);
	if (!want) {
		assert_int_equal(sqlite3_column_type(st, col), SQLITE_NULL);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
}

static void assert_real(sqlite3_stmt *st, int col, double want)
{
	assert_int_equal(sqlite3_column_type(st, col), SQLITE_FLOAT);
	assert_true(sqlite3_column_double(st, col) == want);
}

static void check_run_rows(sqlite3 *db, int64_t id, const struct results_run *r)
{
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT created_utc, code_version, live, policy, model, hw, rate_rps, seed, sla_ms,"
		" requests, completed, throughput_rps, mean_batch, events, wall_s, summary_json, saturated"
		" FROM runs WHERE run_id = ?1", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	/* ISO 8601 UTC, e.g. 2025-01-31T12:34:56.789Z */
	const char *ts = (const char *)sqlite3_column_text(st, 0);
	assert_non_null(ts);
	assert_int_equal(strlen(ts), 24);
	assert_true(ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[13] == ':' && ts[16] == ':' &&
	            ts[19] == '.' && ts[23] == 'Z');
	assert_text(st, 1, r->code_version);
	assert_int_equal(sqlite3_column_int(st, 2), r->live);
	assert_int_equal(sqlite3_column_int(st, 16), r->saturated);
	assert_text(st, 3, r->policy);
	assert_text(st, 4, r->model);
	assert_text(st, 5, r->hw);
	assert_real(st, 6, r->rate_rps);
	assert_true((uint64_t)sqlite3_column_int64(st, 7) == r->seed);
	assert_real(st, 8, r->sla_ms);
	assert_true((uint64_t)sqlite3_column_int64(st, 9) == r->requests);
	assert_true((uint64_t)sqlite3_column_int64(st, 10) == r->completed);
	assert_real(st, 11, r->throughput_rps);
	assert_real(st, 12, r->mean_batch);
	assert_true((uint64_t)sqlite3_column_int64(st, 13) == r->events);
	assert_real(st, 14, r->wall_s);
	assert_text(st, 15, r->summary_json);
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);

	assert_int_equal(sqlite3_prepare_v2(db, "SELECT key, value FROM run_config WHERE run_id = ?1 AND key = ?2",
	                                    -1, &st, NULL), SQLITE_OK);
	for (size_t i = 0; i < r->nconfig; i++) {
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_text(st, 2, r->config[i].key, -1, SQLITE_STATIC);
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_text(st, 1, r->config[i].value);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);

	const struct metrics_summary *s = r->summary;
	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT count, mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, min_ms,"
		" queue_mean_ms, queue_p99_ms, sla_violation_rate FROM run_metrics WHERE run_id = ?1",
		-1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_true((uint64_t)sqlite3_column_int64(st, 0) == s->count);
	const double mv[] = {s->mean_ms, s->p50_ms, s->p90_ms, s->p95_ms, s->p99_ms, s->p999_ms,
	                     s->max_ms, s->min_ms, s->queue_mean_ms, s->queue_p99_ms, s->sla_violation_rate};
	for (int i = 0; i < 11; i++)
		assert_real(st, 1 + i, mv[i]);
	sqlite3_finalize(st);

	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT quantile, latency_ms FROM run_cdf WHERE run_id = ?1 ORDER BY quantile", -1, &st, NULL),
		SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	for (int i = 0; i < METRICS_CDF_POINTS; i++) {
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_true(fabs(sqlite3_column_double(st, 0) - (i + 1) / 1000.0) < 1e-15);
		assert_real(st, 1, s->cdf_ms[i]);
	}
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);

	assert_int_equal(sqlite3_prepare_v2(db,
		"SELECT id, arrival_s, start_s, finish_s, input_len, output_len, first_token_s FROM run_requests"
		" WHERE run_id = ?1 ORDER BY id", -1, &st, NULL), SQLITE_OK);
	sqlite3_bind_int64(st, 1, id);
	for (size_t i = 0; i < r->nrequest_rows; i++) {
		const struct drv_request_row *q = &r->request_rows[i];
		assert_int_equal(sqlite3_step(st), SQLITE_ROW);
		assert_true((uint64_t)sqlite3_column_int64(st, 0) == q->id);
		assert_real(st, 1, q->arrival_s);
		assert_real(st, 2, q->start_s);
		assert_real(st, 3, q->finish_s);
		assert_int_equal(sqlite3_column_int64(st, 4), q->input_len);
		assert_int_equal(sqlite3_column_int64(st, 5), q->output_len);
		if (q->first_token_s < 0)
			assert_int_equal(sqlite3_column_type(st, 6), SQLITE_NULL);
		else
			assert_real(st, 6, q->first_token_s);
	}
	assert_int_equal(sqlite3_step(st), SQLITE_DONE);
	sqlite3_finalize(st);
}

static void make_rows(struct drv_request_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		rows[i].id = i;
		rows[i].arrival_s = 0.001 * (double)i;
		rows[i].start_s = rows[i].arrival_s + 0.0005;
		rows[i].finish_s = rows[i].start_s + 0.0123 + 1e-6 * (double)i;
		rows[i].input_len = (uint32_t)(5 + i % 17);
		rows[i].output_len = (uint32_t)(i % 3 == 0 ? 0 : 4000000000u - i);
		rows[i].first_token_s = i % 2 ? rows[i].start_s + 0.00025 : -1;   /* -1: not an LLM request */
	}
}

static void test_create_write_read(void **state)
{
	(void)state;
	char path[128], err[256];
	tmp_path(path, sizeof(path), "fresh.db");
	struct results_db *db = NULL;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	assert_non_null(db);

	struct metrics_summary s1, s2;
	fill_summary(&s1, 1.0);
	fill_summary(&s2, 2.0);
	struct drv_request_row rows[5];
	make_rows(rows, 5);
	struct results_run r1, r2;
	fill_run(&r1, &s1, rows, 5);
	fill_run(&r2, &s2, NULL, 0);
	r2.seed = 18446744073709551557ull;   /* above INT64_MAX: kept as its bit pattern */
	r2.live = 1;
	r2.saturated = 1;
	r2.code_version = NULL;
	double ttft[METRICS_CDF_POINTS], tpot[METRICS_CDF_POINTS];
	for (int i = 0; i < METRICS_CDF_POINTS; i++) {
		ttft[i] = 0.125 * i;
		tpot[i] = 3.0 + 0.5 * i;
	}
	r2.token_cdf_ms[0] = ttft;
	r2.token_cdf_ms[1] = tpot;   /* no inter-token gaps: no itl rows */
	int64_t id1 = 0, id2 = 0;
	assert_int_equal(results_write_run(db, &r1, &id1, err, sizeof(err)), 0);
	assert_int_equal(results_write_run(db, &r2, &id2, err, sizeof(err)), 0);
	assert_true(id1 > 0);
	assert_true(id2 > id1);

	double cdf[METRICS_CDF_POINTS];
	assert_int_equal(results_read_cdf(db, id2, cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, s2.cdf_ms, sizeof(cdf));
	assert_int_equal(results_read_cdf(db, 999, cdf, err, sizeof(err)), -1);
	char want[256];
	snprintf(want, sizeof(want), "no run 999 in %s", path);
	assert_string_equal(err, want);
	assert_int_equal(results_read_metric_cdf(db, id2, "latency", cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, s2.cdf_ms, sizeof(cdf));
	assert_int_equal(results_read_metric_cdf(db, id2, "ttft", cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, ttft, sizeof(cdf));
	assert_int_equal(results_read_metric_cdf(db, id2, "tpot", cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, tpot, sizeof(cdf));
	assert_int_equal(results_read_metric_cdf(db, id2, "itl", cdf, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "run %lld in %s has no itl CDF (not an LLM run, or no request of two or more tokens)",
	         (long long)id2, path);
	assert_string_equal(err, want);
	assert_int_equal(results_read_metric_cdf(db, id1, "ttft", cdf, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "run %lld in %s has no ttft CDF (not an LLM run)", (long long)id1, path);
	assert_string_equal(err, want);
	assert_int_equal(results_read_metric_cdf(db, 999, "ttft", cdf, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "no run 999 in %s", path);
	assert_string_equal(err, want);

	sqlite3 *plain = open_plain(path);
	check_run_rows(plain, id1, &r1);
	check_run_rows(plain, id2, &r2);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 2);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_cdf"), 2000);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_config"), 8);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_requests"), 5);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_token_cdf"), 2000);
	assert_int_equal(count_rows(plain,
		"SELECT count(*) FROM simbatch_meta WHERE (key = 'application' AND value = 'simbatch')"
		" OR (key = 'schema_version' AND value = '7' AND typeof(value) = 'text')"), 2);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(plain, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "wal");
	sqlite3_finalize(st);
	sqlite3_close(plain);
	results_close(db);

	/* reopening accepts the file and keeps numbering */
	db = NULL;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	int64_t id3 = 0;
	assert_int_equal(results_write_run(db, &r1, &id3, err, sizeof(err)), 0);
	assert_true(id3 > id2);
	assert_int_equal(results_read_cdf(db, id1, cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, s1.cdf_ms, sizeof(cdf));
	results_close(db);
}

/* results_keep_open: a closed database comes back to the next open of the
 * same file, and only of the same file: one removed or replaced meanwhile is
 * opened anew, and another path closes the kept one. */
static void test_kept_open(void **state)
{
	(void)state;
	char a[128], b[128], err[256];
	tmp_path(a, sizeof(a), "kept-a.db");
	tmp_path(b, sizeof(b), "kept-b.db");
	struct metrics_summary s;
	fill_summary(&s, 3.0);
	struct results_run r;
	fill_run(&r, &s, NULL, 0);
	int64_t id = 0;
	struct results_db *db = NULL, *again = NULL;

	results_keep_open(1);
	assert_int_equal(results_open(a, &db, err, sizeof(err)), 0);
	assert_int_equal(results_write_run(db, &r, &id, err, sizeof(err)), 0);
	results_close(db);
	assert_int_equal(results_open(a, &again, err, sizeof(err)), 0);
	assert_ptr_equal(again, db);                 /* the same connection, not reopened */
	assert_int_equal(results_write_run(again, &r, &id, err, sizeof(err)), 0);
	results_close(again);
	sqlite3 *plain = open_plain(a);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 2);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_cdf"), 2000);
	sqlite3_close(plain);

	/* removed behind its back (the kept connection still holds the old file,
	 * so its inode cannot come back): an empty file put at its name is a new
	 * database, which gets what is written next */
	char side[160];
	for (int i = 0; i < 3; i++) {
		snprintf(side, sizeof(side), "%s%s", a, (const char *[]){ "", "-wal", "-shm" }[i]);
		unlink(side);
	}
	FILE *f = fopen(a, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(results_open(a, &db, err, sizeof(err)), 0);
	assert_int_equal(results_write_run(db, &r, &id, err, sizeof(err)), 0);
	results_close(db);
	plain = open_plain(a);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 1);
	sqlite3_close(plain);

	/* another path closes the kept one and opens its own; results_remove
	 * closes a kept connection before removing its file */
	assert_int_equal(results_open(b, &db, err, sizeof(err)), 0);
	assert_ptr_not_equal(db, NULL);
	results_close(db);
	results_remove(b);
	assert_int_equal(access(b, F_OK), -1);
	assert_int_equal(results_open(b, &again, err, sizeof(err)), 0);
	assert_int_equal(results_write_run(again, &r, &id, err, sizeof(err)), 0);
	results_keep_open(0);                        /* closes the kept one too */
	results_close(again);                        /* not kept any more: closed */
	plain = open_plain(b);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 1);
	sqlite3_close(plain);
}

static void test_empty_file_accepted(void **state)
{
	(void)state;
	char path[128], err[256];
	tmp_path(path, sizeof(path), "empty.db");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	struct results_db *db = NULL;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	results_close(db);
	sqlite3 *plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
	                                   " AND name IN ('simbatch_meta', 'runs', 'run_config', 'run_metrics',"
	                                   " 'run_cdf', 'run_requests')"), 6);
	sqlite3_close(plain);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	char *buf = malloc(1 << 16);
	assert_non_null(buf);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

static void expect_refused(const char *path, const char *want_err)
{
	char err[512];
	struct results_db *db = (struct results_db *)&err;   /* must come back NULL */
	assert_int_equal(results_open(path, &db, err, sizeof(err)), -1);
	assert_null(db);
	assert_string_equal(err, want_err);
}

static void test_not_a_database_refused(void **state)
{
	(void)state;
	char path[128], want[256];
	tmp_path(path, sizeof(path), "notes.txt");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 0; i < 40; i++)
		fprintf(f, "line %d of a text file that is certainly not SQLite\n", i);
	fclose(f);
	size_t len0, len1;
	char *before = slurp(path, &len0);
	snprintf(want, sizeof(want), "'%s' is not a simbatch results database", path);
	expect_refused(path, want);
	char *after = slurp(path, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(before, after, len0);
	free(before);
	free(after);
}

static void test_foreign_database_refused(void **state)
{
	(void)state;
	char path[128], want[256];
	tmp_path(path, sizeof(path), "foreign.db");
	sqlite3 *plain = NULL;
	assert_int_equal(sqlite3_open(path, &plain), SQLITE_OK);
	assert_int_equal(sqlite3_exec(plain, "CREATE TABLE x(a INTEGER); INSERT INTO x VALUES(7)", NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(plain);
	snprintf(want, sizeof(want), "'%s' is not a simbatch results database", path);
	expect_refused(path, want);

	/* untouched: still one table, still in the default rollback-journal mode */
	plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM sqlite_master"), 1);
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_prepare_v2(plain, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "delete");
	sqlite3_finalize(st);

	/* a simbatch_meta table that names another application is just as foreign */
	assert_int_equal(sqlite3_exec(plain, "CREATE TABLE simbatch_meta(key TEXT PRIMARY KEY, value TEXT);"
	                                     "INSERT INTO simbatch_meta VALUES('application', 'other'),"
	                                     "('schema_version', '1')", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(plain);
	expect_refused(path, want);
}

static void test_wrong_schema_version_refused(void **state)
{
	(void)state;
	char path[128], want[256], err[256], sql[128];
	tmp_path(path, sizeof(path), "newer.db");
	struct results_db *db = NULL;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	results_close(db);
	sqlite3 *plain = open_plain(path);
	snprintf(sql, sizeof sql, "UPDATE simbatch_meta SET value = '%d' WHERE key = 'schema_version'",
	         RESULTS_SCHEMA_VERSION + 1);
	assert_int_equal(sqlite3_exec(plain, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(plain);
	snprintf(want, sizeof(want), "results database '%s' has schema version %d; this simbatch writes version %d",
	         path, RESULTS_SCHEMA_VERSION + 1, RESULTS_SCHEMA_VERSION);
	expect_refused(path, want);
}

/* Turns a file written now back into what schema version v wrote. */
static void downgrade(const char *path, int v)
{
	sqlite3 *plain = open_plain(path);
	assert_int_equal(sqlite3_exec(plain, "DROP TABLE capacity_probes; DROP TABLE capacities;"
	                              "UPDATE simbatch_meta SET value = '6' WHERE key = 'schema_version'",
	                              NULL, NULL, NULL), SQLITE_OK);
	if (v <= 5)
		assert_int_equal(sqlite3_exec(plain, "DROP TABLE run_metric_values; DROP TABLE metric_names;"
		                              "UPDATE simbatch_meta SET value = '5' WHERE key = 'schema_version'",
		                              NULL, NULL, NULL), SQLITE_OK);
	if (v <= 4)
		assert_int_equal(sqlite3_exec(plain, "ALTER TABLE runs DROP COLUMN overloaded; ALTER TABLE runs DROP COLUMN "
		                              "overload_start_s; ALTER TABLE runs DROP COLUMN overload_end_s;"
		                              "UPDATE simbatch_meta SET value = '4' WHERE key = 'schema_version'",
		                              NULL, NULL, NULL), SQLITE_OK);
	if (v <= 3)
		assert_int_equal(sqlite3_exec(plain, "DROP TABLE search_configs; DROP TABLE searches;"
		                              "UPDATE simbatch_meta SET value = '3' WHERE key = 'schema_version'",
		                              NULL, NULL, NULL), SQLITE_OK);
	if (v <= 2)
		assert_int_equal(sqlite3_exec(plain, "DROP TABLE run_token_cdf; ALTER TABLE run_requests DROP COLUMN "
		                              "first_token_s; UPDATE simbatch_meta SET value = '2' WHERE key = 'schema_version'",
		                              NULL, NULL, NULL), SQLITE_OK);
	if (v == 1)
		assert_int_equal(sqlite3_exec(plain, "ALTER TABLE runs DROP COLUMN saturated;"
		                              "UPDATE simbatch_meta SET value = '1' WHERE key = 'schema_version'",
		                              NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(plain);
}

/* A version-1 file (no runs.saturated), version-2 file (no token CDFs, no
 * first_token_s), version-3 file (no configuration searches), version-4
 * file (no overload window) or version-5 or -6 file (no capacity answers) is
 * read as it is and upgraded in place when opened for writing: its runs keep
 * NULL and no token CDF, new runs have theirs, and the search and capacity
 * tables are made. */
static void check_upgrade_from(int v)
{
	char path[128], err[256], want[256], name[16];
	snprintf(name, sizeof name, "v%d.db", v);
	tmp_path(path, sizeof(path), name);
	struct results_db *db = NULL;
	struct metrics_summary s1;
	fill_summary(&s1, 1.0);
	struct drv_request_row rows[3];
	make_rows(rows, 3);
	struct results_run r1;
	fill_run(&r1, &s1, rows, 3);
	int64_t id1 = 0, id2 = 0;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	assert_int_equal(results_write_run(db, &r1, &id1, err, sizeof(err)), 0);
	results_close(db);
	downgrade(path, v);
	struct results_run_info info;
	double cdf[METRICS_CDF_POINTS];
	assert_int_equal(results_open_readonly(path, &db, err, sizeof(err)), 0);
	assert_int_equal(results_read_run_info(db, id1, &info, err, sizeof(err)), 0);
	assert_int_equal(info.saturated, v == 1 ? -1 : 0);
	assert_int_equal(results_read_cdf(db, id1, cdf, err, sizeof(err)), 0);
	if (v < 3) {
		assert_int_equal(results_read_metric_cdf(db, id1, "ttft", cdf, err, sizeof(err)), -1);
		snprintf(want, sizeof(want), "run %lld in %s has no ttft CDF (stored before schema version 3)", (long long)id1,
		         path);
		assert_string_equal(err, want);
	}
	results_close(db);
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	r1.saturated = 1;
	r1.overloaded = 1;
	r1.overload_start_s = 12.5;
	r1.overload_end_s = 40.25;
	r1.token_cdf_ms[2] = s1.cdf_ms;
	const struct results_stat values[] = { { "output_tokens_per_s", 1234.5 }, { "latency_ms.p99", s1.p99_ms } };
	r1.metric_values = values;
	r1.nmetric_values = 2;
	assert_int_equal(results_write_run(db, &r1, &id2, err, sizeof(err)), 0);
	assert_int_equal(results_read_metric_cdf(db, id2, "itl", cdf, err, sizeof(err)), 0);
	assert_memory_equal(cdf, s1.cdf_ms, sizeof(cdf));
	results_close(db);
	sqlite3 *plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM simbatch_meta WHERE key = 'schema_version' AND value = '7'"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
	                                   "('capacities', 'capacity_probes')"), 2);
	char sql[256];
	if (v <= 5) {
		/* the run stored before 6 has its metrics under their names: run_metrics' 10 (7 latencies, 2 queueing, the SLA
		 * violation rate), runs' throughput and mean batch, and its saturation where stored (not before 2); the new
		 * run has the 2 it gave */
		snprintf(sql, sizeof sql, "SELECT count(*) FROM run_metric_values WHERE run_id = %lld", (long long)id1);
		assert_int_equal(count_rows(plain, sql), v == 1 ? 12 : 13);
		assert_int_equal(count_rows(plain, "SELECT count(*) FROM metric_names"), METRIC_COUNT);
		snprintf(sql, sizeof sql, "SELECT count(*) FROM run_metric_values v, run_metrics m WHERE v.run_id = %lld AND "
		         "m.run_id = v.run_id AND v.metric = 'latency_ms.p99' AND v.value = m.p99_ms AND m.p99_ms = %.17g",
		         (long long)id1, s1.p99_ms);
		assert_int_equal(count_rows(plain, sql), 1);
		snprintf(sql, sizeof sql, "SELECT count(*) FROM run_metric_values WHERE run_id = %lld AND metric = "
		         "'throughput_rps' AND value = 998.25", (long long)id1);
		assert_int_equal(count_rows(plain, sql), 1);
		snprintf(sql, sizeof sql, "SELECT count(*) FROM run_metric_values WHERE run_id = %lld AND ((metric = "
		         "'output_tokens_per_s' AND value = 1234.5) OR metric = 'latency_ms.p99')", (long long)id2);
		assert_int_equal(count_rows(plain, sql), 2);
	}
	/* the run stored before version 5 was not judged (NULL); the new one keeps its window */
	assert_int_equal(count_rows(plain, v < 5 ? "SELECT count(*) FROM runs WHERE overloaded IS NULL"
	                                         : "SELECT count(*) FROM runs WHERE overloaded = 0"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs WHERE overloaded = 1 AND overload_start_s = 12.5 "
	                                   "AND overload_end_s = 40.25"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
	                                   "('searches', 'search_configs')"), 2);
	assert_int_equal(count_rows(plain, v == 1 ? "SELECT count(*) FROM runs WHERE saturated IS NULL"
	                                          : "SELECT count(*) FROM runs WHERE saturated = 0"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs WHERE saturated = 1"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_token_cdf"), 1000);
	/* before 3 the stored rows lost first_token_s with the downgrade; the new run's odd rows have theirs */
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_requests WHERE first_token_s IS NULL"), v < 3 ? 5 : 4);
	sqlite3_close(plain);
}

static void test_older_versions_upgraded(void **state)
{
	(void)state;
	check_upgrade_from(1);
	check_upgrade_from(2);
	check_upgrade_from(3);
	check_upgrade_from(4);
	check_upgrade_from(5);
	check_upgrade_from(6);
}

static void test_unwritable_refused(void **state)
{
	(void)state;
	char path[128], want[256], err[512];
	tmp_path(path, sizeof(path), "no/such/dir/r.db");
	struct results_db *db = (struct results_db *)&err;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), -1);
	assert_null(db);
	snprintf(want, sizeof(want), "cannot open results database '%s': ", path);
	assert_memory_equal(err, want, strlen(want));
	assert_true(strlen(err) > strlen(want));
	struct stat sb;
	assert_int_equal(stat(path, &sb), -1);

	if (geteuid() == 0)
		return;   /* root writes through mode 0444: the missing directory above stands in */
	tmp_path(path, sizeof(path), "readonly.db");
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	results_close(db);
	char side[160];
	snprintf(side, sizeof(side), "%s-wal", path);   /* a clean close removes it; be sure */
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	assert_int_equal(chmod(path, 0444), 0);
	snprintf(want, sizeof(want), "results database '%s' is not writable: ", path);
	db = (struct results_db *)&err;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), -1);
	assert_null(db);
	assert_memory_equal(err, want, strlen(want));
	chmod(path, 0644);
}

static void test_failed_write_rolls_back(void **state)
{
	(void)state;
	char path[128], err[256];
	tmp_path(path, sizeof(path), "rollback.db");
	struct results_db *db = NULL;
	assert_int_equal(results_open(path, &db, err, sizeof(err)), 0);
	struct metrics_summary s;
	fill_summary(&s, 1.0);
	struct drv_request_row rows[50];
	make_rows(rows, 50);
	struct results_run good, bad;
	fill_run(&good, &s, rows, 10);
	int64_t id1 = 0, id_bad = 77, id2 = 0;
	assert_int_equal(results_write_run(db, &good, &id1, err, sizeof(err)), 0);

	/* rows 0..49 with row 40 repeating id 39: fails after the run, config,
	 * metrics, CDF and 40 request rows are in */
	rows[40].id = 39;
	fill_run(&bad, &s, rows, 50);
	assert_int_equal(results_write_run(db, &bad, &id_bad, err, sizeof(err)), -1);
	assert_int_equal(id_bad, 0);
	assert_non_null(strstr(err, "UNIQUE constraint failed"));

	sqlite3 *plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_config"), 4);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_metrics"), 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_cdf"), 1000);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_requests"), 10);

	/* the connection is usable afterwards, and the failed run used up no id */
	assert_int_equal(results_write_run(db, &good, &id2, err, sizeof(err)), 0);
	assert_int_equal(id2, id1 + 1);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 2);
	sqlite3_close(plain);

	/* a duplicated option key is refused the same way */
	const struct results_kv dup[] = {{"seed", "1"}, {"seed", "2"}};
	fill_run(&bad, &s, NULL, 0);
	bad.config = dup;
	bad.nconfig = 2;
	assert_int_equal(results_write_run(db, &bad, &id_bad, err, sizeof(err)), -1);
	results_close(db);
	plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM runs"), 2);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_cdf"), 2000);
	sqlite3_close(plain);
}

/* two processes open one new file at once and write runs interleaved */
static void test_two_writers(void **state)
{
	(void)state;
	char path[128];
	tmp_path(path, sizeof(path), "shared.db");
	enum { WRITERS = 2, RUNS = 8 };
	pid_t pid[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		pid[w] = fork();
		assert_true(pid[w] >= 0);
		if (pid[w] == 0) {
			char err[256];
			struct results_db *db = NULL;
			struct metrics_summary s;
			fill_summary(&s, 1.0 + w);
			struct results_run r;
			fill_run(&r, &s, NULL, 0);
			int bad = results_open(path, &db, err, sizeof(err)) != 0;
			for (int i = 0; i < RUNS && !bad; i++) {
				int64_t id;
				bad = results_write_run(db, &r, &id, err, sizeof(err)) != 0;
			}
			if (bad)
				fprintf(stderr, "writer %d: %s\n", w, err);
			results_close(db);
			_exit(bad);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status = 0;
		assert_int_equal(waitpid(pid[w], &status, 0), pid[w]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	sqlite3 *plain = open_plain(path);
	assert_int_equal(count_rows(plain, "SELECT count(DISTINCT run_id) FROM runs"), WRITERS * RUNS);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM run_cdf"), WRITERS * RUNS * METRICS_CDF_POINTS);
	assert_int_equal(count_rows(plain, "SELECT count(*) FROM simbatch_meta"), 2);
	sqlite3_close(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_write_read),
		cmocka_unit_test(test_kept_open),
		cmocka_unit_test(test_empty_file_accepted),
		cmocka_unit_test(test_not_a_database_refused),
		cmocka_unit_test(test_foreign_database_refused),
		cmocka_unit_test(test_wrong_schema_version_refused),
		cmocka_unit_test(test_older_versions_upgraded),
		cmocka_unit_test(test_unwritable_refused),
		cmocka_unit_test(test_failed_write_rolls_back),
		cmocka_unit_test(test_two_writers),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
