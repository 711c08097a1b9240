/* runtime/kern_rnn.c: the rnn kernel family of kernels.h: LSTM and GRU
 * cells, an encoder alone (lstm, gru) or an encoder-decoder with a greedy
 * output projection (seq2seq).
 *
 * One cell step for a batch of n requests (BatchMaker Sec. 4.3):
 *   gather   X = [embedding(token_i), h_i] (n x (E+H)), C = c_i
 *   product  LSTM: G = X W (n x 4H, the four gates fused, DeepCPU Sec. 5);
 *            GRU:  Gx = x Wx, Gh = h Wh (n x 3H each)
 *   cell     element-wise gates (backend lstm / gru)
 *   scatter  h_i, c_i back into each request's state
 * The projection step gathers h_i, multiplies by the H x V projection and
 * writes argmax(logits + bias) as the request's next token (Amun Algorithm
 * 4), which the next decoder step embeds (feed previous). The decoder starts
 * from the encoder's final state and token 0.
 *
 * State of a request: h[H], c[H], then int32 tokens: input[max(I, 1)],
 * output[O + 1] (output[0] is the start token). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "../util/errkind.h"

#define RNN_INPUT_VOCAB 4096   /* source tokens: the model files give no input vocabulary; a lookup
                                * copies E floats whatever the table's size */
enum { RNN_TAG_W = 1, RNN_TAG_WH, RNN_TAG_BIAS, RNN_TAG_EMB, RNN_TAG_PROJ, RNN_TAG_PROJ_BIAS };
#define RNN_TAG_TOKENS (1ull << 40)

struct rnn_cell {
	int gru;                     /* 0 LSTM, 1 GRU */
	uint32_t node;               /* node type */
	uint32_t e, h;               /* input (embedding) width, hidden size */
	uint32_t vocab;              /* rows of its embedding table */
	struct rt_weight *w;         /* LSTM: (E+H) x 4H; GRU: E x 3H */
	struct rt_weight *wh;        /* GRU: H x 3H */
	float *bias;                 /* device: 4H */
	float *emb;                  /* device: vocab x E */
};

struct rt_model {
	struct rt_model_head h;             /* first: be, dev, m, seed, weight_bytes */
	struct rnn_cell enc, dec;
	int has_dec;
	uint32_t proj_node, vocab;          /* decoder projection H x vocab */
	struct rt_weight *proj;
	float *proj_bias;
};

struct rnn_work {
	float *x, *g, *gh, *c, *hn, *hp, *logits;   /* device, max_rows rows each */
	const float **src_h, **src_c;                /* host pointer lists, max_rows each */
	float **dst_h, **dst_c;
	const int32_t **tok_in;
	int32_t **tok_out;
};

/* Reads a cell node: LSTM (one product, N = 4H, K = E + H) or GRU (two
 * products of N = 3H: x by E x 3H and h by H x 3H, as two terms or one term
 * x2 when E = H). */
static int rnn_cell_shape(const struct mdl_node *nd, struct rnn_cell *c, char *why, size_t len)
{
	const struct mdl_gemm *g = nd->gemms;
	for (uint32_t i = 0; i < nd->ngemms; i++)
		if (g[i].m_per_sample != 1 || g[i].weight_shared || mdl_gemm_steps(&g[i]) != 1) {
			snprintf(why, len, "node %s: a cell's products have M = 1, weights, one step", nd->name);
			return 0;
		}
	if (nd->ngemms == 1 && g[0].count == 1 && g[0].n % 4 == 0 && g[0].k > g[0].n / 4) {
		c->gru = 0;
		c->h = (uint32_t)(g[0].n / 4);
		c->e = (uint32_t)(g[0].k - c->h);
		return 1;
	}
	if (nd->ngemms == 1 && g[0].count == 2 && g[0].n % 3 == 0 && g[0].k == g[0].n / 3) {
		c->gru = 1;
		c->h = c->e = (uint32_t)g[0].k;
		return 1;
	}
	if (nd->ngemms == 2 && g[0].count == 1 && g[1].count == 1 && g[0].n == g[1].n && g[0].n % 3 == 0 &&
	    g[1].k == g[0].n / 3) {
		c->gru = 1;
		c->h = (uint32_t)g[1].k;
		c->e = (uint32_t)g[0].k;
		return 1;
	}
	snprintf(why, len, "node %s is neither an LSTM cell (gemm=1,E+H,4H) nor a GRU cell "
	         "(gemm=1,E,3H gemm=1,H,3H)", nd->name);
	return 0;
}

