/* runtime/kern_transformer.c: the transformer kernel family of kernels.h,
 * unrolled per token as models/transformer.model is (LazyBatching Alg. 1):
 *
 *  - encoder layer l at source token t: self-attention over the request's
 *    tokens 0..t of layer l (each token attends to those before it and
 *    itself, the only order a per-token unrolling can compute), then the
 *    feed-forward block; post-norm residuals (Vaswani et al. 2017, Sec. 3.1);
 *  - the cross key/value node at token t: for every decoder layer, the
 *    keys and values of the top encoder output of token t;
 *  - decoder layer l at output step t: masked self-attention over steps
 *    0..t, cross-attention over the request's source tokens, feed-forward;
 *  - the projection at step t: logits of the top decoder output, and the
 *    greedy next token (bias + argmax fused, Amun Algorithm 4).
 *
 * Every request keeps its own key/value caches (encoder self-attention,
 * cross, decoder self-attention) in its state, so a batch mixes requests at
 * any positions: a member's attention reads only its own cache, as long as
 * its own history. Sinusoidal positions (Sec. 3.5) up to TF_MAX_POS.
 *
 * State of a request (floats): x[d] (the activation between nodes), then
 * encoder K, V per layer [max(I,1) x d], cross K, V per decoder layer
 * [max(I,1) x d], decoder K, V per layer [max(O,1) x d], then int32 tokens:
 * input[max(I, 1)], output[O + 1] (output[0] is the start token). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

#define TF_MAX_POS 4096
#define TF_MAX_LAYERS 64
#define TF_INPUT_VOCAB_MAX 65536
#define TF_TAG_TOKENS (1ull << 40)

enum { TF_W_QKV, TF_W_O, TF_W_FF1, TF_W_FF2, TF_W_Q2, TF_W_O2, TF_NW };   /* per layer */
enum { TF_B_QKV, TF_B_O, TF_B_FF1, TF_B_FF2, TF_B_Q2, TF_B_O2, TF_G1, TF_BE1, TF_G2, TF_BE2, TF_G3, TF_BE3,
       TF_NB };

struct tf_layer {
	uint32_t node;
	struct rt_weight *w[TF_NW];      /* Q2, O2 only in decoder layers */
	float *b[TF_NB];                 /* device vectors: biases, norm gains and shifts */
};

struct rt_model {
	struct rt_model_head h;             /* first: be, dev, m, seed, weight_bytes */
	uint32_t d, ff, heads, dk, vocab;
	uint32_t nenc, ndec;
	struct tf_layer enc[TF_MAX_LAYERS], dec[TF_MAX_LAYERS];
	uint32_t cross_node, proj_node;
	struct rt_weight *cross[TF_MAX_LAYERS];   /* d x 2d per decoder layer */
	float *cross_b[TF_MAX_LAYERS];
	struct rt_weight *proj;
	float *proj_b, *emb, *pos;                /* emb: vocab x d; pos: TF_MAX_POS x d */
};

struct tf_work {
	float *x, *qkv, *a, *o, *f, *kv, *logits;   /* device batch buffers */
	const float **src;
	float **dst, **dst2;
	const float **kc, **vc;
	const int32_t **tok;
	int32_t **tok_out;
	uint32_t *len, *rows;
};

/* ---- shape ---- */

static int tf_weight_term(const struct mdl_gemm *g, uint64_t k, uint64_t n)
{
	return !g->weight_shared && g->m_per_sample == 1 && g->k == k && g->n == n && mdl_gemm_steps(g) == 1;
}

/* A layer node: weight terms (d,3d) [(d,d) x1 encoder | x3 decoder] (d,ff)
 * (ff,d) and attention terms, the first giving heads (count) and dk (K). */
