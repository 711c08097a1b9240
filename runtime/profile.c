/* runtime/profile.c: the node-by-node timing of profile.h. */
#include "profile.h"
#include "../util/errkind.h"

#include <gsl/gsl_multifit.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../hwmodels/llm_iter.h"
#include "../kernels/fpu.h"
#include "kernels.h"

/* Untimed calls before each point: the first calls after a batch change
 * fault in buffers and refill caches, and in a mean of a few calls they
 * showed as 10-20% on the LSTM step. */
#define PROF_WARMUP 3

static double prof_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec * 1e-9;
}

/* Unrolled position of node type t at the middle step of its segment. */
static uint64_t prof_position(const struct mdl_model *m, uint32_t t, uint32_t input_len, uint32_t output_len)
{
	uint64_t base = 0;
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		uint32_t reps = mdl_node_repeats(m, seg->first_node, input_len, output_len);
		if (t >= seg->first_node && t < seg->first_node + seg->nnodes)
			return base + (uint64_t)(reps / 2) * seg->nnodes + (t - seg->first_node);
		base += (uint64_t)reps * seg->nnodes;
	}
	return 0;
}

/* One timed call runs on a worker thread, handed over and handed back by
 * condition variables as a live task is (runtime/live.c): a live task's time
 * from its dispatch to the scheduler's next decision includes those two
 * thread wake-ups, and for a small model's iteration they are most of it
 * (about 50 us a round trip on the shared 2-core VM, measured with a bare
 * ping-pong of two threads, against a decode step of 10-20 us). */
struct prof_call {
	const struct prof_session *p;
	uint32_t n;
	uint32_t repeat;                 /* a node call run this many times in the one task (0: once) */
	int cold;                        /* evict the caches before each call (prof_node_cold) */
	union {
		struct { uint32_t node; struct rt_member *mb; } node;
		struct { struct rt_iter_member *mb; } iter;
	} u;
};

struct prof_worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t go, back;
	int job, done, quit, running;
	const struct prof_call *call;
	int rc;
	char err[256];
};

/* What both profiles hold: the kernels on one device and stream, buffers of
 * rows rows, nstates request states of (input_len, output_len), and the
 * worker thread the calls run on. */
struct prof_session {
	const struct rt_model_ops *kops;
	const struct rt_backend_ops *be;
	struct rt_dev *dev;
	struct rt_model *km;
	struct rt_stream *s;
	void *work;
	struct rt_model_info info;
	void **states;
	uint32_t nstates;
	char desc[256];                  /* the device, described */
	struct prof_worker w;
	size_t llc_bytes;                /* CPU: the last-level cache (0: unknown, or not a CPU) */
	unsigned char *evict;            /* a buffer of evict_bytes, twice llc_bytes */
	size_t evict_bytes;
	double min_row_s;                /* the smallest row written (rt_profile) */
};

/* ---- cold weights ----
 * A live run walks a request's chain, so between two runs of a node the
 * others run, and when their weights exceed the last-level cache the node
 * finds its own weights evicted. Timed back to back, as a profile point is,
 * they stay cached: measured on this VM (32 MiB L3), the token-by-token
 * Transformer's layers took 1.3-2.1x as long with the cache evicted first,
 * and its live tasks 1.63x what the cached profile gave against 0.77-0.89x
 * the evicted one (docs/VALIDATION.md). So a node that would run cold in a
 * live run is timed after the cache is evicted (CPU only: a GPU's cache
 * would need a kernel of its own). */

/* The last-level cache of CPU 0 in bytes (Linux sysfs), 0 if unknown.
 * sysconf's figure is the host's in some VMs (320 MiB on this one). */
static size_t prof_llc_bytes(void)
{
	size_t best = 0;
	int best_level = 0;
	for (int i = 0; i < 8; i++) {
		char path[96], buf[32];
		int level = 0;
		unsigned long long kib = 0;
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		int ok = fscanf(f, "%d", &level) == 1;
		fclose(f);
		snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		if (!ok || !(f = fopen(path, "r")))
			continue;
		ok = fgets(buf, sizeof buf, f) && sscanf(buf, "%lluK", &kib) == 1;
		fclose(f);
		if (ok && level > best_level) {
			best_level = level;
			best = (size_t)kib << 10;
		}
	}
	return best;
}

