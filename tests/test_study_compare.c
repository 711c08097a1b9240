/* tests/test_study_compare.c: study_compare (sim/study/compare.h) on runs and a CSV CDF built by
 * hand in a temp directory, against answers worked by hand: the quantile ratios and one-sided KS
 * distance of a grid whose tail is doubled, the options that differ, the verdict; the seed-as-unit
 * t-interval of two constant runs a side; and the refusals (a missing run, an unknown metric). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim/store/results.h"
#include "sim/study/compare.h"

#define N METRICS_CDF_POINTS

static char dir[64], db_path[128], csv_path[128];

/* Stores a run whose latency CDF is cdf, with seed and the given options; its id. */
static int64_t store_run(const double *cdf, uint64_t seed, const struct results_kv *config, size_t nconfig)
{
	struct metrics_summary s;
	memset(&s, 0, sizeof s);
	memcpy(s.cdf_ms, cdf, sizeof s.cdf_ms);
	s.count = 1000;
	struct results_run r = { .policy = "lazy", .model = "transformer", .hw = "npu", .rate_rps = 10, .seed = seed,
	                         .sla_ms = 100, .requests = 1000, .completed = 1000, .summary_json = "{}",
	                         .summary = &s, .nconfig = nconfig, .config = config };
	struct results_db *db = NULL;
	char err[256];
	int64_t id = 0;
	if (results_open(db_path, &db, err, sizeof err) != 0 || results_write_run(db, &r, &id, err, sizeof err) != 0)
		fail_msg("storing a run: %s", err);
	results_close(db);
	return id;
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof dir, "%s/sb_study_compare_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return -1;
	snprintf(db_path, sizeof db_path, "%s/r.db", dir);
	snprintf(csv_path, sizeof csv_path, "%s/base.csv", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	unlink(db_path);
	unlink(csv_path);
	return rmdir(dir);
}

static struct study_compare_req request(const char *base, const char *cand)
{
	return (struct study_compare_req){ .db = db_path, .base = base, .cand = cand, .metric = "latency",
	                                   .tolerance = 0.05, .ks_tolerance = 0.05 };
}

/* Baseline: value i (0-based) = i + 1. Candidate: the same up to the 90th percentile, then doubled.
 * By hand: p50 (point 500) and p90 (point 900) equal; p99 990 -> 1980 and p99.9 999 -> 1998, ratio 2,
 * worse; at x = 1000 the baseline has all 1000 values <= x and the candidate 900, so the one-sided
 * KS distance (candidate slower) is 0.1 and the other side 0. */
static void test_tail_doubled(void **state)
{
	(void)state;
	double base[N], cand[N];
	for (int i = 0; i < N; i++) {
		base[i] = i + 1;
		cand[i] = i < 900 ? i + 1 : 2.0 * (i + 1);
	}
	const struct results_kv bcfg[] = { { "db", "a.db" }, { "policy", "lazy" }, { "rate", "10" } };
	const struct results_kv ccfg[] = { { "db", "b.db" }, { "max-batch", "8" }, { "policy", "lazy" }, { "rate", "20" } };
	int64_t bid = store_run(base, 1, bcfg, 3), cid = store_run(cand, 2, ccfg, 4);
	char bs[32], cs[32], err[512] = "";
	snprintf(bs, sizeof bs, "%lld", (long long)bid);
	snprintf(cs, sizeof cs, "%lld", (long long)cid);
	struct study_compare_req req = request(bs, cs);
	struct study_compare_result *res = malloc(sizeof *res);
	assert_non_null(res);
	assert_int_equal(study_compare(&req, res, err, sizeof err), 0);
	const double want_base[4] = { 500, 900, 990, 999 }, want_cand[4] = { 500, 900, 1980, 1998 };
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		assert_true(res->r.quantiles[k].base_ms == want_base[k]);
		assert_true(res->r.quantiles[k].cand_ms == want_cand[k]);
		assert_int_equal(res->r.quantiles[k].worse, k >= 2);
	}
	assert_true(fabs(res->r.ks_worse - 0.1) < 1e-12);
	assert_true(res->r.ks_better == 0);
	assert_int_equal(res->r.regression, 1);
	assert_int_equal(res->failed, 1);
	/* differ in max-batch (only the candidate has it) and rate; db is bookkeeping */
	assert_int_equal(res->ndiffs, 2);
	assert_int_equal(res->diffs[0].base_opt, -1);
	assert_string_equal(res->cand.opts[res->diffs[0].cand_opt].key, "max-batch");
	assert_string_equal(res->base.opts[res->diffs[1].base_opt].value, "10");
	assert_string_equal(res->cand.opts[res->diffs[1].cand_opt].value, "20");
	assert_int_equal(res->base.has_tokens, 0);

	/* the same baseline as a CSV file: the same verdict, and no options to compare */
	FILE *f = fopen(csv_path, "w");
	assert_non_null(f);
	fprintf(f, "quantile,latency_ms\n");
	for (int i = 0; i < N; i++)
		fprintf(f, "%.3f,%d\n", (i + 1) / 1000.0, i + 1);
	assert_int_equal(fclose(f), 0);
	req.baseline_cdf = csv_path;
	req.tolerance = 1.5;       /* a ratio of 2 is beyond it, but KS 0.1 still is */
	assert_int_equal(study_compare(&req, res, err, sizeof err), 0);
	assert_int_equal(res->base.run_id, 0);
	assert_int_equal(res->ndiffs, 0);
	assert_int_equal(res->r.quantiles[3].worse, 0);
	assert_int_equal(res->r.ks_exceeded, 1);
	assert_int_equal(res->failed, 1);
	req.ks_tolerance = 0.1;    /* not above: within both limits, yet changed */
	assert_int_equal(study_compare(&req, res, err, sizeof err), 0);
	assert_int_equal(res->failed, 0);
	req.exact = 1;
	assert_int_equal(study_compare(&req, res, err, sizeof err), 0);
	assert_int_equal(res->failed, 1);
	free(res);
}

