/* sim/engine/latency.c: the per-run latency cache (see latency.h). Graph latencies
 * are kept as three per-batch sums (static, per encoder step, per decoder
 * step) so a padded graph batch costs O(1) to price. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "latency.h"
#include "../../util/errkind.h"
#include "../../util/ns_math.h"

struct eng_latency {
	const struct mdl_model *model;  /* not owned: tree levels for graph latencies */
	uint32_t ntypes;
	uint32_t max_batch;
	int64_t *node_ns;        /* [type * (max_batch+1) + b] */
	int64_t *static_ns;      /* [b]: every static node once */
	int64_t *encoder_ns;     /* [b]: every encoder node once (one input step) */
	int64_t *decoder_ns;     /* [b]: every decoder node once (one output step) */
	int has_cold;
	double *cold_ns;         /* [type * LAT_COLD_GRID + i]: hw_cold_start at lat_cold_grid_ms[i] */
	/* pass node types (mdl_is_pass): a batch's price is the node at its
	 * summed tokens plus each request's own part at its length */
	uint32_t max_len;        /* longest request (tokens) */
	uint64_t max_tokens;     /* max_batch * max_len */
	struct pol_pass_part **pass_ns;    /* [type][tokens], 1..max_tokens, filled on first use (main_ns -1
	                                    * until then); NULL for other types */
	const struct hw_model *hw;         /* not owned: fills pass_ns */
	struct pol_pass_part **member_ns;  /* [type][len], 1..max_len; NULL for other types */
	int64_t **single_ns;               /* [type][len], 1..max_len: the node run by one request of len
	                                    * tokens, both parts added (0 until first asked) */
	/* decoder node types with terms over P and S (models/model.h), on a
	 * hardware model that prices shapes: what the device takes is the node
	 * with every member attending to one position of each (step_base, by
	 * batch) plus, for each member, what attending to its own P and S
	 * positions adds (step_dp, step_ds): lat_step_tables */
	int64_t *device_ns;                /* [type * (max_batch+1) + b]: node_ns, but a step type's base */
	uint32_t max_p, max_s;             /* longest output and input */
	struct pol_pass_part **step_base;  /* [type][b], 1..max_batch; NULL for other types */
	struct pol_pass_part **step_dp;    /* [type][p], 1..max_p */
	struct pol_pass_part **step_ds;    /* [type][s], 1..max_s */
	uint8_t *step_varies;              /* [type]: some step_dp or step_ds is not zero */
	uint8_t *step_on_p;                /* [type]: some step_dp is not zero (the price moves step by step) */
	uint8_t *by_members;               /* [type * (max_batch+1) + b]: a pass node, or a step_varies type at a
	                                    * batch where its members' lengths can change its price */
	struct pol_latency est;            /* eng_latency_estimates, for pol_pass_ns */
	int64_t task_overhead_ns;          /* hw_task_overhead: in every node's price, paid once a graph task */
};

#define LAT_COLD_GRID 11
static const double lat_cold_grid_ms[LAT_COLD_GRID] = { 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000 };

static int64_t lat_round_ns(double s)
{
	double ns = nearbyint(s * 1e9);
	return ns < 1.0 ? 1 : (int64_t)ns;
}

/* One hardware answer as a table entry: finite, within ENG_MAX_NODE_S. */
static int lat_entry(const struct hw_model *hw, const struct mdl_node *node, const char *what, uint64_t at,
                     const struct hw_node_cost *cost, int64_t *out, char *err, size_t errlen)
{
	if (!isfinite(cost->seconds) || cost->seconds < 0) {
		snprintf(err, errlen, "hardware model %s gave latency %g s for node %s at %s %llu", hw->label,
		         cost->seconds, node->name, what, (unsigned long long)at);
		return -1;
	}
	if (cost->seconds > ENG_MAX_NODE_S) {
		snprintf(err, errlen, "hardware model %s gives node %s at %s %llu %g s: more than the %g s a node may "
		         "take in simulated time", hw->label, node->name, what, (unsigned long long)at, cost->seconds,
		         ENG_MAX_NODE_S);
		return -1;
	}
	*out = lat_round_ns(cost->seconds);
	return 0;
}

