/* sim/cli/cmd_capacity.c: `simbatch capacity`: the highest Poisson rate at which
 * the p99 latency stays within the SLA (the question of MLPerf's Server
 * scenario), by bisection over rates.
 *
 * The search: the first rate tried is the hardware's capacity estimate
 * (eng_capacity_rps: the best requests/s of back-to-back batches at the max
 * batch); the rate is doubled until the p99 misses the SLA or halved until it
 * meets it, which gives a bracket [lo, hi] with lo passing and hi failing;
 * then the midpoint is simulated until (hi - lo) <= tolerance * lo. Every
 * rate runs the same seeds (common random numbers: the arrival pattern is
 * the same up to the time scale), so neighbouring rates differ by the rate
 * alone and the p99 is close to monotone in the rate. With several seeds the
 * p99 of a rate is the mean of the seeds' p99s.
 *
 * Requests per rate (the rule): MLPerf LoadGen's early-stopping rule, the one
 * the summary's tail marks use (util/metrics.h): the fewest measured
 * requests for which a p99 with CAP_TAIL_SAMPLES = 200 requests above it
 * still bounds the true p99 from above with 99% confidence, 23,527, plus a
 * warm-up of 10% that is left out (the empty system at t = 0 flatters the
 * tail). 200 tail samples keep the binomial standard error of the tail
 * fraction near 7% of the 1% it estimates, so a probe's p99 is steady enough
 * to bisect on. Latencies near capacity are correlated (long busy periods),
 * which shrinks the effective sample: add --seeds or --requests there.
 * (MLPerf asks 270,336 queries of a Server run because its single run must
 * be conclusive; a bisection probe needs less.)
 *
 * An LLM (DESIGN.md 3c) is judged on its token targets instead: --ttft-slo
 * and --tpot-slo (or --preset=mlperf-llama2-70b: MLPerf's Llama-2-70B
 * server targets, TTFT 2 s and TPOT 200 ms at p99), at a percentile (both
 * targets met by P% of the requests) or an attainment (DistServe's goodput:
 * the fraction meeting both). With two targets one quantile's early-stopping
 * rule no longer fits, so a probe passes when the one-sided upper
 * Clopper-Pearson bound on the fraction of requests missing either target
 * (--confidence, 95%) is within what the percentile or attainment allows,
 * and when the run was not saturated (its throughput below 95% of the rate
 * offered with the device busy: an overloaded probe is never a pass, however
 * its finite run looked). Saturation is read in the run's steady window
 * (the measured requests' middle half by arrival, driver.h): there the
 * departure rate falls below the arrival rate only when the queue grows; a
 * probe is saturated when it is below CAP_LLM_KEEP_UP of it (as
 * report_saturated's 95%), or, when the run did not reach the window's end,
 * when report_saturated says so. Every model's probe also fails when its run
 * was overloaded within a window (the queue grew, util/overload.h: the run's
 * "overload_window"), the test `run` reports and `search` inherits from here.
 * Requests per probe: the fewest for which a
 * run whose true miss fraction is half the allowance passes
 * (metrics_fraction_min_trials), but at least CAP_LLM_MIN_MEASURED, so that
 * the window's Poisson noise (1 / sqrt(its arrivals)) is within half the 5%
 * allowed, two standard deviations; plus 10% warm-up (capacity_requests.c, which also refuses a run too short
 * for any probe to pass). The first rate tried is
 * the rate at which full batches of decodes keep the device busy. On a
 * measured GPU the answer also carries the band the hardware model's
 * measured error (a layer's leave-one-row-out p90) puts on it, to first
 * order: a model e slower serves 1/(1 + e) of the rate.
 *
 * The search and the judging of a rate are the study layer's
 * (sim/study/capacity_search.h); here each rate is a child `simbatch run
 * --json --no-db` (procpool.h, capacity_probe.c), so every run option (policy
 * knobs, lengths, workers) works here unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../../util/errkind.h"
#include "../../util/metrics.h"
#include "procpool.h"
#include "capacity_search.h"
#include "capacity_requests.h"
#include "../study/run.h"
#include "../study/capacity.h"
#include "../study/default_load.h"
#include "../store/results.h"

static const struct opt_def cap_opts[] = {
	{ "sla", OPT_DOUBLE, "100", 0, 1e9, 1, "SLA deadline in ms: the p99 must not exceed it" },
	{ "tolerance", OPT_DOUBLE, "0.02", 0, 1, 1, "stop when the bracket is within this fraction of its lower end" },
	{ "requests", OPT_UINT, NULL, 1, 1e12, 0, "requests per rate (default 25879: 23527 measured, MLPerf early stopping with 200 above the p99, + 10% warm-up)" },
	{ "warmup", OPT_UINT, NULL, 0, 1e12, 0, "first requests of each rate left out (default 10% of the measured)" },
	{ "percentile", OPT_DOUBLE, NULL, 0, 100, 1, "LLM: the percentile of requests that must meet both token targets "
	  "(default 99; below 100)" },
	{ "attainment", OPT_DOUBLE, NULL, 0, 1, 1, "LLM: instead, the fraction of requests that must meet both targets "
	  "(DistServe's goodput)" },
	{ "confidence", OPT_DOUBLE, "0.95", 0.5, 1, 1, "LLM: the confidence of the bound a probe is judged on (below 1)" },
	{ "preset", OPT_STR, NULL, 0, 0, 0, "LLM targets by name: mlperf-llama2-70b (TTFT 2000 ms and TPOT 200 ms at p99)" },
	{ "seeds", OPT_UINT, "1", 1, 1000, 0, "seeds per rate (the p99 of a rate is their mean)" },
	{ "seed", OPT_UINT, "1", 0, 1.8e19, 0, "first seed" },
	{ "jobs", OPT_UINT, NULL, 1, 4096, 0, "runs at a time (default: the online CPUs)" },
	{ "db", OPT_STR, "results/simbatch.db", 0, 0, 0, "results database the answer is stored in (tables capacities "
	  "and capacity_probes, docs/RESULTS.md); the probes themselves are not stored" },
	{ "no-db", OPT_FLAG, NULL, 0, 0, 0, "do not store the answer" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object on stdout" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress on stderr" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define CAP_NOPTS (sizeof cap_opts / sizeof cap_opts[0])

const struct opt_def *cmd_capacity_options(size_t *n)
{
	*n = CAP_NOPTS;
	return cap_opts;
}

/* Run options the search sets itself, or that make no sense per probe (--db and --no-db are
 * capacity's own: where its answer is stored; the probes store nothing). */
