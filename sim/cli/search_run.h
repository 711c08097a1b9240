/* sim/cli/search_run.h: a configuration search under way and its
 * results (cmd_search.c runs it, search_report.c reports it). */
#ifndef SB_SEARCH_RUN_H
#define SB_SEARCH_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "search_spec.h"

struct results_db;

enum search_status { SR_TODO = 0, SR_OK, SR_INFEASIBLE, SR_PRUNED, SR_SKIPPED };
extern const char *const search_status_name[];

struct search_row {
	enum search_status status;
	double cost, capacity, lo, hi, band_lo, band_hi;   /* band: NaN when the hardware has none */
	uint32_t gpus;
	uint64_t key_hash;
	int resumed;
	char reason[300];
	/* the capacity bound (cmd_search.c search_bounded): a plain fleet's replicas (0: not one: disaggregated,
	 * heterogeneous, or behind prefix-affinity), its options but the replicas hashed, and once simulated the
	 * lowest rate its capacity search found saturated (NaN: none seen) */
	uint32_t plain_replicas;
	uint64_t family;
	double saturated_rps;
};

struct search_run {
	const struct search_spec *spec;
	struct search_row *rows;
	size_t *order;                /* configurations by cost, then index */
	size_t next;                  /* in order */
	const char *exe;
	int out_fd;
	const char *out_path;
	double best_cost;             /* a target search: the cheapest cost found meeting it */
	int exhaustive, quiet;
	size_t part_i, part_n;        /* --part=I/N (part_n 0: the whole search) */
	size_t simulated, running;
	char *argv[SEARCH_MAX_OPTS + 8];
	char failure[512];            /* a write of the results file that failed */
	const char *db_path;          /* where the finished search is stored (NULL: --no-db, or a part) ... */
	int64_t search_id;            /* ... and its id there once stored (0: not yet) */
	struct results_db *db;        /* ... opened (its schema created) before anything runs */
	const char *front_path;       /* --front: the tokens/s/user vs tokens/s/GPU front's CSV (search_front.h) */
	uint64_t front_requests;
};

/* The configuration's axis values, "name=value" joined by spaces: what tells it from the others. */
void search_label(const struct search_spec *s, size_t i, char *buf, size_t len);
/* The answer: the cheapest meeting the target (ties: the most capacity), or
 * the most capacity within the budget; SIZE_MAX when none. */
size_t search_answer(const struct search_run *r);
/* The report of a finished search, as text or one JSON object. */
void search_report_text(FILE *f, const struct search_run *r);
void search_report_json(FILE *f, const struct search_run *r);
/* Stores the finished search in the results database r->db_path (tables
 * searches and search_configs), setting r->search_id: 0, or -1 with err
 * (nothing stored). */
int search_store(struct search_run *r, char *err, size_t errlen);

#endif
