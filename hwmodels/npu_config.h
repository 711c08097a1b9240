/* hwmodels/npu_config.h: NPU configuration files (--hw=FILE), so a user can
 * model a systolic-array part of their own: another array size, clock,
 * SRAM, memory system, element width or dataflow. The timing model is
 * npu_systolic.c; this module only reads its parameters from a file.
 *
 * Format: one `key = value` a line; `#` starts a comment (whole line or
 * trailing); blank lines are ignored. The first setting must be
 * `kind = npu`: that is how hw_open tells this file from a node latency table.
 * Every other key is optional and takes the LazyBatching Table I value when
 * absent (npu_config_default); a key may appear once.
 *
 *   key                   unit / values         default (Table I)
 *   rows, cols            PEs, 1..65536         128, 128
 *   freq_mhz              MHz, >= 1             700
 *   act_sram_kib          KiB (1024 B)          8192
 *   weight_sram_kib       KiB                   4096
 *   mem_channels          count                 8
 *   mem_latency_cycles    cycles, >= 0          100
 *   mem_bw_gbs            GB/s (1e9 B/s), >= 0.001  360
 *   elem_bytes            bytes, 1..16          1
 *   vector_lanes          element-wise ops/cycle  = cols
 *   dataflow              ws | os | is          ws
 *   weight_double_buffer  0 | 1                 1
 *   weight_load_bytes_per_cycle  bytes/cycle > 0 and <= mem_bw_gbs / freq_mhz,
 *                         or memory (as wide as DRAM)  memory
 *   vector_overlap        0 | 1                 1
 *   mem_capacity_gb       GB (1e9 B), 0..1e6    0 (Table I gives none: not modelled,
 *                                               so LLM serving needs the key)
 *
 * Contract:
 *  - Every problem is one line "FILE:LINE: key 'K': problem" (or
 *    "FILE:LINE: problem" when no key is involved) in err; nothing is
 *    returned on failure.
 *  - A configuration that loads also passes npu_config_check.
 */
#ifndef SB_NPU_CONFIG_H
#define SB_NPU_CONFIG_H

#include <stddef.h>
#include "hwmodel.h"
#include "npu_systolic.h"

/* Returns 1 when the first line of path that is neither blank nor a comment
 * sets `kind` (whatever its value: the loader then names a wrong one), 0 for
 * anything else or no such line, -1 with err when the file cannot be read. */
int npu_config_sniff(const char *path, char *err, size_t errlen);

/* Reads path into *out (defaults for absent keys). Returns 0, or -1 with
 * err. */
int npu_config_load(const char *path, struct npu_config *out, char *err, size_t errlen);

/* Loads path and creates an NPU instance labelled with the file's base name
 * for model m (not owned, may be NULL). Returns 0 and *out, or -1 with err. */
int npu_config_open(const char *path, const struct mdl_model *m, struct hw_model **out,
                    char *err, size_t errlen);

#endif
