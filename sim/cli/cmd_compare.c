/* sim/cli/cmd_compare.c: `simbatch compare`: is a candidate run's latency CDF
 * (or, for LLM runs, its TTFT, TPOT or inter-token CDF: --metric) worse than
 * a baseline's? (DESIGN.md section 3; the method is in cdf_compare.h.) Prints the KS distance and the candidate/baseline ratio at
 * p50, p90, p99 and p99.9, and exits 1 on a regression, 0 when within the
 * tolerances, 2 on bad input.
 *
 * A run is named by its id, or by a selector "key=value[,key=value...]" over
 * its stored options (the newest matching run). The baseline is a run in
 * --baseline-db (default: the same --db), or a text CDF (--baseline-cdf=FILE,
 * CSV quantile,latency_ms with 1000 rows) such as the committed CI baselines
 * in results/baseline/, which diff well in git where a database would not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../util/text.h"
#include "../../util/errkind.h"
#include "../store/cdf_compare.h"
#include "cli.h"
#include "compare_seeds.h"
#include "../../util/json.h"
#include "../../util/lines.h"
#include "../../util/options.h"
#include "../store/results.h"
#include "../store/metric_names.h"

static const struct opt_def compare_opts[] = {
	{ "db", OPT_STR, "results/simbatch.db", 0, 0, 0, "database of the candidate run (and of the baseline's unless --baseline-db)" },
	{ "baseline-db", OPT_STR, NULL, 0, 0, 0, "database of the baseline run" },
	{ "baseline-cdf", OPT_STR, NULL, 0, 0, 0, "baseline CDF as CSV quantile,latency_ms (1000 rows) instead of a run" },
	{ "tolerance", OPT_DOUBLE, "0.05", 0, 1e6, 0, "regression when a quantile (p50/p90/p99/p99.9) exceeds baseline * (1 + F)" },
	{ "ks-tolerance", OPT_DOUBLE, "0.05", 0, 1, 0, "regression when the one-sided KS distance (candidate slower) exceeds F" },
	{ "exact", OPT_FLAG, NULL, 0, 0, 0, "any difference at all fails (exit 1): for deterministic CI runs" },
	{ "metric", OPT_STR, "latency", 0, 0, 0, "the CDF judged: latency, or an LLM run's ttft, tpot or itl "
	  "(a --baseline-cdf file is taken as that metric's)" },
	{ "by-seed", OPT_FLAG, NULL, 0, 0, 0, "each selector names a configuration and every run it matches is a seed: "
	  "the means of the runs' quantiles compared with a 95% t-interval (the seed, not the request, as the unit)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define COMPARE_NOPTS (sizeof compare_opts / sizeof compare_opts[0])

static const char compare_usage[] =
	"usage: simbatch compare [--db=PATH] [--baseline-db=PATH] BASE_RUN CAND_RUN [--tolerance=F] [--ks-tolerance=F]\n"
	"       simbatch compare [--db=PATH] --baseline-cdf=FILE CAND_RUN ...\n"
	"       simbatch compare --by-seed BASE_SELECTOR CAND_SELECTOR ...   (every matching run a seed)\n"
	"A run is an id or a selector key=value[,key=value...] over its options (the newest match).\n"
	"Exit status: 0 within tolerance, 1 regression (or, with --exact, any change), 2 bad input.";

#define COMPARE_LABEL_MAX 1536   /* a path, the policy, model and hw names and the numbers, untruncated */

#define COMPARE_MAX_OPTS 160      /* more options than a run stores */

struct compare_opt {
	char key[64];
	char value[256];
};

