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
 * Each rate is a child `simbatch run --json --no-db` (procpool.h), so every
 * run option (policy knobs, lengths, workers) works here unchanged. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "../../util/json.h"
#include "../engine/engine.h"
#include "options.h"
#include "procpool.h"

#define CAP_QUANTILE 0.99
#define CAP_TAIL_SAMPLES 200          /* measured requests above the p99 (see the rule above) */
#define CAP_WARMUP_FRACTION 0.1
#define CAP_MAX_STEPS 12              /* doublings / halvings before giving up: at 1/4096 of the
                                         estimate queueing is negligible, so a p99 over the SLA there
                                         is the unloaded latency's */
#define CAP_MAX_POINTS 200

static const struct opt_def cap_opts[] = {
	{ "sla", OPT_DOUBLE, "100", 0, 1e9, 1, "SLA deadline in ms: the p99 must not exceed it" },
	{ "tolerance", OPT_DOUBLE, "0.02", 0, 1, 1, "stop when the bracket is within this fraction of its lower end" },
	{ "requests", OPT_UINT, NULL, 1, 1e12, 0, "requests per rate (default 25879: 23527 measured, MLPerf early stopping with 200 above the p99, + 10% warm-up)" },
	{ "warmup", OPT_UINT, NULL, 0, 1e12, 0, "first requests of each rate left out (default 10% of the measured)" },
	{ "seeds", OPT_UINT, "1", 1, 1000, 0, "seeds per rate (the p99 of a rate is their mean)" },
	{ "seed", OPT_UINT, "1", 0, 1.8e19, 0, "first seed" },
	{ "jobs", OPT_UINT, NULL, 1, 4096, 0, "runs at a time (default: the online CPUs)" },
	{ "json", OPT_FLAG, NULL, 0, 0, 0, "print one JSON object on stdout" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress on stderr" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define CAP_NOPTS (sizeof cap_opts / sizeof cap_opts[0])

/* Run options the search sets itself, or that make no sense per probe. */
static const char *const cap_forbidden[] = {
	"rate", "duration", "trace", "db", "no-db", "json", "quiet", "requests-out", "timeline-out",
	"db-requests", "seed", "sweep-point", "dry-run", "help", "requests", "warmup", "sla",
};

static const char cap_usage[] =
	"usage: simbatch capacity --policy=P --model=M --hw=H --sla=MS [--tolerance=F] [--seeds=K]\n"
	"                         [any run option: --max-batch=B --window=MS --workers=N ...]\n"
	"Finds the highest Poisson rate whose p99 latency meets the SLA, by bisection, and prints it\n"
	"with its bracket [lo, hi]: p99 <= SLA at lo, > SLA at hi.";

struct cap_point {
	double rate_rps;
	double p99_ms;            /* mean over seeds */
	double violation;         /* mean SLA violation rate over seeds */
	int pass;
};

struct cap_search {
	const char *exe;
	char **run_args;          /* pass-through run options (not owned) */
	size_t nrun_args;
	uint64_t requests, warmup, seed0, nseeds;
	double sla_ms;
	unsigned jobs;
	int quiet;
	/* the rate being measured */
	char rate_arg[64];
	uint64_t next_seed;
	double sum_p99, sum_viol;
	uint64_t nok;
	char failure[1024];
	int bad_input;            /* a run exited 2: the options are wrong, not the search */
	char *argv_store[64 + 16];
	char fixed_args[5][96];
	struct cap_point pts[CAP_MAX_POINTS];
	size_t npts;
};

/* The number after "key": inside the object that follows "obj": in the JSON
 * a run printed (its shape is the DESIGN.md contract). */
static int cap_json_number(const char *json, const char *obj, const char *key, double *out)
{
	char pat[64];
	const char *p = json;
	if (obj) {
		snprintf(pat, sizeof pat, "\"%s\":{", obj);
		if (!(p = strstr(json, pat)))
			return -1;
		p += strlen(pat);
	}
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *end = obj ? strchr(p, '}') : NULL;
	const char *k = strstr(p, pat);
	if (!k || (end && k > end))
		return -1;
	char *stop;
	*out = strtod(k + strlen(pat), &stop);
	return stop == k + strlen(pat) ? -1 : 0;
}

static int cap_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct cap_search *s = ud;
	(void)err;
	(void)errlen;
	if (s->next_seed >= s->seed0 + s->nseeds)
		return 0;
	size_t k = 0;
	s->argv_store[k++] = "simbatch";
	s->argv_store[k++] = "run";
	s->argv_store[k++] = "--no-db";
	s->argv_store[k++] = "--json";
	s->argv_store[k++] = s->rate_arg;
	/* one seed string per job slot would do; jobs are started one after another, so each gets its own copy */
	char *seed = malloc(48);
	if (!seed) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(seed, 48, "--seed=%llu", (unsigned long long)s->next_seed++);
	s->argv_store[k++] = seed;
	for (size_t i = 0; i < 3; i++)
		s->argv_store[k++] = s->fixed_args[i];
	for (size_t i = 0; i < s->nrun_args; i++)
		s->argv_store[k++] = s->run_args[i];
	s->argv_store[k] = NULL;
	/* posix_spawn copies argv into the child, so the shared array may be reused at once */
	job->argv = s->argv_store;
	job->ctx = seed;
	job->capture_stdout = 1;
	return 1;
}

static void cap_done(void *ud, void *ctx, const struct pp_result *r)
{
	struct cap_search *s = ud;
	double p99, viol;
	if (r->exit_code != 0 || cap_json_number(r->out, "latency_ms", "p99", &p99) != 0 ||
	    cap_json_number(r->out, NULL, "sla_violation_rate", &viol) != 0) {
		if (!s->failure[0]) {
			const char *e = r->errtext;
			if (strncmp(e, "simbatch: ", 10) == 0)
				e += 10;
			int n = (int)strcspn(e, "\n");
			if (n > 700)
				n = 700;
			s->bad_input = r->exit_code == 2;
			if (s->bad_input)
				snprintf(s->failure, sizeof s->failure, "%.*s", n, e);
			else
				snprintf(s->failure, sizeof s->failure, "the run at %s req/s, %s failed: %.*s", s->rate_arg + 7,
				         (const char *)ctx + 2, n ? n : 40,
				         n ? e : r->signal ? "killed by a signal" : r->exit_code == 0 ? "unreadable JSON" : "no message");
		}
	} else {
		s->sum_p99 += p99;
		s->sum_viol += viol;
		s->nok++;
	}
	free(ctx);
}

/* Simulates every seed at rate; 0 with the point recorded, -1 with err. */
static int cap_measure(struct cap_search *s, double rate, struct cap_point **out, char *err, size_t errlen)
{
	if (s->npts == CAP_MAX_POINTS) {
		snprintf(err, errlen, "no bracket after %d rates", CAP_MAX_POINTS);
		return -1;
	}
	snprintf(s->rate_arg, sizeof s->rate_arg, "--rate=%.10g", rate);
	s->next_seed = s->seed0;
	s->sum_p99 = s->sum_viol = 0;
	s->nok = 0;
	s->failure[0] = '\0';
	struct pp_config pc = { .exe = s->exe, .jobs = s->jobs, .next = cap_next, .done = cap_done, .ud = s };
	if (pp_run(&pc, err, errlen) != 0)
		return -1;
	if (s->failure[0] || s->nok != s->nseeds) {
		snprintf(err, errlen, "%s", s->failure[0] ? s->failure : "a run failed");
		return -1;
	}
	struct cap_point *p = &s->pts[s->npts++];
	p->rate_rps = rate;
	p->p99_ms = s->sum_p99 / (double)s->nseeds;
	p->violation = s->sum_viol / (double)s->nseeds;
	p->pass = p->p99_ms <= s->sla_ms;
	if (!s->quiet)
		fprintf(stderr, "capacity: %.10g req/s: p99 %.4g ms %s %g ms\n", rate, p->p99_ms, p->pass ? "<=" : ">",
		        s->sla_ms);
	*out = p;
	return 0;
}

/* Rates are rounded to 6 significant digits so the printed rate is exactly
 * the one simulated (and can be run again by hand). */
static double cap_round(double r)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%.6g", r);
	return strtod(buf, NULL);
}

