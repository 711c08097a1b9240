/* policies/serial.c: no batching. Requests run one at a time, whole graph,
 * in arrival order: LazyBatching's "Serial" baseline (Sec. VI) and the M/G/1
 * queue the validation ladder checks against queueing theory. */
#include "fifo.h"
#include "policy.h"

struct serial_state {
	struct pol_fifo queue;   /* waiting requests, arrival order */
};

static int serial_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	(void)st;
	(void)err;
	(void)errlen;
	(void)env;
	return 0;
}

static void serial_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	pol_fifo_push(&((struct serial_state *)st)->queue, r);
}

static void serial_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	/* graph tasks finish their members; nothing is queued twice */
	(void)st;
	(void)t;
	(void)now_ns;
}

static int serial_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                            struct pol_task *task, int64_t *wake_ns)
{
	(void)device;
	(void)now_ns;
	(void)wake_ns;
	struct pol_request *r = pol_fifo_pop(&((struct serial_state *)st)->queue);
	if (!r)
		return 0;
	task->kind = POL_TASK_GRAPH;
	task->nreq = 1;
	task->reqs[0] = r;
	return 1;
}

const struct pol_ops serial_policy_ops = {
	.name = "serial",
	.help = "no batching: one request at a time, whole graph, arrival order",
	.state_size = sizeof(struct serial_state),
	.default_max_batch = 1,
	.init = serial_init,
	.on_arrival = serial_on_arrival,
	.on_task_done = serial_on_task_done,
	.next_task = serial_next_task,
};
