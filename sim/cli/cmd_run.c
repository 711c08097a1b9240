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
#include "../../util/errkind.h"
#include "kernel_profile.h"
#include "../../hwmodels/gpu_measured.h"
#include "../../hwmodels/llm_cost.h"
#include "../engine/engine.h"
#include "../../util/options.h"
#include "report.h"
#include "../store/results.h"
#include "../engine/timeline.h"
#include "version.h"
#include "../../util/outfile.h"
#include "../../util/text.h"
#include "../study/fleet.h"
#include "run_options.h"
#include "run_engine.h"
#include "../study/rules.h"

static const char run_usage[] =
	"usage: simbatch [run] [--policy=P] [--rate=R] [--requests=N | --duration=S] [--model=M] [--hw=H] ...\n"
	"Simulates one run and prints a summary (--json: one JSON object).";

struct run_job {             /* a prepared run; released by run_job_free */
	struct opt_set o;
	struct opt_set pol_params;   /* the policy's own knobs, from o (c.env.params points here) */
	struct eng_config c;
	struct mdl_model *model;
	struct hw_model *hw;
	struct run_fleet fleet;      /* a heterogeneous fleet's groups (run_fleet.h) */
	struct trc_lengths *input_len, *output_len;
	struct trc_trace *trace;
	struct results_db *db;
	int db_created;              /* this run created the database file: removed if the run fails */
	int stored;                  /* the run reached the database */
	struct outfile requests_out;
	struct timeline *timeline;
	char input_spec[MDL_SPEC_MAX + 8], output_spec[MDL_SPEC_MAX + 8];
	uint64_t dropped_over_context;      /* LLM: trace rows left out (--over-context=drop) */
	char fleet_hw[256];          /* every replica names its hardware: the first group's, the run's --hw */
	struct run_engine engine;           /* --engine (run_engine.h) */
};

void run_job_free(struct run_job *j)
{
	if (!j)
		return;
	timeline_close(j->timeline, 0, NULL, 0);
	outfile_abort(&j->requests_out);
	results_close(j->db);
	if (j->db_created && !j->stored)
		results_remove(opt_str(&j->o, "db"));
	trc_trace_free(j->trace);
	trc_lengths_free(j->input_len);
	trc_lengths_free(j->output_len);
	hw_close(j->hw);
	run_fleet_free(&j->fleet);
	mdl_free(j->model);
	free(j);
}

const struct opt_set *run_job_options(const struct run_job *j)
{
	return &j->o;
}

const struct eng_config *run_job_config(const struct run_job *j)
{
	return &j->c;
}

