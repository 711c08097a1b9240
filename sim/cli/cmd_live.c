/* sim/cli/cmd_live.c: `simbatch live`: the run of `simbatch run` (same options,
 * traces, metrics, JSON summary and database) on real kernels and the wall
 * clock (DESIGN.md sections 1-3; runtime/live.h). Everything up to the
 * execution is cmd_run.c's (run_job_prepare), and so is everything after
 * it (run_job_report); this file builds the issue schedule the simulator
 * would draw (traces/source.h), runs runtime/live.c, whose policy driver
 * returns the run's result as the engine's does, and adds live's own
 * figures.
 *
 * Live-only options: --device, --gemm, --max-queue, --outputs-out,
 * --issue-out, and --profile-out (time the kernels per node and batch into a
 * node latency table, or an LLM's iterations into an llm_iter file
 * (hwmodels/llm_iter.h), then exit: a calibration of the simulator against
 * this runtime).
 *
 * SIGINT, SIGTERM and SIGHUP alike stop the run cleanly: no more arrivals,
 * running tasks finish, the completed requests are stored as a run with
 * live.partial = 1 (JSON "partial": true), and the exit status is 128 plus
 * the signal's number (130, 143, 129), as a shell reports it. A second
 * signal kills as usual. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../util/grow.h"
#include "../../util/outfile.h"
#include "../../util/errkind.h"
#include "cli.h"
#include "live_report.h"
#include "../study/kernel_profile.h"
#include "../study/run.h"
#include "../engine/latency.h"
#include "../engine/timeline.h"
#include "../../runtime/kernels.h"
#include "../../runtime/live.h"
#include "../../runtime/profile.h"


static const struct opt_def live_own_opts[] = {
	{ "device", OPT_STR, "cpu", 0, 0, 0, "where the kernels run: cpu, or gpu (the CUDA backend, where built)" },
	{ "gemm", OPT_STR, "packed", 0, 0, 0,
	  "CPU products: packed (runtime/gemm.h, batch-invariant) or blas (OpenBLAS sgemv/sgemm, as calibrated)" },
	{ "max-queue", OPT_UINT, "2000", 1, 1e7, 0,
	  "admitted unfinished requests; an arrival beyond it is dropped and counted (saturation)" },
	{ "outputs-out", OPT_STR, NULL, 0, 0, 0,
	  "write each finished request's outputs: id in out | tokens | final vector" },
	{ "issue-out", OPT_STR, NULL, 0, 0, 0, "write id,scheduled_s,issue_s,late_us per issued request" },
	{ "profile-out", OPT_STR, NULL, 0, 0, 0,
	  "time the kernels per node at batches 1, 2, 4, ... --max-batch into a node latency table (an LLM: "
	  "its iterations, fitted into an llm_iter file), then exit (a load's options, --rate and the like, are refused with it)" },
	{ "profile-reps", OPT_UINT, "11", 1, 1000, 0, "timed calls per profiled point (their mean is kept)" },
};

static const char live_usage[] =
	"usage: simbatch live [--policy=P] [--rate=R] [--requests=N | --duration=S] [--model=M] [--trace=F] ...\n"
	"Serves the run on real kernels (runtime/) on the wall clock with the same policy code, and stores it as\n"
	"a live run. --hw gives the latency estimates the policy sees (default: this machine's calibration).\n"
	"Exit status: 0 done, 128 + N stopped by signal N (SIGINT 130, SIGTERM 143, SIGHUP 129; the partial run "
	"is stored), 2 bad input, 1 failure.";

/* live's table into opts (OPT_MAX entries): run's, with --hw defaulting to
 * the CPU calibration, then live's own. Returns its length. */
static size_t live_options(struct opt_def *opts)
{
	size_t n, nopts = 0;
	const struct opt_def *run = cmd_run_options(&n);
	_Static_assert(sizeof live_own_opts / sizeof live_own_opts[0] <= OPT_MAX, "live's options fit");
	for (size_t i = 0; i < n && nopts + sizeof live_own_opts / sizeof live_own_opts[0] < OPT_MAX; i++) {
		opts[nopts] = run[i];
		if (strcmp(run[i].name, "hw") == 0) {
			opts[nopts].defval = "profile";
			opts[nopts].help = "latency estimates the policy sees: a hardware model or node latency "
			                   "table (default profile: this runtime's kernels timed on this machine "
			                   "before the run, well under a second for the shipped models)";
		}
		if (strcmp(run[i].name, "prefix-cache") == 0) {
			opts[nopts].defval = "off";
			opts[nopts].help = "LLM: off, the only value live takes: its kernels keep a request's KV only while it "
			                   "runs and share none across requests";
		}
		if (strcmp(run[i].name, "duration") == 0)
			opts[nopts].help = "stop issuing arrivals after SECONDS of the schedule (wall-clock time from the "
			                   "start; arrivals follow the simulator's draws)";
		nopts++;
	}
	for (size_t i = 0; i < sizeof live_own_opts / sizeof live_own_opts[0]; i++)
		opts[nopts++] = live_own_opts[i];
	return nopts;
}

