/* hwmodels/gpu_predicted.c: a node-level model (LSTM, ResNet, ...) on a
 * measured GPU: the cuBLAS table calibrate measured there when one is
 * committed, else its GEMMs predicted from the GPU's operator profile
 * (gemm_predict.h). The LLM iteration side of a measured GPU is
 * gpu_measured.c. */
#include "gpu_measured.h"
#include "../util/errkind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrated.h"   /* calhw_tables_dir, and the calibrated model node-level work is priced by */

/* A node-level model priced by the GEMM predictor: a calibrated model
 * (calibrated.h) over a table the predictor fills, wrapped to say so. */
struct gpu_predicted {
	struct hw_model base;
	struct gpu_predicted_info info;
	struct op_profile *prof;          /* owned */
	struct hw_model *inner;           /* owned: the calibrated model */
};

static const struct hw_ops gpu_predicted_ops;

const struct gpu_predicted_info *gpu_predicted_info(const struct hw_model *hw)
{
	return hw->ops == &gpu_predicted_ops ? &((const struct gpu_predicted *)hw)->info : NULL;
}

static int gpu_predicted_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out,
                                   char *err, size_t errlen)
{
	const struct hw_model *inner = ((const struct gpu_predicted *)hw)->inner;
	return inner->ops->node_cost(inner, t, b, out, err, errlen);
}

static uint32_t gpu_predicted_max_batch(const struct hw_model *hw)
{
	return hw_max_batch(((const struct gpu_predicted *)hw)->inner);
}

static void gpu_predicted_close(struct hw_model *hw)
{
	struct gpu_predicted *g = (struct gpu_predicted *)hw;
	if (!g)
		return;
	hw_close(g->inner);
	opp_free(g->prof);
	free(g);
}

/* The batches a predicted shape is priced at: 1, 2, 3, 4, 6, 8, ... (powers of
 * two and the points halfway between), up to GPU_PREDICT_MAX_BATCH. */
static uint32_t gpu_next_batch(uint32_t b)
{
	if (b < 2)
		return b + 1;
	uint32_t pow = 1;
	while (pow * 2 <= b)
		pow *= 2;
	return b == pow ? pow + pow / 2 : 2 * pow;
}

/* The rows of one GEMM shape of the model (op gemm or attn), unless already there. */
static int gpu_predict_shape(struct gpu_predicted *g, struct caltab *t, const struct gemmp *pred,
                             const struct mdl_gemm *gm, char *err, size_t errlen)
{
	enum caltab_op op = gm->weight_shared ? CALTAB_ATTN : CALTAB_GEMM;
	size_t count;
	caltab_sort(t);
	if (caltab_find_shape(t, op, gm->m_per_sample, gm->k, gm->n, &count) >= 0)
		return 0;
	unsigned outside = 0;
	for (uint32_t b = 1; b <= GPU_PREDICT_MAX_BATCH; b = gpu_next_batch(b)) {
		unsigned out = 0;
		double m = (double)b * gm->m_per_sample;
		double s = gemmp_seconds(pred, m, (double)gm->k, (double)gm->n, &out);
		if (op == CALTAB_ATTN) {   /* b operands of its own, streamed */
			double stream = (double)b * gm->k * gm->n * 2 / g->prof->stream_bytes_s;
			s = s > stream ? s : stream;
		}
		outside |= out & ~(unsigned)GEMMP_OUT_M;
		if (b == 1)
			outside |= out & GEMMP_OUT_M;     /* past the measured M already at batch 1 */
		struct caltab_row r = { .op = op, .m_per_sample = gm->m_per_sample, .k = gm->k, .n = gm->n, .batch = b,
		                        .latency_s = s, .measured_s = s };
		if (caltab_add_row(t, &r, err, errlen) != 0)
			return -1;
	}
	g->info.nshapes++;
	if (outside) {
		size_t used = strlen(g->info.outside);
		if (g->info.noutside < 4)
			snprintf(g->info.outside + used, sizeof g->info.outside - used, "%s%s %llux%llux%llu (%s%s%s)",
			         used ? ", " : "", caltab_op_name(op), (unsigned long long)gm->m_per_sample,
			         (unsigned long long)gm->k, (unsigned long long)gm->n, outside & GEMMP_OUT_M ? "M" : "",
			         outside & GEMMP_OUT_K ? (outside & GEMMP_OUT_M ? ", K" : "K") : "",
			         outside & GEMMP_OUT_N ? (outside & (GEMMP_OUT_M | GEMMP_OUT_K) ? ", N" : "N") : "");
		else if (g->info.noutside == 4)
			snprintf(g->info.outside + used, sizeof g->info.outside - used, ", ...");
		g->info.noutside++;
	}
	return 0;
}

