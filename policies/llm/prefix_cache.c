/* policies/llm/prefix_cache.c: vLLM V1's automatic prefix caching (prefix_cache.h). */
#include <stdlib.h>
#include <string.h>
#include "../../util/grow.h"
#include "prefix_cache.h"

#define PC_NONE UINT32_MAX
#define PC_MIN_BUCKETS 64
#define PC_FIRST_NODES 64         /* nodes, and holders' records, made room for at the start: then twice as many */

/* splitmix64's finalizer: a well-mixed 64-bit key from a 64-bit input. */
static uint64_t pc_mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15u;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

/* A request's two key bases, mixed once a call: its shared prefix's, for
 * its first `shared` blocks (unless its hash ids key them), and its own, for
 * the rest. */
struct pc_keys {
	uint64_t prefix, own;
	uint32_t shared;              /* blocks with a shared key */
	uint64_t inner;               /* a two-level prefix: its inner prefix's base, for the shared blocks [0, */
	uint32_t inner_blocks;        /* inner_blocks) (a group's system prompt inside a whole prompt); 0: none */
	int private_tail;             /* blocks from `shared` on are the request's alone (no session): a run's */
	const struct pol_request *r;  /* its hash ids, when it has them */
	uint32_t block_size;
	uint64_t hashed_id;           /* the hash id last keyed, and the blocks whose last token lies in its hashed
	                               * block ([hashed_lo, hashed_hi]; lo > hi: none yet): Mooncake's 512 tokens are
	                               * 32 blocks, which a call keys in a row */
	uint64_t hashed_lo, hashed_hi;
	uint32_t per_hashed;          /* blocks a hashed block, when they divide it (Mooncake's 512 tokens); else 0 */
};

/* The prompt tokens with a shared key: the prefix's, or those its hash ids cover. */
static uint64_t pc_shared_tokens(const struct pol_request *r)
{
	if (r->hash_ids)
		return pol_hashed_tokens(r);
	return r->prefix_id ? r->prefix_len : 0;
}

/* The blocks with a shared key: the prefix's whole blocks, or those whose
 * last token lies in the prompt's hashed blocks. */
static uint32_t pc_shared_blocks(const struct pol_request *r, uint32_t block_size)
{
	return (uint32_t)(pc_shared_tokens(r) / block_size);
}

static struct pc_keys pc_keys_of(const struct pol_request *r, uint32_t block_size)
{
	/* past the shared prefix, a session's turn's blocks are its conversation's, which the next turn's
	 * prompt begins with; a request outside any session's are its own (an id no session has: ~id) */
	uint64_t own = r->session_id ? pc_mix(r->session_id) ^ 0x2545f4914f6cdd1du : pc_mix(~r->id);
	/* inner ids name other token runs than prefix ids do: their base mixed apart */
	int nested = !r->hash_ids && r->prefix_id && r->inner_id;
	return (struct pc_keys){ .prefix = r->hash_ids ? 0 : pc_mix(r->prefix_id), .own = own,
	                         .inner = nested ? pc_mix(r->inner_id ^ 0x6a09e667f3bcc909u) : 0,
	                         .inner_blocks = nested ? r->inner_len / block_size : 0,
	                         .shared = pc_shared_blocks(r, block_size), .private_tail = !r->session_id, .r = r,
	                         .block_size = block_size, .hashed_lo = 1, .hashed_hi = 0,
	                         .per_hashed = r->hash_ids && r->hash_block % block_size == 0 ? r->hash_block / block_size
	                                                                                       : 0 };
}

/* The chunk holding shared block j (j < k->shared): its key, its first
 * block (*lo) and the end of the request's blocks in it (*end). The blocks
 * keyed from one base (a prefix's from block 0, or from its inner prefix's
 * end; an inner prefix's from block 0; a hash id's, those whose last token
 * lies in its hashed block, which it stands for up to there) are cut into
 * chunks of PC_CHUNK_BLOCKS from the first. */