/* A pass node's cost as its two parts (hwmodel.h: main and side), ns: the
 * main part at least 1 ns for the node over tokens (time always advances),
 * and a request's own part may be nothing. */
static struct pol_pass_part lat_pass_part(const struct hw_node_cost *c, int own)
{
	double ns = nearbyint(hw_main_seconds(c) * 1e9);
	struct pol_pass_part p = { (int64_t)ns, (int64_t)nearbyint(c->side_seconds * 1e9) };
	if (!own && p.main_ns < 1)
		p.main_ns = 1;
	return p;
}

/* A pass node type's two tables: the node at 1..max_tokens tokens, and one
 * request's own part at 1..max_len tokens. */
static int lat_pass_tables(struct eng_latency *l, const struct hw_model *hw, uint32_t t, char *err, size_t errlen)
{
	const struct mdl_node *node = &l->model->nodes[t];
	l->pass_ns[t] = calloc(l->max_tokens > UINT32_MAX ? 1 : l->max_tokens + 1, sizeof *l->pass_ns[t]);
	l->member_ns[t] = calloc((size_t)l->max_len + 1, sizeof *l->member_ns[t]);
	l->single_ns[t] = calloc((size_t)l->max_len + 1, sizeof *l->single_ns[t]);
	if (!l->pass_ns[t] || !l->member_ns[t] || !l->single_ns[t]) {
		err_memory(err, errlen, "out of memory building the latency table");
		return -1;
	}
	struct hw_node_cost cost;
	int member = node->nmember || node->elementwise_len;
	int64_t checked;
	for (uint32_t len = 1; member && len <= l->max_len; len++) {
		if (hw_member_cost(hw, t, len, &cost, err, errlen) != 0 ||
		    lat_entry(hw, node, "a request of length", len, &cost, &checked, err, errlen) != 0)
			return -1;
		l->member_ns[t][len] = lat_pass_part(&cost, 1);
	}
	if (l->max_tokens > UINT32_MAX) {
		snprintf(err, errlen, "pass node %s runs up to %llu tokens (the max batch times the longest input, %u "
		         "tokens): more than %u", node->name, (unsigned long long)l->max_tokens, l->max_len, UINT32_MAX);
		return -1;
	}
	/* The node over k tokens is asked for when a batch first runs k tokens:
	 * asking for every k up front cost 10 ms a run (7 types x 5,120 counts
	 * at max batch 64 and inputs to 80), more than most runs simulate. Both
	 * ends are asked now, so a model that cannot answer says so before the
	 * run; the models answer every count in between when they answer these
	 * (their costs grow with the rows and fail only on overflow). */
	for (uint64_t k = 1; k <= l->max_tokens; k++)
		l->pass_ns[t][k].main_ns = -1;
	uint64_t ends[2] = { 1, l->max_tokens };
	for (int i = 0; i < 2; i++) {
		if (hw_node_cost(hw, t, (uint32_t)ends[i], &cost, err, errlen) != 0 ||
		    lat_entry(hw, node, "tokens", ends[i], &cost, &checked, err, errlen) != 0)
			return -1;
		l->pass_ns[t][ends[i]] = lat_pass_part(&cost, 0);
	}
	return 0;
}

/* A decoder node shape (mdl_step_node) at a batch, from the hardware
 * model's shape_cost, checked as a table entry. */
static int lat_shape(const struct hw_model *hw, const struct mdl_node *shape, uint32_t batch,
                     struct hw_node_cost *cost, char *err, size_t errlen)
{
	int64_t checked;
	return hw->ops->shape_cost(hw, shape, batch, cost, err, errlen) != 0 ||
	       lat_entry(hw, shape, "batch", batch, cost, &checked, err, errlen) != 0 ? -1 : 0;
}

