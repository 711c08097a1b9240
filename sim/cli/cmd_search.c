/* sim/cli/cmd_search.c: `simbatch search FILE`: which deployment to buy. The
 * file (search_spec.h, sim/SEARCH.md) names the axes, the shared options
 * (model, workload, SLOs as capacity takes them), each GPU kind's price and
 * a goal: the cheapest configuration meeting a target rate, or the most
 * capacity a budget buys. Each configuration's answer is one `simbatch
 * capacity --json` child (every probe of it its own runs, as capacity does),
 * --jobs at a time.
 *
 * Pruning, each a reason that cannot change the answer:
 *  - a configuration whose hardware cannot be opened for it (the weights do
 *    not fit its GPUs at its --tp, no measured all-reduce for that --tp) is
 *    never simulated (the hardware model's own check, in process);
 *  - with a target rate, configurations are simulated cheapest first, and
 *    one that costs more than a configuration already found to meet the
 *    target is not started (it cannot be the cheapest); with a budget, one
 *    that costs more than the budget. --exhaustive simulates every one (the
 *    full Pareto front; the check that pruning kept the answer);
 *  - with a target, a fleet of N replicas is not simulated when its one-
 *    replica sibling (the same options but --replicas) saw saturation at R
 *    req/s and N x R is below the target: N replicas cannot serve more than
 *    N times what one can (study_search_bounded).
 * A configuration capacity refuses (a KV cache that cannot hold a request,
 * no rate meeting the targets even at the lowest probe) is infeasible, with
 * capacity's reason.
 *
 * Resumable: each answer is appended to the results file (--out, default
 * results/search-NAME.csv) as one whole line in one write, keyed by the
 * configuration's options; a rerun reads it and simulates only what is
 * missing, so a killed search continues where it stopped. A finished whole
 * search is stored in the results database (--db; search_store), which is
 * checked before anything runs and written only at the end. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>
#include "cli.h"
#include "search_run.h"
#include "search_config.h"
#include "search_front.h"
#include "search_file.h"
#include "search_bound.h"
#include "search_results.h"
#include "procpool.h"
#include "parts_export.h"
#include "../store/results.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../../util/errkind.h"
#include "../../util/json_read.h"
#include "../../util/options.h"
#include "../../util/text.h"

static const struct opt_def search_opts[] = {
	{ "out", OPT_STR, NULL, 0, 0, 0, "results file (CSV, one line a configuration; default results/search-NAME.csv): "
	  "a rerun resumes from it" },
	{ "jobs", OPT_UINT, NULL, 1, 4096, 0, "configurations at a time (default: the online CPUs)" },
	{ "exhaustive", OPT_FLAG, NULL, 0, 0, 0, "simulate every configuration that fits, not only what can win" },
	{ "list", OPT_FLAG, NULL, 0, 0, 0, "print the configurations, their cost and what pruning does, and stop" },
	{ "part", OPT_STR, NULL, 0, 0, 0, "I/N: only the configurations of part I of N (those whose number is I-1 modulo "
	  "N), for a search spread over machines" },
	{ "export", OPT_STR, NULL, 0, 0, 0, "parallel or slurm: print the parts as GNU parallel jobs or a Slurm array "
	  "script, each writing its own results file, and stop" },
	{ "shards", OPT_UINT, NULL, 1, 1e6, 0, "with --export: parts (default: the configurations, at most 64)" },
	{ "shard-dir", OPT_STR, "shards", 0, 0, 0, "with --export: where the parts write their results" },
	{ "db", OPT_STR, "results/simbatch.db", 0, 0, 0, "results database the finished search is stored in (tables "
	  "searches and search_configs; a part of a search is not stored)" },
	{ "no-db", OPT_FLAG, NULL, 0, 0, 0, "do not store the search" },
	{ "front", OPT_STR, NULL, 0, 0, 0, "LLM: also run each configuration at its capacity and write its tokens/s/user "
	  "and tokens/s/GPU, the Pareto front marked, to this CSV (docs/SCENARIOS.md)" },
	{ "front-requests", OPT_UINT, "2000", 10, 1e9, 0, "with --front: requests of each configuration's run" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object on stdout" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress on stderr" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define SEARCH_NOPTS (sizeof search_opts / sizeof search_opts[0])

static const char search_usage[] =
	"usage: simbatch search FILE [RESULTS.csv ...] [--out=CSV] [--jobs=N] [--exhaustive] [--list] [--json]\n"
	"       simbatch search FILE --export=parallel|slurm [--shards=N] [--shard-dir=DIR]\n"
	"The cheapest configuration meeting the file's target rate under its SLOs (or the most capacity\n"
	"its budget buys): each configuration's capacity (simbatch capacity), its cost from the file's\n"
	"GPU prices, capacity per dollar and the Pareto front of cost against capacity. RESULTS files\n"
	"(a distributed search's parts) are read and joined into --out. File format: sim/SEARCH.md.";

static volatile sig_atomic_t search_stop;

static void search_on_signal(int sig)
{
	search_stop = sig;
}

/* ---- simulating: one capacity child a configuration ---- */

