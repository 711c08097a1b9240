/* runtime/kern_mlp.c: the mlp kernel family of kernels.h, the static case:
 * a chain of dense layers (static nodes, one gemm=1,K,N term each, every K
 * the previous N) with ReLU between them and none after the last. A node is
 * one layer: gather the members' activations, multiply, bias (+ ReLU),
 * scatter. A request's input is a pseudo-random vector in +-1 from (seed,
 * id); its output is the last layer's vector.
 *
 * State of a request (floats): input[K0], act[max N] (the activation a
 * layer leaves for the next). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "../util/errkind.h"

#define MLP_MAX_LAYERS 64
#define MLP_TAG_INPUT (1ull << 40)

struct rt_model {
	struct rt_model_head h;             /* first: be, dev, m, seed, weight_bytes */
	uint32_t nlayers, first_node;
	uint32_t k[MLP_MAX_LAYERS], n[MLP_MAX_LAYERS];
	uint32_t max_n, max_k;
	struct rt_weight *w[MLP_MAX_LAYERS];
	float *b[MLP_MAX_LAYERS];
};

struct mlp_work {
	float *x, *y;                       /* device batch buffers */
	const float **src;
	float **dst;
};

static int mlp_shape(const struct mdl_model *m, struct rt_model *km, char *why, size_t len)
{
	if (m->nsegments != 1 || m->segments[0].kind != MDL_STATIC) {
		snprintf(why, len, "needs static nodes only");
		return 0;
	}
	if (m->nnodes > MLP_MAX_LAYERS) {
		snprintf(why, len, "at most %d layers", MLP_MAX_LAYERS);
		return 0;
	}
	km->nlayers = m->nnodes;
	km->first_node = m->segments[0].first_node;
	for (uint32_t l = 0; l < m->nnodes; l++) {
		const struct mdl_node *nd = &m->nodes[km->first_node + l];
		const struct mdl_gemm *g = nd->gemms;
		if (nd->ngemms != 1 || g->count != 1 || g->m_per_sample != 1 || g->weight_shared || g->is_conv ||
		    mdl_gemm_steps(g) != 1) {
			snprintf(why, len, "node %s is not a dense layer gemm=1,K,N", nd->name);
			return 0;
		}
		if (l > 0 && g->k != km->n[l - 1]) {
			snprintf(why, len, "node %s: K = %llu is not the previous layer's N = %u", nd->name,
			         (unsigned long long)g->k, km->n[l - 1]);
			return 0;
		}
		km->k[l] = (uint32_t)g->k;
		km->n[l] = (uint32_t)g->n;
		if (km->n[l] > km->max_n)
			km->max_n = km->n[l];
		if (km->k[l] > km->max_k)
			km->max_k = km->k[l];
	}
	return 1;
}

static int mlp_match(const struct mdl_model *m, char *why, size_t len)
{
	struct rt_model km = { 0 };
	return mlp_shape(m, &km, why, len);
}

static void mlp_destroy(struct rt_model *km)
{
	if (!km)
		return;
	for (uint32_t l = 0; l < km->nlayers; l++) {
		km->h.be->weight_destroy(km->h.dev, km->w[l]);
		if (km->b[l])
			km->h.be->free(km->h.dev, km->b[l]);
	}
	free(km);
}

/* Weights uniform in +-sqrt(3/K): unit-variance inputs give unit-variance
 * products, so activations neither blow up nor vanish through the chain. */
static int mlp_create(const struct mdl_model *m, const struct rt_backend_ops *be, struct rt_dev *dev,
                      uint64_t seed, struct rt_model **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rt_model *km = rt_kern_model_new(sizeof *km, m, be, dev, seed, mlp_shape, err, errlen);
	if (!km)
		return -1;
	for (uint32_t l = 0; l < km->nlayers; l++) {
		uint64_t tag = (uint64_t)(km->first_node + l) << 8;
		if (rt_kern_weight(be, dev, km->k[l], km->n[l], sqrtf(3.0f / km->k[l]), seed, tag, &km->w[l], err,
		                   errlen) != 0 ||
		    !(km->b[l] = rt_kern_table(be, dev, km->n[l], 0.0f, 0.1f, seed, tag + 1, err, errlen))) {
			mlp_destroy(km);
			return -1;
		}
		km->h.weight_bytes += ((uint64_t)km->k[l] + 1) * km->n[l] * sizeof(float);
	}
	*out = km;
	return 0;
}

