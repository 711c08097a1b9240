/* sim/cli/cmd_sweep.c: `simbatch sweep FILE`: runs every point of a sweep file
 * (sim/SWEEP.md) into one results database, N runs at a time, resumable;
 * aggregates a finished sweep across seeds (--summary); or exports it as a
 * GNU parallel job list or a Slurm array script whose jobs write database
 * shards for `simbatch merge`.
 *
 * Each point is a child `simbatch run` (procpool.h) with --sweep-point=KEY:
 * the run stores itself in one transaction, at most once per key, so a
 * killed sweep leaves only complete runs, a restarted one skips what is
 * stored, and two sweeps sharing a database never store a point twice. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../../util/text.h"
#include "../../util/errkind.h"
#include "../store/aggregate.h"
#include "cli.h"
#include "../../util/options.h"
#include "procpool.h"
#include "sweep_pool.h"
#include "sweep_dirs.h"
#include "../store/results.h"
#include "../store/sweep_db.h"
#include "sweep_spec.h"
#include "sweep_cmd.h"

static const struct opt_def sweep_opts[] = {
	{ "db", OPT_STR, "results/simbatch.db", 0, 0, 0, "results database the points are stored in" },
	{ "jobs", OPT_UINT, NULL, 1, 4096, 0, "runs at a time (default: the online CPUs)" },
	{ "part", OPT_STR, NULL, 0, 0, 0, "run only part I of N (I/N, 1-based): the points whose index mod N is I-1" },
	{ "list", OPT_FLAG, NULL, 0, 0, 0, "print the key of every point (of --part) and run nothing" },
	{ "summary", OPT_FLAG, NULL, 0, 0, 0, "aggregate the stored points over seeds (mean, p25, p75, 95% CI); run nothing" },
	{ "csv", OPT_FLAG, NULL, 0, 0, 0, "with --summary: CSV on stdout (empty field = undefined)" },
	{ "metrics", OPT_STR, NULL, 0, 0, 0, "with --summary: metrics to aggregate, comma-separated (--metrics=help lists "
	  "them; default: " SWEEP_NODE_METRICS ", an LLM sweep's " SWEEP_LLM_METRICS ", and goodput_output_tokens_per_s "
	  "when its runs set SLOs)" },
	{ "export", OPT_STR, NULL, 0, 0, 0, "print the sweep as jobs instead of running it: parallel (GNU parallel job list) or slurm (sbatch array script)" },
	{ "shards", OPT_UINT, NULL, 1, 1e6, 0, "with --export: jobs, each writing its own database shard (default min(points, 64))" },
	{ "shard-dir", OPT_STR, "shards", 0, 0, 0, "with --export: directory of the shard databases" },
	{ "simbatch", OPT_STR, NULL, 0, 0, 0, "with --export: the simbatch binary the jobs run (default: this one)" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress bar, no closing summary" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define SWEEP_NOPTS (sizeof sweep_opts / sizeof sweep_opts[0])

static const char sweep_usage[] =
	"usage: simbatch sweep FILE [--db=PATH] [--jobs=N] [--part=I/N]\n"
	"       simbatch sweep --rates=auto [--points=N] [--out=FILE.csv] [any run option] (simbatch sweep --rates=auto "
	"--help)\n"
	"       simbatch sweep FILE --summary [--csv] [--metrics=LIST] [--db=PATH]\n"
	"       simbatch sweep FILE --export=parallel|slurm [--shards=N] [--shard-dir=DIR]\n"
	"Runs every point of a sweep file (format: sim/SWEEP.md) into one results database, in\n"
	"parallel and resumably: a point already stored is skipped, so a killed sweep continues\n"
	"where it stopped. Progress and ETA go to stderr.";

static volatile sig_atomic_t sweep_stop;   /* the signal that asked the sweep to stop */

static void sweep_on_signal(int sig)
{
	sweep_stop = sig;
}

/* Parses "I/N" with 1 <= I <= N. */
static int sweep_parse_part(const char *s, uint64_t *i, uint64_t *n)
{
	char buf[64];
	const char *slash = strchr(s, '/');
	if (!slash || (size_t)(slash - s) >= sizeof buf)
		return -1;
	memcpy(buf, s, (size_t)(slash - s));
	buf[slash - s] = '\0';
	if (txt_parse_uint(buf, UINT64_MAX, i) != 0 || txt_parse_uint(slash + 1, UINT64_MAX, n) != 0
	    || *i < 1 || *i > *n)
		return -1;
	return 0;
}

