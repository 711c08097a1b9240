/* sim/study/scenario.c: MLPerf's scenarios (scenario.h). */
#include "scenario.h"

#include <stdio.h>
#include <string.h>

/* inference_rules.adoc section 3's table; the LLM constraints are its section 4.1 row of Llama2-70b,
 * the benchmark whose server constraint capacity's --preset=mlperf-llama2-70b already holds */
static const struct study_scenario_def scenarios[] = {
	{ "offline", SCN_OFFLINE, 1, 1, 0, 0, 0, "measured throughput, every sample sent at 0 s" },
	{ "server", SCN_SERVER, 1, 1, 99, 2000, 200, "Poisson throughput whose p99 meets the latency constraint" },
	{ "interactive", SCN_INTERACTIVE, 1, 0, 99, 450, 40, "Poisson throughput whose p99 meets the interactive "
	  "constraint" },
	{ "single-stream", SCN_SINGLE_STREAM, 0, 1, 90, 0, 0, "90th-percentile latency, one query at a time" },
	{ "multi-stream", SCN_MULTI_STREAM, 0, 1, 99, 0, 0, "99th-percentile latency of queries of 8 samples" },
};
#define NSCENARIOS (sizeof scenarios / sizeof scenarios[0])

const struct study_scenario_def *study_scenario_find(const char *name)
{
	for (size_t i = 0; name && i < NSCENARIOS; i++)
		if (strcmp(scenarios[i].name, name) == 0)
			return &scenarios[i];
	return NULL;
}

const struct study_scenario_def *study_scenario_of(enum study_scenario id)
{
	for (size_t i = 0; i < NSCENARIOS; i++)
		if (scenarios[i].id == id)
			return &scenarios[i];
	return NULL;
}

void study_scenario_names(char *list, size_t len)
{
	size_t at = 0;
	for (size_t i = 0; i < NSCENARIOS && at < len; i++) {
		int n = snprintf(list + at, len - at, "%s%s", i ? ", " : "", scenarios[i].name);
		if (n < 0)
			return;
		at += (size_t)n;
	}
}

uint32_t study_scenario_clients(enum study_scenario id, uint64_t requests, int *lockstep)
{
	*lockstep = id == SCN_MULTI_STREAM;
	switch (id) {
	case SCN_OFFLINE:           /* one client a sample: all are sent at 0 s, none after */
		return requests > UINT32_MAX ? UINT32_MAX : (uint32_t)requests;
	case SCN_SINGLE_STREAM:
		return 1;
	case SCN_MULTI_STREAM:
		return SCN_MULTI_STREAM_SAMPLES;
	default:
		return 0;
	}
}
