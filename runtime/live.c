/* runtime/live.c: the live run of live.h: a load generator thread, the
 * scheduler on the calling thread, one worker thread per device.
 *
 * All shared state is guarded by one mutex: the generator's issue counter,
 * the count of admitted unfinished requests, and each worker's hand-off
 * flags. The scheduler owns the policy and the pol_request fields; a worker
 * reads only the snapshot of its task's members made at dispatch, and owns
 * the members' device state while they are in flight. */
#include "../kernels/fpu.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "live.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "kernels.h"
#include "live_state.h"

static struct timespec live_ts(int64_t abs_ns)
{
	return (struct timespec){ .tv_sec = abs_ns / 1000000000, .tv_nsec = abs_ns % 1000000000 };
}

static int live_stop_asked(const struct live *L)
{
	return L->c->stop && *L->c->stop;
}

/* Real-time priority (SCHED_FIFO, the lowest level) for the threads that
 * keep time, the generator and the scheduler: they sleep almost always, and
 * when they wake they must not wait behind a worker computing on the same
 * core. Best effort: without the privilege the thread keeps its priority
 * (live_result.realtime says which). */
static int live_raise_priority(void)
{
	struct sched_param sp = { .sched_priority = sched_get_priority_min(SCHED_FIFO) };
	return pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp) == 0;
}

/* ---- the load generator ---- */

static void *live_generator(void *arg)
{
	struct live *L = arg;
	const struct live_config *c = L->c;
	/* wake at the asked time, not up to the default 50 us timer slack later */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	live_raise_priority();
	for (uint64_t i = 0; i < c->n; i++) {
		int64_t target = L->t0_ns + c->arrival_ns[i];
		for (;;) {
			if (atomic_load(&L->gen_stop) || live_stop_asked(L))
				goto out;
			int64_t now = live_mono_ns();
			if (now >= target)
				break;
			struct timespec ts = live_ts(target - now > LIVE_POLL_NS ? now + LIVE_POLL_NS : target);
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);   /* EINTR: look again */
		}
		int64_t issue = live_mono_ns() - L->t0_ns;
		pthread_mutex_lock(&L->mu);
		struct live_request *rec = &L->res->reqs[i];
		rec->issue_ns = issue;
		if (L->outstanding >= c->max_queue) {
			rec->status = LIVE_DROPPED;
			L->res->dropped++;
		} else if (++L->outstanding > L->res->max_outstanding) {
			L->res->max_outstanding = L->outstanding;
		}
		L->res->issued++;
		L->issued_upto = i + 1;
		pthread_cond_signal(&L->sched_cv);
		pthread_mutex_unlock(&L->mu);
	}
out:
	pthread_mutex_lock(&L->mu);
	L->gen_done = 1;
	pthread_cond_signal(&L->sched_cv);
	pthread_mutex_unlock(&L->mu);
	return NULL;
}

/* ---- the scheduler ---- */

static int live_log_task(struct live *L, const struct pol_task *t)
{
	struct live_result *res = L->res;
	if (GROW(res->task_log, L->log_cap, res->ntasks_logged + 1, 1024) != 0 ||
	    GROW(res->task_ids, L->ids_cap, L->ids_used + t->nreq, 4096) != 0)
		return -1;
	res->task_log[res->ntasks_logged++] = (struct live_task){
		.kind = t->kind, .node_type = t->node_type, .device = t->device, .nreq = t->nreq, .cells = t->cells,
		.start_ns = t->start_ns, .end_ns = t->end_ns, .first_id = L->ids_used,
	};
	for (uint32_t i = 0; i < t->nreq; i++)
		res->task_ids[L->ids_used++] = t->reqs[i]->id;
	return 0;
}

/* The driver hands back each finished request (drv_config.release). */
static void live_req_done(void *ctx, struct pol_request *r, int64_t finish_ns)
{
	struct live *L = ctx;
	struct live_request *rec = &L->res->reqs[r->id];
	rec->status = LIVE_DONE;
	rec->start_ns = r->first_start_ns;
	rec->finish_ns = finish_ns;
	L->finished++;
}