/* Weight bytes of node t as the live kernels hold them (fp32). */
static double prof_node_weight_bytes(const struct mdl_model *m, uint32_t t)
{
	return (double)mdl_node_weight_elems(&m->nodes[t]) * sizeof(float);
}

/* Whether node t's weights are evicted between two of its runs in a live
 * run: by the other nodes of its segment when the segment repeats with
 * more than one node (a decoder step's layers), by the rest of the chain
 * when it runs once a request (static and pass nodes), never when it
 * repeats alone (an RNN encoder's one cell). */
static int prof_node_cold(const struct mdl_model *m, uint32_t t, size_t llc_bytes)
{
	const struct mdl_segment *seg = &m->segments[m->nodes[t].segment];
	int repeats = seg->kind != MDL_STATIC && seg->kind != MDL_PASS;
	if (!llc_bytes || (repeats && seg->nnodes == 1))
		return 0;
	uint32_t first = repeats ? seg->first_node : 0, end = repeats ? seg->first_node + seg->nnodes : m->nnodes;
	double between = 0;
	for (uint32_t u = first; u < end; u++)
		if (u != t)
			between += prof_node_weight_bytes(m, u);
	return between >= (double)llc_bytes;
}

/* Touches every cache line of the eviction buffer. */
static void prof_evict(struct prof_session *p)
{
	volatile unsigned char *b = p->evict;
	for (size_t i = 0; i < p->evict_bytes; i += 64)
		b[i]++;
}

/* The call itself: the kernels, then the device's finish. */
static int prof_run_call(const struct prof_call *c, char *err, size_t errlen)
{
	const struct prof_session *p = c->p;
	if (p->kops->run_iter) {
		if (p->kops->run_iter(p->km, p->work, p->s, c->n, c->u.iter.mb, 0, err, errlen) != 0)
			return -1;
	} else {
		for (uint32_t i = 0; i < (c->repeat ? c->repeat : 1); i++)
			p->kops->run_node(p->km, p->work, p->s, c->u.node.node, c->n, c->u.node.mb);
	}
	return p->be->finish(p->s, err, errlen);
}

static void *prof_worker_main(void *arg)
{
	struct prof_worker *w = arg;
	fpu_flush_denormals();   /* as the live workers compute (kernels/fpu.h) */
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->job && !w->quit)
			pthread_cond_wait(&w->go, &w->mu);
		if (!w->job)
			break;
		w->job = 0;
		pthread_mutex_unlock(&w->mu);
		char err[256] = "";
		int rc = prof_run_call(w->call, err, sizeof err);
		pthread_mutex_lock(&w->mu);
		w->rc = rc;
		snprintf(w->err, sizeof w->err, "%s", err);
		w->done = 1;
		pthread_cond_signal(&w->back);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Seconds from handing c to the worker to being woken by its end, or -1
 * with err. */
static double prof_time_call(struct prof_session *p, const struct prof_call *c, char *err, size_t errlen)
{
	struct prof_worker *w = &p->w;
	if (c->cold && p->evict)
		prof_evict(p);
	double t0 = prof_now_s();
	pthread_mutex_lock(&w->mu);
	w->call = c;
	w->job = 1;
	pthread_cond_signal(&w->go);
	while (!w->done)
		pthread_cond_wait(&w->back, &w->mu);
	w->done = 0;
	int rc = w->rc;
	pthread_mutex_unlock(&w->mu);
	double t = prof_now_s() - t0;
	if (rc != 0) {
		snprintf(err, errlen, "%s", w->err);
		return -1;
	}
	return t;
}

/* A point of either profile: warmup untimed calls of c (PROF_WARMUP but for
 * a long pass point, prof_pass_mean), then the mean of reps timed ones, in
 * seconds; -1 with err. */
static double prof_mean_call(struct prof_session *p, const struct prof_call *c, uint32_t warmup, uint32_t reps,
                             char *err, size_t errlen)
{
	double sum = 0;
	for (uint32_t r = 0; r < warmup + reps; r++) {
		double v = prof_time_call(p, c, err, errlen);
		if (v < 0)
			return -1;
		if (r >= warmup)
			sum += v;
	}
	return sum / reps;
}

/* The end of either profile's file: 0, or -1 with err. */
static int prof_flush(FILE *f, char *err, size_t errlen)
{
	if (fflush(f) != 0 || ferror(f)) {
		err_io(err, errlen, "error writing the profile");
		return -1;
	}
	return 0;
}

