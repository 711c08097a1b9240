/* tests/test_evq.c: the pending-event set (sim/evq.h) against independent
 * references: qsort with evq_before for a full drain, and a sorted array for
 * interleaved pushes and pops. Times and keys are drawn from small ranges so
 * that ties (same time, same key, same kind) are common and the seq tie-break
 * is exercised. Every implementation must pop the same sequence, bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim/engine/evq.h"

/* splitmix64: a fixed, self-contained stream so the test needs no RNG library */
static uint64_t tst_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15u);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
	return z ^ (z >> 31);
}

static uint64_t tst_below(uint64_t *s, uint64_t bound)
{
	return tst_next(s) % bound;
}

/* an event with many ties: 50 distinct times, 8 keys, 3 kinds, and a garbage
 * seq that evq_push must overwrite */
static struct event tst_event(uint64_t *s, int64_t base_ns)
{
	struct event ev = {
		.time_ns = base_ns + (int64_t)tst_below(s, 50),
		.key = tst_below(s, 8),
		.kind = (uint32_t)tst_below(s, 3),
		.aux = (uint32_t)tst_next(s),
		.seq = tst_next(s),
	};
	return ev;
}

static int tst_cmp(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;
	if (evq_before(a, b)) return -1;
	if (evq_before(b, a)) return 1;
	return 0;
}

static void tst_assert_event_eq(const struct event *got, const struct event *want)
{
	assert_int_equal(got->time_ns, want->time_ns);
	assert_int_equal(got->key, want->key);
	assert_int_equal(got->kind, want->kind);
	assert_int_equal(got->aux, want->aux);
	assert_int_equal(got->seq, want->seq);
}

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		const char *name = evq_impl_name((enum evq_impl)i);
		enum evq_impl back = EVQ_IMPL_COUNT;
		assert_non_null(name);
		assert_int_equal(evq_impl_from_name(name, &back), 0);
		assert_int_equal(back, i);
		for (int j = 0; j < i; j++)
			assert_string_not_equal(name, evq_impl_name((enum evq_impl)j));
	}
	enum evq_impl untouched = EVQ_QUAD_HEAP;
	assert_int_equal(evq_impl_from_name("no-such-queue", &untouched), -1);
	assert_int_equal(untouched, EVQ_QUAD_HEAP);
	assert_null(evq_impl_name(EVQ_IMPL_COUNT));
	assert_null(evq_create(EVQ_IMPL_COUNT, 4));
	assert_null(evq_create((enum evq_impl)-1, 4));
	assert_non_null(evq_impl_name(EVQ_IMPL_DEFAULT));
}

static void test_empty(void **state)
{
	(void)state;
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		struct evq *q = evq_create((enum evq_impl)i, 4);
		struct event out, zero;
		assert_non_null(q);
		memset(&zero, 0, sizeof zero);

		assert_int_equal(evq_size(q), 0);
		assert_null(evq_peek(q));
		memset(&out, 0xa5, sizeof out);
		assert_int_equal(evq_pop(q, &out), 0);
		assert_memory_equal(&out, &zero, sizeof out);

		/* empty again after one round trip, and still usable */
		struct event ev = { .time_ns = 7, .key = 3 };
		assert_int_equal(evq_push(q, ev), 0);
		assert_int_equal(evq_pop(q, &out), 1);
		assert_int_equal(out.time_ns, 7);
		assert_int_equal(evq_pop(q, &out), 0);
		assert_null(evq_peek(q));
		assert_int_equal(evq_push(q, ev), 0);
		assert_int_equal(evq_pop(q, &out), 1);
		assert_int_equal(out.seq, 1);
		evq_destroy(q);
	}
	evq_destroy(NULL);
}

