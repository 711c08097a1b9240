/* policies/registry.c: the one list of batching policies, in the order
 * `simbatch list policies` shows them. Registration is explicit: a policy
 * exists when its ops table is named here. */
#include <string.h>
#include "policy.h"

extern const struct pol_ops serial_policy_ops;
extern const struct pol_ops graph_policy_ops;
extern const struct pol_ops cellular_policy_ops;
extern const struct pol_ops topup_policy_ops;
extern const struct pol_ops lazy_policy_ops;
extern const struct pol_ops oracle_policy_ops;

static const struct pol_ops *const pol_table[] = {
	&serial_policy_ops,
	&graph_policy_ops,
	&cellular_policy_ops,
	&topup_policy_ops,
	&lazy_policy_ops,
	&oracle_policy_ops,
};

const struct pol_ops *const *pol_registry(size_t *count)
{
	*count = sizeof pol_table / sizeof pol_table[0];
	return pol_table;
}

const struct pol_ops *pol_find(const char *name)
{
	for (size_t i = 0; i < sizeof pol_table / sizeof pol_table[0]; i++)
		if (strcmp(pol_table[i]->name, name) == 0)
			return pol_table[i];
	return NULL;
}
