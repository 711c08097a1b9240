/* sim/cli/search_spec.h: the configuration search file (format in
 * sim/SEARCH.md): the axes of the deployments to compare, the options they
 * share (the model, the workload, the SLOs), each GPU kind's price and the
 * goal, a rate to meet or a budget to spend.
 *
 * Contract:
 *  - search_spec_load checks every option against capacity's and run's
 *    option tables (name, value type and bounds), refuses options the search
 *    sets itself, a repeated axis, value, price or goal, a price that is not
 *    positive, and a GPU kind some configuration uses without a price; any
 *    problem returns -1 with one line "FILE:LINE: message" in err.
 *  - Configurations are numbered 0 .. nconfigs-1 over the axes in file order,
 *    the first outermost; a configuration's key is its options sorted by
 *    name, "name=value" joined by single spaces (what resuming compares).
 *  - The axis `replicas` takes N (N replicas) or P+D (P prefill and D decode
 *    replicas: --prefill-replicas=P --decode-replicas=D). */
#ifndef SB_SEARCH_SPEC_H
#define SB_SEARCH_SPEC_H

#include <stddef.h>
#include <stdint.h>

#define SEARCH_MAX_OPTS 48        /* options of one configuration */

struct search_axis {
	char *name;                   /* a run or capacity option */
	char **values;
	size_t nvalues;
	unsigned line;
};

struct search_price {
	char *hw;                     /* an --hw value */
	double dollars_per_gpu_hour;
	unsigned line;
};

struct search_spec {
	char *path;
	char *text;                   /* the file's text as it was read (what a stored search keeps) */
	size_t text_len, text_cap;
	char **fixed;                 /* "--name=value" (or "--flag") of every configuration */
	unsigned *fixed_line;
	size_t nfixed;
	struct search_axis *axes;
	size_t naxes;
	struct search_price *prices;
	size_t nprices;
	double target_rps;            /* > 0: the cheapest configuration meeting this rate ... */
	double budget;                /* > 0: ... or the most capacity for at most this many dollars an hour */
	char *default_hw;             /* the GPU kind of a configuration that names none (its model's default) */
	size_t nconfigs;
};

/* One configuration: its options as a child's argv words, what it costs. */
struct search_config {
	char *opts[SEARCH_MAX_OPTS];  /* "--name=value", owned */
	size_t nopts;
	char key[2048];
	const char *hw;               /* its GPU kind (an --hw value; not owned) */
	uint32_t tp, replicas;        /* GPUs = replicas x tp (prefill and decode together) */
	double cost_per_hour;
};

int search_spec_load(const char *path, struct search_spec **out, char *err, size_t errlen);
void search_spec_free(struct search_spec *s);

/* Configuration i (< nconfigs): 0, or -1 with err (out of memory, a key too long). */
int search_config_make(const struct search_spec *s, size_t i, struct search_config *c, char *err, size_t errlen);
void search_config_free(struct search_config *c);

#endif
