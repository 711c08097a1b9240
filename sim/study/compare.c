/* sim/study/compare.c: one run (or a CSV CDF) compared with one run (compare.h): reads both
 * sides' CDFs, token figures and options, the per-quantile ratios and KS distance
 * (cdf_compare.h), the options that differ, and the verdict. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "../../util/lines.h"
#include "../../util/text.h"
#include "../store/metric_names.h"
#include "../store/results.h"
#include "compare.h"

static void compare_add_option(void *ctx, const char *key, const char *value)
{
	struct study_compare_side *s = ctx;
	if (s->nopts == STUDY_COMPARE_MAX_OPTS)
		return;
	snprintf(s->opts[s->nopts].key, sizeof s->opts[0].key, "%s", key);
	snprintf(s->opts[s->nopts].value, sizeof s->opts[0].value, "%s", value);
	s->nopts++;
}

/* Options that say where a run's outputs went, how a sweep named it or what its settings came to
 * (effective.*), not what was asked of the simulation: never listed as a difference. */
static int compare_bookkeeping(const char *key)
{
	static const char *const keys[] = { "db", "quiet", "json", "db-requests", "requests-out", "timeline-out",
	                                    "sweep-point", "sweep-name", "sweep-variant" };
	if (strncmp(key, "effective.", 10) == 0)
		return 1;
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (strcmp(key, keys[i]) == 0)
			return 1;
	return 0;
}

/* The options in which the two runs differ, in key order (both sides' options are sorted by key). */
static void compare_differences(struct study_compare_result *out)
{
	const struct study_compare_side *b = &out->base, *c = &out->cand;
	size_t i = 0, j = 0;
	out->ndiffs = 0;
	while (i < b->nopts || j < c->nopts) {
		int order = i == b->nopts ? 1 : j == c->nopts ? -1 : strcmp(b->opts[i].key, c->opts[j].key);
		const char *key = order <= 0 ? b->opts[i].key : c->opts[j].key;
		int bi = order <= 0 ? (int)i : -1, ci = order >= 0 ? (int)j : -1;
		i += order <= 0;
		j += order >= 0;
		if (compare_bookkeeping(key) || (bi >= 0 && ci >= 0 && strcmp(b->opts[bi].value, c->opts[ci].value) == 0))
			continue;
		out->diffs[out->ndiffs++] = (struct study_compare_diff){ bi, ci };
	}
}

/* An LLM run's token figures, shown beside the latency CDF (not part of the verdict: the CDF
 * comparison is what a regression means). */
static const enum metric_id compare_token_ids[STUDY_COMPARE_NTOKENS] = {
	METRIC_TTFT_P50, METRIC_TTFT_P90, METRIC_TTFT_P99, METRIC_TPOT_P50, METRIC_TPOT_P90, METRIC_TPOT_P99,
	METRIC_ITL_P50, METRIC_ITL_P99, METRIC_GOODPUT_RPS,
};

const char *study_compare_token_name(int i)
{
	return metric_names[compare_token_ids[i]].name;   /* the one names (metric_names.h) */
}

/* Reads the token figures of an LLM run (an other run has none). */
static int compare_load_tokens(struct results_db *db, struct study_compare_side *s, char *err, size_t errlen)
{
	s->has_tokens = 1;
	for (int i = 0; i < STUDY_COMPARE_NTOKENS; i++) {
		int got = results_read_stat(db, s->run_id, study_compare_token_name(i), &s->tokens[i], err, errlen);
		if (got < 0)
			return -1;
		s->has_tokens &= got;
	}
	return 0;
}

/* Resolves spec (an id or a selector) in db and reads the run's CDF. */
static int compare_load_run(struct results_db *db, const char *path, const char *spec, const char *metric,
                            struct study_compare_side *s, char *err, size_t errlen)
{
	uint64_t id;
	struct results_run_info info;
	snprintf(s->source, sizeof s->source, "%s", path);
	s->nmatch = 1;
	if (txt_parse_uint(spec, UINT64_MAX, &id) == 0) {
		if (id == 0 || id > INT64_MAX) {
			snprintf(err, errlen, "run id '%s' is out of range", spec);
			return -1;
		}
		s->run_id = (int64_t)id;
	} else if (results_find_run(db, spec, &s->run_id, &s->nmatch, err, errlen) != 0) {
		return -1;
	}
	if (results_read_run_info(db, s->run_id, &info, err, errlen) != 0 ||
	    results_read_metric_cdf(db, s->run_id, metric, s->cdf_ms, err, errlen) != 0 ||
	    compare_load_tokens(db, s, err, errlen) != 0 ||
	    results_each_option(db, s->run_id, compare_add_option, s, err, errlen) != 0)
		return -1;
	s->live = info.live;
	s->saturated = info.saturated;
	char extra[64] = "";
	if (s->nmatch > 1)
		snprintf(extra, sizeof extra, ", newest of %zu matching", s->nmatch);
	snprintf(s->label, sizeof s->label, "%s run %lld in %s: %s %s %s rate=%g seed=%llu, %llu requests%s%s",
	         info.live ? "live" : "simulated", (long long)s->run_id, path, info.policy, info.model, info.hw,
	         info.rate_rps, (unsigned long long)info.seed, (unsigned long long)info.completed, extra,
	         info.saturated == 1 ? ", SATURATED (its latencies depend on the run's length)" : "");
	return 0;
}