struct search_job {                /* a capacity child under way */
	struct search_config c;
	size_t index;
};

static int search_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct search_run *r = ud;
	size_t i;                              /* a results file that cannot be written: stop */
	if (!r->failure[0] && (i = study_search_next(&r->plan)) != SIZE_MAX) {
		struct search_config c;
		if (search_config_make(r->spec, i, &c, err, errlen) != 0)
			return -1;
		size_t k = 0;
		r->argv[k++] = "simbatch";
		r->argv[k++] = "capacity";
		r->argv[k++] = "--json";
		r->argv[k++] = "--quiet";
		r->argv[k++] = "--jobs=1";
		r->argv[k++] = "--no-db";              /* the search stores its own answer; a configuration's is in it */
		for (size_t o = 0; o < c.nopts; o++)
			r->argv[k++] = c.opts[o];
		r->argv[k] = NULL;
		/* the child's options stay the job's until it is done (posix_spawn copies argv; freeing then is simplest) */
		struct search_job *owned = malloc(sizeof *owned);
		if (!owned) {
			search_config_free(&c);
			return err_memory(err, errlen, "out of memory");
		}
		owned->c = c;
		owned->index = i;
		job->argv = r->argv;
		job->ctx = owned;
		job->capture_stdout = 1;
		r->running++;
		return 1;
	}
	return 0;
}

static void search_done(void *ud, void *ctx, const struct pp_result *res)
{
	struct search_run *r = ud;
	struct search_job *job = ctx;
	size_t i = job->index;
	struct study_search_row *w = &r->plan.rows[i];
	r->running--;
	search_config_free(&job->c);
	free(job);
	struct json_doc *d = res->exit_code == 0 ? json_doc_parse(res->out) : NULL;   /* capacity's --json */
	if (res->exit_code == 0)
		w->saturated_rps = d ? search_saturated_rps(d) : NAN;
	int ok = d && json_doc_number(d, NULL, "capacity_rps", -1, &w->capacity) == 0 &&
	         json_doc_number(d, NULL, "bracket_rps", 0, &w->lo) == 0 &&
	         json_doc_number(d, NULL, "bracket_rps", 1, &w->hi) == 0;
	if (ok && (json_doc_number(d, "llm", "hw_band_rps", 0, &w->band_lo) != 0 ||
	           json_doc_number(d, "llm", "hw_band_rps", 1, &w->band_hi) != 0))
		w->band_lo = w->band_hi = NAN;
	json_doc_free(d);
	if (ok) {
		w->status = STUDY_SR_OK;
	} else if (search_stop) {
		return;                          /* stopped by the search's own signal: simulated again next time */
	} else {
		const char *e = res->errtext;
		if (strncmp(e, "simbatch: ", 10) == 0)
			e += 10;
		w->status = STUDY_SR_INFEASIBLE;
		w->capacity = w->lo = w->hi = 0;
		w->band_lo = w->band_hi = NAN;
		snprintf(w->reason, sizeof w->reason, "%.*s", (int)strcspn(e, "\n"),
		         *e ? e : res->signal ? "killed by a signal" : "no message");
	}
	r->simulated++;
	study_search_measured(&r->plan, i);
	char err[512];
	if (!r->failure[0] && search_append(r, i, err, sizeof err) != 0)
		snprintf(r->failure, sizeof r->failure, "%s", err);
	if (!r->quiet)
		fprintf(stderr, "search: %zu simulated, %zu running, $%.4g/h: %s\n", r->simulated, r->running, w->cost,
		        w->status == STUDY_SR_OK ? "ok" : w->reason);
}

