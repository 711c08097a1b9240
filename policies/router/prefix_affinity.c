/* policies/router/prefix_affinity.c: the cache-aware routing of vLLM's and
 * SGLang's routers (vllm-router v0.1.15 and sglang-gateway v0.3.1 run the
 * same algorithm, `cache_aware`, with the same defaults; GPUStack's and
 * SMG's router documentation describe it). The router keeps its own record
 * of what it sent where, never the replicas' caches:
 *  - when the load is out of balance (the busiest replica has more than
 *    ROUTER_BALANCE_ABS requests outstanding over the idlest and more than
 *    ROUTER_BALANCE_REL times as many), the least loaded replica;
 *  - else, when some replica was sent this request's prefix before and the
 *    share of the prompt that prefix covers exceeds ROUTER_CACHE_THRESHOLD,
 *    the replica with the longest such match (ties: fewer outstanding, then
 *    the lowest index);
 *  - else the replica whose record is smallest (the tokens sent to it that
 *    matched nothing there), spreading new prefixes.
 * Prefixes are a request's prefix_id over its first prefix_len tokens
 * (policy.h); the record grows with what it routes and is never trimmed
 * (the real routers evict theirs on a timer, which this leaves out). */
#include <stdlib.h>
#include <string.h>
#include "router.h"

#define ROUTER_CACHE_THRESHOLD 0.3    /* --cache-threshold's default */
#define ROUTER_BALANCE_ABS 64         /* --balance-abs-threshold's default */
#define ROUTER_BALANCE_REL 1.5        /* --balance-rel-threshold's default */

struct pa_state {
	uint32_t n;
	uint64_t *record;                /* [n] tokens sent that matched nothing there */
	uint64_t *ids;                   /* [cap] prefix ids (0: empty slot); open addressing */
	uint32_t *lens;                  /* [cap * n] the longest prefix_len of that id sent to each replica */
	size_t cap, used;
};

static void pa_fini(void *state)
{
	struct pa_state *s = state;
	free(s->record);
	free(s->ids);
	free(s->lens);
	memset(s, 0, sizeof *s);
}

static int pa_init(void *state, uint32_t n)
{
	struct pa_state *s = state;
	s->n = n;
	s->cap = 64;
	s->record = calloc(n, sizeof *s->record);
	s->ids = calloc(s->cap, sizeof *s->ids);
	s->lens = calloc(s->cap * n, sizeof *s->lens);
	if (!s->record || !s->ids || !s->lens) {
		pa_fini(s);
		return -1;
	}
	return 0;
}

static size_t pa_slot(const struct pa_state *s, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15u) & (s->cap - 1);
	while (s->ids[i] && s->ids[i] != id)
		i = (i + 1) & (s->cap - 1);
	return i;
}

/* The lens of prefix id, entered (zeros) if new; NULL out of memory. */
static uint32_t *pa_entry(struct pa_state *s, uint64_t id)
{
	if ((s->used + 1) * 2 > s->cap) {            /* at most half full */
		struct pa_state g = { .n = s->n, .record = s->record, .cap = s->cap * 2 };
		g.ids = calloc(g.cap, sizeof *g.ids);
		g.lens = calloc(g.cap * s->n, sizeof *g.lens);
		if (!g.ids || !g.lens) {
			free(g.ids);
			free(g.lens);
			return NULL;
		}
		for (size_t i = 0; i < s->cap; i++)
			if (s->ids[i]) {
				size_t j = pa_slot(&g, s->ids[i]);
				g.ids[j] = s->ids[i];
				memcpy(g.lens + j * s->n, s->lens + i * s->n, s->n * sizeof *g.lens);
			}
		free(s->ids);
		free(s->lens);
		s->ids = g.ids;
		s->lens = g.lens;
		s->cap = g.cap;
	}
	size_t i = pa_slot(s, id);
	if (!s->ids[i]) {
		s->ids[i] = id;
		s->used++;
	}
	return s->lens + i * s->n;
}

static uint32_t pa_least_loaded(const struct router_view *v)
{
	uint32_t best = 0;
	for (uint32_t i = 1; i < v->n; i++)
		if (v->outstanding[i] < v->outstanding[best])
			best = i;
	return best;
}

static uint32_t pa_choose(const struct router_view *v, const struct pol_request *r, void *state)
{
	struct pa_state *s = state;
	uint32_t lo = v->outstanding[0], hi = v->outstanding[0];
	for (uint32_t i = 1; i < v->n; i++) {
		lo = v->outstanding[i] < lo ? v->outstanding[i] : lo;
		hi = v->outstanding[i] > hi ? v->outstanding[i] : hi;
	}
	const uint32_t *lens = NULL;
	if (r->prefix_id) {
		size_t i = pa_slot(s, r->prefix_id);
		lens = s->ids[i] ? s->lens + i * s->n : NULL;
	}
	uint32_t k;
	if (hi - lo > ROUTER_BALANCE_ABS && hi > ROUTER_BALANCE_REL * lo) {
		k = pa_least_loaded(v);
	} else {
		uint32_t best = 0, best_match = 0;
		for (uint32_t i = 0; lens && i < v->n; i++) {
			uint32_t m = lens[i] < r->prefix_len ? lens[i] : r->prefix_len;
			if (m > best_match || (m == best_match && m > 0 && v->outstanding[i] < v->outstanding[best])) {
				best = i;
				best_match = m;
			}
		}
		if (r->input_len && (double)best_match / r->input_len > ROUTER_CACHE_THRESHOLD) {
			k = best;
		} else {
			k = 0;
			for (uint32_t i = 1; i < v->n; i++)
				if (s->record[i] < s->record[k])
					k = i;
		}
	}
	/* the record: what matched nothing there grows it; the prefix is now known there */
	uint32_t m = lens ? (lens[k] < r->prefix_len ? lens[k] : r->prefix_len) : 0;
	s->record[k] += r->input_len - m;
	if (r->prefix_id) {
		uint32_t *mine = pa_entry(s, r->prefix_id);   /* out of memory: unrecorded, routing still sound */
		if (mine && mine[k] < r->prefix_len)
			mine[k] = r->prefix_len;
	}
	return k;
}

const struct router_ops prefix_affinity_router_ops = {
	.name = "prefix-affinity",
	.help = "vLLM's and SGLang's cache-aware routing: where this prefix went before, else the smallest record, "
	        "the least loaded when out of balance",
	.state_size = sizeof(struct pa_state),
	.init = pa_init,
	.fini = pa_fini,
	.choose = pa_choose,
};