static int tf_layer_shape(const struct mdl_node *nd, int decoder, struct rt_model *km, char *why, size_t len)
{
	const struct mdl_gemm *g = nd->gemms;
	if (nd->ngemms < 5 || g[0].weight_shared || g[0].n != 3 * g[0].k || g[0].count != 1) {
		snprintf(why, len, "node %s: a layer starts with gemm=1,d,3d", nd->name);
		return 0;
	}
	uint64_t d = g[0].k, ff = g[2].n;
	uint32_t nd_o = decoder ? 3 : 1;
	if (!tf_weight_term(&g[1], d, d) || g[1].count != nd_o || !tf_weight_term(&g[2], d, ff) ||
	    g[2].count != 1 || !tf_weight_term(&g[3], ff, d) || g[3].count != 1 || !g[4].weight_shared) {
		snprintf(why, len, "node %s: expected gemm=1,d,3d gemm=1,d,d%s gemm=1,d,ff gemm=1,ff,d attn=...",
		         nd->name, decoder ? ",x3" : "");
		return 0;
	}
	uint32_t heads = g[4].count, dk = (uint32_t)g[4].k;
	if (heads == 0 || (uint64_t)heads * dk != d) {
		snprintf(why, len, "node %s: attention heads x dk (%u x %u) must equal d = %llu", nd->name, heads, dk,
		         (unsigned long long)d);
		return 0;
	}
	if (km->d == 0) {
		km->d = (uint32_t)d;
		km->ff = (uint32_t)ff;
		km->heads = heads;
		km->dk = dk;
	} else if (km->d != d || km->ff != ff || km->heads != heads || km->dk != dk) {
		snprintf(why, len, "node %s: every layer must have the same d, ff and heads", nd->name);
		return 0;
	}
	return 1;
}

static int tf_shape(const struct mdl_model *m, struct rt_model *km, char *why, size_t len)
{
	memset(km, 0, sizeof *km);
	if (m->nsegments != 2 || m->segments[0].kind != MDL_ENCODER || m->segments[1].kind != MDL_DECODER) {
		snprintf(why, len, "needs an encoder segment run token by token (not a pass) and a decoder segment");
		return 0;
	}
	const struct mdl_segment *se = &m->segments[0], *sd = &m->segments[1];
	if (se->nnodes < 2 || sd->nnodes < 2 || se->nnodes - 1 > TF_MAX_LAYERS || sd->nnodes - 1 > TF_MAX_LAYERS) {
		snprintf(why, len, "needs 1..%d encoder layers + a cross key/value node, 1..%d decoder layers + "
		         "a projection", TF_MAX_LAYERS, TF_MAX_LAYERS);
		return 0;
	}
	km->nenc = se->nnodes - 1;
	km->ndec = sd->nnodes - 1;
	for (uint32_t l = 0; l < km->nenc; l++) {
		km->enc[l].node = se->first_node + l;
		if (!tf_layer_shape(&m->nodes[km->enc[l].node], 0, km, why, len))
			return 0;
	}
	for (uint32_t l = 0; l < km->ndec; l++) {
		km->dec[l].node = sd->first_node + l;
		if (!tf_layer_shape(&m->nodes[km->dec[l].node], 1, km, why, len))
			return 0;
	}
	km->cross_node = se->first_node + km->nenc;
	const struct mdl_node *cx = &m->nodes[km->cross_node];
	if (cx->ngemms != 1 || !tf_weight_term(&cx->gemms[0], km->d, 2 * (uint64_t)km->d) ||
	    cx->gemms[0].count != km->ndec) {
		snprintf(why, len, "node %s: the cross key/value node is gemm=1,d,2d,xL (L decoder layers)", cx->name);
		return 0;
	}
	km->proj_node = sd->first_node + km->ndec;
	const struct mdl_node *p = &m->nodes[km->proj_node];
	if (p->ngemms != 1 || p->gemms[0].count != 1 || !tf_weight_term(&p->gemms[0], km->d, p->gemms[0].n)) {
		snprintf(why, len, "node %s: the projection is gemm=1,d,V", p->name);
		return 0;
	}
	km->vocab = (uint32_t)p->gemms[0].n;
	return 1;
}

static int tf_match(const struct mdl_model *m, char *why, size_t len)
{
	struct rt_model *km = malloc(sizeof *km);
	if (!km) {
		snprintf(why, len, "out of memory");
		return 0;
	}
	int ok = tf_shape(m, km, why, len);
	free(km);
	return ok;
}

/* ---- weights ---- */

