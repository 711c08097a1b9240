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
 *    N times what one can (search_bounded).
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

#define SEARCH_HASH_START 1469598103934665603ull   /* FNV-1a's offset basis */

/* FNV-1a of s, continued from h (SEARCH_HASH_START: s alone). */
static uint64_t search_hash_more(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint64_t search_hash(const char *s)
{
	return search_hash_more(SEARCH_HASH_START, s);
}

/* ---- pruning: can the hardware hold this configuration at all? ---- */

struct search_fit {
	char key[300];
	int ok;
	char reason[300];
};

static int search_opt_value(const struct search_config *c, const char *name, const char **value)
{
	size_t n = strlen(name);
	for (size_t k = 0; k < c->nopts; k++)
		if (strncmp(c->opts[k] + 2, name, n) == 0 && c->opts[k][2 + n] == '=') {
			*value = c->opts[k] + 3 + n;
			return 1;
		}
	return 0;
}

/* 1 when c's model fits its hardware at its --tp (cached by model, hardware and tp), else 0 with why. */
static int search_fits(const struct search_config *c, struct search_fit **cache, size_t *ncache, char *why,
                       size_t whylen)
{
	const char *model = "transformer";
	search_opt_value(c, "model", &model);
	char key[300];
	int cut = snprintf(key, sizeof key, "%s|%s|%u", model, c->hw, c->tp) >= (int)sizeof key;
	for (size_t i = 0; !cut && i < *ncache; i++)      /* a key cut short could name another: not cached */
		if (strcmp((*cache)[i].key, key) == 0) {
			snprintf(why, whylen, "%s", (*cache)[i].reason);
			return (*cache)[i].ok;
		}
	struct search_fit f = { .ok = 1 };
	snprintf(f.key, sizeof f.key, "%s", key);
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	if (mdl_load(model, &m, f.reason, sizeof f.reason) != 0 ||
	    hw_open_tp(c->hw, m, c->tp, &hw, f.reason, sizeof f.reason) != 0)
		f.ok = 0;
	hw_close(hw);
	mdl_free(m);
	struct search_fit *grown = cut ? NULL : realloc(*cache, (*ncache + 1) * sizeof *grown);
	if (grown) {
		*cache = grown;
		grown[(*ncache)++] = f;
	}
	snprintf(why, whylen, "%s", f.reason);
	return f.ok;
}

/* ---- the results file ---- */

static int search_append(struct search_run *r, size_t i, char *err, size_t errlen)
{
	struct search_config c;
	if (search_config_make(r->spec, i, &c, err, errlen) != 0)
		return -1;
	char line[4096];
	size_t n = search_results_format(line, sizeof line, c.key, &r->rows[i]);
	search_config_free(&c);
	/* one write a line: a kill leaves whole lines, or a last part the next run drops */
	if (n == 0 || write(r->out_fd, line, n) != (ssize_t)n) {
		snprintf(err, errlen, "%s: %s", r->out_path, n ? err_strerror(errno) : "a line longer than 4096 bytes");
		return -1;
	}
	return 0;
}

/* The row key names, among configurations whose hash matches (by_hash sorted), or SIZE_MAX. */
static size_t search_find(const struct search_run *r, const size_t *by_hash, const char *key)
{
	uint64_t h = search_hash(key);
	size_t lo = 0, hi = r->spec->nconfigs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->rows[by_hash[mid]].key_hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->spec->nconfigs && r->rows[by_hash[lo]].key_hash == h; lo++) {
		struct search_config c;
		char err[64];
		if (search_config_make(r->spec, by_hash[lo], &c, err, sizeof err) != 0)
			return SIZE_MAX;
		int same = strcmp(c.key, key) == 0;
		search_config_free(&c);
		if (same)
			return by_hash[lo];
	}
	return SIZE_MAX;
}

static const struct search_run *search_sort_run;

static int search_cmp_hash(const void *a, const void *b)
{
	uint64_t x = search_sort_run->rows[*(const size_t *)a].key_hash, y = search_sort_run->rows[*(const size_t *)b].key_hash;
	return (x > y) - (x < y);
}

static int search_cmp_cost(const void *a, const void *b)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	double x = search_sort_run->rows[i].cost, y = search_sort_run->rows[j].cost;
	return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

struct search_take {                /* where a results file's lines go */
	struct search_run *r;
	const size_t *by_hash;
	int own;
	size_t taken;
};

/* A results file's row into the configuration it keys (search_results_fn): a row filled already is kept; one
 * filled here is marked resumed, 1 from the results file itself, 2 from another (a shard). */
