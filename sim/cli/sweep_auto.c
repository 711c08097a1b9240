/* sim/cli/sweep_auto.c: `simbatch sweep --rates=auto [run options]`: an
 * automatic rate sweep, as GuideLLM's sweep profile runs one
 * (docs/SCENARIOS.md). First the two ends: the synchronous rate (one request
 * at a time, --concurrency=1: the throughput of an unloaded server) and the
 * saturation rate (the measured throughput of an overloaded run: every
 * request sent at 0 s, --scenario=offline, so the queue never empties and
 * the departure rate is the most the configuration serves). Then --points
 * Poisson rates evenly spaced from the synchronous rate up to, not
 * reaching, the saturation rate.
 *
 * Why the overloaded run and not capacity's bisection: the saturation rate
 * is a throughput, not a rate meeting an SLA; capacity answers the latter
 * and needs targets and a dozen probes, while one overloaded run measures
 * the former directly, with the policy's and the engine's own batching (the
 * study layer's estimate prices back-to-back full batches from the hardware
 * alone, without the scheduler). tests/test_scenarios.py checks it against
 * capacity's bracket.
 *
 * Every run is a child `simbatch run --json` (procpool.h) that stores itself
 * in the results database like any run (or not, with --no-db); the table
 * goes to stdout and --out=FILE.csv keeps it for `scripts/plot rate-sweep`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "procpool.h"
#include "../../util/errkind.h"
#include "../../util/json_read.h"
#include "../../util/options.h"
#include "../../util/outfile.h"
#include "../study/sweep_stats.h"

#define AUTO_MAX_POINTS 100
#define AUTO_MAX_ARGS 96

static const struct opt_def auto_opts[] = {
	{ "rates", OPT_STR, NULL, 0, 0, 0, "auto: find the saturation rate, then sweep --points rates below it" },
	{ "points", OPT_UINT, "10", 2, AUTO_MAX_POINTS, 0, "rates swept, evenly spaced from the synchronous rate to "
	  "below the saturation rate" },
	{ "out", OPT_STR, NULL, 0, 0, 0, "also write the table as CSV (for scripts/plot rate-sweep)" },
	{ "jobs", OPT_UINT, NULL, 1, 4096, 0, "runs at a time (default: the online CPUs)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object on stdout" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define AUTO_NOPTS (sizeof auto_opts / sizeof auto_opts[0])

static const char auto_usage[] =
	"usage: simbatch sweep --rates=auto [--points=N] [--out=FILE.csv] [--jobs=N] [--json] [any run option]\n"
	"Finds the saturation rate (the throughput of a run whose requests all arrive at 0 s) and the\n"
	"synchronous rate (one request at a time), then runs N Poisson rates evenly spaced from the latter\n"
	"to below the former, each stored in the results database, and prints their latencies.";

/* Run options the sweep sets itself, or that every run would overwrite. */
static const char *const auto_forbidden[] = {
	"rate", "scenario", "concurrency", "think-time", "duration", "arrival-cv", "json", "quiet", "requests-out",
	"timeline-out", "sweep-point", "sweep-name", "sweep-variant", "dry-run", "help",
};

/* One child run: its arguments and what its JSON summary said. */
struct auto_run {
	char arg[40];                 /* the run's own arrivals: --rate=R, --concurrency=1, --scenario=offline */
	double rate;                  /* offered (0: a closed loop) */
	int done, exit_code;
	double throughput, lat[3], ttft[2], tpot[2], run_id;   /* latency p50 p90 p99; TTFT, TPOT p50 p99 */
	int llm;
	char error[512];
};

struct auto_sweep {
	char **run_args;              /* the user's run options (not owned) */
	size_t nrun_args;
	struct auto_run *runs;
	size_t nruns, next;
	char *argv[AUTO_MAX_ARGS];
};

