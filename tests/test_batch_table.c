/* tests/test_batch_table.c: the BatchTable stack (policies/batch_table.h)
 * driven by hand, node boundary by node boundary:
 *  - LazyBatching Fig. 10: the stack after every push and merge for the
 *    figure's arrivals (Req2 during Req1's node B, Req3 during Req2's node
 *    A), every lazy batching approved;
 *  - a dynamic graph: a sub-batch split when one member's encoder ends, and
 *    merged again at the same node type although the two requests are at
 *    different unrolled positions;
 *  - a push that joins the active batch at the same node type;
 *  - a sub-batch larger than the cell limit is run in parts that catch up;
 *  - completed requests leave the table.
 * Each request's chain of node types is written out by hand here; the test
 * plays the caller: it advances the members of every issued task. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>
#include "policies/batch_table.h"

#define MAXCHAIN 32

struct fake {
	struct pol_request r;
	uint32_t chain[MAXCHAIN];   /* node type at each unrolled position */
	uint32_t cells[MAXCHAIN];   /* cells at each position (0 = 1) */
};

static void fake_init(struct fake *f, uint64_t id, const uint32_t *chain, uint32_t n)
{
	memset(f, 0, sizeof *f);
	f->r.id = id;
	f->r.chain_len = n;
	memcpy(f->chain, chain, n * sizeof *chain);
	f->r.node_type_cache = chain[0];
	f->r.cells_cache = 1;
}

static void fake_sync(struct fake *f)
{
	if (f->r.next_node < f->r.chain_len) {
		f->r.node_type_cache = f->chain[f->r.next_node];
		f->r.cells_cache = f->cells[f->r.next_node] ? f->cells[f->r.next_node] : 1;
	}
}

/* The caller's side of a task: each member runs its next node, looked up
 * anew in its chain (so every member not done counts as respanned). */
static void run_task(struct batch_table *bt, struct pol_task *t)
{
	t->finished = t->respanned = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct fake *f = (struct fake *)t->reqs[i];   /* r is the first member */
		assert_int_equal(f->r.node_type_cache, t->node_type);
		f->r.next_node++;
		fake_sync(f);
		if (pol_req_done(&f->r))
			t->finished++;
		else
			t->respanned++;
	}
	bt_task_done(bt, t);
}

/* The stack, bottom to top, as "KEY:ids | KEY:ids" with node types as
 * letters (A = 0) and request ids sorted within an entry. */
static const char *stack_str(const struct batch_table *bt)
{
	static char buf[512];
	size_t len = 0;
	buf[0] = 0;
	for (uint32_t e = 0; e < bt->depth; e++) {
		const struct bt_entry *en = &bt->entries[e];
		uint64_t ids[64];
		uint32_t n = en->n;
		for (uint32_t i = 0; i < n; i++)
			ids[i] = bt->members[en->first + i]->id;
		for (uint32_t i = 1; i < n; i++)
			for (uint32_t j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
				uint64_t t = ids[j];
				ids[j] = ids[j - 1];
				ids[j - 1] = t;
			}
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%c:", e ? " | " : "", 'A' + (int)en->key);
		for (uint32_t i = 0; i < n; i++)
			len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%llu", i ? "," : "", (unsigned long long)ids[i]);
	}
	return buf;
}

static void push1(struct batch_table *bt, struct fake *f)
{
	struct pol_request *r = &f->r;
	bt_push(bt, &r, 1);
}

static void issue(struct batch_table *bt, uint32_t max_cells, struct pol_task *t, uint32_t node, uint32_t nreq)
{
	assert_int_equal(bt_issue(bt, max_cells, t), 1);
	assert_int_equal(t->kind, POL_TASK_NODE);
	assert_int_equal(t->node_type, node);
	assert_int_equal(t->nreq, nreq);
}

enum { A, B, C, D, E, F, G, H };

/* Fig. 10: an 8-node graph A..H; Req1 starts at t=2; Req2 arrives while Req1
 * runs B, Req3 while Req2 runs A; the predictor approves every lazy batch.
 * The figure's stack, bottom to top (the figure draws the top at the bottom):
 *   t=2 push Req1 at A          [1:A]
 *   t=4 Req1 preempted at C,
 *       push Req2 at A          [1:C, 2:A]
 *   t=5 Req2 preempted at B,
 *       push Req3 at A          [1:C, 2:B, 3:A]
 *   t=6 Req3 reaches B: merge   [1:C, 2-3:B]
 *   t=7 Req2-3 reach C: merge   [1-3:C]
 * then Req1-3 run C..H as one batch and leave together. */
