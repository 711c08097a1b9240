/* policies/llm/prefix_cache.c: vLLM V1's automatic prefix caching (prefix_cache.h). */
#include <stdlib.h>
#include <string.h>
#include "prefix_cache.h"

#define PC_NONE UINT32_MAX

/* splitmix64's finalizer: a well-mixed 64-bit key from a 64-bit input. */
static uint64_t pc_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15u;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* A request's two key bases, mixed once a call: its shared prefix's, for
 * its first `shared` blocks, and its own, for the rest. */
struct pc_keys {
	uint64_t prefix, own;
	uint32_t shared;              /* blocks with a shared key */
	int private_tail;             /* blocks from `shared` on are the request's alone (no session): a run's */
	const struct pol_request *r;  /* its hash ids, when it has them */
	uint32_t block_size;
	uint64_t hashed_mix;          /* the mix of the hash id last keyed, and the blocks whose last token lies in
	                               * its hashed block ([hashed_lo, hashed_hi]; lo > hi: none yet): Mooncake's 512
	                               * tokens are 32 blocks, which a call keys in a row */
	uint64_t hashed_lo, hashed_hi;
};

/* The blocks with a shared key: the prefix's whole blocks, or those whose
 * last token lies in the prompt's hashed blocks. */
static uint32_t pc_shared_blocks(const struct pol_request *r, uint32_t block_size)
{
	if (r->hash_ids)
		return (uint32_t)(((uint64_t)r->nhash * r->hash_block < r->input_len ? (uint64_t)r->nhash * r->hash_block
		                                                                       : r->input_len) / block_size);
	return r->prefix_id ? r->prefix_len / block_size : 0;
}

static struct pc_keys pc_keys_of(const struct pol_request *r, uint32_t block_size)
{
	/* past the shared prefix, a session's turn's blocks are its conversation's, which the next turn's
	 * prompt begins with; a request outside any session's are its own (an id no session has: ~id) */
	uint64_t own = r->session_id ? pc_mix(r->session_id) ^ 0x2545f4914f6cdd1du : pc_mix(~r->id);
	return (struct pc_keys){ .prefix = pc_mix(r->prefix_id), .own = own, .shared = pc_shared_blocks(r, block_size),
	                         .private_tail = !r->session_id, .r = r, .block_size = block_size, .hashed_lo = 1,
	                         .hashed_hi = 0 };
}

/* Block j: its prefix's key while the block lies within the shared prefix
 * (a hash id's: that of the hashed block holding its last token, which
 * stands for every token up to there), else its session's (odd and even
 * keys keep the two apart). */
static uint64_t pc_key(struct pc_keys *k, uint32_t j)
{
	if (j >= k->shared)
		return pc_mix(k->own ^ j) & ~(uint64_t)1;
	if (k->r->hash_ids) {
		if (j < k->hashed_lo || j > k->hashed_hi) {
			uint64_t hb = k->r->hash_block, bs = k->block_size, g = ((uint64_t)(j + 1) * bs - 1) / hb;
			k->hashed_mix = pc_mix(k->r->hash_ids[g] + 0x5bd1e995u);
			k->hashed_lo = (g * hb + 1 + bs - 1) / bs - 1;     /* (j + 1) bs - 1 in [g hb, (g + 1) hb) */
			k->hashed_hi = (g + 1) * hb / bs - 1;
		}
		return pc_mix(k->hashed_mix ^ j) | 1;
	}
	return pc_mix(k->prefix ^ j) | 1;
}

/* Whether block j is one of the request's private blocks (a run's when cached and not held). */
static int pc_private(const struct pc_keys *k, uint32_t j)
{
	return k->private_tail && j >= k->shared;
}

int pc_init(struct prefix_cache *pc, uint64_t capacity)
{
	memset(pc, 0, sizeof *pc);
	uint64_t nb = 1;
	while (nb < capacity * 2)
		nb <<= 1;
	pc->e = malloc((capacity ? capacity : 1) * sizeof *pc->e);
	pc->bucket = malloc(nb * sizeof *pc->bucket);
	if (!pc->e || !pc->bucket || capacity >= PC_NONE) {
		pc_fini(pc);
		return -1;
	}
	pc->mask = (uint32_t)(nb - 1);
	for (uint64_t i = 0; i < nb; i++)
		pc->bucket[i] = PC_NONE;
	for (uint64_t i = 0; i < capacity; i++)
		pc->e[i].next = i + 1 < capacity ? (uint32_t)(i + 1) : PC_NONE;
	pc->free_entry = capacity ? 0 : PC_NONE;
	pc->lru_head = pc->lru_tail = PC_NONE;
	return 0;
}