static int rnn_shape(const struct mdl_model *m, struct rt_model *out, char *why, size_t len)
{
	struct rt_model km = { 0 };
	if (m->nsegments < 1 || m->segments[0].kind != MDL_ENCODER || m->segments[0].nnodes != 1) {
		snprintf(why, len, "needs one encoder cell node first");
		return 0;
	}
	km.enc.node = m->segments[0].first_node;
	if (!rnn_cell_shape(&m->nodes[km.enc.node], &km.enc, why, len))
		return 0;
	if (m->nsegments == 2) {
		const struct mdl_segment *sd = &m->segments[1];
		if (sd->kind != MDL_DECODER || sd->nnodes != 2) {
			snprintf(why, len, "after the encoder cell only a decoder cell and a projection");
			return 0;
		}
		km.has_dec = 1;
		km.dec.node = sd->first_node;
		km.proj_node = sd->first_node + 1;
		if (!rnn_cell_shape(&m->nodes[km.dec.node], &km.dec, why, len))
			return 0;
		const struct mdl_node *p = &m->nodes[km.proj_node];
		if (p->ngemms != 1 || p->gemms[0].count != 1 || p->gemms[0].m_per_sample != 1 ||
		    p->gemms[0].weight_shared || p->gemms[0].k != km.dec.h || mdl_gemm_steps(&p->gemms[0]) != 1) {
			snprintf(why, len, "node %s is not a projection gemm=1,H,V of the decoder's state", p->name);
			return 0;
		}
		if (km.dec.h != km.enc.h) {
			snprintf(why, len, "the decoder's hidden size must equal the encoder's (it starts from its state)");
			return 0;
		}
		km.vocab = (uint32_t)p->gemms[0].n;
		km.dec.vocab = km.vocab;
	} else if (m->nsegments != 1) {
		snprintf(why, len, "at most an encoder and a decoder segment");
		return 0;
	}
	km.enc.vocab = RNN_INPUT_VOCAB;
	if (out)
		*out = km;
	return 1;
}

static int rnn_match(const struct mdl_model *m, char *why, size_t len)
{
	return rnn_shape(m, NULL, why, len);
}

static void rnn_cell_free(struct rt_model *km, struct rnn_cell *c)
{
	km->h.be->weight_destroy(km->h.dev, c->w);
	km->h.be->weight_destroy(km->h.dev, c->wh);
	if (c->bias)
		km->h.be->free(km->h.dev, c->bias);
	if (c->emb)
		km->h.be->free(km->h.dev, c->emb);
}

static void rnn_destroy(struct rt_model *km)
{
	if (!km)
		return;
	rnn_cell_free(km, &km->enc);
	if (km->has_dec) {
		rnn_cell_free(km, &km->dec);
		km->h.be->weight_destroy(km->h.dev, km->proj);
		if (km->proj_bias)
			km->h.be->free(km->h.dev, km->proj_bias);
	}
	free(km);
}

/* Weights uniform in +-1/sqrt(H) (the usual RNN initialisation, so gates
 * neither saturate nor vanish), embeddings in +-1. */