static void tf_layer_free(struct rt_model *km, struct tf_layer *ly)
{
	for (int i = 0; i < TF_NW; i++)
		km->h.be->weight_destroy(km->h.dev, ly->w[i]);
	for (int i = 0; i < TF_NB; i++)
		if (ly->b[i])
			km->h.be->free(km->h.dev, ly->b[i]);
}

static void tf_destroy(struct rt_model *km)
{
	if (!km)
		return;
	for (uint32_t l = 0; l < km->nenc; l++)
		tf_layer_free(km, &km->enc[l]);
	for (uint32_t l = 0; l < km->ndec; l++) {
		tf_layer_free(km, &km->dec[l]);
		km->h.be->weight_destroy(km->h.dev, km->cross[l]);
		if (km->cross_b[l])
			km->h.be->free(km->h.dev, km->cross_b[l]);
	}
	km->h.be->weight_destroy(km->h.dev, km->proj);
	float *v[] = { km->proj_b, km->emb, km->pos };
	for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
		if (v[i])
			km->h.be->free(km->h.dev, v[i]);
	free(km);
}

/* Weights uniform in +-1/sqrt(K); biases small; norm gains around 1. */
static int tf_layer_create(struct rt_model *km, struct tf_layer *ly, int decoder, char *err, size_t errlen)
{
	const uint32_t d = km->d, ff = km->ff;
	const uint32_t shape[TF_NW][2] = { { d, 3 * d }, { d, d }, { d, ff }, { ff, d }, { d, d }, { d, d } };
	const uint32_t blen[TF_NB] = { 3 * d, d, ff, d, d, d, d, d, d, d, d, d };
	uint64_t tag = (uint64_t)ly->node << 8;
	int nw = decoder ? TF_NW : TF_W_Q2, nb = decoder ? TF_NB : TF_G3;
	for (int i = 0; i < nw; i++) {
		if (rt_kern_weight(km->h.be, km->h.dev, shape[i][0], shape[i][1], 1.0f / sqrtf((float)shape[i][0]), km->h.seed,
		                   tag + (uint64_t)i, &ly->w[i], err, errlen) != 0)
			return -1;
		km->h.weight_bytes += (uint64_t)shape[i][0] * shape[i][1] * sizeof(float);
	}
	for (int i = 0; i < nb; i++) {
		int gain = i == TF_G1 || i == TF_G2 || i == TF_G3;
		int shift = i == TF_BE1 || i == TF_BE2 || i == TF_BE3;
		ly->b[i] = rt_kern_table(km->h.be, km->h.dev, blen[i], gain ? 1.0f : 0.0f, gain ? 0.5f : shift ? 0.1f : 0.02f,
		                         km->h.seed, tag + 64 + (uint64_t)i, err, errlen);
		if (!ly->b[i])
			return -1;
		km->h.weight_bytes += (uint64_t)blen[i] * sizeof(float);
	}
	return 0;
}

