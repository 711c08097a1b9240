/* sim/store/search_store.c: storing a finished configuration search (search_store.h). */
#include <math.h>
#include <stdio.h>
#include "search_store.h"
#include "results_db.h"
#include "../../util/errkind.h"

int results_write_search(struct results_db *db, const struct results_search *s, int64_t *search_id, char *err,
                         size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(db->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		goto fail;
	if (sqlite3_prepare_v2(db->db, "INSERT INTO searches(created_utc, code_version, file, spec_text, target_rps,"
	                       " budget_per_hour, exhaustive, answer, report_json) VALUES(strftime('%Y-%m-%dT%H:%M:%fZ',"
	                       " 'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	results_bind_text_or_null(st, 1, s->code_version);
	results_bind_text_or_null(st, 2, s->file);
	results_bind_text_or_null(st, 3, s->spec_text);
	results_bind_number(st, 4, s->target_rps, 1);
	results_bind_number(st, 5, s->budget_per_hour, 1);
	sqlite3_bind_int(st, 6, s->exhaustive != 0);
	results_bind_text_or_null(st, 7, s->answer);
	results_bind_text_or_null(st, 8, s->report_json);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	sqlite3_int64 id = sqlite3_last_insert_rowid(db->db);
	if (sqlite3_prepare_v2(db->db, "INSERT INTO search_configs(search_id, config, key, status, gpus, cost_per_hour,"
	                       " capacity_rps, bracket_lo_rps, bracket_hi_rps, band_lo_rps, band_hi_rps, pareto, answer,"
	                       " reason) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)", -1, &st,
	                       NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < s->nconfigs; i++) {
		const struct results_search_config *c = &s->configs[i];
		sqlite3_bind_int64(st, 1, id);
		results_bind_text_or_null(st, 2, c->config);
		results_bind_text_or_null(st, 3, c->key);
		results_bind_text_or_null(st, 4, c->status);
		sqlite3_bind_int64(st, 5, c->gpus);
		results_bind_number(st, 6, c->cost_per_hour, 0);
		results_bind_number(st, 7, c->capacity_rps, 0);
		results_bind_number(st, 8, c->bracket_lo_rps, 0);
		results_bind_number(st, 9, c->bracket_hi_rps, 0);
		results_bind_number(st, 10, c->band_lo_rps, 0);
		results_bind_number(st, 11, c->band_hi_rps, 0);
		sqlite3_bind_int(st, 12, c->pareto != 0);
		sqlite3_bind_int(st, 13, c->answer != 0);
		results_bind_text_or_null(st, 14, c->reason);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	if (results_end_write(db, st, 1, "the search", err, errlen) != 0)
		return -1;
	*search_id = id;
	return 0;
fail:
	return results_end_write(db, st, 0, "the search", err, errlen);
}
