/* hwmodels/calibrated.c: node latencies from a measured calibration table
 * (see calibrated.h for the formula and the contract).
 *
 * Interpolation over batch: Steffen's monotone cubic (gsl_interp_steffen) on
 * (log batch, log latency). A GEMM's latency is flat while it is bound by
 * reading its weights and grows like the batch once it is bound by
 * arithmetic, so on log-log axes the curve is nearly two straight lines and
 * the cubic between two measured batches follows a local power law rather
 * than bending a straight line in linear space. Steffen's method never
 * overshoots, so a non-decreasing table (which caltab.c enforces)
 * gives a non-decreasing model, and exp/log keep that order. Two points are
 * joined by a straight line in log-log space (a power law); measured batches
 * are answered with the stored number itself, bit for bit.
 */
#include "calibrated.h"
#include "../util/errkind.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <gsl/gsl_fit.h>
#include "batch_curve.h"

#ifndef SB_CALIB_TABLES_DIR
#define SB_CALIB_TABLES_DIR "calib/tables"
#endif

struct calhw_curve {
	enum caltab_op op;
	uint64_t m, k, n;          /* the shape */
	struct batch_curve bc;     /* its measured batches, on log-log axes */
};

struct calhw_term {
	uint32_t curve;            /* index into curves */
	uint32_t count;            /* runs of this shape in one node execution: count x steps */
};

struct calhw_node {
	uint32_t nterms;
	struct calhw_term terms[MDL_MAX_GEMMS];
	double ew_ops_per_sample;  /* element-wise ops per sample; 0 = none */
};

struct calhw_hw {
	struct hw_model base;          /* first: what the caller sees */
	char *source;                  /* owned: table path (or label), for messages */
	size_t ncurves;
	struct calhw_curve *curves;    /* owned: one per shape in the table */
	uint32_t nnodes;
	struct calhw_node *nodes;      /* owned: one per model node type (NULL without a model) */
	struct calhw_ew_fit ew;        /* npoints 0 when the table has no elementwise rows */
	uint32_t max_batch;            /* over the shapes the model needs; 0 without a model */
	int gpu;                       /* the table was measured on a GPU (for the hint in messages) */
	uint32_t ncold;                /* the table's cold-start field: refill cost per weight byte ... */
	double cold_idle_s[CALTAB_COLD_MAX];        /* ... after this long idle (increasing) */
	double cold_s_per_byte[CALTAB_COLD_MAX];    /* (non-decreasing; linear in between, flat after) */
};

int calhw_is_gpu_name(const char *arg)
{
	return strncmp(arg, "gpu-", 4) == 0 && caltab_check_device(arg) == 0;
}

const char *calhw_tables_dir(void)
{
	const char *env = getenv("SIMBATCH_CALIB_TABLES");

	return env && *env ? env : SB_CALIB_TABLES_DIR;
}

static void calhw_shape_text(enum caltab_op op, uint64_t m, uint64_t k, uint64_t n, char *buf, size_t len)
{
	snprintf(buf, len, "%s %llux%llux%llu (m_per_sample x k x n)", caltab_op_name(op), (unsigned long long)m,
	         (unsigned long long)k, (unsigned long long)n);
}