static volatile sig_atomic_t live_stop_flag;

static struct timespec live_first_signal;   /* written by the handler alone */

/* The first signal asks for a clean stop. One arriving within half a second
 * of it is the same request delivered twice (timeout(1) signals the command
 * and its process group); a later one kills, as a second Ctrl-C should. */
static void live_on_signal(int sig)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);   /* async-signal-safe */
	if (!live_stop_flag) {
		live_first_signal = now;
		live_stop_flag = sig;
		return;
	}
	double since = (double)(now.tv_sec - live_first_signal.tv_sec) +
	               (double)(now.tv_nsec - live_first_signal.tv_nsec) * 1e-9;
	if (since > 0.5) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

struct live_signals {
	struct sigaction old_int, old_term, old_hup;
};

/* SIGINT, SIGTERM and SIGHUP set live_stop_flag to their number; a second
 * one (not the first delivered twice) kills as usual. */
static void live_catch_signals(struct live_signals *old)
{
	struct sigaction sa;
	live_stop_flag = 0;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = live_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old->old_int);
	sigaction(SIGTERM, &sa, &old->old_term);
	sigaction(SIGHUP, &sa, &old->old_hup);
}

static void live_restore_signals(const struct live_signals *old)
{
	sigaction(SIGINT, &old->old_int, NULL);
	sigaction(SIGTERM, &old->old_term, NULL);
	sigaction(SIGHUP, &old->old_hup, NULL);
}

/* A path can be written: created now (empty), written after the run. */
static int live_check_path(const struct opt_set *o, const char *opt, char *err, size_t errlen)
{
	const char *path = opt_str(o, opt);
	if (!path)
		return 0;
	char why[256];
	if (outfile_check(path, why, sizeof why) != 0) {
		snprintf(err, errlen, "--%s: %.256s", opt, why);
		return -1;
	}
	return 0;
}

/* Everything the live run needs, checked before it starts: kernels for the
 * model, the device, the options, the files, and a policy that accepts the
 * model (a refusal is the input's fault, as in `simbatch run`). */
static int live_check(const struct opt_set *o, const struct eng_config *c, char *err, size_t errlen)
{
	enum rt_gemm_kind g;
	if (opt_given(o, "scenario")) {
		snprintf(err, errlen, "--scenario: live runs issue a schedule made ahead; MLPerf's scenarios are simulated "
		         "only (simbatch run)");
		return CLI_BAD_INPUT;
	}
	if (c->concurrency) {    /* live issues a schedule made ahead (live_make_schedule) */
		snprintf(err, errlen, "--concurrency: live runs issue their requests on a schedule made ahead; closed-loop "
		         "clients are simulated only");
		return CLI_BAD_INPUT;
	}
	if (c->env.prefix_cache) {
		snprintf(err, errlen, "--prefix-cache=on: a live run's kernels keep no KV across requests; the prefix cache "
		         "is simulated only");
		return CLI_BAD_INPUT;
	}
	if (c->env.async_scheduling) {
		snprintf(err, errlen, "--async-scheduling: a live run plans each iteration when the one before ends; vLLM's "
		         "async scheduling is simulated only");
		return CLI_BAD_INPUT;
	}
	if (c->replicas > 1) {    /* one machine's devices serve a live run; a fleet is simulated */
		snprintf(err, errlen, "--%s: a live run serves on this machine's devices; fleets behind a router are "
		         "simulated only", c->disagg ? "prefill-replicas" : "replicas");
		return CLI_BAD_INPUT;
	}
	if (!rt_kernels_find(c->model, err, errlen) || live_gemm_kind(opt_str(o, "gemm"), &g, err, errlen) != 0 ||
	    !rt_backend_find(opt_str(o, "device"), err, errlen))
		return CLI_BAD_INPUT;
	if (live_check_path(o, "outputs-out", err, errlen) != 0 || live_check_path(o, "issue-out", err, errlen) != 0)
		return CLI_BAD_INPUT;
	return run_check_policy(c, err, errlen) == 0 ? CLI_OK : CLI_BAD_INPUT;
}

/* ---- the issue schedule: the arrivals and lengths the simulator draws ---- */

