/* sim/store/search_store.h: a finished configuration search in the results
 * database (tables searches and search_configs, schema version 4): what was
 * asked, the report, and one row a configuration. sim/SEARCH.md "The
 * database" says what each column holds. */
#ifndef SB_SEARCH_STORE_H
#define SB_SEARCH_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "results.h"

struct results_search_config {
	const char *config;          /* its axis values ("hw=gpu-h100 tp=8"), unique in the search */
	const char *key;             /* its options, as the search's results file keys it */
	const char *status;          /* ok, infeasible, pruned or skipped (costlier than an answer found) */
	unsigned gpus;
	double cost_per_hour;
	double capacity_rps, bracket_lo_rps, bracket_hi_rps;   /* status ok; NaN elsewhere: stored NULL */
	double band_lo_rps, band_hi_rps;                       /* NaN: no band (stored NULL) */
	int pareto, answer;          /* on the Pareto front; the answer */
	const char *reason;          /* why not served (NULL or empty: none) */
};

struct results_search {
	const char *code_version;
	const char *file;            /* the search file as named */
	const char *spec_text;       /* its content */
	double target_rps;           /* the goal: a target rate ... (0: none, stored NULL) */
	double budget_per_hour;      /* ... or a budget (0: none, stored NULL) */
	int exhaustive;
	const char *answer;          /* the answer's config, NULL: none */
	const char *report_json;     /* the report as --json prints it */
	size_t nconfigs;
	const struct results_search_config *configs;
};

/* Stores a search in one transaction (on failure nothing is written): 0 and
 * its id, or -1 with err. */
int results_write_search(struct results_db *db, const struct results_search *s, int64_t *search_id, char *err,
                         size_t errlen);

#endif
