/* tests/policy_check.h: a checking wrapper for policy tests. It sits between
 * the engine and a policy under test, forwards every call, and records what
 * the policy must never do (the Contract in policies/policy.h):
 *  - every arrival completes exactly once, after running each position of
 *    its unrolled graph exactly once and in order (so dependencies hold:
 *    chain steps in sequence, tree levels bottom-up), a run's nodes counted
 *    one by one and never more than the policy offered;
 *  - a task's members are distinct, not in flight, not finished, and for a
 *    NODE task all at the task's node type and within the batch limit (in
 *    cells); a GRAPH task runs each member's whole remaining graph;
 *  - which devices ran each request (for pinning checks).
 * Violations are counted, with the first one described, and checked after the
 * run (asserting inside a callback would unwind through the engine). One
 * wrapper at a time: tests are single-threaded. Header-only, static. */
#ifndef SB_TEST_POLICY_CHECK_H
#define SB_TEST_POLICY_CHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "policies/policy.h"

struct pchk {
	const struct pol_ops *inner;  /* the policy under test */
	const struct mdl_model *model;
	uint32_t max_batch, max_batch_decoder;
	uint64_t n;                   /* request ids below n are tracked */
	uint32_t *arrived, *done;     /* per request: times seen arriving, finishing */
	uint64_t *progress;           /* per request: positions run so far */
	uint64_t *stamp;              /* per request: last task it was in (distinctness) */
	int32_t *first_dev;           /* per request: device of its first task, -1 before */
	uint8_t *moved;               /* per request: ran on more than one device */
	uint64_t tasks;
	uint64_t violations;
	char first[256];
};

static struct pchk pchk;
static struct pol_ops pchk_ops;

static void pchk_fail(const char *fmt, ...)
{
	if (pchk.violations++ == 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(pchk.first, sizeof pchk.first, fmt, ap);
		va_end(ap);
	}
}

static int pchk_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	pchk.model = env->model;
	pchk.max_batch = env->max_batch;
	pchk.max_batch_decoder = (uint32_t)opt_uint(env->params, "max-batch-decoder");   /* 0 where not a knob */
	return pchk.inner->init(st, env, err, errlen);
}

static void pchk_fini(struct pol_state *st)
{
	if (pchk.inner->fini)
		pchk.inner->fini(st);
}

static void pchk_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	if (r->id >= pchk.n)
		pchk_fail("request id %llu beyond the tracked %llu", (unsigned long long)r->id,
		          (unsigned long long)pchk.n);
	else if (pchk.arrived[r->id]++ || r->next_node != 0)
		pchk_fail("request %llu arrived twice or started", (unsigned long long)r->id);
	pchk.inner->on_arrival(st, r, now_ns);
}

static void pchk_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	for (uint32_t i = 0; i < t->nreq; i++) {
		const struct pol_request *r = t->reqs[i];
		if (r->id >= pchk.n)
			continue;
		/* a graph task runs the member's whole remaining graph */
		pchk.progress[r->id] = t->kind == POL_TASK_GRAPH ? r->chain_len : pchk.progress[r->id] + t->run_len;
		if (t->run_len != 1 && (t->kind != POL_TASK_NODE || t->run_len > t->run_max))
			pchk_fail("a run of %llu nodes offered as at most %llu", (unsigned long long)t->run_len,
			          (unsigned long long)t->run_max);
		if (r->next_node != pchk.progress[r->id])
			pchk_fail("request %llu at position %llu after %llu tasks", (unsigned long long)r->id,
			          (unsigned long long)r->next_node, (unsigned long long)pchk.progress[r->id]);
		if (pol_req_done(r)) {
			if (pchk.done[r->id]++)
				pchk_fail("request %llu finished twice", (unsigned long long)r->id);
			if (pchk.progress[r->id] != r->chain_len)
				pchk_fail("request %llu finished after %llu of %llu positions", (unsigned long long)r->id,
				          (unsigned long long)pchk.progress[r->id], (unsigned long long)r->chain_len);
		}
	}
	pchk.inner->on_task_done(st, t, now_ns);
}