/* ---- a search spread over machines ---- */

/* Prints the parts as jobs (GNU parallel: a command a line; Slurm: an array script). */
static int search_export(const struct search_spec *spec, const struct opt_set *o, const char *exe, char *err,
                         size_t errlen)
{
	struct parts_export e = {
		.kind = opt_str(o, "export"), .subcommand = "search", .path = spec->path, .exe = exe,
		.items = spec->nconfigs, .items_name = "configurations",
		.parts = opt_given(o, "shards") ? opt_uint(o, "shards") : 0, .dir = opt_str(o, "shard-dir"),
		.out_option = "out", .prefix = "search", .ext = ".csv",
		.what_each_writes = "results file (resumable: a requeued task skips what its file holds)",
		.join = "simbatch search FILE", .quiet = opt_flag(o, "quiet"),
	};
	return parts_export_print(&e, err, errlen);
}

/* --part=I/N */
static int search_part(const char *text, struct search_run *r, char *err, size_t errlen)
{
	char buf[64];
	uint64_t i, n;
	snprintf(buf, sizeof buf, "%s", text);
	char *slash = strchr(buf, '/');
	if (slash)
		*slash = '\0';
	if (!slash || txt_parse_uint(buf, 1000000, &i) != 0 || txt_parse_uint(slash + 1, 1000000, &n) != 0 || i < 1 ||
	    i > n) {
		snprintf(err, errlen, "--part=%s: expected I/N with 1 <= I <= N", text);
		return -1;
	}
	r->plan.part_i = (size_t)i;
	r->plan.part_n = (size_t)n;
	return 0;
}

/* ---- the command ---- */

/* A configuration's label for the reason a bound gives (study_search_label_fn). */
static void search_plan_label(void *spec, size_t i, char *buf, size_t len)
{
	search_label(spec, i, buf, len);
}

/* Each configuration's row (its cost, GPUs, family; pruned when its hardware cannot hold it) and
 * the order by cost: 0 with *fitting those not pruned, -1 with err (a configuration's own
 * refusal), -2 out of memory. */
static int search_rows_init(struct search_run *r, struct search_fit **fits, size_t *nfits, size_t *fitting, char *err,
                            size_t errlen)
{
	const struct search_spec *spec = r->spec;
	r->plan.n = spec->nconfigs;
	r->plan.target_rps = spec->target_rps;
	r->plan.budget = spec->budget;
	r->plan.label = search_plan_label;
	r->plan.label_ctx = (void *)spec;
	r->plan.rows = calloc(spec->nconfigs, sizeof *r->plan.rows);
	r->plan.order = calloc(spec->nconfigs, sizeof *r->plan.order);
	if (!r->plan.rows || !r->plan.order) {
		err_memory(err, errlen, "out of memory");
		return -2;
	}
	for (size_t i = 0; i < spec->nconfigs; i++) {
		struct search_config c;
		if (search_config_make(spec, i, &c, err, errlen) != 0)
			return -1;
		struct study_search_row *w = &r->plan.rows[i];
		w->cost = c.cost_per_hour;
		w->gpus = c.replicas * c.tp;
		w->key_hash = search_hash(c.key);
		w->band_lo = w->band_hi = NAN;
		w->saturated_rps = NAN;
		search_family(&c, w);
		if (!search_fits(&c, fits, nfits, w->reason, sizeof w->reason))
			w->status = STUDY_SR_PRUNED;
		else
			(*fitting)++;
		search_config_free(&c);
	}
	study_search_order(&r->plan);
	return 0;
}

