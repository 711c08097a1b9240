/* hwmodels/gpu_measured.c: an LLM iteration priced from a GPU's measured
 * operator profile (see gpu_measured.h for what is priced and why). */
#include "gpu_measured.h"
#include "../util/errkind.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "calibrated.h"   /* calhw_tables_dir, and the calibrated model node-level work is priced by */
#include "gpu_moe.h"      /* a mixture of experts' layers */

struct gpu_measured {
	struct hw_model base;
	struct gpu_measured_info info;
	struct op_profile *prof;          /* owned */
	struct opp_collective *ar;         /* owned; NULL when none was measured; ... */
	size_t ar_first, ar_rows;         /* ... its rows at --tp, found once */
	struct hw_device dev;             /* the replica: tp GPUs */
	uint32_t layers;
	double head_per_up;               /* LM head / MLP up projection at equal rows */
	double pair_flops;                /* a query-key pair's FLOPs in one layer on one GPU */
	double kv_token_bytes;            /* a token's keys and values in one layer on one GPU */
	uint32_t max_cached;              /* token counts priced ahead: the profile's last row */
	double *op_s, *ar_s, *emb_s;      /* [max_cached + 1]: a layer's operators, its all-reduces, emb ... */
	double *head_s;                   /* ... and the LM head, at that many rows (tokens emitted) ... */
	double *layers_ar_s;              /* ... and every layer's operators plus its all-reduces, summed as
	                                   * iter_cost sums them (gpu_decode_cost) */
	/* the serving engine's terms (hw_set_engine; engine_profile.h), none without one */
	const struct eng_profile *eng;    /* not owned; NULL: the GPU's kernels alone */
	struct opp_collective *ar_algo[2]; /* owned: custom all-reduce and symmetric memory curves, or NULL */
	size_t ar_algo_first[2], ar_algo_rows[2];
	uint32_t graph_cap;               /* the largest captured CUDA-graph size; 0: none */
	char tables_dir[1024];            /* where the all-reduce curves lie */
	double eager_launches, piecewise_launches;   /* host launches of an eager and a piecewise iteration */
	struct gpu_moe *moe;              /* owned; a mixture of experts' layers, NULL for a dense model */
};

static void gpu_close(struct hw_model *hw);

const struct gpu_measured_info *gpu_measured_info(const struct hw_model *hw)
{
	if (hw->ops->close != gpu_close)   /* every measured GPU's ops, named or a file, close so */
		return NULL;
	return &((const struct gpu_measured *)hw)->info;
}

/* Whether the profile prices term (an opp_op or opp_term) at 0 (# exclude). */
static int gpu_excluded(const struct gpu_measured *g, unsigned term)
{
	return (g->prof->exclude >> term) & 1u;
}

/* A layer's operators (every one but the embedding) at t tokens, in s. */
static double gpu_layer_ops_s(const struct gpu_measured *g, double t, int *extrapolated)
{
	double ms = 0;
	for (int op = OPP_INPUT_NORM; op < OPP_COUNT; op++)
		if (!gpu_excluded(g, (unsigned)op))
			ms += opp_curve_ms(g->info.curve, (enum opp_op)op, t, extrapolated);
	return ms * OPP_S_PER_MS;
}

/* The LM head over rows tokens: the MLP's up projection's curve at those rows, scaled by the
 * weights' ratio (head_per_up). */
static double gpu_head_s(const struct gpu_measured *g, uint32_t rows)
{
	int ignored = 0;
	return opp_curve_ms(g->info.curve, OPP_MLP_UP, rows, &ignored) * OPP_S_PER_MS * g->head_per_up;
}

static double gpu_allreduce_s(const struct gpu_measured *g, double t, int *extrapolated)
{
	if (g->info.tp == 1 || gpu_excluded(g, OPP_TERM_ALLREDUCE))
		return 0;
	double bytes = t * g->base.model->llm.hidden * g->base.model->llm.elem_bytes;
	/* two all-reduces of the activations a layer, after attention and after the MLP: Megatron-LM's
	 * tensor parallelism (Shoeybi et al., 2019, Sec. 3), as vLLM and Vidur split a layer; with an
	 * engine, by the algorithm it picks at that size, NCCL (Vidur's rows) where that one has no rows */
	if (g->eng) {
		enum eng_ar_algo a = eng_allreduce_algo(g->eng, g->info.tp, bytes);
		if (a != ENG_AR_NCCL && g->ar_algo_rows[a])
			return 2 * opp_collective_rows_ms(g->ar_algo[a], g->ar_algo_first[a], g->ar_algo_rows[a], bytes,
			                                  extrapolated) * OPP_S_PER_MS;
	}
	return 2 * opp_collective_rows_ms(g->ar, g->ar_first, g->ar_rows, bytes, extrapolated) * OPP_S_PER_MS;
}

