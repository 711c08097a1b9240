/* runtime/kern_llm.c: the llm kernel family of kernels.h: a decoder-only
 * LLM (an `llm` line, models/FORMAT.md) run by iterations, as the LLM
 * policies schedule it (policies/policy.h, ITER tasks).
 *
 * An iteration lays its members' new positions out as rows, member after
 * member, then the padding rows, and runs every layer on all rows at once:
 *  - the QKV product (query heads, then the key and value heads: grouped-
 *    query attention when there are fewer key/value heads);
 *  - each row's key and value are written into its member's cache at its
 *    position, then each row attends over its member's cache up to and
 *    including its own position (causal), so the rows of one member's
 *    prompt chunk see each other in order;
 *  - the output projection, residual and norm; the MLP (gated: silu(gate) x
 *    up, then down; plain: ReLU), residual and norm.
 * A member whose last position completes its target (rt_iter_member.emit)
 * runs the output projection at that row alone, and the greedy next token
 * (argmax) becomes its next output token, written after its prompt.
 *
 * The layout follows Llama (no biases, grouped-query attention, gated MLP)
 * with two simplifications that change no shape of the work: positions are
 * the sinusoidal table added to the embedding (Vaswani et al. 2017, Sec.
 * 3.5) instead of rotary embeddings, and the norms are layer norms after
 * each residual (the backend's add_layernorm) instead of RMS norms before.
 * Arithmetic is fp32 whatever the model file's element size.
 *
 * Query head h = j * kv_heads + g shares key/value head g (j < heads /
 * kv_heads): the Q columns are laid out so that each j's heads are side by
 * side and the backend's attention runs once per j over the kv_heads.
 *
 * State of a request of prompt I and output O (cap = I + O positions):
 * x[d] (the final hidden vector of its latest emitted token), then per
 * layer its keys [cap x kv] and values [cap x kv], then int32 tokens[cap]:
 * the prompt, then the output tokens as they are generated. A preempted
 * request's positions are simply run again: they read the same tokens and
 * write the same keys and values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "../util/errkind.h"

#define LLM_MAX_LAYERS 256
#define LLM_MAX_WEIGHT_BYTES (4ull << 30)   /* fp32 weights in host memory: llm-tiny takes 0.2 MB */
#define LLM_TAG_TOKENS (1ull << 40)

enum { LLM_W_QKV, LLM_W_O, LLM_W_UP, LLM_W_DOWN, LLM_NW };
enum { LLM_G1, LLM_B1, LLM_G2, LLM_B2, LLM_NB };

struct llm_layer {
	struct rt_weight *w[LLM_NW];
	float *b[LLM_NB];                /* norm gains and shifts */
};

struct rt_model {
	struct rt_model_head h;             /* first: be, dev, m, seed, weight_bytes */
	struct mdl_llm l;                   /* the model file's shapes */
	uint32_t qdim, kvdim, qkv_width, up_width;   /* derived: query and key/value widths, product widths */
	struct llm_layer layer[LLM_MAX_LAYERS];
	struct rt_weight *head;
	float *head_b, *zero_ffn, *emb, *pos;     /* head_b: zeros (no bias); pos: context x d */
};

struct llm_work {
	uint32_t rows;
	float *x, *qkv, *a, *o, *f, *hl, *logits;  /* device batch buffers (hl: the emitting rows) */
	int32_t *zero_tok;                          /* device: the token padding rows embed */
	const int32_t **tok;
	uint32_t *pos, *len;
	float **dst, **dst2;
	const float **kc, **vc, **src;
	int32_t **tok_out;
};

/* ---- shape ---- */

