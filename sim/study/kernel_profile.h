/* sim/study/kernel_profile.h: the live kernels' node latency table (kernel_profile.c). */
#ifndef SB_KERNEL_PROFILE_H
#define SB_KERNEL_PROFILE_H

#include <stdint.h>
#include <stdio.h>
#include "../../runtime/backend.h"
#include "../../util/options.h"

struct mdl_model;
struct hw_model;

/* --gemm's value: packed or blas. 0, or -1 with err. */
int live_gemm_kind(const char *s, enum rt_gemm_kind *out, char *err, size_t errlen);

/* Times the live kernels of model m on this machine at batches 1, 2, 4, ...
 * up to maxb and writes the node latency table to f. The device, GEMM kind,
 * seed and repetitions come from o where it has them (live's options), else
 * the defaults of live's table (cpu, packed, 1, 11); progress (or NULL) gets a line a node or
 * iteration timed. Returns 0, or -1 with err. */
int live_profile_write(const struct opt_set *o, const struct mdl_model *m, uint32_t maxb, FILE *f,
                       FILE *progress, char *err, size_t errlen);

/* --hw=profile (live's default, and accepted by run): times the live
 * runtime's kernels of model m on this machine up to max_batch, as
 * `live --profile-out` does, and opens that table as the hardware model,
 * labelled "profile". Options come from o where it has them (live's --device,
 * --gemm, --profile-reps). 0, or -1 with err. */
int live_profile_hw(const struct opt_set *o, const struct mdl_model *m, uint32_t max_batch, struct hw_model **out,
                    char *err, size_t errlen);

#endif