static int rnn_cell_create(struct rt_model *km, struct rnn_cell *c, char *err, size_t errlen)
{
	const struct rt_backend_ops *be = km->h.be;
	float s = 1.0f / sqrtf((float)c->h);
	uint64_t tag = (uint64_t)c->node << 8;
	if (!c->gru) {
		if (rt_kern_weight(be, km->h.dev, c->e + c->h, 4 * c->h, s, km->h.seed, tag + RNN_TAG_W, &c->w, err, errlen))
			return -1;
	} else if (rt_kern_weight(be, km->h.dev, c->e, 3 * c->h, s, km->h.seed, tag + RNN_TAG_W, &c->w, err, errlen) ||
	           rt_kern_weight(be, km->h.dev, c->h, 3 * c->h, s, km->h.seed, tag + RNN_TAG_WH, &c->wh, err, errlen)) {
		return -1;
	}
	c->bias = rt_kern_table(be, km->h.dev, 4 * (size_t)c->h, 0.0f, s, km->h.seed, tag + RNN_TAG_BIAS, err, errlen);
	if (!c->bias)
		return -1;
	c->emb = rt_kern_table(be, km->h.dev, (size_t)c->vocab * c->e, 0.0f, 1.0f, km->h.seed, tag + RNN_TAG_EMB, err,
	                       errlen);
	if (!c->emb)
		return -1;
	km->h.weight_bytes += ((uint64_t)(c->gru ? c->e * 3 + c->h * 3 : (c->e + c->h) * 4) * c->h + 4 * c->h +
	                     (uint64_t)c->vocab * c->e) * sizeof(float);
	return 0;
}

static int rnn_create(const struct mdl_model *m, const struct rt_backend_ops *be, struct rt_dev *dev,
                      uint64_t seed, struct rt_model **out, char *err, size_t errlen)
{
	*out = NULL;
	struct rt_model *km = rt_kern_model_new(sizeof *km, m, be, dev, seed, rnn_shape, err, errlen);
	if (!km)
		return -1;
	if (rnn_cell_create(km, &km->enc, err, errlen) != 0)
		goto fail;
	if (km->has_dec) {
		float s = 1.0f / sqrtf((float)km->dec.h);
		uint64_t tag = (uint64_t)km->proj_node << 8;
		if (rnn_cell_create(km, &km->dec, err, errlen) != 0 ||
		    rt_kern_weight(be, dev, km->dec.h, km->vocab, s, seed, tag + RNN_TAG_PROJ, &km->proj, err, errlen) != 0)
			goto fail;
		km->proj_bias = rt_kern_table(be, dev, km->vocab, 0.0f, s, seed, tag + RNN_TAG_PROJ_BIAS, err, errlen);
		if (!km->proj_bias)
			goto fail;
		km->h.weight_bytes += ((uint64_t)km->dec.h + 1) * km->vocab * sizeof(float);
	}
	*out = km;
	return 0;
fail:
	rnn_destroy(km);
	return -1;
}

/* Widest product input of a cell: [x, h] for an LSTM, x or h for a GRU. */
static uint32_t rnn_cell_k(const struct rnn_cell *c)
{
	return c->gru ? (c->e > c->h ? c->e : c->h) : c->e + c->h;
}

static void rnn_info(const struct rt_model *km, struct rt_model_info *o)
{
	uint32_t kx = rnn_cell_k(&km->enc);
	if (km->has_dec && rnn_cell_k(&km->dec) > kx)
		kx = rnn_cell_k(&km->dec);
	*o = (struct rt_model_info){ .family = "rnn", .output_floats = km->enc.h, .max_k = kx,
	                             .weight_bytes = km->h.weight_bytes };
	int n = snprintf(o->detail, sizeof o->detail, "%s encoder E=%u H=%u", km->enc.gru ? "GRU" : "LSTM",
	                 km->enc.e, km->enc.h);
	if (km->has_dec && n > 0 && (size_t)n < sizeof o->detail)
		snprintf(o->detail + n, sizeof o->detail - (size_t)n, ", %s decoder E=%u, projection to %u tokens",
		         km->dec.gru ? "GRU" : "LSTM", km->dec.e, km->vocab);
}

/* Byte offsets inside a request's state. */
static size_t rnn_tok_in_off(const struct rt_model *km)
{
	return 2 * (size_t)km->enc.h * sizeof(float);
}

static size_t rnn_tok_out_off(const struct rt_model *km, uint32_t input_len)
{
	return rnn_tok_in_off(km) + (size_t)(input_len ? input_len : 1) * sizeof(int32_t);
}

