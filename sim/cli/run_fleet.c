/* sim/cli/run_fleet.c: --replicas, --router and --router-refresh into a
 * run's configuration: a fleet of LLM replicas, one simulated device each
 * (policies/fleet.h), homogeneous (--replicas=N on --hw) or heterogeneous
 * (--replicas=N:HW,...: each group's hardware opened here, at --tp). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "run_fleet.h"
#include "../../util/errkind.h"
#include "../../util/text.h"
#include "../../policies/router/router.h"

/* A heterogeneous fleet, --replicas=N:HW[,N:HW...]: each group's hardware
 * opened (at --tp), its replicas pointing at it together; *n the total. */
static int run_fleet_groups(const struct opt_set *o, const struct mdl_model *m, struct run_fleet *f, const char *text,
                            uint64_t *n, char *err, size_t errlen)
{
	if (opt_given(o, "hw")) {
		snprintf(err, errlen, "--hw: a heterogeneous fleet names each group's hardware in --replicas=%s", text);
		return -1;
	}
	char buf[512];
	if (snprintf(buf, sizeof buf, "%s", text) >= (int)sizeof buf) {
		snprintf(err, errlen, "--replicas: longer than %zu characters", sizeof buf - 1);
		return -1;
	}
	*n = 0;
	for (char *save = NULL, *g = strtok_r(buf, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(g, ':');
		uint64_t count = 0;
		if (colon)
			*colon = '\0';
		if (!colon || txt_parse_uint(g, 4096, &count) != 0 || count < 1 || !colon[1] ||
		    f->ngroups == RUN_FLEET_GROUPS) {
			snprintf(err, errlen, "--replicas=%s: expected N:HW[,N:HW...], at most %d groups of 1 to 4096 "
			         "replicas (N replicas of hardware HW each)", text, RUN_FLEET_GROUPS);
			return -1;
		}
		struct hw_model *hw = NULL;
		char why[400];
		if (hw_open_tp(colon + 1, m, (uint32_t)opt_uint(o, "tp"), &hw, why, sizeof why) != 0) {
			snprintf(err, errlen, "--replicas=%s: group %s:%s: %s", text, g, colon + 1, why);
			return -1;
		}
		f->hw[f->ngroups] = hw;
		f->count[f->ngroups++] = (uint32_t)count;
		*n += count;
	}
	if (*n > 4096 || f->ngroups == 0) {
		snprintf(err, errlen, "--replicas=%s: a fleet has 1 to 4096 replicas", text);
		return -1;
	}
	f->replica_hw = calloc(*n, sizeof *f->replica_hw);
	if (!f->replica_hw)
		return err_memory(err, errlen, "out of memory for the fleet");
	for (size_t g = 0, k = 0; g < f->ngroups; g++)
		for (uint32_t i = 0; i < f->count[g]; i++)
			f->replica_hw[k++] = f->hw[g];
	return 0;
}

int run_fleet_setup(const struct opt_set *o, const struct mdl_model *m, struct eng_config *c, struct run_fleet *f,
                    char *err, size_t errlen)
{
	const char *text = opt_str(o, "replicas");
	uint64_t n = 0;
	int groups = strchr(text, ':') != NULL;
	if (groups && !m->is_llm) {
		snprintf(err, errlen, "--replicas: a fleet serves an LLM; model %s is node-level (--workers gives it devices)",
		         m->name);
		return -1;
	}
	if (groups ? run_fleet_groups(o, m, f, text, &n, err, errlen) != 0
	           : (txt_parse_uint(text, 4096, &n) != 0 || n < 1)) {
		if (!groups)
			snprintf(err, errlen, "--replicas=%s: expected a number of replicas from 1 to 4096, or N:HW[,N:HW...]",
			         text);
		return -1;
	}
	if (n == 1) {
		const char *fleet_only = opt_given(o, "router") ? "router" : opt_given(o, "router-refresh") ? "router-refresh"
		                         : NULL;
		if (fleet_only) {
			snprintf(err, errlen, "--%s applies to a fleet (--replicas=N, N > 1)", fleet_only);
			return -1;
		}
		if (!groups)
			return 0;
	}
	if (!m->is_llm) {
		snprintf(err, errlen, "--replicas: a fleet serves an LLM; model %s is node-level (--workers gives it devices)",
		         m->name);
		return -1;
	}
	if (opt_uint(o, "workers") != 1) {
		snprintf(err, errlen, "give --workers or --replicas, not both: --workers devices share one queue, "
		         "--replicas puts a router in front of replicas with a KV cache each");
		return -1;
	}
	c->router = router_find(opt_str(o, "router"));
	if (!c->router) {
		size_t nr, used;
		const struct router_ops *const *reg = router_registry(&nr);
		used = (size_t)snprintf(err, errlen, "unknown router '%s' (known:", opt_str(o, "router"));
		for (size_t i = 0; i < nr && used < errlen; i++)
			used += (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "", reg[i]->name);
		if (used < errlen)
			snprintf(err + used, errlen - used, ")");
		return -1;
	}
	c->replicas = (uint32_t)n;
	c->workers = (uint32_t)n;
	c->router_refresh_ns = llround(opt_double(o, "router-refresh") * 1e6);
	if (groups) {
		c->hw = f->replica_hw[0];
		c->replica_hw = (const struct hw_model *const *)f->replica_hw;
	}
	return 0;
}

void run_fleet_free(struct run_fleet *f)
{
	for (size_t i = 0; i < f->ngroups; i++)
		hw_close(f->hw[i]);
	free(f->replica_hw);
	memset(f, 0, sizeof *f);
}
