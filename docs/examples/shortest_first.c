/* docs/examples/shortest_first.c: the worked example of docs/ARCHITECTURE.md
 * section 4, "A policy": a complete policy with one knob, built and checked
 * by tests/test_example_policy.c. Copy it to policies/, rename it, and
 * change what it decides.
 *
 * Shortest-first graph batching: whole graphs, up to the max batch, the
 * shortest inputs first (a client knows its input length; its output length
 * it does not), so short requests stop waiting behind long ones. Short-first
 * alone can starve a long request under load; the knob --age-cap=MS bounds
 * that: a request that has waited longer than it goes first, oldest first
 * (0: no cap). Each decision scans the queue: O(waiting x max batch), an
 * example's simplicity, not a production structure. */
#include <math.h>
#include <stdio.h>
#include "policies/fifo.h"
#include "policies/policy.h"

struct sf_state {
	struct pol_fifo queue;   /* waiting requests, in arrival order */
	uint32_t max_batch;
	int64_t age_cap_ns;      /* 0: none */
};

/* The policy's knobs: the command line, --help, sweeps and the results
 * database take them from this table (policy.h, pol_ops.params). */
static const struct opt_def sf_params[] = {
	{ "age-cap", OPT_DOUBLE, "0", 0, 1e9, 0, "ms a request may wait before it goes first, oldest first "
	  "(0 = no cap)" },
};

static int sf_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	struct sf_state *s = (struct sf_state *)st;
	if (env->model->is_tree) {
		snprintf(err, errlen, "shortest-first: model %s is a tree model, whose graphs cannot be padded into a batch",
		         env->model->name);
		return -1;
	}
	s->max_batch = env->max_batch;
	s->age_cap_ns = llround(opt_double(env->params, "age-cap") * 1e6);
	return 0;
}

static void sf_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	pol_fifo_push(&((struct sf_state *)st)->queue, r);
}

static void sf_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)st;    /* a graph task finishes its members: nothing to put back */
	(void)t;
	(void)now_ns;
}

/* Whether a is served before b: an aged request before any other (the older
 * first), else the shorter input (the older first on a tie). */
static int sf_before(const struct sf_state *s, const struct pol_request *a, const struct pol_request *b, int64_t now_ns)
{
	int a_aged = s->age_cap_ns && now_ns - a->arrival_ns > s->age_cap_ns;
	int b_aged = s->age_cap_ns && now_ns - b->arrival_ns > s->age_cap_ns;
	if (a_aged != b_aged)
		return a_aged;
	if (a_aged || a->input_len == b->input_len)
		return a->id < b->id;
	return a->input_len < b->input_len;
}

static int sf_next_task(struct pol_state *st, uint32_t device, int64_t now_ns, struct pol_task *task,
                        int64_t *wake_ns)
{
	(void)device;
	(void)wake_ns;    /* it never waits: a batch leaves whenever a device is idle */
	struct sf_state *s = (struct sf_state *)st;
	task->kind = POL_TASK_GRAPH;
	task->nreq = 0;
	while (task->nreq < s->max_batch && s->queue.len) {
		struct pol_request *best = s->queue.head, *best_prev = NULL;
		for (struct pol_request *prev = s->queue.head, *r = prev->pol_next; r; prev = r, r = r->pol_next)
			if (sf_before(s, r, best, now_ns)) {
				best = r;
				best_prev = prev;
			}
		pol_fifo_unlink(&s->queue, best_prev, best);
		task->reqs[task->nreq++] = best;
	}
	return task->nreq > 0;
}

const struct pol_ops shortest_first_policy_ops = {
	.name = "shortest-first",
	.help = "graph batching, shortest inputs first, aged requests before them",
	.state_size = sizeof(struct sf_state),
	.default_max_batch = 64,
	.params = sf_params,
	.nparams = sizeof sf_params / sizeof sf_params[0],
	.init = sf_init,
	.on_arrival = sf_on_arrival,
	.on_task_done = sf_on_task_done,
	.next_task = sf_next_task,
};