/* Element-wise rows: the residual adds measured at tp 1 (hidden elements a token, one operation each). */
static int gpu_predict_elementwise(const struct op_profile *p, struct caltab *t, char *err, size_t errlen)
{
	for (size_t i = 0; i < p->ncurves; i++) {
		const struct opp_curve *c = &p->curves[i];
		size_t count;
		caltab_sort(t);
		if (c->tp != 1 || caltab_find_shape(t, CALTAB_ELEMENTWISE, c->shape.hidden, 0, 0, &count) >= 0)
			continue;
		for (size_t r = 0; r < c->n; r++) {
			double s = c->ms[r * OPP_COUNT + OPP_ADD] * OPP_S_PER_MS;
			struct caltab_row row = { .op = CALTAB_ELEMENTWISE, .m_per_sample = c->shape.hidden,
			                          .batch = (uint32_t)c->tokens[r], .latency_s = s, .measured_s = s };
			if (caltab_add_row(t, &row, err, errlen) != 0)
				return -1;
		}
	}
	return 0;
}

static int gpu_open_predicted(const char *arg, const char *ops_path, const struct mdl_model *m, struct hw_model **out,
                              char *err, size_t errlen)
{
	struct gpu_predicted *g = calloc(1, sizeof *g);
	struct caltab *t = NULL;
	struct gemmp *pred = NULL;
	*out = NULL;
	if (!g) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	g->base.ops = &gpu_predicted_ops;
	g->base.model = m;
	snprintf(g->base.label, sizeof g->base.label, "%s", arg);
	if (opp_load(ops_path, &g->prof, err, errlen) != 0 || gemmp_create(g->prof, NULL, &pred, err, errlen) != 0)
		goto fail;
	g->info.profile = g->prof;
	if (caltab_create(&t) != 0) {
		err_memory(err, errlen, "out of memory");
		goto fail;
	}
	if (caltab_set_fieldf(t, "device", err, errlen, "gpu-%s (GEMMs predicted from %s)", g->prof->gpu, ops_path) != 0 ||
	    caltab_set_fieldf(t, "date", err, errlen, "%s", g->prof->source[0] ? g->prof->source : ops_path) != 0)
		goto fail;
	for (uint32_t i = 0; i < m->nnodes; i++)
		for (uint32_t k = 0; k < m->nodes[i].ngemms; k++)
			if (gpu_predict_shape(g, t, pred, &m->nodes[i].gemms[k], err, errlen) != 0)
				goto fail;
	if (gpu_predict_elementwise(g->prof, t, err, errlen) != 0)
		goto fail;
	caltab_make_monotone(t);
	if (caltab_validate(t, err, errlen) != 0 || calhw_create(t, m, arg, &g->inner, err, errlen) != 0)
		goto fail;
	caltab_destroy(t);
	gemmp_free(pred);
	*out = &g->base;
	return 0;
fail:
	caltab_destroy(t);
	gemmp_free(pred);
	gpu_predicted_close(&g->base);
	return -1;
}

static const struct hw_ops gpu_predicted_ops = {
	.name = "gpu (GEMMs predicted)",
	.help = "a node-level model on a measured GPU, its GEMMs predicted from the GPU's measured GEMMs",
	.close = gpu_predicted_close,
	.node_cost = gpu_predicted_node_cost,
	.max_batch = gpu_predicted_max_batch,
};

/* A node-level model on a measured GPU: the cuBLAS table calibrate measured
 * there when one is committed (calib/tables/gpu-NAME.csv), else predicted. */
int gpu_open_node_level(const char *arg, const char *ops_path, const struct mdl_model *m, uint32_t tp,
                        int named, struct hw_model **out, char *err, size_t errlen)
{
	struct stat st;
	char cublas[1024];
	if (tp != 1) {
		snprintf(err, errlen, "--tp=%u: tensor parallelism splits an LLM; model %s is node-level", tp, m->name);
		return -1;
	}
	if (named && snprintf(cublas, sizeof cublas, "%s/%s.csv", calhw_tables_dir(), arg) < (int)sizeof cublas &&
	    stat(cublas, &st) == 0)
		return calhw_gpu_ops.open(arg, m, out, err, errlen);
	if (named && stat(ops_path, &st) != 0) {
		snprintf(err, errlen, "no measured table for %s: %s does not exist (measure it: simbatch calibrate "
		         "--device=gpu), nor does the operator profile %s (scripts/vidur-import)", arg, cublas, ops_path);
		return -1;
	}
	return gpu_open_predicted(arg, ops_path, m, out, err, errlen);
}