/* 10k pushes then a full drain equals qsort of the same events */
static void test_drain_matches_qsort(void **state)
{
	enum { N = 10000 };
	(void)state;
	struct event *want = malloc(N * sizeof *want);
	assert_non_null(want);

	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		uint64_t s = 42;
		struct evq *q = evq_create((enum evq_impl)i, 16);
		assert_non_null(q);
		for (int k = 0; k < N; k++) {
			struct event ev = tst_event(&s, 0);
			assert_int_equal(evq_push(q, ev), 0);
			ev.seq = (uint64_t)k;   /* what the contract says push assigns */
			want[k] = ev;
		}
		assert_int_equal(evq_size(q), N);
		qsort(want, N, sizeof *want, tst_cmp);
		for (int k = 0; k < N; k++) {
			struct event got;
			const struct event *top = evq_peek(q);
			assert_non_null(top);
			tst_assert_event_eq(top, &want[k]);
			assert_int_equal(evq_pop(q, &got), 1);
			tst_assert_event_eq(&got, &want[k]);
			assert_int_equal(evq_size(q), (size_t)(N - k - 1));
		}
		assert_null(evq_peek(q));
		evq_destroy(q);
	}
	free(want);
}

/* The reference for interleaved use: an array kept sorted latest-first, so the
 * minimum is the last element. Insertion by linear scan: slow but obviously
 * right. */
struct tst_ref {
	struct event *a;
	size_t n;
};

static void tst_ref_push(struct tst_ref *r, struct event ev)
{
	size_t i = r->n;
	while (i > 0 && evq_before(&r->a[i - 1], &ev)) {
		r->a[i] = r->a[i - 1];
		i--;
	}
	r->a[i] = ev;
	r->n++;
}

/* Pops one event and checks it is the reference's minimum: 1 popped into
 * *got, 0 when both are empty. */
static int tst_pop_checked(struct evq *q, struct tst_ref *ref, struct event *got)
{
	int popped = evq_pop(q, got);
	assert_int_equal(popped, ref->n > 0);
	if (popped) {
		ref->n--;
		tst_assert_event_eq(got, &ref->a[ref->n]);
	}
	return popped;
}

/* The queue's size and top against the reference's. */
static void tst_check_top(const struct evq *q, const struct tst_ref *ref)
{
	assert_int_equal(evq_size(q), ref->n);
	const struct event *top = evq_peek(q);
	if (ref->n == 0)
		assert_null(top);
	else
		tst_assert_event_eq(top, &ref->a[ref->n - 1]);
}

/* one scripted run: pushes and pops with push probability push_pct, then a
 * full drain; times either stay near the last popped time (as in the
 * simulator, never in the past) or scatter over a window; every pop is
 * checked against the reference and appended to log */
static void tst_script(enum evq_impl impl, size_t cap, uint64_t seed, int ops,
		       unsigned push_pct, int monotone, struct event *log, size_t *logged)
{
	struct evq *q = evq_create(impl, cap);
	struct tst_ref ref = { .a = malloc((size_t)ops * sizeof(struct event)), .n = 0 };
	uint64_t s = seed, seq = 0;
	int64_t now = 0;
	assert_non_null(q);
	assert_non_null(ref.a);
	*logged = 0;

	for (int k = 0; k < ops; k++) {
		if (tst_below(&s, 100) < push_pct) {
			struct event ev = tst_event(&s, monotone ? now : (int64_t)tst_below(&s, 200));
			assert_int_equal(evq_push(q, ev), 0);
			ev.seq = seq++;
			tst_ref_push(&ref, ev);
		} else {
			struct event got;
			if (tst_pop_checked(q, &ref, &got)) {
				now = got.time_ns;
				log[(*logged)++] = got;
			}
		}
		tst_check_top(q, &ref);
	}
	struct event got;
	while (evq_pop(q, &got)) {
		assert_true(ref.n > 0);
		ref.n--;
		tst_assert_event_eq(&got, &ref.a[ref.n]);
		log[(*logged)++] = got;
	}
	assert_int_equal(ref.n, 0);
	free(ref.a);
	evq_destroy(q);
}

