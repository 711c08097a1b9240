/* runtime/live.h: one live run: the same policies as the simulator, serving
 * real kernels (kernels.h) on the monotonic wall clock (DESIGN.md section 2,
 * the runtime/ row of the data flow).
 *
 * Three kinds of threads:
 *  - the load generator issues request i at arrival_ns[i] after the start
 *    (open loop: absolute sleeps on CLOCK_MONOTONIC, so lateness never
 *    accumulates; it records how late each issue was). A request arriving
 *    while max_queue requests are admitted and unfinished is dropped and
 *    counted: a rate the machine cannot sustain ends, it does not hang.
 *  - the scheduler (the calling thread) drives the policy through the one
 *    policy driver the simulator uses (policies/driver.h): every completion
 *    and arrival it has learned of is delivered before a task is asked for
 *    each idle worker, with the current time in ns since the start; a
 *    policy's wake-up time is honoured by a timed wait.
 *  - one worker per device (--workers) runs its tasks in submission order:
 *    creates a request's state before its first node, runs the node (or,
 *    for a whole-graph task, every node padded to the longest member; for
 *    an LLM, the iteration: kernels.h run_iter), waits
 *    for the device, frees finished requests' state, and reports back.
 *
 * A request's latency is measured from its scheduled arrival (not its issue),
 * so a late generator shows in the latency instead of hiding it.
 *
 * Contract:
 *  - live_run returns 0 with *res filled (release with live_result_free),
 *    or -1 with one line in err and nothing in *res: a kernel error, a failed
 *    allocation or a policy that stops with requests unfinished ends the run
 *    that way, after every thread has stopped.
 *  - When *c->stop becomes nonzero (SIGINT), the generator stops issuing,
 *    tasks not yet started are abandoned, running ones finish, and the
 *    result is returned with partial = 1.
 *  - Timings are the only nondeterminism: the requests, their inputs and
 *    (with the packed GEMM) their outputs are the same in every run.
 */
#ifndef SB_RT_LIVE_H
#define SB_RT_LIVE_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include "../policies/driver.h"
#include "backend.h"

struct live_config {
	const struct pol_ops *policy;
	struct pol_env env;                 /* complete, with lat (the caller's estimates); model and workers set */
	const struct mdl_model *model;      /* not owned */
	uint32_t workers;                   /* devices, one thread each */
	uint64_t n;                         /* scheduled requests */
	const int64_t *arrival_ns;          /* n, non-decreasing, ns after the start; not owned */
	const uint32_t *input_len;          /* n; not owned */
	const uint32_t *output_len;         /* n; not owned */
	uint64_t warmup;                    /* requests with smaller ids are not measured */
	int64_t sla_ns;                     /* for the result's violation rate */
	int keep_request_rows;              /* the result keeps a row per finished request */
	uint64_t seed;                      /* weights and request inputs (kernels.h) */
	const char *device;                 /* "cpu" or "gpu" (backend.h) */
	enum rt_gemm_kind gemm;             /* CPU products: packed kernel or OpenBLAS */
	uint32_t max_queue;                 /* admitted, unfinished requests before arrivals are dropped */
	int keep_outputs;                   /* read every finished request's outputs */
	int keep_tasks;                     /* record every task (for a timeline) */
	const volatile sig_atomic_t *stop;  /* nonzero: stop (SIGINT); may be NULL */
	const struct rt_backend_ops *backend;  /* NULL: the one device names; else these ops (tests inject faults) */
};

enum live_status {
	LIVE_NOT_ISSUED = 0,   /* the run stopped before its time */
	LIVE_DONE,             /* finished */
	LIVE_DROPPED,          /* arrived while the queue was full */
	LIVE_ABANDONED,        /* admitted, unfinished when the run was stopped */
};

struct live_request {
	int64_t arrival_ns;     /* scheduled */
	int64_t issue_ns;       /* when the generator issued it, -1 if never */
	int64_t start_ns;       /* dispatch of its first task, -1 if none */
	int64_t finish_ns;      /* end of its last task, -1 if unfinished */
	uint32_t input_len, output_len;
	enum live_status status;
	int32_t *tokens;        /* keep_outputs and done: ntokens emitted tokens (owned) */
	uint32_t ntokens;
	float *values;          /* keep_outputs and done: the final vector (owned) */
	uint32_t nvalues;
};

struct live_task {          /* one task (keep_tasks) */
	uint32_t kind, node_type, device, nreq, cells;
	int64_t start_ns, end_ns;   /* dispatch, and end on the device */
	uint64_t first_id;          /* index into live_result.task_ids of its nreq member ids */
};

struct live_result {
	struct drv_result run;              /* the run's result, as a simulated run's (policies/driver.h; owned) */
	uint64_t n;
	struct live_request *reqs;          /* n, by id (owned) */
	uint64_t issued, dropped, abandoned;
	int partial;                        /* stopped by *stop */
	uint64_t events;
	int64_t busy_ns;                    /* sum over tasks of end - dispatch */
	int64_t estimate_ns;                /* the same tasks priced by env.lat (--hw), as the simulator prices them */
	int64_t warm_busy_ns, warm_estimate_ns;  /* the same over warm tasks: dispatched within LIVE_WARM_GAP_NS */
	uint64_t warm_tasks;                     /* of their device's previous task's end (no refill after idle) */
	int64_t end_ns;                     /* when the run ended */
	/* where the scheduler's time goes, summed over tasks (ns) */
	double decide_ns;                   /* next_task calls (all of them) and starting the tasks */
	double complete_ns;                 /* pol_task_advance + on_task_done + releasing members */
	double move_ns;                     /* gather / scatter / embed kernels (CPU backend; 0 elsewhere) */
	double device_ns;                   /* worker time from start to the device finishing */
	uint32_t max_outstanding;           /* most requests admitted and unfinished at once */
	double setup_s;                     /* weights and buffers, before the clock starts */
	int realtime;                       /* the scheduler got SCHED_FIFO priority (live.c) */
	char device_desc[256];              /* backend.h describe */
	char model_desc[200];               /* kernel family and shapes */
	uint64_t weight_bytes;
	/* how long the run's threads waited for a core (cpu_contention.h), over the workers' lives and,
	 * for the scheduler thread and the machine's PSI, from the clock's start to the run's end */
	int sched_ok;                       /* every worker's and the scheduler's counters were read */
	uint64_t workers_cpu_ns, workers_runq_wait_ns, scheduler_runq_wait_ns;
	int psi_ok;                         /* /proc/pressure/cpu was read at both ends */
	uint64_t psi_some_us;               /* microseconds some task waited for a CPU, machine-wide */
	size_t ntasks_logged;
	struct live_task *task_log;         /* keep_tasks (owned) */
	uint64_t *task_ids;                 /* members of the logged tasks (owned) */
};

#define LIVE_WARM_GAP_NS 500000   /* 0.5 ms: below the calibration's shortest idle (calib_cpu.c cc_cold_start) */

int live_run(const struct live_config *c, struct live_result *res, char *err, size_t errlen);
void live_result_free(struct live_result *res);

#endif
