/* tests/test_router.c: prefix-affinity's choices for prompts given as hash
 * ids (a Mooncake trace's), by hand. The router sends a prompt where its
 * leading hash ids went before when they cover more than 0.3 of it (ties:
 * fewer outstanding), else to the replica whose record (tokens sent there
 * that matched nothing) is smallest; an id stands for its block and every
 * block before it. least-outstanding's and least-kv's ties, by hand: taken
 * in turn from the replica after the last pick. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <cmocka.h>
#include "../policies/router/router.h"

struct fixture {
	const struct router_ops *ops;
	void *state;
	uint32_t outstanding[80];
	uint64_t kv_used[80], kv_blocks[80];
	struct router_view view;
};

/* The router on n replicas, its knobs their defaults but the pairs given in knobs (NULL-terminated). */
static void open_router_with(struct fixture *f, uint32_t n, const char *const *knobs)
{
	f->ops = router_find("prefix-affinity");
	assert_non_null(f->ops);
	f->state = calloc(1, f->ops->state_size);
	assert_non_null(f->state);
	struct opt_set params;
	char err[200];
	opt_defaults(&params, f->ops->params, f->ops->nparams);
	for (; knobs && knobs[0]; knobs += 2)
		assert_int_equal(opt_put(&params, knobs[0], knobs[1], err, sizeof err), 0);
	assert_int_equal(f->ops->init(f->state, n, &params), 0);
	f->view = (struct router_view){ .n = n, .outstanding = f->outstanding, .kv_used = f->kv_used,
	                                .kv_blocks = f->kv_blocks };
}

static void open_router(struct fixture *f, uint32_t n)
{
	open_router_with(f, n, NULL);   /* the knobs' defaults, as a run without them gives */
}

static void close_router(struct fixture *f)
{
	if (f->ops->fini)
		f->ops->fini(f->state);
	free(f->state);
}

static uint32_t route(struct fixture *f, uint32_t input_len, const uint64_t *ids, uint32_t nids)
{
	struct pol_request r = { .input_len = input_len, .hash_ids = ids, .nhash = nids, .hash_block = 512 };
	return f->ops->choose(&f->view, &r, f->state);
}

static void test_hash_ids_by_hand(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	open_router(&f, 3);
	/* nothing sent yet: the smallest record, the lowest index of equals; records 1536, 1024, 0 */
	assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 3 }, 3), 0);
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 4, 5 }, 2), 1);
	/* ids 1, 2 went to 0: 1024 of 1536 tokens (0.67): there; its record grows by the 512 unmatched */
	assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 6 }, 3), 0);
	/* id 1 alone covers 512 of 2560 (0.2): no affinity; the smallest record, replica 2's 0 */
	assert_int_equal(route(&f, 2560, (const uint64_t[]){ 1, 7, 8, 9, 10 }, 5), 2);
	/* 1, 7, 8 went to 2: 1536 of 1800 tokens there against 512 at 0 */
	assert_int_equal(route(&f, 1800, (const uint64_t[]){ 1, 7, 8, 11 }, 4), 2);
	/* a match is a leading run of ids: 1, 5 matches 1 at 0 and at 2, and nothing at 1 (which has 5, but
	 * after 4); 512 of 1024 at 0 and 2, equal: the fewer outstanding */
	f.outstanding[0] = 2;
	f.outstanding[2] = 1;
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 1, 5 }, 2), 2);
	f.outstanding[2] = 3;
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 1, 12 }, 2), 0);
	/* the last id covers the prompt's end, not a whole block: 1, 2, 3 (1536) cover all of 1500 at 0 */
	assert_int_equal(route(&f, 1500, (const uint64_t[]){ 1, 2, 3 }, 3), 0);
	close_router(&f);
}

/* Past 64 replicas, a hash id's replicas take a second word: 70 distinct prompts fill replicas 0-69 in
 * turn (each the smallest record), and a prompt beginning with the last one's id goes to 69. */
static void test_hash_ids_past_64_replicas(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	open_router(&f, 70);
	for (uint64_t i = 0; i < 70; i++)
		assert_int_equal(route(&f, 512, (const uint64_t[]){ 1000 + i }, 1), i);
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 1069, 5000 }, 2), 69);
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 1064, 5001 }, 2), 64);
	close_router(&f);
}

