/* sim/cli/cmd_run.c: `simbatch [run]`: one simulated run, from options to the
 * printed summary and the results database (DESIGN.md section 3).
 *
 * Order matters: everything that can be wrong with the input (options,
 * model, hardware, lengths, trace, database, output paths) is checked before
 * the simulation starts, so a bad run fails in milliseconds and leaves no row
 * behind; the database is written in one transaction after the run. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cli.h"
#include "scenario_report.h"
#include "../study/scenario.h"
#include "../../util/errkind.h"
#include "../study/kernel_profile.h"
#include "../../hwmodels/gpu_measured.h"
#include "../../hwmodels/llm_cost.h"
#include "../engine/engine.h"
#include "../../util/options.h"
#include "report_metrics.h"
#include "../store/results.h"
#include "../engine/timeline.h"
#include "version.h"
#include "../../util/outfile.h"
#include "../../util/text.h"
#include "../study/fleet.h"
#include "../study/run_options.h"
#include "../study/run_engine.h"
#include "../study/run.h"
#include "../../policies/router/router.h"

static const char run_usage[] =
	"usage: simbatch [run] [--policy=P] [--rate=R] [--requests=N | --duration=S] [--model=M] [--hw=H] ...\n"
	"Simulates one run and prints a summary (--json: one JSON object).";

struct run_job {             /* a prepared run; released by run_job_free */
	struct study_run r;          /* its configuration (sim/study/run.h) */
	struct results_db *db;
	int db_created;              /* this run created the database file: removed if the run fails */
	int stored;                  /* the run reached the database */
	struct outfile requests_out;
	struct timeline *timeline;
};

void run_job_free(struct run_job *j)
{
	if (!j)
		return;
	timeline_close(j->timeline, 0, NULL, 0);
	outfile_abort(&j->requests_out);
	results_close(j->db);
	if (j->db_created && !j->stored)
		results_remove(opt_str(&j->r.o, "db"));
	study_run_free(&j->r);
	free(j);
}

const struct opt_set *run_job_options(const struct run_job *j)
{
	return &j->r.o;
}

const struct eng_config *run_job_config(const struct run_job *j)
{
	return &j->r.c;
}