static int tf_create(const struct mdl_model *m, const struct rt_backend_ops *be, struct rt_dev *dev,
                     uint64_t seed, struct rt_model **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rt_model *km = rt_kern_model_new(sizeof *km, m, be, dev, seed, tf_shape, err, errlen);
	if (!km)
		return -1;
	const uint32_t d = km->d;
	for (uint32_t l = 0; l < km->nenc; l++)
		if (tf_layer_create(km, &km->enc[l], 0, err, errlen) != 0)
			goto fail;
	for (uint32_t l = 0; l < km->ndec; l++) {
		uint64_t tag = ((uint64_t)km->cross_node << 8) + 2 * (uint64_t)l;
		if (tf_layer_create(km, &km->dec[l], 1, err, errlen) != 0 ||
		    rt_kern_weight(be, dev, d, 2 * d, 1.0f / sqrtf((float)d), seed, tag, &km->cross[l], err, errlen) != 0 ||
		    !(km->cross_b[l] = rt_kern_table(be, dev, 2 * (size_t)d, 0.0f, 0.02f, seed, tag + 1, err, errlen)))
			goto fail;
		km->h.weight_bytes += (uint64_t)(d + 1) * 2 * d * sizeof(float);
	}
	uint64_t tag = (uint64_t)km->proj_node << 8;
	if (rt_kern_weight(be, dev, d, km->vocab, 1.0f / sqrtf((float)d), seed, tag, &km->proj, err, errlen) != 0 ||
	    !(km->proj_b = rt_kern_table(be, dev, km->vocab, 0.0f, 0.02f, seed, tag + 1, err, errlen)) ||
	    !(km->emb = rt_kern_table(be, dev, (size_t)km->vocab * d, 0.0f, 1.0f, seed, tag + 2, err, errlen)))
		goto fail;
	km->h.weight_bytes += (uint64_t)(2 * d + 1) * km->vocab * sizeof(float);
	/* sinusoidal positions: sin on even, cos on odd dimensions */
	float *pos = malloc((size_t)TF_MAX_POS * d * sizeof(float));
	km->pos = be->alloc(dev, (size_t)TF_MAX_POS * d * sizeof(float));
	if (!pos || !km->pos) {
		free(pos);
		snprintf(err, errlen, "out of memory for the position table");
		goto fail;
	}
	for (uint32_t p = 0; p < TF_MAX_POS; p++)
		for (uint32_t j = 0; j < d; j++) {
			double angle = p / pow(10000.0, (double)(j & ~1u) / d);
			pos[(size_t)p * d + j] = (float)(j & 1 ? cos(angle) : sin(angle));
		}
	int rc = be->upload(dev, km->pos, pos, (size_t)TF_MAX_POS * d * sizeof(float), err, errlen);
	free(pos);
	if (rc != 0)
		goto fail;
	*out = km;
	return 0;
fail:
	tf_destroy(km);
	return -1;
}

static void tf_info(const struct rt_model *km, struct rt_model_info *o)
{
	*o = (struct rt_model_info){ .family = "transformer", .output_floats = km->d,
	                             .max_k = km->ff > km->d ? km->ff : km->d, .weight_bytes = km->h.weight_bytes };
	snprintf(o->detail, sizeof o->detail, "%u+%u layers, d %u, %u heads of %u, ff %u, vocabulary %u", km->nenc,
	         km->ndec, km->d, km->heads, km->dk, km->ff, km->vocab);
}

/* ---- request state ---- */

struct tf_layout {                /* float offsets, then byte offsets of the tokens */
	size_t ilen, olen;            /* cache rows: max(I, 1), max(O, 1) */
	size_t enc_kv, cross_kv, dec_kv, floats;
	size_t tok_in_b, tok_out_b, bytes;
};

static struct tf_layout tf_layout(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	struct tf_layout L;
	size_t d = km->d;
	L.ilen = input_len ? input_len : 1;
	L.olen = output_len ? output_len : 1;
	L.enc_kv = d;
	L.cross_kv = L.enc_kv + 2 * km->nenc * L.ilen * d;
	L.dec_kv = L.cross_kv + 2 * km->ndec * L.ilen * d;
	L.floats = L.dec_kv + 2 * km->ndec * L.olen * d;
	L.tok_in_b = L.floats * sizeof(float);
	L.tok_out_b = L.tok_in_b + L.ilen * sizeof(int32_t);
	L.bytes = L.tok_out_b + ((size_t)output_len + 1) * sizeof(int32_t);
	return L;
}

/* K of layer l in a block of caches (V follows K): rows x d each. */
static float *tf_cache_k(float *st, size_t base, uint32_t l, size_t rows, size_t d)
{
	return st + base + 2 * (size_t)l * rows * d;
}

static size_t tf_state_bytes(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	return tf_layout(km, input_len, output_len).bytes;
}

static int tf_state_init(const struct rt_model *km, void *state, uint64_t id, uint32_t input_len,
                         uint32_t output_len, char *err, size_t errlen)
{
	if (input_len > TF_MAX_POS || output_len > TF_MAX_POS) {
		snprintf(err, errlen, "request %llu: lengths %u, %u exceed the %d positions of the transformer kernels",
		         (unsigned long long)id, input_len, output_len, TF_MAX_POS);
		return -1;
	}
	struct tf_layout L = tf_layout(km, input_len, output_len);
	uint32_t vin = km->vocab < TF_INPUT_VOCAB_MAX ? km->vocab : TF_INPUT_VOCAB_MAX;
	return rt_kern_token_state(km->h.be, km->h.dev, state, L.bytes, L.tok_in_b, input_len, vin, km->h.seed,
	                           TF_TAG_TOKENS + id, err, errlen);
}