static uint64_t pc_chunk(struct pc_keys *k, uint32_t j, uint32_t *lo, uint32_t *end)
{
	uint32_t first = 0, last = k->shared;            /* the blocks keyed from one base: [first, last) */
	uint64_t base = k->prefix;
	if (j < k->inner_blocks) {                       /* the inner prefix's, the same for all its outer ones */
		last = k->inner_blocks;
		base = k->inner;
	} else {
		first = k->inner_blocks;                     /* the outer's own stand for the inner's before them */
	}
	if (k->r->hash_ids) {
		if (j < k->hashed_lo || j > k->hashed_hi) {
			uint64_t hb = k->r->hash_block, bs = k->block_size, g;
			if (k->per_hashed) {                          /* no division of 64 bits */
				g = j / k->per_hashed;
				k->hashed_lo = g * k->per_hashed;
				k->hashed_hi = k->hashed_lo + k->per_hashed - 1;
			} else {
				g = ((uint64_t)(j + 1) * bs - 1) / hb;
				k->hashed_lo = (g * hb + 1 + bs - 1) / bs - 1;     /* (j + 1) bs - 1 in [g hb, (g + 1) hb) */
				k->hashed_hi = (g + 1) * hb / bs - 1;
			}
			k->hashed_id = k->r->hash_ids[g];
		}
		first = (uint32_t)k->hashed_lo;
		if (k->hashed_hi + 1 < last)
			last = (uint32_t)k->hashed_hi + 1;
	}
	*lo = first + (j - first) / PC_CHUNK_BLOCKS * PC_CHUNK_BLOCKS;
	*end = last - *lo < PC_CHUNK_BLOCKS ? last : *lo + PC_CHUNK_BLOCKS;
	/* a hash id stands for its prompt up to its block already: mixed once, with the chunk's first block in
	 * the high half (two chunks' keys are then equal only if their ids and first blocks are, for ids under
	 * 2^32 as Mooncake's are); a prefix's base is a mix already */
	if (k->r->hash_ids)
		return pc_mix((k->hashed_id + 0x5bd1e995u) ^ ((uint64_t)*lo << 32)) | 1;
	return pc_mix(base ^ *lo) | 1;
}

/* Block j past the shared prefix: its session's key (even: a chunk's is odd). */
static uint64_t pc_key(const struct pc_keys *k, uint32_t j)
{
	return pc_mix(k->own ^ j) & ~(uint64_t)1;
}

/* Whether block j is one of the request's private blocks (a run's when cached and not held). */
static int pc_private(const struct pc_keys *k, uint32_t j)
{
	return k->private_tail && j >= k->shared;
}

int pc_init(struct prefix_cache *pc, uint64_t capacity)
{
	memset(pc, 0, sizeof *pc);
	if (2 * capacity >= PC_NONE)
		return -1;
	/* a node covers a block at least, but a chunk's evictable blocks have a segment's node too: at most 2 a
	 * block, and a holders' record a chunk. Nodes and records are taken in order (fresh_entry, fresh_holders)
	 * and their arrays grow as they are (pc_node): memory follows the blocks cached, not the cache's size (a
	 * run that touches a few blocks of a large cache reserves no address space for the rest: ulimit -v) */
	pc->max_entries = capacity ? 2 * (uint32_t)capacity : 1;
	pc->max_holders = capacity ? (uint32_t)capacity : 1;
	pc->cap_entries = pc->max_entries < PC_FIRST_NODES ? pc->max_entries : PC_FIRST_NODES;
	pc->cap_holders = pc->max_holders < PC_FIRST_NODES ? pc->max_holders : PC_FIRST_NODES;
	pc->e = malloc(pc->cap_entries * sizeof *pc->e);
	pc->holders = malloc(pc->cap_holders * sizeof *pc->holders);
	pc->bucket = calloc(PC_MIN_BUCKETS, sizeof *pc->bucket);
	if (!pc->e || !pc->holders || !pc->bucket) {
		pc_fini(pc);
		return -1;
	}
	pc->mask = PC_MIN_BUCKETS - 1;
	pc->free_entry = pc->free_holders = PC_NONE;
	pc->lru_head = pc->lru_tail = PC_NONE;
	return 0;
}