static size_t rnn_state_bytes(const struct rt_model *km, uint32_t input_len, uint32_t output_len)
{
	return rnn_tok_out_off(km, input_len) + ((size_t)output_len + 1) * sizeof(int32_t);
}

static int rnn_state_init(const struct rt_model *km, void *state, uint64_t id, uint32_t input_len,
                          uint32_t output_len, char *err, size_t errlen)
{
	return rt_kern_token_state(km->h.be, km->h.dev, state, rnn_state_bytes(km, input_len, output_len),
	                           rnn_tok_in_off(km), input_len, km->enc.vocab, km->h.seed, RNN_TAG_TOKENS + id, err,
	                           errlen);
}

static void rnn_work_destroy(const struct rt_model *km, void *work)
{
	struct rnn_work *w = work;
	if (!w)
		return;
	float *bufs[] = { w->x, w->g, w->gh, w->c, w->hn, w->hp, w->logits };
	rt_kern_free_buffers(km->h.be, km->h.dev, bufs, sizeof bufs / sizeof bufs[0]);
	free(w->src_h);
	free(w->src_c);
	free(w->dst_h);
	free(w->dst_c);
	free(w->tok_in);
	free(w->tok_out);
	free(w);
}

static int rnn_work_create(const struct rt_model *km, uint32_t rows, uint32_t pass_rows, void **work, char *err,
                           size_t errlen)
{
	(void)pass_rows;   /* no pass nodes */
	struct rnn_work *w = calloc(1, sizeof *w);
	*work = NULL;
	if (!w)
		goto oom;
	size_t H = km->enc.h, kx = 0;
	struct rt_model_info info;
	rnn_info(km, &info);
	kx = info.max_k;
	struct rt_dev *d = km->h.dev;
	w->x = km->h.be->alloc(d, rows * kx * sizeof(float));
	w->g = km->h.be->alloc(d, rows * 4 * H * sizeof(float));
	w->gh = km->h.be->alloc(d, rows * 3 * H * sizeof(float));
	w->c = km->h.be->alloc(d, rows * H * sizeof(float));
	w->hn = km->h.be->alloc(d, rows * H * sizeof(float));
	w->hp = km->h.be->alloc(d, rows * H * sizeof(float));
	w->logits = km->has_dec ? km->h.be->alloc(d, (size_t)rows * km->vocab * sizeof(float)) : NULL;
	w->src_h = calloc(rows, sizeof *w->src_h);
	w->src_c = calloc(rows, sizeof *w->src_c);
	w->dst_h = calloc(rows, sizeof *w->dst_h);
	w->dst_c = calloc(rows, sizeof *w->dst_c);
	w->tok_in = calloc(rows, sizeof *w->tok_in);
	w->tok_out = calloc(rows, sizeof *w->tok_out);
	if (!w->x || !w->g || !w->gh || !w->c || !w->hn || !w->hp || (km->has_dec && !w->logits) || !w->src_h ||
	    !w->src_c || !w->dst_h || !w->dst_c || !w->tok_in || !w->tok_out)
		goto oom;
	*work = w;
	return 0;
oom:
	rnn_work_destroy(km, w);
	err_memory(err, errlen, "out of memory for a worker's batch buffers (%u rows)", rows);
	return -1;
}

/* The step a member reads: its own, or for a padding row its segment's
 * last (clamped, so every index it reads exists). */
static uint32_t rnn_step(const struct rt_model *km, const struct rt_member *mb, uint32_t reps)
{
	uint32_t t = rt_step_at(km->h.m, mb->pos, mb->input_len, mb->output_len);
	if (!mb->active && t >= reps)
		t = reps ? reps - 1 : 0;
	return t;
}

