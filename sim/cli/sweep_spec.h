/* sim/cli/sweep_spec.h: the sweep description file (format in sim/SWEEP.md): the
 * axes of a grid of runs and their values, named option groups (variants),
 * options every point shares, and the seeds each configuration repeats with.
 *
 * A *configuration* is one choice of value on every axis; a *point* is a
 * configuration with one seed, i.e. exactly one `simbatch run`. Points are
 * numbered 0 .. npoints-1: point i is configuration i / nseeds with seed
 * seeds[i % nseeds]; configurations enumerate the axes in file order, the
 * first axis outermost. The numbering depends on the file only, so every
 * machine of a distributed sweep agrees on it.
 *
 * Contract:
 *  - sweep_spec_load checks every option against the run option table it is
 *    given (name, value type and bounds), refuses options a sweep sets itself
 *    (--db, --seed, --json, ...) and an option set twice in one point; any
 *    problem returns -1 with one line "FILE:LINE: message" in err.
 *  - A point's key is its options sorted by name, "name=value" joined by
 *    single spaces, seed included (e.g. "model=gnmt policy=serial rate=100
 *    seed=3"): equal keys mean equal runs, which is what resuming relies on.
 *  - The spec is immutable after loading; its points, and which of them a
 *    run does, are the study layer's (sim/study/sweep_plan.h).
 */
#ifndef SB_SWEEP_SPEC_H
#define SB_SWEEP_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include "../../util/options.h"
#include "../study/sweep_plan.h"

/* Returns 0 and a new spec in *out (free with sweep_spec_free), or -1 with
 * err and *out NULL. defs is the run subcommand's option table. */
int sweep_spec_load(const char *path, const struct opt_def *defs, size_t ndefs,
                    struct sweep_spec **out, char *err, size_t errlen);
void sweep_spec_free(struct sweep_spec *s);

#endif
