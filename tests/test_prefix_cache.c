/* tests/test_prefix_cache.c: the prefix cache (policies/llm/prefix_cache.h)
 * against a second, naive implementation: every cached block one row under
 * its identity (which prefix, session or request, and its index), evicted by
 * a scan for the least recently released. Random request lives (admitted
 * with what the cache holds, blocks computed, finished or preempted and
 * admitted again) drive both; every answer and count must agree. The real
 * cache keeps a request's private blocks as runs and never hashes them while
 * held, and shared blocks in chunks of PC_CHUNK_BLOCKS with their holders
 * counted by where they end, so this is the check that it still behaves
 * block by block. Two shapes: short prompts in a small cache, and prefixes
 * and hashed blocks long enough to span several chunks. Two of the three
 * prefixes are two-level: their first tokens an inner prefix the two share
 * (a group's system prompt inside whole prompts), over one length each. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>
#include "../policies/llm/prefix_cache.h"

#define BS 4                  /* tokens a block */
#define MAXCAP 320            /* blocks in the cache, at most */
#define NREQ 24               /* requests alive at once */

/* A shape of the random lives. */
struct shape {
	uint32_t cap;             /* blocks in the cache */
	uint32_t input, prefix;   /* prompt tokens: 8 + up to input; a prefix's: 4 + up to prefix */
	uint32_t hash_block;      /* a hash id's tokens */
	uint32_t look;            /* a lookup's limit: up to look blocks */
};
static const struct shape *shape;

/* ---- the naive cache ---- */
struct naive_block {
	int used;
	char kind;                /* 'p' a prefix's, 'i' an inner prefix's, 'h' a hash id's, 's' a session's, 'r' a
	                           * request's own */
	uint64_t owner;           /* which prefix, hash id, session or request */
	uint32_t j;               /* the block's index in its requests */
	uint32_t refs;
	uint64_t released;        /* when its references fell to 0: the eviction order */
};

static struct naive_block naive[MAXCAP];
static uint64_t naive_clock, naive_evictions;

static uint32_t naive_shared(const struct pol_request *r)
{
	if (r->hash_ids) {
		uint64_t hashed = (uint64_t)r->nhash * r->hash_block;
		return (uint32_t)((hashed < r->input_len ? hashed : r->input_len) / BS);
	}
	return r->prefix_id ? r->prefix_len / BS : 0;
}

/* Block j's identity as the header defines it (independent of the real cache's keys). */
static void naive_id(const struct pol_request *r, uint32_t j, char *kind, uint64_t *owner)
{
	if (j < naive_shared(r) && r->hash_ids) {
		*kind = 'h';
		*owner = r->hash_ids[((uint64_t)(j + 1) * BS - 1) / r->hash_block];
	} else if (j < naive_shared(r) && r->inner_id && j < r->inner_len / BS) {
		*kind = 'i';
		*owner = r->inner_id;
	} else if (j < naive_shared(r)) {
		*kind = 'p';
		*owner = r->prefix_id;
	} else if (r->session_id) {
		*kind = 's';
		*owner = r->session_id;
	} else {
		*kind = 'r';
		*owner = r->id;
	}
}

static struct naive_block *naive_find(const struct pol_request *r, uint32_t j)
{
	char kind;
	uint64_t owner;
	naive_id(r, j, &kind, &owner);
	for (uint32_t i = 0; i < shape->cap; i++)
		if (naive[i].used && naive[i].kind == kind && naive[i].owner == owner && naive[i].j == j)
			return &naive[i];
	return NULL;
}

static uint32_t naive_lookup(const struct pol_request *r, uint32_t max, uint32_t *evictable)
{
	uint32_t n = 0;
	struct naive_block *b;
	*evictable = 0;
	for (; n < max && (b = naive_find(r, n)); n++)
		*evictable += b->refs == 0;
	return n;
}

static int naive_enter(const struct pol_request *r, uint32_t j)
{
	struct naive_block *b = naive_find(r, j);
	if (b) {
		b->refs++;
		return 0;
	}
	for (uint32_t i = 0; i < shape->cap; i++)
		if (!naive[i].used) {
			naive[i] = (struct naive_block){ .used = 1, .refs = 1, .j = j };
			naive_id(r, j, &naive[i].kind, &naive[i].owner);
			return 1;
		}
	fail_msg("naive cache full");
	return -1;
}

static void naive_release(const struct pol_request *r, uint32_t n)
{
	for (uint32_t j = n; j-- > 0;) {
		struct naive_block *b = naive_find(r, j);
		if (--b->refs == 0)
			b->released = ++naive_clock;
	}
}

static int naive_evict(void)
{
	struct naive_block *oldest = NULL;
	for (uint32_t i = 0; i < shape->cap; i++)
		if (naive[i].used && naive[i].refs == 0 && (!oldest || naive[i].released < oldest->released))
			oldest = &naive[i];
	if (!oldest)
		return 0;
	oldest->used = 0;
	naive_evictions++;
	return 1;
}

static void naive_counts(uint64_t *entries, uint64_t *evictable)
{
	*entries = *evictable = 0;
	for (uint32_t i = 0; i < shape->cap; i++) {
		*entries += naive[i].used;
		*evictable += naive[i].used && naive[i].refs == 0;
	}
}

/* ---- the random lives ---- */
static uint64_t rng_state;
static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005u + 1442695040888963407u;
	return (uint32_t)((rng_state >> 33) % n);
}

struct life {
	struct pol_request r;
	int running;
	uint32_t held;            /* its leading blocks it holds while running */
	uint64_t hashes[4];
};

static uint64_t next_id;