/* A worker's task finished: the driver's bookkeeping, then the runtime's
 * own counters. Returns 0, or -1 with err. */
static int live_complete(struct live *L, struct live_worker *w, int64_t now, char *err, size_t errlen)
{
	const struct live_config *c = L->c;
	struct live_result *res = L->res;
	struct pol_task *t = &w->task;
	int64_t t0 = live_mono_ns();
	w->busy = 0;
	t->end_ns = w->end_ns;
	if (w->task_estimate_ns >= 0) {
		res->warm_busy_ns += t->end_ns - t->start_ns;
		res->warm_estimate_ns += w->task_estimate_ns;
		res->warm_tasks++;
	}
	w->last_end_ns = t->end_ns;
	res->device_ns += (double)w->exec_ns;
	res->move_ns += w->move_ns;
	res->events++;
	if (c->keep_tasks && live_log_task(L, t) != 0) {
		err_memory(err, errlen, "out of memory for the task log");
		return -1;
	}
	if (drv_task_done(&L->drv, t, now, err, errlen) < 0)
		return -1;
	res->complete_ns += (double)(live_mono_ns() - t0);
	return 0;
}

/* Hands the task the driver has started in w->task to its worker: a
 * snapshot of the members, and the estimate --hw gives for it. */
static void live_dispatch(struct live *L, struct live_worker *w, int64_t now, const struct drv_task_shape *shape)
{
	const struct live_config *c = L->c;
	struct live_result *res = L->res;
	struct pol_task *t = &w->task;
	uint32_t emitting = 0;
	for (uint32_t i = 0; i < t->nreq; i++) {
		struct pol_request *r = t->reqs[i];
		w->members[i] = (struct live_member){ .req = (struct live_req_rt *)r, .pos = r->next_node,
		                                      .chain_len = r->chain_len, .input_len = r->input_len,
		                                      .output_len = r->output_len };
		if (t->kind == POL_TASK_ITER) {
			w->members[i].tokens = t->tokens[i];
			w->members[i].context = t->context[i];
			w->members[i].emits = pol_iter_emits(t, i);
			emitting += (uint32_t)w->members[i].emits;
		}
	}
	/* live kernels serve no tree models: a task's cells are its members, within the max batch */
	int64_t estimate = t->kind == POL_TASK_ITER
	                   ? c->env.lat.iter_ns(c->env.lat.iter_ctx, t->nreq, t->tokens, t->context, emitting,
	                                        t->pad_tokens)
	                   : t->kind == POL_TASK_GRAPH
	                   ? c->env.lat.graph_ns(c->env.lat.ctx, t->nreq, shape->max_input_len, shape->max_output_len)
	                   : c->env.lat.task_node_ns(c->env.lat.ctx, t->node_type, t->nreq, t->reqs, t->cells, 0);
	res->estimate_ns += estimate;
	int warm = w->last_end_ns >= 0 && now - w->last_end_ns < LIVE_WARM_GAP_NS;
	w->task_estimate_ns = warm ? estimate : -1;
	w->nmembers = t->nreq;
	w->kind = t->kind;
	w->node = t->node_type;
	w->pad_tokens = t->kind == POL_TASK_ITER ? t->pad_tokens : 0;
	w->busy = 1;
	pthread_mutex_lock(&L->mu);
	w->job_ready = 1;
	pthread_cond_signal(&w->cv);
	pthread_mutex_unlock(&L->mu);
}

static int live_any_done(const struct live *L)
{
	for (uint32_t i = 0; i < L->c->workers; i++)
		if (L->workers[i].job_done)
			return 1;
	return 0;
}

/* The scheduler's loop state between two wake-ups. */
struct live_sched {
	int64_t wake_ns;              /* the policy's earliest pending wake-up */
	int stopping, failed;
	uint32_t nbusy;               /* workers running a task */
	struct live_worker **done;    /* workers that finished since the last look */
};

/* Sleep (holding L->mu) until there is news: an arrival, a finished task, a
 * wake-up that is due, a stop asked, or nothing left to wait for. */
