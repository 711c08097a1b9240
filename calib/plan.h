/* calib/plan.h: what a calibration measures: the distinct GEMM shapes of
 * the chosen models (weight GEMMs as op gemm, activation x activation
 * products as op attn), each over a list of batch sizes, plus the
 * element-wise kernel over the same batches; and the budget that keeps the
 * run to minutes: a point whose one call would exceed max_gflop or whose
 * operands would exceed max_bytes is not measured, and a shape's curve ends
 * at its largest batch within budget (the cost only grows with batch).
 *
 * Contract: calplan_* allocate nothing the caller must free except through
 * calplan_destroy; shapes keep the order in which models name them.
 */
#ifndef SB_CALIB_PLAN_H
#define SB_CALIB_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include "../hwmodels/caltab.h"
#include "../models/model.h"

/* Powers of two from 1 to 2048 and the points 1.5x between them. */
#define CALPLAN_DEFAULT_BATCHES "1,2,3,4,6,8,12,16,24,32,48,64,96,128,192,256,384,512,768,1024,1536,2048"
#define CALPLAN_DEFAULT_MODELS "lstm,seq2seq,gnmt,transformer,resnet50"

struct calplan_shape {
	enum caltab_op op;       /* gemm, attn or elementwise */
	uint64_t m, k, n;        /* m_per_sample x k x n; elementwise: m = ops per sample, k = n = 0 */
	char user[MDL_NAME_MAX * 2 + 2];  /* "model/node" that first needs it */
	uint32_t max_batch;      /* largest batch to measure (0: not even batch 1 fits the budget) */
	uint32_t models;         /* bit i: the i-th model added needs it (elementwise: none) */
};

struct calplan {
	size_t nshapes;
	struct calplan_shape *shapes;  /* owned */
	size_t nbatches;
	uint32_t *batches;             /* owned; strictly increasing */
	double max_gflop;              /* budget per call */
	double max_bytes;              /* budget for one point's operands */
	uint32_t nmodels;              /* models added */
};

#define CALPLAN_MAX_MODELS 32

int calplan_create(struct calplan **out, char *err, size_t errlen);
void calplan_destroy(struct calplan *p);

/* Parses a comma list of batch sizes (each 1..65536, strictly increasing)
 * into the plan. Returns 0, or -1 with err naming the bad item. */
int calplan_set_batches(struct calplan *p, const char *list, char *err, size_t errlen);

/* Adds the GEMM shapes of m not yet in the plan and marks the shapes m
 * needs. Returns 0, or -1 (memory, more than CALPLAN_MAX_MODELS models). */
int calplan_add_model(struct calplan *p, const struct mdl_model *m, char *err, size_t errlen);

/* A calibrator's --model values: each a comma list of built-in names or
 * .model paths, cut in place in owned copies. */
#define CALPLAN_MAX_MODEL_ARGS 32
struct calplan_models {
	const char *names[CALPLAN_MAX_MODEL_ARGS];  /* into lists */
	size_t n;
	char *lists[CALPLAN_MAX_MODEL_ARGS];        /* owned */
	size_t nlists;
};

/* Adds one --model value. Returns 0, or -1 with err (too many, or none named). */
int calplan_models_add(struct calplan_models *ms, const char *value, char *err, size_t errlen);
void calplan_models_free(struct calplan_models *ms);

/* The plan both calibrators start from: the batch list cut at max_batch, the
 * per-call budgets, and the GEMM shapes of the named models (built-in names
 * or .model paths). Returns 0 and *out (caller destroys), or -1 with err. */
int calplan_build(struct calplan **out, const char *batches, uint32_t max_batch, double max_gflop,
                  double max_mib, const char *const *models, size_t nmodels, char *err, size_t errlen);

/* Adds the element-wise kernel shape (ops per sample). */
int calplan_add_elementwise(struct calplan *p, uint64_t ops_per_sample, const char *what, char *err, size_t errlen);

/* Floating-point operations and operand bytes (fp32) of one call. */
double calplan_flops(const struct calplan_shape *s, uint32_t batch);
double calplan_bytes(const struct calplan_shape *s, uint32_t batch);

/* Sets every shape's max_batch: the largest batch within budget, and no
 * larger than any model that needs the shape can use (a model's largest
 * usable batch is the smallest within-budget batch over its shapes, since
 * the calibrated model refuses batches beyond any of its curves). Returns
 * the number of points to measure and their total GFLOP in *gflop. */
size_t calplan_apply_budget(struct calplan *p, double *gflop);

#endif