/* What one member attending to len positions of P (or S) adds to a batch
 * beyond attending to one, for len = 1..max: the part's terms cost d(len) =
 * price(batch 2) - price(batch 1), one more member's share of a batch (on a
 * pipelined array, its GEMMs chained after the others', not a pipeline of
 * their own), and the member adds d(len) - d(1). */
static int lat_step_deltas(struct eng_latency *l, const struct hw_model *hw, uint32_t t, enum mdl_step_part part,
                           uint32_t max, struct pol_pass_part *out, char *err, size_t errlen)
{
	double one[2] = { 0, 0 };
	for (uint32_t len = 1; len <= max; len++) {
		struct mdl_node shape;
		struct hw_node_cost b1, b2;
		mdl_step_node(&l->model->nodes[t], len, len, part, &shape);
		if (lat_shape(hw, &shape, 1, &b1, err, errlen) != 0 || lat_shape(hw, &shape, 2, &b2, err, errlen) != 0)
			return -1;
		double d[2] = { hw_main_seconds(&b2) - hw_main_seconds(&b1), b2.side_seconds - b1.side_seconds };
		if (len == 1) {
			one[0] = d[0];
			one[1] = d[1];
		}
		out[len] = (struct pol_pass_part){ (int64_t)nearbyint((d[0] - one[0]) * 1e9),
		                                   (int64_t)nearbyint((d[1] - one[1]) * 1e9) };
	}
	return 0;
}

/* Whether a table of increments moves anything; its largest side part and
 * whether any main part is not zero. */
static int lat_increments(const struct pol_pass_part *inc, uint32_t max, int64_t *side_max, int *main_moves)
{
	int moves = 0;
	for (uint32_t len = 1; len <= max; len++) {
		moves |= inc[len].main_ns != 0 || inc[len].side_ns != 0;
		*main_moves |= inc[len].main_ns != 0;
		*side_max = inc[len].side_ns > *side_max ? inc[len].side_ns : *side_max;
	}
	return moves;
}

/* A step type's flags. Where the members cannot change its price at batch b
 * it is its table entry: no increment's main part moves, and b members'
 * largest side increments keep the side part within the main part, so
 * max(main, side) stays the main part (saves the per-member sums). */
static void lat_step_flags(struct eng_latency *l, uint32_t t)
{
	int64_t side_p = 0, side_s = 0;
	int main_moves = 0;
	l->step_on_p[t] = (uint8_t)lat_increments(l->step_dp[t], l->max_p, &side_p, &main_moves);
	l->step_varies[t] = l->step_on_p[t] | (uint8_t)lat_increments(l->step_ds[t], l->max_s, &side_s, &main_moves);
	for (uint32_t b = 1; b <= l->max_batch && l->step_varies[t]; b++) {
		struct pol_pass_part base = l->step_base[t][b];
		l->by_members[t * ((size_t)l->max_batch + 1) + b] =
			main_moves || base.side_ns + (int64_t)b * (side_p + side_s) > base.main_ns;
	}
}

/* A decoder type with terms over P or S: its base by batch and its members'
 * increments (see struct eng_latency), and its device_ns row. */
static int lat_step_tables(struct eng_latency *l, const struct hw_model *hw, uint32_t t, char *err, size_t errlen)
{
	const struct mdl_node *node = &l->model->nodes[t];
	size_t stride = (size_t)l->max_batch + 1;
	l->step_base[t] = calloc(stride, sizeof *l->step_base[t]);
	l->step_dp[t] = calloc((size_t)l->max_p + 1, sizeof *l->step_dp[t]);
	l->step_ds[t] = calloc((size_t)l->max_s + 1, sizeof *l->step_ds[t]);
	if (!l->step_base[t] || !l->step_dp[t] || !l->step_ds[t]) {
		err_memory(err, errlen, "out of memory building the latency table");
		return -1;
	}
	struct mdl_node base;
	mdl_step_node(node, 1, 1, MDL_STEP_ALL, &base);
	for (uint32_t b = 1; b <= l->max_batch; b++) {
		struct hw_node_cost cost;
		if (lat_shape(hw, &base, b, &cost, err, errlen) != 0)
			return -1;
		l->step_base[t][b] = lat_pass_part(&cost, 0);
		l->device_ns[t * stride + b] = pol_pass_part_ns(l->step_base[t][b]);
	}
	if (lat_step_deltas(l, hw, t, MDL_STEP_P, l->max_p, l->step_dp[t], err, errlen) != 0 ||
	    lat_step_deltas(l, hw, t, MDL_STEP_S, l->max_s, l->step_ds[t], err, errlen) != 0)
		return -1;
	lat_step_flags(l, t);
	return 0;
}

