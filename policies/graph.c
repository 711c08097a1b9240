/* policies/graph.c: graph batching, the baseline of all three papers.
 * Whole request graphs are fused into one batch padded to the longest member
 * (LazyBatching Sec. III-A; BatchMaker Sec. 2.2), with
 *  - a model-allowed maximum batch size (--max-batch),
 *  - a batching time-window (--window): a batch smaller than the maximum waits
 *    until its oldest request has waited that long (TensorFlow Serving's
 *    batch timeout; 0 = launch whenever a device is idle, as BatchMaker ran
 *    MXNet and TensorFlow in Sec. 7.1),
 *  - optional bucketing by length (--bucket-width=W): bucket i holds requests
 *    of length in ((i-1)W, iW], served round-robin (BatchMaker Sec. 7.1).
 * The bucketed length is the input length, or the output length for a model
 * with no encoder; a model with neither uses one bucket. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include "fifo.h"
#include "../util/errkind.h"
#include "policy.h"

struct graph_state {
	uint32_t max_batch;
	int64_t window_ns;
	uint32_t bucket_width;      /* 0: one bucket */
	int length_is_input;        /* bucket by input_len (else output_len) */
	struct pol_fifo *buckets;   /* owned, nbuckets entries */
	uint32_t nbuckets;
	uint32_t rr_next;           /* round-robin cursor: first bucket to consider */
	uint32_t nonempty;          /* buckets with waiting requests */
};

static int graph_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	struct graph_state *g = (struct graph_state *)st;
	if (env->model->is_tree) {
		/* padding does not apply to trees (BatchMaker Sec. 2.3); BatchMaker
		 * compared TreeLSTM with cell-level batching systems instead */
		snprintf(err, errlen, "graph: model %s is a tree model, which padded graph batching cannot batch "
		         "(use cellular or serial)", env->model->name);
		return -1;
	}
	g->max_batch = env->max_batch;
	g->window_ns = llround(opt_double(env->params, "window") * 1e6);
	g->bucket_width = (uint32_t)opt_uint(env->params, "bucket-width");
	g->length_is_input = env->model->uses_input_len || !env->model->uses_output_len;
	g->nbuckets = 1;
	g->buckets = calloc(1, sizeof *g->buckets);
	if (!g->buckets) {
		err_memory(err, errlen, "graph: out of memory");
		return -1;
	}
	return 0;
}

static void graph_fini(struct pol_state *st)
{
	free(((struct graph_state *)st)->buckets);
}

static uint32_t graph_bucket_of(const struct graph_state *g, const struct pol_request *r)
{
	if (!g->bucket_width)
		return 0;
	uint32_t len = g->length_is_input ? r->input_len : r->output_len;
	return len ? (len - 1) / g->bucket_width : 0;
}

static void graph_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	struct graph_state *g = (struct graph_state *)st;
	uint32_t b = graph_bucket_of(g, r);
	if (b >= g->nbuckets) {
		/* Grow to cover this length. On allocation failure fall back to the
		 * last bucket: batches get more padding, the run stays correct. */
		struct pol_fifo *nb = realloc(g->buckets, (size_t)(b + 1) * sizeof *nb);
		if (nb) {
			for (uint32_t i = g->nbuckets; i <= b; i++)
				nb[i] = (struct pol_fifo){ 0 };
			g->buckets = nb;
			g->nbuckets = b + 1;
		} else {
			b = g->nbuckets - 1;
		}
	}
	if (g->buckets[b].len == 0)
		g->nonempty++;
	pol_fifo_push(&g->buckets[b], r);
}

static void graph_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)st;
	(void)t;
	(void)now_ns;
}

static int graph_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                           struct pol_task *task, int64_t *wake_ns)
{
	(void)device;
	struct graph_state *g = (struct graph_state *)st;
	if (!g->nonempty)
		return 0;
	for (uint32_t i = 0; i < g->nbuckets; i++) {
		uint32_t b = (g->rr_next + i) % g->nbuckets;
		struct pol_fifo *f = &g->buckets[b];
		if (!f->len)
			continue;
		int64_t ready_ns = f->head->arrival_ns + g->window_ns;
		if (f->len < g->max_batch && now_ns < ready_ns) {
			if (ready_ns < *wake_ns)
				*wake_ns = ready_ns;
			continue;
		}
		task->kind = POL_TASK_GRAPH;
		task->nreq = 0;
		while (f->len && task->nreq < g->max_batch)
			task->reqs[task->nreq++] = pol_fifo_pop(f);
		if (!f->len)
			g->nonempty--;
		g->rr_next = (b + 1) % g->nbuckets;
		return 1;
	}
	return 0;
}

static const struct opt_def graph_params[] = {
	POL_PARAM_WINDOW,
	{ "bucket-width", OPT_UINT, "0", 0, 1e9, 0, "graph batching length bucket width (0 = no buckets)" },
};

const struct pol_ops graph_policy_ops = {
	.name = "graph",
	.help = "graph batching: whole graphs padded to the longest (bucketed by length, in a time window)",
	.state_size = sizeof(struct graph_state),
	.default_max_batch = 64,
	.params = graph_params,
	.nparams = sizeof graph_params / sizeof graph_params[0],
	.init = graph_init,
	.fini = graph_fini,
	.on_arrival = graph_on_arrival,
	.on_task_done = graph_on_task_done,
	.next_task = graph_next_task,
};
