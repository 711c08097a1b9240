/* traces/workload.h: where requests come from. Arrival processes (Poisson,
 * Gamma with a given coefficient of variation), request-length distributions
 * (fixed, uniform, lognormal, empirical file) and trace CSV files
 * (DESIGN.md section 4). All randomness comes from a gsl_rng the caller owns
 * (one stream per purpose), so a run is reproducible from its seed.
 *
 * Contract:
 *  - Parsers never exit; they return 0, or -1 with one line in err naming the
 *    problem ("FILE:LINE: ..." for files). Out-pointers are NULL on failure.
 *  - Draw functions are pure functions of the generator state: the same
 *    generator seed gives the same sequence.
 */
#ifndef SB_WORKLOAD_H
#define SB_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>
#include <gsl/gsl_rng.h>

/* ---- arrival processes ---- */

struct trc_arrivals {
	double rate_rps;   /* mean arrivals per second, > 0 */
	double cv;         /* coefficient of variation of inter-arrival gaps: 1 = Poisson (exponential gaps); otherwise Gamma with shape 1/cv^2 */
};

/* Smallest and largest arrival cv. Gaps are Gamma with shape 1/cv^2: at cv
 * 1e-3 (shape 1e6) they differ from the mean by 0.1%, as regular as any
 * study needs, while a far smaller cv overflows the shape (cv 1e-300: NaN
 * gaps). At cv 100 (shape 1e-4) nearly all gaps are 0 and a few are huge. */
#define TRC_MIN_CV 1e-3
#define TRC_MAX_CV 100.0

/* Validates rate (> 0, finite) and cv (TRC_MIN_CV to TRC_MAX_CV). */
int trc_arrivals_init(struct trc_arrivals *a, double rate_rps, double cv, char *err, size_t errlen);

/* Latest arrival a trace may hold and longest span of generated arrivals,
 * in seconds (31.7 years). Simulated time is int64 nanoseconds (292 years);
 * this leaves the rest of the clock to service times. */
#define TRC_MAX_SPAN_S 1e9

/* Next inter-arrival gap in seconds (exponential when cv == 1, Gamma otherwise). */
double trc_arrivals_next_gap_s(const struct trc_arrivals *a, gsl_rng *r);
/* The next n gaps into gaps[]: the same numbers, in the same order, as n
 * calls of trc_arrivals_next_gap_s. */
void trc_arrivals_next_gaps_s(const struct trc_arrivals *a, gsl_rng *r, double *gaps, size_t n);

/* ---- request-length distributions ---- */

/* Largest length any spec, length file or trace may hold: far above any
 * sentence a model serves, and it bounds the lognormal table and the
 * simulator's per-request unrolling. */
#define TRC_LENGTH_LIMIT 1000000u

/* Spec syntax (one string, as given to --input-len / --output-len or in model files):
 *   fixed:N              always N (N >= 1; 0 allowed only for unused lengths)
 *   uniform:A:B          integer uniform on [A, B]
 *   lognormal:MU:SIGMA[:MAX]   round(exp(N(MU, SIGMA^2))), clamped to [1, MAX] (MAX default 1000)
 *   file:PATH            empirical distribution file: lines "length,weight" (# comments,
 *                        optional header "length,weight"), drawn with gsl_ran_discrete
 *   N                    shorthand for fixed:N
 */
struct trc_lengths;

/* Parses spec into a new distribution (caller frees with trc_lengths_free).
 * Lognormal and file specs are turned into an exact discrete table here, so
 * draws, moments and quantiles describe the same distribution. */
int trc_lengths_parse(const char *spec, struct trc_lengths **out, char *err, size_t errlen);
uint32_t trc_lengths_draw(const struct trc_lengths *d, gsl_rng *r);
double trc_lengths_mean(const struct trc_lengths *d);          /* exact mean of the distribution */
double trc_lengths_second_moment(const struct trc_lengths *d); /* exact E[L^2] */
uint32_t trc_lengths_max(const struct trc_lengths *d);         /* largest value it can return */
/* Smallest L with P(length <= L) >= coverage (0 < coverage <= 1). A coverage
 * <= 0 (or NaN) gives the smallest possible length, one above 1 the largest. */