int calhw_fit_elementwise(const struct caltab *t, struct calhw_ew_fit *fit, char *err, size_t errlen)
{
	size_t n = 0, j = 0;
	double *x = NULL, *y = NULL, *w = NULL, c0, c1, cov00, cov01, cov11, chisq, ss = 0;
	const char *name = t->path && *t->path ? t->path : "calibration table";
	int rc = -1, distinct = 0;

	memset(fit, 0, sizeof *fit);
	for (size_t i = 0; i < t->nrows; i++)
		n += t->rows[i].op == CALTAB_ELEMENTWISE;
	if (n == 0) {
		snprintf(err, errlen, "%s: no elementwise rows to fit the element-wise cost to", name);
		return -1;
	}
	x = malloc(n * sizeof *x);
	y = malloc(n * sizeof *y);
	w = malloc(n * sizeof *w);
	if (!x || !y || !w) {
		err_memory(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		const struct caltab_row *r = &t->rows[i];

		if (r->op != CALTAB_ELEMENTWISE)
			continue;
		x[j] = (double)r->m_per_sample * r->batch;
		y[j] = r->latency_s;
		w[j] = 1.0 / (r->latency_s * r->latency_s);
		distinct |= j > 0 && x[j] != x[0];
		j++;
	}
	if (!distinct) {
		snprintf(err, errlen, "%s: elementwise rows cover one size only; a line needs two", name);
		goto out;
	}
	if (gsl_fit_wlinear(x, 1, w, 1, y, 1, n, &c0, &c1, &cov00, &cov01, &cov11, &chisq) != 0) {
		snprintf(err, errlen, "%s: element-wise fit failed", name);
		goto out;
	}
	if (c0 < 0) {
		/* a negative launch cost is not a cost: keep the slope honest instead */
		c0 = 0;
		if (gsl_fit_wmul(x, 1, w, 1, y, 1, n, &c1, &cov11, &chisq) != 0) {
			snprintf(err, errlen, "%s: element-wise fit failed", name);
			goto out;
		}
		fit->through_origin = 1;
	}
	if (!(c1 > 0) || !isfinite(c1)) {
		snprintf(err, errlen, "%s: elementwise rows do not grow with size (fitted %g s per op)", name, c1);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		double rel = (c0 + c1 * x[i]) / y[i] - 1;

		ss += rel * rel;
	}
	fit->launch_s = c0;
	fit->s_per_op = c1;
	fit->rel_rms = sqrt(ss / n);
	fit->npoints = n;
	rc = 0;
out:
	free(x);
	free(y);
	free(w);
	return rc;
}

static void calhw_curve_free(struct calhw_curve *c)
{
	bc_free(&c->bc);
}

/* Builds a curve from n sorted rows of one shape (validated: distinct
 * batches, latencies > 0 and non-decreasing). */
static int calhw_curve_build(struct calhw_curve *c, const struct caltab_row *rows, size_t n)
{
	memset(c, 0, sizeof *c);
	c->op = rows[0].op;
	c->m = rows[0].m_per_sample;
	c->k = rows[0].k;
	c->n = rows[0].n;
	if (bc_alloc(&c->bc, n, 1) != 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		c->bc.batch[i] = rows[i].batch;
		c->bc.latency_s[i] = rows[i].latency_s;
	}
	return bc_fit(&c->bc);
}

static int calhw_curve_eval(const struct calhw_curve *c, const char *source, uint32_t batch, double *out,
                            char *err, size_t errlen)
{
	const struct batch_curve *bc = &c->bc;
	char shape[128];

	if (batch < bc->batch[0] || batch > bc->batch[bc->npoints - 1]) {
		calhw_shape_text(c->op, c->m, c->k, c->n, shape, sizeof shape);
		snprintf(err, errlen, "%s: %s has no latency for batch %u (measured batches %.0f to %.0f)", source, shape,
		         batch, bc->batch[0], bc->batch[bc->npoints - 1]);
		return -1;
	}
	*out = bc_eval(bc, batch);
	return 0;
}

static long calhw_find_curve(const struct calhw_hw *h, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n)
{
	for (size_t i = 0; i < h->ncurves; i++) {
		const struct calhw_curve *c = &h->curves[i];

		if (c->op == op && c->m == m && c->k == k && c->n == n)
			return (long)i;
	}
	return -1;
}

static void calhw_close(struct hw_model *hw)
{
	struct calhw_hw *h = (struct calhw_hw *)hw;

	if (!h)
		return;
	for (size_t i = 0; h->curves && i < h->ncurves; i++)
		calhw_curve_free(&h->curves[i]);
	free(h->curves);
	free(h->nodes);
	free(h->source);
	free(h);
}

/* Maps every node of m to curves; fails on the first shape the table lacks. */
static int calhw_bind_model(struct calhw_hw *h, const struct mdl_model *m, char *err, size_t errlen)
{
	char shape[128];

	h->nnodes = m->nnodes;
	if (m->nnodes && !(h->nodes = calloc(m->nnodes, sizeof *h->nodes))) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	for (uint32_t t = 0; t < m->nnodes; t++) {
		const struct mdl_node *node = &m->nodes[t];
		struct calhw_node *cn = &h->nodes[t];

		for (uint32_t g = 0; g < node->ngemms; g++) {
			const struct mdl_gemm *gm = &node->gemms[g];
			enum caltab_op op = gm->weight_shared ? CALTAB_ATTN : CALTAB_GEMM;
			long c = calhw_find_curve(h, op, gm->m_per_sample, gm->k, gm->n);

			if (c < 0) {
				calhw_shape_text(op, gm->m_per_sample, gm->k, gm->n, shape, sizeof shape);
				snprintf(err, errlen, "%s: no rows for %s, needed by node %s of model %s "
				         "(measure it: simbatch calibrate --device=%s --model=%s)", h->source, shape, node->name,
				         m->name, h->gpu ? "gpu" : "cpu", m->path[0] ? m->path : m->name);
				return -1;
			}
			cn->terms[cn->nterms].curve = (uint32_t)c;
			/* sSTEPS runs of the same GEMM inside one node execution */
			cn->terms[cn->nterms].count = gm->count * mdl_gemm_steps(gm);
			cn->nterms++;
			uint32_t last = (uint32_t)h->curves[c].bc.batch[h->curves[c].bc.npoints - 1];
			if (h->max_batch == 0 || last < h->max_batch)
				h->max_batch = last;
		}
		cn->ew_ops_per_sample = (double)node->elementwise_per_sample;
		if (cn->ew_ops_per_sample > 0 && h->ew.npoints == 0) {
			snprintf(err, errlen, "%s: no elementwise rows, needed by node %s of model %s (%llu element-wise "
			         "ops per sample)", h->source, node->name, m->name,
			         (unsigned long long)node->elementwise_per_sample);
			return -1;
		}
	}
	return 0;
}

/* The optional header field written by calib-cpu (calib/calib_cpu.c):
 * "per weight byte after idle: MS:S MS:S ...; how it was measured", idle in
 * ms increasing, seconds per weight byte non-decreasing. */
static int calhw_parse_cold_start(const struct caltab *t, struct calhw_hw *h, char *err, size_t errlen)
{
	static const char prefix[] = "per weight byte after idle:";
	const char *v = caltab_field(t, CALTAB_COLD_START_FIELD), *p;
	int used;

	if (!v)
		return 0;
	if (strncmp(v, prefix, sizeof prefix - 1) != 0)
		goto bad;
	p = v + sizeof prefix - 1;
	while (*p == ' ')
		p++;
	while (*p && *p != ';') {
		double ms, spb;
		if (h->ncold == CALTAB_COLD_MAX || sscanf(p, "%lg:%lg%n", &ms, &spb, &used) != 2 || !isfinite(ms) ||
		    !isfinite(spb) || !(ms > 0) || spb < 0 ||
		    (h->ncold && (ms <= h->cold_idle_s[h->ncold - 1] * 1e3 || spb < h->cold_s_per_byte[h->ncold - 1])))
			goto bad;
		h->cold_idle_s[h->ncold] = ms * 1e-3;
		h->cold_s_per_byte[h->ncold++] = spb;
		p += used;
		while (*p == ' ')
			p++;
	}
	if (h->ncold == 0)
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "%s: field %s: expected '%s MS:S MS:S ...' (at most %d pairs, idle ms increasing, "
	         "seconds per byte >= 0 and non-decreasing), got '%s'", h->source, CALTAB_COLD_START_FIELD, prefix,
	         CALTAB_COLD_MAX, v);
	return -1;
}