static int cap_is_forbidden(const char *name)
{
	for (size_t i = 0; i < sizeof cap_forbidden / sizeof cap_forbidden[0]; i++)
		if (strcmp(name, cap_forbidden[i]) == 0)
			return 1;
	return 0;
}

struct cap_names {             /* what the report calls the configuration */
	char policy[64], model[256], hw[256];
	uint32_t max_batch;
};

/* The capacity estimate for the run options (policy, model, hw, workers,
 * max batch, mean lengths), and names for the report. */
static double cap_estimate(const struct opt_set *ro, struct cap_names *nm, char *err, size_t errlen)
{
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	struct trc_lengths *len[2] = { NULL, NULL };
	double cap = -1, mean[2] = { 0, 0 };
	const struct pol_ops *pol = pol_find(opt_str(ro, "policy"));
	if (!pol) {
		cli_unknown_policy(opt_str(ro, "policy"), err, errlen);
		return -1;
	}
	if (mdl_load(opt_str(ro, "model"), &m, err, errlen) != 0)
		goto done;
	/* an LLM runs on gpu-h100 unless told, as in run (cmd_run.c RUN_DEFAULT_LLM_HW) */
	const char *hw_name = m->is_llm && !opt_given(ro, "hw") ? "gpu-h100" : opt_str(ro, "hw");
	if (hw_open_tp(hw_name, m, (uint32_t)opt_uint(ro, "tp"), &hw, err, errlen) != 0)
		goto done;
	const char *opt[2] = { "input-len", "output-len" };
	const char *spec[2] = { m->input_len_spec, m->output_len_spec };
	int used[2] = { m->uses_input_len, m->uses_output_len };
	for (int k = 0; k < 2; k++) {
		if (!used[k])
			continue;
		const char *sp = opt_str(ro, opt[k]) ? opt_str(ro, opt[k]) : spec[k];
		if (!sp || !*sp) {
			snprintf(err, errlen, "--%s is needed: the model has no default length distribution", opt[k]);
			goto done;
		}
		if (trc_lengths_parse(sp, &len[k], err, errlen) != 0)
			goto done;
		mean[k] = trc_lengths_mean(len[k]);
	}
	uint32_t max_batch = opt_given(ro, "max-batch") ? (uint32_t)opt_uint(ro, "max-batch") : pol->default_max_batch;
	cap = eng_capacity_rps(m, hw, (uint32_t)opt_uint(ro, "workers"), max_batch, (uint32_t)ceil(mean[0]),
	                       (uint32_t)ceil(mean[1]), err, errlen);
	snprintf(nm->policy, sizeof nm->policy, "%s", pol->name);
	snprintf(nm->model, sizeof nm->model, "%s", m->name);
	snprintf(nm->hw, sizeof nm->hw, "%s", hw->label);
	nm->max_batch = max_batch;
done:
	trc_lengths_free(len[0]);
	trc_lengths_free(len[1]);
	hw_close(hw);
	mdl_free(m);
	return cap;
}

