/* kernels/gpu_cells.cuh: the GPU element-wise kernels of recurrent cells
 * (the LSTM and GRU gate math after the gate GEMMs), the one set that both
 * the cuBLAS calibration (calib/cuda_calib.cu) and the live runtime's CUDA
 * backend (runtime/backend_cuda.cu) launch, so `--hw=gpu` prices exactly
 * the element-wise code `simbatch live --device=gpu` runs.
 *
 * Contract: one thread per element (batch row x hidden unit), launched as
 * gpu_cells_blocks(m * H) blocks of GPU_CELLS_THREADS threads; rows are
 * ldg (LSTM) or 3H (GRU) floats apart in the gate buffers, H in the state.
 * Header-only (static kernels): each including .cu gets its own copy of the
 * same code, and nothing else of it.
 */
#ifndef SB_KERNELS_GPU_CELLS_CUH
#define SB_KERNELS_GPU_CELLS_CUH

#include <stddef.h>
#include <stdint.h>

#define GPU_CELLS_THREADS 256

static inline unsigned gpu_cells_blocks(size_t n)
{
	size_t b = (n + GPU_CELLS_THREADS - 1) / GPU_CELLS_THREADS;
	return (unsigned)(b ? b : 1);
}

__device__ static inline float gpu_cells_sigmoid(float x)
{
	return 1.0f / (1.0f + __expf(-x));
}

/* LSTM: g (m x 4H gate pre-activations i, f, g, o; rows ldg apart), b (4H),
 * c (m x H, updated in place), h (m x H, written). */
__global__ static void gpu_lstm_cell(uint32_t m, uint32_t H, const float *g, size_t ldg, const float *b, float *c,
                                     float *h)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * H)
		return;
	size_t i = idx / H, j = idx % H;
	const float *gi = g + i * ldg;
	float ig = gpu_cells_sigmoid(gi[j] + b[j]), fg = gpu_cells_sigmoid(gi[H + j] + b[H + j]);
	float gg = tanhf(gi[2 * H + j] + b[2 * H + j]), og = gpu_cells_sigmoid(gi[3 * H + j] + b[3 * H + j]);
	float cn = fg * c[idx] + ig * gg;
	c[idx] = cn;
	h[idx] = og * tanhf(cn);
}

/* GRU: gx, gh (m x 3H: r, z, n pre-activations of the input and the hidden
 * side), b (4H: r, z, n input side, n hidden side), hp (m x H, the previous
 * state; may equal h), h (m x H, written). */
__global__ static void gpu_gru_cell(uint32_t m, uint32_t H, const float *gx, const float *gh, const float *b,
                                    const float *hp, float *h)
{
	size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= (size_t)m * H)
		return;
	size_t i = idx / H, j = idx % H;
	const float *x = gx + i * 3 * H, *u = gh + i * 3 * H;
	float r = gpu_cells_sigmoid(x[j] + u[j] + b[j]);
	float z = gpu_cells_sigmoid(x[H + j] + u[H + j] + b[H + j]);
	float n = tanhf(x[2 * H + j] + b[2 * H + j] + r * (u[2 * H + j] + b[3 * H + j]));
	h[idx] = (1.0f - z) * n + z * hp[idx];
}

#endif
