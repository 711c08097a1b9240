/* sim/study/capacity.c: capacity's first estimate (capacity.h). */
#include "capacity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "../../hwmodels/llm_cost.h"
#include "../../traces/workload.h"
#include "../../util/errkind.h"
#include "rules.h"
#include "run.h"
#include "run_options.h"

/* An LLM's first rate: requests a second when full batches of decodes
 * (max batch, as many as the KV cache holds at the mean lengths) keep the
 * device busy, each request also paying its prefill alone. */
static double cap_llm_estimate(const struct mdl_model *m, const struct hw_model *hw, uint32_t max_seqs, double in_len,
                               double out_len, int pool, char *err, size_t errlen)
{
	struct llm_cost *c;
	if (llm_cost_create(hw, m, 0, &c, err, errlen) != 0)
		return -1;
	uint64_t blocks = llm_cost_kv_blocks(c, 16, err, errlen);
	double fit = blocks * 16.0 / (in_len + out_len);
	uint32_t batch = fit < max_seqs ? (fit >= 1 ? (uint32_t)fit : 1) : max_seqs;
	uint32_t *tokens = calloc(batch, sizeof *tokens), *context = calloc(batch, sizeof *context);
	double est = -1;
	if (!tokens || !context) {
		err_memory(err, errlen, "out of memory");
		goto done;
	}
	for (uint32_t i = 0; i < batch; i++) {
		tokens[i] = 1;
		context[i] = (uint32_t)(in_len + out_len / 2);
	}
	int64_t decode_ns = llm_cost_iter_ns(c, batch, tokens, context, batch, 0, err, errlen);
	tokens[0] = (uint32_t)in_len;
	context[0] = 0;
	int64_t prefill_ns = llm_cost_iter_ns(c, 1, tokens, context, 1, 0, err, errlen);
	/* a disaggregated pool's replica does its phase alone (FLEET_POOL_*) */
	if (decode_ns > 0 && prefill_ns > 0)
		est = 1.0 / ((pool == FLEET_POOL_PREFILL ? 0 : (double)out_len * decode_ns * 1e-9 / batch) +
		             (pool == FLEET_POOL_DECODE ? 0 : prefill_ns * 1e-9));
done:
	free(tokens);
	free(context);
	llm_cost_destroy(c);
	return est;
}

/* An LLM's estimate: a fleet serves as its replicas together, each one's on its own hardware
 * (and a fleet's hardware named in nm). 0 with *cap (-1 when a replica has none), or -1 with err. */
static int cap_fleet_estimate(const struct opt_set *ro, const struct mdl_model *m, struct hw_model *hw,
                              uint32_t max_batch, const double mean[2], struct study_cap_names *nm, double *cap,
                              char *err, size_t errlen)
{
	/* a fleet serves as its replicas together: each one's estimate on its own hardware */
	struct eng_config fc = { .workers = (uint32_t)opt_uint(ro, "workers"), .hw = hw };
	struct run_fleet fleet = { 0 };
	if (run_fleet_setup(ro, m, &fc, &fleet, err, errlen) != 0) {
		run_fleet_free(&fleet);
		return -1;
	}
	/* a disaggregated fleet's pools each run one phase of every request: the fleet holds what the
	 * smaller pool's replicas together hold of their phase */
	double pool[2] = { 0, 0 };
	uint32_t prefill = fc.disagg ? fc.disagg->prefill : 0;
	for (uint32_t i = 0; i < fc.workers && pool[0] >= 0 && pool[1] >= 0; i++) {
		int kind = !prefill ? FLEET_POOL_ANY : i < prefill ? FLEET_POOL_PREFILL : FLEET_POOL_DECODE;
		double one = cap_llm_estimate(m, fc.replica_hw ? fc.replica_hw[i] : hw, max_batch, ceil(mean[0]),
		                              ceil(mean[1]), kind, err, errlen);
		pool[i >= prefill] = one > 0 ? pool[i >= prefill] + one : -1;
	}
	*cap = pool[0] < 0 || pool[1] < 0 ? -1 : !prefill ? pool[1] : pool[0] < pool[1] ? pool[0] : pool[1];
	if (fleet.ngroups)
		snprintf(nm->hw, sizeof nm->hw, "%s", prefill ? fleet.hw_label : opt_str(ro, "replicas"));
	study_serving_of(ro, 1, &fc, nm->serving.engine[0] ? nm->serving.engine : NULL, &nm->serving);
	run_fleet_free(&fleet);
	return 0;
}

