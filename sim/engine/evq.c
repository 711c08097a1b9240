/* sim/engine/evq.c: the pending-event set (evq.h), three interchangeable
 * structures behind one struct evq. The implicit d-ary heaps keep every event
 * in one array and differ only in arity, so one sift routine serves both and
 * is specialised by a constant arity; the pairing heap links nodes of a pool
 * by index. The implementation is switched on once per push or pop, never per
 * comparison, and every comparison is the inlined evq_before, so the order is
 * exactly the documented one in all three. bench/evq_bench.c measures them.
 */
#include "evq.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EVQ_FIRST_GROWTH 16          /* slots allocated by the first push into an empty queue */
#define PH_NIL UINT32_MAX            /* "no node" in the pairing heap's index links */
#define PH_FREE UINT32_MAX           /* the kind of a pool slot on the free list */

/* A pairing-heap node. Links are 32-bit pool indices rather than pointers so
 * the pool can move on realloc and a node stays 40 bytes. */
struct ph_node {
	struct event ev;             /* the event itself */
	uint32_t child;              /* leftmost child, or PH_NIL */
	uint32_t sibling;            /* next sibling; in the free list, the next free slot */
};

struct evq {
	struct evq_head head;        /* first: evq_peek reads it inline (evq.h) */
	enum evq_impl impl;          /* fixed at create time */
	size_t n;                    /* events held */
	size_t cap;                  /* slots allocated (heap array or node pool) */
	uint64_t next_seq;           /* seq given to the next successful push */
	evq_realloc_fn alloc;        /* every allocation goes through here */
	void *ud;                    /* not owned: passed to alloc */
	struct event *heap;          /* d-ary heaps: heap[0] is the minimum */
	struct ph_node *pool;        /* pairing heap: node storage */
	size_t pool_used;            /* pairing heap: slots ever handed out (live or free-listed) */
	uint32_t root;               /* pairing heap: the minimum's slot, or PH_NIL */
	uint32_t free_head;          /* pairing heap: most recently freed slot, or PH_NIL */
};

static const char *const evq_names[EVQ_IMPL_COUNT] = {
	[EVQ_BINARY_HEAP] = "binary-heap",
	[EVQ_QUAD_HEAP] = "quad-heap",
	[EVQ_PAIRING_HEAP] = "pairing-heap",
};

static void *evq_default_realloc(void *ud, void *ptr, size_t size)
{
	(void)ud;
	if (size == 0) {
		free(ptr);
		return NULL;
	}
	return realloc(ptr, size);
}

static size_t evq_slot_bytes(enum evq_impl impl)
{
	return impl == EVQ_PAIRING_HEAP ? sizeof(struct ph_node) : sizeof(struct event);
}

/* Resize the storage to new_cap slots; 0 or -1 with the queue unchanged. */
static int evq_set_capacity(struct evq *q, size_t new_cap)
{
	size_t slot = evq_slot_bytes(q->impl);

	if (new_cap > SIZE_MAX / slot)
		return -1;
	if (q->impl == EVQ_PAIRING_HEAP) {
		/* PH_NIL is not a slot, so indices stop one short of it */
		if (new_cap > PH_NIL)
			return -1;
		struct ph_node *p = q->alloc(q->ud, q->pool, new_cap * slot);
		if (!p)
			return -1;
		q->pool = p;
	} else {
		struct event *h = q->alloc(q->ud, q->heap, new_cap * slot);
		if (!h)
			return -1;
		q->heap = h;
	}
	q->cap = new_cap;
	return 0;
}

/* Double the storage (the pairing heap's pool is capped by its index width). */
static int evq_grow(struct evq *q)
{
	size_t new_cap;

	if (q->cap == 0)
		new_cap = EVQ_FIRST_GROWTH;
	else if (q->cap > SIZE_MAX / 2)
		return -1;
	else
		new_cap = q->cap * 2;
	if (q->impl == EVQ_PAIRING_HEAP && new_cap > PH_NIL) {
		if (q->cap == PH_NIL)
			return -1;
		new_cap = PH_NIL;
	}
	return evq_set_capacity(q, new_cap);
}

struct evq *evq_create_alloc(enum evq_impl impl, size_t initial_capacity,
			     evq_realloc_fn alloc, void *ud)
{
	struct evq *q;

	if ((unsigned)impl >= EVQ_IMPL_COUNT || !alloc)
		return NULL;
	q = alloc(ud, NULL, sizeof *q);
	if (!q)
		return NULL;
	memset(q, 0, sizeof *q);
	q->impl = impl;
	q->alloc = alloc;
	q->ud = ud;
	q->root = PH_NIL;
	q->free_head = PH_NIL;
	q->head.top = NULL;
	if (initial_capacity > 0 && evq_set_capacity(q, initial_capacity) != 0)
		goto fail;
	return q;
fail:
	alloc(ud, q, 0);
	return NULL;
}