/* The knobs, by hand: the cache threshold a match must pass, and the balance that overrides a match. */
static void test_knobs_by_hand(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	/* records 1536, 1024, 0 as above; ids 1, 2 cover 1024 of 1536 (0.67) at replica 0, not above 0.7:
	 * the smallest record, replica 2 */
	open_router_with(&f, 3, (const char *const[]){ "cache-threshold", "0.7", NULL });
	assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 3 }, 3), 0);
	assert_int_equal(route(&f, 1024, (const uint64_t[]){ 4, 5 }, 2), 1);
	assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 6 }, 3), 2);
	close_router(&f);
	/* one request outstanding at 0, none elsewhere: in balance by default (1 is not above 64), so the
	 * whole match at 0 wins; out of balance at 0 and 1 (1 > 0 and 1 > 1 x 0): the least loaded, 1 */
	for (int tight = 0; tight < 2; tight++) {
		open_router_with(&f, 3, tight ? (const char *const[]){ "balance-abs-threshold", "0", "balance-rel-threshold",
		                                                        "1", NULL } : NULL);
		assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 3 }, 3), 0);
		f.outstanding[0] = 1;
		assert_int_equal(route(&f, 1536, (const uint64_t[]){ 1, 2, 3 }, 3), tight ? 1 : 0);
		f.outstanding[0] = 0;
		close_router(&f);
	}
}

/* A router without knobs on n replicas, its state zeroed as the engine gives it. */
static void open_plain(struct fixture *f, const char *name, uint32_t n)
{
	f->ops = router_find(name);
	assert_non_null(f->ops);
	f->state = calloc(1, f->ops->state_size);
	assert_non_null(f->state);
	f->view = (struct router_view){ .n = n, .outstanding = f->outstanding, .kv_used = f->kv_used,
	                                .kv_blocks = f->kv_blocks };
}

static void test_least_outstanding_ties_in_turn(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	open_plain(&f, "least-outstanding", 3);
	/* all idle: 0, then the turn is 1 */
	assert_int_equal(route(&f, 100, NULL, 0), 0);
	/* 0 holds one: from 1 on, 1 and 2 tie at 0 requests: 1, the turn 2 */
	f.outstanding[0] = 1;
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	/* all idle again: from 2 on, 2 (lowest index first would give 0); the turn wraps to 0 */
	f.outstanding[0] = 0;
	assert_int_equal(route(&f, 100, NULL, 0), 2);
	assert_int_equal(route(&f, 100, NULL, 0), 0);
	/* {2, 1, 1}, the turn 1: a strict minimum wins wherever the turn is: 1 or 2; 1 is met first */
	f.outstanding[0] = 2;
	f.outstanding[1] = 1;
	f.outstanding[2] = 1;
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	/* the turn 2: the tie of 1 and 2 now goes to 2; {0, 1, 1}: 0 however the turn lies */
	assert_int_equal(route(&f, 100, NULL, 0), 2);
	f.outstanding[0] = 0;
	assert_int_equal(route(&f, 100, NULL, 0), 0);
	close_router(&f);
}

static void test_least_kv_ties_in_turn(void **state)
{
	(void)state;
	struct fixture f = { 0 };
	open_plain(&f, "least-kv", 3);
	/* 100 blocks each; 10, 5 and 5 held (0.1, 0.05, 0.05), 2 requests at 1 and 2: the tie of 1 and 2 from
	 * the turn 0: 1 (turn 2), then 2 (turn 0), then 1 */
	for (int i = 0; i < 3; i++)
		f.kv_blocks[i] = 100;
	f.kv_used[0] = 10;
	f.kv_used[1] = f.kv_used[2] = 5;
	f.outstanding[1] = f.outstanding[2] = 2;
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	assert_int_equal(route(&f, 100, NULL, 0), 2);
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	/* the turn 2, but fewer outstanding at 1 breaks the KV tie before the turn does */
	f.outstanding[1] = 1;
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	/* the turn 2 again; 2's cache half the size: 5 of 50 (0.1), as full as 0's: 1's 0.05 wins */
	f.kv_blocks[2] = 50;
	assert_int_equal(route(&f, 100, NULL, 0), 1);
	close_router(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_ids_by_hand),
		cmocka_unit_test(test_hash_ids_past_64_replicas),
		cmocka_unit_test(test_knobs_by_hand),
		cmocka_unit_test(test_least_outstanding_ties_in_turn),
		cmocka_unit_test(test_least_kv_ties_in_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