static void prof_close(struct prof_session *p)
{
	if (p->w.running) {
		pthread_mutex_lock(&p->w.mu);
		p->w.quit = 1;
		pthread_cond_signal(&p->w.go);
		pthread_mutex_unlock(&p->w.mu);
		pthread_join(p->w.thread, NULL);
		pthread_cond_destroy(&p->w.go);
		pthread_cond_destroy(&p->w.back);
		pthread_mutex_destroy(&p->w.mu);
	}
	for (uint32_t i = 0; p->states && i < p->nstates; i++)
		if (p->states[i])
			p->be->free(p->dev, p->states[i]);
	free(p->states);
	free(p->evict);
	if (p->work)
		p->kops->work_destroy(p->km, p->work);
	if (p->s)
		p->be->stream_destroy(p->s);
	if (p->km)
		p->kops->destroy(p->km);
	if (p->dev)
		p->be->close(p->dev);
	memset(p, 0, sizeof *p);
}

/* iterations: the model must run by iterations (1) or by nodes (0). 0, or
 * -1 with err and the session closed. */
static int prof_open(struct prof_session *p, const struct rt_profile_config *c, int iterations, uint32_t rows,
                     uint32_t pass_rows, uint32_t nstates, uint32_t input_len, uint32_t output_len, char *err,
                     size_t errlen)
{
	const struct mdl_model *m = c->model;
	memset(p, 0, sizeof *p);
	if (!(p->kops = rt_kernels_find(m, err, errlen)) || !(p->be = rt_backend_find(c->device, err, errlen)))
		goto fail;
	if (!p->kops->run_iter != !iterations) {
		snprintf(err, errlen, "model %s runs by %s", m->name, iterations ? "nodes" : "iterations");
		goto fail;
	}
	struct rt_backend_cfg bc = { .gemm = c->gemm, .workers = 1 };
	if (p->be->open(&bc, &p->dev, err, errlen) != 0 ||
	    p->kops->create(m, p->be, p->dev, c->seed, &p->km, err, errlen) != 0)
		goto fail;
	p->kops->info(p->km, &p->info);
	p->be->describe(p->dev, p->desc, sizeof p->desc);
	if (strcmp(c->device, "cpu") == 0 && (p->llc_bytes = prof_llc_bytes()) > 0) {
		p->evict_bytes = 2 * p->llc_bytes;
		if (!(p->evict = calloc(1, p->evict_bytes))) {
			err_memory(err, errlen, "out of memory");
			goto fail;
		}
	}
	uint32_t stream_rows = pass_rows > rows ? pass_rows : rows;
	if (p->be->stream_create(p->dev, 0, stream_rows, p->info.max_k, &p->s, err, errlen) != 0 ||
	    p->kops->work_create(p->km, rows, pass_rows, &p->work, err, errlen) != 0)
		goto fail;
	if (!(p->states = calloc(nstates, sizeof *p->states))) {
		err_memory(err, errlen, "out of memory");
		goto fail;
	}
	p->nstates = nstates;
	size_t bytes = p->kops->state_bytes(p->km, input_len, output_len);
	for (uint32_t i = 0; i < nstates; i++) {
		if (!(p->states[i] = p->be->alloc(p->dev, bytes))) {
			snprintf(err, errlen, "out of device memory for %u request states", nstates);
			goto fail;
		}
		if (p->kops->state_init(p->km, p->states[i], i, input_len, output_len, err, errlen) != 0)
			goto fail;
	}
	pthread_mutex_init(&p->w.mu, NULL);
	pthread_cond_init(&p->w.go, NULL);
	pthread_cond_init(&p->w.back, NULL);
	if (pthread_create(&p->w.thread, NULL, prof_worker_main, &p->w) != 0) {
		pthread_cond_destroy(&p->w.go);
		pthread_cond_destroy(&p->w.back);
		pthread_mutex_destroy(&p->w.mu);
		snprintf(err, errlen, "cannot start the profile's worker thread");
		goto fail;
	}
	p->w.running = 1;
	return 0;
fail:
	prof_close(p);
	return -1;
}

/* A pass node's point that runs long (thousands of tokens through a
 * layer) is timed fewer times: after one untimed call of t seconds,
 * enough calls for PROF_PASS_BUDGET_S, at least 2, at most reps. */
#define PROF_PASS_LONG_S 0.005
#define PROF_PASS_BUDGET_S 0.1