struct eng_latency *eng_latency_create(const struct mdl_model *m, const struct hw_model *hw,
                                       uint32_t max_cells, uint32_t max_len, uint32_t max_out, char *err,
                                       size_t errlen)
{
	struct eng_latency *l = calloc(1, sizeof *l);
	if (!l)
		goto oom;
	uint32_t max_batch = max_cells;
	size_t stride = (size_t)max_batch + 1;
	l->model = m;
	l->task_overhead_ns = (int64_t)nearbyint(hw_task_overhead(hw) * 1e9);
	l->ntypes = m->nnodes;
	l->max_batch = max_batch;
	l->node_ns = calloc((size_t)m->nnodes * stride, sizeof *l->node_ns);
	l->static_ns = calloc(stride, sizeof *l->static_ns);
	l->encoder_ns = calloc(stride, sizeof *l->encoder_ns);
	l->decoder_ns = calloc(stride, sizeof *l->decoder_ns);
	l->cold_ns = calloc((m->nnodes ? m->nnodes : 1) * (size_t)LAT_COLD_GRID, sizeof *l->cold_ns);
	if (!l->node_ns || !l->static_ns || !l->encoder_ns || !l->decoder_ns || !l->cold_ns)
		goto oom;
	for (uint32_t t = 0; t < m->nnodes; t++)
		for (uint32_t i = 0; i < LAT_COLD_GRID; i++) {
			double extra_s = hw_cold_start(hw, t, lat_cold_grid_ms[i] * 1e-3);
			double before = i ? l->cold_ns[t * LAT_COLD_GRID + i - 1] : 0;
			/* non-decreasing up to rounding (interpolation can land an ulp low) */
			if (extra_s > ENG_MAX_NODE_S) {
				snprintf(err, errlen, "hardware model %s gave a cold start of %g s for node %s: more than the "
				         "%g s a node may take in simulated time", hw->label, extra_s, m->nodes[t].name,
				         ENG_MAX_NODE_S);
				goto fail;
			}
			if (!isfinite(extra_s) || extra_s * 1e9 < before * (1 - 1e-9) - 1e-6) {
				snprintf(err, errlen, "hardware model %s gave a cold start of %g s after %g ms idle for node %s "
				         "(must be finite and non-decreasing in the idle time)", hw->label, extra_s,
				         lat_cold_grid_ms[i], m->nodes[t].name);
				goto fail;
			}
			l->cold_ns[t * LAT_COLD_GRID + i] = extra_s * 1e9 > before ? extra_s * 1e9 : before;
			l->has_cold |= extra_s > 0;
		}
	l->hw = hw;
	l->max_len = max_len ? max_len : 1;
	l->max_tokens = (uint64_t)max_batch * l->max_len;
	l->pass_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->pass_ns);
	l->member_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->member_ns);
	l->single_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->single_ns);
	if (!l->pass_ns || !l->member_ns || !l->single_ns)
		goto oom;
	l->device_ns = calloc((size_t)m->nnodes * stride, sizeof *l->device_ns);
	l->max_p = max_out ? max_out : 1;
	l->max_s = l->max_len;
	l->step_base = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->step_base);
	l->step_dp = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->step_dp);
	l->step_ds = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->step_ds);
	l->step_varies = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->step_varies);
	l->step_on_p = calloc(m->nnodes ? m->nnodes : 1, sizeof *l->step_on_p);
	l->by_members = calloc((m->nnodes ? m->nnodes : 1) * stride, 1);
	if (!l->device_ns || !l->step_base || !l->step_dp || !l->step_ds || !l->step_varies || !l->step_on_p ||
	    !l->by_members)
		goto oom;
	l->est = eng_latency_estimates(l);
	for (uint32_t t = 0; t < m->nnodes; t++) {
		if (mdl_is_pass(m, t)) {
			if (lat_pass_tables(l, hw, t, err, errlen) != 0)
				goto fail;
			memset(&l->by_members[t * stride], 1, stride);
			continue;
		}
		for (uint32_t b = 1; b <= max_batch; b++) {
			struct hw_node_cost cost;
			int64_t ns;
			if (hw_node_cost(hw, t, b, &cost, err, errlen) != 0 ||
			    lat_entry(hw, &m->nodes[t], "batch", b, &cost, &ns, err, errlen) != 0)
				goto fail;
			l->node_ns[t * stride + b] = l->device_ns[t * stride + b] = ns;
		}
		if (mdl_node_has_step_terms(&m->nodes[t]) && hw->ops->shape_cost &&
		    lat_step_tables(l, hw, t, err, errlen) != 0)
			goto fail;
		for (uint32_t b = 1; b <= max_batch; b++) {
			int64_t ns = l->device_ns[t * stride + b];
			switch (m->nodes[t].kind) {
			case MDL_ENCODER: l->encoder_ns[b] = ns_add(l->encoder_ns[b], ns); break;
			case MDL_DECODER: l->decoder_ns[b] = ns_add(l->decoder_ns[b], ns); break;
			case MDL_STATIC: l->static_ns[b] = ns_add(l->static_ns[b], ns); break;
			default: break;  /* tree cells: priced per level in graph_ns */
			}
		}
	}
	return l;
