/* sim/store/sweep_db.h: what a sweep reads from a results database: whether a point
 * is stored already (resuming a killed sweep, several sweeps sharing one
 * database) and the metrics of a stored point (aggregation across seeds).
 *
 * A point is identified by its key (sweep_spec.h), which the run stores as
 * its option --sweep-point (run_config key SWEEP_POINT_KEY).
 *
 * Contract:
 *  - sweep_db_open opens an existing simbatch database of this schema
 *    version; read-write mode adds an index on run_config(key, value) (an
 *    index changes no table, so the schema version stays) to keep point
 *    lookups fast in large databases; read-only mode changes nothing.
 *  - Lookups return 1 (found), 0 (not found) or -1 with err.
 */
#ifndef SB_SWEEP_DB_H
#define SB_SWEEP_DB_H

#include <stddef.h>
#include "metric_names.h"

#define SWEEP_POINT_KEY "sweep-point"

struct sweep_db;

int sweep_db_open(const char *path, int readonly, struct sweep_db **out, char *err, size_t errlen);
void sweep_db_close(struct sweep_db *db);
int sweep_db_has_point(struct sweep_db *db, const char *key, char *err, size_t errlen);
/* Fills vals[i] with metric m[i] (metric_names.h) of the (first) run stored for key; NaN where it has none. */
int sweep_db_point_metrics(struct sweep_db *db, const char *key, const struct metric_name *const *m,
                           size_t n, double *vals, char *err, size_t errlen);

#endif