static int search_take(void *ctx, const char *key, const struct search_row *row, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct search_take *t = ctx;
	struct search_run *r = t->r;
	size_t i = search_find(r, t->by_hash, key);
	if (i == SIZE_MAX || r->rows[i].status == SR_PRUNED || r->rows[i].status == SR_OK ||
	    r->rows[i].status == SR_INFEASIBLE)
		return 0;                     /* another search's configuration, or one read already */
	struct search_row w = *row;
	w.key_hash = r->rows[i].key_hash;
	w.resumed = t->own ? 1 : 2;
	r->rows[i] = w;
	t->taken++;
	return 0;
}

/* Opens the results file (creating it, and results/ for the default, with
 * its header), takes in the lines a previous run wrote, then those of the
 * other results files given (a distributed search's shards), which it
 * appends to its own so that it holds them all. 0, or -1. */
static int search_resume(struct search_run *r, const char *const *more, size_t nmore, char *err, size_t errlen)
{
	size_t *by_hash = malloc(r->spec->nconfigs * sizeof *by_hash), taken = 0;
	if (!by_hash)
		return err_memory(err, errlen, "out of memory");
	for (size_t i = 0; i < r->spec->nconfigs; i++)
		by_hash[i] = i;
	search_sort_run = r;
	qsort(by_hash, r->spec->nconfigs, sizeof *by_hash, search_cmp_hash);
	off_t keep = 0;
	struct search_take t = { .r = r, .by_hash = by_hash, .own = 1 };
	int rc = search_results_read(r->out_path, 1, search_take, &t, &keep, err, errlen);
	size_t own = t.taken;
	t.own = 0;
	for (size_t k = 0; rc == 0 && k < nmore; k++)
		rc = search_results_read(more[k], 0, search_take, &t, NULL, err, errlen);
	taken = t.taken;
	free(by_hash);
	if (rc != 0)
		return -1;
	if (!keep && strncmp(r->out_path, "results/", 8) == 0 && mkdir("results", 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "results/: %s", err_strerror(errno));
		return -1;
	}
	r->out_fd = open(r->out_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (r->out_fd < 0 || ftruncate(r->out_fd, keep) != 0 || lseek(r->out_fd, 0, SEEK_END) < 0 ||
	    (keep == 0 && write(r->out_fd, SEARCH_RESULTS_HEADER "\n", sizeof SEARCH_RESULTS_HEADER) !=
	     (ssize_t)sizeof SEARCH_RESULTS_HEADER)) {
		snprintf(err, errlen, "%s: %s", r->out_path, err_strerror(errno));
		return -1;
	}
	if (taken > own)                  /* the shards' lines join this file: it holds the whole search */
		for (size_t i = 0; i < r->spec->nconfigs; i++)
			if (r->rows[i].resumed == 2 && search_append(r, i, err, errlen) != 0)
				return -1;
	return 0;
}

/* ---- the capacity bound from a cheaper run ---- */

/* Whether c is a plain fleet (replicas of one GPU kind serving whole requests, behind a router that
 * does not route by prefix), its replica count, and its options but --replicas hashed: its family. */
static void search_family(const struct search_config *c, struct search_row *w)
{
	uint64_t h = SEARCH_HASH_START;
	w->plain_replicas = 1;
	for (size_t k = 0; k < c->nopts; k++) {
		const char *o = c->opts[k];
		if (strncmp(o, "--replicas=", 11) == 0) {
			uint64_t n;
			w->plain_replicas = txt_parse_uint(o + 11, UINT32_MAX, &n) == 0 ? (uint32_t)n : 0;
			continue;
		}
		if (strncmp(o, "--prefill-replicas=", 19) == 0 || strcmp(o, "--router=prefix-affinity") == 0)
			w->plain_replicas = 0;
		if (strncmp(o, "--router", 8) == 0)
			continue;                     /* one replica has none (search_config_make leaves it out) */
		h = search_hash_more(search_hash_more(h, o), " ");
	}
	w->family = h;
}

/* 1 when configuration i cannot meet the target: a plain fleet of N replicas whose one-replica
 * sibling's capacity search saw one replica saturate at R req/s, with N x R below the target. One
 * replica's throughput is below any rate that saturates it, and N replicas each fed a thinned share
 * of the same stream serve at most N times that (not so behind prefix-affinity, whose replicas may
 * each hit their caches more than one replica does: no bound there). The reason in w. */
static int search_bounded(struct search_run *r, size_t i)
{
	struct search_row *w = &r->rows[i];
	if (r->exhaustive || r->spec->target_rps <= 0 || w->plain_replicas < 2)
		return 0;
	for (size_t j = 0; j < r->spec->nconfigs; j++) {
		const struct search_row *one = &r->rows[j];
		if (one->plain_replicas != 1 || one->family != w->family || isnan(one->saturated_rps) ||
		    w->plain_replicas * one->saturated_rps >= r->spec->target_rps)
			continue;
		char label[1024];
		search_label(r->spec, j, label, sizeof label);
		snprintf(w->reason, sizeof w->reason, "%u replicas cannot serve %.6g req/s: one saturated at %.6g req/s "
		         "(%.120s)", w->plain_replicas, r->spec->target_rps, one->saturated_rps, label);
		return 1;
	}
	return 0;
}

/* The lowest rate capacity's JSON (its "points") found saturated, NaN when none. */
static double search_saturated_rps(const struct json_doc *d)
{
	double lowest = NAN, rate;
	for (size_t i = 0; i < json_doc_count(d, "points"); i++)
		if (json_doc_item_number(d, "points", i, "rate_rps", &rate) == 0 &&
		    json_doc_item_true(d, "points", i, "saturated") && (isnan(lowest) || rate < lowest))
			lowest = rate;
	return lowest;
}

/* ---- simulating: one capacity child a configuration ---- */

static int search_can_win(const struct search_run *r, size_t i)
{
	const struct search_row *w = &r->rows[i];
	if (r->exhaustive)
		return 1;
	if (r->spec->budget > 0)
		return w->cost <= r->spec->budget;
	return w->cost <= r->best_cost;
}

static void search_note_answer(struct search_run *r, size_t i)
{
	const struct search_row *w = &r->rows[i];
	if (w->status == SR_OK && r->spec->target_rps > 0 && w->capacity >= r->spec->target_rps && w->cost < r->best_cost)
		r->best_cost = w->cost;
}

struct search_job {                /* a capacity child under way */
	struct search_config c;
	size_t index;
};

static int search_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct search_run *r = ud;
	while (r->next < r->spec->nconfigs && !r->failure[0]) {     /* a results file that cannot be written: stop */
		size_t i = r->order[r->next++];
		if (r->rows[i].status != SR_TODO || (r->part_n && i % r->part_n != r->part_i - 1))
			continue;                         /* done, or another part's */
		if (!search_can_win(r, i)) {
			r->rows[i].status = SR_SKIPPED;
			continue;
		}
		if (search_bounded(r, i)) {
			r->rows[i].status = SR_PRUNED;
			continue;
		}
		struct search_config c;
		if (search_config_make(r->spec, i, &c, err, errlen) != 0)
			return -1;
		size_t k = 0;
		r->argv[k++] = "simbatch";
		r->argv[k++] = "capacity";
		r->argv[k++] = "--json";
		r->argv[k++] = "--quiet";
		r->argv[k++] = "--jobs=1";
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
	struct search_row *w = &r->rows[i];
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
		w->status = SR_OK;
	} else if (search_stop) {
		return;                          /* stopped by the search's own signal: simulated again next time */
	} else {
		const char *e = res->errtext;
		if (strncmp(e, "simbatch: ", 10) == 0)
			e += 10;
		w->status = SR_INFEASIBLE;
		w->capacity = w->lo = w->hi = 0;
		w->band_lo = w->band_hi = NAN;
		snprintf(w->reason, sizeof w->reason, "%.*s", (int)strcspn(e, "\n"),
		         *e ? e : res->signal ? "killed by a signal" : "no message");
	}
	r->simulated++;
	search_note_answer(r, i);
	char err[512];
	if (!r->failure[0] && search_append(r, i, err, sizeof err) != 0)
		snprintf(r->failure, sizeof r->failure, "%s", err);
	if (!r->quiet)
		fprintf(stderr, "search: %zu simulated, %zu running, $%.4g/h: %s\n", r->simulated, r->running, w->cost,
		        w->status == SR_OK ? "ok" : w->reason);
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
	r->part_i = (size_t)i;
	r->part_n = (size_t)n;
	return 0;
}