void pc_fini(struct prefix_cache *pc)
{
	free(pc->e);
	free(pc->bucket);
	memset(pc, 0, sizeof *pc);
}

static uint32_t pc_find(const struct prefix_cache *pc, uint64_t key)
{
	for (uint32_t i = pc->bucket[key & pc->mask]; i != PC_NONE; i = pc->e[i].next)
		if (pc->e[i].key == key && pc->e[i].kind == PC_BLOCK)
			return i;
	return PC_NONE;
}

/* The run of the request whose runs are keyed key that holds its block j. */
static uint32_t pc_find_run(const struct prefix_cache *pc, uint64_t key, uint32_t j)
{
	if (!pc->findable_runs)
		return PC_NONE;
	for (uint32_t i = pc->bucket[key & pc->mask]; i != PC_NONE; i = pc->e[i].next)
		if (pc->e[i].key == key && pc->e[i].kind == PC_RUN && pc->e[i].lo <= j && j < pc->e[i].hi)
			return i;
	return PC_NONE;
}

/* A free node under key, chained in its bucket unless a spent run's. Never
 * none: a node covers a block at least, and the block is already counted. */
static uint32_t pc_node(struct prefix_cache *pc, uint64_t key, enum pc_kind kind)
{
	uint32_t i = pc->free_entry;
	pc->free_entry = pc->e[i].next;
	pc->e[i] = (struct pc_entry){ .key = key, .kind = kind, .next = PC_NONE, .lru_prev = PC_NONE,
	                              .lru_next = PC_NONE };
	if (kind != PC_SPENT_RUN) {
		pc->e[i].next = pc->bucket[key & pc->mask];
		pc->bucket[key & pc->mask] = i;
	}
	pc->findable_runs += kind == PC_RUN;
	return i;
}

/* Takes node i out of its chain and frees it. */
static void pc_drop_node(struct prefix_cache *pc, uint32_t i)
{
	struct pc_entry *x = &pc->e[i];
	if (x->kind != PC_SPENT_RUN) {
		uint32_t *p = &pc->bucket[x->key & pc->mask];
		while (*p != i)
			p = &pc->e[*p].next;
		*p = x->next;
	}
	pc->findable_runs -= x->kind == PC_RUN;
	x->next = pc->free_entry;
	pc->free_entry = i;
}

static void pc_lru_unlink(struct prefix_cache *pc, uint32_t i)
{
	struct pc_entry *x = &pc->e[i];
	if (x->lru_prev != PC_NONE)
		pc->e[x->lru_prev].lru_next = x->lru_next;
	else
		pc->lru_head = x->lru_next;
	if (x->lru_next != PC_NONE)
		pc->e[x->lru_next].lru_prev = x->lru_prev;
	else
		pc->lru_tail = x->lru_prev;
}

static void pc_lru_append(struct prefix_cache *pc, uint32_t i)
{
	struct pc_entry *x = &pc->e[i];
	x->lru_prev = pc->lru_tail;
	x->lru_next = PC_NONE;
	if (pc->lru_tail != PC_NONE)
		pc->e[pc->lru_tail].lru_next = i;
	else
		pc->lru_head = i;
	pc->lru_tail = i;
}

static void pc_ref(struct prefix_cache *pc, uint32_t i)
{
	if (pc->e[i].refs++ == 0) {
		pc_lru_unlink(pc, i);
		pc->evictable--;
	}
}

/* The request takes back the n lowest blocks of its run i (from lo: its
 * blocks below are held, so lo is the one it asks for); an emptied run goes. */
static void pc_take_run(struct prefix_cache *pc, uint32_t i, uint32_t n)
{
	struct pc_entry *x = &pc->e[i];
	x->lo += n;
	pc->evictable -= n;
	if (x->lo == x->hi) {
		pc_lru_unlink(pc, i);
		pc_drop_node(pc, i);
	}
}

