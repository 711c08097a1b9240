/* sim/store/capacity_store.h: a finished capacity search (`simbatch capacity`) in the results
 * database (tables capacities and capacity_probes, schema version 7): the serving configuration
 * it answered for, its target, the answer with its bracket and band, and the rates it probed.
 * docs/RESULTS.md "Capacities" says what each column holds. The probes are child runs that
 * store nothing (`run --no-db`), so no row of runs belongs to a capacity. */
#ifndef SB_CAPACITY_STORE_H
#define SB_CAPACITY_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "results.h"

/* The tables, for the schema and the upgrade from version 6 (results.c). */
#define CAPACITY_TABLES_SQL \
	"CREATE TABLE capacities(\n" \
	"  capacity_id INTEGER PRIMARY KEY AUTOINCREMENT,\n" \
	"  created_utc TEXT NOT NULL,\n" \
	"  code_version TEXT,\n" \
	"  policy TEXT, model TEXT, hw TEXT,\n" \
	"  serving TEXT,\n" \
	"  tp INTEGER, ep INTEGER, replicas INTEGER, prefill_replicas INTEGER, decode_replicas INTEGER,\n" \
	"  router TEXT, engine TEXT, gpus INTEGER, workers INTEGER, max_batch INTEGER,\n" \
	"  run_options TEXT,\n" \
	"  sla_ms REAL, quantile REAL,\n" \
	"  ttft_slo_ms REAL, tpot_slo_ms REAL, allowed_miss_fraction REAL, confidence REAL,\n" \
	"  capacity_rps REAL NOT NULL, bracket_lo_rps REAL NOT NULL, bracket_hi_rps REAL NOT NULL,\n" \
	"  band_lo_rps REAL, band_hi_rps REAL, estimate_rps REAL, tolerance REAL,\n" \
	"  requests INTEGER, warmup INTEGER, seeds INTEGER, first_seed INTEGER,\n" \
	"  report_json TEXT);\n" \
	"CREATE TABLE capacity_probes(\n" \
	"  capacity_id INTEGER NOT NULL REFERENCES capacities(capacity_id) ON DELETE CASCADE,\n" \
	"  probe INTEGER NOT NULL,\n" \
	"  rate_rps REAL, p99_ms REAL, miss_fraction REAL, miss_bound REAL,\n" \
	"  saturated INTEGER, overloaded INTEGER, pass INTEGER,\n" \
	"  PRIMARY KEY(capacity_id, probe)) WITHOUT ROWID;\n"

struct results_capacity_probe {   /* one rate, in the order simulated */
	double rate_rps, p99_ms;
	double miss_fraction;           /* node-level: late past the SLA; an LLM: missing a token target */
	double miss_bound;              /* an LLM: the bound on that fraction judged (NaN: none, stored NULL) */
	int saturated, overloaded, pass;
};

struct results_capacity {
	const char *code_version;
	const char *policy, *model, *hw;
	const char *serving;            /* the header's text of the configuration (sim/study/serving.h) */
	int llm;                        /* tp .. router, engine NULL for a node-level model */
	unsigned tp, ep, replicas, prefill_replicas, decode_replicas, gpus, workers, max_batch;
	const char *router, *engine;    /* NULL or "": none */
	const char *run_options;        /* the probes' run options as given, space-separated */
	double sla_ms, quantile;        /* node-level: the target (an LLM: NaN, stored NULL) */
	double ttft_slo_ms, tpot_slo_ms;            /* an LLM: its targets (0: none, stored NULL) */
	double allowed_miss_fraction, confidence;   /* an LLM (NaN: stored NULL) */
	double capacity_rps, bracket_lo_rps, bracket_hi_rps;
	double band_lo_rps, band_hi_rps;            /* NaN: no band (stored NULL) */
	double estimate_rps, tolerance;
	uint64_t requests, warmup, seeds, first_seed;
	const char *report_json;        /* the answer as --json prints it */
	size_t nprobes;
	const struct results_capacity_probe *probes;
};

/* Stores a capacity in one transaction (on failure nothing is written): 0 and its id, or -1
 * with err. */
int results_write_capacity(struct results_db *db, const struct results_capacity *c, int64_t *capacity_id, char *err,
                           size_t errlen);

#endif
