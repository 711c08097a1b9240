/* policies/fleet.c: LLM replicas behind a router (fleet.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet.h"
#include "../util/grow.h"

void fleet_fini(struct pol_fleet *f)
{
	for (uint32_t i = 0; f->rep && i < f->n; i++) {
		if (f->rep[i].st && f->policy->fini)
			f->policy->fini(f->rep[i].st);
		free(f->rep[i].st);
		free(f->rep[i].due);
	}
	free(f->rep);
	free(f->view_outstanding);
	free(f->view_kv_used);
	free(f->view_kv_blocks);
	if (f->router_state && f->router->fini)
		f->router->fini(f->router_state);
	free(f->router_state);
	if (f->decode_router_state && f->router->fini)
		f->router->fini(f->decode_router_state);
	free(f->decode_router_state);
	memset(f, 0, sizeof *f);
}

/* A router's state for a pool of n, its knobs params (NULL: their defaults), or NULL (out of memory). */
static void *fleet_router_state(const struct router_ops *router, uint32_t n, const struct opt_set *params)
{
	struct opt_set defaults;
	if (!params) {
		opt_defaults(&defaults, router->params, router->nparams);
		params = &defaults;
	}
	void *st = calloc(1, router->state_size ? router->state_size : 1);
	if (st && router->init && router->init(st, n, params) != 0) {
		free(st);
		st = NULL;
	}
	return st;
}