/* One row "quantile,latency_ms" of a CDF CSV, the n-th (0-based) row: 0, or -1 with err. */
static int compare_csv_row(const char *path, unsigned long lineno, char *line, int n, double *v, char *err,
                           size_t errlen)
{
	char *comma = strchr(line, ',');
	double q;
	if (!comma) {
		snprintf(err, errlen, "%s:%lu: expected quantile,latency_ms", path, lineno);
		return -1;
	}
	*comma = '\0';
	if (txt_parse_double(line, &q) != 0 || txt_parse_double(comma + 1, v) != 0) {
		snprintf(err, errlen, "%s:%lu: expected two numbers quantile,latency_ms", path, lineno);
		return -1;
	}
	if (n == METRICS_CDF_POINTS) {
		snprintf(err, errlen, "%s:%lu: more than %d CDF rows", path, lineno, METRICS_CDF_POINTS);
		return -1;
	}
	if (fabs(q - (double)(n + 1) / METRICS_CDF_POINTS) > 1e-9) {
		snprintf(err, errlen, "%s:%lu: quantile %s, expected %g", path, lineno, line,
		         (double)(n + 1) / METRICS_CDF_POINTS);
		return -1;
	}
	return 0;
}

/* Reads a CDF CSV: a header "quantile,latency_ms", then row i (1-based) holding quantile i/1000
 * and its latency; '#' comments and blank lines are skipped. Errors name the file and line. */
static int compare_load_csv(const char *path, struct study_compare_side *s, char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len;
	int header = 0, n = 0, got;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	snprintf(s->source, sizeof s->source, "%s", path);
	s->run_id = 0;
	s->nmatch = 1;
	s->live = s->saturated = -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		unsigned long lineno = rd.lineno;
		line[strcspn(line, "\r\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (!header) {
			if (strcmp(line, "quantile,latency_ms") != 0) {
				snprintf(err, errlen, "%s:%lu: expected the header 'quantile,latency_ms'", path, lineno);
				goto fail;
			}
			header = 1;
			continue;
		}
		double v;
		if (compare_csv_row(path, lineno, line, n, &v, err, errlen) != 0)
			goto fail;
		s->cdf_ms[n++] = v;
	}
	if (got < 0)
		goto fail;
	if (n != METRICS_CDF_POINTS) {
		snprintf(err, errlen, "%s: %d CDF rows, expected %d", path, n, METRICS_CDF_POINTS);
		goto fail;
	}
	lines_close(&rd);
	snprintf(s->label, sizeof s->label, "CDF file %s", path);
	return 0;
fail:
	lines_close(&rd);
	return -1;
}

int study_compare_check(const struct study_compare_req *req, char *err, size_t errlen)
{
	int known = strcmp(req->metric, "latency") == 0;
	for (int i = 0; i < RESULTS_TOKEN_METRICS; i++)
		known |= strcmp(req->metric, results_token_metrics[i]) == 0;
	if (!known) {
		snprintf(err, errlen, "--metric: unknown metric '%s' (latency, ttft, tpot or itl)", req->metric);
		return -1;
	}
	if (req->baseline_cdf && req->baseline_db) {
		snprintf(err, errlen, "give --baseline-db or --baseline-cdf, not both");
		return -1;
	}
	return 0;
}

/* Both sides read: the comparison, the differing options, the token ratios and the verdict. */
static int compare_judge(const struct study_compare_req *req, struct study_compare_result *out, char *err,
                         size_t errlen)
{
	out->lim = (struct cdfc_limits){ req->tolerance, req->ks_tolerance, req->exact };
	if (cdfc_compare(out->base.cdf_ms, out->cand.cdf_ms, &out->lim, &out->r, err, errlen) != 0)
		return -1;
	out->ndiffs = 0;
	if (out->base.run_id && out->cand.run_id)
		compare_differences(out);
	for (int i = 0; i < STUDY_COMPARE_NTOKENS; i++)
		out->token_ratio[i] = out->base.tokens[i] > 0 ? out->cand.tokens[i] / out->base.tokens[i] : NAN;
	out->failed = out->r.regression || (out->lim.exact && out->r.changed);
	return 0;
}

/* The seed-as-unit mode, given the databases open. */
static int compare_by_seed(const struct study_compare_req *req, struct results_db *bdb, struct results_db *db,
                           struct study_compare_result *out, char *err, size_t errlen)
{
	if (req->exact) {
		snprintf(err, errlen, "--by-seed compares intervals; --exact compares one run with one run");
		return -1;
	}
	return study_compare_seeds(bdb, req->base, db, req->cand, req->metric, req->tolerance, out, err, errlen);
}

int study_compare(const struct study_compare_req *req, struct study_compare_result *out, char *err, size_t errlen)
{
	struct results_db *db = NULL, *base_db = NULL;
	int rc = -1;
	memset(out, 0, sizeof *out);
	if (study_compare_check(req, err, errlen) != 0 || results_open_readonly(req->db, &db, err, errlen) != 0)
		goto out;
	if (req->baseline_cdf) {
		if (req->by_seed) {
			snprintf(err, errlen, "--by-seed compares runs of two configurations, not a --baseline-cdf");
			goto out;
		}
		if (compare_load_csv(req->baseline_cdf, &out->base, err, errlen) != 0)
			goto out;
	} else {
		const char *base_path = req->baseline_db ? req->baseline_db : req->db;
		if (req->baseline_db && results_open_readonly(req->baseline_db, &base_db, err, errlen) != 0)
			goto out;
		struct results_db *bdb = base_db ? base_db : db;
		if (req->by_seed) {
			rc = compare_by_seed(req, bdb, db, out, err, errlen);
			goto out;
		}
		if (compare_load_run(bdb, base_path, req->base, req->metric, &out->base, err, errlen) != 0)
			goto out;
	}
	if (compare_load_run(db, req->db, req->cand, req->metric, &out->cand, err, errlen) != 0)
		goto out;
	rc = compare_judge(req, out, err, errlen);
out:
	results_close(base_db);
	results_close(db);
	return rc;
}