/* sweep_plan_todo's question: whether the database holds the point of this key. */
static int sweep_db_stored(void *ud, const char *key, char *err, size_t errlen)
{
	return sweep_db_has_point(ud, key, err, errlen);
}

/* Fill r->todo with this part's points that the database does not hold yet.
 * Returns -1 on error, else the number of points in this part. */
static long sweep_list_todo(struct sweep_run *r, uint64_t part_i, uint64_t part_n, size_t *stored, char *err,
                            size_t errlen)
{
	const struct sweep_spec *spec = r->spec;
	if (!(r->todo = malloc((spec->npoints ? spec->npoints : 1) * sizeof *r->todo))) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	/* no database yet: none stored */
	return sweep_plan_todo(spec, part_i, part_n, r->db ? sweep_db_stored : NULL, r->db, r->todo, &r->ntodo, stored,
	                       err, errlen);
}

struct sweep_signals {
	struct sigaction old_int, old_term, old_hup;
};

static void sweep_catch_signals(struct sweep_signals *old)
{
	struct sigaction sa = { .sa_handler = sweep_on_signal };
	sa.sa_flags = 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old->old_int);
	sigaction(SIGTERM, &sa, &old->old_term);
	sigaction(SIGHUP, &sa, &old->old_hup);
	/* a signal the caller ignores (nohup, a background job) stays ignored, here and in the runs */
	if (old->old_int.sa_handler == SIG_IGN)
		sigaction(SIGINT, &old->old_int, NULL);
	if (old->old_hup.sa_handler == SIG_IGN)
		sigaction(SIGHUP, &old->old_hup, NULL);
	if (old->old_term.sa_handler == SIG_IGN)
		sigaction(SIGTERM, &old->old_term, NULL);
}

static void sweep_restore_signals(const struct sweep_signals *old)
{
	sigaction(SIGINT, &old->old_int, NULL);
	sigaction(SIGTERM, &old->old_term, NULL);
	sigaction(SIGHUP, &old->old_hup, NULL);
}

/* Run one point of every configuration left before running any, so that a
 * bad option value in the file stops the sweep before it stores anything.
 * Returns sweep_pool's value (-1 with err set, 1 when a signal stopped it);
 * r->failed says whether a checked point was refused. */
static int sweep_check_configs(struct sweep_run *r, unsigned jobs, char *err, size_t errlen)
{
	size_t ntodo = r->ntodo, nchk = 0, nseeds = r->spec->nseeds;
	size_t *points = r->todo;
	if (!(r->todo = malloc((ntodo ? ntodo : 1) * sizeof *r->todo))) {
		r->todo = points;
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < ntodo; i++)
		if (nchk == 0 || points[i] / nseeds != r->todo[nchk - 1] / nseeds)
			r->todo[nchk++] = points[i];
	r->ntodo = nchk;
	r->checking = 1;
	int prc = sweep_pool(r, jobs);
	free(r->todo);
	r->todo = points;
	r->ntodo = ntodo;
	r->checking = 0;
	if (prc < 0)
		snprintf(err, errlen, "%s", r->err);
	return prc;
}

/* Once every configuration passed: the database's directories made, the database created (or
 * upgraded) and opened to write, and the points still to run listed again (another process may
 * have stored some meanwhile). The points in this part, or -1 with err and *rc the exit code. */
static long sweep_reopen_writable(struct sweep_run *r, struct sweep_made_dirs *made, uint64_t part_i, uint64_t part_n,
                                  size_t *stored, int *rc, char *err, size_t errlen)
{
	struct results_db *rdb = NULL;
	sweep_db_close(r->db);
	r->db = NULL;
	if (sweep_make_parent(r->db_path, made, err, errlen) != 0)
		return -1;
	if (results_open(r->db_path, &rdb, err, errlen) != 0) {
		*rc = cli_exit_status();
		return -1;
	}
	results_close(rdb);
	if (sweep_db_open(r->db_path, 0, &r->db, err, errlen) != 0)
		return -1;
	*rc = CLI_FAILED;
	free(r->todo);
	r->todo = NULL;
	r->ntodo = 0;
	*stored = 0;
	return sweep_list_todo(r, part_i, part_n, stored, err, errlen);
}

