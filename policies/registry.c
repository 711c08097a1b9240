/* policies/registry.c: the one list of batching policies, in the order
 * `simbatch list policies` shows them. Registration is explicit: a policy
 * exists when its ops table is named here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policy.h"

extern const struct pol_ops serial_policy_ops;
extern const struct pol_ops graph_policy_ops;
extern const struct pol_ops cellular_policy_ops;
extern const struct pol_ops topup_policy_ops;
extern const struct pol_ops lazy_policy_ops;
extern const struct pol_ops oracle_policy_ops;
extern const struct pol_ops continuous_policy_ops;
extern const struct pol_ops chunked_policy_ops;
extern const struct pol_ops slo_policy_ops;
extern const struct pol_ops static_policy_ops;

static const struct pol_ops *const pol_table[] = {
	&serial_policy_ops,
	&graph_policy_ops,
	&cellular_policy_ops,
	&topup_policy_ops,
	&lazy_policy_ops,
	&oracle_policy_ops,
	&static_policy_ops,
	&continuous_policy_ops,
	&chunked_policy_ops,
	&slo_policy_ops,
};

#define POL_COUNT (sizeof pol_table / sizeof pol_table[0])

static struct opt_union pol_union;

/* A mistake in a policy's tables, not in the input: the program refuses to go on. */
static void pol_registry_broken(const char *what, const char *name)
{
	fprintf(stderr, "simbatch: %s '%s' (policies/registry.c)\n", what, name);
	abort();
}

/* Two policies of one name would make --policy ambiguous and the results
 * database mix them; checked, and the knobs gathered (one table, as
 * util/options.h's opt_union holds them), the first time the registry is
 * used. */
static void pol_registry_check(void)
{
	static int checked;
	if (checked)
		return;
	for (size_t i = 0; i < POL_COUNT; i++) {
		for (size_t j = i + 1; j < POL_COUNT; j++)
			if (strcmp(pol_table[i]->name, pol_table[j]->name) == 0)
				pol_registry_broken("two policies are named", pol_table[i]->name);
		if (!pol_table[i]->decode_run != !pol_table[i]->decode_advance)
			pol_registry_broken("decode_run and decode_advance go together (policy.h, \"Optional capability: "
			                    "decode runs\"); one without the other in policy", pol_table[i]->name);
		for (size_t k = 0; k < pol_table[i]->nparams; k++)
			if (opt_union_add(&pol_union, pol_table[i]->name, &pol_table[i]->params[k]) != 0)
				pol_registry_broken("two policies declare unlike knobs (or too many) named",
				                    pol_table[i]->params[k].name);
	}
	opt_union_close(&pol_union);
	checked = 1;
}

const struct opt_def *pol_param_union(size_t *count)
{
	pol_registry_check();
	*count = pol_union.n;
	return pol_union.defs;
}

int pol_takes_param(const struct pol_ops *p, const char *name)
{
	return opt_find(p->params, p->nparams, name) != NULL;
}

const struct pol_ops *const *pol_registry(size_t *count)
{
	pol_registry_check();
	*count = POL_COUNT;
	return pol_table;
}

const struct pol_ops *pol_find(const char *name)
{
	pol_registry_check();
	for (size_t i = 0; i < POL_COUNT; i++)
		if (strcmp(pol_table[i]->name, name) == 0)
			return pol_table[i];
	return NULL;
}
