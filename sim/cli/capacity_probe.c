/* sim/cli/capacity_probe.c: capacity's probes (capacity_search.h): every seed's run at one
 * rate as a child `simbatch run --json --no-db`, its JSON summary read back by path. */
#include "capacity_search.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "procpool.h"
#include "../../util/errkind.h"
#include "../../util/json_read.h"

#define CAP_LLM_KEEP_UP 0.95          /* departures at least this share of arrivals in the steady window */

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
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	snprintf(seed, 48, "--seed=%llu", (unsigned long long)s->next_seed++);
	s->argv_store[k++] = seed;
	for (size_t i = 0; i < s->nfixed; i++)
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

/* An LLM probe's counts: requests meeting both targets, of those measured;
 * whether it saturated; the hardware's error band when it has one. */
static int cap_llm_counts(struct cap_search *s, const struct json_doc *d)
{
	double met, measured, e, arrival, departure;
	if (json_doc_number(d, NULL, "slo_met", -1, &met) != 0 ||
	    json_doc_number(d, NULL, "slo_measured", -1, &measured) != 0)
		return -1;
	s->sum_missed += (uint64_t)(measured - met);
	s->sum_measured += (uint64_t)measured;
	if (json_doc_number(d, "steady_window", "arrival_rps", -1, &arrival) == 0 &&
	    json_doc_number(d, "steady_window", "departure_rps", -1, &departure) == 0)
		s->any_saturated |= departure < CAP_LLM_KEEP_UP * arrival;
	else
		s->any_saturated |= json_doc_true(d, "saturated");
	if (json_doc_number(d, "hw_layer_error_pct", "p90", -1, &e) == 0)
		s->hw_error_p90 = e / 100;
	return 0;
}

static void cap_done(void *ud, void *ctx, const struct pp_result *r)
{
	struct cap_search *s = ud;
	double p99 = 0, viol = 0;
	struct json_doc *d = r->exit_code == 0 ? json_doc_parse(r->out) : NULL;   /* the run's --json summary */
	if (!d || json_doc_number(d, "latency_ms", "p99", -1, &p99) != 0 ||
	    json_doc_number(d, NULL, "sla_violation_rate", -1, &viol) != 0 || (s->llm && cap_llm_counts(s, d) != 0)) {
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
		s->any_overloaded |= json_doc_has_object(d, "overload_window");
		s->sum_p99 += p99;
		s->sum_viol += viol;
		s->nok++;
	}
	json_doc_free(d);
	free(ctx);
}

/* Simulates every seed at rate into *m (the study layer's probe, capacity_search.h). */
enum study_cap_status cap_probe(void *ctx, double rate, struct study_cap_measure *m, char *err, size_t errlen)
{
	struct cap_search *s = ctx;
	snprintf(s->rate_arg, sizeof s->rate_arg, "--rate=%.10g", rate);
	s->next_seed = s->seed0;
	s->sum_p99 = s->sum_viol = 0;
	s->nok = 0;
	s->sum_missed = s->sum_measured = 0;
	s->any_saturated = s->any_overloaded = 0;
	s->failure[0] = '\0';
	struct pp_config pc = { .exe = s->exe, .jobs = s->jobs, .next = cap_next, .done = cap_done, .ud = s };
	if (pp_run(&pc, err, errlen) != 0)
		return s->bad_input ? STUDY_CAP_BAD_INPUT : STUDY_CAP_FAILED;
	if (s->failure[0] || s->nok != s->nseeds) {
		snprintf(err, errlen, "%s", s->failure[0] ? s->failure : "a run failed");
		/* a probe's bad input (exit 2 of the run) is the user's input: report it as such */
		return s->bad_input ? STUDY_CAP_BAD_INPUT : STUDY_CAP_FAILED;
	}
	m->p99_ms = s->sum_p99 / (double)s->nseeds;
	m->violation = s->sum_viol / (double)s->nseeds;
	m->missed = s->sum_missed;
	m->measured = s->sum_measured;
	m->saturated = s->any_saturated;
	m->overloaded = s->any_overloaded;
	return STUDY_CAP_OK;
}

/* A rate's judgement on stderr, as it comes (progress). */
void cap_progress(void *ctx, const struct study_cap_point *p)
{
	const struct cap_search *s = ctx;
	if (s->quiet)
		return;
	if (s->llm)
		fprintf(stderr, "capacity: %.10g req/s: %llu of %llu requests miss a target (bound %.4g %s %.4g)%s\n",
		        p->rate_rps, (unsigned long long)p->missed, (unsigned long long)p->measured, p->bound,
		        p->bound <= s->allowed ? "<=" : ">", s->allowed,
		        p->overloaded ? ", overloaded within a window" : p->saturated ? ", saturated" : "");
	else
		fprintf(stderr, "capacity: %.10g req/s: p99 %.4g ms %s %g ms%s\n", p->rate_rps, p->p99_ms,
		        p->p99_ms <= s->sla_ms ? "<=" : ">", s->sla_ms, p->overloaded ? ", overloaded within a window" : "");
}
