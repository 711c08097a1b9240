/* runtime/kernels.h: the real computation behind a model file's nodes,
 * written once on the backend operations of backend.h. A kernel family
 * recognises the models it can run from their node kinds and shapes:
 *
 *  - rnn (kern_rnn.c): one encoder cell, and optionally a decoder cell and
 *    an output projection. A cell node is an LSTM (one product [x, h] times
 *    E+H x 4H: the four gates fused into one GEMM, DeepCPU Sec. 5) or a GRU
 *    (two products, x times E x 3H and h times H x 3H, each fusing the three
 *    gates; the reset gate multiplies the hidden product, so the two cannot
 *    be summed inside one GEMM without zero blocks). The decoder is fed its
 *    previous output (greedy: bias + argmax fused, Amun Algorithm 4).
 *    Models: lstm, gru, seq2seq.
 *  - transformer (kern_transformer.c): encoder layers, a cross key/value
 *    node, decoder layers and an output projection; the encoder one pass
 *    over each request's tokens (models/transformer.model) or unrolled per
 *    token (transformer-per-token); every request keeps its own key/value
 *    caches.
 *  - mlp (kern_mlp.c): static dense layers with ReLU between them (the
 *    static case). Model: mlp.
 *  - llm (kern_llm.c): a decoder-only LLM (an `llm` line) run by
 *    iterations (DESIGN.md section 3b): each member runs its next tokens on
 *    its own key/value cache, prefill chunks and decode steps alike.
 *    Model: llm-tiny.
 *
 * Weights, embeddings and each request's input are deterministic
 * pseudo-random numbers from the seed (rt_rand_*), so two runs with the same
 * seed compute the same thing.
 *
 * Contract:
 *  - A model's weights are created once (create) and shared by all
 *    workers, read-only. Each worker has its own work buffers (work_create),
 *    sized for nodes of max_rows members (LLM families: rows) and pass
 *    nodes of max_pass_rows rows: a pass node runs a row for each of its
 *    members' input tokens (0 for a model without a pass segment). A
 *    caller keeps every node within those bounds (rt_pass_rows).
 *  - A request's state (state_bytes, in device memory) is owned by the
 *    request: state_init fills it before its first node; run_node advances
 *    the members' states by one node each; nothing else writes it.
 *  - run_node (node-level families) runs node type `node` for n members, each at its own unrolled
 *    position (pos, whose node type must be `node`). Members with active = 0
 *    are padding (a padded graph batch): computed with the others, written
 *    nowhere; so are a pass node's rows past a member's input_len (pad_len).
 *    A member's results are the same whatever the other members.
 *  - outputs reads a finished request's results: the emitted tokens (models
 *    with a decoder) and the final vector (the last hidden state, or the
 *    last layer's output).
 */
#ifndef SB_RT_KERNELS_H
#define SB_RT_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "../models/model.h"
#include "backend.h"

/* Each kernel family defines its own struct rt_model (one family per
 * file); all of them begin with this head, which rt_kern_model_new fills. */
struct rt_model_head {
	const struct rt_backend_ops *be;
	struct rt_dev *dev;                 /* not owned */
	const struct mdl_model *m;          /* not owned */
	uint64_t seed;                      /* weights and request inputs */
	uint64_t weight_bytes;              /* device bytes of weights, summed by the family */
};
struct rt_model;

struct rt_member {
	uint64_t id;                 /* request id: its inputs derive from (seed, id) */
	uint32_t input_len, output_len;
	uint64_t pos;                /* unrolled position of the node it runs */
	int active;                  /* 0: padding row */
	uint32_t pad_len;            /* a pass node runs max(input_len, pad_len) rows for it (a padded graph
	                              * batch pads each member to its longest input): rows past input_len
	                              * are padding, computed and written nowhere */
	void *state;                 /* device memory of state_bytes */
};

/* A member of an LLM iteration (run_iter): it runs the tokens at positions
 * [context, context + tokens) of its sequence (the prompt, then its output
 * tokens so far) on the key/value cache of positions [0, context). */
struct rt_iter_member {
	uint64_t id;                 /* request id: its prompt derives from (seed, id) */
	uint32_t input_len, output_len;
	uint32_t context, tokens;
	int emit;                    /* 1: the last position yields output token context + tokens - input_len */
	void *state;                 /* device memory of state_bytes */
};

struct rt_outputs {
	uint32_t ntokens;            /* emitted tokens (output_len for models with a decoder, else 0) */
	int32_t *tokens;             /* caller-allocated, output_len entries */
	uint32_t nvalues;            /* final vector length (rt_model_info.output_floats) */
	float *values;               /* caller-allocated */
};

struct rt_model_info {
	const char *family;          /* "rnn", "transformer", "mlp" */
	uint32_t output_floats;      /* length of the final vector */
	uint32_t max_k;              /* widest product input (stream scratch) */
	uint64_t weight_bytes;       /* bytes of weights and tables */
	char detail[160];            /* e.g. "LSTM encoder H=1024 E=1024, LSTM decoder, vocab 30000" */
};