uint32_t pc_lookup(const struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t max,
                   uint32_t *evictable)
{
	uint32_t n = 0, i;
	struct pc_keys k = pc_keys_of(r, block_size);
	*evictable = 0;
	while (n < max) {
		if (pc_private(&k, n)) {         /* the rest are private: found in the request's runs, all evictable */
			if ((i = pc_find_run(pc, k.own, n)) == PC_NONE)
				break;
			uint32_t upto = pc->e[i].hi < max ? pc->e[i].hi : max;
			*evictable += upto - n;
			n = upto;
			continue;
		}
		if ((i = pc_find(pc, pc_key(&k, n))) == PC_NONE)
			break;
		*evictable += pc->e[i].refs == 0;
		n++;
	}
	return n;
}

void pc_take(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	for (uint32_t j = 0; j < n;) {
		if (pc_private(&k, j)) {
			uint32_t i = pc_find_run(pc, k.own, j);
			uint32_t upto = pc->e[i].hi < n ? pc->e[i].hi : n;
			pc_take_run(pc, i, upto - j);
			j = upto;
		} else {
			pc_ref(pc, pc_find(pc, pc_key(&k, j)));
			j++;
		}
	}
}

/* pc_enter with r's keys made (k). */
static int pc_enter_keyed(struct prefix_cache *pc, struct pc_keys *k, uint32_t j)
{
	if (pc_private(k, j)) {
		uint32_t i = pc_find_run(pc, k->own, j);
		if (i != PC_NONE) {              /* its copy from before a preemption, still cached */
			pc_take_run(pc, i, 1);
			return 0;
		}
		pc->entries++;                   /* held by r alone: counted, no node until it lets go */
		return 1;
	}
	uint64_t key = pc_key(k, j);
	uint32_t i = pc_find(pc, key);
	if (i != PC_NONE) {
		pc_ref(pc, i);
		return 0;
	}
	i = pc_node(pc, key, PC_BLOCK);
	pc->e[i].refs = 1;
	pc->entries++;
	return 1;
}

int pc_enter(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t j)
{
	return pc_enter_blocks(pc, r, block_size, j, j + 1) == 0;
}

void pc_release(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	/* the deepest first: the private blocks, as one run, then the shared prefix's (its head outlives its tail) */
	uint32_t j = n;
	if (n > 0 && pc_private(&k, n - 1)) {
		j = k.shared;
		uint32_t i = pc_node(pc, k.own, pol_req_done(r) ? PC_SPENT_RUN : PC_RUN);
		pc->e[i].lo = j;
		pc->e[i].hi = n;
		pc_lru_append(pc, i);
		pc->evictable += n - j;
	}
	while (j-- > 0) {
		uint32_t i = pc_find(pc, pc_key(&k, j));
		if (--pc->e[i].refs == 0) {
			pc_lru_append(pc, i);
			pc->evictable++;
		}
	}
}

uint32_t pc_enter_blocks(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t j0,
                         uint32_t j1)
{
	/* most blocks entered are private ones no run of theirs can hold: counted, and no key made */
	if (!pc->findable_runs && !r->session_id && j0 >= pc_shared_blocks(r, block_size)) {
		pc->entries += j1 - j0;
		return 0;
	}
	struct pc_keys k = pc_keys_of(r, block_size);
	uint32_t already = 0;
	for (uint32_t j = j0; j < j1; j++)
		already += !pc_enter_keyed(pc, &k, j);
	return already;
}

uint64_t pc_evict_n(struct prefix_cache *pc, uint64_t n)
{
	uint64_t done = 0;
	while (done < n && pc->lru_head != PC_NONE) {
		uint32_t i = pc->lru_head;
		struct pc_entry *x = &pc->e[i];
		/* a block, or as many of a run's blocks as asked, deepest first, the node going with its last */
		uint64_t m = x->kind == PC_BLOCK ? 1 : x->hi - x->lo < n - done ? x->hi - x->lo : n - done;
		if (x->kind != PC_BLOCK)
			x->hi -= (uint32_t)m;
		if (x->kind == PC_BLOCK || x->hi == x->lo) {
			pc_lru_unlink(pc, i);
			pc_drop_node(pc, i);
		}
		pc->evictable -= m;
		pc->entries -= m;
		pc->evictions += m;
		done += m;
	}
	return done;
}

int pc_evict(struct prefix_cache *pc)
{
	return pc_evict_n(pc, 1) == 1;
}
