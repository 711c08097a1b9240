/* calib/plan.c: the measurement plan (see plan.h). */
#include "plan.h"
#include "../util/errkind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../models/model.h"

#define CALPLAN_BATCH_MAX 65536

int calplan_create(struct calplan **out, char *err, size_t errlen)
{
	struct calplan *p = calloc(1, sizeof *p);

	*out = NULL;
	if (!p) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	p->max_gflop = 160;
	p->max_bytes = 2048.0 * 1024 * 1024;
	if (calplan_set_batches(p, CALPLAN_DEFAULT_BATCHES, err, errlen) != 0) {
		calplan_destroy(p);
		return -1;
	}
	*out = p;
	return 0;
}

void calplan_destroy(struct calplan *p)
{
	if (!p)
		return;
	free(p->shapes);
	free(p->batches);
	free(p);
}

int calplan_set_batches(struct calplan *p, const char *list, char *err, size_t errlen)
{
	size_t n = 1, k = 0;
	uint32_t *b;
	const char *s = list;

	for (const char *c = list; *c; c++)
		n += *c == ',';
	if (!(b = malloc(n * sizeof *b))) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	while (k < n) {
		char *end;
		unsigned long v = 0;

		if (*s >= '0' && *s <= '9')
			v = strtoul(s, &end, 10);
		else
			end = (char *)s;
		if (end == s || (*end != ',' && *end != '\0') || v < 1 || v > CALPLAN_BATCH_MAX ||
		    (k > 0 && v <= b[k - 1])) {
			int len = (int)strcspn(s, ",");

			snprintf(err, errlen, "--batches: item %zu '%.*s' is not a batch size in 1..%d above the one before",
			         k + 1, len, s, CALPLAN_BATCH_MAX);
			free(b);
			return -1;
		}
		b[k++] = (uint32_t)v;
		s = *end ? end + 1 : end;
	}
	free(p->batches);
	p->batches = b;
	p->nbatches = n;
	return 0;
}

static int calplan_add(struct calplan *p, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n, const char *user,
                       uint32_t model_bit, char *err, size_t errlen)
{
	struct calplan_shape *grown;

	for (size_t i = 0; i < p->nshapes; i++) {
		struct calplan_shape *s = &p->shapes[i];

		if (s->op == op && s->m == m && s->k == k && s->n == n) {
			s->models |= model_bit;
			return 0;
		}
	}
	if (!(grown = realloc(p->shapes, (p->nshapes + 1) * sizeof *grown))) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	p->shapes = grown;
	memset(&grown[p->nshapes], 0, sizeof *grown);
	grown[p->nshapes].op = op;
	grown[p->nshapes].m = m;
	grown[p->nshapes].k = k;
	grown[p->nshapes].n = n;
	snprintf(grown[p->nshapes].user, sizeof grown[p->nshapes].user, "%s", user);
	grown[p->nshapes].models = model_bit;
	p->nshapes++;
	return 0;
}

int calplan_add_model(struct calplan *p, const struct mdl_model *m, char *err, size_t errlen)
{
	uint32_t bit;

	if (p->nmodels == CALPLAN_MAX_MODELS) {
		snprintf(err, errlen, "at most %d models in one calibration", CALPLAN_MAX_MODELS);
		return -1;
	}
	bit = UINT32_C(1) << p->nmodels++;
	for (uint32_t t = 0; t < m->nnodes; t++) {
		const struct mdl_node *node = &m->nodes[t];
		char user[sizeof p->shapes[0].user];

		snprintf(user, sizeof user, "%s/%s", m->name, node->name);
		for (uint32_t g = 0; g < node->ngemms; g++) {
			const struct mdl_gemm *gm = &node->gemms[g];

			if (calplan_add(p, gm->weight_shared ? CALTAB_ATTN : CALTAB_GEMM, gm->m_per_sample, gm->k, gm->n,
			                user, bit, err, errlen) != 0)
				return -1;
		}
	}
	return 0;
}

int calplan_add_elementwise(struct calplan *p, uint64_t ops_per_sample, const char *what, char *err, size_t errlen)
{
	return calplan_add(p, CALTAB_ELEMENTWISE, ops_per_sample, 0, 0, what, 0, err, errlen);
}

double calplan_flops(const struct calplan_shape *s, uint32_t batch)
{
	if (s->op == CALTAB_ELEMENTWISE)
		return (double)s->m * batch;
	return 2.0 * (double)batch * (double)s->m * (double)s->k * (double)s->n;
}

