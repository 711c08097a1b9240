/* sim/study/run.c: one run's configuration, loaded, checked and set up for
 * the engine in one pass (run.h).
 *
 * Order matters: everything that can be wrong with the input (options,
 * model, hardware, lengths, trace) is checked before the simulation starts,
 * so a bad run fails in milliseconds. */
#include "run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../hwmodels/llm_cost.h"
#include "../../traces/workload.h"
#include "kernel_profile.h"
#include "rules.h"
#include "scenario.h"
#include "run_options.h"

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

/* The policy's knobs from the command line. A knob is an option of every
 * run (cmd_run_options), but one given to a policy that does not declare it
 * is refused: a run does what its options say. */
static int run_policy_params(struct study_run *j, const struct pol_ops *pol, char *err, size_t errlen)
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

/* The model, the hardware, and the requests' lengths or trace. */
static int run_load_inputs(struct study_run *j, const struct pol_ops *pol, char *err, size_t errlen)
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
	if (trace_path) {
		if (trc_trace_load(trace_path, &j->trace, err, errlen) != 0)
			return -1;
		if (j->trace->lengths_only && !opt_flag(o, "trace-pairs")) {   /* nothing to replay */
			snprintf(err, errlen, "%s holds (prompt, output) pairs and no arrival times: add --trace-pairs (and "
			         "--rate) to draw each request's lengths from it", trace_path);
			return -1;
		}
		return 0;
	}
	return run_lengths(o, "input-len", j->model->input_len_spec, j->model->uses_input_len, j->input_spec,
	                   sizeof j->input_spec, &j->input_len, err, errlen) != 0 ||
	       run_lengths(o, "output-len", j->model->output_len_spec, j->model->uses_output_len, j->output_spec,
	                   sizeof j->output_spec, &j->output_len, err, errlen) != 0 ? -1 : 0;
}

/* An LLM request needs a prompt and an output token, and both within the
 * model's context: each trace row is checked (named by file and row), or
 * the length distributions' largest values. */
static int run_check_llm_lengths(struct study_run *j, char *err, size_t errlen)
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

/* --scenario (scenario.h; rules.c refused what contradicts it): its clients in place of the open-loop
 * stream, and an LLM server's constraints as its SLOs. */
static void run_apply_scenario(struct study_run *j)
{
	const struct study_scenario_def *d = study_scenario_find(opt_str(&j->o, "scenario"));
	struct eng_config *c = &j->c;
	if (!d)
		return;
	uint32_t clients = study_scenario_clients(d->id, c->requests, &c->lockstep);
	if (clients)
		c->concurrency = clients;
	if (c->lockstep || d->id == SCN_OFFLINE)   /* a query's latency, or tokens a second: read from the rows */
		c->keep_request_rows = 1;
	if (j->model->is_llm && d->ttft_ms > 0) {
		c->env.ttft_slo_ns = llround(d->ttft_ms * 1e6);
		c->env.tpot_slo_ns = llround(d->tpot_ms * 1e6);
	}
}

/* The engine's configuration from the options and the loaded inputs. */
static int run_build_config(struct study_run *j, const struct pol_ops *pol, char *err, size_t errlen)
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
	run_apply_scenario(j);
	c->trace_speedup = opt_double(o, "trace-speedup");
	if (j->trace && !c->trace_pairs) {
		uint64_t n = c->requests && c->requests < j->trace->n ? c->requests : j->trace->n;
		if (n < j->trace->n && !opt_given(o, "requests") && !opt_flag(o, "quiet"))
			snprintf(j->note, sizeof j->note, "note: replaying the first %llu of the trace's %zu rows (--requests=%zu "
			         "replays them all)", (unsigned long long)n, j->trace->n, j->trace->n);
		double last = j->trace->arrival_s[n - 1] / c->trace_speedup;
		c->rate_rps = last > 0 ? n / last : 0;
		c->requests = n;
	}
	return 0;
}

/* What no run of this configuration could survive: batch limits, a span
 * beyond the clock, nothing measured, a rate an open-ended run never drains. */
static int run_check_config(const struct study_run *j, char *err, size_t errlen)
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

int study_run_configure(struct study_run *j, char *err, size_t errlen)
{
	/* the model first: an LLM's default policy is not the DESIGN default */
	if (mdl_load(opt_str(&j->o, "model"), &j->model, err, errlen) != 0)
		return -1;
	if (j->model->is_llm) {
		opt_set_default(&j->o, "policy", RUN_DEFAULT_LLM_POLICY);
		if (run_fleet_named_hw(&j->o, j->fleet_hw, sizeof j->fleet_hw))    /* no default hardware runs */
			opt_set_default(&j->o, "hw", j->fleet_hw);
		else if (strcmp(opt_str(&j->o, "hw"), "npu") == 0)    /* run's default; live's (profile) stays */
			opt_set_default(&j->o, "hw", RUN_DEFAULT_LLM_HW);
	}
	/* every cross-option rule, in one pass (rules.c) */
	struct study_facts facts = { &j->o, j->model, opt_str(&j->o, "trace") != NULL };
	if (study_check(&facts, STUDY_RUN, NULL, err, errlen) != 0 ||
	    run_engine_load(&j->o, &j->engine, err, errlen) != 0)
		return -1;
	/* an LLM given no load serves a mix at a rate it holds (default_load.h): the options become that run's */
	if (study_load_applies(&j->o, j->model) && study_load_setup(&j->o, &j->load, err, errlen) != 0)
		return -1;
	const struct pol_ops *pol = pol_find(opt_str(&j->o, "policy"));
	if (!pol) {
		study_unknown_policy(opt_str(&j->o, "policy"), err, errlen);
		return -1;
	}
	/* an LLM's refusals (weights or a request the KV cache cannot hold, a budget below a prompt) come from
	 * its policy's set-up: asked before any output or the database is opened, which they must leave alone */
	if (run_policy_params(j, pol, err, errlen) != 0 || run_load_inputs(j, pol, err, errlen) != 0 ||
	    run_build_config(j, pol, err, errlen) != 0 || run_check_config(j, err, errlen) != 0 ||
	    (j->model->is_llm && run_check_policy(&j->c, err, errlen) != 0))
		return -1;
	return 0;
}

void study_run_free(struct study_run *j)
{
	trc_trace_free(j->trace);
	trc_lengths_free(j->input_len);
	trc_lengths_free(j->output_len);
	hw_close(j->hw);
	run_fleet_free(&j->fleet);
	mdl_free(j->model);
	j->trace = NULL;
	j->input_len = j->output_len = NULL;
	j->hw = NULL;
	j->model = NULL;
}
