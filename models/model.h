/* models/model.h: a DNN as a list of typed nodes with GEMM shapes, and how one
 * request's graph is unrolled from them (LazyBatching Sec. II-A, Algorithm 1;
 * BatchMaker Sec. 3.1 "cell types").
 *
 * Contract:
 *  - A model is immutable after mdl_load*() returns; every other module holds
 *    a const pointer and never frees it.
 *  - Nodes are listed in graph order. A maximal run of consecutive nodes of the
 *    same kind forms a *segment*. One request's unrolled chain is: each static
 *    segment once, each encoder segment input_len times, each decoder segment
 *    output_len times (each time: every node of the segment, in order), each
 *    pass segment once, every node over all input_len tokens at once (a
 *    Transformer encoder layer: M = the tokens, its attention L x d x L).
 *    Tree models (TreeLSTM, BatchMaker Sec. 2.1, 4.4) have a leaf segment and
 *    right after it an internal segment; a request with L = input_len leaves
 *    is a balanced binary tree, unrolled as its ASAP levels: one position per
 *    leaf node running all L leaf cells, then ceil(log2 L) internal levels,
 *    each running the cells of that level (mdl_cells_at), so a level's cells
 *    only depend on the level below.
 *  - Node type ids are the indices into nodes[]; nodes with the same id share
 *    weights and may be batched together across requests.
 *  - GEMM M is given per sample (per request, per unrolled step): a batch of b
 *    runs the GEMM with M = b * m_per_sample.
 */
#ifndef SB_MODEL_H
#define SB_MODEL_H

#include <stddef.h>
#include <stdint.h>

enum mdl_kind {
	MDL_STATIC = 0,  /* runs once per request */
	MDL_ENCODER,     /* runs input_len times */
	MDL_DECODER,     /* runs output_len times */
	MDL_LEAF,        /* tree leaf cell (reserved) */
	MDL_INTERNAL,    /* tree internal cell (reserved) */
	MDL_PASS,        /* runs once per request over all input_len tokens at once (a Transformer encoder layer) */
	MDL_KIND_COUNT
};

struct mdl_gemm {
	uint64_t m_per_sample;   /* rows contributed by one sample */
	uint64_t k;              /* reduction dimension */
	uint64_t n;              /* output columns (weights are K x N) */
	uint32_t count;          /* identical GEMMs in the node (e.g. per head) */
	uint32_t weight_shared;  /* 0: K x N operand is a weight; 1: activation x activation (attention), no weights */
	uint32_t steps;          /* sequential runs with the same operand in one node execution (sSTEPS: RNN timesteps inside one task); 0 is read as 1 */
	uint32_t len_dims;       /* a term over a request's own length: MDL_LEN_K / MDL_LEN_N when K / N is it */
	uint32_t len_var;        /* which length (enum mdl_len_var): L in a pass node's member terms; P or S in a
	                          * decoder node's terms, held in gemms[] at the model's estimate lengths */
	uint32_t is_conv;        /* 1: lowered from a conv= term, conv says how */
	struct mdl_conv {        /* im2col provenance of a conv= term (FORMAT.md) */
		uint32_t h, w, c;          /* input height, width, channels */
		uint32_t r, s;             /* filter height, width */
		uint32_t k;                /* output channels */
		uint32_t stride_h, stride_w;
		uint32_t pad_h, pad_w;     /* zero padding on each side */
		uint32_t groups;           /* channel groups (C for depthwise) */
		uint32_t out_h, out_w;     /* output height, width */
	} conv;
};

enum { MDL_LEN_K = 1, MDL_LEN_N = 2 };

/* The lengths an attn term's K or N may name (FORMAT.md): L, a pass node's
 * request over all its tokens; P, the positions a decoder step attends to in
 * its own output (step j of a request: j); S, the request's input length (a
 * decoder's attention over the encoder's output). */
enum mdl_len_var { MDL_VAR_NONE = 0, MDL_VAR_L, MDL_VAR_P, MDL_VAR_S };

