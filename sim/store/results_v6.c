/* sim/store/results_v6.c: schema 6, every metric of a run under its one name (metric_names.h) in
 * run_metric_values, the names in metric_names, and the upgrade of a version-5 file to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "results_db.h"
#include "metric_names.h"


int results_name_metrics(sqlite3 *db)
{
	/* the runs stored before 6 get each metric stored then, under its name; the token rates were not: absent */
	if (sqlite3_exec(db, "CREATE TEMP TABLE results_unnamed(run_id INTEGER PRIMARY KEY);"
	                 "INSERT INTO temp.results_unnamed SELECT run_id FROM main.runs WHERE run_id NOT IN "
	                 "(SELECT run_id FROM main.run_metric_values)", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	int rc = 0;
	for (size_t i = 0; i < METRIC_COUNT && rc == 0; i++) {
		const struct metric_name *m = &metric_names[i];
		if (!m->v5_sql)
			continue;
		char sql[1024];
		snprintf(sql, sizeof sql, "INSERT INTO main.run_metric_values(run_id, metric, value) SELECT r.run_id, '%s', "
		         "%s FROM main.runs r JOIN main.run_metrics m ON m.run_id = r.run_id WHERE r.run_id IN (SELECT run_id "
		         "FROM temp.results_unnamed) AND %s IS NOT NULL", m->name, m->v5_sql, m->v5_sql);
		rc = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	}
	/* the table goes whatever happened (the caller rolls the rest back) */
	return sqlite3_exec(db, "DROP TABLE temp.results_unnamed", NULL, NULL, NULL) == SQLITE_OK ? rc : -1;
}

int results_list_metrics(sqlite3 *db)
{
	static const char *const runs[] = { "all", "llm", "llm_slo" };
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO metric_names(name, unit, runs, meaning) "
	                            "VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL) == SQLITE_OK ? SQLITE_DONE : SQLITE_ERROR;
	for (size_t i = 0; i < METRIC_COUNT && rc == SQLITE_DONE; i++) {
		sqlite3_bind_text(st, 1, metric_names[i].name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, metric_names[i].unit, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 3, runs[metric_names[i].runs], -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, metric_names[i].meaning, -1, SQLITE_STATIC);
		rc = sqlite3_step(st);
		sqlite3_reset(st);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

int results_migrate_v5(sqlite3 *db)
{
	if (sqlite3_exec(db, RESULTS_METRIC_VALUES_TABLE_SQL, NULL, NULL, NULL) != SQLITE_OK ||
	    results_list_metrics(db) != 0 || results_name_metrics(db) != 0)
		return -1;
	return sqlite3_exec(db, "UPDATE simbatch_meta SET value = '6' WHERE key = 'schema_version'", NULL, NULL,
	                    NULL) == SQLITE_OK ? 0 : -1;
}
