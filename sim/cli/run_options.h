/* sim/cli/run_options.h: run's defaults that other subcommands share
 * (capacity, search and live run what run would), and its option table
 * (cmd_run_options, cli.h). */
#ifndef SB_RUN_OPTIONS_H
#define SB_RUN_OPTIONS_H

#define RUN_DEFAULT_POLICY "lazy"    /* DESIGN.md section 3 */
#define RUN_DEFAULT_LLM_POLICY "continuous"   /* lazy batches a model's nodes; an LLM has none (vLLM's default) */
#define RUN_DEFAULT_LLM_HW "gpu-h100"         /* DESIGN.md 3c: an LLM runs on a measured GPU unless told */

#include <stddef.h>

struct opt_set;
struct mdl_model;

/* The options run would take and silently ignore for this model, refused
 * with one line in err (-1), for run and capacity alike: lengths given with a
 * trace (its rows give them) or to a model whose graph takes none, and an
 * LLM's --max-seqs with --max-batch (one limit). */
int run_refuse_ignored(const struct opt_set *o, const struct mdl_model *m, int has_trace, char *err, size_t errlen);

#endif