static void test_fig10(void **state)
{
	(void)state;
	static const uint32_t graph[8] = { A, B, C, D, E, F, G, H };
	struct fake req[4];
	for (int i = 1; i <= 3; i++)
		fake_init(&req[i], (uint64_t)i, graph, 8);
	struct batch_table bt;
	struct pol_request *slots[64];
	struct pol_task t = { .reqs = slots };
	assert_int_equal(bt_init(&bt, 64), 0);

	push1(&bt, &req[1]);                                    /* t=2 */
	assert_string_equal(stack_str(&bt), "A:1");
	issue(&bt, 64, &t, A, 1);
	run_task(&bt, &t);                                      /* t=3 */
	assert_string_equal(stack_str(&bt), "B:1");
	issue(&bt, 64, &t, B, 1);
	run_task(&bt, &t);                                      /* t=4, Req2 waiting */
	assert_string_equal(stack_str(&bt), "C:1");
	push1(&bt, &req[2]);
	assert_string_equal(stack_str(&bt), "C:1 | A:2");
	assert_int_equal(bt.preemptions, 1);
	issue(&bt, 64, &t, A, 1);
	assert_ptr_equal(t.reqs[0], &req[2].r);
	run_task(&bt, &t);                                      /* t=5, Req3 waiting */
	assert_string_equal(stack_str(&bt), "C:1 | B:2");
	push1(&bt, &req[3]);
	assert_string_equal(stack_str(&bt), "C:1 | B:2 | A:3");
	assert_int_equal(bt.preemptions, 2);
	assert_int_equal(bt.max_depth, 3);
	issue(&bt, 64, &t, A, 1);
	assert_ptr_equal(t.reqs[0], &req[3].r);
	run_task(&bt, &t);                                      /* t=6 */
	assert_string_equal(stack_str(&bt), "C:1 | B:2,3");
	assert_int_equal(bt.merges, 1);
	issue(&bt, 64, &t, B, 2);
	run_task(&bt, &t);                                      /* t=7 */
	assert_string_equal(stack_str(&bt), "C:1,2,3");
	assert_int_equal(bt.merges, 2);
	for (uint32_t node = C; node <= H; node++) {            /* t=7..13 */
		issue(&bt, 64, &t, node, 3);
		run_task(&bt, &t);
	}
	assert_int_equal(bt.depth, 0);
	assert_int_equal(bt.nmembers, 0);
	assert_int_equal(bt_issue(&bt, 64, &t), 0);
	assert_int_equal(bt.preemptions, 2);
	assert_int_equal(bt.merges, 2);
	assert_int_equal(bt.splits, 0);
	bt_fini(&bt);
}

/* A dynamic graph with encoder types A,B and decoder types C,D (node types
 * in graph order). Req1 has 1 input step and 2 output steps: A B C D C D;
 * Req2 has 2 input steps and 1 output step: A B A B C D. Started together,
 * they part after B (Req1 to C, Req2 back to A): the entry splits with the
 * one behind (A) on top. Req2 catches up and they merge at C, Req1 at
 * position 2 and Req2 at position 4: the same node type, another step. */
static void test_split_and_merge_across_steps(void **state)
{
	(void)state;
	static const uint32_t c1[6] = { A, B, C, D, C, D }, c2[6] = { A, B, A, B, C, D };
	struct fake req[3];
	fake_init(&req[1], 1, c1, 6);
	fake_init(&req[2], 2, c2, 6);
	struct batch_table bt;
	struct pol_request *slots[8], *both[2] = { &req[1].r, &req[2].r };
	struct pol_task t = { .reqs = slots };
	assert_int_equal(bt_init(&bt, 8), 0);
	bt_push(&bt, both, 2);
	assert_string_equal(stack_str(&bt), "A:1,2");
	assert_int_equal(bt.preemptions, 0);     /* nothing was running */
	issue(&bt, 8, &t, A, 2);
	run_task(&bt, &t);
	issue(&bt, 8, &t, B, 2);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:1 | A:2");
	assert_int_equal(bt.splits, 1);
	issue(&bt, 8, &t, A, 1);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:1 | B:2");
	issue(&bt, 8, &t, B, 1);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:1,2");
	assert_int_equal(bt.merges, 1);
	assert_int_equal(req[1].r.next_node, 2);
	assert_int_equal(req[2].r.next_node, 4);
	issue(&bt, 8, &t, C, 2);
	run_task(&bt, &t);
	issue(&bt, 8, &t, D, 2);
	run_task(&bt, &t);                       /* Req2 done; Req1 has one more step */
	assert_string_equal(stack_str(&bt), "C:1");
	assert_int_equal(bt.nmembers, 1);
	issue(&bt, 8, &t, C, 1);
	run_task(&bt, &t);
	issue(&bt, 8, &t, D, 1);
	run_task(&bt, &t);
	assert_int_equal(bt.depth, 0);
	bt_fini(&bt);
}

/* A request pushed while the active batch waits at the node type it starts
 * with joins that batch (a merge, not a preemption). Req1: A B A B (2 input
 * steps), after A, B it is at A again when Req2 (A B) is pushed. */