/* ---- work buffers ---- */

static void tf_work_destroy(const struct rt_model *km, void *work)
{
	struct tf_work *w = work;
	if (!w)
		return;
	float *bufs[] = { w->x, w->qkv, w->a, w->o, w->f, w->kv, w->logits };
	rt_kern_free_buffers(km->h.be, km->h.dev, bufs, sizeof bufs / sizeof bufs[0]);
	free(w->src);
	free(w->dst);
	free(w->dst2);
	free(w->kc);
	free(w->vc);
	free(w->tok);
	free(w->tok_out);
	free(w->len);
	free(w->rows);
	free(w);
}

static int tf_work_create(const struct rt_model *km, uint32_t rows, void **work, char *err, size_t errlen)
{
	struct tf_work *w = calloc(1, sizeof *w);
	*work = NULL;
	if (!w)
		goto oom;
	size_t d = km->d, r = rows;
	struct rt_dev *dev = km->h.dev;
	w->x = km->h.be->alloc(dev, r * d * sizeof(float));
	w->qkv = km->h.be->alloc(dev, r * 3 * d * sizeof(float));
	w->a = km->h.be->alloc(dev, r * d * sizeof(float));
	w->o = km->h.be->alloc(dev, r * d * sizeof(float));
	w->f = km->h.be->alloc(dev, r * km->ff * sizeof(float));
	w->kv = km->h.be->alloc(dev, r * 2 * d * sizeof(float));
	w->logits = km->h.be->alloc(dev, r * km->vocab * sizeof(float));
	w->src = calloc(r, sizeof *w->src);
	w->dst = calloc(r, sizeof *w->dst);
	w->dst2 = calloc(r, sizeof *w->dst2);
	w->kc = calloc(r, sizeof *w->kc);
	w->vc = calloc(r, sizeof *w->vc);
	w->tok = calloc(r, sizeof *w->tok);
	w->tok_out = calloc(r, sizeof *w->tok_out);
	w->len = calloc(r, sizeof *w->len);
	w->rows = calloc(r, sizeof *w->rows);
	if (!w->x || !w->qkv || !w->a || !w->o || !w->f || !w->kv || !w->logits || !w->src || !w->dst ||
	    !w->dst2 || !w->kc || !w->vc || !w->tok || !w->tok_out || !w->len || !w->rows)
		goto oom;
	*work = w;
	return 0;
oom:
	tf_work_destroy(km, w);
	snprintf(err, errlen, "out of memory for a worker's batch buffers (%u rows)", rows);
	return -1;
}

/* ---- nodes ---- */

struct tf_pos {            /* where a member is: its step, and whether it writes */
	uint32_t t;            /* step it reads (clamped for padding rows) */
	uint32_t reps;         /* steps of its segment (I or O) */
};

static struct tf_pos tf_pos(const struct rt_model *km, const struct rt_member *mb, int decoder)
{
	struct tf_pos p = { rt_step_at(km->h.m, mb->pos, mb->input_len, mb->output_len),
	                    decoder ? mb->output_len : mb->input_len };
	if (!mb->active && p.t >= p.reps)
		p.t = p.reps ? p.reps - 1 : 0;
	return p;
}

/* The layer input X: token embedding plus position for the first layer,
 * else the activation the previous layer left in the state. */
static void tf_input(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                     const struct rt_member *mb, int first, int decoder)
{
	const struct rt_backend_ops *be = km->h.be;
	for (uint32_t i = 0; i < n; i++) {
		struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
		struct tf_pos p = tf_pos(km, &mb[i], decoder);
		unsigned char *st = mb[i].state;
		w->src[i] = (const float *)st;
		w->tok[i] = (const int32_t *)(st + (decoder ? L.tok_out_b : L.tok_in_b)) + p.t;
		w->rows[i] = p.t;
	}
	if (first) {
		be->embed(s, n, km->d, w->x, km->d, km->emb, w->tok);
		be->add_rows(s, n, km->d, w->x, km->d, km->pos, w->rows);
	} else {
		be->gather(s, n, km->d, w->x, km->d, w->src);
	}
}