static int llm_shape(const struct mdl_model *m, struct rt_model *km, char *why, size_t len)
{
	memset(km, 0, sizeof *km);
	if (!m->is_llm) {
		snprintf(why, len, "not an LLM (no llm line)");
		return 0;
	}
	const struct mdl_llm *l = &m->llm;
	if (l->layers == 0 || l->layers > LLM_MAX_LAYERS || l->kv_heads == 0 || l->heads % l->kv_heads != 0) {
		snprintf(why, len, "needs 1..%d layers and query heads a multiple of the key/value heads", LLM_MAX_LAYERS);
		return 0;
	}
	km->l = *l;
	km->qdim = l->heads * l->head_dim;
	km->kvdim = l->kv_heads * l->head_dim;
	km->qkv_width = km->qdim + 2 * km->kvdim;
	km->up_width = (km->l.gated ? 2 : 1) * km->l.ffn;
	uint64_t floats = (uint64_t)km->l.layers * ((uint64_t)km->l.hidden * km->qkv_width + (uint64_t)km->qdim * km->l.hidden +
	                                          (uint64_t)km->l.hidden * km->up_width + (uint64_t)km->l.ffn * km->l.hidden) +
	                  2 * (uint64_t)km->l.vocab * km->l.hidden + (uint64_t)km->l.context * km->l.hidden;
	if (floats * sizeof(float) > LLM_MAX_WEIGHT_BYTES) {
		snprintf(why, len, "its weights take %.1f GB in fp32; the live kernels hold at most %.0f GB (a model "
		         "for live runs is small, like llm-tiny)", floats * 4e-9, LLM_MAX_WEIGHT_BYTES * 1e-9);
		return 0;
	}
	return 1;
}

static int llm_match(const struct mdl_model *m, char *why, size_t len)
{
	struct rt_model *km = malloc(sizeof *km);
	if (!km) {
		err_memory(why, len, "out of memory");
		return 0;
	}
	int ok = llm_shape(m, km, why, len);
	free(km);
	return ok;
}

/* ---- weights ---- */

static void llm_destroy(struct rt_model *km)
{
	if (!km)
		return;
	const struct rt_backend_ops *be = km->h.be;
	for (uint32_t l = 0; l < km->l.layers; l++) {
		for (int i = 0; i < LLM_NW; i++)
			be->weight_destroy(km->h.dev, km->layer[l].w[i]);
		rt_kern_free_buffers(be, km->h.dev, km->layer[l].b, LLM_NB);
	}
	be->weight_destroy(km->h.dev, km->head);
	float *v[] = { km->head_b, km->zero_ffn, km->emb, km->pos };
	rt_kern_free_buffers(be, km->h.dev, v, sizeof v / sizeof v[0]);
	free(km);
}

static int llm_weight(struct rt_model *km, uint32_t k, uint32_t n, uint64_t tag, struct rt_weight **out, char *err,
                      size_t errlen)
{
	km->h.weight_bytes += (uint64_t)k * n * sizeof(float);
	return rt_kern_weight(km->h.be, km->h.dev, k, n, 1.0f / sqrtf((float)k), km->h.seed, tag, out, err, errlen);
}

static float *llm_table(struct rt_model *km, size_t n, float offset, float scale, uint64_t tag, char *err,
                        size_t errlen)
{
	km->h.weight_bytes += n * sizeof(float);
	return rt_kern_table(km->h.be, km->h.dev, n, offset, scale, km->h.seed, tag, err, errlen);
}

/* Sinusoidal positions: sin on even, cos on odd dimensions. */
static int llm_positions(struct rt_model *km, char *err, size_t errlen)
{
	size_t n = (size_t)km->l.context * km->l.hidden;
	float *pos = malloc(n * sizeof(float));
	km->pos = km->h.be->alloc(km->h.dev, n * sizeof(float));
	if (!pos || !km->pos) {
		free(pos);
		err_memory(err, errlen, "out of memory for the position table");
		return -1;
	}
	for (uint32_t p = 0; p < km->l.context; p++)
		for (uint32_t j = 0; j < km->l.hidden; j++) {
			double angle = p / pow(10000.0, (double)(j & ~1u) / km->l.hidden);
			pos[(size_t)p * km->l.hidden + j] = (float)(j & 1 ? cos(angle) : sin(angle));
		}
	km->h.weight_bytes += n * sizeof(float);
	int rc = km->h.be->upload(km->h.dev, km->pos, pos, n * sizeof(float), err, errlen);
	free(pos);
	return rc;
}

