/* runtime/kernels.c: what the kernel families share: pseudo-random weights
 * and tables, buffers, and the unrolled position helper (their list, in the
 * order they are tried, is kern_registry.c). */
#include "kernels.h"
#include "../util/errkind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* splitmix64 (Steele, Lea, Flood 2014): a counter-based generator, so value
 * i of a stream needs no state and any order of filling gives the same. */
static uint64_t kern_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

uint64_t rt_rand_u64(uint64_t seed, uint64_t tag, uint64_t i)
{
	uint64_t stream = kern_mix(kern_mix(seed + 0x9e3779b97f4a7c15ULL) ^ (tag * 0xd1b54a32d192ed03ULL));
	return kern_mix(stream + (i + 1) * 0x9e3779b97f4a7c15ULL);
}

void rt_rand_fill(float *v, size_t n, float scale, uint64_t seed, uint64_t tag)
{
	uint64_t stream = kern_mix(kern_mix(seed + 0x9e3779b97f4a7c15ULL) ^ (tag * 0xd1b54a32d192ed03ULL));
	for (size_t i = 0; i < n; i++) {
		uint64_t r = kern_mix(stream + (i + 1) * 0x9e3779b97f4a7c15ULL);
		/* 24 random bits: uniform on [0, 1) exactly representable */
		float u = (float)(r >> 40) * (1.0f / 16777216.0f);
		v[i] = (2.0f * u - 1.0f) * scale;
	}
}

uint32_t rt_step_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len)
{
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		uint64_t reps = seg->kind == MDL_ENCODER ? input_len : seg->kind == MDL_DECODER ? output_len : 1;
		uint64_t span = (uint64_t)seg->nnodes * reps;
		if (pos < span)
			return (uint32_t)(pos / seg->nnodes);
		pos -= span;
	}
	return 0;
}

uint32_t rt_pass_rows(const struct mdl_model *m, uint32_t max_members, uint32_t longest_input)
{
	for (uint32_t s = 0; s < m->nsegments; s++)
		if (m->segments[s].kind == MDL_PASS) {
			uint64_t rows = (uint64_t)max_members * longest_input;
			return rows < UINT32_MAX ? (uint32_t)rows : UINT32_MAX;
		}
	return 0;
}

int rt_kern_weight(const struct rt_backend_ops *be, struct rt_dev *dev, uint32_t k, uint32_t n, float scale,
                   uint64_t seed, uint64_t tag, struct rt_weight **out, char *err, size_t errlen)
{
	*out = NULL;
	float *host = malloc((size_t)k * n * sizeof(float));
	if (!host) {
		err_memory(err, errlen, "out of memory for a %u x %u weight matrix", k, n);
		return -1;
	}
	rt_rand_fill(host, (size_t)k * n, scale, seed, tag);
	int rc = be->weight_create(dev, k, n, host, out, err, errlen);
	free(host);
	return rc;
}

float *rt_kern_table(const struct rt_backend_ops *be, struct rt_dev *dev, size_t n, float offset, float scale, uint64_t seed,
                     uint64_t tag, char *err, size_t errlen)
{
	float *host = malloc(n * sizeof(float));
	float *d = be->alloc(dev, n * sizeof(float));
	if (!host || !d) {
		err_memory(err, errlen, "out of memory for a table of %zu floats", n);
		goto fail;
	}
	rt_rand_fill(host, n, scale, seed, tag);
	for (size_t i = 0; i < n; i++)
		host[i] += offset;
	if (be->upload(dev, d, host, n * sizeof(float), err, errlen) != 0)
		goto fail;
	free(host);
	return d;
fail:
	free(host);
	if (d)
		be->free(dev, d);
	return NULL;
}

int rt_kern_token_state(const struct rt_backend_ops *be, struct rt_dev *dev, void *state, size_t bytes,
                        size_t tok_off, uint32_t ntok, uint32_t vocab, uint64_t seed, uint64_t tag, char *err,
                        size_t errlen)
{
	unsigned char *host = calloc(1, bytes);
	if (!host) {
		err_memory(err, errlen, "out of memory for a request's state");
		return -1;
	}
	int32_t *tok = (int32_t *)(host + tok_off);
	for (uint32_t t = 0; t < ntok; t++)
		tok[t] = (int32_t)(rt_rand_u64(seed, tag, t) % vocab);
	int rc = be->upload(dev, state, host, bytes, err, errlen);
	free(host);
	return rc;
}

void rt_kern_free_buffers(const struct rt_backend_ops *be, struct rt_dev *dev, float *const *bufs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (bufs[i])
			be->free(dev, bufs[i]);
}

struct rt_model *rt_kern_model_new(size_t size, const struct mdl_model *m, const struct rt_backend_ops *be,
                                   struct rt_dev *dev, uint64_t seed,
                                   int (*shape)(const struct mdl_model *m, struct rt_model *km, char *why, size_t len),
                                   char *err, size_t errlen)
{
	char why[200];
	struct rt_model *km = calloc(1, size);
	if (!km) {
		err_memory(err, errlen, "out of memory");
		return NULL;
	}
	if (!shape(m, km, why, sizeof why)) {
		snprintf(err, errlen, "model %s: %s", m->name, why);
		free(km);
		return NULL;
	}
	struct rt_model_head *h = (struct rt_model_head *)km;   /* every family's model begins with its head */
	h->be = be;
	h->dev = dev;
	h->m = m;
	h->seed = seed;
	return km;
}