static int pchk_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                          struct pol_task *task, int64_t *wake_ns)
{
	int rc = pchk.inner->next_task(st, device, now_ns, task, wake_ns);
	if (!rc)
		return rc;
	pchk.tasks++;
	if ((task->kind != POL_TASK_NODE && task->kind != POL_TASK_GRAPH) || task->nreq < 1 ||
	    task->nreq > pchk.max_batch) {
		pchk_fail("task %llu: kind %d with %u members", (unsigned long long)pchk.tasks, task->kind, task->nreq);
		return rc;
	}
	const struct mdl_model *m = pchk.model;
	uint64_t cells = 0;
	for (uint32_t i = 0; i < task->nreq; i++) {
		const struct pol_request *r = task->reqs[i];
		if (r->id >= pchk.n)
			continue;
		if (pchk.stamp[r->id] == pchk.tasks)
			pchk_fail("request %llu twice in one task", (unsigned long long)r->id);
		pchk.stamp[r->id] = pchk.tasks;
		if (r->in_flight || pol_req_done(r))
			pchk_fail("request %llu in flight or finished when batched", (unsigned long long)r->id);
		if (r->next_node != pchk.progress[r->id])
			pchk_fail("request %llu offered at position %llu after %llu", (unsigned long long)r->id,
			          (unsigned long long)r->next_node, (unsigned long long)pchk.progress[r->id]);
		if (pchk.first_dev[r->id] < 0)
			pchk.first_dev[r->id] = (int32_t)device;
		else if (pchk.first_dev[r->id] != (int32_t)device)
			pchk.moved[r->id] = 1;
		if (task->kind == POL_TASK_GRAPH)
			continue;
		uint32_t node = mdl_node_at(m, r->next_node, r->input_len, r->output_len);
		if (node != task->node_type || pol_req_node(r) != node)
			pchk_fail("request %llu at node %u in a task of node %u", (unsigned long long)r->id, node,
			          task->node_type);
		cells += mdl_cells_at(m, r->next_node, r->input_len, r->output_len);
	}
	if (task->kind == POL_TASK_GRAPH)
		return rc;
	uint32_t limit = m->nodes[task->node_type].kind == MDL_DECODER && pchk.max_batch_decoder
	                 ? pchk.max_batch_decoder : pchk.max_batch;
	if (cells > limit && task->nreq > 1)
		pchk_fail("task %llu runs %llu cells over the limit %u", (unsigned long long)pchk.tasks,
		          (unsigned long long)cells, limit);
	return rc;
}

/* Wraps inner for a run of at most n requests; returns the ops to run. */
static const struct pol_ops *pchk_wrap(const struct pol_ops *inner, uint64_t n)
{
	free(pchk.arrived);
	free(pchk.done);
	free(pchk.progress);
	free(pchk.stamp);
	free(pchk.first_dev);
	free(pchk.moved);
	memset(&pchk, 0, sizeof pchk);
	pchk.inner = inner;
	pchk.n = n;
	pchk.arrived = calloc(n, sizeof *pchk.arrived);
	pchk.done = calloc(n, sizeof *pchk.done);
	pchk.progress = calloc(n, sizeof *pchk.progress);
	pchk.stamp = calloc(n, sizeof *pchk.stamp);
	pchk.first_dev = malloc(n * sizeof *pchk.first_dev);
	pchk.moved = calloc(n, sizeof *pchk.moved);
	for (uint64_t i = 0; pchk.first_dev && i < n; i++)
		pchk.first_dev[i] = -1;
	pchk_ops = *inner;
	pchk_ops.init = pchk_init;
	pchk_ops.fini = pchk_fini;
	pchk_ops.on_arrival = pchk_on_arrival;
	pchk_ops.on_task_done = pchk_on_task_done;
	pchk_ops.next_task = pchk_next_task;
	return &pchk_ops;
}

/* After a run of `issued` requests: 0 when every one arrived and finished
 * exactly once and nothing was violated, else -1 with pchk.first set. */
static int pchk_verdict(uint64_t issued)
{
	for (uint64_t i = 0; i < issued && i < pchk.n; i++)
		if (pchk.arrived[i] != 1 || pchk.done[i] != 1)
			pchk_fail("request %llu arrived %u times, finished %u times", (unsigned long long)i,
			          pchk.arrived[i], pchk.done[i]);
	return pchk.violations ? -1 : 0;
}

static void pchk_release(void)
{
	free(pchk.arrived);
	free(pchk.done);
	free(pchk.progress);
	free(pchk.stamp);
	free(pchk.first_dev);
	free(pchk.moved);
	memset(&pchk, 0, sizeof pchk);
}

/* ---- helpers of the every-model contract tests ---- */

/* mdl_list callback: appends a model name to a char[64][MDL_NAME_MAX] array. */
static inline void name_cb(const char *name, void *ctx)
{
	char (*names)[MDL_NAME_MAX] = ctx;
	for (int i = 0; i < 64; i++)
		if (!names[i][0]) {
			snprintf(names[i], MDL_NAME_MAX, "%s", name);
			return;
		}
}

/* Isolated latency of a request on an idle device with the fixed hardware (tests/fixed_hw.h):
 * every position alone, at its own cells, rounded to ns as the engine does. */
static inline int64_t isolated_ns(const struct mdl_model *m, double s, double g, uint32_t in, uint32_t out)
{
	int64_t ns = 0;
	uint64_t n = mdl_chain_length(m, in, out);
	for (uint64_t p = 0; p < n; p++) {
		double v = nearbyint(s * (1 + g * (mdl_cells_at(m, p, in, out) - 1)) * 1e9);
		ns += v < 1 ? 1 : (int64_t)v;
	}
	return ns;
}

#endif