/* Runs the configurations not yet answered through the pool, SIGINT and SIGTERM
 * caught meanwhile: pp_run's answer (1: stopped by a signal). */
static int search_simulate(struct search_run *r, const char *exe, unsigned jobs, char *err, size_t errlen)
{
	struct sigaction sa = { .sa_handler = search_on_signal }, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	struct pp_config pc = { .exe = exe, .jobs = jobs, .next = search_next, .done = search_done, .ud = r,
	                        .stop = &search_stop };
	int prc = pp_run(&pc, err, errlen);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	return prc;
}

/* --list: every configuration, cheapest first, the pruned with their reason. */
static void search_print_list(const struct search_run *r)
{
	for (size_t k = 0; k < r->spec->nconfigs; k++) {
		size_t i = r->plan.order[k];
		char label[1024];
		search_label(r->spec, i, label, sizeof label);
		printf("$%-9.4g %5u GPUs  %s%s%s\n", r->plan.rows[i].cost, r->plan.rows[i].gpus, label,
		       r->plan.rows[i].status == STUDY_SR_PRUNED ? "  pruned: " : "", r->plan.rows[i].status == STUDY_SR_PRUNED ? r->plan.rows[i].reason : "");
	}
}

/* results/search-NAME.csv for a search file NAME.search, into buf. */
static const char *search_default_out(const struct search_spec *spec, char *buf, size_t len)
{
	const char *base = strrchr(spec->path, '/');
	base = base ? base + 1 : spec->path;
	const char *dot = strrchr(base, '.');
	snprintf(buf, len, "results/search-%.*s.csv", (int)(dot && dot != base ? dot - base : (ptrdiff_t)strlen(base)),
	         base);
	return buf;
}

/* r->db_path (if any) checked now and written only once the search is whole, as a run's; opened (a new one
 * created) now, as a sweep's: a full disk fails here, not after the whole search; one this search created
 * (*created) is removed again unless the search is stored. 0, or -1 with err. */
static int search_open_db(struct search_run *r, int *created, char *err, size_t errlen)
{
	if (!r->db_path)
		return 0;
	if (results_check(r->db_path, err, errlen) != 0)
		return -1;
	*created = access(r->db_path, F_OK) != 0;
	return results_open(r->db_path, &r->db, err, errlen);
}

/* Simulates what is left, then stores and prints the search: CLI_OK; CLI_FAILED with err; or a
 * signal's exit status (128 plus its number, as a shell reports it and sweep exits) with the
 * configurations answered so far kept for the next run. */
static int search_run_and_report(struct search_run *r, const char *exe, unsigned jobs, int json, char *err,
                                 size_t errlen)
{
	int prc = search_simulate(r, exe, jobs, err, errlen);
	if (prc < 0)
		return CLI_FAILED;
	if (r->failure[0]) {
		snprintf(err, errlen, "%s", r->failure);
		return CLI_FAILED;
	}
	if (prc == 1 || search_stop) {
		fprintf(stderr, "simbatch: search stopped by a signal: %zu configurations kept in %s; run it again to "
		        "go on\n", r->simulated, r->out_path);
		return 128 + (search_stop ? search_stop : SIGTERM);
	}
	if (r->db_path && search_store(r, err, errlen) != 0)
		return CLI_FAILED;
	if (json)
		search_report_json(stdout, r);
	else
		search_report_text(stdout, r);
	return r->front_path ? search_front(r, r->front_path, r->front_requests, exe, jobs, !json, err, errlen) : CLI_OK;
}