int fleet_init(struct pol_fleet *f, const struct pol_ops *policy, const struct router_ops *router,
               const struct opt_set *router_params, uint32_t n, int64_t refresh_ns, const struct pol_env *env, const struct pol_env *replica_env,
               const struct fleet_disagg *dis, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	f->policy = policy;
	f->router = router;
	f->n = n;
	f->refresh_ns = refresh_ns;
	if (dis && dis->prefill) {
		if (dis->prefill >= n || !dis->move_s || !dis->pairs || !dis->layers) {
			snprintf(err, errlen, "a disaggregated fleet of %u replicas with %u for prompts: each pool needs one, "
			         "and moves a price", n, dis->prefill);
			return -1;
		}
		f->dis = *dis;
	}
	f->rep = calloc(n, sizeof *f->rep);
	f->view_outstanding = calloc(n, sizeof *f->view_outstanding);
	f->view_kv_used = calloc(n, sizeof *f->view_kv_used);
	f->view_kv_blocks = calloc(n, sizeof *f->view_kv_blocks);
	f->router_state = fleet_router_state(router, f->dis.prefill ? f->dis.prefill : n, router_params);
	if (f->dis.prefill)
		f->decode_router_state = fleet_router_state(router, n - f->dis.prefill, router_params);
	if (!f->rep || !f->view_outstanding || !f->view_kv_used || !f->view_kv_blocks || !f->router_state ||
	    (f->dis.prefill && !f->decode_router_state)) {
		fleet_fini(f);
		snprintf(err, errlen, "out of memory setting up %u replicas", n);
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct pol_env one = replica_env ? replica_env[i] : *env;
		one.workers = 1;              /* each replica's policy sees its own device alone */
		one.params = env->params;
		one.prefill_only = i < f->dis.prefill;
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

/* The router's choice among the pool of replicas [first, first + n), as a global index. */
static uint32_t fleet_route(struct pol_fleet *f, uint32_t first, uint32_t n, void *state, const struct pol_request *r)
{
	if (f->refresh_ns == 0)
		for (uint32_t i = first; i < first + n; i++) {
			f->view_outstanding[i] = f->rep[i].outstanding;
			f->view_kv_used[i] = f->rep[i].kv_used;
		}
	struct router_view v = { .n = n, .outstanding = f->view_outstanding + first, .kv_used = f->view_kv_used + first,
	                         .kv_blocks = f->view_kv_blocks + first };
	uint32_t k = f->router->choose(&v, r, state);
	return first + (k < n ? k : n - 1);      /* a router's contract; kept safe rather than trusted */
}

void fleet_arrive(struct pol_fleet *f, struct pol_request *r, int64_t now_ns)
{
	fleet_observe(f, now_ns);
	uint32_t k = fleet_route(f, 0, f->dis.prefill ? f->dis.prefill : f->n, f->router_state, r);
	r->replica = k;
	struct fleet_replica *p = &f->rep[k];
	p->routed++;
	fleet_outstanding_by(p, now_ns, +1);
	f->policy->on_arrival(p->st, r, now_ns);
}

static int fleet_move_before(const struct fleet_move *a, const struct fleet_move *b)
{
	return a->end_ns < b->end_ns || (a->end_ns == b->end_ns && a->id < b->id);
}

/* Moves m into p's heap; 0, or -1 out of memory. */
static int fleet_due_push(struct fleet_replica *p, struct fleet_move m)
{
	if (p->ndue == p->due_cap) {
		size_t cap = p->due_cap;
		if (GROW(p->due, cap, cap + 1, 16) != 0 || cap > UINT32_MAX)
			return -1;
		p->due_cap = (uint32_t)cap;
	}
	uint32_t i = p->ndue++;
	while (i > 0 && fleet_move_before(&m, &p->due[(i - 1) / 2])) {
		p->due[i] = p->due[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	p->due[i] = m;
	return 0;
}

static struct pol_request *fleet_due_pop(struct fleet_replica *p)
{
	struct pol_request *r = p->due[0].r;
	struct fleet_move last = p->due[--p->ndue];
	uint32_t i = 0;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= p->ndue)
			break;
		if (c + 1 < p->ndue && fleet_move_before(&p->due[c + 1], &p->due[c]))
			c++;
		if (!fleet_move_before(&p->due[c], &last))
			break;
		p->due[i] = p->due[c];
		i = c;
	}
	p->due[i] = last;
	return r;
}

/* When the prompt of r, which ran in t on prefill replica p, is on a decode
 * replica (fleet.h): after the iteration, or layer by layer with it. */
static int64_t fleet_move_end(struct pol_fleet *f, struct fleet_replica *p, const struct pol_task *t,
                              const struct pol_request *r, double *bytes)
{
	const struct fleet_disagg *d = &f->dis;
	*bytes = (double)r->input_len * d->kv_bytes_per_token;
	double pair = *bytes / d->pairs;
	int64_t free_ns = p->link_free_ns > t->end_ns ? p->link_free_ns : t->end_ns;
	int64_t end;
	if (!d->layerwise) {
		end = free_ns + llround(d->move_s(d->link, pair, &f->move_extrapolated) * 1e9);
	} else {
		/* two stages over the layers: layer i is computed by start + i x P/L, then sent (m each) */
		double layer = (double)(t->end_ns - t->start_ns) / d->layers;
		double m = d->move_s(d->link, pair / d->layers, &f->move_extrapolated) * 1e9;
		double pipeline = (double)t->start_ns + layer + (d->layers - 1) * (layer > m ? layer : m) + m;
		double queued = (double)p->link_free_ns + d->layers * m;
		end = llround(pipeline > queued ? pipeline : queued);
		if (end < t->end_ns)
			end = t->end_ns;
	}
	p->link_free_ns = end;
	return end;
}

/* After an iteration on prefill replica p: each member whose prompt ran
 * (its first token out, not done) moves to a decode replica. A prefill
 * replica lets a request go once its first token is out, so any member with
 * one token out got it in this iteration. 0, or -1. */
static int fleet_hand_off(struct pol_fleet *f, struct fleet_replica *p, const struct pol_task *t)
{
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		if (r->next_node != 1 || pol_req_done(r))
			continue;                 /* a prompt still being chunked, or a request of one token, done here */
		double bytes;
		int64_t end = fleet_move_end(f, p, t, r, &bytes);
		uint32_t k = fleet_route(f, f->dis.prefill, f->n - f->dis.prefill, f->decode_router_state, r);
		struct fleet_replica *q = &f->rep[k];
		fleet_outstanding_by(p, t->end_ns, -1);
		q->routed++;
		fleet_outstanding_by(q, t->end_ns, +1);
		double s = (double)(end - t->end_ns) * 1e-9;
		p->moves++, q->moves++;
		p->moved_bytes += bytes, q->moved_bytes += bytes;
		p->move_s += s, q->move_s += s;
		r->first_token_ns = r->last_token_ns = end;     /* the user sees it when the decode replica has it */
		r->kv_ready = r->input_len;
		r->replica = k;
		if (fleet_due_push(q, (struct fleet_move){ end, r->id, r }) != 0)
			return -1;
	}
	return 0;
}

int fleet_next_task(struct pol_fleet *f, uint32_t device, int64_t now_ns, struct pol_task *t, int64_t *wake_ns)
{
	fleet_observe(f, now_ns);
	struct fleet_replica *p = &f->rep[device];
	while (p->ndue && p->due[0].end_ns <= now_ns) {     /* moves that have arrived, in arrival order */
		struct pol_request *r = fleet_due_pop(p);
		f->policy->on_arrival(p->st, r, now_ns);
	}
	int got = f->policy->next_task(p->st, 0, now_ns, t, wake_ns);
	if (got < 0)
		return -1;
	if (!got && p->ndue && p->due[0].end_ns < *wake_ns)
		*wake_ns = p->due[0].end_ns;
	p->kv_used = got ? t->kv_blocks_held : 0;
	if (p->kv_used > p->kv_peak)
		p->kv_peak = p->kv_used;
	return got;
}

int fleet_task_done(struct pol_fleet *f, struct pol_task *t, int64_t now_ns)
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
	return dev < f->dis.prefill ? fleet_hand_off(f, p, t) : 0;
}