/* Steps of a GEMM term: 1 unless the term says more. */
static inline uint32_t mdl_gemm_steps(const struct mdl_gemm *g)
{
	return g->steps > 1 ? g->steps : 1;
}

#define MDL_NAME_MAX 48
#define MDL_MAX_GEMMS 8

struct mdl_node {
	char name[MDL_NAME_MAX];       /* unique within the model */
	enum mdl_kind kind;
	uint32_t ngemms;
	struct mdl_gemm gemms[MDL_MAX_GEMMS];
	uint64_t elementwise_per_sample; /* element-wise ops per sample (activations, norms, pooling) */
	uint32_t segment;              /* index into mdl_model.segments */
	/* A pass node's work that depends on each request's own length L (its
	 * attention over its L tokens): terms with L in K or N, and element-wise
	 * ops per token per token of the request (the softmax over the scores).
	 * gemms[] above holds the rest, whose M rows are per token, so a batch
	 * of requests runs it with M = their tokens, summed. */
	uint32_t nmember;
	struct mdl_gemm member[MDL_MAX_GEMMS];
	uint64_t elementwise_len;
	/* A decoder node's work that grows with the step's lengths: its attn
	 * terms over P or S (in gemms[], marked by len_var) and element-wise ops
	 * per position of P and of S (the softmax over the scores).
	 * elementwise_per_sample includes them at the model's estimate lengths. */
	uint64_t elementwise_p, elementwise_s;
	uint32_t step_p, step_s;       /* the P and S its terms are at now (the estimate lengths; 0 while parsing) */
};

struct mdl_segment {
	enum mdl_kind kind;
	uint32_t first_node;   /* index of first node in nodes[] */
	uint32_t nnodes;       /* consecutive nodes in this segment */
};

#define MDL_SPEC_MAX 128

/* A decoder-only LLM (the `llm` line, FORMAT.md): the architecture from
 * which its prefill and decode GEMMs, attention and KV cache follow. A
 * request of P prompt tokens and G generated tokens runs a prefill over
 * the P tokens (which yields the first token) and then one decode step per
 * further token, each reading the KV cache of the tokens so far. */
struct mdl_llm {
	uint32_t layers;
	uint32_t hidden;         /* d_model */
	uint32_t heads;          /* query heads */
	uint32_t kv_heads;       /* key/value heads (grouped-query attention: fewer than heads) */
	uint32_t head_dim;
	uint32_t ffn;            /* MLP inner width */
	uint32_t vocab;
	uint32_t context;        /* longest prompt + output the model takes */
	uint32_t elem_bytes;     /* bytes per weight (and per cached key/value element unless kv_dtype says) */
	uint32_t gated;          /* 1: gated MLP (SwiGLU: gate and up, then down), 0: up and down */
	uint32_t kv_bytes;       /* bytes per cached key/value element (elem_bytes unless kv_dtype is given) */
	uint32_t dtype, kv_dtype; /* enum mdl_dtype of the weights and of the KV cache; MDL_DTYPE_NONE: only bytes= */
	struct mdl_moe {         /* a mixture of experts (the moe line); experts == 0: every layer's MLP is dense */
		uint32_t experts;        /* routed experts a MoE layer holds */
		uint32_t top_k;          /* routed experts each token reaches */
		uint32_t expert_ffn;     /* each routed expert's gated MLP width */
		uint32_t shared_experts; /* experts every token runs (0: none) ... */
		uint32_t shared_ffn;     /* ... each of this gated MLP width */
		uint32_t first_layer, last_layer, layer_step; /* MoE layers: first, first + step, ... up to last */
		uint32_t router;         /* enum mdl_router */
	} moe;
};

