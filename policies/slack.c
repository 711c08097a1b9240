/* policies/slack.c: LazyBatching's slack predictor (Sec. IV-C, Algorithm 1,
 * Eq. 1-2) and the oracle's exact estimate (Sec. VI); see slack.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "slack.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/ns_math.h"
#include "../util/sort_small.h"

int slk_init(struct slk_table *t, const struct mdl_model *m, const struct pol_latency *lat,
             uint32_t dec_timesteps, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	t->model = m;
	t->lat = *lat;
	t->dec_timesteps = dec_timesteps;
	t->node_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof *t->node_ns);
	t->pass_types = calloc(m->nnodes ? m->nnodes : 1, sizeof *t->pass_types);
	t->before_ns = calloc(m->nnodes ? m->nnodes : 1, sizeof *t->before_ns);
	t->segment_ns = calloc(m->nsegments ? m->nsegments : 1, sizeof *t->segment_ns);
	if (!t->node_ns || !t->pass_types || !t->before_ns || !t->segment_ns) {
		slk_fini(t);
		err_memory(err, errlen, "slack predictor: out of memory");
		return -1;
	}
	/* Profile once (the paper's NodeLatency lookup table), then Algorithm 1
	 * only multiplies the per-kind sums by the step counts. */
	for (uint32_t n = 0; n < m->nnodes; n++) {
		if (mdl_is_pass(m, n)) {
			t->pass_types[t->npass++] = n;   /* priced at each request's length: slk_pass_single_ns */
			continue;
		}
		int64_t ns = lat->node_ns(lat->ctx, n, 1);
		t->node_ns[n] = ns;
		switch (m->nodes[n].kind) {
		case MDL_STATIC: t->static_ns = ns_add(t->static_ns, ns); break;
		case MDL_ENCODER: t->encoder_ns = ns_add(t->encoder_ns, ns); break;
		case MDL_DECODER: t->decoder_ns = ns_add(t->decoder_ns, ns); break;
		default: break;  /* tree cells: priced per level, see slk_single_exec_ns */
		}
		uint32_t seg = m->nodes[n].segment;
		t->before_ns[n] = n == m->segments[seg].first_node ? 0 : t->before_ns[n - 1] + (uint64_t)t->node_ns[n - 1];
		t->segment_ns[seg] += (uint64_t)ns;
	}
	return 0;
}

void slk_fini(struct slk_table *t)
{
	free(t->node_ns);
	free(t->pass_types);
	free(t->before_ns);
	free(t->segment_ns);
	t->node_ns = NULL;
	t->pass_types = NULL;
	t->before_ns = t->segment_ns = NULL;
}

/* A pass node alone: over the request's len tokens, and its own attention. */
static int64_t slk_pass_single_ns(const struct slk_table *t, uint32_t node_type, uint32_t len)
{
	return t->lat.pass_single_ns(t->lat.ctx, node_type, len);
}

int64_t slk_single_exec_ns(const struct slk_table *t, uint32_t enc_timesteps)
{
	if (t->model->is_tree)
		return t->lat.graph_ns(t->lat.ctx, 1, enc_timesteps, 0);
	int64_t ns = ns_add(ns_add(t->static_ns, ns_mul(t->encoder_ns, enc_timesteps)),
	                    ns_mul(t->decoder_ns, t->dec_timesteps));
	/* pass nodes run once, as Algorithm 1 counts a static node, at the input's length */
	for (uint32_t i = 0; enc_timesteps && i < t->npass; i++)
		ns = ns_add(ns, slk_pass_single_ns(t, t->pass_types[i], enc_timesteps));
	return ns;
}

int64_t slk_node_single_ns(const struct slk_table *t, uint32_t node_type, uint32_t cells, uint32_t input_len)
{
	if (mdl_is_pass(t->model, node_type))
		return slk_pass_single_ns(t, node_type, input_len);
	if (cells <= 1)
		return t->node_ns[node_type];
	return t->lat.node_ns(t->lat.ctx, node_type, cells);
}