static double prof_pass_mean(struct prof_session *p, const struct prof_call *c, uint32_t reps, char *err,
                             size_t errlen)
{
	double first = prof_time_call(p, c, err, errlen);   /* the first untimed call */
	if (first < 0)
		return -1;
	if (first < PROF_PASS_LONG_S)
		return prof_mean_call(p, c, PROF_WARMUP - 1, reps, err, errlen);
	uint32_t n = (uint32_t)ceil(PROF_PASS_BUDGET_S / first);
	return prof_mean_call(p, c, 0, n < 2 ? 2 : n > reps ? reps : n, err, errlen);
}

/* A pass node runs its members' tokens (models/FORMAT.md), so its rows are
 * by tokens: 1, 2, 4, ... and the most a run asks for, rows = max batch x
 * the longest input. A point of T tokens is requests of the profiled input
 * length, the last one shorter, so the time holds their attention over
 * their own tokens at that length (node_table.c adds nothing per request).
 * The requests of the profiled length reuse the session's states in turn
 * (the kernels' time does not depend on what the states hold); the shorter
 * one gets a state of its own length. */
static int prof_pass_node(struct prof_session *p, const struct rt_profile_config *c, uint32_t node,
                          uint32_t pass_rows, struct rt_member *mb, FILE *f, char *err, size_t errlen)
{
	const struct mdl_model *m = c->model;
	uint32_t len = c->input_len ? c->input_len : 1;
	double floor_s = 0;
	if (pass_rows == 0) {
		snprintf(err, errlen, "pass node %s: the profile has no input tokens to run", m->nodes[node].name);
		return -1;
	}
	for (uint64_t tokens = 1;; tokens = tokens * 2 < pass_rows ? tokens * 2 : pass_rows) {
		uint32_t whole = (uint32_t)(tokens / len), rest = (uint32_t)(tokens % len), n = whole + (rest > 0);
		struct rt_member *own = calloc(n, sizeof *own);
		void *rest_state = NULL;
		if (!own) {
			err_memory(err, errlen, "out of memory");
			return -1;
		}
		for (uint32_t i = 0; i < whole; i++)
			own[i] = (struct rt_member){ .id = i, .input_len = len, .output_len = c->output_len, .active = 1,
			                             .pos = prof_position(m, node, len, c->output_len),
			                             .state = mb[i % p->nstates].state };
		if (rest) {
			size_t bytes = p->kops->state_bytes(p->km, rest, c->output_len);
			if (!(rest_state = p->be->alloc(p->dev, bytes))) {
				snprintf(err, errlen, "out of device memory for a request state");
				free(own);
				return -1;
			}
			own[whole] = (struct rt_member){ .id = whole, .input_len = rest, .output_len = c->output_len,
			                                 .active = 1, .pos = prof_position(m, node, rest, c->output_len),
			                                 .state = rest_state };
		}
		double v = -1;
		if (!rest || p->kops->state_init(p->km, rest_state, whole, rest, c->output_len, err, errlen) == 0) {
			struct prof_call call = { .p = p, .n = n, .cold = prof_node_cold(m, node, p->llc_bytes),
			                          .u.node = { node, own } };
			v = prof_pass_mean(p, &call, c->reps, err, errlen);
		}
		if (rest_state)
			p->be->free(p->dev, rest_state);
		free(own);
		if (v < 0)
			return -1;
		floor_s = v > floor_s ? v : floor_s;
		fprintf(f, "%s,%llu,%.9g\n", m->nodes[node].name, (unsigned long long)tokens, floor_s);
		p->min_row_s = floor_s < p->min_row_s ? floor_s : p->min_row_s;
		if (tokens == pass_rows)
			break;
	}
	return 0;
}

/* What a task costs once, however many nodes it runs (handing it to the worker, the device's finish, the
 * wake-up): node at batch 1 timed alone and PROF_CHAIN times in one task, T1 and Tk, give the node's
 * own time (Tk - T1) / (k - 1) and the task's T1 less that. A graph task (serial, graph batching) runs
 * a request's whole chain as one task; on a GPU this cost is a large part of a small node's row (an
 * LSTM cell on an H100, 2026-11-26: 40 us of its 85; docs/VALIDATION.md section 5). Seconds, or -1. */