struct live_schedule {
	uint64_t n, cap;
	int64_t *arrival_ns;
	uint32_t *input_len, *output_len;
};

static void live_schedule_free(struct live_schedule *s)
{
	free(s->arrival_ns);
	free(s->input_len);
	free(s->output_len);
	memset(s, 0, sizeof *s);
}

static int live_schedule_push(struct live_schedule *s, int64_t t_ns, uint32_t in, uint32_t out)
{
	if (s->n == s->cap) {           /* three arrays of one capacity, each grown as util/grow.h grows one */
		size_t cap = grow_capacity(s->cap, s->n + 1, 1024, sizeof *s->arrival_ns);
		if (!cap || grow_to(&s->arrival_ns, cap, sizeof *s->arrival_ns) != 0 ||
		    grow_to(&s->input_len, cap, sizeof *s->input_len) != 0 ||
		    grow_to(&s->output_len, cap, sizeof *s->output_len) != 0)
			return -1;
		s->cap = cap;
	}
	s->arrival_ns[s->n] = t_ns;
	s->input_len[s->n] = in;
	s->output_len[s->n] = out;
	s->n++;
	return 0;
}

/* The requests a simulated run with the same options would see, drawn
 * from the same source (traces/source.h), each checked runnable. */
static int live_make_schedule(const struct eng_config *c, struct live_schedule *s, char *err, size_t errlen)
{
	const struct mdl_model *m = c->model;
	struct trc_source src;
	struct trc_source_config sc = {
		.trace = c->trace, .trace_speedup = c->trace_speedup, .trace_pairs = c->trace_pairs,
		.rate_rps = c->rate_rps, .arrival_cv = c->arrival_cv,
		.input_len = m->uses_input_len ? c->input_len : NULL, .output_len = m->uses_output_len ? c->output_len : NULL,
		.duration_s = c->duration_s, .requests = c->requests, .seed = c->seed,
	};
	memset(s, 0, sizeof *s);
	if (trc_source_init(&src, &sc, err, errlen) != 0)
		return CLI_BAD_INPUT;
	int rc = CLI_OK;
	struct trc_request q;
	int got;
	while (rc == CLI_OK && (got = trc_source_next(&src, &q, err, errlen)) != 0) {
		if (got < 0) {
			rc = CLI_BAD_INPUT;
			break;
		}
		if (!drv_runnable(m, q.id, q.input_len, q.output_len, err, errlen))
			rc = CLI_BAD_INPUT;
		else if (live_schedule_push(s, q.arrival_ns, q.input_len, q.output_len) != 0) {
			err_memory(err, errlen, "out of memory for the issue schedule");
			rc = CLI_FAILED;
		}
	}
	trc_source_fini(&src);
	if (rc != CLI_OK)
		live_schedule_free(s);
	return rc;
}

/* ---- the live run ---- */

static int live_serve(const struct opt_set *o, const struct eng_config *c, struct drv_result *res,
                        struct run_extra *x, char *err, size_t errlen)
{
	struct live_schedule sch;
	struct live_result lr = { 0 };
	struct run_estimates est = { 0 };
	int rc = live_make_schedule(c, &sch, err, errlen);
	if (rc != CLI_OK)
		return rc;
	rc = CLI_FAILED;
	struct live_config lc = {
		.policy = c->policy, .env = c->env, .model = c->model, .workers = c->workers, .n = sch.n,
		.arrival_ns = sch.arrival_ns, .input_len = sch.input_len, .output_len = sch.output_len,
		.warmup = c->warmup, .sla_ns = c->sla_ns, .keep_request_rows = c->keep_request_rows, .seed = c->seed,
		.device = opt_str(o, "device"), .max_queue = (uint32_t)opt_uint(o, "max-queue"),
		.keep_outputs = opt_str(o, "outputs-out") != NULL, .keep_tasks = c->timeline != NULL,
		.stop = &live_stop_flag,
	};
	if (live_gemm_kind(opt_str(o, "gemm"), &lc.gemm, err, errlen) != 0)
		goto out;
	/* the policy's estimates, as the engine gives them */
	if (run_policy_env(c, &lc.env, &est, err, errlen) != 0) {
		rc = CLI_BAD_INPUT;
		goto out;
	}
	if (live_run(&lc, &lr, err, errlen) != 0)
		goto out;
	if (live_extra(o, &lr, (int)live_stop_flag, x, err, errlen) != 0)
		goto out;
	if (c->timeline && live_write_timeline(c->timeline, &lr, c->env.max_batch) != 0) {
		err_io(err, errlen, "error writing the timeline");
		goto out;
	}
	if (opt_str(o, "outputs-out") && live_write_outputs(opt_str(o, "outputs-out"), &lr, err, errlen) != 0)
		goto out;
	if (opt_str(o, "issue-out") && live_write_issue(opt_str(o, "issue-out"), &lr, err, errlen) != 0)
		goto out;
	*res = lr.run;                  /* the result is the caller's now */
	memset(&lr.run, 0, sizeof lr.run);
	rc = CLI_OK;
out:
	if (rc != CLI_OK) {
		drv_result_free(res);
		memset(res, 0, sizeof *res);
	}
	live_result_free(&lr);
	run_estimates_free(&est);
	live_schedule_free(&sch);
	return rc;
}

