/* sim/store/capacity_store.c: storing a finished capacity search (capacity_store.h). */
#include <stdio.h>
#include "capacity_store.h"
#include "results_db.h"
#include "../../util/errkind.h"

static const char sql_insert_capacity[] =
	"INSERT INTO capacities(created_utc, code_version, policy, model, hw, serving, tp, ep, replicas,"
	" prefill_replicas, decode_replicas, router, engine, gpus, workers, max_batch, run_options, sla_ms, quantile,"
	" ttft_slo_ms, tpot_slo_ms, allowed_miss_fraction, confidence, capacity_rps, bracket_lo_rps, bracket_hi_rps,"
	" band_lo_rps, band_hi_rps, estimate_rps, tolerance, requests, warmup, seeds, first_seed, report_json)"
	" VALUES(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14,"
	" ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34)";
static const char sql_insert_probe[] =
	"INSERT INTO capacity_probes(capacity_id, probe, rate_rps, p99_ms, miss_fraction, miss_bound, saturated,"
	" overloaded, pass) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/* An LLM's configuration columns, NULL for a node-level model (which has workers alone). */
static void bind_llm_uint(sqlite3_stmt *st, int i, int llm, unsigned v)
{
	if (llm)
		sqlite3_bind_int64(st, i, v);
	else
		sqlite3_bind_null(st, i);
}

static void bind_capacity(sqlite3_stmt *st, const struct results_capacity *c)
{
	results_bind_text_or_null(st, 1, c->code_version);
	results_bind_text_or_null(st, 2, c->policy);
	results_bind_text_or_null(st, 3, c->model);
	results_bind_text_or_null(st, 4, c->hw);
	results_bind_text_or_null(st, 5, c->serving);
	unsigned llm_cols[] = { c->tp, c->ep, c->replicas, c->prefill_replicas, c->decode_replicas };
	for (int k = 0; k < 5; k++)
		bind_llm_uint(st, 6 + k, c->llm, llm_cols[k]);
	results_bind_text_or_null(st, 11, c->llm ? c->router : NULL);
	results_bind_text_or_null(st, 12, c->llm ? c->engine : NULL);
	bind_llm_uint(st, 13, c->llm, c->gpus);
	sqlite3_bind_int64(st, 14, c->workers);
	sqlite3_bind_int64(st, 15, c->max_batch);
	results_bind_text_or_null(st, 16, c->run_options);
	results_bind_number(st, 17, c->sla_ms, 0);
	results_bind_number(st, 18, c->quantile, 0);
	results_bind_number(st, 19, c->ttft_slo_ms, 1);
	results_bind_number(st, 20, c->tpot_slo_ms, 1);
	results_bind_number(st, 21, c->allowed_miss_fraction, 0);
	results_bind_number(st, 22, c->confidence, 0);
	double rates[] = { c->capacity_rps, c->bracket_lo_rps, c->bracket_hi_rps, c->band_lo_rps, c->band_hi_rps,
	                   c->estimate_rps, c->tolerance };
	for (int k = 0; k < 7; k++)
		results_bind_number(st, 23 + k, rates[k], 0);
	uint64_t counts[] = { c->requests, c->warmup, c->seeds, c->first_seed };
	for (int k = 0; k < 4; k++)
		sqlite3_bind_int64(st, 30 + k, (sqlite3_int64)counts[k]);   /* uint64 kept by its bit pattern */
	results_bind_text_or_null(st, 34, c->report_json);
}

int results_write_capacity(struct results_db *db, const struct results_capacity *c, int64_t *capacity_id, char *err,
                           size_t errlen)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_exec(db->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db->db, sql_insert_capacity, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	bind_capacity(st, c);
	if (sqlite3_step(st) != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	sqlite3_int64 id = sqlite3_last_insert_rowid(db->db);
	if (sqlite3_prepare_v2(db->db, sql_insert_probe, -1, &st, NULL) != SQLITE_OK)
		goto fail;
	for (size_t i = 0; i < c->nprobes; i++) {
		const struct results_capacity_probe *p = &c->probes[i];
		sqlite3_bind_int64(st, 1, id);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)i);
		results_bind_number(st, 3, p->rate_rps, 0);
		results_bind_number(st, 4, p->p99_ms, 0);
		results_bind_number(st, 5, p->miss_fraction, 0);
		results_bind_number(st, 6, p->miss_bound, 0);
		sqlite3_bind_int(st, 7, p->saturated != 0);
		sqlite3_bind_int(st, 8, p->overloaded != 0);
		sqlite3_bind_int(st, 9, p->pass != 0);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto fail;
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	if (results_end_write(db, st, 1, "the capacity", err, errlen) != 0)
		return -1;
	*capacity_id = id;
	return 0;
fail:
	return results_end_write(db, st, 0, "the capacity", err, errlen);
}