#define PROF_CHAIN 8
static double prof_task_overhead(struct prof_session *p, uint32_t node, struct rt_member *mb, uint32_t reps,
                                 char *err, size_t errlen)
{
	struct prof_call one = { .p = p, .n = 1, .u.node = { node, mb } }, chain = one;
	chain.repeat = PROF_CHAIN;
	double t1 = prof_mean_call(p, &one, PROF_WARMUP, reps, err, errlen);
	double tk = t1 < 0 ? -1 : prof_mean_call(p, &chain, PROF_WARMUP, reps, err, errlen);
	if (tk < 0)
		return -1;
	double o = (PROF_CHAIN * t1 - tk) / (PROF_CHAIN - 1);
	return o > 0 ? o : 0;
}

int rt_profile(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen)
{
	const struct mdl_model *m = c->model;
	struct prof_session p;
	uint32_t maxb = c->batches[c->nbatches - 1];
	struct rt_member *mb = calloc(maxb, sizeof *mb);
	int rc = -1;

	if (!mb) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	uint32_t pass_rows = rt_pass_rows(m, maxb, c->longest_input);
	if (prof_open(&p, c, 0, maxb, pass_rows, maxb, c->input_len, c->output_len, err, errlen) != 0) {
		free(mb);
		return -1;
	}
	fprintf(f, "# simbatch live kernel profile of model %s (%s)\n# device: %s\n"
	        "# requests of input_len %u, output_len %u at the middle step; mean of %u timed calls after %d "
	        "untimed ones (wall clock, each handed to a worker thread and back as a live task)\n",
	        m->name, p.info.detail, p.desc, c->input_len, c->output_len, c->reps, PROF_WARMUP);
	int any_cold = 0;
	for (uint32_t node = 0; node < m->nnodes; node++)
		if (prof_node_cold(m, node, p.llc_bytes)) {
			if (!any_cold++)
				fprintf(f, "# each call after evicting the %zu KiB last-level cache (weights a live run does not "
				        "find cached):", p.llc_bytes >> 10);
			fprintf(f, " %s", m->nodes[node].name);
		}
	fprintf(f, "%snode,batch,latency_s\n", any_cold ? "\n" : "");
	p.min_row_s = INFINITY;
	double overhead_s = -1;          /* measured on the first node that is not a pass node */
	for (uint32_t i = 0; i < maxb; i++)
		mb[i] = (struct rt_member){ .id = i, .input_len = c->input_len, .output_len = c->output_len, .active = 1,
		                            .state = p.states[i] };
	for (uint32_t node = 0; node < m->nnodes; node++) {
		if (mdl_is_pass(m, node)) {
			if (prof_pass_node(&p, c, node, pass_rows, mb, f, err, errlen) != 0)
				goto out;
			continue;
		}
		uint64_t pos = prof_position(m, node, c->input_len, c->output_len);
		double floor_s = 0;
		for (uint32_t i = 0; i < maxb; i++)
			mb[i].pos = pos;
		for (size_t bi = 0; bi < c->nbatches; bi++) {
			uint32_t b = c->batches[bi];
			struct prof_call call = { .p = &p, .n = b, .cold = prof_node_cold(m, node, p.llc_bytes),
			                          .u.node = { node, mb } };
			double v = prof_mean_call(&p, &call, PROF_WARMUP, c->reps, err, errlen);
			if (v < 0)
				goto out;
			if (v < floor_s)
				v = floor_s;
			floor_s = v;
			fprintf(f, "%s,%u,%.9g\n", m->nodes[node].name, b, v);
			p.min_row_s = v < p.min_row_s ? v : p.min_row_s;
		}
		if (overhead_s < 0 && (overhead_s = prof_task_overhead(&p, node, mb, c->reps, err, errlen)) < 0)
			goto out;
		if (c->progress)
			fprintf(c->progress, "profile: node %u of %u (%s) timed at %zu batches\n", node + 1, m->nnodes,
			        m->nodes[node].name, c->nbatches);
	}
	if (overhead_s >= 0)             /* each row holds it: never more than the smallest (node_table.c) */
		fprintf(f, "# what a task pays once however many nodes it runs, the first node at batch 1 alone and %d "
		        "times in one task:\n# task_overhead_s: %.9g\n", PROF_CHAIN,
		        overhead_s < p.min_row_s ? overhead_s : p.min_row_s);
	rc = prof_flush(f, err, errlen);
out:
	prof_close(&p);
	free(mb);
	return rc;
}

/* ---- LLM iterations (rt_profile_llm) ---- */