static int auto_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct auto_sweep *s = ud;
	(void)err;
	(void)errlen;
	if (s->next >= s->nruns)
		return 0;
	struct auto_run *r = &s->runs[s->next++];
	size_t k = 0;
	s->argv[k++] = "simbatch";
	s->argv[k++] = "run";
	s->argv[k++] = "--json";
	s->argv[k++] = r->arg;
	for (size_t i = 0; i < s->nrun_args; i++)
		s->argv[k++] = s->run_args[i];
	s->argv[k] = NULL;
	job->argv = s->argv;          /* posix_spawn copies argv: the array may be reused at once */
	job->ctx = r;
	job->capture_stdout = 1;
	return 1;
}

static void auto_done(void *ud, void *ctx, const struct pp_result *res)
{
	struct auto_run *r = ctx;
	(void)ud;
	r->done = 1;
	r->exit_code = res->exit_code;
	struct json_doc *d = res->exit_code == 0 ? json_doc_parse(res->out) : NULL;
	static const char *const q[3] = { "p50", "p90", "p99" };
	int bad = !d || json_doc_number(d, NULL, "throughput_rps", -1, &r->throughput) != 0;
	for (int i = 0; i < 3 && !bad; i++)
		bad = json_doc_number(d, "latency_ms", q[i], -1, &r->lat[i]) != 0;
	r->llm = d && json_doc_has_object(d, "ttft_ms");
	for (int i = 0; i < 2 && r->llm && !bad; i++)
		bad = json_doc_number(d, "ttft_ms", q[2 * i], -1, &r->ttft[i]) != 0 ||
		      json_doc_number(d, "tpot_ms", q[2 * i], -1, &r->tpot[i]) != 0;
	if (!d || json_doc_number(d, NULL, "run_id", -1, &r->run_id) != 0)
		r->run_id = -1;           /* --no-db: null */
	if (bad) {
		const char *e = res->errtext;
		if (strncmp(e, "simbatch: ", 10) == 0)
			e += 10;
		snprintf(r->error, sizeof r->error, "%.*s", (int)strcspn(e, "\n"), *e ? e : "a run printed no summary");
		if (r->exit_code == 0)
			r->exit_code = 1;
	}
	json_doc_free(d);
}

/* Runs s->runs[from..to) jobs at a time: 0, or an exit code with err (a run's bad input is the user's: 2). */
static int auto_run_all(struct auto_sweep *s, size_t from, size_t to, const char *exe, unsigned jobs, char *err,
                        size_t errlen)
{
	struct pp_config pc = { .exe = exe, .jobs = jobs, .next = auto_next, .done = auto_done, .ud = s };
	size_t n = s->nruns;
	s->next = from;
	s->nruns = to;
	int rc = pp_run(&pc, err, errlen);
	s->nruns = n;
	if (rc != 0)
		return CLI_FAILED;
	for (size_t i = from; i < to; i++)
		if (s->runs[i].exit_code != 0) {
			snprintf(err, errlen, "%s", s->runs[i].error);
			return s->runs[i].exit_code == 2 ? CLI_BAD_INPUT : CLI_FAILED;
		}
	return CLI_OK;
}

/* The rates the study layer chooses (sweep_auto_rates), each a run's --rate. */
static void auto_rates(struct auto_sweep *s, double sync, double sat, size_t points)
{
	double rates[AUTO_MAX_POINTS];
	sweep_auto_rates(sync, sat, points, rates);
	for (size_t i = 0; i < points; i++) {
		struct auto_run *r = &s->runs[2 + i];
		r->rate = rates[i];
		snprintf(r->arg, sizeof r->arg, "--rate=%.6g", rates[i]);
	}
}