/* An iteration's parts from its sums: total rows (pad included), the
 * query-key pairs of its multi-token members, the cached tokens its
 * one-token members read. */
static void gpu_parts_of(const struct gpu_measured *g, uint64_t total, uint64_t rows, double pairs,
                         double read_tokens, uint32_t emitting, uint32_t pad, uint64_t key, struct gpu_iter_parts *out)
{
	const struct opp_curve *c = g->info.curve;
	memset(out, 0, sizeof *out);
	if (g->moe) {   /* a mixture of experts: its layers from their parts (gpu_moe.h), the rest as a dense model's */
		int ignored = 0;
		out->extrapolated = rows > g->max_cached;
		out->layers_s = gpu_moe_layers_s(g->moe, rows, key);
		out->allreduce_s = (rows <= g->max_cached ? g->ar_s[rows] : gpu_allreduce_s(g, (double)rows, &ignored)) *
		                   g->layers;
		out->emb_s = gpu_excluded(g, OPP_EMB) ? 0 : gpu_moe_emb_s(g->moe, rows);
	} else if (rows <= g->max_cached) {
		out->layers_s = g->op_s[rows] * g->layers;
		out->allreduce_s = g->ar_s[rows] * g->layers;
		out->emb_s = g->emb_s[rows];
	} else {
		out->extrapolated = 1;
		int ignored = 0;
		out->layers_s = gpu_layer_ops_s(g, (double)rows, &ignored) * g->layers;
		out->allreduce_s = gpu_allreduce_s(g, (double)rows, &ignored) * g->layers;
		out->emb_s = gpu_excluded(g, OPP_EMB) ? 0 : opp_curve_ms(c, OPP_EMB, (double)rows, &ignored) * OPP_S_PER_MS;
	}
	if (!gpu_excluded(g, OPP_TERM_ATTN_PREFILL))
		out->prefill_attn_s = pairs * g->pair_flops / g->prof->gemm_flops_s * g->layers;
	if (!gpu_excluded(g, OPP_TERM_ATTN_DECODE))
		out->decode_attn_s = (read_tokens + (double)(total - pad)) * g->kv_token_bytes / g->prof->stream_bytes_s *
		                     g->layers;
	if (emitting && !gpu_excluded(g, OPP_TERM_LM_HEAD))
		out->head_s = g->moe ? gpu_moe_head_s(g->moe, emitting)
		              : emitting <= g->max_cached ? g->head_s[emitting] : gpu_head_s(g, emitting);
}

/* A MoE iteration's routing key: its shape (rows, members, cached tokens), the same whether the iteration is
 * priced from its members (iter_cost) or from their sums (decode_cost). */
static uint64_t gpu_routing_key(uint64_t total, uint32_t n, uint64_t context_sum)
{
	return total * 0x9e3779b97f4a7c15ull ^ (uint64_t)n * 0xc2b2ae3d27d4eb4full ^ context_sum * 0x165667b19e3779f9ull;
}

/* With an engine (engine_profile.h): the rows an iteration of total tokens runs at (a captured CUDA
 * graph's size when it fits one; 0 when it runs eagerly), and the host launches it waits for. */
static uint64_t gpu_engine_rows(const struct gpu_measured *g, uint64_t total, int uniform_decode, double *launches)
{
	uint32_t p = g->graph_cap && total <= g->graph_cap ? eng_graph_pad((uint32_t)total, g->graph_cap) : 0;
	/* vLLM V1's FULL_AND_PIECEWISE graphs: a uniform decode batch replays one whole graph (one launch),
	 * another batch the pieces between its layers' attention kernels, which it launches eagerly */
	*launches = p ? (uniform_decode ? 1 : g->piecewise_launches) : g->eager_launches;
	return p && g->eng->use_padding ? p : total;
}