#define PROF_LLM_TERMS 4   /* fixed, per token, per emitting row, per query-key pair */
#define PROF_LLM_MAX_POINTS 128

struct prof_llm_point {
	uint32_t members, tokens, context;   /* each member runs tokens on a cache of context */
	int emit;
	double seconds;                      /* measured mean */
	double x[PROF_LLM_TERMS];            /* 1, T, E, A */
};

static void prof_llm_terms(struct prof_llm_point *p)
{
	p->x[0] = 1.0;
	p->x[1] = (double)p->members * p->tokens;
	p->x[2] = p->emit ? p->members : 0;
	p->x[3] = p->members * llm_iter_pairs(p->tokens, p->context);
}

/* The points of profile.h, within the rows the buffers hold and the context. */
static size_t prof_llm_plan(const struct rt_profile_config *c, uint32_t context, struct prof_llm_point *pts)
{
	size_t n = 0;
	for (uint32_t t = 1; t <= c->max_tokens && t < context && n < PROF_LLM_MAX_POINTS; t *= 2)
		pts[n++] = (struct prof_llm_point){ .members = 1, .tokens = t, .context = 0, .emit = 1 };
	static const uint32_t caches[] = { 8, 64, 256 }, chunks[] = { 16, 64, 256 };
	for (size_t k = 0; k < 3; k++)
		for (size_t bi = 0; bi < c->nbatches && caches[k] + 1 < context && n < PROF_LLM_MAX_POINTS; bi++)
			pts[n++] = (struct prof_llm_point){ .members = c->batches[bi], .tokens = 1, .context = caches[k],
			                                    .emit = 1 };
	for (size_t k = 0; k < 3; k++)
		if (chunks[k] <= c->max_tokens && 128 + chunks[k] < context && n < PROF_LLM_MAX_POINTS)
			pts[n++] = (struct prof_llm_point){ .members = 1, .tokens = chunks[k], .context = 128, .emit = 0 };
	for (size_t i = 0; i < n; i++)
		prof_llm_terms(&pts[i]);
	return n;
}

/* Least squares of the relative errors (weights 1 / seconds^2: a 10 us
 * decode step counts as much as a 10 ms prefill) over the terms not yet
 * left out (used[j]); a negative
 * coefficient leaves its term out and the rest are refitted. 0, or -1 when
 * GSL cannot fit. */
static int prof_llm_fit(const struct prof_llm_point *pts, size_t n, double *coef)
{
	int used[PROF_LLM_TERMS] = { 1, 1, 1, 1 };
	for (;;) {
		size_t k = 0, col[PROF_LLM_TERMS];
		for (size_t j = 0; j < PROF_LLM_TERMS; j++)
			if (used[j])
				col[k++] = j;
		if (k == 0 || n < k)
			return -1;
		gsl_matrix *X = gsl_matrix_alloc(n, k), *cov = gsl_matrix_alloc(k, k);
		gsl_vector *y = gsl_vector_alloc(n), *w = gsl_vector_alloc(n), *b = gsl_vector_alloc(k);
		gsl_multifit_linear_workspace *ws = gsl_multifit_linear_alloc(n, k);
		double chisq;
		int rc = -1;
		if (X && cov && y && w && b && ws) {
			for (size_t i = 0; i < n; i++) {
				gsl_vector_set(y, i, pts[i].seconds);
				gsl_vector_set(w, i, 1.0 / (pts[i].seconds * pts[i].seconds));   /* relative errors */
				for (size_t j = 0; j < k; j++)
					gsl_matrix_set(X, i, j, pts[i].x[col[j]]);
			}
			rc = gsl_multifit_wlinear(X, w, y, b, cov, &chisq, ws) == 0 ? 0 : -1;
		}
		size_t worst = PROF_LLM_TERMS;
		for (size_t j = 0; rc == 0 && j < PROF_LLM_TERMS; j++)
			coef[j] = 0;
		for (size_t j = 0; rc == 0 && j < k; j++) {
			coef[col[j]] = gsl_vector_get(b, j);
			if (coef[col[j]] < 0 && (worst == PROF_LLM_TERMS || coef[col[j]] < coef[worst]))
				worst = col[j];
		}
		gsl_multifit_linear_free(ws);
		gsl_matrix_free(X);
		gsl_matrix_free(cov);
		gsl_vector_free(y);
		gsl_vector_free(w);
		gsl_vector_free(b);
		if (rc != 0)
			return -1;
		if (worst == PROF_LLM_TERMS)
			return 0;
		used[worst] = 0;
	}
}