static int llm_create(const struct mdl_model *m, const struct rt_backend_ops *be, struct rt_dev *dev, uint64_t seed,
                      struct rt_model **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rt_model *km = rt_kern_model_new(sizeof *km, m, be, dev, seed, llm_shape, err, errlen);
	if (!km)
		return -1;
	if (!be->gated_silu && km->l.gated) {
		snprintf(err, errlen, "model %s: backend %s has no gated MLP kernel", m->name, be->name);
		goto fail;
	}
	for (uint32_t l = 0; l < km->l.layers; l++) {
		struct llm_layer *ly = &km->layer[l];
		uint64_t tag = (uint64_t)(l + 1) << 8;
		const uint32_t shape[LLM_NW][2] = { { km->l.hidden, km->qkv_width }, { km->qdim, km->l.hidden }, { km->l.hidden, km->up_width },
		                                    { km->l.ffn, km->l.hidden } };
		for (int i = 0; i < LLM_NW; i++)
			if (llm_weight(km, shape[i][0], shape[i][1], tag + (uint64_t)i, &ly->w[i], err, errlen) != 0)
				goto fail;
		for (int i = 0; i < LLM_NB; i++) {
			int gain = i == LLM_G1 || i == LLM_G2;
			if (!(ly->b[i] = llm_table(km, km->l.hidden, gain ? 1.0f : 0.0f, gain ? 0.5f : 0.1f, tag + 64 + (uint64_t)i,
			                           err, errlen)))
				goto fail;
		}
	}
	if (llm_weight(km, km->l.hidden, km->l.vocab, 1, &km->head, err, errlen) != 0 ||
	    !(km->head_b = llm_table(km, km->l.vocab, 0.0f, 0.0f, 2, err, errlen)) ||
	    !(km->zero_ffn = llm_table(km, km->l.ffn, 0.0f, 0.0f, 3, err, errlen)) ||
	    !(km->emb = llm_table(km, (size_t)km->l.vocab * km->l.hidden, 0.0f, 1.0f, 4, err, errlen)) ||
	    llm_positions(km, err, errlen) != 0)
		goto fail;
	*out = km;
	return 0;
fail:
	llm_destroy(km);
	return -1;
}

static void llm_info(const struct rt_model *km, struct rt_model_info *o)
{
	uint32_t max_k = km->l.hidden > km->qdim ? km->l.hidden : km->qdim;
	*o = (struct rt_model_info){ .family = "llm", .output_floats = km->l.hidden,
	                             .max_k = km->l.ffn > max_k ? km->l.ffn : max_k, .weight_bytes = km->h.weight_bytes };
	snprintf(o->detail, sizeof o->detail, "%u layers, d %u, %u query heads of %u on %u key/value heads, %s MLP %u, "
	         "vocabulary %u, context %u", km->l.layers, km->l.hidden, km->l.heads, km->l.head_dim, km->l.kv_heads,
	         km->l.gated ? "gated" : "plain", km->l.ffn, km->l.vocab, km->l.context);
}

/* ---- request state ---- */

struct llm_layout {
	size_t cap;            /* positions: prompt + output */
	size_t cache;          /* float offset of layer 0's keys */
	size_t tok_b, bytes;   /* byte offset of the tokens; the whole state */
};

static struct llm_layout llm_layout(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	struct llm_layout L;
	L.cap = (size_t)input_len + output_len;
	L.cache = km->l.hidden;
	L.tok_b = (L.cache + 2 * (size_t)km->l.layers * L.cap * km->kvdim) * sizeof(float);
	L.bytes = L.tok_b + (L.cap ? L.cap : 1) * sizeof(int32_t);
	return L;
}

/* Keys of layer l (the values follow them). */
static float *llm_keys(const struct rt_model *km, void *state, const struct llm_layout *L, uint32_t l)
{
	return (float *)state + L->cache + 2 * (size_t)l * L->cap * km->kvdim;
}

