/* runtime/profile.c: the node-by-node timing of profile.h. */
#include "profile.h"

#include <stdlib.h>
#include <time.h>

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

int rt_profile(const struct rt_profile_config *c, FILE *f, char *err, size_t errlen)
{
	const struct mdl_model *m = c->model;
	const struct rt_model_ops *kops = NULL;
	const struct rt_backend_ops *be = NULL;
	struct rt_dev *dev = NULL;
	struct rt_model *km = NULL;
	struct rt_stream *s = NULL;
	void *work = NULL;
	struct rt_model_info info;
	uint32_t maxb = c->batches[c->nbatches - 1];
	struct rt_member *mb = calloc(maxb, sizeof *mb);
	double *t = calloc(c->reps ? c->reps : 1, sizeof *t);
	int rc = -1;

	if (!mb || !t) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (!(kops = rt_kernels_find(m, err, errlen)) || !(be = rt_backend_find(c->device, err, errlen)))
		goto out;
	struct rt_backend_cfg bc = { .gemm = c->gemm, .workers = 1 };
	if (be->open(&bc, &dev, err, errlen) != 0 || kops->create(m, be, dev, c->seed, &km, err, errlen) != 0)
		goto out;
	kops->info(km, &info);
	if (be->stream_create(dev, 0, maxb, info.max_k, &s, err, errlen) != 0 ||
	    kops->work_create(km, maxb, &work, err, errlen) != 0)
		goto out;
	char desc[256];
	be->describe(dev, desc, sizeof desc);
	fprintf(f, "# simbatch live kernel profile of model %s (%s)\n# device: %s\n"
	        "# requests of input_len %u, output_len %u at the middle step; mean of %u timed calls after %d "
	        "untimed ones (wall clock)\n%s\n",
	        m->name, info.detail, desc, c->input_len, c->output_len, c->reps, PROF_WARMUP, "node,batch,latency_s");
	size_t bytes = kops->state_bytes(km, c->input_len, c->output_len);
	for (uint32_t i = 0; i < maxb; i++) {
		mb[i] = (struct rt_member){ .id = i, .input_len = c->input_len, .output_len = c->output_len, .active = 1 };
		if (!(mb[i].state = be->alloc(dev, bytes))) {
			snprintf(err, errlen, "out of device memory for %u request states", maxb);
			goto out;
		}
		if (kops->state_init(km, mb[i].state, i, c->input_len, c->output_len, err, errlen) != 0)
			goto out;
	}
	for (uint32_t node = 0; node < m->nnodes; node++) {
		uint64_t pos = prof_position(m, node, c->input_len, c->output_len);
		double floor_s = 0;
		for (uint32_t i = 0; i < maxb; i++)
			mb[i].pos = pos;
		for (size_t bi = 0; bi < c->nbatches; bi++) {
			uint32_t b = c->batches[bi];
			for (int r = 0; r < PROF_WARMUP; r++) {
				kops->run_node(km, work, s, node, b, mb);
				if (be->finish(s, err, errlen) != 0)
					goto out;
			}
			for (uint32_t r = 0; r < c->reps; r++) {
				double t0 = prof_now_s();
				kops->run_node(km, work, s, node, b, mb);
				if (be->finish(s, err, errlen) != 0)
					goto out;
				t[r] = prof_now_s() - t0;
			}
			double v = 0;
			for (uint32_t r = 0; r < c->reps; r++)
				v += t[r] / c->reps;
			if (v < floor_s)
				v = floor_s;
			floor_s = v;
			fprintf(f, "%s,%u,%.9g\n", m->nodes[node].name, b, v);
		}
	}
	if (fflush(f) != 0 || ferror(f)) {
		snprintf(err, errlen, "error writing the profile");
		goto out;
	}
	rc = 0;
out:
	if (mb)
		for (uint32_t i = 0; i < maxb; i++)
			if (mb[i].state)
				be->free(dev, mb[i].state);
	if (work)
		kops->work_destroy(km, work);
	if (s)
		be->stream_destroy(s);
	if (km)
		kops->destroy(km);
	if (dev)
		be->close(dev);
	free(mb);
	free(t);
	return rc;
}
