/* sim/study/fleet.c: --replicas, --router and --router-refresh into a
 * run's configuration: a fleet of LLM replicas, one simulated device each
 * (policies/fleet.h), homogeneous (--replicas=N on --hw) or heterogeneous
 * (--replicas=N:HW,...: each group's hardware opened here, at --tp), or
 * split into a prefill and a decode pool (--prefill-replicas=P[:HW]
 * --decode-replicas=D[:HW], --kv-link, --kv-transfer; fleet.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet.h"
#include "../../util/errkind.h"
#include "../../util/text.h"
#include "../../hwmodels/calibrated.h"
#include "../../policies/router/router.h"

const struct opt_def run_fleet_pool_opts[] = {
	{ "prefill-replicas", OPT_STR, NULL, 0, 0, 0, "LLM, with --decode-replicas: P replicas (P:HW on hardware HW) run "
	  "prompts, then move each request's KV cache to a decode replica (disaggregation; TTFT includes the move)" },
	{ "decode-replicas", OPT_STR, NULL, 0, 0, 0, "LLM, with --prefill-replicas: D replicas (D:HW) generate the "
	  "tokens; each pool behind its own --router" },
	{ "kv-link", OPT_STR, "cross-node", 0, 0, 0, "what a KV move crosses: cross-node or same-node (NCCL send/recv "
	  "measured on the prefill GPU: calib/tables/sendrecv-GPU.csv), or model:GBPS:US (a bandwidth and latency you "
	  "name, e.g. an InfiniBand datasheet's)" },
	{ "kv-transfer", OPT_STR, "after", 0, 0, 0, "when a prompt's KV moves: after (once its prefill ends) or "
	  "layerwise (each layer's as the prefill finishes it, overlapped; Splitwise)" },
};
const size_t run_fleet_npool_opts = sizeof run_fleet_pool_opts / sizeof run_fleet_pool_opts[0];

/* One group of count replicas on hw (opened at --tp; NULL: the run's own, c->hw). */
static int run_fleet_group(const struct opt_set *o, const struct mdl_model *m, struct run_fleet *f, const char *hw,
                           uint32_t count, char *err, size_t errlen)
{
	struct hw_model *opened = NULL;
	if (hw && (hw_open_tp(hw, m, (uint32_t)opt_uint(o, "tp"), &opened, err, errlen) != 0 ||
	           hw_moe_setup(opened, (uint32_t)opt_uint(o, "ep"), opt_str(o, "routing"), opt_uint(o, "seed"), err,
	                        errlen) != 0)) {
		hw_close(opened);
		return -1;
	}
	f->hw[f->ngroups] = opened;
	f->count[f->ngroups++] = count;
	return 0;
}

/* Each of the n replicas points at its group's hardware (a group of NULL: run_hw). */
static int run_fleet_spread(struct run_fleet *f, uint64_t n, const struct hw_model *run_hw, char *err, size_t errlen)
{
	f->replica_hw = calloc(n, sizeof *f->replica_hw);
	if (!f->replica_hw)
		return err_memory(err, errlen, "out of memory for the fleet");
	for (size_t g = 0, k = 0; g < f->ngroups; g++)
		for (uint32_t i = 0; i < f->count[g]; i++)
			f->replica_hw[k++] = f->hw[g] ? f->hw[g] : run_hw;
	return 0;
}

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
	size_t len = strlen(buf);
	if (len == 0 || buf[0] == ',' || buf[len - 1] == ',' || strstr(buf, ",,")) {     /* strtok_r would skip them */
		snprintf(err, errlen, "--replicas=%s: an empty group (expected N:HW[,N:HW...], groups separated by one "
		         "comma)", text);
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
		if (run_fleet_group(o, m, f, colon + 1, (uint32_t)count, err, errlen) != 0) {
			char why[400];
			snprintf(why, sizeof why, "%s", err);
			snprintf(err, errlen, "--replicas=%s: group %s:%s: %s", text, g, colon + 1, why);
			return -1;
		}
		*n += count;
	}
	if (*n > 4096 || f->ngroups == 0) {
		snprintf(err, errlen, "--replicas=%s: a fleet has 1 to 4096 replicas", text);
		return -1;
	}
	return run_fleet_spread(f, *n, NULL, err, errlen);
}

/* A pool's size and hardware from --NAME-replicas=N[:HW]: *hw NULL for the run's own. */
static int run_fleet_pool(const struct opt_set *o, const char *name, uint64_t *n, const char **hw, char *buf,
                          size_t buflen, char *err, size_t errlen)
{
	const char *text = opt_str(o, name);
	snprintf(buf, buflen, "%s", text);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = '\0';
	*hw = colon ? colon + 1 : NULL;
	if (txt_parse_uint(buf, 4096, n) != 0 || (colon && !colon[1])) {
		snprintf(err, errlen, "--%s=%s: expected N or N:HW (N replicas, on hardware HW or --hw)", name, text);
		return -1;
	}
	if (*n == 0) {
		snprintf(err, errlen, "--%s=%s: a pool of zero replicas (disaggregation needs a prefill and a decode pool "
		         "of at least one replica each)", name, text);
		return -1;
	}
	return 0;
}