oom:
	err_memory(err, errlen, "out of memory building the latency table");
fail:
	eng_latency_destroy(l);
	return NULL;
}

void eng_latency_destroy(struct eng_latency *l)
{
	if (!l)
		return;
	free(l->node_ns);
	free(l->static_ns);
	free(l->encoder_ns);
	free(l->decoder_ns);
	free(l->cold_ns);
	for (uint32_t t = 0; t < l->ntypes; t++) {
		if (l->pass_ns)
			free(l->pass_ns[t]);
		if (l->member_ns)
			free(l->member_ns[t]);
		if (l->single_ns)
			free(l->single_ns[t]);
	}
	for (uint32_t t = 0; t < l->ntypes; t++) {
		if (l->step_base)
			free(l->step_base[t]);
		if (l->step_dp)
			free(l->step_dp[t]);
		if (l->step_ds)
			free(l->step_ds[t]);
	}
	free(l->pass_ns);
	free(l->member_ns);
	free(l->single_ns);
	free(l->device_ns);
	free(l->step_base);
	free(l->step_dp);
	free(l->step_ds);
	free(l->step_varies);
	free(l->step_on_p);
	free(l->by_members);
	free(l);
}

int eng_latency_has_cold(const struct eng_latency *l)
{
	return l->has_cold;
}

int64_t eng_latency_cold_ns(const struct eng_latency *l, uint32_t node_type, int64_t idle_ns)
{
	const double *y = &l->cold_ns[(size_t)node_type * LAT_COLD_GRID];
	double ms = (double)idle_ns * 1e-6, v;
	uint32_t i = 0;
	assert(node_type < l->ntypes);
	if (idle_ns <= 0)
		return 0;
	while (i < LAT_COLD_GRID && lat_cold_grid_ms[i] < ms)
		i++;
	if (i == LAT_COLD_GRID)
		v = y[LAT_COLD_GRID - 1];
	else {
		double x0 = i ? lat_cold_grid_ms[i - 1] : 0, y0 = i ? y[i - 1] : 0;
		v = y0 + (y[i] - y0) * (ms - x0) / (lat_cold_grid_ms[i] - x0);
	}
	return (int64_t)nearbyint(v);
}