/* The search: doubling or halving from the estimate until one rate meets
 * the SLA and one does not, then bisection to the tolerance. CLI_OK with the
 * bracket, or an exit code with err. */
static int cap_bracket(struct cap_search *s, double est, double tolerance, struct cap_point **lo_out,
                       struct cap_point **hi_out, char *err, size_t errlen)
{
	struct cap_point *p, *lo = NULL, *hi = NULL;
	double rate = cap_round(est);
	if (cap_measure(s, rate, &p, err, errlen) != 0)
		goto probe_fail;
	for (int step = 0; step < CAP_MAX_STEPS && !(lo && hi); step++) {
		if (p->pass) {
			lo = p;
			if (!hi) {
				rate = cap_round(rate * 2);
				if (cap_measure(s, rate, &p, err, errlen) != 0)
					goto probe_fail;
			}
		} else {
			hi = p;
			if (!lo) {
				rate = cap_round(rate / 2);
				if (cap_measure(s, rate, &p, err, errlen) != 0)
					goto probe_fail;
			}
		}
		if (p->pass && hi && !lo)
			lo = p;
		if (!p->pass && lo && !hi)
			hi = p;
	}
	if (!lo) {
		snprintf(err, errlen, "no rate meets the SLA: even at %.6g req/s, where requests hardly queue, the p99 is %.4g ms > %g ms",
		         hi->rate_rps, hi->p99_ms, s->sla_ms);
		return CLI_FAILED;
	}
	if (!hi) {
		snprintf(err, errlen, "the SLA holds up to %.6g req/s, %d doublings above the estimate; "
		         "is the SLA meant to be %g ms?", lo->rate_rps, CAP_MAX_STEPS, s->sla_ms);
		return CLI_FAILED;
	}
	while (hi->rate_rps - lo->rate_rps > tolerance * lo->rate_rps) {
		double mid = cap_round(0.5 * (lo->rate_rps + hi->rate_rps));
		if (mid <= lo->rate_rps || mid >= hi->rate_rps)
			break;                      /* 6 significant digits are exhausted */
		if (cap_measure(s, mid, &p, err, errlen) != 0)
			goto probe_fail;
		if (p->pass)
			lo = p;
		else
			hi = p;
	}
	*lo_out = lo;
	*hi_out = hi;
	return CLI_OK;
probe_fail:
	/* a probe's bad input (exit 2 of the run) is the user's input: report it as such */
	return s->bad_input ? CLI_BAD_INPUT : CLI_FAILED;
}