static void live_wait_for_news(struct live *L, const struct live_sched *S)
{
	for (;;) {
		if (L->delivered < L->issued_upto || live_any_done(L))
			return;
		if (!S->stopping && live_stop_asked(L))
			return;
		if (S->nbusy == 0 && L->gen_done && (S->stopping || L->outstanding == 0 || S->wake_ns == INT64_MAX))
			return;
		int64_t now = live_mono_ns() - L->t0_ns;
		if (now >= S->wake_ns)
			return;
		int64_t until = S->wake_ns - now < LIVE_POLL_NS ? S->wake_ns : now + LIVE_POLL_NS;
		struct timespec ts = live_ts(L->t0_ns + until);
		pthread_cond_timedwait(&L->sched_cv, &L->mu, &ts);
	}
}

/* Take (holding L->mu) the workers that finished, in the order they ended. */
static uint32_t live_take_done(struct live *L, struct live_sched *S)
{
	uint32_t ndone = 0;
	for (uint32_t i = 0; i < L->c->workers; i++)
		if (L->workers[i].job_done) {
			L->workers[i].job_done = 0;
			S->done[ndone++] = &L->workers[i];
		}
	for (uint32_t i = 1; i < ndone; i++)
		for (uint32_t j = i; j > 0 && S->done[j]->end_ns < S->done[j - 1]->end_ns; j--) {
			struct live_worker *x = S->done[j];
			S->done[j] = S->done[j - 1];
			S->done[j - 1] = x;
		}
	return ndone;
}

/* Hand finished tasks to the driver; after the first failure only free the workers. */
static void live_finish_tasks(struct live *L, struct live_sched *S, uint32_t ndone, int64_t now, char *err,
                              size_t errlen)
{
	for (uint32_t i = 0; i < ndone; i++) {
		struct live_worker *w = S->done[i];
		S->nbusy--;
		if (w->job_rc != 0 && !S->failed) {
			snprintf(err, errlen, "%s", w->job_err);
			S->failed = 1;
		}
		if (w->job_rc != 0 || S->failed) {
			w->busy = 0;
			continue;
		}
		if (live_complete(L, w, now, err, errlen) != 0)
			S->failed = 1;
	}
}

/* Hand the requests issued since the last look (ids a..b-1) to the driver, in id order. */
static void live_deliver_arrivals(struct live *L, struct live_sched *S, uint64_t a, uint64_t b, int64_t now,
                                  char *err, size_t errlen)
{
	const struct live_config *c = L->c;
	for (uint64_t id = a; id < b && !S->failed; id++) {
		if (L->res->reqs[id].status == LIVE_DROPPED)
			continue;
		struct pol_request *r = &L->reqs[id].pr;
		r->id = id;
		r->arrival_ns = c->arrival_ns[id];
		r->input_len = c->input_len[id];
		r->prefix_id = 0;              /* live runs share no prefixes (their kernels cache nothing) */
		r->session_id = 0;
		r->inner_id = 0;
		r->inner_len = 0;
		r->prefix_len = 0;
		r->hash_ids = NULL;
		r->nhash = r->hash_block = 0;
		r->output_len = c->output_len[id];
		L->res->events++;
		if (drv_arrive(&L->drv, r, now, err, errlen) != 0)
			S->failed = 1;
	}
}

/* Ask the policy for a task for every idle worker, and start what it offers. */
static void live_offer_tasks(struct live *L, struct live_sched *S, int64_t now, char *err, size_t errlen)
{
	int64_t want = INT64_MAX;
	for (uint32_t i = 0; i < L->c->workers; i++) {
		struct live_worker *w = &L->workers[i];
		if (w->busy)
			continue;
		int64_t t1 = live_mono_ns();
		struct drv_task_shape shape = { 0 };
		int got = drv_next_task(&L->drv, i, now, &w->task, &want, &shape, err, errlen);
		if (got < 0) {
			S->failed = S->stopping = 1;
			atomic_store(&L->gen_stop, 1);
			break;
		}
		if (got) {
			live_dispatch(L, w, now, &shape);
			S->nbusy++;
		}
		L->res->decide_ns += (double)(live_mono_ns() - t1);
	}
	if (want != INT64_MAX && want > now && want < S->wake_ns)
		S->wake_ns = want;
}

