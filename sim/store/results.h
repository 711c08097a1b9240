/* sim/store/results.h: the results database (SQLite). One row per completed run
 * with its full configuration, code version and seed; the summary metrics; a
 * latency CDF (1000 quantiles); optional per-request rows. DESIGN.md sec. 4.
 *
 * Contract:
 *  - results_open creates the schema in a new or empty file, accepts a
 *    simbatch database of the same schema version, and refuses anything else
 *    (a non-SQLite file, another application's database, a newer schema) with
 *    one line in err. It also proves the file is writable before any
 *    simulation starts, so a run never fails after spending its time.
 *  - results_write_run writes everything of one run in one transaction: on
 *    any failure it rolls back and the database is as it was.
 *  - Safe with several processes writing one file (WAL, busy timeout).
 *  - uint64 fields (seed, counts, request ids) are stored as SQLite's signed
 *    64-bit INTEGER: a value above INT64_MAX keeps its bit pattern and reads
 *    back negative (cast it back to uint64).
 */
#ifndef SB_RESULTS_H
#define SB_RESULTS_H

#include <stddef.h>
#include <stdint.h>
#include "../../policies/driver.h"   /* drv_request_row */
#include "../../util/metrics.h"

/* 2 added runs.saturated; 3 the LLM token CDFs (run_token_cdf) and
 * run_requests.first_token_s; 4 the configuration searches (searches,
 * search_configs); 5 the overload window (runs.overloaded, overload_start_s,
 * overload_end_s); 6 every metric of a run under its one name
 * (run_metric_values, metric_names; sim/store/metric_names.h); 7 the
 * capacity searches (capacities, capacity_probes). An older file is
 * upgraded when opened for writing and read as it is. */
#define RESULTS_SCHEMA_VERSION 7

/* The token metrics of an LLM run with a CDF each in run_token_cdf: time to
 * first token, time per output token, inter-token gap. */
#define RESULTS_TOKEN_METRICS 3
extern const char *const results_token_metrics[RESULTS_TOKEN_METRICS];   /* "ttft", "tpot", "itl" */

struct results_db;

struct results_kv {          /* one configuration entry: every option, as given or defaulted */
	const char *key;
	const char *value;
};

struct results_stat {         /* one named per-run statistic (policy counters, batch per node type) */
	const char *key;
	double value;
};

struct results_run {
	const char *policy, *model, *hw;
	double rate_rps;
	uint64_t seed;
	double sla_ms;
	uint64_t requests;           /* requests issued */
	uint64_t completed;          /* requests completed */
	double throughput_rps;
	double mean_batch;
	uint64_t events;
	double wall_s;
	int live;                    /* 0 simulated, 1 live runtime */
	int saturated;               /* 1: the devices never idled and served clearly less than offered */
	int overloaded;              /* 1: the queue grew within a window (util/overload.h) */
	double overload_start_s, overload_end_s;   /* that window, when overloaded */
	const char *code_version;
	const char *summary_json;    /* the JSON summary as printed (without run_id) */
	const struct metrics_summary *summary;
	size_t nconfig;
	const struct results_kv *config;
	size_t nmetric_values;       /* rows for run_metric_values: (metric name, value) */
	const struct results_stat *metric_values;
	size_t nstats;               /* rows for run_stats */
	const struct results_stat *stats;
	const double *token_cdf_ms[RESULTS_TOKEN_METRICS];   /* an LLM run's CDFs in results_token_metrics'
	                                                         order, [METRICS_CDF_POINTS] each; NULL: none */
	size_t nrequest_rows;        /* 0 unless per-request rows were asked for */
	const struct drv_request_row *request_rows;
	const char *once_key;        /* NULL, or a config key whose value identifies the run (a sweep
	                                point): written only if no stored run has the same value */
};

/* Returns 0 and an open database in *out (release it with results_close), or
 * -1 with err and *out NULL. */
int results_open(const char *path, struct results_db **out, char *err, size_t errlen);

/* Whether results_open could open path and store a run there, changing
 * nothing (no file created, no schema upgraded, no journal mode set): a run
 * asks before it simulates and opens the database only to store its
 * result, so a run that fails leaves the database as it was. 0, or -1 with
 * the message results_open would give. */
