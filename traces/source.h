/* traces/source.h: the one source of a run's requests, for the simulator
 * (sim/engine/engine.c) and the live runtime's issue schedule
 * (sim/cli/cmd_live.c) alike: a trace replayed row by row, or generated
 * arrivals (Poisson or Gamma gaps) with lengths drawn from two
 * distributions. A simulated and a live run with the same seed therefore
 * see the same requests.
 *
 * Contract:
 *  - Generated arrivals: request 0 arrives at 0 s, request i at the sum of i
 *    gaps. Gaps come from the run's RNG_ARRIVALS stream and lengths from
 *    RNG_LENGTHS (util/rng.h), input length before output length, so
 *    changing a length spec never moves an arrival.
 *  - A length distribution given as NULL (a model that does not use that
 *    length) yields 0 and draws nothing.
 *  - trace_pairs: arrivals are generated as above, and each request's
 *    lengths are the row gsl_rng_uniform_int(RNG_LENGTHS, rows) of the trace:
 *    a prompt and its own output, never two rows' lengths.
 *  - The stream ends after `requests` requests (or the whole trace, or its
 *    first `requests` rows), or, with requests == 0, at the first generated
 *    arrival at or after duration_s.
 *  - Times are integer ns, rounded to nearest from the seconds drawn.
 */
#ifndef SB_TRC_SOURCE_H
#define SB_TRC_SOURCE_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>
#include "workload.h"

struct trc_source_config {
	const struct trc_trace *trace;           /* replay it; or NULL for generated arrivals: */
	double trace_speedup;                    /* replay the trace's arrivals this many times faster (0 or 1: as
	                                            recorded) */
	int trace_pairs;                         /* 1: generated arrivals, each request's lengths one row of the
	                                            trace drawn uniformly (prompt and output together) */
	double rate_rps, arrival_cv;             /*   the arrival process */
	const struct trc_lengths *input_len;     /*   NULL: input lengths are 0 */
	const struct trc_lengths *output_len;    /*   NULL: output lengths are 0 */
	double duration_s;                       /*   arrivals stop here when requests == 0 */
	uint64_t requests;                       /* at most this many (0: all of the trace, or duration_s) */
	uint64_t seed;
};

struct trc_request {
	uint64_t id;                             /* 0-based, in arrival order */
	int64_t arrival_ns;
	uint32_t input_len, output_len;
	uint64_t prefix_id;                      /* its prompt's first prefix_len tokens are this shared prefix's */
	uint32_t prefix_len;                     /* (0: none; a trace's prefix columns) */
	uint64_t session_id;                     /* the conversation it is a turn of (0: none; a trace's column) */
	uint64_t inner_id;                       /* the first inner_len tokens of its shared prefix are this */
	uint32_t inner_len;                      /* inner prefix's (0: none; a trace's inner prefix columns) */
	const uint64_t *hash_ids;                /* a Mooncake trace's: its prompt's blocks of hash_block */
	uint32_t nhash, hash_block;              /* tokens each, as hash ids (NULL: none) */
};

/* Gaps are drawn TRC_GAP_BLOCK at a time: the draws (a logarithm each) do
 * not wait on each other there, where one at a time each waited on the
 * simulation between them. The arrivals' generator is their own, so the
 * gaps are the same numbers in the same order either way. */
#define TRC_GAP_BLOCK 64

struct trc_source {
	struct trc_source_config c;
	struct trc_arrivals arrivals;
	gsl_rng *rng_arrivals, *rng_lengths;
	uint64_t next_id;
	double next_arrival_s;
	double gaps[TRC_GAP_BLOCK];              /* drawn, gaps[gaps_used..TRC_GAP_BLOCK) not yet used */
	unsigned gaps_used;
	int ended;                               /* trc_source_next returned 0 */
};

/* 0, or -1 with err (a bad rate or cv, out of memory). */
int trc_source_init(struct trc_source *s, const struct trc_source_config *c, char *err, size_t errlen);
/* The next request into *out: 1, 0 when the stream has ended, or -1 with err
 * when a generated arrival lands past TRC_MAX_SPAN_S (a trace is checked when
 * it is read). */
int trc_source_next(struct trc_source *s, struct trc_request *out, char *err, size_t errlen);
void trc_source_fini(struct trc_source *s);

/* For closed-loop clients (sim/engine/clients.h), which set arrivals
 * themselves: the next request's id and lengths, drawn as trc_source_next
 * draws them for generated arrivals (RNG_LENGTHS, or a trace's rows with
 * trace_pairs); no gap is drawn and arrival_ns is 0. */
void trc_source_next_lengths(struct trc_source *s, struct trc_request *out);

#endif