/* The result: one JSON object, or two lines of text. */
static void cap_print(const struct opt_set *o, const struct cap_search *s, const struct cap_names *nm, double est,
                      const struct cap_point *lo, const struct cap_point *hi)
{
	if (opt_flag(o, "json")) {
		printf("{\"policy\":");
		json_write_string(stdout, nm->policy);
		printf(",\"model\":");
		json_write_string(stdout, nm->model);
		printf(",\"hw\":");
		json_write_string(stdout, nm->hw);
		printf(",\"max_batch\":%u,\"sla_ms\":%.10g,\"quantile\":%g,\"capacity_rps\":%.10g,"
		       "\"bracket_rps\":[%.10g,%.10g],\"p99_ms_at_bracket\":[%.10g,%.10g],\"estimate_rps\":%.10g,"
		       "\"tolerance\":%.10g,\"requests\":%llu,\"warmup\":%llu,\"seeds\":%llu,\"first_seed\":%llu,\"points\":[",
		       nm->max_batch, s->sla_ms, CAP_QUANTILE, lo->rate_rps, lo->rate_rps, hi->rate_rps, lo->p99_ms, hi->p99_ms, est,
		       opt_double(o, "tolerance"), (unsigned long long)s->requests, (unsigned long long)s->warmup,
		       (unsigned long long)s->nseeds, (unsigned long long)s->seed0);
		for (size_t i = 0; i < s->npts; i++)
			printf("%s{\"rate_rps\":%.10g,\"p99_ms\":%.10g,\"sla_violation_rate\":%.10g,\"pass\":%s}", i ? "," : "",
			       s->pts[i].rate_rps, s->pts[i].p99_ms, s->pts[i].violation, s->pts[i].pass ? "true" : "false");
		printf("]}\n");
	} else {
		printf("capacity %.6g req/s: p99 %.4g ms <= %g ms at %.6g req/s, %.4g ms > %g ms at %.6g req/s\n",
		       lo->rate_rps, lo->p99_ms, s->sla_ms, lo->rate_rps, hi->p99_ms, s->sla_ms, hi->rate_rps);
		printf("  %s on %s / %s, max batch %u; %llu requests per rate (%llu warm-up), %llu seed(s), "
		       "%zu rates simulated; estimate %.6g req/s\n", nm->policy, nm->model, nm->hw, nm->max_batch, (unsigned long long)s->requests, (unsigned long long)s->warmup,
		       (unsigned long long)s->nseeds, s->npts, est);
	}
}

/* The search's own options into own, every other option into run (the
 * probes' options); both start with argv[0]. */
static void cap_split_args(int argc, char **argv, char **own, int *nown, char **run, int *nrun)
{
	own[(*nown)++] = argv[0];
	run[(*nrun)++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t n = strncmp(a, "--", 2) == 0 ? strcspn(a + 2, "=") : 0;
		int mine = 0;
		for (size_t k = 0; n && k < CAP_NOPTS; k++)
			mine |= strlen(cap_opts[k].name) == n && strncmp(a + 2, cap_opts[k].name, n) == 0;
		if (mine)
			own[(*nown)++] = argv[i];
		else
			run[(*nrun)++] = argv[i];
	}
}