int calhw_create(const struct caltab *t, const struct mdl_model *m, const char *label, struct hw_model **out,
                 char *err, size_t errlen)
{
	struct calhw_hw *h = NULL;
	size_t nshapes = 0;

	*out = NULL;
	if (!(h = calloc(1, sizeof *h)) || !(h->source = strdup(t->path && *t->path ? t->path : label)))
		goto oom;
	h->base.ops = &calhw_file_ops;
	h->base.model = m;
	h->gpu = calhw_is_gpu_name(t->device);
	snprintf(h->base.label, sizeof h->base.label, "%s", label);

	for (size_t i = 0; i < t->nrows; i++)
		nshapes += i == 0 || t->rows[i].op != t->rows[i - 1].op ||
		           t->rows[i].m_per_sample != t->rows[i - 1].m_per_sample ||
		           t->rows[i].k != t->rows[i - 1].k || t->rows[i].n != t->rows[i - 1].n;
	if (nshapes && !(h->curves = calloc(nshapes, sizeof *h->curves)))
		goto oom;
	for (size_t i = 0; i < t->nrows;) {
		const struct caltab_row *r = &t->rows[i];
		size_t count;

		caltab_find_shape(t, r->op, r->m_per_sample, r->k, r->n, &count);
		if (r->op != CALTAB_ELEMENTWISE) {
			if (calhw_curve_build(&h->curves[h->ncurves++], r, count) != 0)
				goto oom;
		}
		i += count;
	}
	for (size_t i = 0; i < t->nrows; i++) {
		if (t->rows[i].op == CALTAB_ELEMENTWISE) {
			if (calhw_fit_elementwise(t, &h->ew, err, errlen) != 0)
				goto fail;
			break;
		}
	}
	if (calhw_parse_cold_start(t, h, err, errlen) != 0 || (m && calhw_bind_model(h, m, err, errlen) != 0))
		goto fail;
	*out = &h->base;
	return 0;
oom:
	err_memory(err, errlen, "out of memory");
fail:
	calhw_close(h ? &h->base : NULL);
	return -1;
}

