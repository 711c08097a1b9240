/* sim/study/run_options.h: run's defaults that other subcommands share
 * (capacity, search and live run what run would), and its option table
 * (cmd_run_options, cli.h). */
#ifndef SB_RUN_OPTIONS_H
#define SB_RUN_OPTIONS_H

#define RUN_DEFAULT_POLICY "lazy"    /* DESIGN.md section 3 */
#define RUN_DEFAULT_LLM_POLICY "continuous"   /* lazy batches a model's nodes; an LLM has none (vLLM's default) */
#define RUN_DEFAULT_LLM_HW "gpu-h100"         /* DESIGN.md 3c: an LLM runs on a measured GPU unless told */

#include <stddef.h>

#endif
