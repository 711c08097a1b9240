/* policies/batch_table.c: LazyBatching's BatchTable stack (Sec. IV-B,
 * Fig. 10); see batch_table.h for the keying and splitting rules. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include "batch_table.h"

int bt_init(struct batch_table *bt, uint32_t cap)
{
	memset(bt, 0, sizeof *bt);
	bt->members = calloc(cap ? cap : 1, sizeof *bt->members);
	bt->entries = calloc(cap ? cap : 1, sizeof *bt->entries);
	if (!bt->members || !bt->entries) {
		bt_fini(bt);
		return -1;
	}
	bt->cap = cap;
	return 0;
}

void bt_fini(struct batch_table *bt)
{
	free(bt->members);
	free(bt->entries);
	bt->members = NULL;
	bt->entries = NULL;
}

static void bt_reverse(struct pol_request **a, uint32_t n)
{
	for (uint32_t i = 0, j = n; i + 1 < j; i++, j--) {
		struct pol_request *t = a[i];
		a[i] = a[j - 1];
		a[j - 1] = t;
	}
}

/* [a(m) | b(n-m)] -> [b | a], in place. */
static void bt_rotate(struct pol_request **a, uint32_t n, uint32_t m)
{
	bt_reverse(a, m);
	bt_reverse(a + m, n - m);
	bt_reverse(a, n);
}

/* Stacks the members in [first, first+n), which lie past the last entry, as
 * new entries: one per next node type, highest type at the bottom so the
 * group furthest behind runs first. Stable within a group (insertion sort:
 * n is at most the max batch). */
static void bt_stack_groups(struct batch_table *bt, uint32_t first, uint32_t n)
{
	struct pol_request **a = bt->members + first;
	for (uint32_t i = 1; i < n; i++) {
		struct pol_request *r = a[i];
		uint32_t j = i;
		while (j > 0 && pol_req_node(a[j - 1]) < pol_req_node(r)) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = r;
	}
	for (uint32_t i = 0; i < n;) {
		uint32_t key = pol_req_node(a[i]), j = i + 1;
		while (j < n && pol_req_node(a[j]) == key)
			j++;
		bt->entries[bt->depth++] = (struct bt_entry){ .key = key, .first = first + i, .n = j - i };
		i = j;
	}
	if (bt->depth > bt->max_depth)
		bt->max_depth = bt->depth;
}

/* Merges every pair of neighbouring entries that run the same node type,
 * from the top down, so a merge can cascade (Fig. 10 at t=6 and t=7). */
static void bt_merge_neighbours(struct batch_table *bt)
{
	uint32_t i = bt->depth;
	while (i-- > 1) {
		struct bt_entry *lo = &bt->entries[i - 1], *hi = &bt->entries[i];
		if (lo->key != hi->key)
			continue;
		lo->n += hi->n;
		memmove(hi, hi + 1, (size_t)(bt->depth - i - 1) * sizeof *hi);
		bt->depth--;
		bt->merges++;
	}
}

/* Merges neighbours; then, if the entry below the top is behind it in graph
 * order (it was split off at bt_issue and has not run the node the top just
 * ran), swaps the two so it catches up and merges. */
static void bt_settle(struct batch_table *bt)
{
	bt_merge_neighbours(bt);
	if (bt->depth < 2)
		return;
	struct bt_entry *lo = &bt->entries[bt->depth - 2], *hi = &bt->entries[bt->depth - 1];
	if (lo->key >= hi->key)
		return;
	struct bt_entry a = *lo, b = *hi;
	bt_rotate(bt->members + a.first, a.n + b.n, a.n);
	*lo = (struct bt_entry){ .key = b.key, .first = a.first, .n = b.n };
	*hi = (struct bt_entry){ .key = a.key, .first = a.first + b.n, .n = a.n };
	bt_merge_neighbours(bt);
}

void bt_push(struct batch_table *bt, struct pol_request *const *reqs, uint32_t n)
{
	assert(!bt->issued && n <= bt_room(bt));
	if (!n)
		return;
	uint32_t first = bt->nmembers, had = bt->depth;
	memcpy(bt->members + first, reqs, (size_t)n * sizeof *reqs);
	bt->nmembers += n;
	bt_stack_groups(bt, first, n);
	bt_merge_neighbours(bt);
	if (had && bt->depth > had)
		bt->preemptions++;
	bt_settle(bt);
}

int bt_issue(struct batch_table *bt, uint32_t max_cells, struct pol_task *task)
{
	assert(!bt->issued);
	if (!bt->depth)
		return 0;
	struct bt_entry *top = &bt->entries[bt->depth - 1];
	uint32_t m = 0, cells = 0;
	if (bt->unit_cells) {
		m = top->n < max_cells ? top->n : max_cells;
	} else {
		while (m < top->n) {
			uint32_t c = pol_req_cells(bt->members[top->first + m]);
			if (m > 0 && cells + c > max_cells)
				break;
			cells += c;
			m++;
		}
	}
	if (m < top->n) {
		/* the part that fits moves to the tail and becomes the top entry */
		bt_rotate(bt->members + top->first, top->n, m);
		top->n -= m;
		bt->entries[bt->depth++] = (struct bt_entry){ .key = top->key, .first = top->first + top->n, .n = m };
		if (bt->depth > bt->max_depth)
			bt->max_depth = bt->depth;
		top = &bt->entries[bt->depth - 1];
	}
	task->kind = POL_TASK_NODE;
	task->node_type = top->key;
	task->nreq = top->n;
	memcpy(task->reqs, bt->members + top->first, (size_t)top->n * sizeof *task->reqs);
	bt->issued = top->n;
	return 1;
}

void bt_task_done(struct batch_table *bt, const struct pol_task *t)
{
	assert(bt->issued && bt->depth);
	struct bt_entry *top = &bt->entries[bt->depth - 1];
	uint32_t end = top->first + top->n, w = end;
	if (t->finished) {
		w = top->first;
		for (uint32_t i = top->first; i < end; i++)
			if (!pol_req_done(bt->members[i]))
				bt->members[w++] = bt->members[i];
	}
	bt->nmembers -= end - w;
	top->n = w - top->first;
	bt->issued = 0;
	if (!top->n) {
		bt->depth--;
	} else {
		uint32_t key = pol_req_node(bt->members[top->first]), uniform = 1;
		for (uint32_t i = top->first + 1; t->respanned && i < w && uniform; i++)
			uniform = pol_req_node(bt->members[i]) == key;
		if (uniform) {
			top->key = key;
		} else {
			struct bt_entry old = *top;
			bt->depth--;
			bt_stack_groups(bt, old.first, old.n);
			bt->splits++;
		}
	}
	bt_settle(bt);
}
