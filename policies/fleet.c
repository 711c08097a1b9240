/* policies/fleet.c: LLM replicas behind a router (fleet.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet.h"

void fleet_fini(struct pol_fleet *f)
{
	for (uint32_t i = 0; f->rep && i < f->n; i++) {
		if (f->rep[i].st && f->policy->fini)
			f->policy->fini(f->rep[i].st);
		free(f->rep[i].st);
	}
	free(f->rep);
	free(f->view_outstanding);
	free(f->view_kv_used);
	free(f->view_kv_blocks);
	if (f->router_state && f->router->fini)
		f->router->fini(f->router_state);
	free(f->router_state);
	memset(f, 0, sizeof *f);
}

int fleet_init(struct pol_fleet *f, const struct pol_ops *policy, const struct router_ops *router, uint32_t n,
               int64_t refresh_ns, const struct pol_env *env, const struct pol_env *replica_env, char *err,
               size_t errlen)
{
	memset(f, 0, sizeof *f);
	f->policy = policy;
	f->router = router;
	f->n = n;
	f->refresh_ns = refresh_ns;
	f->rep = calloc(n, sizeof *f->rep);
	f->view_outstanding = calloc(n, sizeof *f->view_outstanding);
	f->view_kv_used = calloc(n, sizeof *f->view_kv_used);
	f->view_kv_blocks = calloc(n, sizeof *f->view_kv_blocks);
	f->router_state = calloc(1, router->state_size ? router->state_size : 1);
	if (f->router_state && router->init && router->init(f->router_state, n) != 0) {
		free(f->router_state);
		f->router_state = NULL;
	}
	if (!f->rep || !f->view_outstanding || !f->view_kv_used || !f->view_kv_blocks || !f->router_state) {
		fleet_fini(f);
		snprintf(err, errlen, "out of memory setting up %u replicas", n);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pol_env one = replica_env ? replica_env[i] : *env;
		one.workers = 1;              /* each replica's policy sees its own device alone */
		one.params = env->params;
		f->rep[i].kv_blocks = one.kv_blocks;
		f->view_kv_blocks[i] = one.kv_blocks;
		f->rep[i].st = calloc(1, policy->state_size ? policy->state_size : 1);
		if (!f->rep[i].st) {
			fleet_fini(f);
			snprintf(err, errlen, "out of memory setting up %u replicas", n);
			return -1;
		}
		if (policy->init(f->rep[i].st, &one, err, errlen) != 0) {
			free(f->rep[i].st);       /* init failed: nothing of it to fini */
			f->rep[i].st = NULL;
			fleet_fini(f);
			return -1;
		}
	}
	return 0;
}

/* Before an event at now counts: a scrape instant passed since the last
 * event, so the router's view becomes the state as it stands (that of the
 * instant: nothing changed between the last event and it). */
static void fleet_observe(struct pol_fleet *f, int64_t now_ns)
{
	if (!f->refresh_ns || now_ns < f->next_scrape_ns)
		return;
	for (uint32_t i = 0; i < f->n; i++) {
		f->view_outstanding[i] = f->rep[i].outstanding;
		f->view_kv_used[i] = f->rep[i].kv_used;
	}
	f->next_scrape_ns = (now_ns / f->refresh_ns + 1) * f->refresh_ns;
}

/* The outstanding count of replica p changes at now: its time integral first. */
static void fleet_outstanding_by(struct fleet_replica *p, int64_t now_ns, int delta)
{
	p->outstanding_ns += (double)p->outstanding * (double)(now_ns - p->last_change_ns);
	p->last_change_ns = now_ns;
	p->outstanding = (uint32_t)((int64_t)p->outstanding + delta);
	if (p->outstanding > p->max_outstanding)
		p->max_outstanding = p->outstanding;
}

void fleet_arrive(struct pol_fleet *f, struct pol_request *r, int64_t now_ns)
{
	fleet_observe(f, now_ns);
	int live = f->refresh_ns == 0;
	struct router_view v = { .n = f->n, .outstanding = f->view_outstanding, .kv_used = f->view_kv_used,
	                         .kv_blocks = f->view_kv_blocks };
	if (live) {
		for (uint32_t i = 0; i < f->n; i++) {
			f->view_outstanding[i] = f->rep[i].outstanding;
			f->view_kv_used[i] = f->rep[i].kv_used;
		}
	}
	uint32_t k = f->router->choose(&v, r, f->router_state);
	if (k >= f->n)
		k = f->n - 1;                 /* a router's contract; kept safe rather than trusted */
	r->replica = k;
	struct fleet_replica *p = &f->rep[k];
	p->routed++;
	fleet_outstanding_by(p, now_ns, +1);
	f->policy->on_arrival(p->st, r, now_ns);
}

