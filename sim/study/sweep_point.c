/* sim/study/sweep_point.c: one point of a sweep (sweep_plan.h): its options, sorted, as the
 * run subcommand's arguments, and its key. */
#include "sweep_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sp_arg {               /* one option of a point while its list is sorted */
	const char *name;
	char *arg;                /* owned "--name=value" */
};

static int sp_arg_cmp(const void *a, const void *b)
{
	return strcmp(((const struct sp_arg *)a)->name, ((const struct sp_arg *)b)->name);
}

static char *sp_format_arg(const char *name, const char *value)
{
	size_t need = strlen(name) + (value ? strlen(value) + 1 : 0) + 3;
	char *s = malloc(need);
	if (s)
		snprintf(s, need, value ? "--%s=%s" : "--%s", name, value ? value : "");
	return s;
}

void sweep_point_free(struct sweep_point *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nargs; i++)
		free(p->args[i]);
	free(p->args);
	free(p->choice);
	free(p->key);
	memset(p, 0, sizeof *p);
}

int sweep_point_make(const struct sweep_spec *s, size_t index, struct sweep_point *p)
{
	struct sp_arg *list = NULL;
	char seedtext[32];
	size_t n = 0, max = s->nfixed + 1;
	memset(p, 0, sizeof *p);
	p->index = index;
	p->config = index / s->nseeds;
	p->seed = s->seeds[index % s->nseeds];
	if (!(p->choice = calloc(s->naxes ? s->naxes : 1, sizeof *p->choice)))
		goto fail;
	/* mixed radix, the last axis fastest */
	size_t rest = p->config;
	for (size_t a = s->naxes; a-- > 0;) {
		p->choice[a] = rest % s->axes[a].nvalues;
		rest /= s->axes[a].nvalues;
		max += s->axes[a].values[p->choice[a]].nopts;
	}
	if (!(list = calloc(max, sizeof *list)))
		goto fail;
	for (size_t i = 0; i < s->nfixed; i++, n++)
		if (!(list[n].arg = sp_format_arg(list[n].name = s->fixed[i].name, s->fixed[i].value)))
			goto fail;
	for (size_t a = 0; a < s->naxes; a++) {
		const struct sweep_group *g = &s->axes[a].values[p->choice[a]];
		for (size_t i = 0; i < g->nopts; i++, n++)
			if (!(list[n].arg = sp_format_arg(list[n].name = g->opts[i].name, g->opts[i].value)))
				goto fail;
	}
	snprintf(seedtext, sizeof seedtext, "%llu", (unsigned long long)p->seed);
	if (!(list[n].arg = sp_format_arg(list[n].name = "seed", seedtext)))
		goto fail;
	n++;
	qsort(list, n, sizeof *list, sp_arg_cmp);
	size_t keylen = 1;
	for (size_t i = 0; i < n; i++)
		keylen += strlen(list[i].arg) - 2 + 1;
	if (!(p->args = calloc(n, sizeof *p->args)) || !(p->key = malloc(keylen)))
		goto fail;
	char *k = p->key;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(list[i].arg) - 2;
		if (i)
			*k++ = ' ';
		memcpy(k, list[i].arg + 2, len);
		k += len;
		p->args[i] = list[i].arg;
		list[i].arg = NULL;
		p->nargs++;
	}
	*k = '\0';
	free(list);
	return 0;
fail:
	if (list)
		for (size_t i = 0; i < max; i++)
			free(list[i].arg);
	free(list);
	sweep_point_free(p);
	return -1;
}