size_t run_fleet_named_hw(const struct opt_set *o, char *hw, size_t hwlen)
{
	const char *groups = opt_str(o, "replicas");
	const char *pool[2] = { opt_str(o, "prefill-replicas"), opt_str(o, "decode-replicas") };
	const char *first;
	if (opt_given(o, "hw"))
		return 0;
	if (pool[0] && pool[1]) {           /* both pools N:HW */
		if (!strchr(pool[0], ':') || !strchr(pool[1], ':'))
			return 0;
		first = strchr(pool[0], ':') + 1;
	} else if (groups && strchr(groups, ':') && !pool[0] && !pool[1]) {
		first = strchr(groups, ':') + 1;  /* every group is N:HW (run_fleet_groups refuses any other) */
	} else {
		return 0;
	}
	size_t n = strcspn(first, ",");
	if (n == 0 || n >= hwlen)
		return 0;
	snprintf(hw, hwlen, "%.*s", (int)n, first);
	return n;
}

/* The price of one KV move the engine's fleet asks for (fleet_disagg.move_s): the link's, which the
 * policies' floor cannot reach itself (hwmodels sits beside it), handed down from here. */
static double study_kv_move_s(const void *link, double bytes, int *extrapolated)
{
	return kv_link_seconds(link, bytes, extrapolated);
}

/* A measured GPU's name in the tables (gpu-h100: h100), or NULL. */
static const char *run_fleet_gpu(const char *hw)
{
	return strncmp(hw, "gpu-", 4) == 0 ? hw + 4 : NULL;
}

/* --prefill-replicas=P[:HW] --decode-replicas=D[:HW]: two pools behind the router (fleet.h). */
static int run_fleet_pools(const struct opt_set *o, const struct mdl_model *m, struct eng_config *c,
                           struct run_fleet *f, char *err, size_t errlen)
{
	const char *missing = !opt_given(o, "prefill-replicas") ? "prefill-replicas"
	                      : !opt_given(o, "decode-replicas") ? "decode-replicas" : NULL;
	if (missing) {
		snprintf(err, errlen, "--%s is missing: a disaggregated fleet needs --prefill-replicas=P and "
		         "--decode-replicas=D", missing);
		return -1;
	}
	if (!m->is_llm) {
		snprintf(err, errlen, "--prefill-replicas: disaggregation serves an LLM; model %s is node-level", m->name);
		return -1;
	}
	if (opt_given(o, "replicas") || opt_uint(o, "workers") != 1) {
		snprintf(err, errlen, "give --prefill-replicas and --decode-replicas, or --%s, not both",
		         opt_given(o, "replicas") ? "replicas" : "workers");
		return -1;
	}
	uint64_t np, nd;
	const char *hwp, *hwd;
	char bufp[256], bufd[256];
	if (run_fleet_pool(o, "prefill-replicas", &np, &hwp, bufp, sizeof bufp, err, errlen) != 0 ||
	    run_fleet_pool(o, "decode-replicas", &nd, &hwd, bufd, sizeof bufd, err, errlen) != 0)
		return -1;
	if (np + nd > 4096) {
		snprintf(err, errlen, "--prefill-replicas and --decode-replicas: a fleet has at most 4096 replicas, not %llu",
		         (unsigned long long)(np + nd));
		return -1;
	}
	const char *run_hw = c->hw ? c->hw->label : opt_str(o, "hw");
	if (hwp || hwd) {
		if (run_fleet_group(o, m, f, hwp, (uint32_t)np, err, errlen) != 0 ||
		    run_fleet_group(o, m, f, hwd, (uint32_t)nd, err, errlen) != 0) {
			char why[400];
			snprintf(why, sizeof why, "%s", err);
			snprintf(err, errlen, "--%s: %s", f->ngroups ? "decode-replicas" : "prefill-replicas", why);
			return -1;
		}
		if (run_fleet_spread(f, np + nd, c->hw, err, errlen) != 0)
			return -1;
		c->replica_hw = (const struct hw_model *const *)f->replica_hw;
		c->hw = f->replica_hw[0];
	}
	const char *name_p = hwp ? hwp : run_hw, *name_d = hwd ? hwd : run_hw;
	snprintf(f->hw_label, sizeof f->hw_label, "prefill %llu:%s, decode %llu:%s", (unsigned long long)np, name_p,
	         (unsigned long long)nd, name_d);
	const char *spec = opt_str(o, "kv-link");
	if (strcmp(spec, "same-node") == 0 && strcmp(name_p, name_d) != 0) {
		snprintf(err, errlen, "--kv-link=same-node: the pools are different hardware (prefill %s, decode %s), "
		         "which no measured node holds together (cross-node or model:GBPS:US)", name_p, name_d);
		return -1;
	}
	/* the sender's side prices a move: its GPU's measured send/recv */
	if (kv_link_open(spec, calhw_tables_dir(), run_fleet_gpu(name_p), &f->link, err, errlen) != 0)
		return -1;
	const char *transfer = opt_str(o, "kv-transfer");
	if (strcmp(transfer, "after") != 0 && strcmp(transfer, "layerwise") != 0) {
		snprintf(err, errlen, "--kv-transfer=%s: expected after (the prompt's KV moves once its prefill ends) or "
		         "layerwise (each layer's as the prefill finishes it)", transfer);
		return -1;
	}
	f->dis = (struct fleet_disagg){
		.prefill = (uint32_t)np, .move_s = study_kv_move_s, .link = f->link, .pairs = (uint32_t)opt_uint(o, "tp"),
		.layers = m->llm.layers, .kv_bytes_per_token = (double)mdl_llm_kv_bytes_per_token(&m->llm),
		.layerwise = strcmp(transfer, "layerwise") == 0,
	};
	c->disagg = &f->dis;
	c->replicas = (uint32_t)(np + nd);
	c->workers = c->replicas;
	return 0;
}

