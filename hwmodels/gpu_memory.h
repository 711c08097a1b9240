/* hwmodels/gpu_memory.h: one definition of the memory an LLM's KV cache gets
 * on a GPU, the same for every table of one GPU (gpu-h100, the measured
 * H100 table, gpu-h100-roofline all read the h100 row).
 *
 * vLLM v0.15 (vllm/v1/worker/gpu_worker.py, Worker.init_device and
 * determine_available_memory; vllm/utils/mem_utils.py, memory_profiling)
 * sizes the KV cache of each GPU as
 *
 *   KV = gpu_memory_utilization x total - (weights + torch peak of the
 *        profile run + non-torch memory)
 *
 * where total is torch.cuda.mem_get_info()'s total, i.e. cudaMemGetInfo's,
 * the capacity the device reports (less than the datasheet's GiB of HBM);
 * gpu_memory_utilization defaults to 0.9 (vllm/config/cache.py, CacheConfig;
 * 0.92 only from v0.21, PR #38284); the profile run is one forward pass of
 * max_num_batched_tokens dummy tokens; non-torch memory is NCCL's buffers,
 * cuBLAS workspaces and the like. CUDA graphs are captured after the KV
 * cache is allocated (compile_or_warm_up_model) and so come out of the
 * 1 - utilization margin: they do not enter the sizing (estimating them
 * beforehand, VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS of PR #30515, is off
 * by default until v0.21).
 *
 * Terms priced here and their sources:
 *  - total: the GPU's row (gpu_memory_row): a measured cudaMemGetInfo total
 *    where we have one, the datasheet's figure otherwise (the row says which);
 *  - utilization: GPU_MEM_UTILIZATION, vLLM v0.15's default;
 *  - weights: the model's parameters at its element size, split over tp;
 *  - activations (the profile run's torch peak) and non-torch memory: no
 *    measured figure for any model and GPU we price (the servers we validate
 *    against published no start-up log), so they are not priced: 0, and
 *    model-info says so;
 *  - CUDA graphs: 0 by vLLM v0.15's mechanism above. */
#ifndef SB_GPU_MEMORY_H
#define SB_GPU_MEMORY_H

#include <stdint.h>

/* vLLM v0.15's default gpu_memory_utilization (vllm/config/cache.py). */
#define GPU_MEM_UTILIZATION 0.9

/* One GPU's capacity as the device reports it, named as operator profiles
 * name the GPU (`# gpu = h100`). */
struct gpu_memory_row {
	const char *gpu;
	double device_bytes;
	const char *source;
};

/* The row of gpu (case as written); NULL when there is none (a profile file
 * of another GPU then states its own `# mem_gb`). */
const struct gpu_memory_row *gpu_memory_row(const char *gpu);

/* What one GPU of tp holds, in bytes: the parts of the definition above. */
struct gpu_memory {
	double device_bytes;        /* the capacity the device reports */
	double utilization;         /* vLLM's gpu_memory_utilization */
	double weights_bytes;       /* this GPU's share of the weights */
	double kv_bytes;            /* what is left for the KV cache (may be <= 0: nothing fits) */
};                              /* activations, non-torch memory: not priced; CUDA graphs: none */

/* The bytes of one GPU of device_bytes the engine may fill with weights and
 * KV cache: utilization x device_bytes (no other term is priced, above).
 * Every GPU model's hw_device.mem_bytes is this times its GPUs. */
double gpu_memory_usable_bytes(double device_bytes);

/* The parts on one of tp GPUs of device_bytes holding weight_bytes of
 * weights in all. */
void gpu_memory_parts(double device_bytes, uint32_t tp, double weight_bytes, struct gpu_memory *out);

#endif