int cmd_capacity(int argc, char **argv)
{
	char err[1536] = "", exe[4096];
	struct cap_names nm = { "", "", "", 0 };
	struct opt_set o, ro;
	char **own = calloc((size_t)argc + 1, sizeof *own), **run = calloc((size_t)argc + 1, sizeof *run);
	int nown = 0, nrun = 0, rc = CLI_BAD_INPUT;
	struct cap_search *s = calloc(1, sizeof *s);
	if (!own || !run || !s) {
		snprintf(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	cap_split_args(argc, argv, own, &nown, run, &nrun);
	if (opt_parse(&o, cap_opts, CAP_NOPTS, nown, own, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, cap_usage, cap_opts, CAP_NOPTS);
		size_t nr;
		const struct opt_def *rd = cmd_run_options(&nr);
		printf("\nrun options passed to every probe (see simbatch run --help):");
		for (size_t i = 0; i < nr; i++)
			if (!cap_is_forbidden(rd[i].name))
				printf(" --%s", rd[i].name);
		printf("\n");
		rc = CLI_OK;
		goto out;
	}
	size_t nrd;
	const struct opt_def *rd = cmd_run_options(&nrd);
	if (opt_parse(&ro, rd, nrd, nrun, run, 0, err, sizeof err) != 0)
		goto fail;
	for (size_t i = 0; i < nrd; i++)
		if (ro.given[i] && cap_is_forbidden(rd[i].name)) {
			snprintf(err, sizeof err, "--%s cannot be given to capacity (the search sets it)", rd[i].name);
			goto fail;
		}

	s->sla_ms = opt_double(&o, "sla");
	s->nseeds = opt_uint(&o, "seeds");
	s->seed0 = opt_uint(&o, "seed");
	s->quiet = opt_flag(&o, "quiet") || opt_flag(&o, "json");
	uint64_t measured = metrics_tail_min_requests(CAP_QUANTILE, CAP_TAIL_SAMPLES, METRICS_TAIL_CONFIDENCE);
	s->warmup = opt_given(&o, "warmup") ? opt_uint(&o, "warmup")
	            : (uint64_t)(CAP_WARMUP_FRACTION * (double)(opt_given(&o, "requests") ? opt_uint(&o, "requests") : measured));
	s->requests = opt_given(&o, "requests") ? opt_uint(&o, "requests") : measured + s->warmup;
	if (s->warmup >= s->requests) {
		snprintf(err, sizeof err, "--warmup=%llu leaves no request to measure", (unsigned long long)s->warmup);
		goto fail;
	}
	uint64_t least = metrics_tail_min_requests(CAP_QUANTILE, 0, METRICS_TAIL_CONFIDENCE);
	if (!s->quiet && s->requests - s->warmup < least)
		fprintf(stderr, "simbatch: warning: %llu measured requests per rate cannot support a p99 (MLPerf early "
		        "stopping needs %llu); raise --requests\n", (unsigned long long)(s->requests - s->warmup),
		        (unsigned long long)least);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	s->jobs = opt_given(&o, "jobs") ? (unsigned)opt_uint(&o, "jobs") : ncpu > 0 ? (unsigned)ncpu : 1;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0) {
		snprintf(err, sizeof err, "cannot find the simbatch binary (/proc/self/exe)");
		rc = CLI_FAILED;
		goto fail;
	}
	exe[len] = '\0';
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

	double est = cap_estimate(&ro, &nm, err, sizeof err);
	if (est < 0)
		goto fail;
	if (!(est > 0) || !isfinite(est)) {
		snprintf(err, sizeof err, "cannot estimate a capacity for %s on %s / %s", nm.policy, nm.model, nm.hw);
		goto fail;
	}
	/* bad values the options table cannot see (a batch beyond a table, a bad
	 * length spec) come back from the first probe as its one-line error */
	struct cap_point *lo, *hi;
	if ((rc = cap_bracket(s, est, opt_double(&o, "tolerance"), &lo, &hi, err, sizeof err)) != CLI_OK)
		goto fail;
	cap_print(&o, s, &nm, est, lo, hi);
	if (!opt_flag(&o, "quiet") && lo->rate_rps >= est)
		fprintf(stderr, "simbatch: warning: the rate found is at or above the capacity estimate (%.6g req/s): "
		        "the queue grows without bound there and only the finite run met the SLA; raise --requests\n", est);
	rc = CLI_OK;
	goto out;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
out:
	free(own);
	free(run);
	free(s);
	return rc;
}
