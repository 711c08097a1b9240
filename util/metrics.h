/* util/metrics.h: per-run latency statistics. Every measured request's
 * end-to-end latency is kept (exact, in ns: 4 bytes each while all are below
 * 2^32 ns, 4.3 s, else 8) so percentiles and the CDF are exact; queueing time
 * goes into a fixed-size log-linear histogram (bounded relative error, see
 * metrics.c) plus an exact running mean, so memory grows with completed
 * requests by 4 or 8 bytes each and no more (8 while metrics_finish sorts).
 *
 * Contract:
 *  - metrics_record is O(1) amortized and never fails except on allocation
 *    (-1); metrics_finish sorts the samples once and fills a summary.
 *  - Quantiles use the "nearest rank on sorted samples with linear
 *    interpolation" rule of gsl_stats_quantile_from_sorted_data.
 */
#ifndef SB_METRICS_H
#define SB_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include "u128.h"

#define METRICS_CDF_POINTS 1000   /* quantiles stored per run: q = i/1000, i = 1..1000 */

struct metrics;

struct metrics_summary {
	uint64_t count;              /* measured requests (after warm-up) */
	double mean_ms, p50_ms, p90_ms, p95_ms, p99_ms, p999_ms, max_ms, min_ms;
	double queue_mean_ms, queue_p99_ms;
	double sla_violation_rate;   /* fraction of measured requests with latency > SLA */
	double cdf_ms[METRICS_CDF_POINTS]; /* cdf_ms[i] = quantile (i+1)/1000 of latency */
};

/* A log-linear histogram of non-negative ns values (metrics.c: each value
 * in a bucket of relative width <= 1/128, reported at its midpoint, so within
 * 1/256), with an exact sum and the largest value: the queueing times of
 * every run, and values too many to keep one by one (an LLM's inter-token
 * gaps). Zero it to start. 58 KiB. */
#define METRICS_HIST_BUCKETS ((62 - 6) * 128 + 128)
struct metrics_hist {
	uint64_t count[METRICS_HIST_BUCKETS];
	uint64_t n;
	struct u128 sum;             /* exact, ns */
	int64_t max_ns;
};
void metrics_hist_add(struct metrics_hist *h, int64_t ns);
/* metrics_hist_add of ns, `times` times over (an iteration's members that share one gap). */
void metrics_hist_add_n(struct metrics_hist *h, int64_t ns, uint32_t times);
/* The nearest-rank quantile num/den (rank ceil(n num / den), 1-based, in
 * integers), as its bucket's midpoint in ns; 0 when empty. */
double metrics_hist_quantile_ns(const struct metrics_hist *h, uint64_t num, uint64_t den);
/* out[i] = metrics_hist_quantile_ns(h, i + 1, npoints) for i < npoints, in
 * one pass over the buckets. */
void metrics_hist_quantiles_ns(const struct metrics_hist *h, double *out, uint64_t npoints);
double metrics_hist_mean_ns(const struct metrics_hist *h);

struct metrics *metrics_create(size_t expected_samples);
/* A store of constant size (--quantiles=histogram): the latencies in a
 * metrics_hist, so a run's memory does not grow with its requests; the
 * summary's quantiles and CDF are the histogram's (nearest rank, within
 * 1/256), its mean, min and max exact, and the violation rate exact for the
 * deadline over_ns (another deadline: by bucket). NULL out of memory. */
struct metrics *metrics_create_histogram(int64_t over_ns);
void metrics_destroy(struct metrics *m);
int metrics_record(struct metrics *m, int64_t latency_ns, int64_t queue_ns);
/* Fills s; sla_ns is the deadline for the violation rate. Sorts in place
 * (the samples widened to 8 bytes each first). 0, or -1 out of memory. */
int metrics_finish(struct metrics *m, int64_t sla_ns, struct metrics_summary *s);
/* metrics_finish's summary less its CDF (left zero), for a caller that
 * reports no CDF: the quantiles, min and max are the same numbers, but
 * found without sorting the samples (the quantiles' neighbourhoods only),
 * and the samples are left in no order. */
int metrics_finish_summary(struct metrics *m, int64_t sla_ns, struct metrics_summary *s);
/* Sorted latency samples (valid after metrics_finish; an exact store's), ns. */
const int64_t *metrics_sorted_ns(const struct metrics *m, size_t *n);
/* Sorts any int64 array ascending (the radix sort metrics_finish uses), in
 * place with no memory beyond the array's own. */
void metrics_sort_ns(int64_t *v, size_t n);
/* Heap bytes m holds now: 4 per sample of capacity while every latency fits
 * in 32 bits, else 8, plus a fixed ~58 KiB (the queueing-time histogram);
 * metrics_finish sorts in 8 bytes a sample. A histogram store: a fixed ~116 KiB. */
size_t metrics_memory_bytes(const struct metrics *m);

/* MLPerf LoadGen's early-stopping rule (binomial, one-sided): the fewest
 * measured requests for which, with `over` of them above the reported
 * q-quantile, that quantile still bounds the true one from above with
 * confidence conf. At conf 0.99: 459 for a p99 with none over, 662 with one,
 * 4,603 for a p99.9. A run with fewer measured requests than the count for
 * none over cannot support its q-quantile at all. */
uint64_t metrics_tail_min_requests(double q, uint64_t over, double conf);

/* The one-sided upper Clopper-Pearson bound on a fraction, with `events`
 * of n trials observed: the true fraction is at most it with confidence
 * conf (1 when every trial was an event). capacity decides an LLM probe on
 * the fraction of requests that miss a target. */
double metrics_fraction_upper(uint64_t events, uint64_t n, double conf);

/* The fewest trials n for which, at the half of `target` events
 * (floor(n target / 2)), metrics_fraction_upper is at most target: a probe
 * whose true fraction is half the target then passes. */
uint64_t metrics_fraction_min_trials(double target, double conf);

/* The confidence the summary's tail marks use (MLPerf's). */
#define METRICS_TAIL_CONFIDENCE 0.99

#endif