static const char *const cap_forbidden[] = {
	"rate", "duration", "trace", "db", "no-db", "json", "quiet", "requests-out", "timeline-out",   /* trace: unless
	                                                                                                 * --trace-pairs */
	"db-requests", "seed", "sweep-point", "sweep-name", "sweep-variant", "dry-run", "help", "requests", "warmup",
	"sla",
};

static const char cap_usage[] =
	"usage: simbatch capacity --policy=P --model=M --hw=H --sla=MS [--tolerance=F] [--seeds=K]\n"
	"                         [any run option: --max-batch=B --window=MS --workers=N ...]\n"
	"       simbatch capacity --model=LLM --ttft-slo=MS --tpot-slo=MS [--percentile=P | --attainment=F]\n"
	"                         [--confidence=C] [--preset=mlperf-llama2-70b] [any run option]\n"
	"Finds the highest Poisson rate whose p99 latency meets the SLA, by bisection, and prints it\n"
	"with its bracket [lo, hi]: p99 <= SLA at lo, > SLA at hi (or a run overloaded within a window,\n"
	"as `run` reports it). An LLM is judged on its token targets: the bound on the fraction of\n"
	"requests missing one, and a steady state.";

static int cap_is_forbidden(const char *name)
{
	for (size_t i = 0; i < sizeof cap_forbidden / sizeof cap_forbidden[0]; i++)
		if (strcmp(name, cap_forbidden[i]) == 0)
			return 1;
	return 0;
}

