/* calib/store.h: a calibration table's copy in SQLite, for queries across
 * calibrations (default results/calibration.db; kept apart from the results
 * database, whose schema check refuses files it did not create). Each call
 * appends one table: calib_tables (id, time, device, CSV path), its header
 * fields in calib_fields, its rows in calib_points.
 *
 * Contract: one transaction; on failure nothing is stored and err says why.
 */
#ifndef SB_CALIB_STORE_H
#define SB_CALIB_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "../hwmodels/caltab.h"

/* Appends t to the database at db_path (created if missing). csv_path
 * names the CSV written alongside ("" when none). Returns 0 and the new
 * table id, or -1 with err. */
int calstore_write(const char *db_path, const struct caltab *t, const char *csv_path, int64_t *table_id,
                   char *err, size_t errlen);

/* Before minutes of benchmarks: whether calstore_write could append to
 * db_path, touching nothing: none yet (its directory writable), or a
 * writable regular file SQLite reads as a database. 0, or -1 with err. */
int calstore_check(const char *db_path, char *err, size_t errlen);

#endif
