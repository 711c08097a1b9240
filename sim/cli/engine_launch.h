/* sim/cli/engine_launch.h: the serving engine's launch command for a configuration, which
 * capacity and search print (engine_launch.c). */
#ifndef SB_ENGINE_LAUNCH_H
#define SB_ENGINE_LAUNCH_H

#include <stddef.h>
#include <stdio.h>

/* `vllm serve MODEL --tensor-parallel-size N --max-num-batched-tokens T --max-num-seqs S ...`, one line on
 * f, for the configuration that these run options ("--name=value" words, the last of a name counting)
 * describe, with its --engine profile's defaults where it gives none (without one, simbatch's defaults:
 * run --help says which vLLM each follows). Nothing for a node-level model or options a run refuses. */
void run_engine_launch_words(FILE *f, char *const *words, size_t n);

#endif
