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
 *  - The spec is immutable after loading; points are built on demand and
 *    released with sweep_point_free.
 */
#ifndef SB_SWEEP_SPEC_H
#define SB_SWEEP_SPEC_H

#include <stddef.h>
#include <stdint.h>
#include "../../util/options.h"

struct sweep_opt {            /* one run option, canonical name (no "--") */
	char *name;
	char *value;              /* NULL for a flag */
	unsigned line;            /* where the file set it */
};

struct sweep_group {          /* one value of an axis: a label and the options it sets */
	char *label;              /* axis value ("100") or variant name ("graph5") */
	struct sweep_opt *opts;
	size_t nopts;
	unsigned line;
};

struct sweep_axis {
	char *name;               /* the option name, or "variant" for the variant axis */
	struct sweep_group *values;
	size_t nvalues;
	unsigned line;
};

struct sweep_spec {
	char *path;               /* the file, as given */
	struct sweep_opt *fixed;  /* options of every point */
	size_t nfixed;
	struct sweep_axis *axes;
	size_t naxes;
	uint64_t *seeds;          /* default: one seed, 1 */
	size_t nseeds;
	size_t nconfigs;          /* product of the axis sizes (1 with no axis) */
	size_t npoints;           /* nconfigs * nseeds */
};

struct sweep_point {
	size_t index;             /* 0 .. npoints-1 */
	size_t config;            /* index / nseeds */
	uint64_t seed;
	size_t *choice;           /* [naxes]: the value index on each axis */
	char **args;              /* "--name=value" (or "--flag") sorted by name, seed included */
	size_t nargs;
	char *key;                /* canonical key, see the contract */
};

/* Returns 0 and a new spec in *out (free with sweep_spec_free), or -1 with
 * err and *out NULL. defs is the run subcommand's option table. */
int sweep_spec_load(const char *path, const struct opt_def *defs, size_t ndefs,
                    struct sweep_spec **out, char *err, size_t errlen);
void sweep_spec_free(struct sweep_spec *s);

/* Builds point index into *p (release with sweep_point_free). 0, or -1 on
 * allocation failure (with *p zeroed). */
int sweep_point_make(const struct sweep_spec *s, size_t index, struct sweep_point *p);
void sweep_point_free(struct sweep_point *p);

#endif
