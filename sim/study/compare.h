/* sim/study/compare.h: `compare` as a function over values: is a candidate run's latency CDF (or an
 * LLM run's TTFT, TPOT or inter-token CDF) worse than a baseline's (DESIGN.md section 3; the method
 * is in sim/store/cdf_compare.h, the seed-as-unit mode in compare_seeds.c)?
 *
 * A run is named by its id, or by a selector "key=value[,key=value...]" over its stored options
 * (the newest matching run). The baseline is a run in baseline_db (NULL: the same db), or a text
 * CDF (baseline_cdf, CSV quantile,latency_ms with 1000 rows).
 *
 * Contract: never prints, never exits, keeps no state between calls. Each function returns 0, or
 * -1 with one line in err and the failure's kind marked (util/errkind.h: the input's unless memory
 * or I/O failed); out is then partly filled and means nothing. */
#ifndef SB_STUDY_COMPARE_H
#define SB_STUDY_COMPARE_H

#include <stddef.h>
#include <stdint.h>
#include "../store/cdf_compare.h"

#define STUDY_COMPARE_LABEL_MAX 1536   /* a path, the policy, model and hw names and the numbers, untruncated */
#define STUDY_COMPARE_MAX_OPTS 160     /* more options than a run stores */
#define STUDY_COMPARE_NTOKENS 9        /* an LLM run's token figures shown beside the CDF */
#define STUDY_SEEDS_MAX 1000           /* runs a --by-seed selector may match */

struct study_compare_req {
	const char *db;                /* database of the candidate (and of the baseline unless baseline_db) */
	const char *baseline_db;       /* NULL: db */
	const char *baseline_cdf;      /* a CSV baseline instead of a run, or NULL */
	const char *base, *cand;       /* run ids or selectors (base unused with baseline_cdf) */
	const char *metric;            /* latency, ttft, tpot or itl */
	double tolerance, ks_tolerance;
	int exact;                     /* any difference at all fails */
	int by_seed;                   /* each selector a configuration, every run it matches a seed */
};

struct study_compare_opt {
	char key[64];
	char value[256];
};

struct study_compare_side {        /* one side of the comparison */
	double cdf_ms[METRICS_CDF_POINTS];
	char label[STUDY_COMPARE_LABEL_MAX];   /* human-readable: where it came from */
	char source[512];                      /* database path or CSV path */
	int64_t run_id;                        /* 0 for a CSV baseline */
	size_t nmatch;                         /* runs the selector matched (1 for an id) */
	int live;                              /* -1 for a CSV baseline */
	int saturated;                         /* 0, 1, -1 unknown (a CSV, or a run stored before it was recorded) */
	int has_tokens;                        /* an LLM run: its token figures below (DESIGN.md 3b) */
	double tokens[STUDY_COMPARE_NTOKENS];  /* study_compare_token_name(i)'s values */
	struct study_compare_opt opts[STUDY_COMPARE_MAX_OPTS];   /* the run's stored options by key; none for a CSV */
	size_t nopts;
};

struct study_compare_diff {        /* an option in which the two runs differ */
	int base_opt, cand_opt;        /* index into that side's opts, -1 where the run did not have it */
};

struct study_seed_side {           /* one configuration of a --by-seed comparison */
	size_t n;                                  /* runs matched, newest first */
	int64_t ids[STUDY_SEEDS_MAX];
	uint64_t seeds[STUDY_SEEDS_MAX];
	double q[CDFC_NQUANTILES][STUDY_SEEDS_MAX];          /* each run's quantile, ms (sorted once summarised) */
	double mean[CDFC_NQUANTILES], var[CDFC_NQUANTILES];   /* of the runs' p50 ... p99.9, ms */
};

struct study_seed_diff {           /* candidate - baseline at one quantile, its 95% t-interval, the verdict */
	double diff, lo, hi;
	int worse, better;
};

struct study_compare_result {
	/* one run with one run (by_seed 0) */
	struct study_compare_side base, cand;
	struct study_compare_diff diffs[2 * STUDY_COMPARE_MAX_OPTS];
	size_t ndiffs;                 /* 0 unless both sides are runs */
	double token_ratio[STUDY_COMPARE_NTOKENS];   /* cand / base; NaN where base is not above 0 */
	struct cdfc_limits lim;
	struct cdfc_result r;
	/* the seed as the unit (by_seed 1) */
	struct study_seed_side seed_base, seed_cand;
	struct study_seed_diff seed_diffs[CDFC_NQUANTILES];
	double confidence;             /* of the intervals */
	/* the verdict: a regression (or, exact, any change): the command exits 1 */
	int failed;
};

/* The metric known and one baseline: 0, or -1 with err (a command checks this before its own
 * count of runs, so a wrong --metric is named first). */
int study_compare_check(const struct study_compare_req *req, char *err, size_t errlen);

/* Reads the runs (or the CSV baseline) req names and compares them into *out (large: allocate it). */
int study_compare(const struct study_compare_req *req, struct study_compare_result *out, char *err, size_t errlen);

/* The name of token figure i (metric_names.h). */
const char *study_compare_token_name(int i);

/* The seed-as-unit comparison of two configurations (compare_seeds.c): each side's runs read from
 * its database by selector, then the intervals and the verdict. */
struct results_db;
int study_compare_seeds(struct results_db *bdb, const char *bsel, struct results_db *cdb, const char *csel,
                        const char *metric, double tol, struct study_compare_result *out, char *err, size_t errlen);

#endif