/* Self-attention sub-layer: QKV, append K and V at the member's step,
 * attend over its steps so far, output projection, residual and norm. */
static void tf_self_attn(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                         const struct rt_member *mb, const struct tf_layer *ly, uint32_t l, int decoder)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	be->gemm(s, ly->w[TF_W_QKV], n, w->x, d, w->qkv, 3 * d);
	be->bias_act(s, n, 3 * (uint32_t)d, w->qkv, 3 * d, ly->b[TF_B_QKV], RT_ACT_NONE);
	for (uint32_t i = 0; i < n; i++) {
		struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
		struct tf_pos p = tf_pos(km, &mb[i], decoder);
		size_t rows = decoder ? L.olen : L.ilen;
		float *k = tf_cache_k(mb[i].state, decoder ? L.dec_kv : L.enc_kv, l, rows, d), *v = k + rows * d;
		w->dst[i] = mb[i].active ? k + p.t * d : NULL;
		w->dst2[i] = mb[i].active ? v + p.t * d : NULL;
		w->kc[i] = k;
		w->vc[i] = v;
		w->len[i] = mb[i].active ? p.t + 1 : p.reps;
	}
	be->scatter(s, n, (uint32_t)d, w->qkv + d, 3 * d, w->dst);
	be->scatter(s, n, (uint32_t)d, w->qkv + 2 * d, 3 * d, w->dst2);
	be->attention(s, n, km->heads, km->dk, w->qkv, 3 * d, w->kc, w->vc, d, w->len, w->a, d);
	be->gemm(s, ly->w[TF_W_O], n, w->a, d, w->o, d);
	be->bias_act(s, n, (uint32_t)d, w->o, d, ly->b[TF_B_O], RT_ACT_NONE);
	be->add_layernorm(s, n, (uint32_t)d, w->x, d, w->o, d, ly->b[TF_G1], ly->b[TF_BE1]);
}

static void tf_cross_attn(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                          const struct rt_member *mb, const struct tf_layer *ly, uint32_t l)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	be->gemm(s, ly->w[TF_W_Q2], n, w->x, d, w->a, d);
	be->bias_act(s, n, (uint32_t)d, w->a, d, ly->b[TF_B_Q2], RT_ACT_NONE);
	for (uint32_t i = 0; i < n; i++) {
		struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
		float *k = tf_cache_k(mb[i].state, L.cross_kv, l, L.ilen, d);
		w->kc[i] = k;
		w->vc[i] = k + L.ilen * d;
		w->len[i] = mb[i].input_len;
	}
	be->attention(s, n, km->heads, km->dk, w->a, d, w->kc, w->vc, d, w->len, w->o, d);
	be->gemm(s, ly->w[TF_W_O2], n, w->o, d, w->a, d);
	be->bias_act(s, n, (uint32_t)d, w->a, d, ly->b[TF_B_O2], RT_ACT_NONE);
	be->add_layernorm(s, n, (uint32_t)d, w->x, d, w->a, d, ly->b[TF_G2], ly->b[TF_BE2]);
}

static void tf_ffn(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                   const struct tf_layer *ly, int decoder)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	be->gemm(s, ly->w[TF_W_FF1], n, w->x, d, w->f, km->ff);
	be->bias_act(s, n, km->ff, w->f, km->ff, ly->b[TF_B_FF1], RT_ACT_RELU);
	be->gemm(s, ly->w[TF_W_FF2], n, w->f, km->ff, w->o, d);
	be->bias_act(s, n, (uint32_t)d, w->o, d, ly->b[TF_B_FF2], RT_ACT_NONE);
	int g = decoder ? TF_G3 : TF_G2, b = decoder ? TF_BE3 : TF_BE2;
	be->add_layernorm(s, n, (uint32_t)d, w->x, d, w->o, d, ly->b[g], ly->b[b]);
}