static int live_schedule(struct live *L, char *err, size_t errlen)
{
	struct live_result *res = L->res;
	struct live_sched S = { .wake_ns = INT64_MAX, .done = calloc(L->c->workers, sizeof *S.done) };
	if (!S.done) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	pthread_mutex_lock(&L->mu);
	for (;;) {
		live_wait_for_news(L, &S);
		uint32_t ndone = live_take_done(L, &S);
		uint64_t a = L->delivered, b = L->issued_upto;
		L->delivered = b;
		pthread_mutex_unlock(&L->mu);

		int64_t now = live_mono_ns() - L->t0_ns;
		L->finished = 0;
		/* completions in the order they ended, then arrivals in id order */
		live_finish_tasks(L, &S, ndone, now, err, errlen);
		live_deliver_arrivals(L, &S, a, b, now, err, errlen);
		if (!S.stopping && (S.failed || live_stop_asked(L))) {
			S.stopping = 1;
			res->partial = !S.failed;
			atomic_store(&L->gen_stop, 1);
		}
		if (S.wake_ns != INT64_MAX && now >= S.wake_ns) {
			S.wake_ns = INT64_MAX;
			res->events++;
		}
		if (!S.stopping)
			live_offer_tasks(L, &S, now, err, errlen);
		pthread_mutex_lock(&L->mu);
		L->outstanding -= L->finished;
		if (S.nbusy == 0 && S.stopping && L->gen_done)
			break;
		if (S.nbusy == 0 && L->gen_done && L->delivered == L->issued_upto && !live_any_done(L)) {
			if (L->outstanding == 0)
				break;
			if (S.wake_ns == INT64_MAX) {
				snprintf(err, errlen, "policy %s stopped with %u requests unfinished (no task offered, no "
				         "wake-up asked)", L->c->policy->name, L->outstanding);
				S.failed = 1;
				break;
			}
		}
	}
	pthread_mutex_unlock(&L->mu);
	free(S.done);
	return S.failed ? -1 : 0;
}

/* ---- setup and teardown ---- */

static void live_teardown(struct live *L)
{
	if (L->workers) {
		pthread_mutex_lock(&L->mu);
		L->quit = 1;
		for (uint32_t i = 0; i < L->c->workers; i++)
			pthread_cond_signal(&L->workers[i].cv);
		pthread_mutex_unlock(&L->mu);
	}
	atomic_store(&L->gen_stop, 1);
	if (L->gen_started)
		pthread_join(L->gen_thread, NULL);
	for (uint32_t i = 0; L->workers && i < L->c->workers; i++) {
		struct live_worker *w = &L->workers[i];
		if (w->started) {
			pthread_join(w->thread, NULL);
			L->res->sched_ok &= w->sched_ok;
			if (w->sched_ok) {
				L->res->workers_cpu_ns += w->sched_end.cpu_ns - w->sched_start.cpu_ns;
				L->res->workers_runq_wait_ns += w->sched_end.runq_wait_ns - w->sched_start.runq_wait_ns;
			}
		}
		pthread_cond_destroy(&w->cv);
		if (w->work)
			L->kops->work_destroy(L->km, w->work);
		if (w->stream)
			L->be->stream_destroy(w->stream);
		free(w->task.reqs);
		free(w->task.tokens);
		free(w->task.context);
		free(w->members);
		free(w->rtm);
		free(w->itm);
		free(w->graph_base);
	}
	free(L->workers);
	if (L->reqs) {
		for (uint64_t i = 0; i < L->c->n; i++)
			if (L->reqs[i].state)
				L->be->free(L->dev, L->reqs[i].state);
		free(L->reqs);
	}
	drv_fini(&L->drv);
	if (L->km)
		L->kops->destroy(L->km);
	if (L->dev)
		L->be->close(L->dev);
	pthread_cond_destroy(&L->sched_cv);
	pthread_mutex_destroy(&L->mu);
}