/* The sweep's last lines once every point ran: CLI_OK, or CLI_FAILED when some point failed. */
static int sweep_report_end(struct sweep_run *r)
{
	if (r->ntodo && r->tty)
		sweep_progress(r, 1);     /* ends the redrawn line; without a terminal the last tick said 100% */
	if (!r->quiet)
		fprintf(stderr, "sweep %s: %zu run, %zu stored by another process meanwhile, %zu failed, in %.1f s\n",
		        r->spec->path, r->ran, r->skipped, r->failed, sweep_now_s() - r->t0);
	if (r->failed) {
		fprintf(stderr, "simbatch: %zu sweep point(s) failed; fix the cause and run the same command again\n",
		        r->failed);
		return CLI_FAILED;
	}
	return CLI_OK;
}

static int sweep_run_points(const struct sweep_spec *spec, const struct opt_set *o, uint64_t part_i,
                            uint64_t part_n)
{
	struct sweep_run r = { .spec = spec, .db_path = opt_str(o, "db"), .quiet = opt_flag(o, "quiet"),
	                       .tty = isatty(2), .last_decile = -1, .stop = &sweep_stop };
	char exe[4096], err[1024];
	struct sweep_signals old;
	struct sweep_made_dirs made = { .top_len = 0 };
	int rc = CLI_BAD_INPUT, handlers = 0, db_created = 0, remove_db = 0, running = 0;
	unsigned jobs = opt_given(o, "jobs") ? (unsigned)opt_uint(o, "jobs") : 0;
	if (!jobs) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = n > 0 ? (unsigned)n : 1;
	}
	if (pp_self_exe(exe, sizeof exe, err, sizeof err) != 0) {
		rc = CLI_FAILED;
		goto fail;
	}
	r.exe = exe;
	/* Every configuration is checked (a dry run each) before the database is created or changed,
	 * reading an existing one as it is to know which points are stored: a refused sweep changes
	 * nothing. Then it is created (or upgraded) once, before children race for it; one this sweep
	 * created and could not set up (a full disk) is removed. */
	db_created = access(r.db_path, F_OK) != 0;
	/* a new database's directories are made (and checked) only once the configurations pass; an empty one
	 * (0 bytes, or another sweep creating its schema now) stores no point yet, as a new one */
	int db_empty = 1;
	if (!db_created && results_check_empty(r.db_path, &db_empty, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto fail;
	}
	if (!db_empty && sweep_db_open(r.db_path, 1, &r.db, err, sizeof err) != 0)
		goto fail;
	size_t stored = 0;
	if (sweep_list_todo(&r, part_i, part_n, &stored, err, sizeof err) < 0)
		goto fail;
	sweep_catch_signals(&old);
	handlers = 1;
	int prc = sweep_check_configs(&r, jobs, err, sizeof err);
	if (prc < 0)
		goto fail;
	if (prc == 0 && r.failed) {
		snprintf(err, sizeof err, "%s", r.first_error);
		rc = r.bad_input ? CLI_BAD_INPUT : CLI_FAILED;
		goto fail;
	}
	long inpart = sweep_reopen_writable(&r, &made, part_i, part_n, &stored, &rc, err, sizeof err);
	if (inpart < 0)
		goto fail;

	r.ran = r.skipped = r.failed = 0;
	r.bad_input = 0;
	running = 1;                    /* points are stored from here on: the database stays */
	r.next = 0;
	r.t0 = r.last_line_s = sweep_now_s();
	if (!r.quiet)
		fprintf(stderr, "sweep %s: %ld points%s, %zu stored already, %zu to run, %u at a time, into %s\n",
		        spec->path, inpart, part_n > 1 ? " in this part" : "", stored, r.ntodo, jobs, r.db_path);
	if (prc == 0)
		prc = sweep_pool(&r, jobs);
	if (prc < 0) {
		sweep_clear_line(&r);
		snprintf(err, sizeof err, "%s", r.err);
		goto fail;
	}
	if (prc == 1 || sweep_stop) {
		sweep_clear_line(&r);
		fprintf(stderr, "simbatch: sweep interrupted by signal %d: %zu points stored this time, %zu left; "
		        "run the same command again to continue\n", (int)sweep_stop, r.ran,
		        r.ntodo - r.ran - r.skipped);
		rc = 128 + (int)sweep_stop;
		goto out;
	}
	rc = sweep_report_end(&r);
	goto out;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	/* refused before any point ran: the database this sweep created goes too (nothing half-made stays) */
	remove_db = db_created && !running;
out:
	if (handlers)
		sweep_restore_signals(&old);
	free(r.todo);
	sweep_db_close(r.db);
	if (remove_db) {
		if (access(r.db_path, F_OK) == 0)
			results_remove(r.db_path);
		sweep_remove_made(&made);     /* and the directories it made for it */
	}
	return rc;
}