struct evq *evq_create(enum evq_impl impl, size_t initial_capacity)
{
	return evq_create_alloc(impl, initial_capacity, evq_default_realloc, NULL);
}

void evq_destroy(struct evq *q)
{
	if (!q)
		return;
	if (q->heap)
		q->alloc(q->ud, q->heap, 0);
	if (q->pool)
		q->alloc(q->ud, q->pool, 0);
	q->alloc(q->ud, q, 0);
}

size_t evq_size(const struct evq *q)
{
	return q->n;
}

const char *evq_impl_name(enum evq_impl impl)
{
	if ((unsigned)impl >= EVQ_IMPL_COUNT)
		return NULL;
	return evq_names[impl];
}

int evq_impl_from_name(const char *name, enum evq_impl *out)
{
	for (unsigned i = 0; i < EVQ_IMPL_COUNT; i++) {
		if (strcmp(name, evq_names[i]) == 0) {
			*out = (enum evq_impl)i;
			return 0;
		}
	}
	return -1;
}

/* --- implicit d-ary heaps ------------------------------------------------
 * Both sifts move a hole instead of swapping, so each level costs one copy.
 * d is always a literal at the call sites below: once inlined, the index
 * arithmetic becomes shifts and the child scan is unrolled. */

static inline void dheap_sift_up(struct event *a, size_t i, struct event x, size_t d)
{
	while (i > 0) {
		size_t p = (i - 1) / d;
		if (!evq_before(&x, &a[p]))
			break;
		a[i] = a[p];
		i = p;
	}
	a[i] = x;
}

static inline void dheap_sift_down(struct event *a, size_t n, struct event x, size_t d)
{
	size_t i = 0;

	for (;;) {
		size_t c = d * i + 1;
		if (c >= n)
			break;
		size_t end = n - c < d ? n : c + d;
		size_t best = c;
		for (size_t j = c + 1; j < end; j++)
			if (evq_before(&a[j], &a[best]))
				best = j;
		if (!evq_before(&a[best], &x))
			break;
		a[i] = a[best];
		i = best;
	}
	a[i] = x;
}

static void binary_push(struct event *a, size_t n, struct event x) { dheap_sift_up(a, n, x, 2); }
static void quad_push(struct event *a, size_t n, struct event x) { dheap_sift_up(a, n, x, 4); }
static void binary_pop(struct event *a, size_t n) { dheap_sift_down(a, n, a[n], 2); }
static void quad_pop(struct event *a, size_t n) { dheap_sift_down(a, n, a[n], 4); }

/* --- pairing heap ----------------------------------------------------------
 * Fredman, Sedgewick, Sleator and Tarjan (1986), two-pass variant: O(1) push,
 * O(log n) amortised pop. */

/* Make the later of two roots the leftmost child of the earlier; returns the
 * winner, whose sibling link the caller must set. */
static inline uint32_t ph_link(struct ph_node *nd, uint32_t a, uint32_t b)
{
	if (evq_before(&nd[b].ev, &nd[a].ev)) {
		uint32_t t = a;
		a = b;
		b = t;
	}
	nd[b].sibling = nd[a].child;
	nd[a].child = b;
	return a;
}

/* Merge a sibling list into one tree: link pairs left to right, threading the
 * results onto a reversed list through their sibling links (no scratch
 * memory), then fold that list right to left. */
static uint32_t ph_merge_pairs(struct ph_node *nd, uint32_t first)
{
	uint32_t rev = PH_NIL;

	while (first != PH_NIL) {
		uint32_t a = first;
		uint32_t b = nd[a].sibling;
		if (b == PH_NIL) {
			nd[a].sibling = rev;
			rev = a;
			break;
		}
		first = nd[b].sibling;
		uint32_t m = ph_link(nd, a, b);
		nd[m].sibling = rev;
		rev = m;
	}
	if (rev == PH_NIL)
		return PH_NIL;
	uint32_t acc = rev;
	uint32_t next = nd[acc].sibling;
	while (next != PH_NIL) {
		uint32_t after = nd[next].sibling;
		acc = ph_link(nd, acc, next);
		next = after;
	}
	nd[acc].sibling = PH_NIL;
	return acc;
}

static void ph_push(struct evq *q, struct event x)
{
	uint32_t s;

	if (q->free_head != PH_NIL) {
		s = q->free_head;
		q->free_head = q->pool[s].sibling;
	} else {
		s = (uint32_t)q->pool_used++;
	}
	struct ph_node *nd = q->pool;
	nd[s].ev = x;
	nd[s].child = PH_NIL;
	if (q->root == PH_NIL) {
		nd[s].sibling = PH_NIL;
		q->root = s;
	} else {
		q->root = ph_link(nd, q->root, s);
		nd[q->root].sibling = PH_NIL;
	}
}