void pc_fini(struct prefix_cache *pc)
{
	free(pc->e);
	free(pc->bucket);
	free(pc->holders);
	memset(pc, 0, sizeof *pc);
}

/* A key's bucket, from its high bits: a chunk's and a session block's keys differ in the lowest. */
static uint32_t pc_bucket_of(const struct prefix_cache *pc, uint64_t key)
{
	return (uint32_t)(key >> 32) & pc->mask;
}

static uint32_t pc_find_kind(const struct prefix_cache *pc, uint64_t key, enum pc_kind kind)
{
	for (uint32_t i = pc->bucket[pc_bucket_of(pc, key)] - 1; i != PC_NONE; i = pc->e[i].next)
		if (pc->e[i].key == key && pc->e[i].kind == kind)
			return i;
	return PC_NONE;
}

/* The run of the request whose runs are keyed key that holds its block j. */
static uint32_t pc_find_run(const struct prefix_cache *pc, uint64_t key, uint32_t j)
{
	if (!pc->findable_runs)
		return PC_NONE;
	for (uint32_t i = pc->bucket[pc_bucket_of(pc, key)] - 1; i != PC_NONE; i = pc->e[i].next)
		if (pc->e[i].key == key && pc->e[i].kind == PC_RUN && pc->e[i].lo <= j && j < pc->e[i].hi)
			return i;
	return PC_NONE;
}

/* Chunks, blocks and findable runs are chained in their key's bucket; segments and spent runs in none. */
static int pc_chained(enum pc_kind kind)
{
	return kind == PC_BLOCK || kind == PC_CHUNK || kind == PC_RUN;
}

/* Twice the buckets, when the chained nodes outnumber them: chains stay short and the table small
 * enough to stay in the processor's caches (most nodes are chunks of 32 blocks, or in no chain). A
 * table that cannot grow keeps its chains, longer. */
static void pc_grow_buckets(struct prefix_cache *pc)
{
	uint64_t nb = 2 * ((uint64_t)pc->mask + 1);
	uint32_t *b = calloc(nb, sizeof *b);
	if (!b)
		return;
	free(pc->bucket);
	pc->bucket = b;
	pc->mask = (uint32_t)(nb - 1);
	for (uint32_t i = 0; i < pc->fresh_entry; i++)
		if (pc_chained(pc->e[i].kind)) {
			pc->e[i].next = pc->bucket[pc_bucket_of(pc, pc->e[i].key)] - 1;
			pc->bucket[pc_bucket_of(pc, pc->e[i].key)] = i + 1;
		}
}

/* Room for one more item of size bytes in the array at items (an array variable's address) of capacity
 * *cap: doubled as util/grow.h grows every array, but never past max: 0, or -1 (out of memory or at max:
 * pc->failed set, the array as it was). */
static int pc_grow(struct prefix_cache *pc, void *items, uint32_t *cap, uint32_t max, size_t size)
{
	size_t want = grow_capacity(*cap, (size_t)*cap + 1, 1, size);
	if (want > max)
		want = max;
	if (want <= *cap || grow_to(items, want, size) != 0) {
		pc->failed = 1;
		return -1;
	}
	*cap = (uint32_t)want;
	return 0;
}

/* A free node under key, or PC_NONE when none could be had (out of memory: pc->failed). */
static uint32_t pc_node(struct prefix_cache *pc, uint64_t key, enum pc_kind kind)
{
	uint32_t i = pc->free_entry;
	if (i != PC_NONE)
		pc->free_entry = pc->e[i].next;
	else if (pc->fresh_entry < pc->cap_entries ||
	         pc_grow(pc, &pc->e, &pc->cap_entries, pc->max_entries, sizeof *pc->e) == 0)
		i = pc->fresh_entry++;
	else
		return PC_NONE;
	pc->e[i] = (struct pc_entry){ .key = key, .kind = kind, .next = PC_NONE, .lru_prev = PC_NONE,
	                              .lru_next = PC_NONE, .up = PC_NONE };
	if (pc_chained(kind)) {
		pc->e[i].next = pc->bucket[pc_bucket_of(pc, key)] - 1;
		pc->bucket[pc_bucket_of(pc, key)] = i + 1;
		if (++pc->chained > (uint64_t)pc->mask + 1)
			pc_grow_buckets(pc);
	}
	pc->findable_runs += kind == PC_RUN;
	return i;
}

