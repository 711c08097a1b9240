/* hwmodels/gpu_memory.c: the GPUs' memory rows and the one definition of
 * what an LLM's KV cache gets (gpu_memory.h). */
#include "gpu_memory.h"

#include <string.h>

/* One row a GPU. A GPU added by name adds its row here. */
static const struct gpu_memory_row gpu_memory_rows[] = {
	{ "h100", 85.0175e9,
	  "cudaDeviceProp.totalGlobalMem (cudaMemGetInfo's total) of an NVIDIA H100 80GB HBM3, measured by simbatch "
	  "calibrate on 2026-11-26 (calib/tables/ops-h100-measured.csv; vLLM PR #10511 logs 79.22 GiB on another)" },
	{ "a100", 80e9, "NVIDIA A100 80GB datasheet's 80 GB; the device's own total is not measured" },
	{ "a40", 48e9, "NVIDIA A40 datasheet's 48 GB; the device's own total is not measured" },
};

const struct gpu_memory_row *gpu_memory_row(const char *gpu)
{
	for (size_t i = 0; i < sizeof gpu_memory_rows / sizeof gpu_memory_rows[0]; i++)
		if (strcmp(gpu, gpu_memory_rows[i].gpu) == 0)
			return &gpu_memory_rows[i];
	return NULL;
}

double gpu_memory_usable_bytes(double device_bytes)
{
	return device_bytes * GPU_MEM_UTILIZATION;
}

void gpu_memory_parts(double device_bytes, uint32_t tp, double weight_bytes, struct gpu_memory *out)
{
	*out = (struct gpu_memory){ .device_bytes = device_bytes, .utilization = GPU_MEM_UTILIZATION,
	                            .weights_bytes = weight_bytes / tp };
	out->kv_bytes = gpu_memory_usable_bytes(device_bytes) - out->weights_bytes;
}