uint64_t slk_run_single_ns(const struct slk_table *t, uint32_t node_type, uint64_t n, uint32_t input_len)
{
	struct mdl_run run = mdl_run_of(t->model, node_type, n);
	if (!mdl_is_pass(t->model, node_type)) {
		/* whole passes, then the rest types from the run's first, wrapping round the segment */
		uint32_t seg = t->model->nodes[node_type].segment, end = run.phase + (uint32_t)run.rest;
		uint64_t total = t->segment_ns[seg];
		uint64_t upto = end < run.nnodes ? t->before_ns[run.first + end] : total + t->before_ns[run.first + end - run.nnodes];
		return run.passes * total + upto - t->before_ns[node_type];
	}
	uint64_t sum = 0;
	for (uint32_t o = 0; o < run.nnodes; o++) {
		uint32_t type = mdl_run_type_at(&run, o);
		sum += mdl_run_count_at(&run, o) * (uint64_t)slk_node_single_ns(t, type, 1, input_len);
	}
	return sum;
}

/* ---- the oracle's exact drain time ---- */

static int64_t slk_exact_price(const struct slk_exact *x, uint32_t t, int64_t cells)
{
	const int64_t *price = x->price_ns + (size_t)t * (x->max_cells + 1);
	if (cells <= x->max_cells)
		return price[cells];
	int64_t full = cells / x->max_cells, rest = cells % x->max_cells;
	return full * price[x->max_cells] + (rest ? price[rest] : 0);
}

int slk_exact_init(struct slk_exact *x, const struct mdl_model *m, const struct pol_latency *lat,
                   uint32_t max_cells, char *err, size_t errlen)
{
	memset(x, 0, sizeof *x);
	x->model = m;
	x->lat = *lat;
	x->max_cells = max_cells;
	size_t n = m->nnodes ? m->nnodes : 1;
	x->rems = calloc(n, sizeof *x->rems);
	x->nrems = calloc(n, sizeof *x->nrems);
	x->rem_cap = calloc(n, sizeof *x->rem_cap);
	x->cells = calloc(n, sizeof *x->cells);
	x->cap = calloc(n, sizeof *x->cap);
	x->runs = calloc(n, sizeof *x->runs);
	x->price_ns = calloc(n * ((size_t)max_cells + 1), sizeof *x->price_ns);
	x->pass_tokens = calloc(n, sizeof *x->pass_tokens);
	x->pass_reqs = calloc(n, sizeof *x->pass_reqs);
	x->pass_own = calloc(n, sizeof *x->pass_own);
	size_t nseg = m->nsegments ? m->nsegments : 1;
	x->seg_pre = calloc(nseg, sizeof *x->seg_pre);
	x->seg_keys = calloc(nseg, sizeof *x->seg_keys);
	x->nseg_keys = calloc(nseg, sizeof *x->nseg_keys);
	x->seg_key_cap = calloc(nseg, sizeof *x->seg_key_cap);
	if (!x->rems || !x->nrems || !x->rem_cap || !x->cells || !x->cap || !x->runs || !x->price_ns ||
	    !x->pass_tokens || !x->pass_reqs || !x->pass_own || !x->seg_pre || !x->seg_keys || !x->nseg_keys ||
	    !x->seg_key_cap)
		goto oom;
	/* every decision prices many runs: the batched latencies once, not a call each */
	for (uint32_t t = 0; t < m->nnodes; t++)
		for (uint32_t b = 1; b <= max_cells && !mdl_is_pass(m, t); b++)
			x->price_ns[(size_t)t * (max_cells + 1) + b] = lat->node_ns(lat->ctx, t, b);
	for (uint32_t k = 0; k < m->nsegments; k++) {
		const struct mdl_segment *seg = &m->segments[k];
		if (seg->kind != MDL_STATIC && seg->kind != MDL_ENCODER && seg->kind != MDL_DECODER)
			continue;
		size_t w = (size_t)seg->nnodes + 1;
		int64_t *pre = calloc(((size_t)max_cells + 1) * w, sizeof *pre);
		if (!pre)
			goto oom;
		x->seg_pre[k] = pre;
		for (uint32_t c = 1; c <= max_cells; c++)
			for (uint32_t j = 0; j < seg->nnodes; j++)
				pre[c * w + j + 1] = ns_add(pre[c * w + j], slk_exact_price(x, seg->first_node + j, c));
		if (pre[max_cells * w + seg->nnodes] == NS_SATURATED) {
			free(pre);                  /* its differences would not be exact: type by type instead */
			x->seg_pre[k] = NULL;
		}
	}
	return 0;
oom:
	slk_exact_fini(x);
	err_memory(err, errlen, "oracle: out of memory");
	return -1;
}

