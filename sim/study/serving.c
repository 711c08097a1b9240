/* sim/study/serving.c: a run's serving configuration and its one text (serving.h). */
#include "serving.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../util/json.h"
#include "../../util/options.h"
#include "../../policies/fleet.h"
#include "../../policies/router/router.h"

void study_serving_of(const struct opt_set *o, int llm, const struct eng_config *c, const char *engine,
                      struct study_serving *sv)
{
	char name[sizeof sv->engine] = "";
	if (engine)                /* engine may be sv's own: kept before sv is cleared */
		snprintf(name, sizeof name, "%s", engine);
	memset(sv, 0, sizeof *sv);
	sv->llm = llm;
	sv->workers = c->workers;
	if (!llm) {
		sv->gpus = c->workers;
		return;
	}
	sv->tp = (uint32_t)opt_uint(o, "tp");
	sv->ep = (uint32_t)opt_uint(o, "ep");
	sv->replicas = c->disagg || c->replicas > 1 ? c->workers : 1;
	if (c->disagg) {
		sv->prefill = c->disagg->prefill;
		sv->decode = c->workers - c->disagg->prefill;
	}
	if (sv->replicas > 1 && c->router)
		snprintf(sv->router, sizeof sv->router, "%s", c->router->name);
	memcpy(sv->engine, name, sizeof name);
	sv->gpus = sv->tp * c->workers;    /* each replica its own tp GPUs (DESIGN.md 3c) */
}

/* Replicas in "N", "N:HW" or "N:HW,M:HW2" (each count already checked): their sum. */
static uint32_t serving_count(const char *text)
{
	uint32_t n = 0;
	for (const char *p = text; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
		n += (uint32_t)strtoul(p, NULL, 10);
	return n;
}

void study_serving_of_options(const struct opt_set *o, int llm, struct study_serving *sv)
{
	struct eng_config c = { .workers = (uint32_t)opt_uint(o, "workers") };
	struct fleet_disagg dis = { .prefill = 0 };
	if (llm && opt_given(o, "prefill-replicas")) {
		dis.prefill = serving_count(opt_str(o, "prefill-replicas"));
		c.workers = dis.prefill + serving_count(opt_str(o, "decode-replicas"));
		c.disagg = &dis;
	} else if (llm && serving_count(opt_str(o, "replicas")) > 1) {
		c.workers = c.replicas = serving_count(opt_str(o, "replicas"));
	}
	c.router = router_find(opt_str(o, "router"));
	study_serving_of(o, llm, &c, opt_given(o, "engine") ? opt_str(o, "engine") : NULL, sv);
}

const char *study_serving_text(const struct study_serving *sv, char *buf, size_t len)
{
	if (!sv->llm) {
		snprintf(buf, len, "%u worker%s", sv->workers, sv->workers == 1 ? "" : "s");
		return buf;
	}
	char replicas[64], ep[24] = "", router[80] = "", engine[80] = "";
	if (sv->prefill)
		snprintf(replicas, sizeof replicas, "%u prefill + %u decode replicas", sv->prefill, sv->decode);
	else if (sv->replicas > 1 || sv->workers == 1)
		snprintf(replicas, sizeof replicas, "%u replica%s", sv->replicas, sv->replicas == 1 ? "" : "s");
	else                         /* --workers: devices of one queue, no router */
		snprintf(replicas, sizeof replicas, "%u workers sharing one queue", sv->workers);
	if (sv->ep > 1)
		snprintf(ep, sizeof ep, " EP %u", sv->ep);
	if (sv->router[0])
		snprintf(router, sizeof router, " behind %s", sv->router);
	if (sv->engine[0])
		snprintf(engine, sizeof engine, ", engine %s", sv->engine);
	snprintf(buf, len, "%s at TP %u%s%s, %u GPU%s%s", replicas, sv->tp, ep, router, sv->gpus, sv->gpus == 1 ? "" : "s",
	         engine);
	return buf;
}

static void serving_json_name(FILE *f, const char *key, const char *name)
{
	fprintf(f, ",\"%s\":", key);
	if (name[0])
		json_write_string(f, name);
	else
		fputs("null", f);
}

void study_serving_json(FILE *f, const struct study_serving *sv)
{
	if (!sv->llm) {
		fprintf(f, "\"serving\":{\"workers\":%u}", sv->workers);
		return;
	}
	fprintf(f, "\"serving\":{\"tp\":%u,\"ep\":%u,\"replicas\":%u,\"prefill_replicas\":%u,\"decode_replicas\":%u",
	        sv->tp, sv->ep, sv->replicas, sv->prefill, sv->decode);
	serving_json_name(f, "router", sv->router);
	serving_json_name(f, "engine", sv->engine);
	fprintf(f, ",\"gpus\":%u}", sv->gpus);
}