static int auto_refuse(const struct opt_set *ro, const struct opt_def *rd, size_t nrd, char *err, size_t errlen)
{
	for (size_t i = 0; i < nrd; i++)
		for (size_t k = 0; ro->given[i] && k < sizeof auto_forbidden / sizeof auto_forbidden[0]; k++)
			if (strcmp(rd[i].name, auto_forbidden[k]) == 0) {
				snprintf(err, errlen, "--%s cannot be given to sweep --rates=auto (it sets each run's arrivals and "
				         "output)", rd[i].name);
				return -1;
			}
	if (opt_given(ro, "trace") && !opt_flag(ro, "trace-pairs")) {
		snprintf(err, errlen, "--trace: its timestamps would set the rate the sweep sets; with --trace-pairs each run "
		         "draws its rows' prompt and output together at its own rate");
		return -1;
	}
	return 0;
}

/* The table: text, or one JSON object; and the CSV for the figure. */
static void auto_print(FILE *f, const struct auto_sweep *s, size_t points, int json)
{
	const struct auto_run *sync = &s->runs[0], *sat = &s->runs[1];
	int llm = sat->llm;
	if (json) {
		fprintf(f, "{\"saturation_rps\":%.10g,\"synchronous_rps\":%.10g,\"llm\":%s,\"points\":[", sat->throughput,
		        sync->throughput, llm ? "true" : "false");
		for (size_t i = 0; i < points; i++) {
			const struct auto_run *r = &s->runs[2 + i];
			fprintf(f, "%s{\"rate_rps\":%.10g,\"throughput_rps\":%.10g,\"latency_ms\":{\"p50\":%.10g,\"p90\":%.10g,"
			        "\"p99\":%.10g}", i ? "," : "", r->rate, r->throughput, r->lat[0], r->lat[1], r->lat[2]);
			if (llm)
				fprintf(f, ",\"ttft_ms\":{\"p50\":%.10g,\"p99\":%.10g},\"tpot_ms\":{\"p50\":%.10g,\"p99\":%.10g}",
				        r->ttft[0], r->ttft[1], r->tpot[0], r->tpot[1]);
			fprintf(f, r->run_id >= 0 ? ",\"run_id\":%.0f}" : ",\"run_id\":null}", r->run_id);
		}
		fprintf(f, "]}\n");
		return;
	}
	fprintf(f, "saturation %.4g req/s: the throughput of a run whose requests all arrive at 0 s; synchronous %.4g "
	        "req/s (one at a time)\n", sat->throughput, sync->throughput);
	fprintf(f, "%s\n", llm ? "   rate req/s  throughput   latency p50     p99 ms   TTFT p50     p99 ms   TPOT p50     "
	        "p99 ms" : "   rate req/s  throughput   latency p50      p90      p99 ms");
	for (size_t i = 0; i < points; i++) {
		const struct auto_run *r = &s->runs[2 + i];
		if (llm)
			fprintf(f, "%12.4g %11.4g %13.1f %8.1f %10.1f %8.1f %10.1f %8.1f\n", r->rate, r->throughput, r->lat[0],
			        r->lat[2], r->ttft[0], r->ttft[1], r->tpot[0], r->tpot[1]);
		else
			fprintf(f, "%12.4g %11.4g %13.4g %8.4g %8.4g\n", r->rate, r->throughput, r->lat[0], r->lat[1], r->lat[2]);
	}
}

static void auto_csv(FILE *f, const struct auto_sweep *s, size_t points)
{
	fprintf(f, "rate_rps,throughput_rps,latency_p50_ms,latency_p90_ms,latency_p99_ms,ttft_p50_ms,ttft_p99_ms,"
	        "tpot_p50_ms,tpot_p99_ms,saturation_rps,synchronous_rps\n");
	for (size_t i = 0; i < points; i++) {
		const struct auto_run *r = &s->runs[2 + i];
		if (r->llm)
			fprintf(f, "%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,%.10g,", r->rate, r->throughput, r->lat[0],
			        r->lat[1], r->lat[2], r->ttft[0], r->ttft[1], r->tpot[0], r->tpot[1]);
		else
			fprintf(f, "%.10g,%.10g,%.10g,%.10g,%.10g,,,,,", r->rate, r->throughput, r->lat[0], r->lat[1], r->lat[2]);
		fprintf(f, "%.10g,%.10g\n", s->runs[1].throughput, s->runs[0].throughput);
	}
}