static void mlp_info(const struct rt_model *km, struct rt_model_info *o)
{
	*o = (struct rt_model_info){ .family = "mlp", .output_floats = km->n[km->nlayers - 1], .max_k = km->max_k,
	                             .weight_bytes = km->h.weight_bytes };
	snprintf(o->detail, sizeof o->detail, "%u dense layers, %u inputs, %u outputs", km->nlayers, km->k[0],
	         km->n[km->nlayers - 1]);
}

static size_t mlp_state_bytes(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	(void)input_len;
	(void)output_len;
	return ((size_t)km->k[0] + km->max_n) * sizeof(float);
}

static int mlp_state_init(const struct rt_model *km, void *state, uint64_t id, uint32_t input_len,
                          uint32_t output_len, char *err, size_t errlen)
{
	size_t bytes = mlp_state_bytes(km, input_len, output_len);
	float *host = calloc(1, bytes);
	if (!host) {
		err_memory(err, errlen, "out of memory for a request's state");
		return -1;
	}
	rt_rand_fill(host, km->k[0], 1.0f, km->h.seed, MLP_TAG_INPUT + id);
	int rc = km->h.be->upload(km->h.dev, state, host, bytes, err, errlen);
	free(host);
	return rc;
}

static void mlp_work_destroy(const struct rt_model *km, void *work)
{
	struct mlp_work *w = work;
	if (!w)
		return;
	if (w->x)
		km->h.be->free(km->h.dev, w->x);
	if (w->y)
		km->h.be->free(km->h.dev, w->y);
	free(w->src);
	free(w->dst);
	free(w);
}

static int mlp_work_create(const struct rt_model *km, uint32_t rows, uint32_t pass_rows, void **work, char *err,
                           size_t errlen)
{
	(void)pass_rows;   /* no pass nodes */
	struct mlp_work *w = calloc(1, sizeof *w);
	*work = NULL;
	if (w) {
		w->x = km->h.be->alloc(km->h.dev, (size_t)rows * km->max_k * sizeof(float));
		w->y = km->h.be->alloc(km->h.dev, (size_t)rows * km->max_n * sizeof(float));
		w->src = calloc(rows, sizeof *w->src);
		w->dst = calloc(rows, sizeof *w->dst);
	}
	if (!w || !w->x || !w->y || !w->src || !w->dst) {
		mlp_work_destroy(km, w);
		err_memory(err, errlen, "out of memory for a worker's batch buffers (%u rows)", rows);
		return -1;
	}
	*work = w;
	return 0;
}

static void mlp_run_node(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t node, uint32_t n,
                         const struct rt_member *mb)
{
	struct mlp_work *w = work;
	uint32_t l = node - km->first_node;
	for (uint32_t i = 0; i < n; i++) {
		float *st = mb[i].state;
		w->src[i] = l == 0 ? st : st + km->k[0];
		w->dst[i] = mb[i].active ? st + km->k[0] : NULL;
	}
	km->h.be->gather(s, n, km->k[l], w->x, km->k[l], w->src);
	km->h.be->gemm(s, km->w[l], n, w->x, km->k[l], w->y, km->n[l]);
	km->h.be->bias_act(s, n, km->n[l], w->y, km->n[l], km->b[l], l + 1 < km->nlayers ? RT_ACT_RELU : RT_ACT_NONE);
	km->h.be->scatter(s, n, km->n[l], w->y, km->n[l], w->dst);
}

static int mlp_outputs(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
                       struct rt_outputs *out, char *err, size_t errlen)
{
	(void)input_len;
	(void)output_len;
	out->ntokens = 0;
	out->nvalues = km->n[km->nlayers - 1];
	return km->h.be->download(km->h.dev, out->values, (const float *)state + km->k[0], out->nvalues * sizeof(float),
	                        err, errlen);
}

const struct rt_model_ops rt_kern_mlp = {
	.family = "mlp",
	.match = mlp_match,
	.create = mlp_create,
	.destroy = mlp_destroy,
	.info = mlp_info,
	.state_bytes = mlp_state_bytes,
	.state_init = mlp_state_init,
	.work_create = mlp_work_create,
	.work_destroy = mlp_work_destroy,
	.run_node = mlp_run_node,
	.outputs = mlp_outputs,
};
