/* sim/cli/cmd_compare.c: `simbatch compare` parsed, called (sim/study/compare.h) and printed: is a candidate run's latency CDF
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
#include "../../util/errkind.h"
#include "../../util/json.h"
#include "../../util/options.h"
#include "../study/compare.h"
#include "cli.h"
#include "compare_seeds.h"

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

static void compare_show_text(const struct study_compare_result *res)
{
	for (size_t n = 0; n < res->ndiffs; n++) {
		const struct study_compare_diff *d = &res->diffs[n];
		const char *key = d->base_opt >= 0 ? res->base.opts[d->base_opt].key : res->cand.opts[d->cand_opt].key;
		printf("%s%s %s -> %s", n ? ", " : "", key, d->base_opt >= 0 ? res->base.opts[d->base_opt].value :
		       "(not given)", d->cand_opt >= 0 ? res->cand.opts[d->cand_opt].value : "(not given)");
	}
}

static void compare_json_opt(const struct study_compare_side *s, int i)
{
	if (i >= 0)
		json_write_string(stdout, s->opts[i].value);
	else
		printf("null");
}

static void compare_show_json(const struct study_compare_result *res)
{
	for (size_t n = 0; n < res->ndiffs; n++) {
		const struct study_compare_diff *d = &res->diffs[n];
		printf("%s{\"option\":", n ? "," : "");
		json_write_string(stdout, d->base_opt >= 0 ? res->base.opts[d->base_opt].key
		                                           : res->cand.opts[d->cand_opt].key);
		printf(",\"base\":");
		compare_json_opt(&res->base, d->base_opt);
		printf(",\"cand\":");
		compare_json_opt(&res->cand, d->cand_opt);
		printf("}");
	}
}

/* JSON has no infinity: a ratio over a zero baseline prints as null. */
static void compare_json_number(double v)
{
	if (isfinite(v))
		printf("%.17g", v);
	else
		printf("null");
}

static void compare_json_sides(const struct study_compare_result *res)
{
	const struct study_compare_side *sides[2] = { &res->base, &res->cand };
	const char *names[2] = { "baseline", "candidate" };
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
}

static void compare_print_json(const char *metric, const struct study_compare_result *res)
{
	const struct study_compare_side *b = &res->base, *c = &res->cand;
	const struct cdfc_limits *lim = &res->lim;
	const struct cdfc_result *r = &res->r;
	printf("{");
	compare_json_sides(res);
	printf("\"differing_options\":");
	if (b->run_id && c->run_id) {
		printf("[");
		compare_show_json(res);
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
		for (int i = 0; i < STUDY_COMPARE_NTOKENS; i++) {
			printf("%s{\"name\":\"%s\",\"base\":", i ? "," : "", study_compare_token_name(i));
			compare_json_number(b->tokens[i]);
			printf(",\"cand\":");
			compare_json_number(c->tokens[i]);
			printf(",\"ratio\":");
			compare_json_number(res->token_ratio[i]);
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

/* The verdict's line: the quantiles and KS distance beyond the limits, a change --exact refuses, or OK. */
static void compare_print_verdict(const struct cdfc_limits *lim, const struct cdfc_result *r)
{
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

static void compare_print_text(const char *metric, const struct study_compare_result *res)
{
	const struct study_compare_side *b = &res->base, *c = &res->cand;
	const struct cdfc_result *r = &res->r;
	printf("baseline:  %s\ncandidate: %s\n", b->label, c->label);
	if (b->run_id && c->run_id) {
		printf("differ in: ");
		if (!res->ndiffs)
			printf("no option (the same configuration)");
		compare_show_text(res);
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
		for (int i = 0; i < STUDY_COMPARE_NTOKENS; i++)
			printf("%-12s %14.6g %14.6g %9.4f\n", study_compare_token_name(i), b->tokens[i], c->tokens[i],
			       res->token_ratio[i]);
	}
	printf("\nKS distance %.3f at %.6g ms (candidate slower by up to %.3f, faster by up to %.3f; "
	       "resolution 1/%d)\n", r->ks, r->ks_at_ms, r->ks_worse, r->ks_better, METRICS_CDF_POINTS);
	compare_print_verdict(&res->lim, r);
}

/* The request the options make: 0, or -1 with err (a wrong metric or two baselines named before a
 * wrong count of runs). */
static int compare_request(const struct opt_set *o, struct study_compare_req *req, char *err, size_t errlen)
{
	*req = (struct study_compare_req){
		.db = opt_str(o, "db"), .baseline_db = opt_given(o, "baseline-db") ? opt_str(o, "baseline-db") : NULL,
		.baseline_cdf = opt_str(o, "baseline-cdf"), .metric = opt_str(o, "metric"),
		.tolerance = opt_double(o, "tolerance"), .ks_tolerance = opt_double(o, "ks-tolerance"),
		.exact = opt_flag(o, "exact"), .by_seed = opt_flag(o, "by-seed"),
	};
	if (study_compare_check(req, err, errlen) != 0)
		return -1;
	const char *csv = req->baseline_cdf;
	if (o->npositional != (csv ? 1u : 2u)) {
		snprintf(err, errlen, "compare needs %s (see --help)", csv ? "one run: CAND_RUN" : "two runs: BASE_RUN CAND_RUN");
		return -1;
	}
	req->base = csv ? NULL : o->positional[0];
	req->cand = o->positional[csv ? 0 : 1];
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	char err[768] = "";
	struct opt_set o;
	struct study_compare_req req;
	struct study_compare_result *res = NULL;
	int rc = CLI_BAD_INPUT;
	if (opt_parse(&o, compare_opts, COMPARE_NOPTS, argc, argv, 2, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, compare_usage, compare_opts, COMPARE_NOPTS);
		return CLI_OK;
	}
	if (compare_request(&o, &req, err, sizeof err) != 0)
		goto fail;
	res = malloc(sizeof *res);
	if (!res) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	if (study_compare(&req, res, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	if (req.by_seed)
		compare_print_seeds(&req, res, opt_flag(&o, "json"));
	else if (opt_flag(&o, "json"))
		compare_print_json(req.metric, res);
	else
		compare_print_text(req.metric, res);
	rc = res->failed ? CLI_FAILED : CLI_OK;
	free(res);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "simbatch: cannot write the report\n");
		return CLI_FAILED;
	}
	return rc;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(res);
	return rc;
}