uint32_t eng_latency_max_cells(const struct eng_latency *l)
{
	return l->max_batch;
}

int64_t eng_latency_node_ns(void *ctx, uint32_t node_type, uint32_t batch)
{
	const struct eng_latency *l = ctx;
	assert(node_type < l->ntypes && batch >= 1 && batch <= l->max_batch && !l->pass_ns[node_type]);
	return l->node_ns[(size_t)node_type * (l->max_batch + 1) + batch];
}

struct pol_pass_part eng_latency_pass_part(void *ctx, uint32_t node_type, uint64_t tokens)
{
	struct eng_latency *l = ctx;
	assert(node_type < l->ntypes && l->pass_ns[node_type] && tokens >= 1 && tokens <= l->max_tokens);
	struct pol_pass_part *p = &l->pass_ns[node_type][tokens];
	if (p->main_ns < 0) {
		struct hw_node_cost cost;
		char err[256];
		int64_t checked;
		if (hw_node_cost(l->hw, node_type, (uint32_t)tokens, &cost, err, sizeof err) != 0 ||
		    lat_entry(l->hw, &l->model->nodes[node_type], "tokens", tokens, &cost, &checked, err, sizeof err) != 0) {
			/* eng_latency_create asked for both ends: a model that answers those answers this */
			fprintf(stderr, "simbatch: internal error: %s\n", err);
			abort();
		}
		*p = lat_pass_part(&cost, 0);
	}
	return *p;
}

struct pol_pass_part eng_latency_member_part(void *ctx, uint32_t node_type, uint32_t len)
{
	const struct eng_latency *l = ctx;
	assert(node_type < l->ntypes && l->member_ns[node_type] && len >= 1 && len <= l->max_len);
	return l->member_ns[node_type][len];
}

int64_t eng_latency_pass_single_ns(void *ctx, uint32_t node_type, uint32_t len)
{
	struct eng_latency *l = ctx;
	assert(node_type < l->ntypes && l->single_ns[node_type] && len >= 1 && len <= l->max_len);
	int64_t *ns = &l->single_ns[node_type][len];
	if (*ns == 0)   /* the node part is at least 1 ns, so 0 means not asked yet */
		*ns = pol_pass_part_ns(pol_pass_part_add(eng_latency_pass_part(ctx, node_type, len),
		                                         eng_latency_member_part(ctx, node_type, len), 1));
	return *ns;
}

const int64_t *eng_latency_device_table(const struct eng_latency *l, size_t *stride)
{
	*stride = (size_t)l->max_batch + 1;
	return l->device_ns;
}

int eng_latency_step_varies(const struct eng_latency *l, uint32_t node_type)
{
	return l->step_varies[node_type];
}

/* A step type at batch b whose members add up (dp, ds) parts beyond the base. */
static int64_t lat_step_price(const struct eng_latency *l, uint32_t t, uint32_t b, struct pol_pass_part own)
{
	int64_t ns = pol_pass_part_ns(pol_pass_part_add(l->step_base[t][b], own, 1));
	return ns < 1 ? 1 : ns;
}

int eng_latency_step_on_p(const struct eng_latency *l, uint32_t node_type)
{
	return l->step_on_p[node_type];
}

const uint8_t *eng_latency_by_members_table(const struct eng_latency *l)
{
	return l->by_members;
}

int64_t eng_latency_task_node_ns(void *ctx, uint32_t node_type, uint32_t n, struct pol_request *const *reqs,
                                 uint32_t cells, uint32_t passes)
{
	const struct eng_latency *l = ctx;
	size_t at = (size_t)node_type * (l->max_batch + 1) + cells;
	if (!l->by_members[at])
		return l->device_ns[at];
	if (l->pass_ns[node_type])
		return pol_pass_ns(&l->est, node_type, n, reqs);
	return eng_latency_step_ns(l, node_type, n, reqs, passes);
}

