/* policies/router/prefix_affinity.c: the cache-aware routing of vLLM's and
 * SGLang's routers (vllm-router v0.1.15 and sglang-gateway v0.3.1 run the
 * same algorithm, `cache_aware`, with the same defaults; GPUStack's and
 * SMG's router documentation describe it). The router keeps its own record
 * of what it sent where, never the replicas' caches:
 *  - when the load is out of balance (the busiest replica has more than
 *    --balance-abs-threshold requests outstanding over the idlest and more
 *    than --balance-rel-threshold times as many), the least loaded replica;
 *  - else, when some replica was sent this request's prefix before and the
 *    share of the prompt that prefix covers exceeds --cache-threshold,
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

/* The knobs, named and defaulted as vllm-router's and sglang-gateway's flags of the same names. */
static const struct opt_def pa_params[] = {
	{ "cache-threshold", OPT_DOUBLE, "0.3", 0, 1, 0, "the share of a prompt that a replica's record must "
	  "match for the prompt to go there" },
	{ "balance-abs-threshold", OPT_UINT, "64", 0, 1e9, 0, "out of balance (the least loaded replica then) when "
	  "the busiest has more than this many requests outstanding over the idlest, and --balance-rel-threshold "
	  "times as many" },
	{ "balance-rel-threshold", OPT_DOUBLE, "1.5", 0, 1e9, 0, "out of balance when the busiest replica has more "
	  "than this many times the idlest's outstanding requests, and --balance-abs-threshold more" },
};

/* What was sent where, by id: an open-addressing table whose every id has a row of row_bytes. */
struct pa_table {
	uint64_t *ids;                   /* [cap] where full */
	uint8_t *full;                   /* [cap] 1: the slot holds an id (any value may be one) */
	uint8_t *rows;                   /* [cap * row_bytes], zeros when entered */
	size_t cap, used, row_bytes;
};

struct pa_state {
	uint32_t n;
	double cache_threshold, balance_rel;   /* the knobs */
	uint64_t balance_abs;
	uint64_t *record;                /* [n] tokens sent that matched nothing there */
	struct pa_table prefixes;        /* prefix id -> [n] uint32: the longest prefix_len of it sent to each replica */
	struct pa_table hashes;          /* hash id -> [words] uint64: the replicas it was sent to, a bit each */
	uint32_t words;                  /* 64-bit words a replica set */
	uint32_t *match;                 /* [n] scratch: this request's prompt tokens each replica was sent */
	uint64_t *alive;                 /* [words] scratch */
};

static void pa_table_free(struct pa_table *t)
{
	free(t->ids);
	free(t->full);
	free(t->rows);
}

/* An empty table of cap slots (a power of two); -1 out of memory. */
static int pa_table_init(struct pa_table *t, size_t cap, size_t row_bytes)
{
	*t = (struct pa_table){ .cap = cap, .row_bytes = row_bytes };
	t->ids = calloc(cap, sizeof *t->ids);
	t->full = calloc(cap, sizeof *t->full);
	t->rows = calloc(cap, row_bytes);
	if (!t->ids || !t->full || !t->rows) {
		pa_table_free(t);
		return -1;
	}
	return 0;
}