static int32_t *llm_tokens(void *state, const struct llm_layout *L)
{
	return (int32_t *)((unsigned char *)state + L->tok_b);
}

static size_t llm_state_bytes(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	return llm_layout(km, input_len, output_len).bytes;
}

static int llm_state_init(const struct rt_model *km, void *state, uint64_t id, uint32_t input_len,
                          uint32_t output_len, char *err, size_t errlen)
{
	if ((uint64_t)input_len + output_len > km->l.context) {
		snprintf(err, errlen, "request %llu: %u prompt and %u output tokens exceed the model's context of %u",
		         (unsigned long long)id, input_len, output_len, km->l.context);
		return -1;
	}
	struct llm_layout L = llm_layout(km, input_len, output_len);
	return rt_kern_token_state(km->h.be, km->h.dev, state, L.bytes, L.tok_b, input_len, km->l.vocab, km->h.seed,
	                           LLM_TAG_TOKENS + id, err, errlen);
}

/* ---- work buffers ---- */

static void llm_work_destroy(const struct rt_model *km, void *work)
{
	struct llm_work *w = work;
	if (!w)
		return;
	float *bufs[] = { w->x, w->qkv, w->a, w->o, w->f, w->hl, w->logits, (float *)w->zero_tok };
	rt_kern_free_buffers(km->h.be, km->h.dev, bufs, sizeof bufs / sizeof bufs[0]);
	free(w->tok);
	free(w->pos);
	free(w->len);
	free(w->dst);
	free(w->dst2);
	free(w->kc);
	free(w->vc);
	free(w->src);
	free(w->tok_out);
	free(w);
}

static int llm_work_create(const struct rt_model *km, uint32_t rows, uint32_t pass_rows, void **work, char *err,
                           size_t errlen)
{
	(void)pass_rows;   /* no pass nodes */
	struct llm_work *w = calloc(1, sizeof *w);
	*work = NULL;
	if (!w)
		goto oom;
	const struct rt_backend_ops *be = km->h.be;
	struct rt_dev *dev = km->h.dev;
	size_t r = rows ? rows : 1;
	w->rows = rows;
	w->x = be->alloc(dev, r * km->l.hidden * sizeof(float));
	w->qkv = be->alloc(dev, r * km->qkv_width * sizeof(float));
	w->a = be->alloc(dev, r * km->qdim * sizeof(float));
	w->o = be->alloc(dev, r * km->l.hidden * sizeof(float));
	w->f = be->alloc(dev, r * km->up_width * sizeof(float));
	w->hl = be->alloc(dev, r * km->l.hidden * sizeof(float));
	w->logits = be->alloc(dev, r * km->l.vocab * sizeof(float));
	w->zero_tok = be->alloc(dev, sizeof(int32_t));
	w->tok = calloc(r, sizeof *w->tok);
	w->pos = calloc(r, sizeof *w->pos);
	w->len = calloc(r, sizeof *w->len);
	w->dst = calloc(r, sizeof *w->dst);
	w->dst2 = calloc(r, sizeof *w->dst2);
	w->kc = calloc(r, sizeof *w->kc);
	w->vc = calloc(r, sizeof *w->vc);
	w->src = calloc(r, sizeof *w->src);
	w->tok_out = calloc(r, sizeof *w->tok_out);
	if (!w->x || !w->qkv || !w->a || !w->o || !w->f || !w->hl || !w->logits || !w->zero_tok || !w->tok ||
	    !w->pos || !w->len || !w->dst || !w->dst2 || !w->kc || !w->vc || !w->src || !w->tok_out)
		goto oom;
	*work = w;
	return 0;
oom:
	llm_work_destroy(km, w);
	err_memory(err, errlen, "out of memory for a worker's batch buffers (%u rows)", rows);
	return -1;
}

/* ---- an iteration ---- */

/* Row r's token and position: the member's sequence at context + t, or the
 * padding token at position 0. */