/* Rows the batch buffers hold: the max batch, or for an LLM the most tokens
 * one iteration runs (every prompt padded to the longest under static
 * batching; the token budget otherwise, with a decode for every member). */
static uint32_t live_rows(const struct live_config *c)
{
	const struct pol_env *e = &c->env;
	if (!c->model->is_llm)
		return e->max_batch;
	uint64_t rows = c->policy->pads_prompts ? (uint64_t)e->max_batch * e->longest_request_tokens
	                                        : e->max_batched_tokens > e->max_batch ? e->max_batched_tokens : e->max_batch;
	return rows < UINT32_MAX ? (uint32_t)rows : UINT32_MAX;
}

static int live_setup(struct live *L, char *err, size_t errlen)
{
	const struct live_config *c = L->c;
	struct live_result *res = L->res;
	struct rt_model_info info;
	/* first, so that a configuration the driver refuses opens no device */
	struct drv_config dc = { .policy = c->policy, .env = c->env, .max_cells = c->env.max_batch,
	                         .warmup = c->warmup, .expected_requests = c->n,
	                         .keep_request_rows = c->keep_request_rows, .release = live_req_done, .release_ctx = L };
	dc.env.workers = c->workers;
	if (drv_init(&L->drv, &dc, err, errlen) != 0)
		return -1;
	if (!(L->kops = rt_kernels_find(c->model, err, errlen)))
		return -1;
	L->be = c->backend ? c->backend : rt_backend_find(c->device, err, errlen);
	if (!L->be)
		return -1;
	struct rt_backend_cfg bc = { .gemm = c->gemm, .workers = c->workers };
	if (L->be->open(&bc, &L->dev, err, errlen) != 0)
		return -1;
	L->be->describe(L->dev, res->device_desc, sizeof res->device_desc);
	if (L->kops->create(c->model, L->be, L->dev, c->seed, &L->km, err, errlen) != 0)
		return -1;
	L->kops->info(L->km, &info);
	snprintf(res->model_desc, sizeof res->model_desc, "%s: %s", info.family, info.detail);
	res->weight_bytes = info.weight_bytes;
	L->rows = live_rows(c);
	uint32_t longest_input = 0;
	for (uint64_t i = 0; i < c->n; i++)
		longest_input = c->input_len[i] > longest_input ? c->input_len[i] : longest_input;
	L->pass_rows = rt_pass_rows(c->model, c->env.max_batch, longest_input);
	L->reqs = calloc(c->n ? c->n : 1, sizeof *L->reqs);
	L->workers = calloc(c->workers, sizeof *L->workers);
	if (!L->reqs || !L->workers)
		goto oom;
	for (uint32_t i = 0; i < c->workers; i++) {
		struct live_worker *w = &L->workers[i];
		w->L = L;
		w->index = i;
		w->last_end_ns = -1;
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&w->cv, &ca);
		pthread_condattr_destroy(&ca);
		uint32_t nb = c->env.max_batch;
		w->task.reqs = calloc(nb, sizeof *w->task.reqs);
		w->task.tokens = calloc(nb, sizeof *w->task.tokens);
		w->task.context = calloc(nb, sizeof *w->task.context);
		w->members = calloc(nb, sizeof *w->members);
		w->rtm = calloc(nb, sizeof *w->rtm);
		w->itm = calloc(nb, sizeof *w->itm);
		w->graph_base = calloc(nb, sizeof *w->graph_base);
		if (!w->task.reqs || !w->task.tokens || !w->task.context || !w->members || !w->rtm || !w->itm ||
		    !w->graph_base)
			goto oom;
		uint32_t stream_rows = L->pass_rows > L->rows ? L->pass_rows : L->rows;
		if (L->be->stream_create(L->dev, i, stream_rows, info.max_k, &w->stream, err, errlen) != 0 ||
		    L->kops->work_create(L->km, L->rows, L->pass_rows, &w->work, err, errlen) != 0)
			return -1;
	}
	return 0;
oom:
	err_memory(err, errlen, "out of memory setting up the live run");
	return -1;
}

