/* hwmodels/calibrated.h: hardware models built from a measured calibration
 * table (caltab.h): `--hw=cpu` (the table measured on this
 * machine and committed as calib/tables/cpu.csv), `--hw=gpu-NAME` (a
 * committed cuBLAS table calib/tables/gpu-NAME.csv) and `--hw=FILE` (any
 * calibration table).
 *
 * A node's latency at batch b is
 *
 *   sum over its GEMMs g of count_g * T_g(b)  +  [E > 0] * (launch_s + s_per_op * E * b)
 *
 * where T_g is the measured latency curve of g's shape, interpolated over
 * batch, and E the node's element-wise ops per sample. The element-wise line
 * (launch_s, s_per_op) is fitted by weighted least squares to the table's
 * elementwise rows; its intercept is the per-kernel launch cost, charged
 * once per node that has element-wise work. GEMM points already contain their
 * own launch, so nothing is added to them and a node made only of GEMMs
 * reproduces the measured points exactly.
 *
 * Contract:
 *  - Every GEMM shape (op, m_per_sample, k, n) a node of the model needs must
 *    be in the table, and elementwise rows must exist when a node has
 *    element-wise work; otherwise opening fails, naming the file, the node
 *    and the shape. Nothing is invented or borrowed from another shape.
 *  - Batches outside [smallest, largest] measured batch of a needed shape are
 *    errors (no extrapolation of measurements); max_batch reports the
 *    smallest "largest measured batch" over the shapes the model needs.
 *  - `gpu-NAME` with no calib/tables/gpu-NAME.csv is an error saying that no
 *    table was measured for that GPU.
 */
#ifndef SB_CALIBRATED_H
#define SB_CALIBRATED_H

#include <stddef.h>
#include <stdint.h>
#include "hwmodel.h"
#include "caltab.h"

extern const struct hw_ops calhw_cpu_ops;   /* --hw=cpu */
extern const struct hw_ops calhw_gpu_ops;   /* --hw=gpu-NAME (listed as "gpu-NAME") */
extern const struct hw_ops calhw_file_ops;  /* --hw=FILE holding a calibration table */

/* Whether arg names a calibrated GPU model: "gpu-NAME", NAME of a-z 0-9 _ -
 * (a value with a dot or a slash is a file path). */
int calhw_is_gpu_name(const char *arg);

/* The directory holding committed tables: $SIMBATCH_CALIB_TABLES if set,
 * else the compiled-in source calib/tables. */
const char *calhw_tables_dir(void);
/* --hw=cpu or --hw=gpu-NAME's committed table: 0 with its path when it is there, else -1 with why. */
int calhw_table_there(const char *name, char *path, size_t pathlen, char *err, size_t errlen);

/* Builds a model from a table already in memory (tests, bench): the table
 * must have passed caltab_validate; it is not kept (curves are copied).
 * m may be NULL (then only calhw_gemm_seconds answers). label names the
 * model in results and messages. Returns 0 and *out, or -1 with err. */
int calhw_create(const struct caltab *t, const struct mdl_model *m, const char *label,
                 struct hw_model **out, char *err, size_t errlen);

/* The latency of one measured shape at batch b (interpolated between
 * measured batches, exact at them). Returns 0, or -1 with err when the shape
 * is not in the table or b is outside its measured batches. */
int calhw_gemm_seconds(const struct hw_model *hw, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n,
                       uint32_t batch, double *seconds, char *err, size_t errlen);

/* The element-wise line the model uses: seconds = launch_s + s_per_op * ops.
 * rel_rms is the root-mean-square relative residual over the fitted rows. */
struct calhw_ew_fit {
	double launch_s;     /* intercept: per-kernel launch cost (>= 0) */
	double s_per_op;     /* slope: seconds per element-wise op (> 0) */
	double rel_rms;      /* fit quality */
	size_t npoints;      /* rows fitted */
	int through_origin;  /* 1: the free intercept came out negative, refitted through 0 */
};

/* Fits the element-wise line to the elementwise rows of t by least squares
 * weighted by 1/latency^2 (relative errors count equally at every size). A
 * negative intercept is not a cost, so then the line is refitted through
 * the origin. Needs at least two distinct sizes. Returns 0, or -1 with err. */
int calhw_fit_elementwise(const struct caltab *t, struct calhw_ew_fit *fit, char *err, size_t errlen);

/* The fit a model uses (valid only when the table had elementwise rows;
 * npoints is 0 otherwise). */
const struct calhw_ew_fit *calhw_elementwise(const struct hw_model *hw);

#endif