struct rt_model_ops {
	const char *family;
	/* 1 when the family runs model m; else 0 with why. */
	int (*match)(const struct mdl_model *m, char *why, size_t len);
	int (*create)(const struct mdl_model *m, const struct rt_backend_ops *be, struct rt_dev *dev, uint64_t seed,
	              struct rt_model **out, char *err, size_t errlen);
	void (*destroy)(struct rt_model *km);
	void (*info)(const struct rt_model *km, struct rt_model_info *out);
	size_t (*state_bytes)(const struct rt_model *km, uint32_t input_len, uint32_t output_len);
	int (*state_init)(const struct rt_model *km, void *state, uint64_t id, uint32_t input_len,
	                  uint32_t output_len, char *err, size_t errlen);
	int (*work_create)(const struct rt_model *km, uint32_t max_rows, uint32_t max_pass_rows, void **work, char *err,
	                   size_t errlen);
	void (*work_destroy)(const struct rt_model *km, void *work);
	void (*run_node)(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t node, uint32_t n,
	                 const struct rt_member *members);
	/* LLM families, in place of run_node (NULL elsewhere): one iteration of
	 * the n members' tokens, summed, plus pad rows of padding (static
	 * batching) that go through the products and are written nowhere.
	 * work_create's max_rows bounds the rows: 0, or -1 with err beyond it.
	 * A member's results (cache, tokens) are the same whatever its batch and
	 * however its positions are split among iterations. */
	int (*run_iter)(const struct rt_model *km, void *work, struct rt_stream *s, uint32_t n,
	                const struct rt_iter_member *members, uint32_t pad, char *err, size_t errlen);
	/* Call after the stream finished the request's last node. */
	int (*outputs)(const struct rt_model *km, const void *state, uint32_t input_len, uint32_t output_len,
	               struct rt_outputs *out, char *err, size_t errlen);
};

/* The family that runs m, or NULL with err listing the built-in models that
 * have kernels and why m fits none. */
const struct rt_model_ops *rt_kernels_find(const struct mdl_model *m, char *err, size_t errlen);

/* ---- deterministic pseudo-random numbers (splitmix64), shared by the families ---- */

/* The i-th 64-bit value of the stream (seed, tag): a pure function. */
uint64_t rt_rand_u64(uint64_t seed, uint64_t tag, uint64_t i);
/* Fills v[0..n) with uniform values in [-scale, scale) from stream (seed, tag). */
void rt_rand_fill(float *v, size_t n, float scale, uint64_t seed, uint64_t tag);

/* Helpers for the families: a k x n weight of uniform [-scale, scale)
 * values from stream (seed, tag), and a device table of n floats offset +
 * such values.
 * 0 / a pointer, or -1 / NULL with err. */
int rt_kern_weight(const struct rt_backend_ops *be, struct rt_dev *dev, uint32_t k, uint32_t n, float scale,
                   uint64_t seed, uint64_t tag, struct rt_weight **out, char *err, size_t errlen);
float *rt_kern_table(const struct rt_backend_ops *be, struct rt_dev *dev, size_t n, float offset, float scale, uint64_t seed,
                     uint64_t tag, char *err, size_t errlen);

/* The set-up every family's create shares: a zeroed model of size bytes
 * (its struct rt_model, which begins with struct rt_model_head) with the
 * head filled, after shape(m, model, why) has accepted the model's shapes.
 * NULL with err ("model NAME: why", or out of memory). */
struct rt_model *rt_kern_model_new(size_t size, const struct mdl_model *m, const struct rt_backend_ops *be,
                                   struct rt_dev *dev, uint64_t seed,
                                   int (*shape)(const struct mdl_model *m, struct rt_model *km, char *why, size_t len),
                                   char *err, size_t errlen);

/* A request's initial device state: bytes of zeros with ntok token ids in
 * [0, vocab) from stream (seed, tag) as int32 at byte offset tok_off,
 * uploaded to state. 0, or -1 with err. */
int rt_kern_token_state(const struct rt_backend_ops *be, struct rt_dev *dev, void *state, size_t bytes,
                        size_t tok_off, uint32_t ntok, uint32_t vocab, uint64_t seed, uint64_t tag, char *err,
                        size_t errlen);
/* Frees the non-NULL device buffers among bufs[0..n). */
void rt_kern_free_buffers(const struct rt_backend_ops *be, struct rt_dev *dev, float *const *bufs, size_t n);

/* Which repetition of its segment unrolled position pos is (the encoder
 * step, the decoder step; 0 for static nodes). */
uint32_t rt_step_at(const struct mdl_model *m, uint64_t pos, uint32_t input_len, uint32_t output_len);

/* The rows a pass node of m may run with up to max_members members of up
 * to longest_input tokens each (their tokens, summed, saturating at
 * UINT32_MAX); 0 when m has no pass segment. */
uint32_t rt_pass_rows(const struct mdl_model *m, uint32_t max_members, uint32_t longest_input);

#endif