void slk_exact_fini(struct slk_exact *x)
{
	if (!x->model)
		return;       /* never initialized */
	for (uint32_t t = 0; t < x->model->nnodes; t++) {
		if (x->rems)
			free(x->rems[t]);
		if (x->cells)
			free(x->cells[t]);
	}
	free(x->rems);
	free(x->nrems);
	free(x->rem_cap);
	free(x->cells);
	free(x->cap);
	free(x->runs);
	free(x->price_ns);
	free(x->pass_tokens);
	free(x->pass_reqs);
	free(x->pass_own);
	x->pass_tokens = x->pass_reqs = NULL;
	x->pass_own = NULL;
	free(x->hist);
	free(x->key_scratch);
	x->key_scratch = NULL;
	x->key_scratch_cap = 0;
	for (uint32_t k = 0; k < x->model->nsegments; k++) {
		if (x->seg_pre)
			free(x->seg_pre[k]);
		if (x->seg_keys)
			free(x->seg_keys[k]);
	}
	free(x->seg_pre);
	free(x->seg_keys);
	free(x->nseg_keys);
	free(x->seg_key_cap);
	x->seg_pre = NULL;
	x->seg_keys = NULL;
	x->nseg_keys = x->seg_key_cap = NULL;
	x->price_ns = NULL;
	x->hist = NULL;
	x->hist_cap = 0;
	x->rems = NULL;
	x->cells = NULL;
	x->nrems = x->rem_cap = x->cap = x->runs = NULL;
}

/* Records that one request has runs remaining runs of type t, a cell each. */
static int slk_exact_add_runs(struct slk_exact *x, uint32_t t, uint32_t runs)
{
	if (x->nrems[t] == x->rem_cap[t]) {
		size_t cap = x->rem_cap[t];
		if (GROW(x->rems[t], cap, cap + 1, 64) != 0 || cap > UINT32_MAX)
			return -1;
		x->rem_cap[t] = (uint32_t)cap;
	}
	x->rems[t][x->nrems[t]++] = runs;
	return 0;
}

/* Adds c cells to runs [from, to) of tree type t (difference form). */
static int slk_exact_add(struct slk_exact *x, uint32_t t, uint32_t from, uint32_t to, int64_t c)
{
	if (to + 1 > x->cap[t]) {
		size_t cap = x->cap[t];
		if (GROW(x->cells[t], cap, (size_t)to + 1, 16) != 0 || cap > UINT32_MAX)
			return -1;
		memset(x->cells[t] + x->cap[t], 0, (cap - x->cap[t]) * sizeof *x->cells[t]);
		x->cap[t] = (uint32_t)cap;
	}
	x->cells[t][from] += c;
	x->cells[t][to] -= c;
	if (to > x->runs[t])
		x->runs[t] = to;
	return 0;
}

/* Records that one request has passes passes of repeating segment s left,
 * the first from position idx (its types before idx ran in it). */
static int slk_exact_add_key(struct slk_exact *x, uint32_t s, uint64_t passes, uint64_t idx)
{
	if (x->nseg_keys[s] == x->seg_key_cap[s]) {
		size_t cap = x->seg_key_cap[s];
		if (GROW(x->seg_keys[s], cap, cap + 1, 64) != 0 || cap > UINT32_MAX)
			return -1;
		x->seg_key_cap[s] = (uint32_t)cap;
	}
	/* ascending keys: most passes left first, then the earliest position */
	x->seg_keys[s][x->nseg_keys[s]++] = (uint64_t)(UINT32_MAX - (uint32_t)passes) << 32 | idx;
	return 0;
}

/* One request's remaining runs of every node type, from its position: a
 * repeating segment's as one key (by_segment) or a count a type. */