static int run_lengths(const struct opt_set *o, const char *opt, const char *model_spec, int used,
                       char *spec_out, size_t spec_len, struct trc_lengths **out, char *err, size_t errlen)
{
	const char *spec = opt_str(o, opt);
	if (!spec)
		spec = used ? model_spec : "fixed:0";
	if (!spec || !*spec) {
		snprintf(err, errlen, "--%s is needed: the model has no default length distribution", opt);
		return -1;
	}
	snprintf(spec_out, spec_len, "%s", spec);
	if (trc_lengths_parse(spec, out, err, errlen) != 0)
		return -1;
	if (used && trc_lengths_max(*out) == 0) {
		snprintf(err, errlen, "--%s=%s: the model needs lengths of at least 1", opt, spec);
		return -1;
	}
	return 0;
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

/* The policy's knobs from the command line. A knob is an option of every
 * run (cmd_run_options), but one given to a policy that does not declare it
 * is refused: a run does what its options say. */
static int run_policy_params(struct run_job *j, const struct pol_ops *pol, char *err, size_t errlen)
{
	size_t n;
	const struct opt_def *knobs = pol_param_union(&n);
	opt_defaults(&j->pol_params, pol->params, pol->nparams);
	for (size_t i = 0; i < n; i++) {
		const char *name = knobs[i].name;
		if (!opt_given(&j->o, name))
			continue;
		if (!pol_takes_param(pol, name)) {
			size_t used = (size_t)snprintf(err, errlen, "--%s does not apply to policy %s (", name, pol->name);
			for (size_t k = 0; k < pol->nparams && used < errlen; k++)
				used += (size_t)snprintf(err + used, errlen - used, "%s--%s", k ? ", " : "its knobs: ",
				                         pol->params[k].name);
			if (used < errlen)
				snprintf(err + used, errlen - used, "%s; simbatch --policy=%s --help)",
				         pol->nparams ? "" : "it has no knobs of its own", pol->name);
			return -1;
		}
		if (opt_put(&j->pol_params, name, opt_str(&j->o, name), err, errlen) != 0)
			return -1;
	}
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

/* The model, the hardware, and the requests' lengths or trace. */
static int run_load_inputs(struct run_job *j, const struct pol_ops *pol, char *err, size_t errlen)
{
	const struct opt_set *o = &j->o;
	if (strcmp(opt_str(o, "hw"), "profile") == 0) {
		uint32_t max_batch = opt_given(o, "max-batch") ? (uint32_t)opt_uint(o, "max-batch") : pol->default_max_batch;
		if (live_profile_hw(o, j->model, max_batch, &j->hw, err, errlen) != 0)
			return -1;
	} else if (hw_open_tp(opt_str(o, "hw"), j->model, (uint32_t)opt_uint(o, "tp"), &j->hw, err, errlen) != 0) {
		return -1;
	}
	/* a mixture of experts' routing and --ep (a dense model, or hardware that prices no experts, refuses them) */
	if (hw_moe_setup(j->hw, (uint32_t)opt_uint(o, "ep"), opt_str(o, "routing"), opt_uint(o, "seed"), err, errlen) != 0)
		return -1;
	const char *trace_path = opt_str(o, "trace");
	if (trace_path)
		return trc_trace_load(trace_path, &j->trace, err, errlen);
	return run_lengths(o, "input-len", j->model->input_len_spec, j->model->uses_input_len, j->input_spec,
	                   sizeof j->input_spec, &j->input_len, err, errlen) != 0 ||
	       run_lengths(o, "output-len", j->model->output_len_spec, j->model->uses_output_len, j->output_spec,
	                   sizeof j->output_spec, &j->output_len, err, errlen) != 0 ? -1 : 0;
}

/* An LLM request needs a prompt and an output token, and both within the
 * model's context: each trace row is checked (named by file and row), or
 * the length distributions' largest values. */
static int run_check_llm_lengths(struct run_job *j, char *err, size_t errlen)
{
	const struct mdl_model *m = j->model;
	uint32_t ctx = m->llm.context;
	int drop = opt_either(&j->o, "over-context", "refuse", "drop", err, errlen);
	if (drop < 0)
		return -1;
	if (j->trace) {
		struct trc_trace *t = j->trace;
		size_t kept = 0;
		for (size_t i = 0; i < t->n; i++) {
			uint64_t in = t->input_len[i], out = t->output_len[i];
			if (in == 0 || out == 0 || (in + out > ctx && !drop)) {
				snprintf(err, errlen, "%s: request %zu (data row %zu) has %llu prompt and %llu output tokens; %s needs "
				         "at least 1 of each and at most %u together (its context; --over-context=drop leaves such "
				         "rows out)", opt_str(&j->o, "trace"), i, i + 1, (unsigned long long)in,
				         (unsigned long long)out, m->name, ctx);
				return -1;
			}
			if (in + out > ctx)
				continue;           /* dropped: the rows kept are renumbered in order */
			t->arrival_s[kept] = t->arrival_s[i];
			t->input_len[kept] = t->input_len[i];
			t->output_len[kept] = t->output_len[i];
			if (t->prefix_id) {
				t->prefix_id[kept] = t->prefix_id[i];
				t->prefix_len[kept] = t->prefix_len[i];
			}
			if (t->session_id)
				t->session_id[kept] = t->session_id[i];
			if (t->inner_id) {
				t->inner_id[kept] = t->inner_id[i];
				t->inner_len[kept] = t->inner_len[i];
			}
			if (t->hash_ids) {
				t->hash_start[kept] = t->hash_start[i];
				t->hash_count[kept] = t->hash_count[i];
			}
			kept++;
		}
		j->dropped_over_context = t->n - kept;
		t->n = kept;
		if (kept == 0) {
			snprintf(err, errlen, "%s: every request is beyond %s's context of %u tokens", opt_str(&j->o, "trace"),
			         m->name, ctx);
			return -1;
		}
		return 0;
	}
	uint64_t in = trc_lengths_max(j->input_len), out = trc_lengths_max(j->output_len);
	if (in + out > ctx) {
		snprintf(err, errlen, "prompts up to %llu and outputs up to %llu tokens (--input-len=%s, --output-len=%s) "
		         "exceed %s's context of %u tokens", (unsigned long long)in, (unsigned long long)out, j->input_spec,
		         j->output_spec, m->name, ctx);
		return -1;
	}
	return 0;
}

/* The engine's configuration from the options and the loaded inputs. */
static int run_build_config(struct run_job *j, const struct pol_ops *pol, char *err, size_t errlen)
{
	const struct opt_set *o = &j->o;
	struct eng_config *c = &j->c;
	c->policy = pol;
	c->model = j->model;
	c->hw = j->hw;
	c->workers = (uint32_t)opt_uint(o, "workers");
	if (run_fleet_setup(o, j->model, c, &j->fleet, err, errlen) != 0)
		return -1;
	c->rate_rps = opt_double(o, "rate");
	c->arrival_cv = opt_double(o, "arrival-cv");
	c->requests = opt_given(o, "requests") ? opt_uint(o, "requests") : opt_given(o, "duration") ? 0 : 20000;
	c->duration_s = opt_double(o, "duration");
	c->warmup = opt_uint(o, "warmup");
	c->seed = opt_uint(o, "seed");
	c->input_len = j->input_len;
	c->output_len = j->output_len;
	c->trace = j->trace;
	c->sla_ns = llround(opt_double(o, "sla") * 1e6);
	c->env.max_batch = opt_given(o, "max-batch") ? (uint32_t)opt_uint(o, "max-batch") : pol->default_max_batch;
	c->env.params = &j->pol_params;
	c->env.sla_ns = c->sla_ns;
	if (j->model->is_llm) {
		const struct mdl_llm *l = &j->model->llm;
		if (opt_given(o, "max-seqs"))
			c->env.max_batch = (uint32_t)opt_uint(o, "max-seqs");
		c->env.block_size = (uint32_t)opt_uint(o, "block-size");
		c->env.kv_blocks_given = opt_given(o, "kv-blocks") ? opt_uint(o, "kv-blocks") : 0;
		c->env.max_batched_tokens = opt_given(o, "max-batched-tokens") ? (uint32_t)opt_uint(o, "max-batched-tokens")
		                            : pol->default_batched_tokens ? pol->default_batched_tokens
		                            : l->context > 2048 ? l->context : 2048;
		c->env.ttft_slo_ns = opt_given(o, "ttft-slo") ? llround(opt_double(o, "ttft-slo") * 1e6) : 0;
		int off = opt_either(o, "prefix-cache", "on", "off", err, errlen);
		if (off < 0)
			return -1;
		c->env.prefix_cache = !off;
		c->env.async_scheduling = opt_flag(o, "async-scheduling");
		c->env.tpot_slo_ns = opt_given(o, "tpot-slo") ? llround(opt_double(o, "tpot-slo") * 1e6) : 0;
		if (c->replica_hw && j->engine.on) {
			snprintf(err, errlen, "--engine prices one GPU's iterations; a heterogeneous fleet (--replicas=N:HW,...) "
			         "is not modelled with it");
			return -1;
		}
		if (run_engine_apply(&j->engine, o, pol->name, &c->env, j->hw, err, errlen) != 0 ||
		    run_check_llm_lengths(j, err, errlen) != 0)
			return -1;
	}
	c->keep_request_rows = opt_given(o, "requests-out") || opt_flag(o, "db-requests");
	c->summary_only = opt_flag(o, "no-db");         /* the CDFs are only stored */
	c->trace_pairs = j->trace && opt_flag(o, "trace-pairs");
	c->concurrency = opt_given(o, "concurrency") ? (uint32_t)opt_uint(o, "concurrency") : 0;
	c->node_by_node = opt_flag(o, "node-by-node");
	if ((c->histogram_quantiles = opt_either(o, "quantiles", "exact", "histogram", err, errlen)) < 0)
		return -1;
	c->think_ns = llround(opt_double(o, "think-time") * 1e6);
	c->trace_speedup = opt_double(o, "trace-speedup");
	if (j->trace && !c->trace_pairs) {
		uint64_t n = c->requests && c->requests < j->trace->n ? c->requests : j->trace->n;
		if (n < j->trace->n && !opt_given(o, "requests") && !opt_flag(o, "quiet"))
			fprintf(stderr, "simbatch: note: replaying the first %llu of the trace's %zu rows (--requests=%zu "
			        "replays them all)\n", (unsigned long long)n, j->trace->n, j->trace->n);
		double last = j->trace->arrival_s[n - 1] / c->trace_speedup;
		c->rate_rps = last > 0 ? n / last : 0;
		c->requests = n;
	}
	return 0;
}

/* What no run of this configuration could survive: batch limits, a span
 * beyond the clock, nothing measured, a rate an open-ended run never drains. */
static int run_check_config(const struct run_job *j, char *err, size_t errlen)
{
	const struct eng_config *c = &j->c;
	uint32_t hw_limit = hw_max_batch(j->hw);
	if (hw_limit && c->env.max_batch > hw_limit) {
		snprintf(err, errlen, "hardware %s has latencies up to batch %u, but the max batch is %u: lower --max-batch",
		         j->hw->label, hw_limit, c->env.max_batch);
		return -1;
	}
	/* Simulated time is int64 nanoseconds (292 years); keep arrivals far below
	 * that so completions after them cannot overflow. */
	/* a closed loop's requests come one think time apart at most per client, beside their service */
	double span_s = c->concurrency ? (double)c->requests / c->concurrency * (c->think_ns * 1e-9)
	                : j->trace && !c->trace_pairs ? j->trace->arrival_s[c->requests - 1] / c->trace_speedup
	                : c->requests ? c->requests / c->rate_rps : c->duration_s;
	if (span_s > TRC_MAX_SPAN_S) {
		snprintf(err, errlen, "the arrivals would span about %.3g s of simulated time (limit %.0e s); "
		         "raise --rate or lower --requests / --duration", span_s, TRC_MAX_SPAN_S);
		return -1;
	}
	if (c->warmup >= (c->requests ? c->requests : UINT64_MAX)) {
		snprintf(err, errlen, "--warmup=%llu leaves no request to measure", (unsigned long long)c->warmup);
		return -1;
	}
	if (c->requests || j->model->is_llm)     /* an LLM's capacity depends on its traffic: no estimate */
		return 0;
	/* An open-ended run at a rate the devices cannot serve never drains. */
	double in_sum = 0, out_sum = 0;     /* --trace-pairs: the trace's mean lengths */
	for (size_t i = 0; j->trace && i < j->trace->n; i++) {
		in_sum += j->trace->input_len[i];
		out_sum += j->trace->output_len[i];
	}
	double in_avg = j->trace ? in_sum / j->trace->n : trc_lengths_mean(j->input_len);
	double out_avg = j->trace ? out_sum / j->trace->n : trc_lengths_mean(j->output_len);
	uint32_t in_mean = j->model->uses_input_len ? (uint32_t)ceil(in_avg) : 0;
	uint32_t out_mean = j->model->uses_output_len ? (uint32_t)ceil(out_avg) : 0;
	double cap = eng_capacity_rps(j->model, j->hw, c->workers, c->env.max_batch, in_mean, out_mean, err, errlen);
	if (cap < 0)
		return -1;
	if (c->rate_rps >= cap) {
		snprintf(err, errlen,
		         "--rate=%g saturates %u worker(s) of %s for %s (capacity about %.0f req/s at max batch %u); "
		         "lower the rate or give --requests=N to simulate an overload",
		         c->rate_rps, c->workers, j->hw->label, j->model->name, cap, c->env.max_batch);
		return -1;
	}
	return 0;
}

/* --requests-out, --timeline-out and the database, opened before the run. */
static int run_open_outputs(struct run_job *j, char *err, size_t errlen)
{
	const struct opt_set *o = &j->o;
	const char *req_out = opt_str(o, "requests-out");
	if (req_out && outfile_open(&j->requests_out, req_out, err, errlen) != 0)
		return -1;
	const char *tl_path = opt_str(o, "timeline-out");
	if (tl_path && timeline_open(tl_path, j->model, j->c.workers, &j->timeline, err, errlen) != 0)
		return -1;
	j->c.timeline = j->timeline;
	/* the database is only checked now and opened to store the run (run_job_report): opening may
	 * create it, upgrade its schema or set its journal mode, which a run that fails must not do */
	if (!opt_flag(o, "no-db") && results_check(opt_str(o, "db"), err, errlen) != 0)
		return -1;
	return 0;
}

int run_policy_env(const struct eng_config *c, struct pol_env *env, struct run_estimates *est, char *err,
                   size_t errlen)
{
	*env = c->env;
	*est = (struct run_estimates){ 0 };
	est->lat = eng_latency_create(c->model, c->hw, c->env.max_batch, eng_max_input_len(c), eng_max_output_len(c),
	                              err, errlen);
	if (!est->lat)
		return -1;
	env->model = c->model;
	env->workers = c->workers;
	env->lat = eng_latency_estimates(est->lat);
	if (c->model->is_llm && eng_llm_env(c, env, &est->llm, err, errlen) != 0) {
		run_estimates_free(est);
		return -1;
	}
	return 0;
}

void run_estimates_free(struct run_estimates *est)
{
	eng_latency_destroy(est->lat);
	llm_cost_destroy(est->llm);
	*est = (struct run_estimates){ 0 };
}

int run_check_policy(const struct eng_config *c, char *err, size_t errlen)
{
	struct pol_env env;
	struct run_estimates est;
	if (run_policy_env(c, &env, &est, err, errlen) != 0)
		return -1;
	struct pol_driver trial;
	struct drv_config dc = { .policy = c->policy, .env = env, .max_cells = env.max_batch, .expected_requests = 1 };
	int rc = drv_init(&trial, &dc, err, errlen);
	drv_fini(&trial);
	run_estimates_free(&est);
	return rc;
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
	if (opt_parse(&j->o, opts, nopts, argc, argv, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&j->o, "help") && opt_given(&j->o, "policy")) {
		const struct pol_ops *pol = pol_find(opt_str(&j->o, "policy"));
		if (!pol) {
			cli_unknown_policy(opt_str(&j->o, "policy"), err, sizeof err);
			goto fail;
		}
		run_policy_help(stdout, pol);
		run_job_free(j);
		return CLI_OK;
	}
	if (opt_flag(&j->o, "help") && opt_given(&j->o, "router")) {
		if (run_fleet_router_help(stdout, opt_str(&j->o, "router"), err, sizeof err) != 0)
			goto fail;
		run_job_free(j);
		return CLI_OK;
	}
	if (opt_flag(&j->o, "help")) {
		opt_print_help(stdout, usage, opts, nopts);
		run_job_free(j);
		return CLI_OK;
	}
	/* the model first: an LLM's default policy is not the DESIGN default */
	if (mdl_load(opt_str(&j->o, "model"), &j->model, err, sizeof err) != 0)
		goto fail;
	if (j->model->is_llm) {
		opt_set_default(&j->o, "policy", RUN_DEFAULT_LLM_POLICY);
		if (run_fleet_named_hw(&j->o, j->fleet_hw, sizeof j->fleet_hw))    /* no default hardware runs */
			opt_set_default(&j->o, "hw", j->fleet_hw);
		else if (strcmp(opt_str(&j->o, "hw"), "npu") == 0)    /* run's default; live's (profile) stays */
			opt_set_default(&j->o, "hw", RUN_DEFAULT_LLM_HW);
	}
	/* every cross-option rule, in one pass (sim/study/rules.c) */
	struct study_facts facts = { &j->o, j->model, opt_str(&j->o, "trace") != NULL };
	if (study_check(&facts, STUDY_RUN, NULL, err, sizeof err) != 0 ||
	    run_engine_load(&j->o, &j->engine, err, sizeof err) != 0)
		goto fail;
	const struct pol_ops *pol = pol_find(opt_str(&j->o, "policy"));
	if (!pol) {
		cli_unknown_policy(opt_str(&j->o, "policy"), err, sizeof err);
		goto fail;
	}
	/* an LLM's refusals (weights or a request the KV cache cannot hold, a budget below a prompt) come from
	 * its policy's set-up: asked before any output or the database is opened, which they must leave alone */
	if (run_policy_params(j, pol, err, sizeof err) != 0 || run_load_inputs(j, pol, err, sizeof err) != 0 || run_build_config(j, pol, err, sizeof err) != 0 ||
	    run_check_config(j, err, sizeof err) != 0 ||
	    (j->model->is_llm && run_check_policy(&j->c, err, sizeof err) != 0) ||
	    run_open_outputs(j, err, sizeof err) != 0)
		goto fail;
	*out = j;
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	run_job_free(j);
	return cli_exit_status();
}

/* One row in the database: the run, its configuration, its statistics. */
static int run_store(struct run_job *j, int live, struct report_run *rep, const struct run_extra *x,
                     const char *json, char *err, size_t errlen)
{
	const struct opt_set *o = &j->o;
	const struct drv_result *res = rep->res;
	struct results_kv cfg[OPT_MAX + 4 + RUN_EXTRA_MAX];
	char mb[32];
	size_t ncfg = 0;
	for (size_t i = 0; i < o->ndefs; i++)
		if (o->values[i] && strcmp(o->defs[i].name, "help") != 0)
			cfg[ncfg++] = (struct results_kv){ o->defs[i].name, o->values[i] };
	for (size_t i = 0; i < x->ncfg; i++)
		cfg[ncfg++] = (struct results_kv){ x->cfg_key[i], x->cfg_value[i] };
	snprintf(mb, sizeof mb, "%u", j->c.env.max_batch);
	cfg[ncfg++] = (struct results_kv){ "effective.max-batch", mb };
	if (j->engine.on)
		cfg[ncfg++] = (struct results_kv){ "effective.engine", j->engine.line };
	if (!j->trace) {
		cfg[ncfg++] = (struct results_kv){ "effective.input-len", j->input_spec };
		cfg[ncfg++] = (struct results_kv){ "effective.output-len", j->output_spec };
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
		.seed = j->c.seed, .sla_ms = rep->sla_ms, .requests = res->issued, .completed = res->completed,
		.throughput_rps = res->throughput_rps, .mean_batch = res->mean_batch, .events = res->events,
		.wall_s = rep->wall_s, .live = live, .saturated = report_saturated(rep), .code_version = SIMBATCH_VERSION,
		.summary_json = json ? json : "{}", .summary = &res->summary, .nconfig = ncfg, .config = cfg,
		.nrequest_rows = opt_flag(o, "db-requests") ? res->nrows : 0, .request_rows = res->rows,
		.once_key = opt_str(o, "sweep-point") ? "sweep-point" : NULL,
		.nstats = nstats, .stats = stats, .overloaded = res->overload.flagged,
		.overload_start_s = res->overload.start_ns * 1e-9, .overload_end_s = res->overload.end_ns * 1e-9,
	};
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
	const struct opt_set *o = &j->o;
	const struct eng_config *c = &j->c;
	char *json = NULL;
	struct report_run rep = {
		.policy = c->policy->name, .model = j->model->name, .hw = j->hw->label,
		.rate_rps = c->concurrency ? 0 : c->rate_rps,     /* a closed loop offers no rate */
		.arrival_cv = j->trace && !c->trace_pairs ? NAN : c->arrival_cv, .concurrency = c->concurrency,
		.think_ms = c->think_ns * 1e-6, .seed = c->seed, .warmup = c->warmup,
		.workers = c->workers, .max_batch = c->env.max_batch, .sla_ms = opt_double(o, "sla"),
		.wall_s = wall_s, .run_id = -1, .live = live, .res = res, .model_def = j->model, .extra_json = x->json,
		.dropped_over_context = j->dropped_over_context, .engine_line = j->engine.on ? j->engine.line : NULL,
	};
	rep.hw_predicted = gpu_predicted_info(j->hw);
	rep.router_refresh_ms = c->router_refresh_ns * 1e-6;
	if (c->replica_hw) {               /* a heterogeneous fleet: its hardware is its groups */
		rep.hw = c->disagg ? j->fleet.hw_label : opt_str(o, "replicas");
		rep.replica_hw = c->replica_hw;
	}
	if (c->disagg) {
		rep.kv_link = j->fleet.link->label;
		rep.kv_transfer = opt_str(o, "kv-transfer");
	}
	rep.sla_given = opt_given(o, "sla");
	if (j->model->is_llm) {
		rep.iter_token_budget = c->policy->pads_prompts ? 0 : c->env.max_batched_tokens;
		rep.ttft_slo_ms = c->env.ttft_slo_ns * 1e-6;
		rep.tpot_slo_ms = c->env.tpot_slo_ns * 1e-6;
	}
	const struct gpu_measured_info *gpu = gpu_measured_info(j->hw);
	if (gpu && j->model->is_llm) {
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
	if (rc != CLI_OK || !j || opt_flag(&j->o, "dry-run")) {
		/* a dry run (sweeps check every configuration this way before running
		 * any) also asks the policy whether it takes the model */
		if (rc == CLI_OK && j && run_check_policy(&j->c, err, sizeof err) != 0) {
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
	if (eng_run(&j->c, &res, err, sizeof err) != 0) {
		fprintf(stderr, "simbatch: %s\n", err);
		run_job_free(j);
		return cli_exit_status();
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	rc = run_job_report(j, 0, &res, &extra, (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) * 1e-9);
	drv_result_free(&res);
	run_job_free(j);
	return rc;
}