/* Two runs a side, every value of a run's CDF one constant: baseline 10 and 12 ms, candidate 20 and
 * 22. Each side's mean is 11 and 21 with sample variance 2; pooled variance 2 on 2 degrees of
 * freedom, so the interval is 10 +- t(0.975, 2) * sqrt(2 * (1/2 + 1/2)), t = 4.302652729911275. */
static void test_by_seed(void **state)
{
	(void)state;
	const double level[4] = { 10, 12, 20, 22 };
	for (int r = 0; r < 4; r++) {
		double cdf[N];
		for (int i = 0; i < N; i++)
			cdf[i] = level[r];
		const struct results_kv cfg[] = { { "policy", r < 2 ? "seedbase" : "seedcand" } };
		store_run(cdf, 100 + (uint64_t)r, cfg, 1);
	}
	struct study_compare_req req = request("policy=seedbase", "policy=seedcand");
	req.by_seed = 1;
	struct study_compare_result *res = malloc(sizeof *res);
	char err[512] = "";
	assert_non_null(res);
	assert_int_equal(study_compare(&req, res, err, sizeof err), 0);
	double half = 4.302652729911275 * sqrt(2.0);
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		assert_true(fabs(res->seed_base.mean[k] - 11) < 1e-12 && fabs(res->seed_cand.mean[k] - 21) < 1e-12);
		assert_true(fabs(res->seed_diffs[k].diff - 10) < 1e-12);
		assert_true(fabs(res->seed_diffs[k].lo - (10 - half)) < 1e-9);
		assert_true(fabs(res->seed_diffs[k].hi - (10 + half)) < 1e-9);
		assert_int_equal(res->seed_diffs[k].worse, 1);
	}
	assert_int_equal(res->seed_base.n, 2);
	assert_int_equal(res->failed, 1);
	req.exact = 1;             /* intervals, not one run with one run */
	assert_int_equal(study_compare(&req, res, err, sizeof err), -1);
	assert_string_equal(err, "--by-seed compares intervals; --exact compares one run with one run");
	free(res);
}

static void test_refusals(void **state)
{
	(void)state;
	struct study_compare_result *res = malloc(sizeof *res);
	char err[512] = "", want[256];
	assert_non_null(res);
	double cdf[N];
	for (int i = 0; i < N; i++)
		cdf[i] = i;
	const struct results_kv cfg[] = { { "policy", "lazy" } };
	int64_t id = store_run(cdf, 7, cfg, 1);
	char ids[32];
	snprintf(ids, sizeof ids, "%lld", (long long)id);
	struct study_compare_req req = request(ids, "999999");
	assert_int_equal(study_compare(&req, res, err, sizeof err), -1);
	snprintf(want, sizeof want, "no run 999999 in %s", db_path);
	assert_string_equal(err, want);
	req = request(ids, ids);
	req.metric = "ttfb";
	assert_int_equal(study_compare(&req, res, err, sizeof err), -1);
	assert_string_equal(err, "--metric: unknown metric 'ttfb' (latency, ttft, tpot or itl)");
	free(res);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail_doubled),
		cmocka_unit_test(test_by_seed),
		cmocka_unit_test(test_refusals),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