/* An iteration's parts (its rows as the engine pads them) and the host's launch time, the least it takes. */
static double gpu_priced_s(const struct gpu_measured *g, uint64_t total, double pairs, double read_tokens,
                           uint32_t emitting, uint32_t pad, int uniform_decode, uint64_t key, struct gpu_iter_parts *out)
{
	double launches = 0;
	uint64_t rows = g->eng ? gpu_engine_rows(g, total, uniform_decode, &launches) : total;
	gpu_parts_of(g, total, rows, pairs, read_tokens, emitting, pad, key, out);
	double s = out->layers_s + out->allreduce_s + out->prefill_attn_s + out->decode_attn_s + out->emb_s +
	           out->head_s;
	double host = g->eng && g->eng->use_launch ? launches * g->eng->launch_s : 0;
	return host > s ? host : s;
}

void gpu_measured_iter_parts(const struct hw_model *hw, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                             uint32_t emitting, uint32_t pad, struct gpu_iter_parts *out)
{
	double pairs = 0, read_tokens = 0;
	uint64_t total = pad, context_sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		total += tokens[i];
		context_sum += context[i];
		/* causal attention of a prompt chunk of T tokens after C cached ones: token j (1..T) attends
		 * to C + j keys, T C + T (T + 1) / 2 query-key pairs in all */
		if (tokens[i] > 1)
			pairs += (double)tokens[i] * context[i] + (double)tokens[i] * (tokens[i] + 1) / 2.0;
		else
			read_tokens += context[i];
	}
	gpu_parts_of((const struct gpu_measured *)hw, total, total, pairs, read_tokens, emitting, pad,
	             gpu_routing_key(total, n, context_sum), out);
}

static double gpu_parts_sum(const struct gpu_iter_parts *p)
{
	return p->layers_s + p->allreduce_s + p->prefill_attn_s + p->decode_attn_s + p->emb_s + p->head_s;
}

static double gpu_iter_cost(const struct hw_model *hw, uint32_t n, const uint32_t *tokens, const uint32_t *context,
                            uint32_t emitting, uint32_t pad)
{
	const struct gpu_measured *g = (const struct gpu_measured *)hw;
	struct gpu_iter_parts p;
	if (!g->eng) {
		gpu_measured_iter_parts(hw, n, tokens, context, emitting, pad, &p);
		return gpu_parts_sum(&p);
	}
	double pairs = 0, read_tokens = 0;
	uint64_t total = pad, context_sum = 0;
	int uniform = pad == 0;
	for (uint32_t i = 0; i < n; i++) {   /* as gpu_measured_iter_parts sums them */
		total += tokens[i];
		context_sum += context[i];
		if (tokens[i] > 1) {
			pairs += (double)tokens[i] * context[i] + (double)tokens[i] * (tokens[i] + 1) / 2.0;
			uniform = 0;
		} else
			read_tokens += context[i];
	}
	return gpu_priced_s(g, total, pairs, read_tokens, emitting, pad, uniform, gpu_routing_key(total, n, context_sum),
	                    &p);
}

/* n one-token members on context_sum cached tokens in all: iter_cost's sums, read_tokens exact as
 * iter_cost adds it (whole numbers below 2^53), no pairs, every member emitting. */
static double gpu_decode_cost(const struct hw_model *hw, uint32_t n, uint64_t context_sum)
{
	const struct gpu_measured *g = (const struct gpu_measured *)hw;
	struct gpu_iter_parts p;
	if (g->eng)
		return gpu_priced_s(g, n, 0, (double)context_sum, n, 0, 1, gpu_routing_key(n, n, context_sum), &p);
	if (n > g->max_cached || g->moe) {
		gpu_parts_of(g, n, n, 0, (double)context_sum, n, 0, gpu_routing_key(n, n, context_sum), &p);
		return gpu_parts_sum(&p);
	}
	/* gpu_parts_sum's terms in its order, from the cached rows: layers and all-reduces (plus the prefill
	 * attention's 0), the decode attention as gpu_parts_of computes it, the embedding, the head */
	double decode = gpu_excluded(g, OPP_TERM_ATTN_DECODE) ? 0 :
	                ((double)context_sum + (double)n) * g->kv_token_bytes / g->prof->stream_bytes_s * g->layers;
	double head = gpu_excluded(g, OPP_TERM_LM_HEAD) ? 0 : g->head_s[n];
	return g->layers_ar_s[n] + decode + g->emb_s[n] + head;
}