uint32_t trc_lengths_quantile(const struct trc_lengths *d, double coverage);
void trc_lengths_free(struct trc_lengths *d);                  /* NULL is fine */

/* ---- trace files ---- */

struct trc_trace {
	size_t n;               /* requests */
	double *arrival_s;      /* non-decreasing */
	uint32_t *input_len;
	uint32_t *output_len;
	uint64_t *prefix_id;    /* the prefix columns, when the trace has them (else NULL): each prompt's */
	uint32_t *prefix_len;   /* first prefix_len tokens are shared prefix prefix_id's (0: none) */
	uint64_t *session_id;   /* the session column, when the trace has it (else NULL): each request's
	                         * conversation (0: none); a turn's prompt begins with the one before and
	                         * its answer */
	/* the inner prefix columns, when the trace has them (else NULL): the first inner_len tokens of the
	 * shared prefix are inner prefix inner_id's (0: none), e.g. a group's system prompt inside a whole
	 * prompt that recurs; inner ids are their own names, apart from prefix ids */
	uint64_t *inner_id;
	uint32_t *inner_len;
	/* a Mooncake trace's prompt blocks as hash ids (else NULL): row i's are hash_count[i] ids from
	 * hash_ids[hash_start[i]], one for each hash_block_tokens tokens of its prompt */
	uint64_t *hash_ids;
	size_t *hash_start;
	uint32_t *hash_count;
	size_t nhash;
	uint32_t hash_block_tokens;
	int lengths_only;       /* 1: a table of (prompt, output) pairs, no arrival times (arrival_s all 0): lengths
	                         * to draw from (--trace-pairs, an LLM run's default load), not a trace to replay */
};

/* Loads "arrival_s,input_len,output_len" CSV (header required, # comments,
 * or with two more columns, ",prefix_id,prefix_len": the prompt's first
 * prefix_len tokens are shared prefix prefix_id's, 0 none, for a prefix cache;
 * or three, ",prefix_id,prefix_len,session_id": and the request is a turn of
 * conversation session_id (0 none), its prompt the turn before's and its answer
 * followed by the new question; or four, ",prefix_id,prefix_len,inner_id,inner_len":
 * a two-level prefix, the first inner_len tokens (at most prefix_len) inner
 * prefix inner_id's (0 none), shared by requests whose outer prefixes differ;
 * arrival times non-decreasing, lengths non-negative integers up to
 * TRC_LENGTH_LIMIT), or the Azure LLM inference trace format (header
 * "TIMESTAMP,ContextTokens,GeneratedTokens"; timestamps "YYYY-MM-DD
 * HH:MM:SS.fffffff", non-decreasing, arrivals in seconds after the first;
 * token counts from 1 to TRC_LENGTH_LIMIT as input_len and output_len), or
 * a table of (prompt, output) pairs, header "input_len,output_len", whose
 * arrivals are all 0 and lengths_only set (scripts/trace-lengths --pairs).
 * CRLF line ends are read as LF. A trace with no rows is an error. The
 * caller frees the result with trc_trace_free. */
int trc_trace_load(const char *path, struct trc_trace **out, char *err, size_t errlen);
/* The Mooncake traces' JSON lines (traces/trace_mooncake.c); trc_trace_load
 * reads a file whose first line opens with '{' this way. */
int trc_mooncake_load(const char *path, struct trc_trace **out, char *err, size_t errlen);
void trc_trace_free(struct trc_trace *t);                      /* NULL is fine */
/* For the readers: room for one more row in every per-row array the trace
 * has (the optional ones when allocated), doubling *cap. 0, or -1 out of
 * memory (the arrays grown so far stay the trace's). */
int trc_trace_grow(struct trc_trace *t, size_t *cap);

#endif