/* The label is the path as given; one too long for the label field is
 * shortened to its last component. */
static void calhw_file_label(const char *path, char *label, size_t len)
{
	const char *base = strrchr(path, '/');

	if (strlen(path) < len || !base || base[1] == '\0')
		snprintf(label, len, "%s", path);
	else
		snprintf(label, len, "%s", base + 1);
}

static int calhw_open_table(const char *path, const char *want_device, const char *label,
                            const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	struct caltab *t = NULL;
	int rc;

	if (caltab_read(path, &t, err, errlen) != 0)
		return -1;
	if (want_device && strcmp(t->device, want_device) != 0) {
		snprintf(err, errlen, "%s: field device: the table was measured on '%s', not '%s'", path, t->device,
		         want_device);
		caltab_destroy(t);
		return -1;
	}
	rc = calhw_create(t, m, label, out, err, errlen);
	caltab_destroy(t);
	return rc;
}

int calhw_table_there(const char *name, char *path, size_t pathlen, char *err, size_t errlen)
{
	struct stat st;
	int n;

	if (caltab_check_device(name) != 0) {
		snprintf(err, errlen, "bad hardware name '%s' (expected cpu or gpu-NAME, NAME of a-z 0-9 _ -)", name);
		return -1;
	}
	n = snprintf(path, pathlen, "%s/%s.csv", calhw_tables_dir(), name);
	if (n < 0 || (size_t)n >= pathlen) {
		snprintf(err, errlen, "calibration tables directory path too long");
		return -1;
	}
	if (stat(path, &st) != 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			snprintf(err, errlen, "%s: cannot read: %s", path, err_strerror(errno));
			return -1;
		}
		if (calhw_is_gpu_name(name))
			snprintf(err, errlen, "no measured table for %s: %s does not exist (simbatch never invents one; "
			         "measure it on that GPU with simbatch calibrate --device=gpu and commit it)", name, path);
		else
			snprintf(err, errlen, "no measured table for %s: %s does not exist (measure one with "
			         "simbatch calibrate --device=cpu --out=%s)", name, path, path);
		return -1;
	}
	return 0;
}

/* --hw=cpu and --hw=gpu-NAME: the committed table DIR/NAME.csv. */
static int calhw_open_named(const char *name, const struct mdl_model *m, struct hw_model **out, char *err,
                            size_t errlen)
{
	char path[1024];

	*out = NULL;
	if (calhw_table_there(name, path, sizeof path, err, errlen) != 0)
		return -1;
	return calhw_open_table(path, name, name, m, out, err, errlen);
}

static int calhw_open_file(const char *path, const struct mdl_model *m, struct hw_model **out, char *err,
                           size_t errlen)
{
	char label[sizeof ((struct hw_model *)0)->label];

	*out = NULL;
	calhw_file_label(path, label, sizeof label);
	return calhw_open_table(path, NULL, label, m, out, err, errlen);
}

static int calhw_node_cost(const struct hw_model *hw, uint32_t node_type, uint32_t batch,
                           struct hw_node_cost *out, char *err, size_t errlen)
{
	const struct calhw_hw *h = (const struct calhw_hw *)hw;
	const struct calhw_node *cn;
	double total = 0;

