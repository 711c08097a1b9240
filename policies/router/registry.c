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

const struct router_ops *const *router_registry(size_t *count)
{
	*count = ROUTER_COUNT;
	return router_table;
}

const struct router_ops *router_find(const char *name)
{
	for (size_t i = 0; i < ROUTER_COUNT; i++)
		if (strcmp(router_table[i]->name, name) == 0)
			return router_table[i];
	return NULL;
}