static int slk_exact_add_request(struct slk_exact *x, const struct pol_request *r, int by_segment)
{
	const struct mdl_model *m = x->model;
	uint64_t pos = r->next_node, seg_start = 0;
	for (uint32_t s = 0; s < m->nsegments; s++) {
		const struct mdl_segment *seg = &m->segments[s];
		uint64_t reps = mdl_segment_repeats(seg->kind, r->input_len, r->output_len);
		uint64_t span = (uint64_t)seg->nnodes * reps;
		if (pos >= span) {          /* a segment already run (or never run) */
			pos -= span;
			seg_start += span;
			continue;
		}
		uint64_t pass = pos / seg->nnodes, idx = pos % seg->nnodes;
		if (seg->kind == MDL_PASS) {
			/* one run each, all of the request's tokens, and its own attention */
			for (uint32_t j = (uint32_t)idx; j < seg->nnodes; j++) {
				uint32_t t = seg->first_node + j;
				x->pass_tokens[t] += r->input_len;
				x->pass_reqs[t]++;
				x->pass_own[t] = pol_pass_part_add(x->pass_own[t], x->lat.member_part(x->lat.ctx, t, r->input_len), 1);
			}
			pos = 0;
			seg_start += span;
			continue;
		}
		if (by_segment && x->seg_pre[s]) {
			if (slk_exact_add_key(x, s, reps - pass, idx) != 0)
				return -1;
			pos = 0;
			seg_start += span;
			continue;
		}
		int tree = seg->kind == MDL_LEAF || seg->kind == MDL_INTERNAL;
		for (uint32_t j = 0; j < seg->nnodes; j++) {
			uint64_t from = pass + (j < idx ? 1 : 0);   /* first repetition still to run */
			uint32_t t = seg->first_node + j;
			if (from >= reps)
				continue;
			if (!tree) {
				if (slk_exact_add_runs(x, t, (uint32_t)(reps - from)) != 0)
					return -1;
				continue;
			}
			for (uint64_t q = from; q < reps; q++) {
				uint32_t c = mdl_cells_at(m, seg_start + q * seg->nnodes + j, r->input_len, r->output_len);
				if (slk_exact_add(x, t, (uint32_t)(q - from), (uint32_t)(q - from + 1), c) != 0)
					return -1;
			}
		}
		pos = 0;                    /* later segments run from their start */
		seg_start += span;
	}
	return 0;
}

/* A pass node run by reqs requests of tokens tokens in all, own being their
 * own parts, summed, in batches of at most max_cells requests; when there
 * are more, the batches share the tokens and own parts evenly (the drain
 * knows their sums, not each one). */
static int64_t slk_exact_pass_price(const struct slk_exact *x, uint32_t t, uint64_t tokens, uint64_t reqs,
                                    struct pol_pass_part own)
{
	if (reqs <= x->max_cells)
		return pol_pass_part_ns(pol_pass_part_add(own, x->lat.pass_part(x->lat.ctx, t, tokens), 1));
	int64_t ns = 0;
	for (uint64_t done = 0, left = tokens; done < reqs; done += x->max_cells) {
		uint64_t n = reqs - done < x->max_cells ? reqs - done : x->max_cells;
		uint64_t k = done + n == reqs ? left : tokens * n / reqs;
		struct pol_pass_part share = { own.main_ns * (int64_t)n / (int64_t)reqs, own.side_ns * (int64_t)n / (int64_t)reqs };
		ns = ns_add(ns, pol_pass_part_ns(pol_pass_part_add(share, x->lat.pass_part(x->lat.ctx, t, k), 1)));
		left -= k;
	}
	return ns;
}

static int64_t slk_exact_drain(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n, int keep);

/* The types [from, to) of segment s, each at c cells (split as slk_exact_price). */
static int64_t slk_exact_range_ns(const struct slk_exact *x, uint32_t s, uint64_t c, uint32_t from, uint32_t to)
{
	const int64_t *pre = x->seg_pre[s];
	size_t w = (size_t)x->model->segments[s].nnodes + 1;
	if (c <= x->max_cells)
		return pre[c * w + to] - pre[c * w + from];
	size_t max = x->max_cells, rest = c % max;
	return ns_add(ns_mul(pre[max * w + to] - pre[max * w + from], (int64_t)(c / max)),
	              pre[rest * w + to] - pre[rest * w + from]);
}

static int slk_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Grows x->hist to n counters, zeroed; 0 or -1. */
static int slk_exact_zeroed_hist(struct slk_exact *x, size_t n)
{
	if (n > x->hist_cap) {
		uint32_t *h = realloc(x->hist, n * sizeof *h);
		if (!h)
			return -1;
		x->hist = h;
		x->hist_cap = (uint32_t)n;
	}
	memset(x->hist, 0, n * sizeof *x->hist);
	return 0;
}

/* Sorts a segment's m keys ascending: an insertion sort for a few; for
 * many (a large max batch), two counting passes, by position (nn of them)
 * and then, stably, by passes left, unless those span too far for a
 * histogram to pay. 0 or -1 (out of memory). */
