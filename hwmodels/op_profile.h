/* hwmodels/op_profile.h: measured GPU operator profiles, the tables a
 * measured GPU model (gpu_measured.h) prices an LLM iteration from.
 *
 * An operator profile (calib/tables/ops-GPU.csv) holds, for every model
 * shape profiled on one GPU and every tensor-parallel degree, the median
 * time of each operator of one transformer layer at a number of tokens: the
 * fused QKV projection, the attention output projection, the MLP's up (gate
 * and up, fused) and down projections, the two norms, rotary embedding,
 * activation, residual add, and the embedding lookup. scripts/vidur-import
 * writes it from the Vidur project's published profiles (or a user's own in
 * their format). An all-reduce profile (calib/tables/allreduce-GPU.csv)
 * holds NCCL all-reduce times by GPUs and message bytes.
 *
 * Operator profile format (CSV; '#' lines are comments, except the
 * settings "# KEY = VALUE" before the header):
 *     # simbatch llm operator profile          (the first line: what the file is)
 *     # gpu = h100                             (required)
 *     # mem_gb = 80                            (required: one GPU's memory; a GPU with a row in
 *                                               gpu_memory.c has its row's instead, one for all its tables)
 *     # source = ...                           (provenance, shown by model-info)
 *     # leave_out OP = MEDIAN% P90% ROWS       (the interpolation's measured error)
 *     # exclude = TERM, TERM ...               (optional, for ablation studies: terms priced at 0;
 *                                               an operator's name, allreduce, attention_prefill,
 *                                               attention_decode or lm_head)
 *     profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,...,add
 * Rows: sorted by shape, then tp, then strictly increasing tokens; every
 * time a positive finite number of ms, or "-" where a model has no such
 * operator (only post_attention_layernorm may be absent).
 * All-reduce format: "# simbatch all-reduce profile", then header
 * gpus,bytes,ms, rows sorted by gpus then strictly increasing bytes.
 * Send/recv format (calib/tables/sendrecv-GPU.csv, one NCCL send/recv
 * between two GPUs): "# simbatch send-recv profile", then header
 * nodes,bytes,ms (nodes 1: both GPUs in one node; 2: on two nodes), sorted
 * likewise.
 *
 * Contract: loaders report one line "FILE:LINE:COLUMN (NAME): problem" and
 * keep nothing on failure; a loaded profile is read-only. Between measured
 * rows times are interpolated linearly in tokens (bytes); past the last row
 * they are extrapolated along the last two rows' slope, never below the last
 * time, and the caller is told; below the first row the first time holds.
 */
#ifndef SB_OP_PROFILE_H
#define SB_OP_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#define OPP_KIND_LINE "# simbatch llm operator profile"
#define OPP_ALLREDUCE_KIND_LINE "# simbatch all-reduce profile"
#define OPP_SENDRECV_KIND_LINE "# simbatch send-recv profile"
#define OPP_S_PER_MS 1e-3   /* a unit: the profiles hold milliseconds (Vidur's time columns, converted as measured) */
#define OPP_ELEM_BYTES 2.0  /* bytes an element: Vidur profiles fp16 weights and activations (its model configs'
                             * torch_dtype float16) */

enum opp_op {
	OPP_EMB, OPP_INPUT_NORM, OPP_QKV, OPP_ROPE, OPP_ATTN_OUT, OPP_POST_NORM,
	OPP_MLP_UP, OPP_MLP_ACT, OPP_MLP_DOWN, OPP_ADD, OPP_COUNT
};

/* The column name of op (Vidur's operator names). */
const char *opp_op_name(enum opp_op op);

/* Terms an iteration is priced in beyond the operators (bits of op_profile.exclude after theirs). */
enum opp_term { OPP_TERM_ALLREDUCE = OPP_COUNT, OPP_TERM_ATTN_PREFILL, OPP_TERM_ATTN_DECODE, OPP_TERM_LM_HEAD,
                OPP_TERM_COUNT };

struct opp_shape {
	uint32_t hidden, heads, kv_heads, ffn, vocab, gated;
};