/* A command's own options (defs) into own, every other option into run (its runs' options); both start with
 * argv[0]. */
void cli_split_args(int argc, char **argv, const struct opt_def *defs, size_t ndefs, char **own, int *nown, char **run,
                    int *nrun)
{
	own[(*nown)++] = argv[0];
	run[(*nrun)++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t n = strncmp(a, "--", 2) == 0 ? strcspn(a + 2, "=") : 0;
		int mine = 0;
		for (size_t k = 0; n && k < ndefs; k++)
			mine |= strlen(defs[k].name) == n && strncmp(a + 2, defs[k].name, n) == 0;
		if (mine)
			own[(*nown)++] = argv[i];
		else
			run[(*nrun)++] = argv[i];
	}
}

int cmd_capacity_check_targets(int argc, char **argv, char *err, size_t errlen)
{
	char **own = calloc((size_t)argc + 1, sizeof *own), **run = calloc((size_t)argc + 4, sizeof *run);
	struct cap_search *s = calloc(1, sizeof *s);
	struct opt_set o, ro;
	struct mdl_model *m = NULL;
	int nown = 0, nrun = 0, rc = -1;
	size_t nrd;
	const struct opt_def *rd = cmd_run_options(&nrd);
	if (!own || !run || !s) {
		err_memory(err, errlen, "out of memory");
		goto done;
	}
	cli_split_args(argc, argv, cap_opts, CAP_NOPTS, own, &nown, run, &nrun);
	if (opt_parse(&o, cap_opts, CAP_NOPTS, nown, own, 0, err, errlen) != 0 ||
	    opt_parse(&ro, rd, nrd, nrun, run, 0, err, errlen) != 0 || mdl_load(opt_str(&ro, "model"), &m, err, errlen) != 0)
		goto done;
	s->llm = m->is_llm;
	s->nseeds = opt_uint(&o, "seeds");
	rc = cap_targets(&o, &ro, s, err, errlen) != 0 ||
	     cap_requests(&o, s->llm, s->allowed, s->confidence, s->nseeds, &s->requests, &s->warmup, err, errlen) != 0
	     ? -1 : 0;
done:
	mdl_free(m);
	free(own);
	free(run);
	free(s);
	return rc;
}

/* capacity --help: its own options, then the run options it passes to every probe. */
static void cap_print_help(void)
{
	opt_print_help(stdout, cap_usage, cap_opts, CAP_NOPTS);
	size_t nr;
	const struct opt_def *rd = cmd_run_options(&nr);
	printf("\nrun options passed to every probe (see simbatch run --help):");
	for (size_t i = 0; i < nr; i++)
		if (!cap_is_forbidden(rd[i].name))
			printf(" --%s", rd[i].name);
	printf("\n");
}

/* A run option the search sets itself, given to capacity: -1 with err naming it, else 0. */
static int cap_refuse_set(const struct opt_set *ro, const struct opt_def *rd, size_t nrd, char *err, size_t errlen)
{
	for (size_t i = 0; i < nrd; i++)
		/* a trace's timestamps set a rate of their own; its rows' lengths, drawn at the probe's rate, do not */
		if (ro->given[i] && cap_is_forbidden(rd[i].name) &&
		    !(strcmp(rd[i].name, "trace") == 0 && opt_flag(ro, "trace-pairs"))) {
			if (strcmp(rd[i].name, "trace") == 0)
				snprintf(err, errlen, "--trace: its timestamps would set the rate the search sets; with "
				         "--trace-pairs each probe draws its rows' prompt and output together at its own rate");
			else
				snprintf(err, errlen, "--%s cannot be given to capacity (the search sets it)", rd[i].name);
			return -1;
		}
	return 0;
}