static int slk_exact_sort_keys(struct slk_exact *x, uint64_t *key, uint32_t m, uint32_t nn)
{
	if (m <= 32) {
		insertion_sort_u64(key, m);
		return 0;
	}
	uint32_t lo = UINT32_MAX, hi = 0;
	for (uint32_t i = 0; i < m; i++) {
		uint32_t h = (uint32_t)(key[i] >> 32);
		lo = h < lo ? h : lo;
		hi = h > hi ? h : hi;
	}
	uint64_t range = (uint64_t)hi - lo + 1;
	if (range > 4 * (uint64_t)m + 64) {
		qsort(key, m, sizeof *key, slk_cmp_u64);
		return 0;
	}
	if (m > x->key_scratch_cap) {
		uint64_t *a = realloc(x->key_scratch, (size_t)m * sizeof *a);
		if (!a)
			return -1;
		x->key_scratch = a;
		x->key_scratch_cap = m;
	}
	uint64_t *tmp = x->key_scratch;
	if (slk_exact_zeroed_hist(x, (size_t)nn + 1) != 0)
		return -1;
	for (uint32_t i = 0; i < m; i++)
		x->hist[(uint32_t)key[i] + 1]++;
	for (uint32_t v = 1; v <= nn; v++)
		x->hist[v] += x->hist[v - 1];
	for (uint32_t i = 0; i < m; i++)
		tmp[x->hist[(uint32_t)key[i]]++] = key[i];
	if (slk_exact_zeroed_hist(x, (size_t)range + 1) != 0)
		return -1;
	for (uint32_t i = 0; i < m; i++)
		x->hist[(uint32_t)(tmp[i] >> 32) - lo + 1]++;
	for (uint64_t v = 1; v <= range; v++)
		x->hist[v] += x->hist[v - 1];
	for (uint32_t i = 0; i < m; i++)
		key[x->hist[(uint32_t)(tmp[i] >> 32) - lo]++] = tmp[i];
	return 0;
}

/* Segment s's part of the drain from its keys: the same sum as type by
 * type. A request with B passes left from position a has B runs left of
 * the types at a and after, B - 1 of those before. So at level k (the k-th
 * remaining run of each type) type j batches the requests with B > k and
 * those with B = k and a <= j: where no request has B = k every type
 * batches the same requests (a whole pass at one batch), and at a level
 * that some have, the segment splits at their positions. Keys sorted, the
 * sum is one term a level holding requests and one a gap between them. */
static int64_t slk_exact_segment_ns(struct slk_exact *x, uint32_t s)
{
	uint64_t *key = x->seg_keys[s];
	uint32_t m = x->nseg_keys[s], nn = x->model->segments[s].nnodes;
	x->nseg_keys[s] = 0;
	if (slk_exact_sort_keys(x, key, m, nn) != 0)
		return -1;
	int64_t total = 0;
	uint64_t above = 0;                  /* requests with more passes left than the level */
	for (uint32_t i = 0; i < m;) {
		uint32_t b = UINT32_MAX - (uint32_t)(key[i] >> 32), e = i;
		while (e < m && key[e] >> 32 == key[i] >> 32)
			e++;
		/* level b: types [a_q, a_q+1) batch the q level-b requests at or before them */
		uint32_t from = 0;
		for (uint32_t q = 0; q <= e - i; q++) {
			uint32_t to = q < e - i ? (uint32_t)key[i + q] : nn;
			if (to > from)
				total = ns_add(total, slk_exact_range_ns(x, s, above + q, from, to));
			from = to;
		}
		above += e - i;
		/* levels below b down to the next request's: whole passes of the requests so far */
		uint32_t next = e < m ? UINT32_MAX - (uint32_t)(key[e] >> 32) : 0;
		if (b - next > 1)
			total = ns_add(total, ns_mul(slk_exact_range_ns(x, s, above, 0, nn), b - next - 1));
		i = e;
	}
	return total;
}

/* One type's part of the drain from a histogram of the remaining counts:
 * level k's run batches c(k) = #{counts > k} requests, so the part is the
 * sum over v >= 1 of price(#{counts >= v}), the same sum the sorted counts
 * give; the counts are left sorted, decreasing (a counting sort). -1 when
 * the counts reach too far for a histogram to pay (or it cannot grow):
 * the caller sorts. */
static int64_t slk_exact_counted_ns(struct slk_exact *x, uint32_t t)
{
	uint32_t m = x->nrems[t], top = 0;
	const uint32_t *r = x->rems[t];
	for (uint32_t i = 0; i < m; i++)
		if (r[i] > top)
			top = r[i];
	if (top > 4 * m + 64)
		return -1;
	if (slk_exact_zeroed_hist(x, (size_t)top + 1) != 0)
		return -1;
	for (uint32_t i = 0; i < m; i++)
		x->hist[r[i]]++;
	int64_t ns = 0;
	uint32_t c = 0, *sorted = x->rems[t];
	for (uint32_t v = top; v >= 1; v--) {
		for (uint32_t k = 0; k < x->hist[v]; k++)
			sorted[c + k] = v;
		c += x->hist[v];
		ns = ns_add(ns, slk_exact_price(x, t, c));
	}
	return ns;
}

