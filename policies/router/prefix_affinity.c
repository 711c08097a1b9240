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
 * (policy.h), or its prompt's hash ids (a Mooncake trace's: an id stands for
 * every token up to its block's end, so a replica sent ids 0..k-1 of a prompt
 * was sent those k blocks of it); the record grows with what it routes and
 * is never trimmed (the real routers evict theirs on a timer, which this
 * leaves out). */
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
	uint64_t *hids;                  /* [hcap] hash ids, where hfull; open addressing */
	uint8_t *hfull;                  /* [hcap] 1: a slot holds a hash id (any value may be an id) */
	uint64_t *sent;                  /* [hcap * words] the replicas that hash id was sent to, a bit each */
	size_t hcap, hused;
	uint32_t words;                  /* 64-bit words a replica set */
	uint32_t *match;                 /* [n] scratch: this request's prompt tokens each replica was sent */
	uint64_t *alive;                 /* [words] scratch */
};

static void pa_fini(void *state)
{
	struct pa_state *s = state;
	free(s->record);
	free(s->ids);
	free(s->lens);
	free(s->hids);
	free(s->hfull);
	free(s->sent);
	free(s->match);
	free(s->alive);
	memset(s, 0, sizeof *s);
}

static int pa_init(void *state, uint32_t n)
{
	struct pa_state *s = state;
	s->n = n;
	s->cap = s->hcap = 64;
	s->words = (n + 63) / 64;
	s->record = calloc(n, sizeof *s->record);
	s->ids = calloc(s->cap, sizeof *s->ids);
	s->lens = calloc(s->cap * n, sizeof *s->lens);
	s->hids = calloc(s->hcap, sizeof *s->hids);
	s->hfull = calloc(s->hcap, sizeof *s->hfull);
	s->sent = calloc(s->hcap * s->words, sizeof *s->sent);
	s->match = calloc(n, sizeof *s->match);
	s->alive = calloc(s->words, sizeof *s->alive);
	if (!s->record || !s->ids || !s->lens || !s->hids || !s->hfull || !s->sent || !s->match || !s->alive) {
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

/* ---- hash ids: which replicas each was sent to ---- */

static size_t pa_hash_slot(const struct pa_state *s, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15u >> 17) & (s->hcap - 1);
	while (s->hfull[i] && s->hids[i] != id)
		i = (i + 1) & (s->hcap - 1);
	return i;
}

/* The replica set of hash id, entered (empty) if new; NULL out of memory. */
static uint64_t *pa_hash_entry(struct pa_state *s, uint64_t id)
{
	if ((s->hused + 1) * 2 > s->hcap) {          /* at most half full */
		struct pa_state g = { .hcap = s->hcap * 2, .words = s->words };
		g.hids = calloc(g.hcap, sizeof *g.hids);
		g.hfull = calloc(g.hcap, sizeof *g.hfull);
		g.sent = calloc(g.hcap * s->words, sizeof *g.sent);
		if (!g.hids || !g.hfull || !g.sent) {
			free(g.hids);
			free(g.hfull);
			free(g.sent);
			return NULL;
		}
		for (size_t i = 0; i < s->hcap; i++)
			if (s->hfull[i]) {
				size_t j = pa_hash_slot(&g, s->hids[i]);
				g.hids[j] = s->hids[i];
				g.hfull[j] = 1;
				memcpy(g.sent + j * s->words, s->sent + i * s->words, s->words * sizeof *g.sent);
			}
		free(s->hids);
		free(s->hfull);
		free(s->sent);
		s->hids = g.hids;
		s->hfull = g.hfull;
		s->sent = g.sent;
		s->hcap = g.hcap;
	}
	size_t i = pa_hash_slot(s, id);
	if (!s->hfull[i]) {
		s->hids[i] = id;
		s->hfull[i] = 1;
		s->hused++;
	}
	return s->sent + i * s->words;
}

/* s->match[i]: the tokens of r's prompt its leading hash ids sent to replica i cover. */
static void pa_hash_matches(struct pa_state *s, const struct pol_request *r)
{
	memset(s->match, 0, s->n * sizeof *s->match);
	for (uint32_t w = 0; w < s->words; w++)
		s->alive[w] = w + 1 < s->words || s->n % 64 == 0 ? ~(uint64_t)0 : ((uint64_t)1 << (s->n % 64)) - 1;
	uint64_t covered = 0;
	for (uint32_t k = 0; k < r->nhash; k++) {
		size_t i = pa_hash_slot(s, r->hash_ids[k]);
		const uint64_t *sent = s->hfull[i] ? s->sent + i * s->words : NULL;
		uint64_t any = 0;
		for (uint32_t w = 0; w < s->words; w++)
			any |= s->alive[w] &= sent ? sent[w] : 0;
		if (!any)
			break;
		covered = (uint64_t)(k + 1) * r->hash_block < r->input_len ? (uint64_t)(k + 1) * r->hash_block : r->input_len;
		for (uint32_t w = 0; w < s->words; w++)
			for (uint64_t a = s->alive[w]; a; a &= a - 1)
				s->match[w * 64 + (uint32_t)__builtin_ctzll(a)] = (uint32_t)covered;
	}
}

/* s->match[i]: the tokens of r's prompt its prefix (an id's, or its hash ids) sent to replica i covers. */
static void pa_matches(struct pa_state *s, const struct pol_request *r)
{
	if (r->hash_ids) {
		pa_hash_matches(s, r);
		return;
	}
	memset(s->match, 0, s->n * sizeof *s->match);
	if (!r->prefix_id)
		return;
	size_t i = pa_slot(s, r->prefix_id);
	for (uint32_t k = 0; s->ids[i] && k < s->n; k++)
		s->match[k] = s->lens[i * s->n + k] < r->prefix_len ? s->lens[i * s->n + k] : r->prefix_len;
}

/* Replica k was sent r: its prefix is known there now. Out of memory: unrecorded, routing still sound. */
static void pa_remember(struct pa_state *s, const struct pol_request *r, uint32_t k)
{
	if (r->hash_ids) {
		for (uint32_t j = 0; j < r->nhash; j++) {
			uint64_t *sent = pa_hash_entry(s, r->hash_ids[j]);
			if (!sent)
				return;
			sent[k / 64] |= (uint64_t)1 << (k % 64);
		}
	} else if (r->prefix_id) {
		uint32_t *mine = pa_entry(s, r->prefix_id);
		if (mine && mine[k] < r->prefix_len)
			mine[k] = r->prefix_len;
	}
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
	pa_matches(s, r);
	uint32_t k;
	if (hi - lo > ROUTER_BALANCE_ABS && hi > ROUTER_BALANCE_REL * lo) {
		k = pa_least_loaded(v);
	} else {
		uint32_t best = 0, best_match = 0;
		for (uint32_t i = 0; i < v->n; i++) {
			uint32_t m = s->match[i];
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
	s->record[k] += r->input_len - s->match[k];
	pa_remember(s, r, k);
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