/* The capacity estimate for the run options (policy, model, hw, workers,
 * max batch, mean lengths), and names for the report. */
double study_cap_estimate(const struct opt_set *ro, struct study_cap_names *nm, char *err, size_t errlen)
{
	struct mdl_model *m = NULL;
	struct hw_model *hw = NULL;
	struct trc_lengths *len[2] = { NULL, NULL };
	double cap = -1, mean[2] = { 0, 0 };
	const struct pol_ops *pol;
	if (mdl_load(opt_str(ro, "model"), &m, err, errlen) != 0)
		goto done;
	/* an LLM's default policy and hardware, as run's */
	const char *pol_name = m->is_llm && !opt_given(ro, "policy") ? RUN_DEFAULT_LLM_POLICY : opt_str(ro, "policy");
	struct eng_profile ep;            /* --engine's policy and sequences, as run takes them */
	int eng = m->is_llm && opt_given(ro, "engine") && eng_profile_load(opt_str(ro, "engine"), &ep, err, errlen) == 0;
	if (eng && !opt_given(ro, "policy"))
		pol_name = ep.policy;
	if (eng)
		snprintf(nm->serving.engine, sizeof nm->serving.engine, "%s", ep.name);
	if (!(pol = pol_find(pol_name))) {
		study_unknown_policy(pol_name, err, errlen);
		goto done;
	}
	char fleet_hw[256];            /* every replica names its hardware: no default is opened (run_fleet.h) */
	const char *hw_name = !m->is_llm || opt_given(ro, "hw") ? opt_str(ro, "hw")
	                      : run_fleet_named_hw(ro, fleet_hw, sizeof fleet_hw) ? fleet_hw : RUN_DEFAULT_LLM_HW;
	struct study_facts facts = { ro, m, opt_str(ro, "trace") != NULL };
	if (study_check(&facts, STUDY_SHARED, NULL, err, errlen) != 0 ||
	    hw_open_tp(hw_name, m, (uint32_t)opt_uint(ro, "tp"), &hw, err, errlen) != 0 ||
	    hw_moe_setup(hw, (uint32_t)opt_uint(ro, "ep"), opt_str(ro, "routing"), opt_uint(ro, "seed"), err, errlen) != 0)
		goto done;
	const char *opt[2] = { "input-len", "output-len" };
	const char *spec[2] = { m->input_len_spec, m->output_len_spec };
	int used[2] = { m->uses_input_len, m->uses_output_len };
	if (opt_str(ro, "trace")) {        /* --trace-pairs: the mean lengths of the rows a run keeps */
		struct trc_trace *t = NULL;
		if (trc_trace_load(opt_str(ro, "trace"), &t, err, errlen) != 0)
			goto done;
		uint64_t kept = 0, limit = m->is_llm ? m->llm.context : UINT64_MAX;
		for (size_t i = 0; i < t->n; i++)
			if ((uint64_t)t->input_len[i] + t->output_len[i] <= limit) {
				mean[0] += t->input_len[i];
				mean[1] += t->output_len[i];
				kept++;
			}
		trc_trace_free(t);
		mean[0] = kept ? mean[0] / (double)kept : 0;
		mean[1] = kept ? mean[1] / (double)kept : 0;
		used[0] = used[1] = 0;          /* nothing to draw from */
	}
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
	if (m->is_llm) {
		if (opt_given(ro, "max-seqs"))
			max_batch = (uint32_t)opt_uint(ro, "max-seqs");
		else if (eng && !opt_given(ro, "max-batch"))
			max_batch = ep.max_seqs;
		if (cap_fleet_estimate(ro, m, hw, max_batch, mean, nm, &cap, err, errlen) != 0)
			goto done;
	} else {
		cap = eng_capacity_rps(m, hw, (uint32_t)opt_uint(ro, "workers"), max_batch, (uint32_t)ceil(mean[0]),
		                       (uint32_t)ceil(mean[1]), err, errlen);
		struct eng_config nc = { .workers = (uint32_t)opt_uint(ro, "workers") };
		study_serving_of(ro, 0, &nc, NULL, &nm->serving);
	}
	nm->llm = m->is_llm;
	snprintf(nm->policy, sizeof nm->policy, "%s", pol->name);
	snprintf(nm->model, sizeof nm->model, "%s", m->name);
	if (!nm->hw[0])
		snprintf(nm->hw, sizeof nm->hw, "%s", hw->label);
	nm->max_batch = max_batch;
done:
	trc_lengths_free(len[0]);
	trc_lengths_free(len[1]);
	hw_close(hw);
	mdl_free(m);
	return cap;
}
