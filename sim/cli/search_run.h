/* sim/cli/search_run.h: a configuration search under way and its
 * results (cmd_search.c runs it, search_report.c reports it). */
#ifndef SB_SEARCH_RUN_H
#define SB_SEARCH_RUN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "search_spec.h"
#include "../study/search_plan.h"

struct results_db;

extern const char *const search_status_name[];   /* by enum study_search_status */

struct search_run {
	const struct search_spec *spec;
	struct study_search plan;     /* the rows, their order and what is measured next (sim/study/search_plan.h) */
	const char *exe;
	int out_fd;
	const char *out_path;
	int quiet;
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
/* The report of a finished search, as text or one JSON object. */
void search_report_text(FILE *f, const struct search_run *r);
void search_report_json(FILE *f, const struct search_run *r);
/* Stores the finished search in the results database r->db_path (tables
 * searches and search_configs), setting r->search_id: 0, or -1 with err
 * (nothing stored). */
int search_store(struct search_run *r, char *err, size_t errlen);

#endif
