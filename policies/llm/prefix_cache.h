/* policies/llm/prefix_cache.h: automatic prefix caching as vLLM V1 does it,
 * one cache a device's KV blocks (the LLM toolkit's, kv.h).
 *
 * Every full block of a request's tokens has a key: the blocks of its
 * shared prefix (pol_request.prefix_id over its first prefix_len tokens: a
 * system prompt, a conversation so far) the prefix's, the same for every
 * request that shares it; with a Mooncake trace's hash ids, a prompt block
 * the id of the hashed block that holds its last token (an id stands for
 * every token up to its block's end); every later block the request's own
 * (its content is unique, so its key is too), or, for a turn of a
 * conversation (pol_request.session_id), the conversation's: its prompt and
 * answer are the next turn's prompt's beginning, so the next turn finds them. A key stands for a hash chained over the
 * blocks before it and its own tokens: two requests share block j exactly
 * when they share every token up to its end. A computed full block is
 * entered under its key; a request that finds its leading blocks entered
 * takes a reference on each and does not compute them again. A block whose
 * references fall to zero (its requests finished or were preempted) stays
 * cached, evictable, and is evicted least recently released first, only
 * when a block is needed and none is free. A preempted request's computed
 * blocks are thus found again when it is recomputed, as long as they were
 * not evicted meanwhile. */
#ifndef SB_PREFIX_CACHE_H
#define SB_PREFIX_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include "../policy.h"

/* A node of the cache: a run of shared blocks (a chunk), a session's block,
 * a run of one request's private blocks, or a chunk's evictable segment.
 *
 * Shared blocks (a prefix's, or a prompt's under one hash id) live in chunks
 * of up to PC_CHUNK_BLOCKS blocks with one key: whoever holds a block of a
 * chunk holds every block of the chunk before it (a key stands for all
 * tokens before its block), so a chunk's cached blocks are a prefix of it,
 * its references fall in a staircase (each holder counted at the end of
 * what it holds), and the blocks no request holds are a suffix that was let
 * go deepest first: one LRU segment per release, each evicted deepest first,
 * in the order the blocks one by one would have been. A chunk's deepest
 * segment, the first let go, is kept in the chunk's own node (then itself in
 * the LRU list) when nothing of it was evictable before; later ones are
 * nodes of their own.
 * A block past the shared prefix of a request outside any session (its own,
 * a key no other request has) is found again only by that request, after a
 * preemption: while the request holds it, it is only counted (no node); when
 * the request lets go, all its private blocks become one run, which the LRU
 * list evicts deepest first, as it would the blocks one by one. */
enum pc_kind {
	PC_BLOCK,                    /* one session block under its key */
	PC_CHUNK,                    /* shared blocks [lo, hi) cached of a chunk starting at lo; [seg, hi) its own
	                              * segment (in the LRU list) */
	PC_SEGMENT,                  /* a chunk's other blocks [lo, hi) no request holds, evictable; in no chain */
	PC_RUN,                      /* a request's private blocks [lo, hi), evictable, findable under its key */
	PC_SPENT_RUN,                /* the same, of a request that finished: never looked up, in no chain */
	PC_FREE,                     /* on the free list */
};

#define PC_CHUNK_BLOCKS 32

struct pc_entry {
	uint64_t key;                /* a block's or chunk's key, or a run's request's */
	uint32_t refs;               /* a block's running requests holding it (0: evictable, in the LRU list);
	                              * a chunk's holders (none; PC_ONE_HOLDER | the blocks its one holds; or
	                              * the index of their record in holders); a segment's chunk node */
	uint32_t next;               /* the bucket's chain, or the free list; a segment's deeper neighbour */
	uint32_t lru_prev, lru_next; /* evictable nodes, least recently released first */
	uint32_t lo, hi;             /* a run's, chunk's or segment's blocks */
	uint32_t up;                 /* a chunk's shallowest segment node; a segment's shallower neighbour */
	uint32_t seg;                /* a chunk's own segment's first block (none: it has none), its deepest */
	enum pc_kind kind;
};

/* A chunk's holders, when more than one: how many hold its blocks up to each end, and which ends have any. */
struct pc_holders {
	uint32_t at_end[PC_CHUNK_BLOCKS];   /* [k]: holders of its first k + 1 blocks (no more) */
	uint32_t ends;                      /* bit k: at_end[k] > 0; a free record's: the free list's link */
};

struct prefix_cache {
	struct pc_entry *e;          /* [cap_entries], grown as taken up to max_entries: 2 capacity (a chunk's blocks
	                              * may also be its segments') */
	uint32_t cap_entries, max_entries, cap_holders, max_holders;
	int failed;                  /* a node or record could not be had (out of memory): every call after does
	                              * nothing, and the scheduler's next_task fails the run */
	uint32_t *bucket;            /* [mask + 1] chain heads, each its first node + 1 (0: none) */
	uint32_t mask;
	uint64_t chained;            /* nodes in the chains: the buckets double when they outnumber them */
	uint32_t free_entry, fresh_entry;   /* free list head; entries from fresh_entry on never used */
	uint32_t lru_head, lru_tail;
	struct pc_holders *holders;  /* [cap_holders] up to capacity: a chunk held twice covers a held block; taken in
	                              * order, as entries */
	uint32_t free_holders, fresh_holders;
	uint64_t entries, evictable; /* cached blocks (held or not), and those no request holds */
	uint64_t findable_runs;      /* PC_RUN nodes: while none, no private block can be found */
	uint64_t queried_blocks, hit_blocks, evictions;   /* for the run's statistics */
};

/* Room for capacity blocks (a device's KV cache), its memory taken as blocks are cached. 0, or -1 out of memory.
 * Once failed is set (memory for a node ran out) every call does nothing. */
int pc_init(struct prefix_cache *pc, uint64_t capacity);
void pc_fini(struct prefix_cache *pc);

/* How many of r's leading blocks, up to max, are entered, one after another
 * from block 0 (none taken). */
uint32_t pc_lookup(const struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t max,
                   uint32_t *evictable);   /* how many of those no request holds now */
/* Takes a reference on each of r's blocks [0, n), all entered. */
void pc_take(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n);
/* r, holding its blocks [0, j0), computed its blocks [j0, j1): each is entered under its key with r's
 * reference, as a new entry (r's own block now the cache's) or, when another request that computed it
 * too entered it already, with a reference there (r's copy to free). How many were there already. */
uint32_t pc_enter_blocks(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t j0,
                         uint32_t j1);
/* r lets go of its blocks [0, n): each left unreferenced becomes evictable, the most recent. */
void pc_release(struct prefix_cache *pc, const struct pol_request *r, uint32_t block_size, uint32_t n);
/* Evicts up to n evictable blocks, the least recently released first: how many it freed. */
uint64_t pc_evict_n(struct prefix_cache *pc, uint64_t n);

#endif
