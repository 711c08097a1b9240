/* runtime/backend.h: the device a live worker runs kernels on: the CPU
 * (backend_cpu.c: the packed GEMM of gemm.h or OpenBLAS, element-wise work
 * in plain C) or a CUDA GPU (backend_cuda.cu: cuBLAS and small kernels,
 * built only where CUDA is present and loaded only when asked for).
 *
 * The model kernels (kernels.h) are written once against these operations,
 * so every model runs on every backend with the same arithmetic structure:
 * products of a batch with shared weights, and per-row element-wise work.
 *
 * Batching (BatchMaker Sec. 4.3): each request owns its state in device
 * memory; a task gathers its members' rows into contiguous batch buffers,
 * runs the products on the whole batch, and scatters the rows back. The
 * pointer lists of gather / scatter / embed / attention are host arrays of
 * device addresses; a backend copies them where its kernels can read them.
 *
 * Contract:
 *  - A device (rt_dev) holds weights and allocates memory; it is shared by
 *    the workers. A stream (rt_stream) is one worker's execution context:
 *    kernels queued on it run in order; rt_backend_ops.finish waits for all
 *    of them and reports the first error. Queued kernels never block the
 *    caller except where a backend says so (the CPU runs them at once).
 *  - Element (i, *) of every result depends only on row i of the inputs and
 *    on the weights, computed by the same operations whatever the number of
 *    rows, so a request's results do not depend on its batch (the CPU
 *    backend guarantees it bit for bit with the packed GEMM; with OpenBLAS,
 *    SGEMV at one row and SGEMM above, to rounding: tests/test_runtime.c).
 *  - Pointers given to kernels are device addresses from alloc (or inside
 *    such blocks); a NULL destination in a scatter or argmax list skips
 *    that row (a padding row of a padded graph batch).
 *  - Ops that return int return 0 or -1 with err; kernels record their first
 *    error in the stream, reported by finish.
 */
#ifndef SB_RT_BACKEND_H
#define SB_RT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#define RT_BACKEND_ABI 2   /* bumped when rt_backend_ops changes (a CUDA module is checked against it) */

struct rt_dev;      /* a device: weights, memory */
struct rt_stream;   /* one worker's queue of kernels and its scratch */
struct rt_weight;   /* a K x N weight matrix in the device's layout */

enum rt_gemm_kind {
	RT_GEMM_PACKED = 0,  /* CPU: gemm.h, batch-invariant by construction */
	RT_GEMM_BLAS = 1,    /* CPU: OpenBLAS, cblas_sgemv at one row and cblas_sgemm above (as calib-cpu times them) */
};

enum rt_act { RT_ACT_NONE = 0, RT_ACT_RELU = 1 };

struct rt_backend_cfg {
	enum rt_gemm_kind gemm;     /* CPU only */
	uint32_t workers;           /* streams that will be created */
};

struct rt_backend_ops {
	const char *name;                   /* "cpu", "cuda" */
	uint32_t abi;                       /* RT_BACKEND_ABI */
	int (*open)(const struct rt_backend_cfg *cfg, struct rt_dev **out, char *err, size_t errlen);
	void (*close)(struct rt_dev *d);
	/* One line on what runs: device name, library, kernel set. */
	void (*describe)(const struct rt_dev *d, char *buf, size_t len);