int results_check(const char *path, char *err, size_t errlen);
/* results_check, and *empty 1 when path holds no schema yet: nothing there, or an empty database (a 0-byte file,
 * as `touch` or a creator that crashed leaves, or SQLite's file with no tables). Every writer (run, sweep,
 * search, merge) creates the schema there, under the write lock (results_open); every reader refuses it. */
int results_check_empty(const char *path, int *empty, char *err, size_t errlen);
/* Returns 0 and the new run's id, or -1 with err (nothing written). With
 * run->once_key set, returns 1 and the stored run's id when a run with the
 * same value of that config key exists: the check and the insert share one
 * write transaction, so of several processes storing the same sweep point
 * exactly one writes it. */
int results_write_run(struct results_db *db, const struct results_run *run, int64_t *run_id,
                      char *err, size_t errlen);
void results_close(struct results_db *db);
/* on: results_close keeps a database results_open opened, and the next
 * results_open of the same file (path, device and inode) gets it back
 * without opening it again: for a process that stores many runs into one
 * file (a sweep's worker). off: closes the kept one. */
void results_keep_open(int on);
/* Removes a closed database file and SQLite's side files (-journal, -wal,
 * -shm): for a file a failed run created, so that it leaves nothing behind. */
void results_remove(const char *path);
/* Reads run run_id's latency CDF: cdf_ms[i] = quantile (i+1)/1000 in ms, as
 * metrics_summary.cdf_ms. Returns 0, or -1 with err ("no run N in PATH" when
 * the run does not exist) and cdf_ms untouched. */
int results_read_cdf(struct results_db *db, int64_t run_id, double *cdf_ms /* [METRICS_CDF_POINTS] */,
                     char *err, size_t errlen);
/* The same for metric "latency" (run_cdf) or one of results_token_metrics
 * (run_token_cdf); an LLM metric the run lacks is an error naming why. */
int results_read_metric_cdf(struct results_db *db, int64_t run_id, const char *metric,
                            double *cdf_ms /* [METRICS_CDF_POINTS] */, char *err, size_t errlen);

/* Reads one of run run_id's statistics (run_stats) by key: 1 and *value when
 * stored, 0 when the run has no such statistic, -1 with err. */
int results_read_stat(struct results_db *db, int64_t run_id, const char *key, double *value, char *err,
                      size_t errlen);

/* Calls fn(ctx, key, value) for each of run run_id's stored options (run_config), in key order:
 * 0, or -1 with err. */
int results_each_option(struct results_db *db, int64_t run_id,
                        void (*fn)(void *ctx, const char *key, const char *value), void *ctx,
                        char *err, size_t errlen);

/* Opens an existing simbatch database for reading only (compare, plots): a
 * missing file, an empty one, another application's database or a newer
 * schema version is refused (an older one is read as it is) with one line in err; nothing is ever created
 * or written. Release it with results_close. */
int results_open_readonly(const char *path, struct results_db **out, char *err, size_t errlen);

struct results_run_info {    /* what names a stored run in a report */
	int64_t run_id;
	char policy[64], model[256], hw[256];   /* truncated if longer */
	double rate_rps, sla_ms;
	uint64_t seed, completed;
	int live;                    /* 0 simulated, 1 live */
	int saturated;               /* 0, 1, or -1: stored before simbatch recorded it */
};
/* Returns 0 with *out filled, or -1 with err ("no run N in PATH"). */
int results_read_run_info(struct results_db *db, int64_t run_id, struct results_run_info *out,
                          char *err, size_t errlen);
/* Finds the newest run whose stored options (run_config) match every term of
 * selector "key=value[,key=value...]", e.g. "policy=graph,model=lstm,rate=500";
 * numbers match by value; the keys live and saturated (0 or 1) match the
 * run's columns of those names. Returns 0 with *run_id and *nmatch (how many runs
 * matched), or -1 with err when the selector is malformed or nothing matches. */
int results_find_run(struct results_db *db, const char *selector, int64_t *run_id, size_t *nmatch,
                     char *err, size_t errlen);
/* The same for every matching run: the ids of the first maxids of them, newest first, in ids;
 * *nmatch says how many matched (more than maxids: the rest not listed). */
int results_find_runs(struct results_db *db, const char *selector, int64_t *ids, size_t maxids, size_t *nmatch,
                      char *err, size_t errlen);

#endif