struct compare_side {        /* one side of the comparison */
	double cdf_ms[METRICS_CDF_POINTS];
	char label[COMPARE_LABEL_MAX];    /* human-readable: where it came from */
	char source[512];                 /* database path or CSV path */
	int64_t run_id;                   /* 0 for a CSV baseline */
	size_t nmatch;                    /* runs the selector matched (1 for an id) */
	int live;                         /* -1 for a CSV baseline */
	int saturated;                    /* 0, 1, -1 unknown (a CSV, or a run stored before it was recorded) */
	int has_tokens;                   /* an LLM run: its token figures below (DESIGN.md 3b) */
	double tokens[9];                 /* COMPARE_TOKEN_KEYS' values */
	struct compare_opt opts[COMPARE_MAX_OPTS];   /* the run's stored options by key; none for a CSV */
	size_t nopts;
};

static void compare_add_option(void *ctx, const char *key, const char *value)
{
	struct compare_side *s = ctx;
	if (s->nopts == COMPARE_MAX_OPTS)
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

/* Calls show(ctx, n, key, base value, candidate value) for the n-th (0-based) option in which the
 * two runs differ, a value NULL where that run did not have the option; returns how many. */
static size_t compare_each_difference(const struct compare_side *b, const struct compare_side *c,
                                      void (*show)(void *, size_t, const char *, const char *, const char *),
                                      void *ctx)
{
	size_t i = 0, j = 0, n = 0;
	while (i < b->nopts || j < c->nopts) {
		int order = i == b->nopts ? 1 : j == c->nopts ? -1 : strcmp(b->opts[i].key, c->opts[j].key);
		const char *key = order <= 0 ? b->opts[i].key : c->opts[j].key;
		const char *bv = order <= 0 ? b->opts[i].value : NULL;
		const char *cv = order >= 0 ? c->opts[j].value : NULL;
		i += order <= 0;
		j += order >= 0;
		if (compare_bookkeeping(key) || (bv && cv && strcmp(bv, cv) == 0))
			continue;
		show(ctx, n++, key, bv, cv);
	}
	return n;
}

static void compare_show_text(void *ctx, size_t n, const char *key, const char *bv, const char *cv)
{
	(void)ctx;
	printf("%s%s %s -> %s", n ? ", " : "", key, bv ? bv : "(not given)", cv ? cv : "(not given)");
}

static void compare_show_json(void *ctx, size_t n, const char *key, const char *bv, const char *cv)
{
	(void)ctx;
	printf("%s{\"option\":", n ? "," : "");
	json_write_string(stdout, key);
	printf(",\"base\":");
	if (bv)
		json_write_string(stdout, bv);
	else
		printf("null");
	printf(",\"cand\":");
	if (cv)
		json_write_string(stdout, cv);
	else
		printf("null");
	printf("}");
}

/* An LLM run's token figures, shown beside the latency CDF (not part of the
 * verdict: the CDF comparison is what a regression means). */
#define compare_token_keys(i) metric_names[compare_token_ids[i]].name   /* the one names (metric_names.h) */
static const enum metric_id compare_token_ids[9] = {
	METRIC_TTFT_P50, METRIC_TTFT_P90, METRIC_TTFT_P99, METRIC_TPOT_P50, METRIC_TPOT_P90, METRIC_TPOT_P99,
	METRIC_ITL_P50, METRIC_ITL_P99, METRIC_GOODPUT_RPS,
};

/* Reads the token figures of an LLM run (an other run has none). */
static int compare_load_tokens(struct results_db *db, struct compare_side *s, char *err, size_t errlen)
{
	s->has_tokens = 1;
	for (int i = 0; i < 9; i++) {
		int got = results_read_stat(db, s->run_id, compare_token_keys(i), &s->tokens[i], err, errlen);
		if (got < 0)
			return -1;
		s->has_tokens &= got;
	}
	return 0;
}

/* Resolves spec (an id or a selector) in db and reads the run's CDF. */
static int compare_load_run(struct results_db *db, const char *path, const char *spec, const char *metric,
                            struct compare_side *s, char *err, size_t errlen)
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

/* Reads a CDF CSV: a header "quantile,latency_ms", then row i (1-based)
 * holding quantile i/1000 and its latency; '#' comments and blank lines are
 * skipped. Errors name the file and line. */
static int compare_load_csv(const char *path, struct compare_side *s, char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len;
	int header = 0, n = 0, got;
	unsigned long lineno;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	snprintf(s->source, sizeof s->source, "%s", path);
	s->run_id = 0;
	s->nmatch = 1;
	s->live = s->saturated = -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		lineno = rd.lineno;
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
		char *comma = strchr(line, ',');
		double q, v;
		if (!comma) {
			snprintf(err, errlen, "%s:%lu: expected quantile,latency_ms", path, lineno);
			goto fail;
		}
		*comma = '\0';
		if (txt_parse_double(line, &q) != 0 || txt_parse_double(comma + 1, &v) != 0) {
			snprintf(err, errlen, "%s:%lu: expected two numbers quantile,latency_ms", path, lineno);
			goto fail;
		}
		if (n == METRICS_CDF_POINTS) {
			snprintf(err, errlen, "%s:%lu: more than %d CDF rows", path, lineno, METRICS_CDF_POINTS);
			goto fail;
		}
		if (fabs(q - (double)(n + 1) / METRICS_CDF_POINTS) > 1e-9) {
			snprintf(err, errlen, "%s:%lu: quantile %s, expected %g", path, lineno, line,
			         (double)(n + 1) / METRICS_CDF_POINTS);
			goto fail;
		}
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

/* JSON has no infinity: a ratio over a zero baseline prints as null. */
static void compare_json_number(double v)
{
	if (isfinite(v))
		printf("%.17g", v);
	else
		printf("null");
}

static void compare_print_json(const char *metric, const struct compare_side *b, const struct compare_side *c,
                               const struct cdfc_limits *lim, const struct cdfc_result *r)
{
	const struct compare_side *sides[2] = { b, c };
	const char *names[2] = { "baseline", "candidate" };
	printf("{");
	for (int i = 0; i < 2; i++) {
		printf("\"%s\":{\"source\":", names[i]);
		json_write_string(stdout, sides[i]->source);
		printf(",\"run_id\":");
		if (sides[i]->run_id)
			printf("%lld", (long long)sides[i]->run_id);
		else
			printf("null");
		printf(",\"matched\":%zu,\"live\":%s,\"saturated\":%s,\"label\":", sides[i]->nmatch,
		       sides[i]->live < 0 ? "null" : sides[i]->live ? "true" : "false",
		       sides[i]->saturated < 0 ? "null" : sides[i]->saturated ? "true" : "false");
		json_write_string(stdout, sides[i]->label);
		printf("},");
	}
	printf("\"differing_options\":");
	if (b->run_id && c->run_id) {
		printf("[");
		compare_each_difference(b, c, compare_show_json, NULL);
		printf("],");
	} else {
		printf("null,");           /* a CDF file has no options */
	}
	printf("\"metric\":\"%s\",\"quantiles\":[", metric);
	for (int i = 0; i < CDFC_NQUANTILES; i++) {
		const struct cdfc_quantile *p = &r->quantiles[i];
		printf("%s{\"name\":\"%s\",\"q\":%g,\"base_ms\":", i ? "," : "", p->name, p->q);
		compare_json_number(p->base_ms);
		printf(",\"cand_ms\":");
		compare_json_number(p->cand_ms);
		printf(",\"ratio\":");
		compare_json_number(p->ratio);
		printf(",\"worse\":%s}", p->worse ? "true" : "false");
	}
	/* KS values are multiples of 1/1000: six digits print them exactly */
	printf("],");
	if (b->has_tokens && c->has_tokens) {
		printf("\"tokens\":[");
		for (int i = 0; i < 9; i++) {
			printf("%s{\"name\":\"%s\",\"base\":", i ? "," : "", compare_token_keys(i));
			compare_json_number(b->tokens[i]);
			printf(",\"cand\":");
			compare_json_number(c->tokens[i]);
			printf(",\"ratio\":");
			compare_json_number(b->tokens[i] > 0 ? c->tokens[i] / b->tokens[i] : NAN);
			printf("}");
		}
		printf("],");
	}
	printf("\"ks\":%.6g,\"ks_worse\":%.6g,\"ks_better\":%.6g,\"ks_at_ms\":", r->ks, r->ks_worse,
	       r->ks_better);
	compare_json_number(r->ks_at_ms);
	printf(",\"ks_resolution\":%g,\"tolerance\":%.15g,\"ks_tolerance\":%.15g,\"exact\":%s,"
	       "\"regression\":%s,\"changed\":%s}\n",
	       1.0 / METRICS_CDF_POINTS, lim->tolerance, lim->ks_tolerance, lim->exact ? "true" : "false",
	       r->regression ? "true" : "false", r->changed ? "true" : "false");
}

static void compare_print_text(const char *metric, const struct compare_side *b, const struct compare_side *c,
                               const struct cdfc_limits *lim, const struct cdfc_result *r)
{
	printf("baseline:  %s\ncandidate: %s\n", b->label, c->label);
	if (b->run_id && c->run_id) {
		printf("differ in: ");
		if (!compare_each_difference(b, c, compare_show_text, NULL))
			printf("no option (the same configuration)");
		printf("\n");
	}
	printf("\n");
	if (strcmp(metric, "latency") != 0)
		printf("judged on the %s CDF\n", metric);
	printf("%-8s %14s %14s %9s\n", "quantile", "baseline_ms", "candidate_ms", "ratio");
	for (int i = 0; i < CDFC_NQUANTILES; i++) {
		const struct cdfc_quantile *p = &r->quantiles[i];
		printf("%-8s %14.6g %14.6g %9.4f%s\n", p->name, p->base_ms, p->cand_ms, p->ratio,
		       p->worse ? "  worse" : "");
	}
	if (b->has_tokens && c->has_tokens) {
		printf("\n%-12s %14s %14s %9s   (LLM runs; shown, not judged)\n", "token", "baseline", "candidate", "ratio");
		for (int i = 0; i < 9; i++)
			printf("%-12s %14.6g %14.6g %9.4f\n", compare_token_keys(i), b->tokens[i], c->tokens[i],
			       b->tokens[i] > 0 ? c->tokens[i] / b->tokens[i] : NAN);
	}
	printf("\nKS distance %.3f at %.6g ms (candidate slower by up to %.3f, faster by up to %.3f; "
	       "resolution 1/%d)\n", r->ks, r->ks_at_ms, r->ks_worse, r->ks_better, METRICS_CDF_POINTS);
	if (r->regression) {
		printf("REGRESSION:");
		for (int i = 0; i < CDFC_NQUANTILES; i++)
			if (r->quantiles[i].worse)
				printf(" %s x%.4f > x%.4f;", r->quantiles[i].name, r->quantiles[i].ratio, 1 + lim->tolerance);
		if (r->ks_exceeded)
			printf(" one-sided KS %.3f > %.3f;", r->ks_worse, lim->ks_tolerance);
		printf("\n");
	} else if (lim->exact && r->changed) {
		printf("CHANGED: the CDFs differ (KS %.3f) and --exact allows no difference\n", r->ks);
	} else {
		printf("OK: within tolerance %g (quantiles) and %g (one-sided KS)%s\n", lim->tolerance,
		       lim->ks_tolerance, lim->exact ? ", and identical" : "");
	}
}

/* The metric known, one baseline, and the runs it needs: 0, or -1 with err. */
static int compare_check_options(const struct opt_set *o, char *err, size_t errlen)
{
	const char *metric = opt_str(o, "metric");
	int known = strcmp(metric, "latency") == 0;
	for (int i = 0; i < RESULTS_TOKEN_METRICS; i++)
		known |= strcmp(metric, results_token_metrics[i]) == 0;
	if (!known) {
		snprintf(err, errlen, "--metric: unknown metric '%s' (latency, ttft, tpot or itl)", metric);
		return -1;
	}
	const char *csv = opt_str(o, "baseline-cdf");
	if (csv && opt_given(o, "baseline-db")) {
		snprintf(err, errlen, "give --baseline-db or --baseline-cdf, not both");
		return -1;
	}
	if (o->npositional != (csv ? 1u : 2u)) {
		snprintf(err, errlen, "compare needs %s (see --help)", csv ? "one run: CAND_RUN" : "two runs: BASE_RUN CAND_RUN");
		return -1;
	}
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	char err[768] = "";
	struct opt_set o;
	struct results_db *db = NULL, *base_db = NULL;
	struct compare_side *base = NULL, *cand = NULL;
	int rc = CLI_BAD_INPUT;
	if (opt_parse(&o, compare_opts, COMPARE_NOPTS, argc, argv, 2, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, compare_usage, compare_opts, COMPARE_NOPTS);
		return CLI_OK;
	}
	if (compare_check_options(&o, err, sizeof err) != 0)
		goto fail;
	const char *metric = opt_str(&o, "metric"), *csv = opt_str(&o, "baseline-cdf");
	size_t want = csv ? 1 : 2;
	base = calloc(1, sizeof *base);
	cand = calloc(1, sizeof *cand);
	if (!base || !cand) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	const char *db_path = opt_str(&o, "db");
	if (results_open_readonly(db_path, &db, err, sizeof err) != 0)
		goto fail;
	if (csv) {
		if (opt_flag(&o, "by-seed")) {
			snprintf(err, sizeof err, "--by-seed compares runs of two configurations, not a --baseline-cdf");
			goto fail;
		}
		if (compare_load_csv(csv, base, err, sizeof err) != 0)
			goto fail;
	} else {
		const char *base_path = opt_str(&o, "baseline-db");
		struct results_db *bdb = db;
		if (base_path) {
			if (results_open_readonly(base_path, &base_db, err, sizeof err) != 0)
				goto fail;
			bdb = base_db;
		} else {
			base_path = db_path;
		}
		if (opt_flag(&o, "by-seed")) {
			if (opt_flag(&o, "exact")) {
				snprintf(err, sizeof err, "--by-seed compares intervals; --exact compares one run with one run");
				goto fail;
			}
			rc = compare_by_seed(bdb, base_path, o.positional[0], db, db_path, o.positional[1], metric,
			                     opt_double(&o, "tolerance"), opt_flag(&o, "json"), err, sizeof err);
			if (err[0])
				goto fail;
			goto done;
		}
		if (compare_load_run(bdb, base_path, o.positional[0], metric, base, err, sizeof err) != 0)
			goto fail;
	}
	if (compare_load_run(db, db_path, o.positional[want - 1], metric, cand, err, sizeof err) != 0)
		goto fail;

	struct cdfc_limits lim = { opt_double(&o, "tolerance"), opt_double(&o, "ks-tolerance"), opt_flag(&o, "exact") };
	struct cdfc_result r;
	if (cdfc_compare(base->cdf_ms, cand->cdf_ms, &lim, &r, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "json"))
		compare_print_json(metric, base, cand, &lim, &r);
	else
		compare_print_text(metric, base, cand, &lim, &r);
	rc = r.regression || (lim.exact && r.changed) ? CLI_FAILED : CLI_OK;
done:
	if (fflush(stdout) != 0) {
		snprintf(err, sizeof err, "cannot write the report");
		rc = CLI_FAILED;
		goto fail;
	}
	free(base);
	free(cand);
	results_close(base_db);
	results_close(db);
	return rc;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(base);
	free(cand);
	results_close(base_db);
	results_close(db);
	return rc;
}
