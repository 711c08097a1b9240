/* sim/cli/cmd_list.c: `simbatch list models | policies [--json] | routers [--json] |
 * hw | metrics [--json]`: what the registries and the models directory hold; and the message
 * naming the policies when an unknown one is asked for. */
#include <stdio.h>
#include <string.h>
#include "cli.h"
#include "../../util/json.h"
#include "../store/metric_names.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../../policies/policy.h"
#include "../../policies/router/router.h"

static void list_model_cb(const char *name, void *ctx)
{
	(void)ctx;
	printf("%s\n", name);
}

/* A plug-in's knobs as a JSON array: type, default, bounds and help each. */
static void list_knobs_json(const struct opt_def *params, size_t nparams)
{
	static const char *const type_names[] = { "text", "integer", "number", "flag", "list" };
	printf("[");
	for (size_t k = 0; k < nparams; k++) {
		const struct opt_def *d = &params[k];
		printf("%s{\"name\":", k ? "," : "");
		json_write_string(stdout, d->name);
		printf(",\"type\":\"%s\",\"default\":", type_names[d->type]);
		if (d->defval)
			json_write_string(stdout, d->defval);
		else
			printf("null");
		if (d->type == OPT_UINT || d->type == OPT_DOUBLE)
			printf(",\"min\":%.17g,\"max\":%.17g,\"min_open\":%s", d->min, d->max, d->min_open ? "true" : "false");
		printf(",\"help\":");
		json_write_string(stdout, d->help);
		printf("}");
	}
	printf("]");
}

/* The registry as one JSON object, for readers (scripts/simbatch_results.py
 * policies()): each policy, whether it serves LLMs, its default max batch,
 * and its knobs with their type, default, bounds and help. */
static void list_policies_json(void)
{
	size_t n;
	const struct pol_ops *const *reg = pol_registry(&n);
	printf("{\"policies\":[");
	for (size_t i = 0; i < n; i++) {
		const struct pol_ops *p = reg[i];
		printf("%s{\"name\":", i ? "," : "");
		json_write_string(stdout, p->name);
		printf(",\"help\":");
		json_write_string(stdout, p->help);
		printf(",\"llm\":%s,\"default_max_batch\":%u,\"knobs\":", p->serves_llm ? "true" : "false",
		       p->default_max_batch);
		list_knobs_json(p->params, p->nparams);
		printf("}");
	}
	printf("]}\n");
}

/* The routers as one JSON object, as policies: each router, its help, whether it reads the
 * replicas' KV state (the optional capability router.h names), and its knobs. */
static void list_routers_json(void)
{
	size_t n;
	const struct router_ops *const *reg = router_registry(&n);
	printf("{\"routers\":[");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		json_write_string(stdout, reg[i]->name);
		printf(",\"help\":");
		json_write_string(stdout, reg[i]->help);
		printf(",\"reads_kv\":%s,\"knobs\":", reg[i]->reads_kv ? "true" : "false");
		list_knobs_json(reg[i]->params, reg[i]->nparams);
		printf("}");
	}
	printf("]}\n");
}

/* The one list of metric names (sim/store/metric_names.h), as docs/METRICS.md documents it. */
static void list_metrics(int json)
{
	static const char *const runs_key[] = { "all", "llm", "llm_slo" };
	for (size_t i = 0; i < METRIC_COUNT; i++) {
		const struct metric_name *m = &metric_names[i];
		if (!json) {
			printf("%-34s %-9s %-14s %s\n", m->name, m->unit, metric_runs_text(m->runs), m->meaning);
			continue;
		}
		const char *field[] = { "name", m->name, "unit", m->unit, "runs", runs_key[m->runs], "text", m->text,
		                        "meaning", m->meaning, "alias", m->alias };
		fputs(i ? ",{" : "{\"metrics\":[{", stdout);
		for (size_t k = 0; k < sizeof field / sizeof field[0]; k += 2) {
			printf("%s\"%s\":", k ? "," : "", field[k]);
			if (field[k + 1])
				json_write_string(stdout, field[k + 1]);
			else
				fputs("null", stdout);
		}
		putchar('}');
	}
	if (json)
		puts("]}");
}

int cmd_list(int argc, char **argv)
{
	const char *what = argc >= 2 ? argv[1] : "";
	if (strcmp(what, "metrics") == 0) {
		if (argc > 3 || (argc == 3 && strcmp(argv[2], "--json") != 0)) {
			fprintf(stderr, "simbatch: usage: simbatch list metrics [--json]\n");
			return CLI_BAD_INPUT;
		}
		list_metrics(argc == 3);
		return CLI_OK;
	}
	if ((strcmp(what, "policies") == 0 || strcmp(what, "routers") == 0) && argc >= 3) {
		if (argc > 3 || strcmp(argv[2], "--json") != 0) {
			fprintf(stderr, "simbatch: usage: simbatch list %s [--json]\n", what);
			return CLI_BAD_INPUT;
		}
		if (what[0] == 'p')
			list_policies_json();
		else
			list_routers_json();
		return CLI_OK;
	}
	if (strcmp(what, "policies") == 0) {
		size_t n;
		const struct pol_ops *const *reg = pol_registry(&n);
		for (size_t i = 0; i < n; i++) {
			printf("%-10s %s", reg[i]->name, reg[i]->help);
			for (size_t k = 0; k < reg[i]->nparams; k++)
				printf("%s--%s", k ? " " : " (knobs: ", reg[i]->params[k].name);
			printf("%s\n", reg[i]->nparams ? ")" : "");
		}
		return CLI_OK;
	}
	if (strcmp(what, "models") == 0) {
		if (mdl_list(list_model_cb, NULL) < 0) {
			fprintf(stderr, "simbatch: cannot read the models directory '%s'\n", mdl_dir());
			return CLI_FAILED;
		}
		return CLI_OK;
	}
	if (strcmp(what, "routers") == 0) {
		size_t n;
		const struct router_ops *const *reg = router_registry(&n);
		for (size_t i = 0; i < n; i++) {
			printf("%-18s %s", reg[i]->name, reg[i]->help);
			for (size_t k = 0; k < reg[i]->nparams; k++)
				printf("%s--%s", k ? " " : " (knobs: ", reg[i]->params[k].name);
			printf("%s\n", reg[i]->nparams ? ")" : "");
		}
		return CLI_OK;
	}
	if (strcmp(what, "hw") == 0) {
		size_t n;
		const struct hw_ops *const *reg = hw_registry(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-10s %s\n", reg[i]->name, reg[i]->help);
		printf("%-10s %s\n", "FILE", "a node latency table: CSV node,batch,latency_s");
		printf("%-10s %s\n", "FILE", "an NPU configuration: key = value lines, the first kind = npu (hwmodels/table1.npu)");
		printf("%-10s %s\n", "FILE", "a calibration table: CSV op,m_per_sample,k,n,batch,latency_s (calib/README.md)");
		return CLI_OK;
	}
	if (strcmp(what, "--help") == 0) {
		printf("usage: simbatch list models | policies [--json] | routers [--json] | hw | metrics [--json]\n");
		return CLI_OK;
	}
	fprintf(stderr, "simbatch: usage: simbatch list models | policies [--json] | routers [--json] | hw | metrics [--json]\n");
	return CLI_BAD_INPUT;
}