/* Takes node i out of its chain and frees it. */
static void pc_drop_node(struct prefix_cache *pc, uint32_t i)
{
	struct pc_entry *x = &pc->e[i];
	if (pc_chained(x->kind)) {
		uint32_t *head = &pc->bucket[pc_bucket_of(pc, x->key)], p = *head - 1;
		if (p == i) {
			*head = x->next + 1;
		} else {
			while (pc->e[p].next != i)
				p = pc->e[p].next;
			pc->e[p].next = x->next;
		}
		pc->chained--;
	}
	pc->findable_runs -= x->kind == PC_RUN;
	x->kind = PC_FREE;
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

/* ---- chunks ---- */

/* A new chunk from block lo: nothing cached, no holder (no holders' record). PC_NONE: out of memory. */
static uint32_t pc_new_chunk(struct prefix_cache *pc, uint64_t key, uint32_t lo)
{
	uint32_t i = pc_node(pc, key, PC_CHUNK);
	if (i == PC_NONE)
		return PC_NONE;
	pc->e[i].lo = pc->e[i].hi = lo;
	pc->e[i].refs = PC_NONE;
	pc->e[i].seg = PC_NONE;
	return i;
}

/* A chunk's holders (pc_entry.refs): none; one, holding its first k blocks (PC_ONE_HOLDER | k); or
 * more, counted in a holders' record (its index, under capacity < 2^31: pc_init). */
#define PC_ONE_HOLDER 0x80000000u

/* The end of chunk i's blocks some request holds (its first block: none). */
static uint32_t pc_held_end(const struct prefix_cache *pc, uint32_t i)
{
	uint32_t refs = pc->e[i].refs;
	if (refs == PC_NONE)
		return pc->e[i].lo;
	if (refs & PC_ONE_HOLDER)
		return pc->e[i].lo + (refs & ~PC_ONE_HOLDER);
	return pc->e[i].lo + 32 - (uint32_t)__builtin_clz(pc->holders[refs].ends);
}

/* A holders' record for chunk i, every count zero; NULL: out of memory (pc->failed). */
static struct pc_holders *pc_new_holders(struct prefix_cache *pc, uint32_t i)
{
	uint32_t h = pc->free_holders;
	if (h != PC_NONE) {
		pc->free_holders = pc->holders[h].ends;
	} else {
		if (pc->fresh_holders == pc->cap_holders &&
		    pc_grow(pc, &pc->holders, &pc->cap_holders, pc->max_holders, sizeof *pc->holders) != 0)
			return NULL;
		h = pc->fresh_holders++;
		memset(pc->holders[h].at_end, 0, sizeof pc->holders[h].at_end);
	}
	pc->holders[h].ends = 0;
	pc->e[i].refs = h;
	return &pc->holders[h];
}

/* A holder of chunk i's blocks [lo, from) now holds [lo, to) (from = lo: a new one; to = lo: none). A chunk
 * with one holder (most: a prompt's chunks are shared by the requests that follow, not those beside it)
 * keeps its end in its node; a holders' record is taken for a second and given back when the last lets
 * go, so the few in use stay in the processor's caches (and an evicted chunk has none to free). */
static void pc_move_holder(struct prefix_cache *pc, uint32_t i, uint32_t from, uint32_t to)
{
	uint32_t lo = pc->e[i].lo, refs = pc->e[i].refs;
	if (refs == PC_NONE || ((refs & PC_ONE_HOLDER) && from > lo)) {   /* none, or the one moves */
		pc->e[i].refs = to > lo ? PC_ONE_HOLDER | (to - lo) : PC_NONE;
		return;
	}
	struct pc_holders *h;
	if (refs & PC_ONE_HOLDER) {          /* a second comes: both counted in a record */
		uint32_t k = (refs & ~PC_ONE_HOLDER) - 1;
		if (!(h = pc_new_holders(pc, i)))
			return;
		h->at_end[k] = 1;
		h->ends = (uint32_t)1 << k;
	} else {
		h = &pc->holders[refs];
	}
	if (from > lo && --h->at_end[from - lo - 1] == 0)
		h->ends &= ~((uint32_t)1 << (from - lo - 1));
	if (to > lo && h->at_end[to - lo - 1]++ == 0)
		h->ends |= (uint32_t)1 << (to - lo - 1);
	if (!h->ends) {                      /* its last holder let go: every count is zero again */
		h->ends = pc->free_holders;
		pc->free_holders = pc->e[i].refs;
		pc->e[i].refs = PC_NONE;
	}
}

/* Chunk i's evictable blocks [z, upto) (z its held end) are held again: out of their segments, the
 * shallowest first (they are the chunk's most recently let go), its own last (its deepest). */
static void pc_hold_evictable(struct prefix_cache *pc, uint32_t i, uint32_t upto)
{
	uint32_t z = pc_held_end(pc, i);
	if (upto <= z)
		return;
	pc->evictable -= upto - z;
	while (z < upto) {
		uint32_t sg = pc->e[i].up;
		if (sg == PC_NONE) {             /* its own segment [seg, hi), seg = z; upto <= hi (all cached) */
			if (upto < pc->e[i].hi) {
				pc->e[i].seg = upto;
			} else {
				pc->e[i].seg = PC_NONE;
				pc_lru_unlink(pc, i);
			}
			break;
		}
		struct pc_entry *x = &pc->e[sg];
		if (x->hi > upto) {
			x->lo = upto;
			break;
		}
		z = x->hi;
		pc->e[i].up = x->next;
		if (x->next != PC_NONE)
			pc->e[x->next].up = PC_NONE;
		pc_lru_unlink(pc, sg);
		pc_drop_node(pc, sg);
	}
}

/* A holder of chunk i's blocks [lo, to) lets go of them: those no one else holds become evictable, one
 * segment, the most recent, and the chunk's shallowest. A chunk with no evictable block keeps the
 * segment in its own node, itself in the LRU list (most chunks never have a second: one node, not two,
 * to make, evict and free); a later one is a node of its own, shallower. */
static void pc_let_go(struct prefix_cache *pc, uint32_t i, uint32_t to)
{
	pc_move_holder(pc, i, to, pc->e[i].lo);
	uint32_t z = pc_held_end(pc, i);
	if (to <= z)
		return;
	pc->evictable += to - z;
	if (pc->e[i].seg == PC_NONE && pc->e[i].up == PC_NONE) {     /* nothing evictable before: to = hi */
		pc->e[i].seg = z;
		pc_lru_append(pc, i);
		return;
	}
	uint32_t sg = pc_node(pc, 0, PC_SEGMENT);
	if (sg == PC_NONE)
		return;
	struct pc_entry *x = &pc->e[sg];
	x->lo = z;
	x->hi = to;
	x->refs = i;
	x->next = pc->e[i].up;
	if (x->next != PC_NONE)
		pc->e[x->next].up = sg;
	pc->e[i].up = sg;
	pc_lru_append(pc, sg);
}

/* Evicts up to n of the least recently let go blocks of chunk ch, its deepest segment's (sg; ch itself:
 * its own), deepest first: its deepest cached blocks. How many. The chunk goes with its last block. */
static uint64_t pc_evict_segment(struct prefix_cache *pc, uint32_t ch, uint32_t sg, uint64_t n)
{
	struct pc_entry *x = &pc->e[sg];
	uint32_t lo = sg == ch ? x->seg : x->lo;
	uint64_t m = x->hi - lo < n ? x->hi - lo : n;
	if (sg != ch)
		x->hi -= (uint32_t)m;
	pc->e[ch].hi -= (uint32_t)m;
	if (pc->e[ch].hi == lo && sg == ch) {      /* its own segment is gone: any others are shallower */
		x->seg = PC_NONE;
		pc_lru_unlink(pc, ch);
	} else if (sg != ch && x->hi == x->lo) {   /* the chunk's deepest segment: its shallower one is now */
		if (x->up != PC_NONE)
			pc->e[x->up].next = PC_NONE;
		else
			pc->e[ch].up = PC_NONE;
		pc_lru_unlink(pc, sg);
		pc_drop_node(pc, sg);
	}
	if (pc->e[ch].hi == pc->e[ch].lo)    /* nothing cached: the chunk goes (no one holds it: no record) */
		pc_drop_node(pc, ch);
	return m;
}

/* ---- the interface ---- */

uint32_t pc_lookup(const struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t max,
                   uint32_t *evictable)
{
	uint32_t n = 0, i;
	struct pc_keys k = pc_keys_of(r, block_size);
	*evictable = 0;
	while (n < max && !pc->failed) {
		if (n < k.shared) {              /* a chunk from n: its cached blocks, up to the request's end in it */
			uint32_t lo, end;
			if ((i = pc_find_kind(pc, pc_chunk(&k, n, &lo, &end), PC_CHUNK)) == PC_NONE)
				break;
			uint32_t upto = pc->e[i].hi < end ? pc->e[i].hi : end, z = pc_held_end(pc, i);
			if (upto > max)
				upto = max;
			*evictable += upto > z ? upto - (z > n ? z : n) : 0;
			n = upto;
			if (upto < end)
				break;
			continue;
		}
		if (pc_private(&k, n)) {         /* the rest are private: found in the request's runs, all evictable */
			if ((i = pc_find_run(pc, k.own, n)) == PC_NONE)
				break;
			uint32_t upto = pc->e[i].hi < max ? pc->e[i].hi : max;
			*evictable += upto - n;
			n = upto;
			continue;
		}
		if ((i = pc_find_kind(pc, pc_key(&k, n), PC_BLOCK)) == PC_NONE)
			break;
		*evictable += pc->e[i].refs == 0;
		n++;
	}
	return n;
}

void pc_take(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	struct pc_keys k = pc_keys_of(r, block_size);
	for (uint32_t j = 0; j < n && !pc->failed;) {
		if (j < k.shared) {
			uint32_t lo, end, i = pc_find_kind(pc, pc_chunk(&k, j, &lo, &end), PC_CHUNK);
			uint32_t upto = end < n ? end : n;
			pc_hold_evictable(pc, i, upto);
			pc_move_holder(pc, i, lo, upto);
			j = upto;
		} else if (pc_private(&k, j)) {
			uint32_t i = pc_find_run(pc, k.own, j);
			uint32_t upto = pc->e[i].hi < n ? pc->e[i].hi : n;
			pc_take_run(pc, i, upto - j);
			j = upto;
		} else {
			pc_ref(pc, pc_find_kind(pc, pc_key(&k, j), PC_BLOCK));
			j++;
		}
	}
}

/* r, holding its blocks [0, from), enters [from, to) of the chunk keyed key from block lo: those cached
 * already it holds too (how many: r's copies to free), the rest are new. */
static uint32_t pc_enter_chunk(struct prefix_cache *pc, uint64_t key, uint32_t lo, uint32_t from, uint32_t to)
{
	uint32_t i = pc_find_kind(pc, key, PC_CHUNK);
	if (i == PC_NONE && (i = pc_new_chunk(pc, key, lo)) == PC_NONE)
		return 0;
	uint32_t cached = pc->e[i].hi, found = cached > from ? (cached < to ? cached : to) - from : 0;
	pc_hold_evictable(pc, i, cached < to ? cached : to);
	if (to > cached) {
		pc->entries += to - cached;
		pc->e[i].hi = to;
	}
	pc_move_holder(pc, i, from, to);
	return found;
}

/* pc_enter_blocks of one block past the shared prefix, with r's keys made (k): 1 new, 0 there already. */
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
	uint32_t i = pc_find_kind(pc, key, PC_BLOCK);
	if (i != PC_NONE) {
		pc_ref(pc, i);
		return 0;
	}
	if ((i = pc_node(pc, key, PC_BLOCK)) == PC_NONE)
		return 1;
	pc->e[i].refs = 1;
	pc->entries++;
	return 1;
}