/* Parses own and run options, refusing what the sweep sets: 0, or -1 with err. */
static int auto_parse(int argc, char **argv, char **own, char **run, int *nrun, struct opt_set *o, char *err,
                      size_t errlen)
{
	struct opt_set ro;
	int nown = 0;
	size_t nrd;
	const struct opt_def *rd = cmd_run_options(&nrd);
	cli_split_args(argc, argv, auto_opts, AUTO_NOPTS, own, &nown, run, nrun);
	if (opt_parse(o, auto_opts, AUTO_NOPTS, nown, own, 0, err, errlen) != 0)
		return -1;
	if (opt_flag(o, "help"))
		return 0;
	if (strcmp(opt_str(o, "rates"), "auto") != 0) {
		snprintf(err, errlen, "--rates=%s: only auto (a sweep of given rates is a sweep file's axis rate = ..., "
		         "sim/SWEEP.md)", opt_str(o, "rates"));
		return -1;
	}
	if (*nrun - 1 + 4 >= AUTO_MAX_ARGS) {
		snprintf(err, errlen, "too many run options");
		return -1;
	}
	return opt_parse(&ro, rd, nrd, *nrun, run, 0, err, errlen) != 0 || auto_refuse(&ro, rd, nrd, err, errlen) != 0
	       ? -1 : 0;
}

int cmd_sweep_auto(int argc, char **argv)
{
	char err[1024] = "", exe[4096];
	struct opt_set o;
	struct auto_sweep s = { 0 };
	struct outfile out = { 0 };
	char **own = calloc((size_t)argc + 1, sizeof *own), **run = calloc((size_t)argc + 1, sizeof *run);
	int nrun = 0, rc = CLI_BAD_INPUT;
	if (!own || !run) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	if (auto_parse(argc, argv, own, run, &nrun, &o, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, auto_usage, auto_opts, AUTO_NOPTS);
		rc = CLI_OK;
		goto out;
	}
	size_t points = opt_uint(&o, "points");
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned jobs = opt_given(&o, "jobs") ? (unsigned)opt_uint(&o, "jobs") : ncpu > 0 ? (unsigned)ncpu : 1;
	s.run_args = run + 1;
	s.nrun_args = (size_t)nrun - 1;
	s.nruns = 2 + points;
	s.runs = calloc(s.nruns, sizeof *s.runs);
	if (!s.runs || pp_self_exe(exe, sizeof exe, err, sizeof err) != 0) {
		if (!s.runs)
			err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	if (opt_given(&o, "out") && outfile_open(&out, opt_str(&o, "out"), err, sizeof err) != 0)
		goto fail;
	snprintf(s.runs[0].arg, sizeof s.runs[0].arg, "--concurrency=1");
	snprintf(s.runs[1].arg, sizeof s.runs[1].arg, "--scenario=offline");
	if ((rc = auto_run_all(&s, 0, 2, exe, jobs, err, sizeof err)) != CLI_OK)
		goto fail;
	if (!(s.runs[1].throughput > 0)) {
		snprintf(err, sizeof err, "the overloaded run completed nothing: no saturation rate to sweep below");
		rc = CLI_FAILED;
		goto fail;
	}
	auto_rates(&s, s.runs[0].throughput, s.runs[1].throughput, points);
	if ((rc = auto_run_all(&s, 2, 2 + points, exe, jobs, err, sizeof err)) != CLI_OK)
		goto fail;
	if (out.f) {
		auto_csv(out.f, &s, points);
		if (outfile_commit(&out, err, sizeof err) != 0) {
			rc = cli_exit_status();
			goto fail;
		}
	}
	auto_print(stdout, &s, points, opt_flag(&o, "json"));
	rc = CLI_OK;
	goto out;
fail:
	if (out.f)
		outfile_abort(&out);
	fprintf(stderr, "simbatch: %s\n", err);
out:
	free(s.runs);
	free(own);
	free(run);
	return rc;
}
