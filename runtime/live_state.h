/* runtime/live_state.h: the state of one live run, shared by its files
 * (live.c: the generator, the scheduler, setup and teardown;
 * live_worker.c: a device's worker thread). Private to runtime/. */
#ifndef SB_LIVE_STATE_H
#define SB_LIVE_STATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>
#include "live.h"
#include "cpu_contention.h"
#include "kernels.h"

#define LIVE_POLL_NS 20000000   /* 20 ms: how often a waiting thread looks at the stop flag */

struct live_req_rt {             /* the runtime's request: the policy's view first */
	struct pol_request pr;
	void *state;                 /* device state; NULL before its first node and after its last */
};

struct live_member {             /* a member as handed to a worker: a snapshot taken at dispatch */
	struct live_req_rt *req;
	uint64_t pos;                /* its next_node when the task started */
	uint64_t chain_len;
	uint32_t input_len, output_len;
	uint32_t tokens, context;    /* ITER: its new tokens and the cache they run on */
	int emits;                   /* ITER: the task yields its next output token */
};

struct live;

struct live_worker {
	struct live *L;
	uint32_t index;
	pthread_t thread;
	int started;
	pthread_cond_t cv;               /* a job is ready, or quit */
	struct rt_stream *stream;
	void *work;                      /* the kernel family's batch buffers */
	/* scheduler side */
	struct pol_task task;            /* the running task; reqs has max_batch slots */
	int busy;
	/* the job: written by the scheduler before job_ready, read by the worker */
	struct live_member *members;     /* max_batch */
	struct rt_member *rtm;           /* worker scratch, max_batch */
	struct rt_iter_member *itm;      /* worker scratch, max_batch (LLM iterations) */
	uint64_t *graph_base;            /* worker scratch, max_batch */
	uint32_t nmembers;
	enum pol_task_kind kind;
	uint32_t node;
	uint32_t pad_tokens;             /* ITER: padding rows */
	/* under mu */
	int job_ready, job_done, job_rc;
	char job_err[256];
	int64_t end_ns, exec_ns;         /* end on the device; worker time for the task */
	int64_t last_end_ns;             /* scheduler side: end of its previous task, -1 before the first */
	int64_t task_estimate_ns;        /* scheduler side: --hw's price of the running task, when warm; else -1 */
	double move_ns;                  /* this task's data movement (backend move_ns) */
	uint64_t move_seen;              /* worker only: last move_ns total read */
	/* worker only, read after the join: its CPU and run-queue time over its life (cpu_contention.h) */
	struct cpu_schedstat sched_start, sched_end;
	int sched_ok;
};

struct live {
	const struct live_config *c;
	struct live_result *res;
	const struct rt_backend_ops *be;
	struct rt_dev *dev;
	const struct rt_model_ops *kops;
	struct rt_model *km;
	struct pol_driver drv;           /* the policy, its bookkeeping and the run's counters */
	struct live_req_rt *reqs;        /* c->n */
	struct live_worker *workers;
	uint32_t rows;                   /* batch rows the buffers hold (max batch; an LLM's tokens an iteration runs) */
	uint32_t pass_rows;              /* rows of a pass node: the max batch's tokens (rt_pass_rows) */
	int64_t t0_ns;                   /* CLOCK_MONOTONIC at the start */
	pthread_mutex_t mu;
	pthread_cond_t sched_cv;         /* an arrival, a finished task, the generator finished */
	pthread_t gen_thread;
	int gen_started;
	atomic_int gen_stop;             /* the generator must stop issuing */
	/* under mu */
	uint64_t issued_upto;            /* requests [0, issued_upto) have been issued (or dropped) */
	int gen_done;
	uint32_t outstanding;            /* admitted and unfinished */
	int quit;                        /* workers must exit */
	/* scheduler only */
	uint64_t delivered;              /* arrivals given to the policy (or skipped as dropped) */
	uint32_t finished;               /* requests finished since the scheduler last woke */
	size_t log_cap, ids_cap, ids_used;
};

/* CLOCK_MONOTONIC in ns. */
static inline int64_t live_mono_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A worker thread (arg: its struct live_worker): runs each job the scheduler hands it until quit. */
void *live_worker_main(void *arg);

#endif