/* The router named by --router into c->router, and its knobs (each given one it declares, the rest
 * their defaults; one it does not declare refused) into f->router_params: 0, or -1 with err. */
static int run_fleet_router(const struct opt_set *o, struct eng_config *c, struct run_fleet *f, char *err,
                            size_t errlen)
{
	const struct router_ops *r = router_find(opt_str(o, "router"));
	if (!r) {
		size_t nr, used;
		const struct router_ops *const *reg = router_registry(&nr);
		used = (size_t)snprintf(err, errlen, "unknown router '%s' (known:", opt_str(o, "router"));
		for (size_t i = 0; i < nr && used < errlen; i++)
			used += (size_t)snprintf(err + used, errlen - used, "%s %s", i ? "," : "", reg[i]->name);
		if (used < errlen)
			snprintf(err + used, errlen - used, ")");
		return -1;
	}
	size_t n;
	const struct opt_def *knobs = router_param_union(&n);
	opt_defaults(&f->router_params, r->params, r->nparams);
	for (size_t i = 0; i < n; i++) {
		if (!opt_given(o, knobs[i].name))
			continue;
		if (!opt_find(r->params, r->nparams, knobs[i].name)) {
			snprintf(err, errlen, "--%s does not apply to router %s (%s; simbatch --router=%s --help)", knobs[i].name,
			         r->name, r->nparams ? "its knobs: simbatch list routers" : "it has no knobs of its own", r->name);
			return -1;
		}
		if (opt_put(&f->router_params, knobs[i].name, opt_str(o, knobs[i].name), err, errlen) != 0)
			return -1;
	}
	if (r->blind && opt_double(o, "router-refresh") != 0) {
		snprintf(err, errlen, "--router-refresh does not apply to router %s: it reads no replica state, so "
		         "how stale that state is changes nothing (drop the option, or pick a router that reads load: "
		         "simbatch list routers)", r->name);
		return -1;
	}
	c->router = r;
	c->router_params = &f->router_params;
	return 0;
}

/* The first option given that only a fleet takes (--router, --router-refresh, a router's knob), or NULL. */
static const char *run_fleet_only_given(const struct opt_set *o)
{
	if (opt_given(o, "router") || opt_given(o, "router-refresh"))
		return opt_given(o, "router") ? "router" : "router-refresh";
	size_t n;
	const struct opt_def *knobs = router_param_union(&n);
	for (size_t i = 0; i < n; i++)
		if (opt_given(o, knobs[i].name))
			return knobs[i].name;
	return NULL;
}

int run_fleet_setup(const struct opt_set *o, const struct mdl_model *m, struct eng_config *c, struct run_fleet *f,
                    char *err, size_t errlen)
{
	if (opt_given(o, "prefill-replicas") || opt_given(o, "decode-replicas")) {
		if (run_fleet_pools(o, m, c, f, err, errlen) != 0 || run_fleet_router(o, c, f, err, errlen) != 0)
			return -1;
		c->router_refresh_ns = llround(opt_double(o, "router-refresh") * 1e6);
		return 0;
	}
	const char *pool_only = opt_given(o, "kv-link") ? "kv-link" : opt_given(o, "kv-transfer") ? "kv-transfer" : NULL;
	if (pool_only) {
		snprintf(err, errlen, "--%s applies to a disaggregated fleet (--prefill-replicas=P --decode-replicas=D)",
		         pool_only);
		return -1;
	}
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
		const char *fleet_only = run_fleet_only_given(o);
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
	if (run_fleet_router(o, c, f, err, errlen) != 0)
		return -1;
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
	kv_link_close(f->link);
	for (size_t i = 0; i < f->ngroups; i++)
		hw_close(f->hw[i]);
	free(f->replica_hw);
	memset(f, 0, sizeof *f);
}
