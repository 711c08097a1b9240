/* sim/cli/capacity_save.c: capacity's answer stored in the results database (capacity_search.h,
 * sim/store/capacity_store.h): the configuration, the target, the answer and its bracket and band,
 * the requests and seeds per probe, and every probe, in one transaction. */
#include "capacity_search.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capacity_requests.h"
#include "../study/capacity.h"
#include "../store/capacity_store.h"
#include "../../util/errkind.h"
#include "../../util/options.h"
#include "version.h"

/* The probes' run options as given, space-separated: malloc'd, NULL when out of memory. */
static char *cap_run_options(const struct cap_search *s)
{
	size_t len = 1;
	for (size_t i = 0; i < s->nrun_args; i++)
		len += strlen(s->run_args[i]) + 1;
	char *text = malloc(len), *end = text;
	if (!text)
		return NULL;
	*end = '\0';
	for (size_t i = 0; i < s->nrun_args; i++)
		end += sprintf(end, "%s%s", i ? " " : "", s->run_args[i]);
	return text;
}

int cap_store(struct results_db *db, const struct opt_set *o, const struct cap_search *s,
              const struct study_cap_names *nm, double est, const struct study_cap_point *lo,
              const struct study_cap_point *hi, int64_t *capacity_id, char *err, size_t errlen)
{
	const struct study_serving *sv = &nm->serving;
	char serving[256], *json = NULL, *run_options = cap_run_options(s);
	size_t json_len = 0;
	struct results_capacity_probe probes[STUDY_CAP_MAX_POINTS];
	FILE *f = open_memstream(&json, &json_len);
	if (f) {
		cap_write_json(f, o, s, nm, est, lo, hi, -1);
		if (fclose(f) != 0) {
			free(json);
			json = NULL;
		}
	}
	int rc = -1;
	if (!json || !run_options) {
		err_memory(err, errlen, "out of memory storing the capacity");
		goto done;
	}
	for (size_t i = 0; i < s->res.npts; i++)
		probes[i] = (struct results_capacity_probe){
			.rate_rps = s->res.pts[i].rate_rps, .p99_ms = s->res.pts[i].p99_ms, .miss_fraction = s->res.pts[i].violation,
			.miss_bound = s->llm ? s->res.pts[i].bound : NAN, .saturated = s->res.pts[i].saturated,
			.overloaded = s->res.pts[i].overloaded, .pass = s->res.pts[i].pass,
		};
	double band[2] = { NAN, NAN };
	cap_hw_band(s, lo, hi, band);
	struct results_capacity c = {
		.code_version = SIMBATCH_VERSION, .policy = nm->policy, .model = nm->model, .hw = nm->hw,
		.serving = study_serving_text(sv, serving, sizeof serving), .llm = sv->llm, .tp = sv->tp, .ep = sv->ep,
		.replicas = sv->replicas, .prefill_replicas = sv->prefill, .decode_replicas = sv->decode, .gpus = sv->gpus,
		.workers = sv->workers, .max_batch = nm->max_batch, .router = sv->router, .engine = sv->engine,
		.run_options = run_options, .sla_ms = s->llm ? NAN : s->sla_ms, .quantile = s->llm ? NAN : CAP_QUANTILE,
		.ttft_slo_ms = s->llm ? s->ttft_slo_ms : 0, .tpot_slo_ms = s->llm ? s->tpot_slo_ms : 0,
		.allowed_miss_fraction = s->llm ? s->allowed : NAN, .confidence = s->llm ? s->confidence : NAN,
		.capacity_rps = lo->rate_rps, .bracket_lo_rps = lo->rate_rps, .bracket_hi_rps = hi->rate_rps,
		.band_lo_rps = band[0], .band_hi_rps = band[1], .estimate_rps = est, .tolerance = opt_double(o, "tolerance"),
		.requests = s->requests, .warmup = s->warmup, .seeds = s->nseeds, .first_seed = s->seed0,
		.report_json = json, .nprobes = s->res.npts, .probes = probes,
	};
	rc = results_write_capacity(db, &c, capacity_id, err, errlen);
done:
	free(json);
	free(run_options);
	return rc;
}