static void tf_store_x(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                       const struct rt_member *mb)
{
	for (uint32_t i = 0; i < n; i++)
		w->dst[i] = mb[i].active ? (float *)mb[i].state : NULL;
	km->h.be->scatter(s, n, km->d, w->x, km->d, w->dst);
}

static void tf_cross_kv(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                        const struct rt_member *mb)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	tf_input(km, w, s, n, mb, 0, 0);
	for (uint32_t l = 0; l < km->ndec; l++) {
		be->gemm(s, km->cross[l], n, w->x, d, w->kv, 2 * d);
		be->bias_act(s, n, 2 * (uint32_t)d, w->kv, 2 * d, km->cross_b[l], RT_ACT_NONE);
		for (uint32_t i = 0; i < n; i++) {
			struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
			struct tf_pos p = tf_pos(km, &mb[i], 0);
			float *k = tf_cache_k(mb[i].state, L.cross_kv, l, L.ilen, d);
			w->dst[i] = mb[i].active ? k + p.t * d : NULL;
			w->dst2[i] = mb[i].active ? k + L.ilen * d + p.t * d : NULL;
		}
		be->scatter(s, n, (uint32_t)d, w->kv, 2 * d, w->dst);
		be->scatter(s, n, (uint32_t)d, w->kv + d, 2 * d, w->dst2);
	}
}

static void tf_proj(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                    const struct rt_member *mb)
{
	tf_input(km, w, s, n, mb, 0, 1);
	for (uint32_t i = 0; i < n; i++) {
		struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
		struct tf_pos p = tf_pos(km, &mb[i], 1);
		w->tok_out[i] = mb[i].active ? (int32_t *)((unsigned char *)mb[i].state + L.tok_out_b) + p.t + 1 : NULL;
	}
	km->h.be->gemm(s, km->proj, n, w->x, km->d, w->logits, km->vocab);
	km->h.be->bias_argmax(s, n, km->vocab, w->logits, km->vocab, km->proj_b, w->tok_out);
}

static void tf_run_node(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t node, uint32_t n,
                        const struct rt_member *mb)
{
	struct tf_work *w = work;
	if (node == km->cross_node) {
		tf_cross_kv(km, w, s, n, mb);
		return;
	}
	if (node == km->proj_node) {
		tf_proj(km, w, s, n, mb);
		return;
	}
	for (uint32_t l = 0; l < km->nenc; l++)
		if (km->enc[l].node == node) {
			tf_input(km, w, s, n, mb, l == 0, 0);
			tf_self_attn(km, w, s, n, mb, &km->enc[l], l, 0);
			tf_ffn(km, w, s, n, &km->enc[l], 0);
			tf_store_x(km, w, s, n, mb);
			return;
		}
	for (uint32_t l = 0; l < km->ndec; l++)
		if (km->dec[l].node == node) {
			tf_input(km, w, s, n, mb, l == 0, 1);
			tf_self_attn(km, w, s, n, mb, &km->dec[l], l, 1);
			tf_cross_attn(km, w, s, n, mb, &km->dec[l], l);
			tf_ffn(km, w, s, n, &km->dec[l], 1);
			tf_store_x(km, w, s, n, mb);
			return;
		}
}

static int tf_outputs(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
                      struct rt_outputs *out, char *err, size_t errlen)
{
	struct tf_layout L = tf_layout(km, input_len, output_len);
	const unsigned char *st = state;
	out->nvalues = km->d;
	out->ntokens = output_len;
	if (km->h.be->download(km->h.dev, out->values, st, km->d * sizeof(float), err, errlen) != 0)
		return -1;
	if (output_len && km->h.be->download(km->h.dev, out->tokens, st + L.tok_out_b + sizeof(int32_t),
	                                   output_len * sizeof(int32_t), err, errlen) != 0)
		return -1;
	return 0;
}

const struct rt_model_ops rt_kern_transformer = {
	.family = "transformer",
	.match = tf_match,
	.create = tf_create,
	.destroy = tf_destroy,
	.info = tf_info,
	.state_bytes = tf_state_bytes,
	.state_init = tf_state_init,
	.work_create = tf_work_create,
	.work_destroy = tf_work_destroy,
	.run_node = tf_run_node,
	.outputs = tf_outputs,
};
