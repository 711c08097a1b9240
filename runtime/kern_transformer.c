/* runtime/kern_transformer.c: the transformer kernel family of kernels.h,
 * in the two forms of the model files:
 *
 *  - transformer (models/transformer.model): each encoder layer one pass
 *    over the request's input tokens (a `pass` segment): every token
 *    attends to all of the request's tokens, as a Transformer encoder does;
 *  - transformer-per-token: the encoder unrolled per token (LazyBatching
 *    Alg. 1): layer l at source token t attends to the request's tokens
 *    0..t of layer l, the only order a per-token unrolling can compute.
 *
 * Then, in both: post-norm residuals (Vaswani et al. 2017, Sec. 3.1);
 *  - the cross key/value node: for every decoder layer, the keys and values
 *    of the top encoder output of each source token (all of them in a pass,
 *    token t in the per-token form);
 *  - decoder layer l at output step t: masked self-attention over steps
 *    0..t, cross-attention over the request's source tokens, feed-forward;
 *  - the projection at step t: logits of the top decoder output, and the
 *    greedy next token (bias + argmax fused, Amun Algorithm 4).
 * With one input token the two forms compute the same thing.
 *
 * A node runs rows: one a member, except an encoder pass, which runs one a
 * token of each member (the GEMMs' M is the members' tokens, summed).
 * Every request keeps its own key/value caches (encoder self-attention,
 * cross, decoder self-attention) in its state, so a batch mixes requests at
 * any positions: a member's attention reads only its own cache, as long as
 * its own history. Sinusoidal positions (Sec. 3.5) up to TF_MAX_POS.
 *
 * State of a request (floats): x[d] (the activation between nodes), in the
 * pass form the encoder's activations [max(I,1) x d], then encoder K, V per
 * layer [max(I,1) x d], cross K, V per decoder layer [max(I,1) x d],
 * decoder K, V per layer [max(O,1) x d], then int32 tokens: input[max(I, 1)],
 * output[O + 1] (output[0] is the start token). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "../util/errkind.h"

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
	int pass;                           /* the encoder runs as a pass over each request's tokens */
	struct tf_layer enc[TF_MAX_LAYERS], dec[TF_MAX_LAYERS];
	uint32_t cross_node, proj_node;
	struct rt_weight *cross[TF_MAX_LAYERS];   /* d x 2d per decoder layer */
	float *cross_b[TF_MAX_LAYERS];
	struct rt_weight *proj;
	float *proj_b, *emb, *pos;                /* emb: vocab x d; pos: TF_MAX_POS x d */
};

struct tf_work {
	float *x, *qkv, *a, *o, *f, *kv, *logits;   /* device batch buffers: rows; logits: members */
	uint32_t *member, *tok;                     /* a row's member and the token (step) it reads */
	unsigned char *writes;                      /* 0: a padding row, written nowhere */
	const float **src;
	float **dst, **dst2;
	const float **kc, **vc;
	const int32_t **tok_id;
	int32_t **tok_out;
	uint32_t *len, *rows;
};

/* ---- shape ---- */

static int tf_weight_term(const struct mdl_gemm *g, uint64_t k, uint64_t n)
{
	return !g->weight_shared && g->m_per_sample == 1 && g->k == k && g->n == n && mdl_gemm_steps(g) == 1;
}

/* A layer node: weight terms (d,3d) [(d,d) x1 encoder | x3 decoder] (d,ff)
 * (ff,d) and attention terms (in a pass node, its per-request terms), the
 * first giving heads (count) and dk (K). */