/* ---- the command ---- */

int cmd_search(int argc, char **argv)
{
	char err[1536] = "", exe[4096], out_default[600];
	struct opt_set o;
	struct search_spec *spec = NULL;
	struct search_run r = { .out_fd = -1, .best_cost = INFINITY };
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
	r.exhaustive = opt_flag(&o, "exhaustive");
	r.quiet = opt_flag(&o, "quiet") || opt_flag(&o, "json");
	r.rows = calloc(spec->nconfigs, sizeof *r.rows);
	r.order = calloc(spec->nconfigs, sizeof *r.order);
	if (!r.rows || !r.order) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	size_t fitting = 0;
	for (size_t i = 0; i < spec->nconfigs; i++) {
		struct search_config c;
		if (search_config_make(spec, i, &c, err, sizeof err) != 0)
			goto fail;
		struct search_row *w = &r.rows[i];
		w->cost = c.cost_per_hour;
		w->gpus = c.replicas * c.tp;
		w->key_hash = search_hash(c.key);
		w->band_lo = w->band_hi = NAN;
		w->saturated_rps = NAN;
		search_family(&c, w);
		if (!search_fits(&c, &fits, &nfits, w->reason, sizeof w->reason))
			w->status = SR_PRUNED;
		else
			fitting++;
		search_config_free(&c);
		r.order[i] = i;
	}
	search_sort_run = &r;
	qsort(r.order, spec->nconfigs, sizeof *r.order, search_cmp_cost);
	if (opt_flag(&o, "list")) {
		for (size_t k = 0; k < spec->nconfigs; k++) {
			size_t i = r.order[k];
			char label[1024];
			search_label(spec, i, label, sizeof label);
			printf("$%-9.4g %5u GPUs  %s%s%s\n", r.rows[i].cost, r.rows[i].gpus, label,
			       r.rows[i].status == SR_PRUNED ? "  pruned: " : "", r.rows[i].status == SR_PRUNED ? r.rows[i].reason : "");
		}
		rc = CLI_OK;
		goto out;
	}
	if (!fitting) {
		snprintf(err, sizeof err, "%s: no configuration left after pruning (first: %s)", spec->path, r.rows[0].reason);
		goto fail;
	}
	if (opt_given(&o, "out"))
		r.out_path = opt_str(&o, "out");
	else {
		const char *base = strrchr(spec->path, '/');
		base = base ? base + 1 : spec->path;
		const char *dot = strrchr(base, '.');
		snprintf(out_default, sizeof out_default, "results/search-%.*s.csv", (int)(dot && dot != base ? dot - base
		         : (ptrdiff_t)strlen(base)), base);
		r.out_path = out_default;
	}
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
	/* the database is checked now and written only once the search is whole, as a run's */
	r.db_path = opt_flag(&o, "no-db") || r.part_n ? NULL : opt_str(&o, "db");
	if (r.db_path && results_check(r.db_path, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	/* opened (a new one created) now, as a sweep's: a full disk fails here, not after the whole search; one
	 * this search created is removed again unless the search is stored */
	db_created = r.db_path && access(r.db_path, F_OK) != 0;
	if (r.db_path && results_open(r.db_path, &r.db, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	if (search_resume(&r, (const char *const *)o.positional + 1, o.npositional - 1, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	for (size_t i = 0; i < spec->nconfigs; i++)
		search_note_answer(&r, i);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned jobs = opt_given(&o, "jobs") ? (unsigned)opt_uint(&o, "jobs") : cpus > 0 ? (unsigned)cpus : 1;
	struct sigaction sa = { .sa_handler = search_on_signal }, old_int, old_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	struct pp_config pc = { .exe = exe, .jobs = jobs, .next = search_next, .done = search_done, .ud = &r,
	                        .stop = &search_stop };
	int prc = pp_run(&pc, err, sizeof err);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	if (prc < 0) {
		rc = CLI_FAILED;
		goto fail;
	}
	if (r.failure[0]) {
		snprintf(err, sizeof err, "%s", r.failure);
		rc = CLI_FAILED;
		goto fail;
	}
	if (prc == 1 || search_stop) {
		fprintf(stderr, "simbatch: search stopped by a signal: %zu configurations kept in %s; run it again to "
		        "go on\n", r.simulated, r.out_path);
		rc = 128 + (search_stop ? search_stop : SIGTERM);     /* as a shell reports a signal, and sweep exits */
		goto out;
	}
	if (r.db_path && search_store(&r, err, sizeof err) != 0) {
		rc = CLI_FAILED;
		goto fail;
	}
	if (opt_flag(&o, "json"))
		search_report_json(stdout, &r);
	else
		search_report_text(stdout, &r);
	rc = CLI_OK;
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
	free(r.rows);
	free(r.order);
	search_spec_free(spec);
	return rc;
}