int64_t fleet_next_move_ns(const struct pol_fleet *f, uint32_t device)
{
	const struct fleet_replica *p = &f->rep[device];
	return p->ndue ? p->due[0].end_ns : INT64_MAX;
}

uint32_t fleet_decode_run(const struct pol_fleet *f, uint32_t device, const struct pol_task *t, uint32_t k_max,
                          uint64_t *held)
{
	return f->policy->decode_run(f->rep[device].st, 0, t, k_max, held);
}

void fleet_kv_now(struct pol_fleet *f, uint32_t device, uint64_t blocks)
{
	f->rep[device].kv_used = blocks;
}

void fleet_decode_advance(struct pol_fleet *f, uint32_t device, struct pol_task *t, uint32_t k, const int64_t *ends,
                          uint64_t *held)
{
	struct fleet_replica *p = &f->rep[device];
	/* a scrape due at the run's end sees the replicas as eng_kv_now just set them (of the first
	 * boundary at or after the scrape instant, as one by one), before this run's last iteration's blocks */
	fleet_observe(f, ends[k - 1]);
	f->policy->decode_advance(p->st, 0, t, k, held);
	/* iterations 1..k-1 end and 2..k start as fleet_task_done and fleet_next_task would have them */
	int64_t start = t->start_ns;
	for (uint32_t j = 0; j + 1 < k; j++) {
		p->busy_ns += ends[j] - start;
		p->kv_block_ns += (double)held[j] * (double)(ends[j] - start);
		start = ends[j];
	}
	p->kv_used = held[k - 1];
	if (p->kv_used > p->kv_peak)
		p->kv_peak = p->kv_used;
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
			.pool = !f->dis.prefill ? FLEET_POOL_ANY : i < f->dis.prefill ? FLEET_POOL_PREFILL : FLEET_POOL_DECODE,
			.moves = p->moves, .moved_bytes = p->moved_bytes, .move_s = p->move_s,
		};
	}
}