void pc_release(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n)
{
	if (pc->failed)
		return;
	struct pc_keys k = pc_keys_of(r, block_size);
	/* the deepest first: the private blocks, as one run, or the session's, then the shared prefix's chunks
	 * (its head outlives its tail) */
	uint32_t j = n;
	if (n > 0 && pc_private(&k, n - 1)) {
		j = k.shared;
		uint32_t i = pc_node(pc, k.own, pol_req_done(r) ? PC_SPENT_RUN : PC_RUN);
		if (i == PC_NONE)
			return;
		pc->e[i].lo = j;
		pc->e[i].hi = n;
		pc_lru_append(pc, i);
		pc->evictable += n - j;
	}
	for (; j > k.shared; j--) {
		uint32_t i = pc_find_kind(pc, pc_key(&k, j - 1), PC_BLOCK);
		if (--pc->e[i].refs == 0) {
			pc_lru_append(pc, i);
			pc->evictable++;
		}
	}
	while (j > 0) {
		uint32_t lo, end;
		pc_let_go(pc, pc_find_kind(pc, pc_chunk(&k, j - 1, &lo, &end), PC_CHUNK), j);
		j = lo;
	}
}

uint32_t pc_enter_blocks(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t j0,
                         uint32_t j1)
{
	/* most blocks entered are private ones no run of theirs can hold: counted, and no key made (j0 at or
	 * past the shared blocks, pc_shared_blocks, without its division: entered at every block a decode fills) */
	if (!pc->findable_runs && !r->session_id && (uint64_t)(j0 + 1) * block_size > pc_shared_tokens(r)) {
		pc->entries += j1 - j0;
		return 0;
	}
	if (pc->failed)
		return 0;
	struct pc_keys k = pc_keys_of(r, block_size);
	uint32_t already = 0, j = j0;
	while (j < j1 && j < k.shared && !pc->failed) {
		uint32_t lo, end;
		uint64_t key = pc_chunk(&k, j, &lo, &end);
		uint32_t upto = end < j1 ? end : j1;
		already += pc_enter_chunk(pc, key, lo, j, upto);
		j = upto;
	}
	for (; j < j1 && !pc->failed; j++)
		already += !pc_enter_keyed(pc, &k, j);
	return already;
}

uint64_t pc_evict_n(struct prefix_cache *pc, uint64_t n)
{
	uint64_t done = 0;
	while (done < n && pc->lru_head != PC_NONE && !pc->failed) {
		uint32_t i = pc->lru_head;
		struct pc_entry *x = &pc->e[i];
		/* a block, or as many of a run's or segment's blocks as asked, deepest first, the node going with
		 * its last */
		uint64_t m;
		if (x->kind == PC_SEGMENT || x->kind == PC_CHUNK) {
			m = pc_evict_segment(pc, x->kind == PC_CHUNK ? i : x->refs, i, n - done);
		} else {
			m = x->kind == PC_BLOCK ? 1 : x->hi - x->lo < n - done ? x->hi - x->lo : n - done;
			if (x->kind != PC_BLOCK)
				x->hi -= (uint32_t)m;
			if (x->kind == PC_BLOCK || x->hi == x->lo) {
				pc_lru_unlink(pc, i);
				pc_drop_node(pc, i);
			}
		}
		pc->evictable -= m;
		pc->entries -= m;
		pc->evictions += m;
		done += m;
	}
	return done;
}