double calplan_bytes(const struct calplan_shape *s, uint32_t batch)
{
	double b = batch, m = (double)s->m, k = (double)s->k, n = (double)s->n;

	switch (s->op) {
	case CALTAB_GEMM:    /* A (b*m x k), shared B (k x n), C (b*m x n) */
		return 4.0 * (b * m * k + k * n + b * m * n);
	case CALTAB_ATTN:    /* every sample has its own A, B and C */
		return 4.0 * b * (m * k + k * n + m * n);
	default:             /* the LSTM cell kernel, 13 ops per unit: reads 4 gates and c, writes c and h */
		return 4.0 * b * m * 7.0 / 13.0;
	}
}

size_t calplan_apply_budget(struct calplan *p, double *gflop)
{
	uint32_t model_cap[CALPLAN_MAX_MODELS];
	size_t points = 0;

	*gflop = 0;
	for (uint32_t i = 0; i < CALPLAN_MAX_MODELS; i++)
		model_cap[i] = UINT32_MAX;
	for (size_t i = 0; i < p->nshapes; i++) {
		struct calplan_shape *s = &p->shapes[i];

		s->max_batch = 0;
		for (size_t j = 0; j < p->nbatches; j++) {
			uint32_t b = p->batches[j];

			if (calplan_flops(s, b) > p->max_gflop * 1e9 || calplan_bytes(s, b) > p->max_bytes)
				break;
			s->max_batch = b;
		}
		for (uint32_t i2 = 0; i2 < p->nmodels; i2++)
			if ((s->models >> i2 & 1) && s->max_batch < model_cap[i2])
				model_cap[i2] = s->max_batch;
	}
	for (size_t i = 0; i < p->nshapes; i++) {
		struct calplan_shape *s = &p->shapes[i];
		uint32_t cap = 0;

		if (!s->models)
			cap = s->max_batch;
		for (uint32_t i2 = 0; i2 < p->nmodels; i2++)
			if ((s->models >> i2 & 1) && model_cap[i2] > cap)
				cap = model_cap[i2];
		if (cap < s->max_batch)
			s->max_batch = cap;
		for (size_t j = 0; j < p->nbatches && p->batches[j] <= s->max_batch; j++) {
			points++;
			if (s->op != CALTAB_ELEMENTWISE)
				*gflop += calplan_flops(s, p->batches[j]) / 1e9;
		}
	}
	return points;
}

int calplan_build(struct calplan **out, const char *batches, uint32_t max_batch, double max_gflop,
                  double max_mib, const char *const *models, size_t nmodels, char *err, size_t errlen)
{
	struct calplan *plan = NULL;
	struct mdl_model *m = NULL;
	*out = NULL;
	if (calplan_create(&plan, err, errlen) != 0 || calplan_set_batches(plan, batches, err, errlen) != 0)
		goto fail;
	while (plan->nbatches > 0 && plan->batches[plan->nbatches - 1] > max_batch)
		plan->nbatches--;
	if (plan->nbatches == 0) {
		snprintf(err, errlen, "--max-batch=%u leaves no batch size to measure", max_batch);
		goto fail;
	}
	plan->max_gflop = max_gflop;
	plan->max_bytes = max_mib * 1024 * 1024;
	for (size_t i = 0; i < nmodels; i++) {
		if (mdl_load(models[i], &m, err, errlen) != 0 || calplan_add_model(plan, m, err, errlen) != 0)
			goto fail;
		mdl_free(m);
		m = NULL;
	}
	*out = plan;
	return 0;
fail:
	mdl_free(m);
	calplan_destroy(plan);
	return -1;
}

int calplan_models_add(struct calplan_models *ms, const char *value, char *err, size_t errlen)
{
	char *copy, *save = NULL;

	if (ms->nlists == CALPLAN_MAX_MODEL_ARGS || !(copy = strdup(value))) {
		snprintf(err, errlen, "--model: too many values");
		return -1;
	}
	ms->lists[ms->nlists++] = copy;
	for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (ms->n == CALPLAN_MAX_MODEL_ARGS) {
			snprintf(err, errlen, "--model: at most %d models", CALPLAN_MAX_MODEL_ARGS);
			return -1;
		}
		ms->names[ms->n++] = tok;
	}
	if (ms->n == 0) {
		snprintf(err, errlen, "--model=%s: no model named", value);
		return -1;
	}
	return 0;
}

void calplan_models_free(struct calplan_models *ms)
{
	for (size_t i = 0; i < ms->nlists; i++)
		free(ms->lists[i]);
	ms->nlists = ms->n = 0;
}