/* A new request: a prefix (one of 3) or a hash-id prompt, a session (one of 3) or none. */
static void new_life(struct life *l)
{
	memset(l, 0, sizeof *l);
	l->r.id = next_id++;
	l->r.input_len = 8 + rnd(shape->input);
	l->r.chain_len = 1;
	switch (rnd(4)) {
	case 0:
		l->r.prefix_id = 1 + rnd(3);
		l->r.prefix_len = 4 + rnd(shape->prefix);
		if (l->r.prefix_id < 3) {     /* inner prefix 7 over half or all of the longest prefix, within this one */
			uint32_t inner = (uint32_t)l->r.prefix_id * shape->prefix / 2;
			l->r.inner_id = 7;
			l->r.inner_len = inner < l->r.prefix_len ? inner : l->r.prefix_len;
		}
		break;
	case 1:                   /* hash ids, the first shared by all such prompts */
		l->hashes[0] = 1000;
		for (int i = 1; i < 4; i++)
			l->hashes[i] = 1000 + rnd(3) * 10 + (uint64_t)i;
		l->r.hash_ids = l->hashes;
		l->r.nhash = 1 + rnd(4);
		l->r.hash_block = shape->hash_block;
		break;
	default:
		break;
	}
	if (rnd(3) == 0)
		l->r.session_id = 1 + rnd(3);
}

static void check_counts(const struct prefix_cache *pc)
{
	uint64_t entries, evictable;
	naive_counts(&entries, &evictable);
	assert_int_equal(pc->entries, entries);
	assert_int_equal(pc->evictable, evictable);
	assert_int_equal(pc->evictions, naive_evictions);
}

static void run_lives(const struct shape *sh, uint64_t seed, int steps)
{
	shape = sh;
	struct prefix_cache pc;
	struct life lives[NREQ];
	assert_int_equal(pc_init(&pc, shape->cap), 0);
	memset(naive, 0, sizeof naive);
	naive_clock = naive_evictions = 0;
	rng_state = seed;
	next_id = seed * 1000;
	for (int i = 0; i < NREQ; i++)
		new_life(&lives[i]);
	for (int step = 0; step < steps; step++) {
		struct life *l = &lives[rnd(NREQ)];
		if (!l->running) {                    /* admitted: takes what the cache holds for it */
			uint32_t max = 1 + rnd(shape->look), ev_real, ev_naive;
			uint32_t n = pc_lookup(&pc, &l->r, BS, max, &ev_real);
			assert_int_equal(n, naive_lookup(&l->r, max, &ev_naive));
			assert_int_equal(ev_real, ev_naive);
			pc_take(&pc, &l->r, BS, n);
			for (uint32_t j = 0; j < n; j++)
				naive_find(&l->r, j)->refs++;
			l->held = n;
			l->running = 1;
		} else if (rnd(5) > 1) {              /* computes its next block, evicting to make room */
			if (pc.entries == shape->cap) {
				int e = (int)pc_evict_n(&pc, 1);
				assert_int_equal(e, naive_evict());
				if (!e)
					continue;
			}
			assert_int_equal(pc_enter_blocks(&pc, &l->r, BS, l->held, l->held + 1) == 0, naive_enter(&l->r, l->held));
			l->held++;
		} else if (rnd(2)) {                  /* computes several at once (a prompt), room made in one go */
			uint32_t m = 1 + rnd(6);
			uint64_t want = m, freed = 0, room = shape->cap - pc.entries;
			if (room < want) {
				freed = pc_evict_n(&pc, want - room);
				uint64_t naive_freed = 0;
				while (naive_freed < want - room && naive_evict())
					naive_freed++;
				assert_int_equal(freed, naive_freed);
				if (room + freed < want)
					continue;
			}
			uint32_t already = 0;
			for (uint32_t j = l->held; j < l->held + m; j++)
				already += !naive_enter(&l->r, j);
			assert_int_equal(pc_enter_blocks(&pc, &l->r, BS, l->held, l->held + m), already);
			l->held += m;
		} else {                              /* finishes (a new request takes its place) or is preempted */
			int done = rnd(2);
			l->r.next_node = done ? 1 : 0;
			pc_release(&pc, &l->r, BS, l->held);
			naive_release(&l->r, l->held);
			l->running = 0;
			if (done)
				new_life(l);
		}
		check_counts(&pc);
		if (rnd(7) == 0)                      /* an eviction when none is needed: pressure */
			assert_int_equal(pc_evict_n(&pc, 1), naive_evict());
		if (rnd(11) == 0) {                   /* several at once, as llm_room asks */
			uint64_t n = 1 + rnd(8), naive_n = 0;
			while (naive_n < n && naive_evict())
				naive_n++;
			assert_int_equal(pc_evict_n(&pc, n), naive_n);
		}
	}
	pc_fini(&pc);
}

static void test_against_naive(void **state)
{
	(void)state;
	/* 6-token hash blocks straddle 4-token blocks; a chunk never fills */
	static const struct shape short_prompts = { .cap = 48, .input = 40, .prefix = 14, .hash_block = 6, .look = 14 };
	for (uint64_t seed = 1; seed <= 40; seed++)
		run_lives(&short_prompts, seed, 20000);
}

static void test_chunks_against_naive(void **state)
{
	(void)state;
	/* prefixes of up to 75 blocks and hash ids of 70 blocks (280 tokens): up to three chunks each, and
	 * blocks computed six at a time across a chunk's end */
	static const struct shape long_prompts = { .cap = 320, .input = 600, .prefix = 300, .hash_block = 280,
	                                           .look = 160 };
	for (uint64_t seed = 1; seed <= 12; seed++)
		run_lives(&long_prompts, seed, 12000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_against_naive),
		cmocka_unit_test(test_chunks_against_naive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