static int gpu_node_cost(const struct hw_model *hw, uint32_t t, uint32_t b, struct hw_node_cost *out, char *err,
                         size_t errlen)
{
	(void)t;
	(void)b;
	(void)out;
	snprintf(err, errlen, "hw %s prices LLM iterations from operator profiles, not nodes", hw->label);
	return -1;
}

static void gpu_device(const struct hw_model *hw, struct hw_device *out)
{
	*out = ((const struct gpu_measured *)hw)->dev;
}

static void gpu_close(struct hw_model *hw)
{
	struct gpu_measured *g = (struct gpu_measured *)hw;
	if (!g)
		return;
	opp_free(g->prof);
	opp_collective_free(g->ar);
	opp_collective_free(g->ar_algo[0]);
	opp_collective_free(g->ar_algo[1]);
	free(g->op_s);
	free(g->ar_s);
	free(g->emb_s);
	free(g->head_s);
	free(g->layers_ar_s);
	gpu_moe_free(g->moe);
	free(g);
}

/* The shapes a profile holds at tp 1, for the message when the model's is not among them. */
static void gpu_list_shapes(const struct op_profile *p, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < p->ncurves && used < len; i++) {
		const struct opp_curve *c = &p->curves[i];
		if (c->tp != 1 && i > 0 && strcmp(p->curves[i - 1].profiled_as, c->profiled_as) == 0)
			continue;
		used += (size_t)snprintf(buf + used, len - used, "%s%s (%u/%u/%u/%u)", used ? ", " : "", c->profiled_as,
		                         c->shape.hidden, c->shape.heads, c->shape.kv_heads, c->shape.ffn);
	}
}

/* The tp degrees at which p holds shape s, as "1, 2, 4". */
static void gpu_list_tps(const struct op_profile *p, const struct opp_shape *s, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < p->ncurves && used < len; i++)
		if (p->curves[i].shape.hidden == s->hidden && p->curves[i].shape.heads == s->heads &&
		    p->curves[i].shape.kv_heads == s->kv_heads && p->curves[i].shape.ffn == s->ffn &&
		    p->curves[i].shape.gated == s->gated)
			used += (size_t)snprintf(buf + used, len - used, "%s%u", used ? ", " : "", p->curves[i].tp);
}

/* The curve of the model's shape (the vocabulary aside: it sizes only the
 * embedding lookup and the LM head, which are priced apart). */
static const struct opp_curve *gpu_find_curve(const struct op_profile *p, const struct mdl_llm *l, uint32_t tp)
{
	for (size_t i = 0; i < p->ncurves; i++) {
		const struct opp_curve *c = &p->curves[i];
		if (c->tp == tp && c->shape.hidden == l->hidden && c->shape.heads == l->heads &&
		    c->shape.kv_heads == l->kv_heads && c->shape.ffn == l->ffn && c->shape.gated == l->gated)
			return c;
	}
	return NULL;
}

int hw_tp_supported(uint32_t tp, char *err, size_t errlen)
{
	if (!opp_tp_supported(tp)) {
		snprintf(err, errlen, "--tp=%u: tensor parallelism must be 1, 2, 4 or 8 GPUs", tp);
		return -1;
	}
	return 0;
}

static int gpu_check_tp(const struct mdl_model *m, uint32_t tp, char *err, size_t errlen)
{
	const struct mdl_llm *l = &m->llm;
	if (hw_tp_supported(tp, err, errlen) != 0)
		return -1;
	if (l->heads % tp != 0) {
		snprintf(err, errlen, "--tp=%u does not divide %s's %u attention heads", tp, m->name, l->heads);
		return -1;
	}
	if (l->kv_heads % tp != 0 && tp % l->kv_heads != 0) {
		snprintf(err, errlen, "--tp=%u and %s's %u KV heads neither divide the other", tp, m->name, l->kv_heads);
		return -1;
	}
	return 0;
}

/* The table's path for a registered name ("gpu-h100" -> DIR/ops-h100.csv),
 * or for an operator profile file its all-reduce file beside it. */
