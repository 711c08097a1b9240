/* sim/study/default_load.c: an LLM run's default load (default_load.h). */
#include "default_load.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "capacity.h"
#include "scenario.h"

#ifndef SB_TRACES_TABLES_DIR
#define SB_TRACES_TABLES_DIR "traces/tables"
#endif

const char *study_load_table(void)
{
	return SB_TRACES_TABLES_DIR "/azure-llm-2023-conv-pairs.csv";
}


void study_load_round(double x, char *out, size_t len)
{
	/* two significant digits, down: d digits after the point (none for 10 and above) */
	int d = 1 - (int)floor(log10(x));
	double scale = pow(10, d > 0 ? d : 0), step = pow(10, d < 0 ? -d : 0);
	double kept = d > 0 ? floor(x * scale) / scale : floor(x / step) * step;
	snprintf(out, len, "%.*f", d > 0 ? d : 0, kept);
}

int study_load_lengths_apply(const struct opt_set *o)
{
	return !opt_given(o, "trace") && !opt_given(o, "input-len") && !opt_given(o, "output-len");
}

int study_load_applies(const struct opt_set *o, const struct mdl_model *m)
{
	return m->is_llm && strcmp(opt_str(o, "hw"), "profile") != 0 && study_load_lengths_apply(o) &&
	       !opt_given(o, "rate") && !opt_given(o, "concurrency");
}

int study_load_lengths_put(struct opt_set *o, char *err, size_t errlen)
{
	return opt_put(o, "trace", study_load_table(), err, errlen) != 0 || opt_put(o, "trace-pairs", "1", err, errlen) != 0 ||
	       opt_put(o, "over-context", "drop", err, errlen) != 0 ? -1 : 0;
}

int study_load_setup(struct opt_set *o, struct study_load *l, char *err, size_t errlen)
{
	memset(l, 0, sizeof *l);
	if (study_load_lengths_put(o, err, errlen) != 0)
		return -1;
	/* a scenario of closed-loop clients (offline: every request at 0 s) sets the arrivals: the mix alone */
	const char *scenario = opt_str(o, "scenario");
	const struct study_scenario_def *d = scenario ? study_scenario_find(scenario) : NULL;
	int lockstep;
	if (d && study_scenario_clients(d->id, 1, &lockstep) > 0) {
		l->on = 1;
		return 0;
	}
	struct study_cap_names nm = { .llm = 0 };
	l->estimate_rps = study_cap_estimate(o, &nm, err, errlen);
	if (l->estimate_rps < 0)
		return -1;
	if (!(l->estimate_rps > 0) || !isfinite(l->estimate_rps)) {
		snprintf(err, errlen, "cannot estimate what %s on %s holds, to set an LLM's default rate: give --rate",
		         nm.model, nm.hw);
		return -1;
	}
	study_load_round(STUDY_LOAD_RATE_SHARE * l->estimate_rps, l->rate, sizeof l->rate);
	if (opt_put(o, "rate", l->rate, err, errlen) != 0)
		return -1;
	l->on = 1;
	return 0;
}