/* One model shape at one TP degree: times by tokens. */
struct opp_curve {
	char profiled_as[96];       /* the model the rows were measured on */
	struct opp_shape shape;
	uint32_t tp;
	size_t n;                   /* rows */
	double *tokens;             /* [n] whole numbers, strictly increasing; owned */
	double *ms;                 /* [n * OPP_COUNT], row-major; owned */
	unsigned present;           /* bit op: the model runs op (else its times are 0) */
};

struct opp_leave_out {
	char op[32];                /* an operator's name, or "layer" for their sum */
	double median_pct, p90_pct;
	unsigned long rows;
};

struct op_profile {
	char path[512];
	char gpu[32];
	char source[512];
	double mem_bytes;           /* one GPU's memory, as the file states it (gpu_memory.h: a GPU with a row has its row's) */
	unsigned exclude;           /* bit op or opp_term: priced at 0 (# exclude) */
	struct opp_leave_out leave_out[OPP_COUNT + 1];
	size_t nleave_out;
	struct opp_curve *curves;   /* owned */
	size_t ncurves;
	/* What the GPU was measured reaching (tp 1 rows, 2-byte elements, as
	 * Vidur profiles): the largest GEMM weight streamed at one token, in
	 * weight bytes a second, and the largest GEMM by FLOPs, in FLOP/s. */
	double stream_bytes_s;
	double gemm_flops_s;
};

/* A collective's times by a key (all-reduce: GPUs; send/recv: nodes) and bytes. */
struct opp_collective {
	char path[512];
	size_t n;
	uint32_t *key;              /* [n]; owned */
	double *bytes, *ms;         /* [n]; owned */
};

/* 1 when path's first line is OPP_KIND_LINE, 0 when not, -1 with err when
 * it cannot be read. */
int opp_sniff(const char *path, char *err, size_t errlen);

int opp_load(const char *path, struct op_profile **out, char *err, size_t errlen);
void opp_free(struct op_profile *p);

/* The operators that are GEMMs with a weight: QKV, output, up and down projections. */
#define OPP_NGEMMS 4
extern const enum opp_op opp_gemms[OPP_NGEMMS];

/* The (K, N) of GEMM operator op of one layer of shape s on one of tp GPUs
 * (each holds 1/tp of N, or of K for the output and down projections; 2-byte
 * elements as Vidur profiles). Returns 1, or 0 when op is not a GEMM. */
int opp_gemm_dims(const struct opp_shape *s, uint32_t tp, enum opp_op op, double *k, double *n);

/* The curve of shape s at tp GPUs, or NULL. */
const struct opp_curve *opp_find(const struct op_profile *p, const struct opp_shape *s, uint32_t tp);

/* Operator op at tokens tokens on curve c, in ms; *extrapolated set to 1
 * (never cleared) when tokens lie past the last row. */
double opp_curve_ms(const struct opp_curve *c, enum opp_op op, double tokens, int *extrapolated);

/* Largest tokens measured on c. */
static inline uint32_t opp_curve_max_tokens(const struct opp_curve *c)
{
	return (uint32_t)c->tokens[c->n - 1];
}

int opp_allreduce_load(const char *path, struct opp_collective **out, char *err, size_t errlen);
int opp_sendrecv_load(const char *path, struct opp_collective **out, char *err, size_t errlen);
void opp_collective_free(struct opp_collective *a);

/* 1 when a holds rows for key (GPUs, nodes). */
int opp_collective_has(const struct opp_collective *a, uint32_t key);

/* One collective of bytes at key (opp_collective_has must hold), in ms;
 * *extrapolated as opp_curve_ms. */
double opp_collective_ms(const struct opp_collective *a, uint32_t key, double bytes, int *extrapolated);
/* The rows of key, [first, first + n), found once (a scan of the table) ... */
void opp_collective_rows(const struct opp_collective *a, uint32_t key, size_t *first, size_t *n);
/* ... and opp_collective_ms from them, for a caller that prices many messages at one key. */
double opp_collective_rows_ms(const struct opp_collective *a, size_t first, size_t n, double bytes, int *extrapolated);

#endif