/* One point's mean time: members 0..pt->members-1 at its positions. */
static int prof_llm_time(const struct rt_profile_config *c, struct prof_session *p, struct rt_iter_member *mb,
                         struct prof_llm_point *pt, char *err, size_t errlen)
{
	for (uint32_t i = 0; i < pt->members; i++) {
		mb[i].context = pt->context;
		mb[i].tokens = pt->tokens;
		mb[i].emit = pt->emit;
	}
	struct prof_call call = { .p = p, .n = pt->members, .u.iter = { mb } };
	pt->seconds = prof_mean_call(p, &call, PROF_WARMUP, c->reps, err, errlen);
	return pt->seconds < 0 ? -1 : 0;
}

int rt_profile_llm(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen)
{
	const struct mdl_model *m = c->model;
	struct prof_session p;
	struct prof_llm_point pts[PROF_LLM_MAX_POINTS];
	uint32_t maxb = c->batches[c->nbatches - 1];
	uint32_t rows = maxb > c->max_tokens ? maxb : c->max_tokens;
	/* requests of a 1-token prompt and the rest of the context as output: any position may emit */
	uint32_t ctx = m->llm.context, out_len = ctx - 1;
	struct rt_iter_member *mb = calloc(maxb, sizeof *mb);
	int rc = -1;

	if (!mb) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	if (prof_open(&p, c, 1, rows, 0, maxb, 1, out_len, err, errlen) != 0) {
		free(mb);
		return -1;
	}
	for (uint32_t i = 0; i < maxb; i++)
		mb[i] = (struct rt_iter_member){ .id = i, .input_len = 1, .output_len = out_len, .state = p.states[i] };
	size_t n = prof_llm_plan(c, ctx, pts);
	for (size_t i = 0; i < n; i++) {
		if (prof_llm_time(c, &p, mb, &pts[i], err, errlen) != 0)
			goto out;
		if (c->progress)
			fprintf(c->progress, "profile: iteration %zu of %zu timed (%u x %u tokens on %u)\n", i + 1, n,
			        pts[i].members, pts[i].tokens, pts[i].context);
	}
	double coef[PROF_LLM_TERMS];
	if (prof_llm_fit(pts, n, coef) != 0) {
		snprintf(err, errlen, "cannot fit the iteration model to %zu timed points", n);
		goto out;
	}
	fprintf(f, "# simbatch LLM iteration profile of model %s (%s)\n# device: %s\n"
	        "# %zu iterations, each the mean of %u timed calls after %d untimed ones (wall clock, each handed to a worker "
	        "thread and back as a live task), fitted by least "
	        "squares:\n#   seconds = fixed + token T + emit E + pair A (hwmodels/llm_iter.h)\n"
	        "# members x tokens on cache, emitting: measured us, fitted us\n",
	        m->name, p.info.detail, p.desc, n, c->reps, PROF_WARMUP);
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double fit = 0;
		for (size_t j = 0; j < PROF_LLM_TERMS; j++)
			fit += coef[j] * pts[i].x[j];
		double rel = fabs(fit - pts[i].seconds) / pts[i].seconds;
		worst = rel > worst ? rel : worst;
		fprintf(f, "#   %u x %u on %u, %s: %.3f, %.3f\n", pts[i].members, pts[i].tokens, pts[i].context,
		        pts[i].emit ? "emitting" : "none", pts[i].seconds * 1e6, fit * 1e6);
	}
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
	double mem_gb = pages > 0 && page > 0 ? (double)pages * (double)page * 1e-9 : 1.0;
	fprintf(f, "# worst point off its fit by %.1f%%\nkind = " LLM_ITER_KIND "\nmodel = %s\n"
	        "fixed_us = %.6g\ntoken_us = %.6g\nemit_us = %.6g\npair_ns = %.6g\n"
	        "mem_capacity_gb = %.6g   # %s\n",
	        worst * 100, m->name, coef[0] * 1e6, coef[1] * 1e6, coef[2] * 1e6, coef[3] * 1e9, mem_gb,
	        pages > 0 && page > 0 ? "this machine's physical memory (sysconf)" : "physical memory unknown: 1 GB");
	rc = prof_flush(f, err, errlen);
out:
	prof_close(&p);
	free(mb);
	return rc;
}