static void test_interleaved_matches_reference(void **state)
{
	enum { OPS = 20000 };
	(void)state;
	struct event *log = malloc(OPS * sizeof *log);
	size_t logged;
	assert_non_null(log);
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		/* growing, balanced and shrinking phases; scattered and monotone times */
		tst_script((enum evq_impl)i, 1, 7, OPS, 70, 0, log, &logged);
		tst_script((enum evq_impl)i, 1, 8, OPS, 50, 0, log, &logged);
		tst_script((enum evq_impl)i, 1, 9, OPS, 50, 1, log, &logged);
		tst_script((enum evq_impl)i, 0, 10, OPS, 30, 1, log, &logged);
	}
	free(log);
}

/* evq_advance against the reference: events with distinct aux (a device's
 * task end each), pushed, popped and moved earlier at random; the moved
 * event is taken out of the sorted reference and put back at its new time.
 * Every pop and every top must agree, in all three implementations. */
static void tst_advance_script(enum evq_impl impl, uint64_t seed, int ops)
{
	enum { DEVICES = 24 };
	struct evq *q = evq_create(impl, 1);
	struct tst_ref ref = { .a = malloc(DEVICES * sizeof(struct event)), .n = 0 };
	int queued[DEVICES] = { 0 };
	uint64_t s = seed, seq = 0, moved = 0;
	int64_t now = 0;
	assert_non_null(q);
	assert_non_null(ref.a);
	for (int k = 0; k < ops; k++) {
		uint32_t dev = (uint32_t)tst_below(&s, DEVICES);
		unsigned what = (unsigned)tst_below(&s, 3);
		if (what == 0 && !queued[dev]) {
			struct event ev = { .time_ns = now + 1 + (int64_t)tst_below(&s, 1000), .key = tst_below(&s, 8),
			                    .kind = (uint32_t)tst_below(&s, 2) * 2, .aux = dev };
			assert_int_equal(evq_push(q, ev), 0);
			ev.seq = seq++;
			tst_ref_push(&ref, ev);
			queued[dev] = 1;
		} else if (what == 1 && ref.n > 0) {
			size_t i = (size_t)tst_below(&s, ref.n);
			struct event ev = ref.a[i];
			int64_t to = now + (int64_t)tst_below(&s, (uint64_t)(ev.time_ns - now) + 1);
			assert_int_equal(evq_advance(q, ev.kind, ev.aux, to), 1);
			memmove(&ref.a[i], &ref.a[i + 1], (ref.n - i - 1) * sizeof ev);
			ref.n--;
			ev.time_ns = to;
			tst_ref_push(&ref, ev);
			moved++;
		} else if (what == 2) {
			struct event got;
			if (tst_pop_checked(q, &ref, &got)) {
				now = got.time_ns;
				queued[got.aux] = 0;
			}
		}
		if (!queued[dev])
			assert_int_equal(evq_advance(q, 0, dev, now), 0);
		tst_check_top(q, &ref);
	}
	assert_true(moved > (uint64_t)ops / 10);
	free(ref.a);
	evq_destroy(q);
}

static void test_advance_matches_reference(void **state)
{
	(void)state;
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		tst_advance_script((enum evq_impl)i, 21, 20000);
		tst_advance_script((enum evq_impl)i, 22, 20000);
	}
}

/* every implementation pops exactly the same sequence for the same pushes */
static void test_impls_identical(void **state)
{
	enum { OPS = 30000 };
	(void)state;
	struct event *first = malloc(OPS * sizeof *first);
	struct event *other = malloc(OPS * sizeof *other);
	assert_non_null(first);
	assert_non_null(other);
	for (int monotone = 0; monotone <= 1; monotone++) {
		size_t n_first, n_other;
		tst_script(EVQ_BINARY_HEAP, 8, 1234 + (uint64_t)monotone, OPS, 55, monotone,
			   first, &n_first);
		assert_true(n_first > OPS / 3);
		for (int i = 1; i < EVQ_IMPL_COUNT; i++) {
			tst_script((enum evq_impl)i, 8, 1234 + (uint64_t)monotone, OPS, 55,
				   monotone, other, &n_other);
			assert_int_equal(n_other, n_first);
			assert_memory_equal(other, first, n_first * sizeof *first);
		}
	}
	free(first);
	free(other);
}