int64_t slk_exact_drain_ns(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n)
{
	return slk_exact_drain(x, reqs, n, 0);
}

int64_t slk_exact_walk_begin(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n)
{
	return slk_exact_drain(x, reqs, n, 1);
}

int64_t slk_exact_walk_step(struct slk_exact *x, uint32_t t, uint32_t v)
{
	/* the last of the counts equal to v (sorted decreasing): c(v-1), the
	 * runs batched at the (v-1)-th remaining run, falls from p + 1 to p */
	const uint32_t *r = x->rems[t];
	uint32_t lo = 0, hi = x->nrems[t];       /* r[i] >= v for i < lo; r[i] < v for i >= hi */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (r[mid] >= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	uint32_t p = lo - 1;
	x->rems[t][p] = v - 1;
	return slk_exact_price(x, t, p) - slk_exact_price(x, t, p + 1);
}

void slk_exact_walk_end(struct slk_exact *x)
{
	for (uint32_t t = 0; t < x->model->nnodes; t++)
		x->nrems[t] = 0;
}

/* Type t's part of the drain from its counts, pass tokens or tree cells,
 * cleared for the next call (the counts are kept, sorted, for the walk). */
static int64_t slk_exact_type_ns(struct slk_exact *x, uint32_t t, int keep)
{
	int64_t total = 0;
	if (x->pass_reqs[t]) {
		total = slk_exact_pass_price(x, t, x->pass_tokens[t], x->pass_reqs[t], x->pass_own[t]);
		x->pass_tokens[t] = x->pass_reqs[t] = 0;
		x->pass_own[t] = (struct pol_pass_part){ 0, 0 };
	}
	/* One cell a run: the k-th run batches every request with more than
	 * k runs left. With the counts sorted in decreasing order r1 >= r2
	 * >= ... >= rm (r(m+1) = 0), runs r(j+1)+1 .. r(j) hold j cells. */
	uint32_t m = x->nrems[t], *r = x->rems[t];
	int64_t counted_ns = m > 8 ? slk_exact_counted_ns(x, t) : -1;
	if (counted_ns >= 0) {
		/* the same sum from a histogram of the counts, cheaper than sorting many */
		total = ns_add(total, counted_ns);
		m = 0;
	}
	for (uint32_t i = 1; i < m; i++) {
		uint32_t v = r[i], j = i;
		for (; j > 0 && r[j - 1] < v; j--)
			r[j] = r[j - 1];
		r[j] = v;
	}
	for (uint32_t j = 1; j <= m; j++) {
		uint32_t next = j < m ? r[j] : 0;
		if (r[j - 1] > next)
			total = ns_add(total, ns_mul(slk_exact_price(x, t, j), (int64_t)(r[j - 1] - next)));
	}
	if (!keep)
		x->nrems[t] = 0;
	if (!x->runs[t])
		return total;
	int64_t cells = 0;
	for (uint32_t k = 0; k < x->runs[t]; k++) {
		cells += x->cells[t][k];
		if (cells > 0)
			total = ns_add(total, slk_exact_price(x, t, cells));
	}
	/* clear for the next call: runs[t] + 1 slots were touched */
	memset(x->cells[t], 0, (size_t)(x->runs[t] + 1) * sizeof *x->cells[t]);
	x->runs[t] = 0;
	return total;
}

static int64_t slk_exact_drain(struct slk_exact *x, struct pol_request *const *reqs, uint32_t n, int keep)
{
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++)
		rc = slk_exact_add_request(x, reqs[i], !keep);    /* the walk steps a count a type */
	int64_t total = 0;
	for (uint32_t k = 0; k < x->model->nsegments; k++) {
		const struct mdl_segment *seg = &x->model->segments[k];
		if (!keep && x->seg_pre[k]) {
			int64_t part = x->nseg_keys[k] ? slk_exact_segment_ns(x, k) : 0;
			if (part < 0)
				rc = -1;
			else
				total = ns_add(total, part);
			continue;
		}
		for (uint32_t t = seg->first_node; t < seg->first_node + seg->nnodes; t++)
			total = ns_add(total, slk_exact_type_ns(x, t, keep));
	}
	if (rc != 0 && keep)
		slk_exact_walk_end(x);
	return rc == 0 ? total : -1;
}
