/* bench/sort_bench.c: how long metrics_sort_ns (util/metrics.h) takes on a
 * serial run's latencies, to choose the radix sort's digits by measurement.
 * The keys are the sojourn times of an M/D/1 queue at 70% load with a
 * 0.6634 ms service (the reference serial run: resnet50 on the Table I NPU
 * at 1055 req/s), by Lindley's recursion over GSL's mt19937 exponential gaps,
 * in ns; they span about 26 bits. Each repetition sorts a fresh copy; prints
 * the median and the fastest, and fails if the result is not sorted or not a
 * permutation of the input (the sums must agree). Not part of the test suite.
 *
 * Usage: sort_bench [N [REPS]]   (default 10,000,000 keys, 7 repetitions) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "util/metrics.h"

#define SERVICE_S 0.6634e-3
#define RATE_RPS 1055.0
#define SEED 20261124u

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 10000000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	if (n < 2 || reps < 1 || reps > 101) {
		fprintf(stderr, "usage: sort_bench [N >= 2 [REPS 1..101]]\n");
		return 2;
	}
	int64_t *keys = malloc(n * sizeof *keys), *work = malloc(n * sizeof *work);
	gsl_rng *rng = gsl_rng_alloc(gsl_rng_mt19937);
	if (!keys || !work || !rng) {
		fprintf(stderr, "sort_bench: out of memory\n");
		return 1;
	}
	gsl_rng_set(rng, SEED);
	/* Lindley: the wait of customer i+1 is max(0, wait_i + service - gap) */
	double wait = 0.0;
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++) {
		keys[i] = (int64_t)((wait + SERVICE_S) * 1e9 + 0.5);
		sum += (uint64_t)keys[i];
		wait += SERVICE_S - gsl_ran_exponential(rng, 1.0 / RATE_RPS);
		if (wait < 0)
			wait = 0;
	}
	double t[101];
	for (int r = 0; r < reps; r++) {
		memcpy(work, keys, n * sizeof *work);
		double t0 = now_s();
		metrics_sort_ns(work, n);
		t[r] = now_s() - t0;
		uint64_t check = (uint64_t)work[0];
		for (size_t i = 1; i < n; i++) {
			if (work[i - 1] > work[i]) {
				fprintf(stderr, "sort_bench: not sorted at %zu\n", i);
				return 1;
			}
			check += (uint64_t)work[i];
		}
		if (check != sum) {
			fprintf(stderr, "sort_bench: the sorted keys are not the input's\n");
			return 1;
		}
	}
	qsort(t, (size_t)reps, sizeof t[0], cmp_double);
	printf("%zu keys (M/D/1 sojourn times, %.0f..%.0f ns): median %.1f ms, fastest %.1f ms, %d reps\n", n,
	       (double)work[0], (double)work[n - 1], t[reps / 2] * 1e3, t[0] * 1e3, reps);
	gsl_rng_free(rng);
	free(keys);
	free(work);
	return 0;
}