static void rnn_run_cell(const struct rt_model *km, struct rnn_work *w, struct rt_stream *s,
                         const struct rnn_cell *c, uint32_t n, const struct rt_member *mb)
{
	const struct rt_backend_ops *be = km->h.be;
	const uint32_t E = c->e, H = c->h, is_enc = c == &km->enc;
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *st = mb[i].state;
		uint32_t t = rnn_step(km, &mb[i], is_enc ? mb[i].input_len : mb[i].output_len);
		int32_t *toks = (int32_t *)(st + (is_enc ? rnn_tok_in_off(km) : rnn_tok_out_off(km, mb[i].input_len)));
		w->tok_in[i] = toks + t;
		w->src_h[i] = (const float *)st;
		w->src_c[i] = (const float *)st + H;
		w->dst_h[i] = mb[i].active ? (float *)st : NULL;
		w->dst_c[i] = mb[i].active ? (float *)st + H : NULL;
	}
	if (!c->gru) {
		size_t ldx = (size_t)E + H;
		be->embed(s, n, E, w->x, ldx, c->emb, w->tok_in);
		be->gather(s, n, H, w->x + E, ldx, w->src_h);
		be->gather(s, n, H, w->c, H, w->src_c);
		be->gemm(s, c->w, n, w->x, ldx, w->g, 4 * (size_t)H);
		be->lstm(s, n, H, w->g, 4 * (size_t)H, c->bias, w->c, w->hn);
		be->scatter(s, n, H, w->hn, H, w->dst_h);
		be->scatter(s, n, H, w->c, H, w->dst_c);
	} else {
		be->embed(s, n, E, w->x, E, c->emb, w->tok_in);
		be->gather(s, n, H, w->hp, H, w->src_h);
		be->gemm(s, c->w, n, w->x, E, w->g, 3 * (size_t)H);
		be->gemm(s, c->wh, n, w->hp, H, w->gh, 3 * (size_t)H);
		be->gru(s, n, H, w->g, w->gh, c->bias, w->hp, w->hn);
		be->scatter(s, n, H, w->hn, H, w->dst_h);
	}
}

static void rnn_run_proj(const struct rt_model *km, struct rnn_work *w, struct rt_stream *s, uint32_t n,
                         const struct rt_member *mb)
{
	const struct rt_backend_ops *be = km->h.be;
	const uint32_t H = km->dec.h;
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *st = mb[i].state;
		uint32_t t = rnn_step(km, &mb[i], mb[i].output_len);
		int32_t *toks = (int32_t *)(st + rnn_tok_out_off(km, mb[i].input_len));
		w->src_h[i] = (const float *)st;
		w->tok_out[i] = mb[i].active ? toks + t + 1 : NULL;
	}
	be->gather(s, n, H, w->hn, H, w->src_h);
	be->gemm(s, km->proj, n, w->hn, H, w->logits, km->vocab);
	be->bias_argmax(s, n, km->vocab, w->logits, km->vocab, km->proj_bias, w->tok_out);
}

static void rnn_run_node(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t node, uint32_t n,
                         const struct rt_member *members)
{
	if (node == km->enc.node)
		rnn_run_cell(km, work, s, &km->enc, n, members);
	else if (km->has_dec && node == km->dec.node)
		rnn_run_cell(km, work, s, &km->dec, n, members);
	else
		rnn_run_proj(km, work, s, n, members);
}

static int rnn_outputs(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
                       struct rt_outputs *out, char *err, size_t errlen)
{
	const unsigned char *st = state;
	out->nvalues = km->enc.h;
	if (km->h.be->download(km->h.dev, out->values, st, km->enc.h * sizeof(float), err, errlen) != 0)
		return -1;
	out->ntokens = km->has_dec ? output_len : 0;
	if (out->ntokens &&
	    km->h.be->download(km->h.dev, out->tokens, st + rnn_tok_out_off(km, input_len) + sizeof(int32_t),
	                     output_len * sizeof(int32_t), err, errlen) != 0)
		return -1;
	return 0;
}

const struct rt_model_ops rt_kern_rnn = {
	.family = "rnn",
	.match = rnn_match,
	.create = rnn_create,
	.destroy = rnn_destroy,
	.info = rnn_info,
	.state_bytes = rnn_state_bytes,
	.state_init = rnn_state_init,
	.work_create = rnn_work_create,
	.work_destroy = rnn_work_destroy,
	.run_node = rnn_run_node,
	.outputs = rnn_outputs,
};