int cmd_sweep(int argc, char **argv)
{
	char err[768];
	struct opt_set o;
	struct sweep_spec *spec = NULL;
	uint64_t part_i = 1, part_n = 1;
	int rc;
	for (int i = 1; i < argc; i++)      /* no file: an automatic rate sweep (sweep_auto.c) */
		if (strncmp(argv[i], "--rates", 7) == 0 && (argv[i][7] == '=' || argv[i][7] == 0))
			return cmd_sweep_auto(argc, argv);
	if (opt_parse(&o, sweep_opts, SWEEP_NOPTS, argc, argv, 1, err, sizeof err) != 0)
		goto bad;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, sweep_usage, sweep_opts, SWEEP_NOPTS);
		return CLI_OK;
	}
	if (o.npositional != 1) {
		snprintf(err, sizeof err, "give one sweep file (simbatch sweep FILE; see --help)");
		goto bad;
	}
	int modes = opt_flag(&o, "summary") + opt_given(&o, "export") + opt_flag(&o, "list");
	if (modes > 1) {
		snprintf(err, sizeof err, "give one of --summary, --export and --list");
		goto bad;
	}
	if ((opt_flag(&o, "csv") || opt_given(&o, "metrics")) && !opt_flag(&o, "summary")) {
		snprintf(err, sizeof err, "--csv and --metrics go with --summary");
		goto bad;
	}
	if ((opt_given(&o, "shards") || opt_given(&o, "shard-dir") || opt_given(&o, "simbatch")) &&
	    !opt_given(&o, "export")) {
		snprintf(err, sizeof err, "--shards, --shard-dir and --simbatch go with --export");
		goto bad;
	}
	if (opt_given(&o, "part") && (opt_flag(&o, "summary") || opt_given(&o, "export"))) {
		snprintf(err, sizeof err, "--part goes with running or --list, not with --summary or --export");
		goto bad;
	}
	if (opt_given(&o, "part") && sweep_parse_part(opt_str(&o, "part"), &part_i, &part_n) != 0) {
		snprintf(err, sizeof err, "--part=%s: expected I/N with 1 <= I <= N", opt_str(&o, "part"));
		goto bad;
	}
	size_t nrun;
	const struct opt_def *run_defs = cmd_run_options(&nrun);
	if (sweep_spec_load(o.positional[0], run_defs, nrun, &spec, err, sizeof err) != 0)
		goto bad;
	if (opt_flag(&o, "summary")) {
		rc = sweep_summary(spec, &o);
	} else if (opt_given(&o, "export")) {
		rc = sweep_export(spec, &o);
	} else if (opt_flag(&o, "list")) {
		rc = CLI_OK;
		for (size_t i = part_i - 1; i < spec->npoints; i += part_n) {
			struct sweep_point p;
			if (sweep_point_make(spec, i, &p) != 0) {
				fprintf(stderr, "simbatch: out of memory\n");
				rc = CLI_FAILED;
				break;
			}
			printf("%s\n", p.key);
			sweep_point_free(&p);
		}
	} else {
		rc = sweep_run_points(spec, &o, part_i, part_n);
	}
	sweep_spec_free(spec);
	return rc;
bad:
	fprintf(stderr, "simbatch: %s\n", err);
	sweep_spec_free(spec);
	return CLI_BAD_INPUT;
}