static size_t pa_table_slot(const struct pa_table *t, uint64_t id)
{
	size_t i = (size_t)(id * 0x9e3779b97f4a7c15u >> 17) & (t->cap - 1);
	while (t->full[i] && t->ids[i] != id)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/* id's row, or NULL when it was never entered. */
static void *pa_table_find(const struct pa_table *t, uint64_t id)
{
	size_t i = pa_table_slot(t, id);
	return t->full[i] ? t->rows + i * t->row_bytes : NULL;
}

/* id's row, entered (zeros) if new; NULL out of memory. */
static void *pa_table_entry(struct pa_table *t, uint64_t id)
{
	if ((t->used + 1) * 2 > t->cap) {            /* at most half full */
		struct pa_table g;
		if (pa_table_init(&g, t->cap * 2, t->row_bytes) != 0)
			return NULL;
		for (size_t i = 0; i < t->cap; i++)
			if (t->full[i]) {
				size_t j = pa_table_slot(&g, t->ids[i]);
				g.ids[j] = t->ids[i];
				g.full[j] = 1;
				memcpy(g.rows + j * t->row_bytes, t->rows + i * t->row_bytes, t->row_bytes);
			}
		g.used = t->used;
		pa_table_free(t);
		*t = g;
	}
	size_t i = pa_table_slot(t, id);
	if (!t->full[i]) {
		t->ids[i] = id;
		t->full[i] = 1;
		t->used++;
	}
	return t->rows + i * t->row_bytes;
}

static void pa_fini(void *state)
{
	struct pa_state *s = state;
	free(s->record);
	pa_table_free(&s->prefixes);
	pa_table_free(&s->hashes);
	free(s->match);
	free(s->alive);
	memset(s, 0, sizeof *s);
}

static int pa_init(void *state, uint32_t n, const struct opt_set *params)
{
	struct pa_state *s = state;
	memset(s, 0, sizeof *s);
	s->n = n;
	s->cache_threshold = opt_double(params, "cache-threshold");
	s->balance_abs = opt_uint(params, "balance-abs-threshold");
	s->balance_rel = opt_double(params, "balance-rel-threshold");
	s->words = (n + 63) / 64;
	s->record = calloc(n, sizeof *s->record);
	s->match = calloc(n, sizeof *s->match);
	s->alive = calloc(s->words, sizeof *s->alive);
	if (!s->record || !s->match || !s->alive || pa_table_init(&s->prefixes, 64, n * sizeof(uint32_t)) != 0 ||
	    pa_table_init(&s->hashes, 64, s->words * sizeof(uint64_t)) != 0) {
		pa_fini(s);
		return -1;
	}
	return 0;
}

/* s->match[i]: the tokens of r's prompt its leading hash ids sent to replica i cover. */
static void pa_hash_matches(struct pa_state *s, const struct pol_request *r)
{
	memset(s->match, 0, s->n * sizeof *s->match);
	for (uint32_t w = 0; w < s->words; w++)
		s->alive[w] = w + 1 < s->words || s->n % 64 == 0 ? ~(uint64_t)0 : ((uint64_t)1 << (s->n % 64)) - 1;
	uint64_t covered = 0;
	for (uint32_t k = 0; k < r->nhash; k++) {
		const uint64_t *sent = pa_table_find(&s->hashes, r->hash_ids[k]);
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
	const uint32_t *lens = pa_table_find(&s->prefixes, r->prefix_id);
	for (uint32_t k = 0; lens && k < s->n; k++)
		s->match[k] = lens[k] < r->prefix_len ? lens[k] : r->prefix_len;
}

/* Replica k was sent r: its prefix is known there now. Out of memory: unrecorded, routing still sound. */
static void pa_remember(struct pa_state *s, const struct pol_request *r, uint32_t k)
{
	if (r->hash_ids) {
		for (uint32_t j = 0; j < r->nhash; j++) {
			uint64_t *sent = pa_table_entry(&s->hashes, r->hash_ids[j]);
			if (!sent)
				return;
			sent[k / 64] |= (uint64_t)1 << (k % 64);
		}
	} else if (r->prefix_id) {
		uint32_t *mine = pa_table_entry(&s->prefixes, r->prefix_id);
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
	if (hi - lo > s->balance_abs && hi > s->balance_rel * lo) {
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
		if (r->input_len && (double)best_match / r->input_len > s->cache_threshold) {
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
	.params = pa_params,
	.nparams = sizeof pa_params / sizeof pa_params[0],
	.init = pa_init,
	.fini = pa_fini,
	.choose = pa_choose,
};
