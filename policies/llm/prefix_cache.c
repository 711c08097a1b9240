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
	const struct pol_request *r;  /* its hash ids, when it has them */
	uint32_t block_size;
};

static struct pc_keys pc_keys_of(const struct pol_request *r, uint32_t block_size)
{
	uint32_t shared = r->prefix_id ? r->prefix_len / block_size : 0;
	if (r->hash_ids)               /* the blocks whose last token lies in the prompt's hashed blocks */
		shared = (uint32_t)(((uint64_t)r->nhash * r->hash_block < r->input_len ? (uint64_t)r->nhash * r->hash_block
		                                                                        : r->input_len) / block_size);
	/* past the shared prefix, a session's turn's blocks are its conversation's, which the next turn's
	 * prompt begins with; a request outside any session's are its own (an id no session has: ~id) */
	uint64_t own = r->session_id ? pc_mix(r->session_id) ^ 0x2545f4914f6cdd1du : pc_mix(~r->id);
	return (struct pc_keys){ .prefix = pc_mix(r->prefix_id), .own = own, .shared = shared, .r = r,
	                         .block_size = block_size };
}

/* Block j: its prefix's key while the block lies within the shared prefix
 * (a hash id's: that of the hashed block holding its last token, which
 * stands for every token up to there), else the request's own (odd and even
 * keys keep the two apart). */
static uint64_t pc_key(const struct pc_keys *k, uint32_t j)
{
	if (j >= k->shared)
		return pc_mix(k->own ^ j) & ~(uint64_t)1;
	if (k->r->hash_ids) {
		uint64_t last = (uint64_t)(j + 1) * k->block_size - 1;
		return pc_mix(pc_mix(k->r->hash_ids[last / k->r->hash_block] + 0x5bd1e995u) ^ j) | 1;
	}
	return pc_mix(k->prefix ^ j) | 1;
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
		if (pc->e[i].key == key)
			return i;
	return PC_NONE;
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
	pc->evictable--;
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
	pc->evictable++;
}

static void pc_ref(struct prefix_cache *pc, uint32_t i)
{
	if (pc->e[i].refs++ == 0)
		pc_lru_unlink(pc, i);
}

uint32_t pc_lookup(const struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t max,
                   uint32_t *evictable)
{
	uint32_t n = 0, i;
	struct pc_keys k = pc_keys_of(r, block_size);
	*evictable = 0;
	while (n < max && (i = pc_find(pc, pc_key(&k, n))) != PC_NONE) {
		*evictable += pc->e[i].refs == 0;
		n++;
	}
	return n;
}

void pc_take(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	for (uint32_t j = 0; j < n; j++)
		pc_ref(pc, pc_find(pc, pc_key(&k, j)));
}

int pc_enter(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t j)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	uint64_t key = pc_key(&k, j);
	uint32_t i = pc_find(pc, key);
	if (i != PC_NONE) {
		pc_ref(pc, i);
		return 0;
	}
	i = pc->free_entry;              /* never none: an entry a block, and r's own block becomes it */
	pc->free_entry = pc->e[i].next;
	pc->e[i] = (struct pc_entry){ .key = key, .refs = 1, .next = pc->bucket[key & pc->mask],
	                              .lru_prev = PC_NONE, .lru_next = PC_NONE };
	pc->bucket[key & pc->mask] = i;
	pc->entries++;
	return 1;
}

void pc_release(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	for (uint32_t j = n; j-- > 0;) {     /* the deepest first: a shared prefix's head outlives its tail */
		uint32_t i = pc_find(pc, pc_key(&k, j));
		if (--pc->e[i].refs == 0)
			pc_lru_append(pc, i);
	}
}

int pc_evict(struct prefix_cache *pc)
{
	uint32_t i = pc->lru_head;
	if (i == PC_NONE)
		return 0;
	pc_lru_unlink(pc, i);
	uint32_t *p = &pc->bucket[pc->e[i].key & pc->mask];
	while (*p != i)
		p = &pc->e[*p].next;
	*p = pc->e[i].next;
	pc->e[i].next = pc->free_entry;
	pc->free_entry = i;
	pc->entries--;
	pc->evictions++;
	return 1;
}
