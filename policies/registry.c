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

/* Two policies of one name would make --policy ambiguous and the results
 * database mix them: the program refuses to go on the first time the
 * registry is used (a mistake in this file, not in the input). */
static void pol_registry_check(void)
{
	static int checked;
	for (size_t i = 0; !checked && i < POL_COUNT; i++)
		for (size_t j = i + 1; j < POL_COUNT; j++)
			if (strcmp(pol_table[i]->name, pol_table[j]->name) == 0) {
				fprintf(stderr, "simbatch: two policies are named '%s' (policies/registry.c)\n", pol_table[i]->name);
				abort();
			}
	checked = 1;
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