	/* Device memory, zeroed; NULL on failure. */
	void *(*alloc)(struct rt_dev *d, size_t bytes);
	void (*free)(struct rt_dev *d, void *p);
	/* Synchronous copies host -> device and device -> host. 0 or -1 with err. */
	int (*upload)(struct rt_dev *d, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
	int (*download)(struct rt_dev *d, void *dst, const void *src, size_t bytes, char *err, size_t errlen);
	/* A weight from host w (k x n, row-major, not kept). */
	int (*weight_create)(struct rt_dev *d, uint32_t k, uint32_t n, const float *w, struct rt_weight **out,
	                     char *err, size_t errlen);
	void (*weight_destroy)(struct rt_dev *d, struct rt_weight *w);

	/* A worker's stream, with scratch for products of up to max_rows rows
	 * and reductions up to max_k wide. */
	int (*stream_create)(struct rt_dev *d, uint32_t worker, uint32_t max_rows, uint32_t max_k,
	                     struct rt_stream **out, char *err, size_t errlen);
	void (*stream_destroy)(struct rt_stream *s);
	/* Waits until everything queued ran; 0, or -1 with the first kernel error. */
	int (*finish)(struct rt_stream *s, char *err, size_t errlen);

	/* y (m x n, stride ldy) = x (m x k, stride ldx) * w */
	void (*gemm)(struct rt_stream *s, const struct rt_weight *w, uint32_t m, const float *x, size_t ldx,
	             float *y, size_t ldy);
	/* dst row i (stride ld) = src[i][0..width) */
	void (*gather)(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld,
	               const float *const *src);
	/* dst[i][0..width) = src row i (stride ld); dst[i] NULL: skipped */
	void (*scatter)(struct rt_stream *s, uint32_t m, uint32_t width, const float *src, size_t ld,
	                float *const *dst);
	/* dst row i = table row *tok[i] (width floats a row); tok are device addresses */
	void (*embed)(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
	              const int32_t *const *tok);
	/* dst row i += table row rows[i] (rows: host array) */
	void (*add_rows)(struct rt_stream *s, uint32_t m, uint32_t width, float *dst, size_t ld, const float *table,
	                 const uint32_t *rows);
	/* LSTM cell, gates i f g o: g = gates + bias; c = sig(f) c + sig(i) tanh(g); h = sig(o) tanh(c).
	 * gates m x 4H (stride ldg), c and h m x H contiguous. */
	void (*lstm)(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gates, size_t ldg,
	             const float *bias, float *c, float *h);
	/* GRU cell (reset applied after the hidden product): gx, gh m x 3H (r z n);
	 * r = sig(gx_r + gh_r + b_r), z = sig(gx_z + gh_z + b_z),
	 * n = tanh(gx_n + b_xn + r (gh_n + b_hn)), h = (1 - z) n + z hprev.
	 * bias holds b_r b_z b_xn b_hn (4H). h may not alias hprev. */
	void (*gru)(struct rt_stream *s, uint32_t m, uint32_t hidden, const float *gx, const float *gh,
	            const float *bias, const float *hprev, float *h);
	/* y = act(y + bias) on m x n (stride ldy) */
	void (*bias_act)(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy, const float *bias,
	                 enum rt_act act);
	/* *tok[i] = argmax_j (logits[i][j] + bias[j]), the lowest j on ties (Amun
	 * Algorithm 4: the bias add fused into the search, no softmax needed for
	 * a greedy choice). tok[i] NULL: skipped. */
	void (*bias_argmax)(struct rt_stream *s, uint32_t m, uint32_t n, const float *logits, size_t ld,
	                    const float *bias, int32_t *const *tok);
	/* The gated MLP's activation (SwiGLU, Shazeer 2020): y row i holds the
	 * gate in columns [0, n) and the up projection in [n, 2n) (stride ldy);
	 * y[i][j] = silu(gate) * up = gate / (1 + exp(-gate)) * up, for j < n. */
	void (*gated_silu)(struct rt_stream *s, uint32_t m, uint32_t n, float *y, size_t ldy);
	/* x = layernorm(x + y) * gamma + beta per row (d wide; x stride ldx, y stride ldy) */
	void (*add_layernorm)(struct rt_stream *s, uint32_t m, uint32_t d, float *x, size_t ldx, const float *y,
	                      size_t ldy, const float *gamma, const float *beta);
	/* Per row i and head h: softmax(q_h . K_h^T / sqrt(dk)) V_h over the len[i]
	 * rows of kc[i], vc[i] (row stride ld floats, heads side by side, d =
	 * heads * dk); len 0 gives zeros. len is a host array. */
	void (*attention)(struct rt_stream *s, uint32_t m, uint32_t heads, uint32_t dk, const float *q, size_t ldq,
	                  const float *const *kc, const float *const *vc, size_t ld, const uint32_t *len, float *out,
	                  size_t ldo);
	/* Optional (NULL: not measured): ns this stream's gather, scatter, embed
	 * and add_rows kernels took since it was created (the data movement of
	 * batching); a backend that queues them asynchronously cannot time them
	 * without waiting, so it leaves this NULL. */
	uint64_t (*move_ns)(const struct rt_stream *s);
};

extern const struct rt_backend_ops rt_backend_cpu;

/* The backend called name: "cpu", or "gpu" (the CUDA module built beside
 * simbatch, loaded now). Returns it, or NULL with err (unknown name; CUDA
 * not built; module failed to load). */
const struct rt_backend_ops *rt_backend_find(const char *name, char *err, size_t errlen);

#endif