/* Options of a served load, which --profile-out (time the kernels, then exit) never uses: given
 * together, the load would silently not run, so they are refused. */
static const char *const live_load_only[] = {
	"policy", "rate", "requests", "duration", "trace", "sla", "db", "db-requests", "json",
	"requests-out", "timeline-out", "issue-out", "outputs-out",
};

static int live_profile(const struct opt_set *o)
{
	char err[512] = "";
	struct mdl_model *m = NULL;
	struct outfile of = { 0 };
	int rc = CLI_BAD_INPUT;

	for (size_t i = 0; i < sizeof live_load_only / sizeof live_load_only[0]; i++)
		if (opt_given(o, live_load_only[i])) {
			snprintf(err, sizeof err, "--profile-out only times the kernels and exits, so --%s would serve "
			         "nothing: profile first, then serve with simbatch live --hw=THE_TABLE --%s=...",
			         live_load_only[i], live_load_only[i]);
			goto out;
		}
	if (mdl_load(opt_str(o, "model"), &m, err, sizeof err) != 0)
		goto out;
	if (outfile_open(&of, opt_str(o, "profile-out"), err, sizeof err) != 0)
		goto out;
	uint32_t maxb = opt_given(o, "max-batch") ? (uint32_t)opt_uint(o, "max-batch") : 64;
	if (live_profile_write(o, m, maxb, of.f, opt_flag(o, "quiet") ? NULL : stderr, err, sizeof err) != 0) {
		rc = cli_exit_status();
		goto out;
	}
	rc = CLI_FAILED;
	if (outfile_commit(&of, err, sizeof err) != 0)
		goto out;
	rc = CLI_OK;
out:
	outfile_abort(&of);
	if (rc != CLI_OK)
		fprintf(stderr, "simbatch: %s\n", err);
	mdl_free(m);
	return rc;
}

int cmd_live(int argc, char **argv)
{
	char err[512] = "";
	struct opt_def opts[OPT_MAX];
	size_t nopts = live_options(opts);
	for (int i = 1; i < argc; i++)
		if (strncmp(argv[i], "--profile-out=", 14) == 0) {
			struct opt_set o;
			if (opt_parse(&o, opts, nopts, argc, argv, 0, err, sizeof err) != 0) {
				fprintf(stderr, "simbatch: %s\n", err);
				return CLI_BAD_INPUT;
			}
			return live_profile(&o);
		}
	struct run_job *j;
	struct drv_result res = { 0 };
	struct run_extra extra = { 0 };
	struct live_signals sig;
	/* from the start: a signal while the inputs load or the kernels are set
	 * up ends the command as cleanly as one during the run */
	live_catch_signals(&sig);
	int rc = run_job_prepare(argc, argv, opts, nopts, live_usage, &j);
	if (rc != CLI_OK || !j) {
		live_restore_signals(&sig);
		return rc;
	}
	const struct opt_set *o = run_job_options(j);
	const struct eng_config *c = run_job_config(j);
	if ((rc = live_check(o, c, err, sizeof err)) != CLI_OK)
		goto fail;
	if (opt_flag(o, "dry-run")) {
		live_restore_signals(&sig);
		run_job_free(j);
		return CLI_OK;
	}
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!live_stop_flag && (rc = live_serve(o, c, &res, &extra, err, sizeof err)) != CLI_OK)
		goto fail;
	if (live_stop_flag && res.completed == 0) {
		snprintf(err, sizeof err, "stopped by signal %d before any request completed; nothing stored",
		         (int)live_stop_flag);
		rc = 128 + (int)live_stop_flag;
		goto fail;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rc = run_job_report(j, 1, &res, &extra, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	drv_result_free(&res);
	run_extra_free(&extra);
	run_job_free(j);
	live_restore_signals(&sig);
	return rc;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	drv_result_free(&res);
	run_extra_free(&extra);
	run_job_free(j);
	live_restore_signals(&sig);
	return rc;
}