static void ph_pop(struct evq *q, struct event *out)
{
	struct ph_node *nd = q->pool;
	uint32_t old = q->root;

	*out = nd[old].ev;
	q->root = ph_merge_pairs(nd, nd[old].child);
	nd[old].ev.kind = PH_FREE;
	nd[old].sibling = q->free_head;
	q->free_head = old;
}

/* Decrease-key (Fredman et al.): the node's subtree is cut from its parent,
 * or from its left sibling, and melded with the root. Without parent links
 * the one pointing at it is found by a search over the live slots. */
static int ph_advance(struct evq *q, uint32_t kind, uint32_t aux, int64_t time_ns)
{
	struct ph_node *nd = q->pool;
	uint32_t s = PH_NIL;
	for (uint32_t i = 0; i < q->pool_used && s == PH_NIL; i++)
		if (nd[i].ev.kind == kind && nd[i].ev.aux == aux)
			s = i;
	if (s == PH_NIL)
		return 0;
	assert(time_ns <= nd[s].ev.time_ns);
	nd[s].ev.time_ns = time_ns;
	if (s == q->root)
		return 1;
	for (uint32_t i = 0; i < q->pool_used; i++) {
		if (nd[i].ev.kind == PH_FREE)
			continue;
		if (nd[i].child == s)
			nd[i].child = nd[s].sibling;
		else if (nd[i].sibling == s)
			nd[i].sibling = nd[s].sibling;
	}
	nd[s].sibling = PH_NIL;
	q->root = ph_link(nd, q->root, s);
	nd[q->root].sibling = PH_NIL;
	return 1;
}

/* --- the public operations ------------------------------------------------ */

/* The minimum's address for evq_peek, after every push or pop (a push may move the storage). */
static inline void evq_set_top(struct evq *q)
{
	if (q->n == 0)
		q->head.top = NULL;
	else
		q->head.top = q->impl == EVQ_PAIRING_HEAP ? &q->pool[q->root].ev : &q->heap[0];
}

int evq_push(struct evq *q, struct event ev)
{
	return evq_add(q, ev.time_ns, ev.key, ev.kind, ev.aux);
}

int evq_add(struct evq *q, int64_t time_ns, uint64_t key, uint32_t kind, uint32_t aux)
{
	struct event ev = { .time_ns = time_ns, .key = key, .kind = kind, .aux = aux };
	/* the pairing heap reuses freed slots, so it only needs new ones when
	 * every slot handed out so far is live */
	size_t needed = q->impl == EVQ_PAIRING_HEAP
		? (q->free_head == PH_NIL ? q->pool_used : 0) : q->n;
	if (needed == q->cap && evq_grow(q) != 0)
		return -1;
	ev.seq = q->next_seq++;
	switch (q->impl) {
	case EVQ_BINARY_HEAP:
		binary_push(q->heap, q->n, ev);
		break;
	case EVQ_QUAD_HEAP:
		quad_push(q->heap, q->n, ev);
		break;
	case EVQ_PAIRING_HEAP:
		ph_push(q, ev);
		break;
	default:
		assert(!"evq: impl checked at create");
		return -1;
	}
	q->n++;
	evq_set_top(q);
	return 0;
}

int evq_pop(struct evq *q, struct event *out)
{
	if (q->n == 0) {
		memset(out, 0, sizeof *out);
		return 0;
	}
	q->n--;
	switch (q->impl) {
	case EVQ_BINARY_HEAP:
		*out = q->heap[0];
		binary_pop(q->heap, q->n);
		break;
	case EVQ_QUAD_HEAP:
		*out = q->heap[0];
		quad_pop(q->heap, q->n);
		break;
	case EVQ_PAIRING_HEAP:
		ph_pop(q, out);
		break;
	default:
		assert(!"evq: impl checked at create");
		q->n++;
		return 0;
	}
	evq_set_top(q);
	return 1;
}

int evq_advance(struct evq *q, uint32_t kind, uint32_t aux, int64_t time_ns)
{
	int moved = 0;
	if (q->impl == EVQ_PAIRING_HEAP) {
		moved = ph_advance(q, kind, aux, time_ns);
	} else {
		for (size_t i = 0; i < q->n && !moved; i++) {
			if (q->heap[i].kind != kind || q->heap[i].aux != aux)
				continue;
			struct event x = q->heap[i];
			assert(time_ns <= x.time_ns);
			x.time_ns = time_ns;
			/* earlier: it can only rise */
			if (q->impl == EVQ_BINARY_HEAP)
				dheap_sift_up(q->heap, i, x, 2);
			else
				dheap_sift_up(q->heap, i, x, 4);
			moved = 1;
		}
	}
	evq_set_top(q);
	return moved;
}