int live_run(const struct live_config *c, struct live_result *res, char *err, size_t errlen)
{
	struct live L = { .c = c, .res = res };
	memset(res, 0, sizeof *res);
	pthread_mutex_init(&L.mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&L.sched_cv, &ca);
	pthread_condattr_destroy(&ca);
	atomic_init(&L.gen_stop, 0);
	res->n = c->n;
	res->reqs = calloc(c->n ? c->n : 1, sizeof *res->reqs);
	if (!res->reqs) {
		err_memory(err, errlen, "out of memory setting up the live run");
		goto fail;
	}
	for (uint64_t i = 0; i < c->n; i++)
		res->reqs[i] = (struct live_request){ .arrival_ns = c->arrival_ns[i], .issue_ns = -1, .start_ns = -1,
		                                      .finish_ns = -1, .input_len = c->input_len[i],
		                                      .output_len = c->output_len[i] };
	int64_t s0 = live_mono_ns();
	if (live_setup(&L, err, errlen) != 0)
		goto fail;
	for (uint32_t i = 0; i < c->workers; i++) {
		if (pthread_create(&L.workers[i].thread, NULL, live_worker_main, &L.workers[i]) != 0) {
			snprintf(err, errlen, "cannot start worker thread %u", i);
			goto fail;
		}
		L.workers[i].started = 1;
	}
	struct cpu_schedstat sched0, sched1;
	uint64_t psi0 = 0, psi1 = 0;
	res->sched_ok = cpu_schedstat_self(&sched0) == 0;
	res->psi_ok = cpu_pressure_self_us(&psi0) == 0;
	L.t0_ns = live_mono_ns();
	res->setup_s = (L.t0_ns - s0) * 1e-9;
	if (pthread_create(&L.gen_thread, NULL, live_generator, &L) != 0) {
		snprintf(err, errlen, "cannot start the load generator thread");
		goto fail;
	}
	L.gen_started = 1;
	int policy_before;
	struct sched_param param_before;
	pthread_getschedparam(pthread_self(), &policy_before, &param_before);
	res->realtime = live_raise_priority();
	int src = live_schedule(&L, err, errlen);
	pthread_setschedparam(pthread_self(), policy_before, &param_before);
	if (src != 0)
		goto fail;
	res->end_ns = live_mono_ns() - L.t0_ns;
	res->sched_ok = res->sched_ok && cpu_schedstat_self(&sched1) == 0;
	res->psi_ok = res->psi_ok && cpu_pressure_self_us(&psi1) == 0 && psi1 >= psi0;
	res->scheduler_runq_wait_ns = res->sched_ok ? sched1.runq_wait_ns - sched0.runq_wait_ns : 0;
	res->psi_some_us = res->psi_ok ? psi1 - psi0 : 0;
	for (uint64_t i = 0; i < c->n; i++) {
		struct live_request *rec = &res->reqs[i];
		if (i < L.issued_upto && rec->status != LIVE_DONE && rec->status != LIVE_DROPPED) {
			rec->status = LIVE_ABANDONED;
			res->abandoned++;
		}
	}
	res->busy_ns = L.drv.busy_ns;
	/* the run's result as the simulator states it: requests issued (dropped
	 * ones too), and as cold starts the tasks that began after their device
	 * idled (a refill was due) */
	struct drv_run_end end = { .end_ns = res->end_ns, .workers = c->workers, .sla_ns = c->sla_ns,
	                           .events = res->events, .cold_starts = L.drv.tasks - res->warm_tasks };
	if (drv_finish(&L.drv, &end, &res->run, err, errlen) != 0)
		goto fail;
	res->run.issued = res->issued;
	live_teardown(&L);
	return 0;
fail:
	live_teardown(&L);
	live_result_free(res);
	return -1;
}

void live_result_free(struct live_result *res)
{
	if (res->reqs)
		for (uint64_t i = 0; i < res->n; i++) {
			free(res->reqs[i].tokens);
			free(res->reqs[i].values);
		}
	free(res->reqs);
	drv_result_free(&res->run);
	free(res->task_log);
	free(res->task_ids);
	memset(res, 0, sizeof *res);
}
