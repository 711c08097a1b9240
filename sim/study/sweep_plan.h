/* sim/study/sweep_plan.h: what a sweep is, as values: the parsed sweep file (sim/cli/sweep_spec.c
 * reads it; format in sim/SWEEP.md), each of its points (options, seed, key: sweep_point.c) and the
 * points a run of it does (its --part, less those already stored: sweep_plan.c). A point numbering
 * and its keys depend on the spec alone, so every machine of a distributed sweep agrees on them.
 * This never prints, exits or keeps state of its own; whether a point is stored is the caller's
 * question (the CLI asks the results database), answered through a callback.
 */
#ifndef SB_STUDY_SWEEP_PLAN_H
#define SB_STUDY_SWEEP_PLAN_H

#include <stddef.h>
#include <stdint.h>

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

/* Builds point index into *p (release with sweep_point_free). 0, or -1 on
 * allocation failure (with *p zeroed). */
int sweep_point_make(const struct sweep_spec *s, size_t index, struct sweep_point *p);
void sweep_point_free(struct sweep_point *p);

/* Whether the point of this key is stored: 1 yes, 0 no, -1 with one line in err. */
typedef int (*sweep_stored_fn)(void *ud, const char *key, char *err, size_t errlen);

/* The points of part part_i of part_n (1 <= part_i <= part_n): point i belongs to part
 * i % part_n + 1. Those the callback says are stored are counted in *stored (stored NULL: none
 * is), the others written in increasing order to todo (room for npoints) and counted in *ntodo.
 * Returns the number of points in the part, or -1 with one line in err (out of memory, marked so,
 * or the callback's error). */
long sweep_plan_todo(const struct sweep_spec *s, uint64_t part_i, uint64_t part_n, sweep_stored_fn stored,
                     void *ud, size_t *todo, size_t *ntodo, size_t *nstored, char *err, size_t errlen);

#endif