static int run_write_requests(FILE *f, const struct drv_result *res)
{
	/* an LLM run adds when each request's first token came (TTFT and TPOT follow from the row) */
	fprintf(f, "id,arrival_s,start_s,finish_s,input_len,output_len%s\n", res->llm ? ",first_token_s" : "");
	for (size_t i = 0; i < res->nrows; i++) {
		const struct drv_request_row *w = &res->rows[i];
		fprintf(f, "%llu,%.9f,%.9f,%.9f,%u,%u", (unsigned long long)w->id, w->arrival_s,
		        w->start_s, w->finish_s, w->input_len, w->output_len);
		if (res->llm)
			fprintf(f, ",%.9f", w->first_token_s);
		fputc('\n', f);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

void run_extra_free(struct run_extra *x)
{
	free(x->json);
	free(x->text);
	x->json = x->text = NULL;
}

/* `simbatch --router=R --help`: what R is and the knobs it takes; -1 with err for an unknown R. */
static int run_router_help(FILE *f, const char *name, char *err, size_t errlen)
{
	const struct router_ops *r = router_find(name);
	if (!r) {
		snprintf(err, errlen, "unknown router '%s' (simbatch list routers)", name);
		return -1;
	}
	char head[400];
	snprintf(head, sizeof head, "router %s: %s\nthe options every fleet shares (--replicas, --router-refresh): "
	         "simbatch --help.", r->name, r->help);
	if (r->nparams)
		opt_print_help(f, head, r->params, r->nparams);
	else
		fprintf(f, "%s\n\nno knobs of its own\n", head);
	return 0;
}

/* `simbatch --policy=P --help`: what P is and the knobs it takes. */
static void run_policy_help(FILE *f, const struct pol_ops *pol)
{
	char head[640], budget[96] = "";
	if (pol->serves_llm)
		snprintf(budget, sizeof budget, pol->pads_prompts ? "; it pads whole prompts, beyond --max-batched-tokens"
		         : pol->default_batched_tokens ? "; default --max-batched-tokens: %u"
		         : "; default --max-batched-tokens: the larger of the model's context and 2048", pol->default_batched_tokens);
	snprintf(head, sizeof head, "policy %s: %s\ndefault --max-batch%s: %u%s. The options every policy shares: "
	         "simbatch --help.", pol->name, pol->help, pol->serves_llm ? " (--max-seqs)" : "", pol->default_max_batch,
	         budget);
	if (pol->nparams)
		opt_print_help(f, head, pol->params, pol->nparams);
	else
		fprintf(f, "%s\n\nno knobs of its own\n", head);
}

/* --requests-out, --timeline-out and the database, opened before the run. */
static int run_open_outputs(struct run_job *j, char *err, size_t errlen)
{
	const struct opt_set *o = &j->r.o;
	const char *req_out = opt_str(o, "requests-out");
	if (req_out && outfile_open(&j->requests_out, req_out, err, errlen) != 0)
		return -1;
	const char *tl_path = opt_str(o, "timeline-out");
	if (tl_path && timeline_open(tl_path, j->r.model, j->r.c.workers, &j->timeline, err, errlen) != 0)
		return -1;
	j->r.c.timeline = j->timeline;
	/* the database is only checked now and opened to store the run (run_job_report): opening may
	 * create it, upgrade its schema or set its journal mode, which a run that fails must not do */
	if (!opt_flag(o, "no-db") && results_check(opt_str(o, "db"), err, errlen) != 0)
		return -1;
	return 0;
}

int run_job_prepare(int argc, char **argv, const struct opt_def *opts, size_t nopts, const char *usage,
                    struct run_job **out)
{
	char err[512] = "";
	*out = NULL;
	struct run_job *j = calloc(1, sizeof *j);
	if (!j) {
		fprintf(stderr, "simbatch: out of memory\n");
		return CLI_FAILED;
	}
	if (opt_parse(&j->r.o, opts, nopts, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&j->r.o, "help") && opt_given(&j->r.o, "policy")) {
		const struct pol_ops *pol = pol_find(opt_str(&j->r.o, "policy"));
		if (!pol) {
			study_unknown_policy(opt_str(&j->r.o, "policy"), err, sizeof err);
			goto fail;
		}
		run_policy_help(stdout, pol);
		run_job_free(j);
		return CLI_OK;
	}
	if (opt_flag(&j->r.o, "help") && opt_given(&j->r.o, "router")) {
		if (run_router_help(stdout, opt_str(&j->r.o, "router"), err, sizeof err) != 0)
			goto fail;
		run_job_free(j);
		return CLI_OK;
	}
	if (opt_flag(&j->r.o, "help")) {
		opt_print_help(stdout, usage, opts, nopts);
		run_job_free(j);
		return CLI_OK;
	}
	if (study_run_configure(&j->r, err, sizeof err) != 0)
		goto fail;
	if (j->r.note[0])
		fprintf(stderr, "simbatch: %s\n", j->r.note);
	j->r.note[0] = '\0';
	if (run_open_outputs(j, err, sizeof err) != 0)
		goto fail;
	*out = j;
	return CLI_OK;
fail:
	if (j->r.note[0])            /* the note came before the refusal */
		fprintf(stderr, "simbatch: %s\n", j->r.note);
	fprintf(stderr, "simbatch: %s\n", err);
	run_job_free(j);
	return cli_exit_status();
}

/* One row in the database: the run, its configuration, its statistics. */
static int run_store(struct run_job *j, int live, struct report_run *rep, const struct run_extra *x,
                     const char *json, char *err, size_t errlen)
{
	const struct opt_set *o = &j->r.o;
	const struct drv_result *res = rep->res;
	struct results_kv cfg[OPT_MAX + 4 + RUN_EXTRA_MAX];
	char mb[32];
	size_t ncfg = 0;
	for (size_t i = 0; i < o->ndefs; i++)
		if (o->values[i] && strcmp(o->defs[i].name, "help") != 0)
			cfg[ncfg++] = (struct results_kv){ o->defs[i].name, o->values[i] };
	for (size_t i = 0; i < x->ncfg; i++)
		cfg[ncfg++] = (struct results_kv){ x->cfg_key[i], x->cfg_value[i] };
	snprintf(mb, sizeof mb, "%u", j->r.c.env.max_batch);
	cfg[ncfg++] = (struct results_kv){ "effective.max-batch", mb };
	if (j->r.engine.on)
		cfg[ncfg++] = (struct results_kv){ "effective.engine", j->r.engine.line };
	if (!j->r.trace) {
		cfg[ncfg++] = (struct results_kv){ "effective.input-len", j->r.input_spec };
		cfg[ncfg++] = (struct results_kv){ "effective.output-len", j->r.output_spec };
	}
	/* the run's statistics, then a fleet's per replica */
	size_t cap = POL_MAX_STATS + 256 + (size_t)res->nreplicas * 16;
	struct results_stat *stats = malloc(cap * sizeof *stats);
	char (*stat_names)[80] = malloc(cap * sizeof *stat_names);
	if (!stats || !stat_names) {
		free(stats);
		free(stat_names);
		return err_memory(err, errlen, "out of memory storing the run");
	}
	size_t nstats = report_stats(rep, stats, stat_names, cap);
	nstats += report_replica_stats(rep, stats + nstats, stat_names + nstats, cap - nstats);
	struct results_run run = {
		.policy = rep->policy, .model = rep->model, .hw = rep->hw, .rate_rps = rep->rate_rps,
		.seed = j->r.c.seed, .sla_ms = rep->sla_ms, .requests = res->issued, .completed = res->completed,
		.throughput_rps = res->throughput_rps, .mean_batch = res->mean_batch, .events = res->events,
		.wall_s = rep->wall_s, .live = live, .saturated = report_saturated(rep), .code_version = SIMBATCH_VERSION,
		.summary_json = json ? json : "{}", .summary = &res->summary, .nconfig = ncfg, .config = cfg,
		.nrequest_rows = opt_flag(o, "db-requests") ? res->nrows : 0, .request_rows = res->rows,
		.once_key = opt_str(o, "sweep-point") ? "sweep-point" : NULL,
		.nstats = nstats, .stats = stats, .overloaded = res->overload.flagged,
		.overload_start_s = res->overload.start_ns * 1e-9, .overload_end_s = res->overload.end_ns * 1e-9,
	};
	struct results_stat values[METRIC_COUNT];
	run.nmetric_values = report_metric_rows(rep, values);
	run.metric_values = values;
	if (res->llm) {
		run.token_cdf_ms[0] = res->ttft.cdf_ms;
		run.token_cdf_ms[1] = res->tpot.count ? res->tpot.cdf_ms : NULL;
		run.token_cdf_ms[2] = res->itl_count ? res->itl_cdf_ms : NULL;
	}
	int wrc = results_write_run(j->db, &run, &rep->run_id, err, errlen);
	free(stats);
	free(stat_names);
	if (wrc == 1 && !opt_flag(o, "quiet"))
		fprintf(stderr, "simbatch: sweep point already stored as run %lld; not stored again\n",
		        (long long)rep->run_id);
	return wrc < 0 ? -1 : 0;
}

int run_job_report(struct run_job *j, int live, const struct drv_result *res, const struct run_extra *x,
                   double wall_s)
{
	char err[512] = "";
	const struct opt_set *o = &j->r.o;
	const struct eng_config *c = &j->r.c;
	char *json = NULL;
	struct report_run rep = {
		.policy = c->policy->name, .model = j->r.model->name, .hw = j->r.hw->label,
		.rate_rps = c->concurrency ? 0 : c->rate_rps,     /* a closed loop offers no rate */
		.arrival_cv = j->r.trace && !c->trace_pairs ? NAN : c->arrival_cv, .concurrency = c->concurrency,
		.think_ms = c->think_ns * 1e-6, .seed = c->seed, .warmup = c->warmup,
		.workers = c->workers, .max_batch = c->env.max_batch, .sla_ms = opt_double(o, "sla"),
		.wall_s = wall_s, .run_id = -1, .live = live, .res = res, .model_def = j->r.model, .extra_json = x->json,
		.dropped_over_context = j->r.dropped_over_context, .engine_line = j->r.engine.on ? j->r.engine.line : NULL,
	};
	struct study_serving serving;
	study_serving_of(o, j->r.model->is_llm, c, j->r.engine.on ? j->r.engine.e.name : NULL, &serving);
	rep.serving = &serving;
	rep.hw_predicted = gpu_predicted_info(j->r.hw);
	rep.router_refresh_ms = c->router_refresh_ns * 1e-6;
	if (c->replica_hw) {               /* a heterogeneous fleet: its hardware is its groups */
		rep.hw = c->disagg ? j->r.fleet.hw_label : opt_str(o, "replicas");
		rep.replica_hw = c->replica_hw;
	}
	if (c->disagg) {
		rep.kv_link = j->r.fleet.link->label;
		rep.kv_transfer = opt_str(o, "kv-transfer");
	}
	rep.sla_given = opt_given(o, "sla");
	if (j->r.load.on) {
		rep.load = &j->r.load;
		rep.load_pairs = j->r.trace->n;
	}
	if (j->r.model->is_llm) {
		rep.iter_token_budget = c->policy->pads_prompts ? 0 : c->env.max_batched_tokens;
		rep.ttft_slo_ms = c->env.ttft_slo_ns * 1e-6;
		rep.tpot_slo_ms = c->env.tpot_slo_ns * 1e-6;
	}
	const struct gpu_measured_info *gpu = gpu_measured_info(j->r.hw);
	if (gpu && j->r.model->is_llm) {
		rep.hw_measured_tokens = opp_curve_max_tokens(gpu->curve);
		rep.hw_error_median_pct = rep.hw_error_p90_pct = -1;
		for (size_t i = 0; i < gpu->profile->nleave_out; i++)
			if (strcmp(gpu->profile->leave_out[i].op, "layer") == 0) {
				rep.hw_error_median_pct = gpu->profile->leave_out[i].median_pct;
				rep.hw_error_p90_pct = gpu->profile->leave_out[i].p90_pct;
			}
		if (gpu->moe) {   /* a mixture of experts: its GEMMs predicted, their error the predictor's */
			if (gpu_moe_error(gpu->moe, &rep.hw_error_median_pct, &rep.hw_error_p90_pct, err, sizeof err) != 0)
				goto fail;
			rep.moe = gpu_moe_stats(gpu->moe);
			rep.moe_routing = gpu_moe_routing(gpu->moe);
			rep.moe_ep = gpu_moe_ep(gpu->moe);
		}
	}
	/* the files are written, then the run stored, then the files renamed into
	 * place: a run that fails before the end changes no file of the user's */
	if (j->requests_out.f && run_write_requests(j->requests_out.f, res) != 0) {
		err_io(err, sizeof err, "error writing --requests-out '%s'", opt_str(o, "requests-out"));
		goto fail;
	}
	if (!opt_flag(o, "no-db")) {
		j->db_created = access(opt_str(o, "db"), F_OK) != 0;
		if (results_open(opt_str(o, "db"), &j->db, err, sizeof err) != 0)
			goto fail;
		json = report_json(&rep, 0);
		if (run_store(j, live, &rep, x, json, err, sizeof err) != 0)
			goto fail;
		j->stored = 1;
	}
	if (outfile_commit(&j->requests_out, err, sizeof err) != 0)
		goto fail;
	if (j->timeline) {
		struct timeline *tl = j->timeline;
		j->timeline = NULL;
		if (timeline_close(tl, 1, err, sizeof err) != 0)
			goto fail;
	}
	if (opt_flag(o, "json")) {
		char *full = report_json(&rep, 1);
		if (!full) {
			err_memory(err, sizeof err, "out of memory");
			goto fail;
		}
		printf("%s\n", full);
		free(full);
	} else if (!opt_flag(o, "quiet")) {
		report_text(stdout, &rep);
		if (x->text)
			fputs(x->text, stdout);
	}
	free(json);
	return x->exit_code;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(json);
	return cli_exit_status_late();
}

int cmd_run(int argc, char **argv)
{
	struct run_job *j;
	size_t nopts;
	const struct opt_def *opts = cmd_run_options(&nopts);
	int rc = run_job_prepare(argc, argv, opts, nopts, run_usage, &j);
	char err[512] = "";
	if (rc != CLI_OK || !j || opt_flag(&j->r.o, "dry-run")) {
		/* a dry run (sweeps check every configuration this way before running
		 * any) also asks the policy whether it takes the model */
		if (rc == CLI_OK && j && run_check_policy(&j->r.c, err, sizeof err) != 0) {
			fprintf(stderr, "simbatch: %s\n", err);
			rc = cli_exit_status();
		}
		run_job_free(j);
		return rc;
	}
	struct drv_result res = { 0 };
	struct run_extra extra = { 0 };
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* the engine's errors are the input's fault (a policy that stops, a
	 * request the model cannot run), save a failed timeline write or memory */
	if (eng_run(&j->r.c, &res, err, sizeof err) != 0) {
		fprintf(stderr, "simbatch: %s\n", err);
		run_job_free(j);
		return cli_exit_status();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	const struct study_scenario_def *scn = study_scenario_find(opt_str(&j->r.o, "scenario"));
	if (scn && scenario_report(scn, &res, j->r.model->is_llm, j->r.c.warmup, opt_double(&j->r.o, "sla"), &extra.json,
	                           &extra.text) != 0) {
		fprintf(stderr, "simbatch: out of memory for the scenario's report\n");
		drv_result_free(&res);
		run_job_free(j);
		return CLI_FAILED;
	}
	rc = run_job_report(j, 0, &res, &extra, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	run_extra_free(&extra);
	drv_result_free(&res);
	run_job_free(j);
	return rc;
}