/* --db checked and opened (a new one created) before the probes run, as search's: a full disk or a
 * foreign file fails here, not after the search; *created says this opened a new one. --no-db: *db
 * stays NULL. CLI_OK, or an exit status with err. */
static int cap_open_db(const struct opt_set *o, struct results_db **db, int *created, char *err, size_t errlen)
{
	if (opt_flag(o, "no-db") && opt_given(o, "db")) {      /* as run refuses it */
		snprintf(err, errlen, "give --db=PATH or --no-db, not both: --no-db stores nothing, --db names where to store");
		return CLI_BAD_INPUT;
	}
	if (opt_flag(o, "no-db"))
		return CLI_OK;
	if (results_check(opt_str(o, "db"), err, errlen) != 0)
		return cli_exit_status();
	*created = access(opt_str(o, "db"), F_OK) != 0;
	return results_open(opt_str(o, "db"), db, err, errlen) != 0 ? cli_exit_status() : CLI_OK;
}

/* An LLM given no lengths: its probes serve the mix a run given no load serves (sim/study/default_load.h),
 * so its capacity is that of the requests such a run shows; passed on to them as run options. The
 * estimate at the mix's lengths, or -1 with err (CAP_ERR bytes). */
#define CAP_ERR 1536
static double cap_default_lengths(struct cap_search *s, struct opt_set *ro, char **run, int *nrun,
                                  struct study_cap_names *nm, char *err)
{
	if (study_load_lengths_put(ro, err, CAP_ERR) != 0)
		return -1;
	snprintf(s->mix_trace_arg, sizeof s->mix_trace_arg, "--trace=%s", study_load_table());
	run[(*nrun)++] = s->mix_trace_arg;
	run[(*nrun)++] = "--trace-pairs";
	run[(*nrun)++] = "--over-context=drop";
	s->default_lengths = 1;
	return study_cap_estimate(ro, nm, err, CAP_ERR);
}

/* The search (sim/study/capacity_search.h) with this command's probes and progress: CLI_OK with the
 * rates measured and the bracket in s->res, or an exit status with err. */
static int cap_search_rates(struct cap_search *s, double est, double tolerance, char *err, size_t errlen)
{
	struct study_cap_plan plan = { .estimate_rps = est, .tolerance = tolerance, .llm = s->llm, .sla_ms = s->sla_ms,
	                               .allowed = s->allowed, .confidence = s->confidence };
	switch (study_capacity_search(&plan, cap_probe, cap_progress, s, &s->res, err, errlen)) {
	case STUDY_CAP_OK:
		return CLI_OK;
	case STUDY_CAP_BAD_INPUT:          /* a probe's bad input (exit 2 of the run) is the user's input */
		return CLI_BAD_INPUT;
	default:
		return CLI_FAILED;
	}
}