int64_t eng_latency_step_ns(const struct eng_latency *l, uint32_t node_type, uint32_t n,
                            struct pol_request *const *reqs, uint32_t passes)
{
	assert(node_type < l->ntypes && l->step_varies[node_type] && n >= 1 && n <= l->max_batch);
	struct pol_pass_part own = { 0, 0 };
	for (uint32_t i = 0; i < n; i++) {
		uint32_t s = reqs[i]->input_len;
		assert(s >= 1 && s <= l->max_s);
		own = pol_pass_part_add(own, l->step_ds[node_type][s], 1);
		if (l->step_on_p[node_type]) {
			uint32_t p = pol_req_decoder_step(l->model, reqs[i]) + passes;
			assert(p >= 1 && p <= l->max_p);
			own = pol_pass_part_add(own, l->step_dp[node_type][p], 1);
		}
	}
	return lat_step_price(l, node_type, n, own);
}

struct pol_latency eng_latency_estimates(struct eng_latency *l)
{
	return (struct pol_latency){ .ctx = l, .node_ns = eng_latency_node_ns, .graph_ns = eng_latency_graph_ns,
	                             .pass_part = eng_latency_pass_part, .member_part = eng_latency_member_part,
	                             .pass_single_ns = eng_latency_pass_single_ns,
	                             .task_node_ns = eng_latency_task_node_ns };
}

int64_t eng_latency_graph_ns(void *ctx, uint32_t batch, uint32_t input_len, uint32_t output_len)
{
	const struct eng_latency *l = ctx;
	assert(batch >= 1 && batch <= l->max_batch);
	int64_t ns = ns_add(ns_add(l->static_ns[batch], ns_mul(l->encoder_ns[batch], input_len)),
	                    ns_mul(l->decoder_ns[batch], output_len));
	/* decoder steps over P and S: step p of every member at p positions and input_len */
	for (uint32_t t = 0; output_len && t < l->ntypes; t++) {
		size_t at = (size_t)t * (l->max_batch + 1) + batch;
		if (!l->by_members[at] || l->pass_ns[t])
			continue;
		assert(output_len <= l->max_p && input_len >= 1 && input_len <= l->max_s);
		for (uint32_t p = 1; p <= output_len; p++) {
			struct pol_pass_part own = pol_pass_part_add(l->step_dp[t][p], l->step_ds[t][input_len], 1);
			own = (struct pol_pass_part){ own.main_ns * batch, own.side_ns * batch };
			ns = ns_add(ns, lat_step_price(l, t, batch, own) - l->device_ns[at]);
		}
	}
	/* pass nodes: every member padded to input_len tokens */
	for (uint32_t t = 0; input_len && t < l->ntypes; t++)
		if (l->pass_ns[t])
			ns = ns_add(ns, pol_pass_part_ns(pol_pass_part_add(eng_latency_pass_part(ctx, t, (uint64_t)batch * input_len),
			                                                   eng_latency_member_part(ctx, t, input_len), batch)));
	if (l->model->is_tree) {
		/* every level of the largest tree, all members' cells of a level in one batch */
		uint64_t n = mdl_chain_length(l->model, input_len, output_len);
		for (uint64_t pos = 0; pos < n; pos++) {
			uint32_t t = mdl_node_at(l->model, pos, input_len, output_len);
			enum mdl_kind k = l->model->nodes[t].kind;
			if (k == MDL_LEAF || k == MDL_INTERNAL)
				ns = ns_add(ns, eng_latency_node_ns(ctx, t, batch * mdl_cells_at(l->model, pos, input_len,
				                                                                 output_len)));
		}
	}
	/* a graph task is one task: of its nodes' prices, each of which holds a task's overhead, it pays one
	 * (every node's price is at least the overhead, so at least one is left) */
	uint64_t nodes = l->task_overhead_ns ? mdl_chain_length(l->model, input_len, output_len) : 0;
	if (nodes > 1)
		ns -= (int64_t)(nodes - 1) * l->task_overhead_ns;
	return ns;
}