	memset(out, 0, sizeof *out);
	if (!h->nodes || node_type >= h->nnodes) {
		snprintf(err, errlen, "%s: node type %u out of range (model has %u)", h->source, node_type, h->nnodes);
		return -1;
	}
	cn = &h->nodes[node_type];
	for (uint32_t i = 0; i < cn->nterms; i++) {
		double s;

		if (calhw_curve_eval(&h->curves[cn->terms[i].curve], h->source, batch, &s, err, errlen) != 0)
			return -1;
		total += cn->terms[i].count * s;
	}
	if (cn->ew_ops_per_sample > 0)
		total += h->ew.launch_s + h->ew.s_per_op * cn->ew_ops_per_sample * batch;
	/* The split between arithmetic and data movement is not measured: a
	 * table holds only totals. */
	out->seconds = total;
	out->compute_seconds = 0;
	out->memory_seconds = 0;
	out->bound = HW_COMPUTE_BOUND;
	return 0;
}

int calhw_gemm_seconds(const struct hw_model *hw, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n,
                       uint32_t batch, double *seconds, char *err, size_t errlen)
{
	const struct calhw_hw *h = (const struct calhw_hw *)hw;
	long c = calhw_find_curve(h, op, m, k, n);
	char shape[128];

	*seconds = 0;
	if (c < 0) {
		calhw_shape_text(op, m, k, n, shape, sizeof shape);
		snprintf(err, errlen, "%s: no rows for %s", h->source, shape);
		return -1;
	}
	return calhw_curve_eval(&h->curves[c], h->source, batch, seconds, err, errlen);
}

const struct calhw_ew_fit *calhw_elementwise(const struct hw_model *hw)
{
	return &((const struct calhw_hw *)hw)->ew;
}

/* The node's weights (fp32, as calibrated) at the table's refill cost for
 * this idle: linear between the measured idles (and from 0 at no idle),
 * the longest one's beyond. */
static double calhw_cold_start(const struct hw_model *hw, uint32_t node_type, double idle_s)
{
	const struct calhw_hw *h = (const struct calhw_hw *)hw;
	double bytes = 0, spb;
	uint32_t i = 0;

	if (!hw->model || node_type >= hw->model->nnodes || h->ncold == 0 || !(idle_s > 0))
		return 0;
	const struct mdl_node *node = &hw->model->nodes[node_type];
	for (uint32_t g = 0; g < node->ngemms; g++)
		if (!node->gemms[g].weight_shared)
			bytes += (double)node->gemms[g].k * (double)node->gemms[g].n * node->gemms[g].count * sizeof(float);
	while (i < h->ncold && h->cold_idle_s[i] < idle_s)
		i++;
	if (i == h->ncold)
		spb = h->cold_s_per_byte[h->ncold - 1];
	else {
		double x0 = i ? h->cold_idle_s[i - 1] : 0, y0 = i ? h->cold_s_per_byte[i - 1] : 0;
		spb = y0 + (h->cold_s_per_byte[i] - y0) * (idle_s - x0) / (h->cold_idle_s[i] - x0);
	}
	return bytes * spb;
}

static uint32_t calhw_max_batch(const struct hw_model *hw)
{
	return ((const struct calhw_hw *)hw)->max_batch;
}

static int calhw_open_cpu(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err,
                          size_t errlen)
{
	(void)arg;
	return calhw_open_named("cpu", m, out, err, errlen);
}

/* The three entry points share every method but open; the instance's ops
 * pointer is always calhw_file_ops (set in calhw_create). */
const struct hw_ops calhw_cpu_ops = {
	.name = "cpu",
	.help = "this machine's CPU, calibrated: calib/tables/cpu.csv (OpenBLAS, measured here)",
	.open = calhw_open_cpu,
	.close = calhw_close,
	.node_cost = calhw_node_cost,
	.gemm_cost = NULL,
	.max_batch = calhw_max_batch,
	.cold_start = calhw_cold_start,
};

const struct hw_ops calhw_gpu_ops = {
	.name = "gpu-NAME",
	.help = "a GPU calibrated with cuBLAS: calib/tables/gpu-NAME.csv (error when none was measured)",
	.open = calhw_open_named,
	.close = calhw_close,
	.node_cost = calhw_node_cost,
	.gemm_cost = NULL,
	.max_batch = calhw_max_batch,
	.cold_start = calhw_cold_start,
};

const struct hw_ops calhw_file_ops = {
	.name = "calibrated",
	.help = "calibration table: CSV op,m_per_sample,k,n,batch,latency_s (--hw=FILE)",
	.open = calhw_open_file,
	.close = calhw_close,
	.node_cost = calhw_node_cost,
	.gemm_cost = NULL,
	.max_batch = calhw_max_batch,
	.cold_start = calhw_cold_start,
};
