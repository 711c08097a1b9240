/* runtime/live_worker.c: a device's worker thread in a live run: it takes the
 * job the scheduler hands it (a snapshot of its task's members), runs the
 * kernels on the device, and reports the end (live_state.h). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include "../kernels/fpu.h"
#include "../util/errkind.h"
#include "live_state.h"

/* A whole-graph task padded to the longest member (graph batching): every
 * node of every segment runs for all members as many times as the longest
 * member needs; a member past its own length is a padding row. A pass node
 * runs every member's tokens padded to the longest input, as the simulator
 * prices it (sim/engine/latency.c). */
static void live_run_graph(struct live *L, struct live_worker *w)
{
	const struct mdl_model *m = L->c->model;
	uint32_t n = w->nmembers;
	for (uint32_t i = 0; i < n; i++)
		w->graph_base[i] = 0;
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		uint32_t reps_max = 0, longest_input = 0;
		for (uint32_t i = 0; i < n; i++) {
			uint32_t r = mdl_node_repeats(m, seg->first_node, w->members[i].input_len, w->members[i].output_len);
			reps_max = r > reps_max ? r : reps_max;
			longest_input = w->members[i].input_len > longest_input ? w->members[i].input_len : longest_input;
		}
		for (uint32_t rep = 0; rep < reps_max; rep++)
			for (uint32_t k = 0; k < seg->nnodes; k++) {
				int any = 0;
				for (uint32_t i = 0; i < n; i++) {
					const struct live_member *mb = &w->members[i];
					uint32_t reps = mdl_node_repeats(m, seg->first_node, mb->input_len, mb->output_len);
					uint32_t r = rep < reps ? rep : reps ? reps - 1 : 0;
					uint64_t pos = w->graph_base[i] + (uint64_t)r * seg->nnodes + k;
					int active = rep < reps && pos >= mb->pos;
					w->rtm[i] = (struct rt_member){ .id = mb->req->pr.id, .input_len = mb->input_len,
					                                .output_len = mb->output_len, .pos = pos,
					                                .active = active, .pad_len = longest_input,
					                                .state = mb->req->state };
					any |= active;
				}
				if (any)
					L->kops->run_node(L->km, w->work, w->stream, seg->first_node + k, n, w->rtm);
			}
		for (uint32_t i = 0; i < n; i++)
			w->graph_base[i] += (uint64_t)seg->nnodes *
			                    mdl_node_repeats(m, seg->first_node, w->members[i].input_len,
			                                     w->members[i].output_len);
	}
}

/* Runs the job: states for new members, the node(s), the wait for the
 * device, then outputs and state release for members that finished. */
static int live_run_job(struct live *L, struct live_worker *w, char *err, size_t errlen)
{
	const struct rt_backend_ops *be = L->be;
	for (uint32_t i = 0; i < w->nmembers; i++) {
		struct live_member *mb = &w->members[i];
		struct live_req_rt *r = mb->req;
		if (r->state)
			continue;
		size_t bytes = L->kops->state_bytes(L->km, mb->input_len, mb->output_len);
		r->state = be->alloc(L->dev, bytes);
		if (!r->state) {
			snprintf(err, errlen, "out of device memory for request %llu's state (%zu bytes)",
			         (unsigned long long)r->pr.id, bytes);
			return -1;
		}
		if (L->kops->state_init(L->km, r->state, r->pr.id, mb->input_len, mb->output_len, err, errlen) != 0)
			return -1;
	}
	if (w->kind == POL_TASK_GRAPH) {
		live_run_graph(L, w);
	} else if (w->kind == POL_TASK_ITER) {
		for (uint32_t i = 0; i < w->nmembers; i++) {
			const struct live_member *mb = &w->members[i];
			w->itm[i] = (struct rt_iter_member){ .id = mb->req->pr.id, .input_len = mb->input_len,
			                                     .output_len = mb->output_len, .context = mb->context,
			                                     .tokens = mb->tokens, .emit = mb->emits, .state = mb->req->state };
		}
		if (L->kops->run_iter(L->km, w->work, w->stream, w->nmembers, w->itm, w->pad_tokens, err, errlen) != 0)
			return -1;
	} else {
		for (uint32_t i = 0; i < w->nmembers; i++) {
			const struct live_member *mb = &w->members[i];
			w->rtm[i] = (struct rt_member){ .id = mb->req->pr.id, .input_len = mb->input_len,
			                                .output_len = mb->output_len, .pos = mb->pos, .active = 1,
			                                .state = mb->req->state };
		}
		L->kops->run_node(L->km, w->work, w->stream, w->node, w->nmembers, w->rtm);
	}
	if (be->finish(w->stream, err, errlen) != 0)
		return -1;
	if (be->move_ns) {
		uint64_t total = be->move_ns(w->stream);
		w->move_ns = (double)(total - w->move_seen);
		w->move_seen = total;
	}
	for (uint32_t i = 0; i < w->nmembers; i++) {
		struct live_member *mb = &w->members[i];
		struct live_req_rt *r = mb->req;
		if (w->kind == POL_TASK_ITER ? !mb->emits || mb->pos + 1 < mb->chain_len
		                             : w->kind != POL_TASK_GRAPH && mb->pos + 1 < mb->chain_len)
			continue;
		if (L->c->keep_outputs) {
			struct live_request *rec = &L->res->reqs[r->pr.id];
			struct rt_model_info info;
			L->kops->info(L->km, &info);
			rec->tokens = malloc(((size_t)mb->output_len + 1) * sizeof(int32_t));
			rec->values = malloc((size_t)info.output_floats * sizeof(float));
			if (!rec->tokens || !rec->values) {
				err_memory(err, errlen, "out of memory for request %llu's outputs", (unsigned long long)r->pr.id);
				return -1;
			}
			struct rt_outputs o = { .tokens = rec->tokens, .values = rec->values };
			if (L->kops->outputs(L->km, r->state, mb->input_len, mb->output_len, &o, err, errlen) != 0)
				return -1;
			rec->nvalues = o.nvalues;
			rec->ntokens = o.ntokens;
		}
		be->free(L->dev, r->state);
		r->state = NULL;
	}
	return 0;
}

void *live_worker_main(void *arg)
{
	struct live_worker *w = arg;
	struct live *L = w->L;
	w->sched_ok = cpu_schedstat_self(&w->sched_start) == 0;
	fpu_flush_denormals();   /* the arithmetic the calibration timed (kernels/cpu_cells.h) */
	pthread_mutex_lock(&L->mu);
	for (;;) {
		while (!w->job_ready && !L->quit)
			pthread_cond_wait(&w->cv, &L->mu);
		if (!w->job_ready)
			break;
		w->job_ready = 0;
		pthread_mutex_unlock(&L->mu);
		char err[256] = "";
		int64_t start = live_mono_ns();
		int rc = live_run_job(L, w, err, sizeof err);
		int64_t end = live_mono_ns();
		pthread_mutex_lock(&L->mu);
		w->end_ns = end - L->t0_ns;
		w->exec_ns = end - start;
		w->job_rc = rc;
		snprintf(w->job_err, sizeof w->job_err, "%s", err);
		w->job_done = 1;
		pthread_cond_signal(&L->sched_cv);
	}
	pthread_mutex_unlock(&L->mu);
	w->sched_ok = w->sched_ok && cpu_schedstat_self(&w->sched_end) == 0;   /* read by live_teardown after the join */
	return NULL;
}
