/* sim/cli/info_common.h: what model-info (cmd_info.c) and hw-info (cmd_hw_info.c) share. */
#ifndef SB_INFO_COMMON_H
#define SB_INFO_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include "../../hwmodels/hwmodel.h"
#include "../../util/options.h"

/* A length for model-info: the option, else the rounded mean of the model's spec; 0 when unused. */
int info_length(const struct opt_set *o, const char *opt, int used, const char *spec, uint32_t *out, char *err,
                size_t errlen);
/* Opens --hw for model m (may be NULL); a --dataflow value (NULL: none)
 * re-creates an NPU with that dataflow, since an instance is read-only. */
int info_open_hw(const char *arg, const struct mdl_model *m, uint32_t tp, const char *dataflow,
                 struct hw_model **out, char *err, size_t errlen);
/* "memory" or "compute". */
const char *info_bound(enum hw_bound b);

#endif
