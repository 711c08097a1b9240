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

static struct opt_def pol_union[OPT_MAX];
static char pol_union_help[OPT_MAX][320];
static size_t pol_union_count;

/* A mistake in a policy's tables, not in the input: the program refuses to go on. */
static void pol_registry_broken(const char *what, const char *name)
{
	fprintf(stderr, "simbatch: %s '%s' (policies/registry.c)\n", what, name);
	abort();
}

/* The union of the policies' knobs. One name is one option on the command
 * line and one key in the results database, so policies that share a knob
 * declare it alike: same type, bounds and default. */
static void pol_union_add(const struct pol_ops *p, const struct opt_def *d)
{
	size_t i = 0;
	while (i < pol_union_count && strcmp(pol_union[i].name, d->name) != 0)
		i++;
	if (i == pol_union_count) {
		if (i == OPT_MAX)
			pol_registry_broken("too many policy knobs at", d->name);
		pol_union[i] = *d;
		snprintf(pol_union_help[i], sizeof pol_union_help[i], "%s [%s", d->help, p->name);
		pol_union[i].help = pol_union_help[i];
		pol_union_count++;
		return;
	}
	const struct opt_def *u = &pol_union[i];
	int same_default = (!u->defval && !d->defval) || (u->defval && d->defval && strcmp(u->defval, d->defval) == 0);
	if (u->type != d->type || u->min != d->min || u->max != d->max || u->min_open != d->min_open || !same_default)
		pol_registry_broken("two policies declare unlike knobs named", d->name);
	size_t len = strlen(pol_union_help[i]);
	snprintf(pol_union_help[i] + len, sizeof pol_union_help[i] - len, ", %s", p->name);
}

/* Two policies of one name would make --policy ambiguous and the results
 * database mix them; checked, and the knobs gathered, the first time the
 * registry is used. */
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
			pol_union_add(pol_table[i], &pol_table[i]->params[k]);
	}
	for (size_t i = 0; i < pol_union_count; i++) {
		size_t len = strlen(pol_union_help[i]);
		snprintf(pol_union_help[i] + len, sizeof pol_union_help[i] - len, "]");
	}
	checked = 1;
}

const struct opt_def *pol_param_union(size_t *count)
{
	pol_registry_check();
	*count = pol_union_count;
	return pol_union;
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