int cmd_capacity(int argc, char **argv)
{
	char err[CAP_ERR] = "", exe[4096];
	struct study_cap_names nm = { .llm = 0 };
	struct opt_set o, ro;
	char **own = calloc((size_t)argc + 1, sizeof *own), **run = calloc((size_t)argc + 4, sizeof *run);
	int nown = 0, nrun = 0, rc = CLI_BAD_INPUT, db_created = 0;
	struct cap_search *s = calloc(1, sizeof *s);
	struct results_db *db = NULL;
	int64_t capacity_id = -1;
	if (!own || !run || !s) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	cli_split_args(argc, argv, cap_opts, CAP_NOPTS, own, &nown, run, &nrun);
	if (opt_parse(&o, cap_opts, CAP_NOPTS, nown, own, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		cap_print_help();
		rc = CLI_OK;
		goto out;
	}
	size_t nrd;
	const struct opt_def *rd = cmd_run_options(&nrd);
	if (opt_parse(&ro, rd, nrd, nrun, run, 0, err, sizeof err) != 0 ||
	    cap_refuse_set(&ro, rd, nrd, err, sizeof err) != 0)
		goto fail;

	s->sla_ms = opt_double(&o, "sla");
	s->nseeds = opt_uint(&o, "seeds");
	s->seed0 = opt_uint(&o, "seed");
	s->quiet = opt_flag(&o, "quiet") || opt_flag(&o, "json");
	s->hw_error_p90 = -1;
	double est = study_cap_estimate(&ro, &nm, err, sizeof err);
	if (est < 0)
		goto fail;
	if (!(est > 0) || !isfinite(est)) {
		snprintf(err, sizeof err, "cannot estimate a capacity for %s on %s / %s", nm.policy, nm.model, nm.hw);
		goto fail;
	}
	s->llm = nm.llm;
	if (s->llm && study_load_lengths_apply(&ro) && (est = cap_default_lengths(s, &ro, run, &nrun, &nm, err)) < 0)
		goto fail;
	s->nfixed = 3;
	if (cap_targets(&o, &ro, s, err, sizeof err) != 0)
		goto fail;
	if (cap_requests(&o, s->llm, s->allowed, s->confidence, s->nseeds, &s->requests, &s->warmup, err,
	                 sizeof err) != 0)
		goto fail;
	uint64_t least = metrics_tail_min_requests(CAP_QUANTILE, 0, METRICS_TAIL_CONFIDENCE);
	if (!s->quiet && !s->llm && s->requests - s->warmup < least)
		fprintf(stderr, "simbatch: warning: %llu measured requests per rate cannot support a p99 (MLPerf early "
		        "stopping needs %llu); raise --requests\n", (unsigned long long)(s->requests - s->warmup),
		        (unsigned long long)least);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->jobs = opt_given(&o, "jobs") ? (unsigned)opt_uint(&o, "jobs") : ncpu > 0 ? (unsigned)ncpu : 1;
	if (pp_self_exe(exe, sizeof exe, err, sizeof err) != 0) {
		rc = CLI_FAILED;
		goto fail;
	}
	s->exe = exe;
	s->run_args = run + 1;
	s->nrun_args = (size_t)nrun - 1;
	snprintf(s->fixed_args[0], sizeof s->fixed_args[0], "--requests=%llu", (unsigned long long)s->requests);
	snprintf(s->fixed_args[1], sizeof s->fixed_args[1], "--warmup=%llu", (unsigned long long)s->warmup);
	snprintf(s->fixed_args[2], sizeof s->fixed_args[2], "--sla=%s", opt_str(&o, "sla"));
	if (s->nrun_args > 64) {
		snprintf(err, sizeof err, "too many run options");
		goto fail;
	}

	/* bad values the options table cannot see (a batch beyond a table, a bad
	 * length spec) come back from the first probe as its one-line error */
	if ((rc = cap_open_db(&o, &db, &db_created, err, sizeof err)) != CLI_OK ||
	    (rc = cap_search_rates(s, est, opt_double(&o, "tolerance"), err, sizeof err)) != CLI_OK)
		goto fail;
	const struct study_cap_point *lo = &s->res.pts[s->res.lo], *hi = &s->res.pts[s->res.hi];
	if (db && cap_store(db, &o, s, &nm, est, lo, hi, &capacity_id, err, sizeof err) != 0) {
		rc = cli_exit_status_late();
		goto fail;
	}
	cap_print(&o, s, &nm, est, lo, hi, capacity_id);
	if (!opt_flag(&o, "quiet") && lo->rate_rps >= est)
		fprintf(stderr, "simbatch: warning: the rate found is at or above the capacity estimate (%.6g req/s): "
		        "the queue grows without bound there and only the finite run met the SLA; raise --requests\n", est);
	rc = CLI_OK;
	goto out;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
out:
	results_close(db);
	if (db_created && capacity_id < 0)        /* a database this failed capacity created is removed again */
		results_remove(opt_str(&o, "db"));
	free(own);
	free(run);
	free(s);
	return rc;
}