static int gpu_table_path(char *buf, size_t len, const char *dir, const char *kind, const char *gpu)
{
	int n = snprintf(buf, len, "%s/%s-%s.csv", dir, kind, gpu);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int gpu_fill_cache(struct gpu_measured *g)
{
	const struct opp_curve *c = g->info.curve;
	g->max_cached = opp_curve_max_tokens(c);
	size_t n = (size_t)g->max_cached + 1;
	g->op_s = calloc(n, sizeof *g->op_s);
	g->ar_s = calloc(n, sizeof *g->ar_s);
	g->emb_s = calloc(n, sizeof *g->emb_s);
	g->head_s = calloc(n, sizeof *g->head_s);
	g->layers_ar_s = calloc(n, sizeof *g->layers_ar_s);
	if (!g->op_s || !g->ar_s || !g->emb_s || !g->head_s || !g->layers_ar_s)
		return -1;
	for (uint32_t t = 1; t <= g->max_cached; t++) {
		int ignored = 0;
		g->op_s[t] = gpu_layer_ops_s(g, t, &ignored);
		g->ar_s[t] = gpu_allreduce_s(g, t, &ignored);
		g->emb_s[t] = gpu_excluded(g, OPP_EMB) ? 0 : opp_curve_ms(c, OPP_EMB, t, &ignored) * OPP_S_PER_MS;
		g->head_s[t] = gpu_head_s(g, t);
		g->layers_ar_s[t] = g->op_s[t] * g->layers + g->ar_s[t] * g->layers;
	}
	return 0;
}

static int gpu_open_profile(const struct hw_ops *ops, const char *arg, const char *ops_path, const char *dir,
                            const struct mdl_model *m, uint32_t tp, struct hw_model **out, char *err, size_t errlen)
{
	*out = NULL;
	if (!m || !m->is_llm) {
		snprintf(err, errlen, "hw %s prices LLM iterations from measured operator profiles; model %s is not an LLM "
		         "(node-level models run on npu, gpu-h100-roofline, cpu or a calibration table)", arg,
		         m ? m->name : "(none)");
		return -1;
	}
	if (gpu_check_tp(m, tp, err, errlen) != 0)
		return -1;
	const struct mdl_llm *l = &m->llm;
	if (l->dtype == MDL_DTYPE_FP8 || l->kv_dtype == MDL_DTYPE_FP8) {
		snprintf(err, errlen, "model %s has FP8 %s; hw %s's tables are fp16 (Vidur's profiles): pricing FP8 needs the "
		         "GPU's FP8 GEMMs measured into an operator profile (scripts/vidur-import's format), which no table "
		         "holds yet", m->name, l->dtype == MDL_DTYPE_FP8 ? "weights" : "KV cache", arg);
		return -1;
	}
	/* bf16 is priced as fp16: both run on the tensor cores at one rate (H100 SXM datasheet: 989 TFLOPS dense for
	 * each), and move the same 2 bytes an element */
	if (l->elem_bytes != 2) {
		snprintf(err, errlen, "hw %s was profiled with 2-byte (fp16) weights; model %s has %u-byte elements", arg,
		         m->name, l->elem_bytes);
		return -1;
	}
	if (!l->moe.experts && (uint64_t)l->heads * l->head_dim != l->hidden) {
		snprintf(err, errlen, "model %s's %u heads of %u do not make its hidden size %u, which an operator profile "
		         "assumes", m->name, l->heads, l->head_dim, l->hidden);
		return -1;
	}
	struct gpu_measured *g = calloc(1, sizeof *g);
	if (!g) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	g->base.ops = ops;
	g->base.model = m;
	snprintf(g->base.label, sizeof g->base.label, "%s", arg);
	if (opp_load(ops_path, &g->prof, err, errlen) != 0)
		goto fail;
	const struct op_profile *p = g->prof;
	char list[1024];
	g->info.profile = p;
	g->info.tp = tp;
	if (l->moe.experts) {   /* priced from its parts (gpu_moe.h) until hw_moe_setup says how it is routed */
		const struct gpu_moe_opts dflt = { .ep = 1, .routing = NULL, .seed = 0 };
		if (gpu_moe_create(p, m, tp, &dflt, &g->moe, err, errlen) != 0)
			goto fail;
		g->info.curve = gpu_moe_curve(g->moe);
		g->info.moe = g->moe;
	} else
		g->info.curve = gpu_find_curve(p, l, tp);
	if (!g->info.curve) {
		struct opp_shape s = { l->hidden, l->heads, l->kv_heads, l->ffn, l->vocab, l->gated };
		gpu_list_tps(p, &s, list, sizeof list);
		if (list[0])
			snprintf(err, errlen, "%s holds %s's shape at tp %s, not at --tp=%u", ops_path, m->name, list, tp);
		else {
			gpu_list_shapes(p, list, sizeof list);
			snprintf(err, errlen, "%s holds no profile of %s's shape (hidden/heads/kv_heads/ffn %u/%u/%u/%u, %s MLP); "
			         "it holds %s (another GPU's table may: calib/tables/ops-*.csv; gpu-h100-roofline is a lower "
			         "bound for any shape)", ops_path, m->name, l->hidden, l->heads, l->kv_heads, l->ffn,
			         l->gated ? "gated" : "plain", list);
		}
		goto fail;
	}
	snprintf(g->tables_dir, sizeof g->tables_dir, "%s", dir);
	if (tp > 1) {
		char ar_path[1024];
		struct stat st;
		if (gpu_table_path(ar_path, sizeof ar_path, dir, "allreduce", p->gpu) != 0) {
			snprintf(err, errlen, "tables directory path too long");
			goto fail;
		}
		if (stat(ar_path, &st) != 0) {
			snprintf(err, errlen, "--tp=%u on %s needs a measured all-reduce, and %s %s", tp, arg, ar_path,
			         errno == ENOENT ? "does not exist (none was measured for this GPU)" : err_strerror(errno));
			goto fail;
		}
		if (opp_allreduce_load(ar_path, &g->ar, err, errlen) != 0)
			goto fail;
		if (!opp_collective_has(g->ar, tp)) {
			snprintf(err, errlen, "%s holds no all-reduce across %u GPUs", ar_path, tp);
			goto fail;
		}
		g->info.has_allreduce = 1;
		opp_collective_rows(g->ar, tp, &g->ar_first, &g->ar_rows);
	}
	const struct gpu_memory_row *mem = gpu_memory_row(p->gpu);
	double gpu_bytes = mem ? mem->device_bytes : p->mem_bytes;
	double usable = gpu_memory_usable_bytes(gpu_bytes), weights = (double)mdl_llm_weight_bytes(l);
	if (weights / tp >= usable) {
		uint32_t need = tp;
		while (need <= 8 && weights / need >= usable)
			need *= 2;
		if (need <= 8)
			snprintf(err, errlen, "%s's weights (%.1f GB) do not fit on %u %s GPU%s (%.1f GB usable each): it needs "
			         "--tp=%u or more", m->name, weights * 1e-9, tp, p->gpu, tp > 1 ? "s" : "", usable * 1e-9, need);
		else
			snprintf(err, errlen, "%s's weights (%.1f GB) do not fit on 8 %s GPUs (%.1f GB usable each)", m->name,
			         weights * 1e-9, p->gpu, usable * 1e-9);
		goto fail;
	}
	g->layers = l->layers;
	double kv_heads_gpu = l->kv_heads >= tp ? (double)l->kv_heads / tp : 1.0;
	g->pair_flops = 4.0 * l->heads / tp * l->head_dim;
	g->kv_token_bytes = 2.0 * kv_heads_gpu * l->head_dim * l->kv_bytes;
	g->head_per_up = (double)l->vocab / ((l->gated ? 2.0 : 1.0) * l->ffn);
	g->dev = (struct hw_device){ .mem_bytes = usable * tp, .mem_bw_bytes_s = p->stream_bytes_s * tp,
	                             .peak_flops = p->gemm_flops_s * tp, .gpus = tp, .gpu_bytes = gpu_bytes,
	                             .gpu_bytes_source = mem ? mem->source : "the profile's # mem_gb" };
	if (gpu_fill_cache(g) != 0) {
		err_memory(err, errlen, "out of memory");
		goto fail;
	}
	*out = &g->base;
	return 0;
fail:
	gpu_close(&g->base);
	return -1;
}

/* An engine's all-reduce curve (kind: "custom" or "symm") for the profile's GPU, when its file exists. */
static int gpu_load_algo(struct gpu_measured *g, int a, const char *kind, char *err, size_t errlen)
{
	char path[1100];
	struct stat st;
	snprintf(path, sizeof path, "%s/allreduce-%s-%s.csv", g->tables_dir, kind, g->prof->gpu);
	if (stat(path, &st) != 0)
		return 0;   /* none measured: the engine's algorithm priced as NCCL */
	if (opp_allreduce_load(path, &g->ar_algo[a], err, errlen) != 0)
		return -1;
	opp_collective_rows(g->ar_algo[a], g->info.tp, &g->ar_algo_first[a], &g->ar_algo_rows[a]);
	return 0;
}

static int gpu_set_engine(struct hw_model *hw, const struct eng_profile *e, uint32_t max_seqs,
                          uint32_t max_batched_tokens, char *err, size_t errlen)
{
	struct gpu_measured *g = (struct gpu_measured *)hw;
	g->eng = e;
	g->graph_cap = e->cuda_graphs ? eng_graph_cap(e, max_seqs, max_batched_tokens) : 0;
	/* an eager iteration launches each layer's kernels and its two all-reduces (tp > 1), the embedding and
	 * the LM head; a piecewise graph's iteration launches each layer's attention and the pieces around them */
	double per_layer = e->kernels_per_layer + (g->info.tp > 1 ? 2.0 : 0.0);
	g->eager_launches = g->layers * per_layer + 2;
	g->piecewise_launches = 2.0 * g->layers + 1;
	if (g->info.tp > 1 && e->use_allreduce_algos && strcmp(e->allreduce_gpu, g->prof->gpu) == 0 &&
	    (gpu_load_algo(g, ENG_AR_CUSTOM, "custom", err, errlen) != 0 ||
	     gpu_load_algo(g, ENG_AR_SYMM, "symm", err, errlen) != 0))
		return -1;
	for (uint32_t t = 1; t <= g->max_cached; t++) {   /* the cached all-reduces, as the engine picks them */
		int ignored = 0;
		g->ar_s[t] = gpu_allreduce_s(g, t, &ignored);
		g->layers_ar_s[t] = g->op_s[t] * g->layers + g->ar_s[t] * g->layers;
	}
	return 0;
}

void gpu_measured_engine_note(const struct hw_model *hw, char *buf, size_t len)
{
	buf[0] = '\0';
	if (!gpu_measured_info(hw) || !((const struct gpu_measured *)hw)->eng)
		return;
	const struct gpu_measured *g = (const struct gpu_measured *)hw;
	const struct eng_profile *e = g->eng;
	size_t used = 0;
	if (g->graph_cap)
		used += (size_t)snprintf(buf, len, "CUDA graphs to %u tokens%s", g->graph_cap,
		                         e->use_padding ? " (padded)" : " (padding off)");
	else
		used += (size_t)snprintf(buf, len, "no CUDA graphs");
	if (used < len)
		used += (size_t)snprintf(buf + used, len - used, ", %s", e->use_launch ? "launches priced" : "launch off");
	if (g->info.tp > 1 && used < len) {
		const char *why = !e->use_allreduce_algos ? "allreduce off"
		                  : strcmp(e->allreduce_gpu, g->prof->gpu) != 0 ? "switch sizes not tabled for this GPU" : NULL;
		if (why)
			snprintf(buf + used, len - used, ", all-reduce NCCL (%s)", why);
		else
			snprintf(buf + used, len - used, ", all-reduce at %u GPUs: custom below %llu B%s, symmetric memory to "
			         "%llu B%s, NCCL above", g->info.tp, (unsigned long long)e->custom_max[g->info.tp],
			         g->ar_algo_rows[ENG_AR_CUSTOM] ? "" : " (no curve: NCCL's)",
			         (unsigned long long)e->symm_max[g->info.tp],
			         g->ar_algo_rows[ENG_AR_SYMM] ? "" : " (no curve: NCCL's)");
	}
}

static int gpu_open_named_tp(const char *arg, const struct mdl_model *m, uint32_t tp, struct hw_model **out,
                             char *err, size_t errlen)
{
	size_t n;
	const struct hw_ops *named = gpu_measured_named(&n), *ops = NULL;
	for (size_t i = 0; i < n; i++)
		if (strcmp(arg, named[i].name) == 0)
			ops = &named[i];
	if (!ops) {   /* the registry opens only the names it lists */
		snprintf(err, errlen, "hw %s is not a measured GPU", arg);
		return -1;
	}
	char path[1024];
	if (gpu_table_path(path, sizeof path, calhw_tables_dir(), "ops", arg + 4) != 0) {
		snprintf(err, errlen, "tables directory path too long");
		return -1;
	}
	if (m && !m->is_llm)
		return gpu_open_node_level(arg, path, m, tp, 1, out, err, errlen);
	return gpu_open_profile(ops, arg, path, calhw_tables_dir(), m, tp, out, err, errlen);
}

static int gpu_moe_setup(struct hw_model *hw, uint32_t ep, const char *routing, uint64_t seed, char *err,
                         size_t errlen)
{
	struct gpu_measured *g = (struct gpu_measured *)hw;
	const struct gpu_moe_opts o = { .ep = ep, .routing = routing, .seed = seed };
	struct gpu_moe *moe;
	if (gpu_moe_create(g->prof, hw->model, g->info.tp, &o, &moe, err, errlen) != 0)
		return -1;
	gpu_moe_free(g->moe);
	g->moe = g->info.moe = moe;
	g->info.curve = gpu_moe_curve(moe);
	return 0;
}

static int gpu_open_named(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	return gpu_open_named_tp(arg, m, 1, out, err, errlen);
}

static int gpu_open_file_tp(const char *arg, const struct mdl_model *m, uint32_t tp, struct hw_model **out,
                            char *err, size_t errlen)
{
	char dir[1024];
	const char *slash = strrchr(arg, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - arg) : 1, slash ? arg : ".");
	if (m && !m->is_llm)
		return gpu_open_node_level(slash ? slash + 1 : arg, arg, m, tp, 0, out, err, errlen);
	int rc = gpu_open_profile(&gpu_file_ops, arg, arg, dir, m, tp, out, err, errlen);
	if (rc == 0) {   /* results name a file model by its basename, as the other file kinds do */
		const char *base = slash ? slash + 1 : arg;
		snprintf((*out)->label, sizeof (*out)->label, "%s", base);
	}
	return rc;
}