static void llm_rows(const struct rt_model *km, struct llm_work *w, uint32_t n, const struct rt_iter_member *mb,
                     uint32_t pad)
{
	uint32_t r = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct llm_layout L = llm_layout(km, mb[i].input_len, mb[i].output_len);
		const int32_t *tok = llm_tokens(mb[i].state, &L);
		for (uint32_t t = 0; t < mb[i].tokens; t++, r++) {
			w->tok[r] = tok + mb[i].context + t;
			w->pos[r] = mb[i].context + t;
		}
	}
	for (uint32_t p = 0; p < pad; p++, r++) {
		w->tok[r] = w->zero_tok;
		w->pos[r] = 0;
	}
}

/* Layer l's cache writes and reads: each member row writes its key and
 * value at its position and attends over positions 0..its own. */
static void llm_cache_rows(const struct rt_model *km, struct llm_work *w, uint32_t n, const struct rt_iter_member *mb,
                           uint32_t pad, uint32_t l)
{
	uint32_t r = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct llm_layout L = llm_layout(km, mb[i].input_len, mb[i].output_len);
		float *k = llm_keys(km, mb[i].state, &L, l), *v = k + L.cap * km->kvdim;
		for (uint32_t t = 0; t < mb[i].tokens; t++, r++) {
			size_t p = (size_t)mb[i].context + t;
			w->dst[r] = k + p * km->kvdim;
			w->dst2[r] = v + p * km->kvdim;
			w->kc[r] = k;
			w->vc[r] = v;
			w->len[r] = (uint32_t)p + 1;
		}
	}
	for (uint32_t p = 0; p < pad; p++, r++) {   /* padding: written nowhere, attends to nothing */
		w->dst[r] = w->dst2[r] = NULL;
		w->kc[r] = w->vc[r] = w->x;
		w->len[r] = 0;
	}
}

static void llm_layer_run(const struct rt_model *km, struct llm_work *w, struct rt_stream *s, uint32_t rows,
                          uint32_t n, const struct rt_iter_member *mb, uint32_t pad, uint32_t l)
{
	const struct rt_backend_ops *be = km->h.be;
	const struct llm_layer *ly = &km->layer[l];
	const size_t d = km->l.hidden, qw = km->qkv_width;
	be->gemm(s, ly->w[LLM_W_QKV], rows, w->x, d, w->qkv, qw);
	llm_cache_rows(km, w, n, mb, pad, l);
	be->scatter(s, rows, km->kvdim, w->qkv + km->qdim, qw, w->dst);
	be->scatter(s, rows, km->kvdim, w->qkv + km->qdim + km->kvdim, qw, w->dst2);
	size_t group = (size_t)km->l.kv_heads * km->l.head_dim;
	for (uint32_t j = 0; j < km->l.heads / km->l.kv_heads; j++)
		be->attention(s, rows, km->l.kv_heads, km->l.head_dim, w->qkv + j * group, qw, w->kc, w->vc, km->kvdim, w->len,
		              w->a + j * group, km->qdim);
	be->gemm(s, ly->w[LLM_W_O], rows, w->a, km->qdim, w->o, d);
	be->add_layernorm(s, rows, (uint32_t)d, w->x, d, w->o, d, ly->b[LLM_G1], ly->b[LLM_B1]);
	be->gemm(s, ly->w[LLM_W_UP], rows, w->x, d, w->f, km->up_width);
	if (km->l.gated)
		be->gated_silu(s, rows, km->l.ffn, w->f, km->up_width);
	else
		be->bias_act(s, rows, km->l.ffn, w->f, km->up_width, km->zero_ffn, RT_ACT_RELU);
	be->gemm(s, ly->w[LLM_W_DOWN], rows, w->f, km->up_width, w->o, d);
	be->add_layernorm(s, rows, (uint32_t)d, w->x, d, w->o, d, ly->b[LLM_G2], ly->b[LLM_B2]);
}

/* The emitting members' last rows: the output projection, the greedy token
 * after their sequence so far, and their final hidden vector. */