/* Element types a model file may name (FORMAT.md): their sizes in mdl_dtype_bytes. */
enum mdl_dtype { MDL_DTYPE_NONE = 0, MDL_DTYPE_FP32, MDL_DTYPE_FP16, MDL_DTYPE_BF16, MDL_DTYPE_FP8 };
/* How a MoE layer's router turns its logits into the top-k experts' weights (FORMAT.md). */
enum mdl_router { MDL_ROUTER_TOPK_SOFTMAX = 1, MDL_ROUTER_SOFTMAX_TOPK };

/* "fp16", ... ("bytes" for MDL_DTYPE_NONE). */
const char *mdl_dtype_name(uint32_t dtype);
const char *mdl_router_name(uint32_t router);

/* Whether decoder layer i (0-based) of l has a MoE MLP. */
static inline int mdl_llm_is_moe_layer(const struct mdl_llm *l, uint32_t i)
{
	return l->moe.experts && i >= l->moe.first_layer && i <= l->moe.last_layer &&
	       (i - l->moe.first_layer) % l->moe.layer_step == 0;
}

/* The layers with a MoE MLP. */
static inline uint32_t mdl_llm_moe_layers(const struct mdl_llm *l)
{
	return l->moe.experts ? (l->moe.last_layer - l->moe.first_layer) / l->moe.layer_step + 1 : 0;
}

struct mdl_model {
	char name[MDL_NAME_MAX];
	char path[512];                  /* file it was loaded from */
	char source[256];                /* where the shapes come from (citation line) */
	uint32_t nnodes;
	struct mdl_node *nodes;          /* owned */
	uint32_t nsegments;
	struct mdl_segment *segments;    /* owned */
	char input_len_spec[MDL_SPEC_MAX];  /* default input length distribution (traces/workload.h spec syntax) */
	char output_len_spec[MDL_SPEC_MAX]; /* default output length distribution */
	int uses_input_len;              /* has an encoder segment */
	int uses_output_len;             /* has a decoder segment */
	int is_tree;                     /* has leaf + internal segments (input_len = leaves) */
	int has_member_terms;            /* a pass node has per-request terms (mdl_node.nmember, elementwise_len) */
	int has_step_terms;              /* a decoder node has terms over P or S (mdl_node_has_step_terms) */
	uint32_t estimate_p, estimate_s; /* the estimate_lengths line: the P and S that latency estimates assume
	                                  * (a node's table entry); 0 when no term names them */
	int is_llm;                      /* an LLM (llm line, no nodes): served by iterations, not nodes */
	struct mdl_llm llm;              /* is_llm only */
};

/* KV cache bytes one token holds: layers x KV heads x head size x 2 (a key
 * and a value) x element size. */
static inline uint64_t mdl_llm_kv_bytes_per_token(const struct mdl_llm *l)
{
	return (uint64_t)l->layers * l->kv_heads * l->head_dim * 2 * l->kv_bytes;
}

/* Weight bytes: per layer the QKV and output projections and the MLP (a MoE
 * layer's: every routed expert, every shared expert and the router), plus
 * the token embedding and the (untied) output projection. */
uint64_t mdl_llm_weight_bytes(const struct mdl_llm *l);

/* Loads a model from a file path. Returns 0 and sets *out (caller frees with
 * mdl_free), or -1 with a one-line message "FILE:LINE: problem" in err. */
int mdl_load_file(const char *path, struct mdl_model **out, char *err, size_t errlen);

/* Loads a built-in model by name (models/NAME.model in the models directory)
 * or, when name_or_path contains '/' or ends in ".model", from that file.
 * A built-in's model line must repeat NAME. An unknown NAME gives
 * "unknown model 'NAME' (known: a, b, ...)". */
int mdl_load(const char *name_or_path, struct mdl_model **out, char *err, size_t errlen);

void mdl_free(struct mdl_model *m);

/* The directory holding built-in model files: $SIMBATCH_MODELS if set, else
 * the compiled-in source directory. */
const char *mdl_dir(void);

/* Lists built-in model names (sorted), one per call of cb. Returns count or -1. */
int mdl_list(void (*cb)(const char *name, void *ctx), void *ctx);

#endif