int fleet_next_task(struct pol_fleet *f, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns)
{
	fleet_observe(f, now_ns);
	struct fleet_replica *p = &f->rep[device];
	int got = f->policy->next_task(p->st, 0, now_ns, t, wake_ns);
	p->kv_used = got ? t->kv_blocks_held : 0;
	if (p->kv_used > p->kv_peak)
		p->kv_peak = p->kv_used;
	return got;
}

void fleet_task_done(struct pol_fleet *f, struct pol_task *t, int64_t now_ns)
{
	fleet_observe(f, now_ns);
	uint32_t dev = t->device;
	struct fleet_replica *p = &f->rep[dev];
	p->busy_ns += t->end_ns - t->start_ns;
	p->kv_block_ns += (double)t->kv_blocks_held * (double)(t->end_ns - t->start_ns);
	t->device = 0;                    /* the replica's policy knows its one device as 0 */
	f->policy->on_task_done(p->st, t, now_ns);
	t->device = dev;
	if (t->finished) {
		p->completed += t->finished;
		fleet_outstanding_by(p, t->end_ns, -(int)t->finished);
	}
}

uint64_t fleet_kv_blocks(const struct pol_fleet *f)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < f->n; i++)
		sum += f->rep[i].kv_blocks;
	return sum;
}

size_t fleet_stats(const struct pol_fleet *f, struct pol_stat *out, size_t max)
{
	if (!f->policy->stats)
		return 0;
	size_t n = 0;
	for (uint32_t i = 0; i < f->n; i++) {
		struct pol_stat one[POL_MAX_STATS];
		size_t m = f->policy->stats(f->rep[i].st, one, max < POL_MAX_STATS ? max : POL_MAX_STATS);
		for (size_t k = 0; k < m; k++) {
			int largest = strstr(one[k].name, "fraction") || strcmp(one[k].name, "kv_blocks") == 0;
			if (i == 0)
				out[k] = one[k];
			else if (largest)
				out[k].value = one[k].value > out[k].value ? one[k].value : out[k].value;
			else
				out[k].value += one[k].value;
		}
		n = m;
	}
	return n;
}

void fleet_results(const struct pol_fleet *f, int64_t end_ns, struct fleet_replica_result *out)
{
	for (uint32_t i = 0; i < f->n; i++) {
		const struct fleet_replica *p = &f->rep[i];
		double span = end_ns > 0 ? (double)end_ns : 1;
		double area = p->outstanding_ns + (double)p->outstanding * (double)(end_ns - p->last_change_ns);
		double preemptions = 0, queried = 0, hits = 0, evictions = 0;
		struct pol_stat one[POL_MAX_STATS];
		size_t m = f->policy->stats ? f->policy->stats(p->st, one, POL_MAX_STATS) : 0;
		for (size_t k = 0; k < m; k++) {
			double *to = strcmp(one[k].name, "preemptions") == 0 ? &preemptions
			             : strcmp(one[k].name, "prefix_queried_blocks") == 0 ? &queried
			             : strcmp(one[k].name, "prefix_hit_blocks") == 0 ? &hits
			             : strcmp(one[k].name, "prefix_evictions") == 0 ? &evictions : NULL;
			if (to)
				*to = one[k].value;
		}
		out[i] = (struct fleet_replica_result){
			.routed = p->routed, .completed = p->completed, .busy_fraction = (double)p->busy_ns / span,
			.mean_outstanding = area / span, .max_outstanding = p->max_outstanding,
			.kv_peak_fraction = p->kv_blocks ? (double)p->kv_peak / (double)p->kv_blocks : 0,
			.kv_mean_fraction = p->kv_blocks ? p->kv_block_ns / ((double)p->kv_blocks * span) : 0,
			.preemptions = preemptions, .prefix_queried_blocks = queried, .prefix_hit_blocks = hits,
			.prefix_evictions = evictions,
		};
	}
}