static void llm_emit(const struct rt_model *km, struct llm_work *w, struct rt_stream *s, uint32_t n,
                     const struct rt_iter_member *mb)
{
	const struct rt_backend_ops *be = km->h.be;
	uint32_t e = 0, r = 0;
	for (uint32_t i = 0; i < n; i++) {
		r += mb[i].tokens;
		if (!mb[i].emit)
			continue;
		struct llm_layout L = llm_layout(km, mb[i].input_len, mb[i].output_len);
		w->src[e] = w->x + (size_t)(r - 1) * km->l.hidden;
		w->tok_out[e] = llm_tokens(mb[i].state, &L) + mb[i].context + mb[i].tokens;
		w->dst[e] = mb[i].state;
		e++;
	}
	if (!e)
		return;
	be->gather(s, e, km->l.hidden, w->hl, km->l.hidden, w->src);
	be->gemm(s, km->head, e, w->hl, km->l.hidden, w->logits, km->l.vocab);
	be->bias_argmax(s, e, km->l.vocab, w->logits, km->l.vocab, km->head_b, w->tok_out);
	be->scatter(s, e, km->l.hidden, w->hl, km->l.hidden, w->dst);
}

static int llm_run_iter(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t n,
                        const struct rt_iter_member *mb, uint32_t pad, char *err, size_t errlen)
{
	struct llm_work *w = work;
	uint64_t rows = pad;
	for (uint32_t i = 0; i < n; i++) {
		struct llm_layout L = llm_layout(km, mb[i].input_len, mb[i].output_len);
		uint64_t end = (uint64_t)mb[i].context + mb[i].tokens;
		if (mb[i].tokens == 0 || end > L.cap || (mb[i].emit && (end < mb[i].input_len || end >= L.cap))) {
			snprintf(err, errlen, "request %llu: positions %u..%llu (emit %d) do not fit its %u prompt and %u "
			         "output tokens", (unsigned long long)mb[i].id, mb[i].context, (unsigned long long)end,
			         mb[i].emit, mb[i].input_len, mb[i].output_len);
			return -1;
		}
		rows += mb[i].tokens;
	}
	if (rows > w->rows) {
		snprintf(err, errlen, "an iteration of %llu rows exceeds the %u the batch buffers hold",
		         (unsigned long long)rows, w->rows);
		return -1;
	}
	if (rows == 0)
		return 0;
	llm_rows(km, w, n, mb, pad);
	km->h.be->embed(s, (uint32_t)rows, km->l.hidden, w->x, km->l.hidden, km->emb, w->tok);
	km->h.be->add_rows(s, (uint32_t)rows, km->l.hidden, w->x, km->l.hidden, km->pos, w->pos);
	for (uint32_t l = 0; l < km->l.layers; l++)
		llm_layer_run(km, w, s, (uint32_t)rows, n, mb, pad, l);
	llm_emit(km, w, s, n, mb);
	return 0;
}

static int llm_outputs(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
                       struct rt_outputs *out, char *err, size_t errlen)
{
	struct llm_layout L = llm_layout(km, input_len, output_len);
	const unsigned char *st = state;
	out->nvalues = km->l.hidden;
	out->ntokens = output_len;
	if (km->h.be->download(km->h.dev, out->values, st, km->l.hidden * sizeof(float), err, errlen) != 0)
		return -1;
	if (output_len && km->h.be->download(km->h.dev, out->tokens, st + L.tok_b + (size_t)input_len * sizeof(int32_t),
	                                   output_len * sizeof(int32_t), err, errlen) != 0)
		return -1;
	return 0;
}

const struct rt_model_ops rt_kern_llm = {
	.family = "llm",
	.match = llm_match,
	.create = llm_create,
	.destroy = llm_destroy,
	.info = llm_info,
	.state_bytes = llm_state_bytes,
	.state_init = llm_state_init,
	.work_create = llm_work_create,
	.work_destroy = llm_work_destroy,
	.run_iter = llm_run_iter,
	.outputs = llm_outputs,
};