static void test_push_joins_top(void **state)
{
	(void)state;
	static const uint32_t c1[4] = { A, B, A, B }, c2[2] = { A, B };
	struct fake req[3];
	fake_init(&req[1], 1, c1, 4);
	fake_init(&req[2], 2, c2, 2);
	struct batch_table bt;
	struct pol_request *slots[4];
	struct pol_task t = { .reqs = slots };
	assert_int_equal(bt_init(&bt, 4), 0);
	push1(&bt, &req[1]);
	issue(&bt, 4, &t, A, 1);
	run_task(&bt, &t);
	issue(&bt, 4, &t, B, 1);
	run_task(&bt, &t);
	assert_int_equal(bt_room(&bt), 3);
	push1(&bt, &req[2]);
	assert_string_equal(stack_str(&bt), "A:1,2");
	assert_int_equal(bt.preemptions, 0);
	assert_int_equal(bt.merges, 1);
	issue(&bt, 4, &t, A, 2);
	run_task(&bt, &t);
	issue(&bt, 4, &t, B, 2);
	run_task(&bt, &t);
	assert_int_equal(bt.depth, 0);
	assert_int_equal(bt_room(&bt), 4);
	bt_fini(&bt);
}

/* Cells: two requests of 3 cells at A (say, tree levels) with a limit of 4
 * cells: the first runs A alone and waits at B while the second, now below
 * it and behind, is swapped to the top, runs A and merges at B, where each
 * has 1 cell. A lone member of 5 cells still runs (it cannot be split). */
static void test_cell_limit(void **state)
{
	(void)state;
	static const uint32_t c[2] = { A, B };
	struct fake req[4];
	for (int i = 1; i <= 3; i++)
		fake_init(&req[i], (uint64_t)i, c, 2);
	req[1].cells[0] = req[2].cells[0] = 3;
	req[3].cells[0] = 5;
	for (int i = 1; i <= 3; i++)
		fake_sync(&req[i]);
	struct batch_table bt;
	struct pol_request *slots[4], *both[2] = { &req[1].r, &req[2].r };
	struct pol_task t = { .reqs = slots };
	assert_int_equal(bt_init(&bt, 4), 0);
	bt_push(&bt, both, 2);
	issue(&bt, 4, &t, A, 1);
	assert_ptr_equal(t.reqs[0], &req[1].r);
	assert_string_equal(stack_str(&bt), "A:2 | A:1");
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "B:1 | A:2");
	issue(&bt, 4, &t, A, 1);
	assert_ptr_equal(t.reqs[0], &req[2].r);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "B:1,2");
	issue(&bt, 4, &t, B, 2);
	run_task(&bt, &t);
	assert_int_equal(bt.depth, 0);
	push1(&bt, &req[3]);
	issue(&bt, 4, &t, A, 1);
	run_task(&bt, &t);
	issue(&bt, 4, &t, B, 1);
	run_task(&bt, &t);
	assert_int_equal(bt.nmembers, 0);
	bt_fini(&bt);
}

/* Pushing several requests at once stacks one entry per starting node type,
 * the lowest on top, and a completed entry leaves the stack. */
static void test_push_groups(void **state)
{
	(void)state;
	static const uint32_t c1[1] = { C }, c2[2] = { A, C }, c3[1] = { C };
	struct fake req[4];
	fake_init(&req[1], 1, c1, 1);
	fake_init(&req[2], 2, c2, 2);
	fake_init(&req[3], 3, c3, 1);
	struct batch_table bt;
	struct pol_request *slots[4], *all[3] = { &req[1].r, &req[2].r, &req[3].r };
	struct pol_task t = { .reqs = slots };
	assert_int_equal(bt_init(&bt, 4), 0);
	bt_push(&bt, all, 3);
	assert_string_equal(stack_str(&bt), "C:1,3 | A:2");
	issue(&bt, 4, &t, A, 1);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:1,2,3");
	issue(&bt, 4, &t, C, 3);
	run_task(&bt, &t);
	assert_int_equal(bt.depth, 0);
	assert_int_equal(bt.nmembers, 0);

	/* three starting types: A (furthest behind) on top, then B, then C */
	static const uint32_t d1[3] = { A, B, C }, d2[2] = { B, C }, d3[1] = { C };
	fake_init(&req[1], 1, d1, 3);
	fake_init(&req[2], 2, d2, 2);
	fake_init(&req[3], 3, d3, 1);
	bt_push(&bt, all, 3);
	assert_string_equal(stack_str(&bt), "C:3 | B:2 | A:1");
	issue(&bt, 4, &t, A, 1);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:3 | B:1,2");
	issue(&bt, 4, &t, B, 2);
	run_task(&bt, &t);
	assert_string_equal(stack_str(&bt), "C:1,2,3");
	issue(&bt, 4, &t, C, 3);
	run_task(&bt, &t);
	assert_int_equal(bt.depth, 0);
	bt_fini(&bt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fig10),
		cmocka_unit_test(test_split_and_merge_across_steps),
		cmocka_unit_test(test_push_joins_top),
		cmocka_unit_test(test_cell_limit),
		cmocka_unit_test(test_push_groups),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
