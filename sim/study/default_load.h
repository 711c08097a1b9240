/* sim/study/default_load.h: an LLM run's default load (default_load.c; docs/WORKLOAD.md). A run of
 * an LLM that names none of --rate, --trace, --input-len, --output-len and --concurrency serves a
 * realistic mix at a rate its own configuration holds, instead of run's node-level default of
 * 1000 req/s with every request the model's median (a run that saturates and whose TTFT p50 is its
 * p90): each request's prompt and output drawn together from the Azure LLM conversation trace
 * 2023's pairs (traces/tables/, the rows within the model's context), Poisson arrivals at
 * STUDY_LOAD_RATE_SHARE of the capacity estimate of the run's policy, model, hardware and fleet
 * (capacity.h), rounded down to two significant digits. It is exactly the run
 *     --trace=TABLE --trace-pairs --over-context=drop --rate=RATE
 * and is stored as that. Any of the options named above keeps the run as it was before. Under a
 * --scenario whose clients set the arrivals (offline), the mix alone: no rate. */
#ifndef SB_STUDY_DEFAULT_LOAD_H
#define SB_STUDY_DEFAULT_LOAD_H

#include <stddef.h>
#include "../../models/model.h"
#include "../../util/options.h"

/* Half the estimate: the estimate prices full batches of decodes and each prefill alone, what the
 * device holds at best; at half of it the queue stays bounded (tests/test_default_load.py runs it)
 * and the latencies are those of a served load. A queue at a fixed share of a service rate is
 * what a reader compares across hardware. */
#define STUDY_LOAD_RATE_SHARE 0.5
#define STUDY_LOAD_RATE_SHARE_TEXT "half"   /* the share in words, for the summary */
#define STUDY_LOAD_NAME "the Azure LLM conversation trace 2023"

struct study_load {
	int on;                  /* the run took the default load */
	double estimate_rps;     /* the capacity estimate the rate is a share of */
	char rate[32];           /* the rate, as --rate's text (the run's options point here); "" where a
	                          * --scenario's closed-loop clients set the arrivals (offline) */
};

/* The pairs table's path (in the source tree, as the models). */
const char *study_load_table(void);
/* Whether the run o of model m takes the default load: an LLM, none of the options above given,
 * hardware with prices before the run (not live's measured profile). */
int study_load_applies(const struct opt_set *o, const struct mdl_model *m);
/* Whether a run of an LLM names no lengths of its own (--trace, --input-len, --output-len): capacity's
 * probes, which always give a rate, then take the mix's lengths as a run given no load does. */
int study_load_lengths_apply(const struct opt_set *o);
/* Puts the mix into o: the table as a pairs trace, the rows beyond the model's context dropped. 0, or -1
 * with err. */
int study_load_lengths_put(struct opt_set *o, char *err, size_t errlen);
/* Sets o to the default load (the table as a pairs trace, rows beyond the context left out, the
 * rate) and fills *l; o keeps pointers into *l, which must outlive it. 0, or -1 with err. */
int study_load_setup(struct opt_set *o, struct study_load *l, char *err, size_t errlen);
/* x rounded down to two significant digits, as text that reads back as the rate (x > 0). */
void study_load_round(double x, char *out, size_t len);

#endif