static int tf_layer_shape(const struct mdl_node *nd, int decoder, struct rt_model *km, char *why, size_t len)
{
	const struct mdl_gemm *g = nd->gemms;
	int pass = nd->kind == MDL_PASS;
	const struct mdl_gemm *at = pass ? (nd->nmember ? &nd->member[0] : NULL) : nd->ngemms > 4 ? &g[4] : NULL;
	if (nd->ngemms < 4 || g[0].weight_shared || g[0].n != 3 * g[0].k || g[0].count != 1) {
		snprintf(why, len, "node %s: a layer starts with gemm=1,d,3d", nd->name);
		return 0;
	}
	uint64_t d = g[0].k, ff = g[2].n;
	uint32_t nd_o = decoder ? 3 : 1;
	if (!tf_weight_term(&g[1], d, d) || g[1].count != nd_o || !tf_weight_term(&g[2], d, ff) ||
	    g[2].count != 1 || !tf_weight_term(&g[3], ff, d) || g[3].count != 1 || !at || !at->weight_shared) {
		snprintf(why, len, "node %s: expected gemm=1,d,3d gemm=1,d,d%s gemm=1,d,ff gemm=1,ff,d attn=...",
		         nd->name, decoder ? ",x3" : "");
		return 0;
	}
	uint32_t heads = at->count, dk = (uint32_t)at->k;
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
	if (m->nsegments != 2 || (m->segments[0].kind != MDL_ENCODER && m->segments[0].kind != MDL_PASS) ||
	    m->segments[1].kind != MDL_DECODER) {
		snprintf(why, len, "needs an encoder segment (token by token or a pass) and a decoder segment");
		return 0;
	}
	km->pass = m->segments[0].kind == MDL_PASS;
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
	if (cx->ngemms != 1 || cx->nmember || !tf_weight_term(&cx->gemms[0], km->d, 2 * (uint64_t)km->d) ||
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
		err_memory(why, len, "out of memory");
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
		err_memory(err, errlen, "out of memory for the position table");
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
	snprintf(o->detail, sizeof o->detail, "%u+%u layers (encoder %s), d %u, %u heads of %u, ff %u, vocabulary %u",
	         km->nenc, km->ndec, km->pass ? "one pass" : "token by token", km->d, km->heads, km->dk, km->ff,
	         km->vocab);
}

/* ---- request state ---- */

struct tf_layout {                /* float offsets, then byte offsets of the tokens */
	size_t ilen, olen;            /* cache rows: max(I, 1), max(O, 1) */
	size_t enc_x;                 /* the pass form's encoder activations, ilen x d */
	size_t enc_kv, cross_kv, dec_kv, floats;
	size_t tok_in_b, tok_out_b, bytes;
};

static struct tf_layout tf_layout(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	struct tf_layout L;
	size_t d = km->d;
	L.ilen = input_len ? input_len : 1;
	L.olen = output_len ? output_len : 1;
	L.enc_x = d;
	L.enc_kv = L.enc_x + (km->pass ? L.ilen * d : 0);
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
	void *host[] = { w->member, w->tok, w->writes, w->src, w->dst, w->dst2, w->kc, w->vc, w->tok_id, w->tok_out,
	                 w->len, w->rows };
	for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
		free(host[i]);
	free(w);
}

/* Buffers for nodes of up to members members; an encoder pass runs up to
 * pass_rows rows (its members' tokens), the projection members rows. */
static int tf_work_create(const struct rt_model *km, uint32_t members, uint32_t pass_rows, void **work, char *err,
                          size_t errlen)
{
	struct tf_work *w = calloc(1, sizeof *w);
	*work = NULL;
	if (!w)
		goto oom;
	size_t d = km->d, r = km->pass && pass_rows > members ? pass_rows : members;
	struct rt_dev *dev = km->h.dev;
	w->x = km->h.be->alloc(dev, r * d * sizeof(float));
	w->qkv = km->h.be->alloc(dev, r * 3 * d * sizeof(float));
	w->a = km->h.be->alloc(dev, r * d * sizeof(float));
	w->o = km->h.be->alloc(dev, r * d * sizeof(float));
	w->f = km->h.be->alloc(dev, r * km->ff * sizeof(float));
	w->kv = km->h.be->alloc(dev, r * 2 * d * sizeof(float));
	w->logits = km->h.be->alloc(dev, (size_t)members * km->vocab * sizeof(float));
	w->member = calloc(r, sizeof *w->member);
	w->tok = calloc(r, sizeof *w->tok);
	w->writes = calloc(r, sizeof *w->writes);
	w->src = calloc(r, sizeof *w->src);
	w->dst = calloc(r, sizeof *w->dst);
	w->dst2 = calloc(r, sizeof *w->dst2);
	w->kc = calloc(r, sizeof *w->kc);
	w->vc = calloc(r, sizeof *w->vc);
	w->tok_id = calloc(r, sizeof *w->tok_id);
	w->tok_out = calloc(r, sizeof *w->tok_out);
	w->len = calloc(r, sizeof *w->len);
	w->rows = calloc(r, sizeof *w->rows);
	if (!w->x || !w->qkv || !w->a || !w->o || !w->f || !w->kv || !w->logits || !w->member || !w->tok || !w->writes ||
	    !w->src || !w->dst || !w->dst2 || !w->kc || !w->vc || !w->tok_id || !w->tok_out || !w->len || !w->rows)
		goto oom;
	*work = w;
	return 0;
oom:
	tf_work_destroy(km, w);
	err_memory(err, errlen, "out of memory for a worker's batch buffers (%u members, %u pass rows)", members,
	         pass_rows);
	return -1;
}

/* ---- nodes ---- */

/* The step a member of a token-by-token node reads: its position's, or for
 * a padding member past its segment's steps (I or O) the last one. */
static uint32_t tf_step(const struct rt_model *km, const struct rt_member *mb, int decoder)
{
	uint32_t t = rt_step_at(km->h.m, mb->pos, mb->input_len, mb->output_len);
	uint32_t reps = decoder ? mb->output_len : mb->input_len;
	return !mb->active && t >= reps ? (reps ? reps - 1 : 0) : t;
}

/* Lays out the node's rows (member, token, whether it writes) and returns
 * their count: a row a member, or in an encoder pass a row a token of each,
 * padded to pad_len; a padding row reads the member's last token. */
static uint32_t tf_rows(const struct rt_model *km, struct tf_work *w, uint32_t n, const struct rt_member *mb,
                        int decoder)
{
	uint32_t r = 0;
	for (uint32_t i = 0; i < n; i++)
		if (km->pass && !decoder) {
			uint32_t len = mb[i].input_len, rows = len > mb[i].pad_len ? len : mb[i].pad_len;
			for (uint32_t t = 0; t < rows; t++, r++) {
				w->member[r] = i;
				w->tok[r] = t < len ? t : len ? len - 1 : 0;
				w->writes[r] = mb[i].active && t < len;
			}
		} else {
			w->member[r] = i;
			w->tok[r] = tf_step(km, &mb[i], decoder);
			w->writes[r] = (unsigned char)mb[i].active;
			r++;
		}
	return r;
}

/* Where a row's activation lives between nodes (L: the member's layout):
 * the pass form's encoder keeps one a token, everything else one a request. */
static float *tf_x_at(const struct rt_model *km, const struct tf_layout *L, const struct rt_member *mb,
                      uint32_t t, int decoder)
{
	if (km->pass && !decoder)
		return (float *)mb->state + L->enc_x + (size_t)t * km->d;
	return mb->state;
}

/* The layer input X: token embedding plus position for the first layer,
 * else the activation the previous layer left in the state. */
static void tf_input(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t rows,
                     const struct rt_member *mb, int first, int decoder)
{
	const struct rt_backend_ops *be = km->h.be;
	for (uint32_t r = 0; r < rows; r++) {
		const struct rt_member *m = &mb[w->member[r]];
		struct tf_layout L = tf_layout(km, m->input_len, m->output_len);
		w->src[r] = tf_x_at(km, &L, m, w->tok[r], decoder);
		w->tok_id[r] = (const int32_t *)((unsigned char *)m->state + (decoder ? L.tok_out_b : L.tok_in_b)) +
		               w->tok[r];
		w->rows[r] = w->tok[r];
	}
	if (first) {
		be->embed(s, rows, km->d, w->x, km->d, km->emb, w->tok_id);
		be->add_rows(s, rows, km->d, w->x, km->d, km->pos, w->rows);
	} else {
		be->gather(s, rows, km->d, w->x, km->d, w->src);
	}
}

/* Self-attention sub-layer: QKV, K and V stored at the row's token, each
 * row attending over its member's keys (all of its tokens in an encoder
 * pass, else its steps so far), output projection, residual and norm. */
static void tf_self_attn(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t rows,
                         const struct rt_member *mb, const struct tf_layer *ly, uint32_t l, int decoder)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	be->gemm(s, ly->w[TF_W_QKV], rows, w->x, d, w->qkv, 3 * d);
	be->bias_act(s, rows, 3 * (uint32_t)d, w->qkv, 3 * d, ly->b[TF_B_QKV], RT_ACT_NONE);
	for (uint32_t r = 0; r < rows; r++) {
		const struct rt_member *m = &mb[w->member[r]];
		struct tf_layout L = tf_layout(km, m->input_len, m->output_len);
		uint32_t t = w->tok[r], reps = decoder ? m->output_len : m->input_len;
		size_t cache_rows = decoder ? L.olen : L.ilen;
		float *k = tf_cache_k(m->state, decoder ? L.dec_kv : L.enc_kv, l, cache_rows, d), *v = k + cache_rows * d;
		w->dst[r] = w->writes[r] ? k + t * d : NULL;
		w->dst2[r] = w->writes[r] ? v + t * d : NULL;
		w->kc[r] = k;
		w->vc[r] = v;
		w->len[r] = km->pass && !decoder ? reps : m->active ? t + 1 : reps;
	}
	be->scatter(s, rows, (uint32_t)d, w->qkv + d, 3 * d, w->dst);
	be->scatter(s, rows, (uint32_t)d, w->qkv + 2 * d, 3 * d, w->dst2);
	be->attention(s, rows, km->heads, km->dk, w->qkv, 3 * d, w->kc, w->vc, d, w->len, w->a, d);
	be->gemm(s, ly->w[TF_W_O], rows, w->a, d, w->o, d);
	be->bias_act(s, rows, (uint32_t)d, w->o, d, ly->b[TF_B_O], RT_ACT_NONE);
	be->add_layernorm(s, rows, (uint32_t)d, w->x, d, w->o, d, ly->b[TF_G1], ly->b[TF_BE1]);
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

static void tf_store_x(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t rows,
                       const struct rt_member *mb, int decoder)
{
	for (uint32_t r = 0; r < rows; r++) {
		const struct rt_member *m = &mb[w->member[r]];
		struct tf_layout L = tf_layout(km, m->input_len, m->output_len);
		w->dst[r] = w->writes[r] ? tf_x_at(km, &L, m, w->tok[r], decoder) : NULL;
	}
	km->h.be->scatter(s, rows, km->d, w->x, km->d, w->dst);
}

static void tf_cross_kv(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t rows,
                        const struct rt_member *mb)
{
	const struct rt_backend_ops *be = km->h.be;
	const size_t d = km->d;
	tf_input(km, w, s, rows, mb, 0, 0);
	for (uint32_t l = 0; l < km->ndec; l++) {
		be->gemm(s, km->cross[l], rows, w->x, d, w->kv, 2 * d);
		be->bias_act(s, rows, 2 * (uint32_t)d, w->kv, 2 * d, km->cross_b[l], RT_ACT_NONE);
		for (uint32_t r = 0; r < rows; r++) {
			const struct rt_member *m = &mb[w->member[r]];
			struct tf_layout L = tf_layout(km, m->input_len, m->output_len);
			float *k = tf_cache_k(m->state, L.cross_kv, l, L.ilen, d);
			w->dst[r] = w->writes[r] ? k + w->tok[r] * d : NULL;
			w->dst2[r] = w->writes[r] ? k + L.ilen * d + w->tok[r] * d : NULL;
		}
		be->scatter(s, rows, (uint32_t)d, w->kv, 2 * d, w->dst);
		be->scatter(s, rows, (uint32_t)d, w->kv + d, 2 * d, w->dst2);
	}
}

static void tf_proj(const struct rt_model *km, struct tf_work *w, struct rt_stream *s, uint32_t n,
                    const struct rt_member *mb)
{
	tf_input(km, w, s, n, mb, 0, 1);
	for (uint32_t i = 0; i < n; i++) {
		struct tf_layout L = tf_layout(km, mb[i].input_len, mb[i].output_len);
		w->tok_out[i] = mb[i].active ? (int32_t *)((unsigned char *)mb[i].state + L.tok_out_b) + w->tok[i] + 1
		                             : NULL;
	}
	km->h.be->gemm(s, km->proj, n, w->x, km->d, w->logits, km->vocab);
	km->h.be->bias_argmax(s, n, km->vocab, w->logits, km->vocab, km->proj_b, w->tok_out);
}

static void tf_run_node(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t node, uint32_t n,
                        const struct rt_member *mb)
{
	struct tf_work *w = work;
	int decoder = node >= km->h.m->segments[1].first_node;
	uint32_t rows = tf_rows(km, w, n, mb, decoder);
	if (node == km->cross_node) {
		tf_cross_kv(km, w, s, rows, mb);
		return;
	}
	if (node == km->proj_node) {
		tf_proj(km, w, s, rows, mb);
		return;
	}
	for (uint32_t l = 0; l < km->nenc; l++)
		if (km->enc[l].node == node) {
			tf_input(km, w, s, rows, mb, l == 0, 0);
			tf_self_attn(km, w, s, rows, mb, &km->enc[l], l, 0);
			tf_ffn(km, w, s, rows, &km->enc[l], 0);
			tf_store_x(km, w, s, rows, mb, 0);
			return;
		}
	for (uint32_t l = 0; l < km->ndec; l++)
		if (km->dec[l].node == node) {
			tf_input(km, w, s, rows, mb, l == 0, 1);
			tf_self_attn(km, w, s, rows, mb, &km->dec[l], l, 1);
			tf_cross_attn(km, w, s, rows, mb, &km->dec[l], l);
			tf_ffn(km, w, s, rows, &km->dec[l], 1);
			tf_store_x(km, w, s, rows, mb, 1);
			return;
		}
}

/* The final vector: the top decoder output, or without output steps the
 * encoder's output for the last input token. */
static int tf_outputs(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
                      struct rt_outputs *out, char *err, size_t errlen)
{
	struct tf_layout L = tf_layout(km, input_len, output_len);
	const unsigned char *st = state;
	size_t x = km->pass && output_len == 0 && input_len ? L.enc_x + (size_t)(input_len - 1) * km->d : 0;
	out->nvalues = km->d;
	out->ntokens = output_len;
	if (km->h.be->download(km->h.dev, out->values, (const float *)state + x, km->d * sizeof(float), err,
	                       errlen) != 0)
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
