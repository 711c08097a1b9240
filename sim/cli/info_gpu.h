/* sim/cli/info_gpu.h: model-info's account of a measured GPU: what its
 * profile is, how far its interpolation and its GEMM predictor are from the
 * measurements, and what one iteration's time is made of. Printed after
 * model-info's own lines, as text or as members of its JSON object. */
#ifndef SB_CLI_INFO_GPU_H
#define SB_CLI_INFO_GPU_H

#include <stddef.h>
#include "../../hwmodels/gpu_measured.h"

/* An LLM on a measured GPU: the profile, its measured range, the rates
 * attention is priced at, the leave-one-row-out errors, and a prefill's and
 * a decode step's parts (pre, dec). */
void info_gpu_measured(const struct gpu_measured_info *g, const struct gpu_iter_parts *pre,
                       const struct gpu_iter_parts *dec, int json);

/* An LLM (l) on a GPU model: one GPU's memory by its parts (gpu_memory.h)
 * and the blocks of 16 tokens they hold, blocks as the runs count them;
 * nothing when hw is not a GPU. */
void info_gpu_memory(const struct hw_model *hw, const struct mdl_llm *l, uint64_t blocks, int json);

/* A node-level model whose GEMMs the predictor prices: the shapes beyond
 * the measured range and the predictor's leave-one-model-out error. 0, or
 * -1 with err. */
int info_gpu_predicted(const struct gpu_predicted_info *g, int json, char *err, size_t errlen);

#endif