/* starting from one slot (and from none), storage doubles as needed and the
 * order survives every move; worst-case input: strictly decreasing times */
static void test_growth(void **state)
{
	enum { N = 5000 };
	(void)state;
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		for (size_t cap = 0; cap <= 1; cap++) {
			struct evq *q = evq_create((enum evq_impl)i, cap);
			assert_non_null(q);
			for (int k = 0; k < N; k++) {
				struct event ev = { .time_ns = N - k, .key = (uint64_t)k };
				assert_int_equal(evq_push(q, ev), 0);
				assert_int_equal(evq_peek(q)->time_ns, N - k);
			}
			for (int k = 0; k < N; k++) {
				struct event got;
				assert_int_equal(evq_pop(q, &got), 1);
				assert_int_equal(got.time_ns, k + 1);
				assert_int_equal(got.seq, (uint64_t)(N - 1 - k));
			}
			assert_int_equal(evq_size(q), 0);
			evq_destroy(q);
		}
	}
}

/* fault injection: an allocator that refuses once its budget of successful
 * calls is spent, and counts live blocks so leaks show */
struct tst_alloc {
	int budget;          /* successful allocations left; frees are always allowed */
	int live;            /* blocks currently held */
};

static void *tst_realloc(void *ud, void *ptr, size_t size)
{
	struct tst_alloc *a = ud;
	if (size == 0) {
		if (ptr)
			a->live--;
		free(ptr);
		return NULL;
	}
	if (a->budget == 0)
		return NULL;
	a->budget--;
	void *p = realloc(ptr, size);
	if (p && !ptr)
		a->live++;
	return p;
}

static void test_alloc_failure(void **state)
{
	(void)state;
	for (int i = 0; i < EVQ_IMPL_COUNT; i++) {
		enum evq_impl impl = (enum evq_impl)i;
		struct tst_alloc a = { .budget = 0 };

		/* the header, then the initial storage, fail cleanly */
		assert_null(evq_create_alloc(impl, 4, tst_realloc, &a));
		a.budget = 1;
		assert_null(evq_create_alloc(impl, 4, tst_realloc, &a));
		assert_int_equal(a.live, 0);
		/* a capacity whose size overflows is refused, not wrapped */
		a.budget = 10;
		assert_null(evq_create_alloc(impl, SIZE_MAX / 2, tst_realloc, &a));
		assert_int_equal(a.live, 0);

		/* header + 2 slots, one growth to 4, then the next growth fails */
		a.budget = 3;
		struct evq *q = evq_create_alloc(impl, 2, tst_realloc, &a);
		assert_non_null(q);
		for (int k = 0; k < 4; k++) {
			struct event ev = { .time_ns = 100 - k };
			assert_int_equal(evq_push(q, ev), 0);
		}
		struct event late = { .time_ns = 1 };
		assert_int_equal(evq_push(q, late), -1);
		assert_int_equal(evq_size(q), 4);
		assert_int_equal(evq_peek(q)->time_ns, 97);

		/* a pop frees room, so the same push now succeeds without
		 * allocating, and the failed push did not use up a seq */
		struct event got;
		assert_int_equal(evq_pop(q, &got), 1);
		assert_int_equal(got.time_ns, 97);
		assert_int_equal(evq_push(q, late), 0);
		assert_int_equal(evq_peek(q)->seq, 4);
		int64_t want[] = { 1, 98, 99, 100 };
		for (int k = 0; k < 4; k++) {
			assert_int_equal(evq_pop(q, &got), 1);
			assert_int_equal(got.time_ns, want[k]);
		}
		evq_destroy(q);
		assert_int_equal(a.live, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_drain_matches_qsort),
		cmocka_unit_test(test_interleaved_matches_reference),
		cmocka_unit_test(test_advance_matches_reference),
		cmocka_unit_test(test_impls_identical),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_alloc_failure),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
