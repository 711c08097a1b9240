/* sim/study/search_plan.c: a configuration search's decisions over values (search_plan.h). */
#include "search_plan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int study_search_cmp_cost(const void *a, const void *b, void *ctx)
{
	const struct study_search_row *rows = ctx;
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	double x = rows[i].cost, y = rows[j].cost;
	return x < y ? -1 : x > y ? 1 : (i > j) - (i < j);
}

void study_search_order(struct study_search *s)
{
	for (size_t i = 0; i < s->n; i++)
		s->order[i] = i;
	qsort_r(s->order, s->n, sizeof *s->order, study_search_cmp_cost, s->rows);
}

/* A plain fleet of N replicas whose one-replica sibling's capacity search saw one replica saturate at R req/s,
 * with N x R below the target, cannot meet it: one replica's throughput is below any rate that saturates it, and
 * N replicas each fed a thinned share of the same stream serve at most N times that (not so behind
 * prefix-affinity, whose replicas may each hit their caches more than one replica does: no bound there, nor is
 * such a fleet plain). */
int study_search_bounded(const struct study_search *s, size_t i)
{
	struct study_search_row *w = &s->rows[i];
	if (s->exhaustive || s->target_rps <= 0 || w->plain_replicas < 2)
		return 0;
	for (size_t j = 0; j < s->n; j++) {
		const struct study_search_row *one = &s->rows[j];
		if (one->plain_replicas != 1 || one->family != w->family || isnan(one->saturated_rps) ||
		    w->plain_replicas * one->saturated_rps >= s->target_rps)
			continue;
		char label[1024] = "";
		if (s->label)
			s->label(s->label_ctx, j, label, sizeof label);
		snprintf(w->reason, sizeof w->reason, "%u replicas cannot serve %.6g req/s: one saturated at %.6g req/s "
		         "(%.120s)", w->plain_replicas, s->target_rps, one->saturated_rps, label);
		return 1;
	}
	return 0;
}

/* Whether row i could still be the answer: within the budget, or no dearer than an answer found. */
static int study_search_can_win(const struct study_search *s, size_t i)
{
	const struct study_search_row *w = &s->rows[i];
	if (s->exhaustive)
		return 1;
	if (s->budget > 0)
		return w->cost <= s->budget;
	return w->cost <= s->best_cost;
}

void study_search_measured(struct study_search *s, size_t i)
{
	const struct study_search_row *w = &s->rows[i];
	if (w->status == STUDY_SR_OK && s->target_rps > 0 && w->capacity >= s->target_rps && w->cost < s->best_cost)
		s->best_cost = w->cost;
}

size_t study_search_next(struct study_search *s)
{
	while (s->next < s->n) {
		size_t i = s->order[s->next++];
		if (s->rows[i].status != STUDY_SR_TODO || (s->part_n && i % s->part_n != s->part_i - 1))
			continue;                         /* done, or another part's */
		if (!study_search_can_win(s, i)) {
			s->rows[i].status = STUDY_SR_SKIPPED;
			continue;
		}
		if (study_search_bounded(s, i)) {
			s->rows[i].status = STUDY_SR_PRUNED;
			continue;
		}
		return i;
	}
	return SIZE_MAX;
}

size_t study_search_answer(const struct study_search *s)
{
	size_t best = SIZE_MAX;
	int target = s->target_rps > 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct study_search_row *w = &s->rows[i];
		if (w->status != STUDY_SR_OK || (target ? w->capacity < s->target_rps : w->cost > s->budget))
			continue;
		if (best == SIZE_MAX) {
			best = i;
			continue;
		}
		const struct study_search_row *b = &s->rows[best];
		if (target ? w->cost < b->cost || (w->cost == b->cost && w->capacity > b->capacity)
		           : w->capacity > b->capacity || (w->capacity == b->capacity && w->cost < b->cost))
			best = i;
	}
	return best;
}

size_t study_search_pareto(const struct study_search *s, size_t *front)
{
	size_t n = 0;
	double most = -1;
	for (size_t k = 0; k < s->n; k++) {
		size_t i = s->order[k];
		const struct study_search_row *w = &s->rows[i];
		if (w->status != STUDY_SR_OK || w->capacity <= most)
			continue;
		if (n && s->rows[front[n - 1]].cost == w->cost)
			n--;                             /* the same cost, more capacity: it takes the place */
		front[n++] = i;
		most = w->capacity;
	}
	return n;
}

void study_front_mark(const double *per_user, const double *per_gpu, size_t n, int *on_front)
{
	for (size_t i = 0; i < n; i++) {
		on_front[i] = 1;
		for (size_t k = 0; k < n && on_front[i]; k++)
			if (k != i && per_user[k] >= per_user[i] && per_gpu[k] >= per_gpu[i] &&
			    (per_user[k] > per_user[i] || per_gpu[k] > per_gpu[i]))
				on_front[i] = 0;
	}
}

int study_search_run(struct study_search *s, study_search_measure_fn measure, void *ctx, char *err, size_t errlen)
{
	for (size_t i = study_search_next(s); i != SIZE_MAX; i = study_search_next(s)) {
		if (measure(ctx, &s->rows[i], i, err, errlen) != 0)
			return -1;
		study_search_measured(s, i);
	}
	return 0;
}
