/* sim/store/results_v6.c: schema 6, every metric of a run under its one name (metric_names.h) in
 * run_metric_values, and the upgrade of a version-5 file to it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "results_db.h"
#include "metric_names.h"


int results_migrate_v5(sqlite3 *db)
{
	if (sqlite3_exec(db, RESULTS_METRIC_VALUES_TABLE_SQL, NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	/* the runs stored before get each metric stored then, under its name; the token rates were not: absent */
	for (size_t i = 0; i < METRIC_COUNT; i++) {
		const struct metric_name *m = &metric_names[i];
		if (!m->v5_sql)
			continue;
		char sql[1024];
		snprintf(sql, sizeof sql, "INSERT INTO run_metric_values(run_id, metric, value) SELECT r.run_id, '%s', %s "
		         "FROM runs r JOIN run_metrics m ON m.run_id = r.run_id WHERE %s IS NOT NULL", m->name, m->v5_sql,
		         m->v5_sql);
		if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
			return -1;
	}
	return sqlite3_exec(db, "UPDATE simbatch_meta SET value = '6' WHERE key = 'schema_version'", NULL, NULL,
	                    NULL) == SQLITE_OK ? 0 : -1;
}