int cmd_search(int argc, char **argv)
{
	char err[1536] = "", exe[4096], out_default[600];
	struct opt_set o;
	struct search_spec *spec = NULL;
	struct search_run r = { .out_fd = -1, .plan.best_cost = INFINITY };
	struct search_fit *fits = NULL;
	size_t nfits = 0;
	int rc = CLI_BAD_INPUT, db_created = 0;
	if (opt_parse(&o, search_opts, SEARCH_NOPTS, argc, argv, 8, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, search_usage, search_opts, SEARCH_NOPTS);
		return CLI_OK;
	}
	if (o.npositional < 1) {
		snprintf(err, sizeof err, "search takes a search file (simbatch search --help)");
		goto fail;
	}
	if (opt_given(&o, "part") && search_part(opt_str(&o, "part"), &r, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "no-db") && opt_given(&o, "db")) {      /* as run refuses it */
		snprintf(err, sizeof err, "give --db=PATH or --no-db, not both: --no-db stores nothing, --db names where "
		         "to store");
		goto fail;
	}
	if (search_spec_load(o.positional[0], &spec, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	r.spec = spec;
	r.front_path = opt_str(&o, "front");
	r.front_requests = opt_uint(&o, "front-requests");
	if (r.front_path && (r.plan.part_n || opt_given(&o, "export") || search_front_check(spec, r.front_path, err,
	                                                                            sizeof err) != 0)) {
		if (r.plan.part_n || opt_given(&o, "export"))
			snprintf(err, sizeof err, "--front runs the whole search's configurations: not with --part or --export");
		goto fail;
	}
	r.plan.exhaustive = opt_flag(&o, "exhaustive");
	r.quiet = opt_flag(&o, "quiet") || opt_flag(&o, "json");
	size_t fitting = 0;
	int irc = search_rows_init(&r, &fits, &nfits, &fitting, err, sizeof err);
	if (irc != 0) {
		rc = irc == -2 ? CLI_FAILED : CLI_BAD_INPUT;
		goto fail;
	}
	if (opt_flag(&o, "list")) {
		search_print_list(&r);
		rc = CLI_OK;
		goto out;
	}
	if (!fitting) {
		snprintf(err, sizeof err, "%s: no configuration left after pruning (first: %s)", spec->path, r.plan.rows[0].reason);
		goto fail;
	}
	r.out_path = opt_given(&o, "out") ? opt_str(&o, "out") : search_default_out(spec, out_default, sizeof out_default);
	if (pp_self_exe(exe, sizeof exe, err, sizeof err) != 0) {
		rc = CLI_FAILED;
		goto fail;
	}
	r.exe = exe;
	if (opt_given(&o, "export")) {
		if (search_export(spec, &o, exe, err, sizeof err) != 0) {
			rc = cli_exit_status();
			goto fail;
		}
		rc = CLI_OK;
		goto out;
	}
	r.db_path = opt_flag(&o, "no-db") || r.plan.part_n ? NULL : opt_str(&o, "db");
	if (search_open_db(&r, &db_created, err, sizeof err) != 0 ||
	    search_resume(&r, (const char *const *)o.positional + 1, o.npositional - 1, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	for (size_t i = 0; i < spec->nconfigs; i++)
		study_search_measured(&r.plan, i);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned jobs = opt_given(&o, "jobs") ? (unsigned)opt_uint(&o, "jobs") : cpus > 0 ? (unsigned)cpus : 1;
	rc = search_run_and_report(&r, exe, jobs, opt_flag(&o, "json"), err, sizeof err);
	if (rc == CLI_FAILED || rc == CLI_BAD_INPUT)
		goto fail;
	goto out;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
out:
	results_close(r.db);
	if (db_created && !r.search_id)
		results_remove(r.db_path);
	if (r.out_fd >= 0)
		close(r.out_fd);
	free(fits);
	free(r.plan.rows);
	free(r.plan.order);
	search_spec_free(spec);
	return rc;
}
