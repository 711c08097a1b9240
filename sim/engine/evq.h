/* sim/engine/evq.h: the pending-event set of the simulator, and the one total order
 * of events (DESIGN.md section 2: simultaneous events are ordered by request
 * id, then by event kind, never by memory address).
 *
 * Contract:
 *  - evq_pop returns events in evq_before() order: time, then key (request id,
 *    or the lowest request id of a task), then kind, then insertion sequence.
 *    Two queues fed the same pushes pop the same sequence, whatever the
 *    implementation.
 *  - evq_push overwrites ev.seq with the queue's own counter: 0 for the first
 *    push to a queue, then 1, 2, ... (failed pushes do not consume a number),
 *    so the order never depends on what the caller left in seq.
 *  - The queue owns its storage and grows as needed (push fails only when
 *    allocation fails: returns -1, and the queue is left unchanged).
 *  - Which implementation is used changes speed only, never results; the
 *    measurements behind EVQ_IMPL_DEFAULT are in bench/README.md.
 */
#ifndef SB_EVQ_H
#define SB_EVQ_H

#include <stddef.h>
#include <stdint.h>

enum ev_kind {
	EV_TASK_DONE = 0,  /* a device finished a task: delivered before arrivals at the same instant */
	EV_ARRIVAL = 1,    /* a request arrives */
	EV_WAKEUP = 2,     /* a policy asked to be polled again */
};

struct event {
	int64_t time_ns;   /* simulated time */
	uint64_t key;      /* request id (arrival), lowest request id (task done), 0 (wakeup) */
	uint32_t kind;     /* enum ev_kind */
	uint32_t aux;      /* device index for task-done, unused otherwise */
	uint64_t seq;      /* insertion sequence, set by evq_push */
};

/* a strictly before b in the total order */
static inline int evq_before(const struct event *a, const struct event *b)
{
	if (a->time_ns != b->time_ns) return a->time_ns < b->time_ns;
	if (a->key != b->key) return a->key < b->key;
	if (a->kind != b->kind) return a->kind < b->kind;
	return a->seq < b->seq;
}

struct evq;

/* What evq_peek reads: the first member of every struct evq. */
struct evq_head {
	const struct event *top;     /* the minimum, NULL when empty */
};

enum evq_impl {
	EVQ_BINARY_HEAP = 0,   /* implicit 2-ary heap in one array */
	EVQ_QUAD_HEAP = 1,     /* implicit 4-ary heap in one array */
	EVQ_PAIRING_HEAP = 2,  /* two-pass pairing heap over a node pool (at most 2^32-1 events) */
	EVQ_IMPL_COUNT
};

/* The implementation the simulator uses unless told otherwise (chosen by the
 * hold benchmark, bench/evq_bench.c; numbers in bench/README.md). */
#define EVQ_IMPL_DEFAULT EVQ_QUAD_HEAP

/* Allocation hook, realloc-shaped: returns a block of size bytes holding the
 * old contents of ptr (NULL: a new block), or NULL on failure with ptr still
 * valid; size 0 frees ptr and returns NULL. ud is passed through untouched. */
typedef void *(*evq_realloc_fn)(void *ud, void *ptr, size_t size);

/* A new empty queue with room for initial_capacity events before its first
 * growth (0 is allowed: storage is then allocated on the first push).
 * Returns NULL for an unknown impl or when allocation fails. The caller owns
 * the queue and frees it with evq_destroy. */
struct evq *evq_create(enum evq_impl impl, size_t initial_capacity);

/* evq_create with every allocation of the queue (its header included) going
 * through alloc(ud, ...), so tests can inject failures. alloc must not be
 * NULL; ud is not owned by the queue. */
struct evq *evq_create_alloc(enum evq_impl impl, size_t initial_capacity,
			     evq_realloc_fn alloc, void *ud);

void evq_destroy(struct evq *q);                   /* NULL is a no-op */
int evq_push(struct evq *q, struct event ev);      /* 0 or -1 (out of memory) */
/* evq_push with the fields as arguments: the engine's hot path uses it,
 * because a caller that builds a struct event on the stack and passes it by
 * value makes the CPU reload freshly written narrow fields as one wide copy
 * (a store-forwarding stall measured at a quarter of the engine loop). */
int evq_add(struct evq *q, int64_t time_ns, uint64_t key, uint32_t kind, uint32_t aux);
int evq_pop(struct evq *q, struct event *out);     /* 1 popped, 0 empty (then *out is zeroed) */
/* Moves the queued event of this kind and aux earlier, to time_ns (no later
 * than its time; key and seq kept): the engine ends a device's run sooner.
 * 1 moved, 0 when no such event is queued. A search through the events: for
 * queues of a few per device. */
int evq_advance(struct evq *q, uint32_t kind, uint32_t aux, int64_t time_ns);
/* NULL when empty; valid until the next push or pop. Inline: the engine
 * looks at the next event several times a request. */
static inline const struct event *evq_peek(const struct evq *q)
{
	return ((const struct evq_head *)(const void *)q)->top;
}
size_t evq_size(const struct evq *q);

/* Stable lower-case name ("binary-heap", "quad-heap", "pairing-heap"),
 * or NULL for a value outside the enum. */
const char *evq_impl_name(enum evq_impl impl);

/* The impl whose evq_impl_name is name: 0 and *out set, or -1 (unknown name,
 * *out untouched). */
int evq_impl_from_name(const char *name, enum evq_impl *out);

#endif