static int gpu_open_file(const char *arg, const struct mdl_model *m, struct hw_model **out, char *err, size_t errlen)
{
	return gpu_open_file_tp(arg, m, 1, out, err, errlen);
}

#define GPU_MEASURED_OPS(NAME, HELP, OPEN, OPEN_TP)                                                       \
	{ .name = NAME, .help = HELP, .open = OPEN, .close = gpu_close, .node_cost = gpu_node_cost,        \
	  .device = gpu_device, .iter_cost = gpu_iter_cost, .decode_cost = gpu_decode_cost, .open_tp = OPEN_TP, \
	  .set_engine = gpu_set_engine, .moe_setup = gpu_moe_setup }

const struct hw_ops *gpu_measured_named(size_t *count)
{
	enum { GPU_NAMED_MAX = 32 };
	static struct hw_ops named[GPU_NAMED_MAX];
	static char names[GPU_NAMED_MAX][40];
	static size_t built;
	size_t rows;
	const struct gpu_memory_row *row = gpu_memory_rows(&rows);
	if (rows > GPU_NAMED_MAX) {   /* a mistake in gpu_memory.c, not in the input */
		fprintf(stderr, "simbatch: more than %d GPU rows (hwmodels/gpu_measured.c)\n", GPU_NAMED_MAX);
		abort();
	}
	for (; built < rows; built++) {
		snprintf(names[built], sizeof names[built], "gpu-%s", row[built].gpu);
		named[built] = (struct hw_ops)GPU_MEASURED_OPS(names[built], row[built].help, gpu_open_named,
		                                               gpu_open_named_tp);
	}
	*count = rows;
	return named;
}
const struct hw_ops gpu_file_ops = GPU_MEASURED_OPS(
	"llm operator profile", "FILE: an LLM operator profile (scripts/vidur-import), allreduce-GPU.csv beside it for --tp",
	gpu_open_file, gpu_open_file_tp);
