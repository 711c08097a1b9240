/* policies/router/registry.c: the one list of routers, in the order
 * `simbatch list routers` shows them; a router exists when its ops are
 * named here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "router.h"

extern const struct router_ops round_robin_router_ops;
extern const struct router_ops least_outstanding_router_ops;
extern const struct router_ops least_kv_router_ops;
extern const struct router_ops prefix_affinity_router_ops;

static const struct router_ops *const router_table[] = {
	&round_robin_router_ops,
	&least_outstanding_router_ops,
	&least_kv_router_ops,
	&prefix_affinity_router_ops,
};

#define ROUTER_COUNT (sizeof router_table / sizeof router_table[0])

static struct opt_union router_union;

/* A mistake in a router's table, not in the input: the program refuses to go on. */
static void router_registry_broken(const char *what, const char *name)
{
	fprintf(stderr, "simbatch: %s '%s' (policies/router/registry.c)\n", what, name);
	abort();
}

/* Two routers of one name would make --router ambiguous; checked, and the
 * knobs gathered, the first time the registry is used. */
static void router_registry_check(void)
{
	static int checked;
	if (checked)
		return;
	for (size_t i = 0; i < ROUTER_COUNT; i++) {
		for (size_t j = i + 1; j < ROUTER_COUNT; j++)
			if (strcmp(router_table[i]->name, router_table[j]->name) == 0)
				router_registry_broken("two routers are named", router_table[i]->name);
		for (size_t k = 0; k < router_table[i]->nparams; k++)
			if (opt_union_add(&router_union, router_table[i]->name, &router_table[i]->params[k]) != 0)
				router_registry_broken("two routers declare unlike knobs (or too many) named",
				                       router_table[i]->params[k].name);
	}
	opt_union_close(&router_union);
	checked = 1;
}

const struct router_ops *const *router_registry(size_t *count)
{
	router_registry_check();
	*count = ROUTER_COUNT;
	return router_table;
}

const struct opt_def *router_param_union(size_t *count)
{
	router_registry_check();
	*count = router_union.n;
	return router_union.defs;
}

const struct router_ops *router_find(const char *name)
{
	router_registry_check();
	for (size_t i = 0; i < ROUTER_COUNT; i++)
		if (strcmp(router_table[i]->name, name) == 0)
			return router_table[i];
	return NULL;
}
