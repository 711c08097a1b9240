/* bench/evq_bench.c: speed of the pending-event set (sim/evq.h), to choose
 * EVQ_IMPL_DEFAULT by measurement. Two shapes:
 *  - the classic "hold" model (Jones 1986, "An empirical comparison of
 *    priority-queue and event-set implementations"): pre-fill N events with
 *    exponential times, then repeat pop-min / push at popped time plus an
 *    exponential increment, so the size stays N;
 *  - "sim-mix": the queue as simbatch's engine drives it, one pending arrival
 *    plus the completions of up to DEVICES busy devices (size 1..4).
 * Random inputs come from GSL's mt19937 with fixed seeds and are generated
 * before the clock starts, so only queue work (plus, for sim-mix, the same
 * few branches for every structure) is timed. Each cell is the median of
 * several repetitions, interleaved across structures so background load
 * hits them alike; a checksum of the popped sequence must agree between all
 * structures or the program fails. Not part of the test suite.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "sim/engine/evq.h"

#define BENCH_MEAN_NS 1e6           /* mean of every exponential draw: one "unit" of time */
#define BENCH_MAX_REPS 51
#define BENCH_SEED 20240601u
#define MIX_DEVICES 3               /* devices in the sim-mix shape: queue size 1..1+MIX_DEVICES */
#define MIX_MAX_BATCH 4             /* requests a task takes at most */
#define MIX_SERVICE_MEAN_NS 2.0e6   /* mean task time: utilisation about 0.55 at batch 1 */
#define MIX_EVENTS 4000000          /* events per sim-mix run */

struct bench_case {
	size_t n;                    /* queue size held during the holds */
	size_t holds;                /* timed holds */
	size_t warmup;               /* untimed holds first, to leave the pre-fill's distribution */
};

static const struct bench_case bench_cases[] = {
	{ 2, 4000000, 1000 },
	{ 4, 4000000, 1000 },
	{ 16, 2000000, 1000 },
	{ 1024, 2000000, 10000 },
	{ 65536, 2000000, 65536 },
	{ 1048576, 1000000, 262144 },
};

/* pre-generated random input for one hold case, shared by every structure */
struct hold_input {
	int64_t *fill_ns;            /* n initial times */
	uint64_t *fill_key;          /* n initial keys */
	int64_t *inc_ns;             /* warmup + holds increments */
	uint64_t *inc_key;           /* warmup + holds keys */
};

static double bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int64_t bench_exp_ns(gsl_rng *r, double mean_ns)
{
	return (int64_t)(gsl_ran_exponential(r, mean_ns) + 0.5);
}

static int bench_cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return (a > b) - (a < b);
}

static double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static void hold_input_free(struct hold_input *in)
{
	free(in->fill_ns);
	free(in->fill_key);
	free(in->inc_ns);
	free(in->inc_key);
}

static int hold_input_make(struct hold_input *in, const struct bench_case *c)
{
	size_t m = c->warmup + c->holds;
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);

	memset(in, 0, sizeof *in);
	if (!r)
		return -1;
	gsl_rng_set(r, BENCH_SEED + (unsigned long)c->n);
	in->fill_ns = malloc(c->n * sizeof *in->fill_ns);
	in->fill_key = malloc(c->n * sizeof *in->fill_key);
	in->inc_ns = malloc(m * sizeof *in->inc_ns);
	in->inc_key = malloc(m * sizeof *in->inc_key);
	if (!in->fill_ns || !in->fill_key || !in->inc_ns || !in->inc_key)
		goto fail;
	for (size_t i = 0; i < c->n; i++) {
		in->fill_ns[i] = bench_exp_ns(r, BENCH_MEAN_NS);
		in->fill_key[i] = gsl_rng_get(r);
	}
	for (size_t i = 0; i < m; i++) {
		in->inc_ns[i] = bench_exp_ns(r, BENCH_MEAN_NS);
		in->inc_key[i] = gsl_rng_get(r);
	}
	gsl_rng_free(r);
	return 0;
fail:
	gsl_rng_free(r);
	hold_input_free(in);
	return -1;
}

/* One repetition: ns per timed hold, or a negative value when the queue
 * could not allocate. *sum receives a checksum of the popped sequence. */
static double hold_run(enum evq_impl impl, const struct bench_case *c,
		       const struct hold_input *in, uint64_t *sum)
{
	struct evq *q = evq_create(impl, c->n);
	struct event ev = { .kind = EV_ARRIVAL };
	uint64_t acc = 0;

	if (!q)
		return -1;
	for (size_t i = 0; i < c->n; i++) {
		ev.time_ns = in->fill_ns[i];
		ev.key = in->fill_key[i];
		if (evq_push(q, ev) != 0)
			goto fail;
	}
	for (size_t i = 0; i < c->warmup; i++) {
		evq_pop(q, &ev);
		ev.time_ns += in->inc_ns[i];
		ev.key = in->inc_key[i];
		if (evq_push(q, ev) != 0)
			goto fail;
	}
	const int64_t *inc_ns = in->inc_ns + c->warmup;
	const uint64_t *inc_key = in->inc_key + c->warmup;
	double t0 = bench_now_ns();
	for (size_t i = 0; i < c->holds; i++) {
		evq_pop(q, &ev);
		acc = acc * 31 + (uint64_t)ev.time_ns + ev.seq;
		ev.time_ns += inc_ns[i];
		ev.key = inc_key[i];
		if (evq_push(q, ev) != 0)
			goto fail;
	}
	double t1 = bench_now_ns();
	evq_destroy(q);
	*sum = acc;
	return (t1 - t0) / (double)c->holds;
fail:
	evq_destroy(q);
	return -1;
}

/* pre-generated draws for sim-mix; a power-of-two ring, so draws recycle
 * harmlessly if a run consumes more than were made */
#define MIX_RING (1u << 20)

struct mix_input {
	int64_t *arrival_gap_ns;     /* MIX_RING inter-arrival gaps */
	int64_t *service_ns;         /* MIX_RING task times */
};

static int mix_input_make(struct mix_input *in)
{
	gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);

	in->arrival_gap_ns = malloc(MIX_RING * sizeof *in->arrival_gap_ns);
	in->service_ns = malloc(MIX_RING * sizeof *in->service_ns);
	if (!r || !in->arrival_gap_ns || !in->service_ns) {
		gsl_rng_free(r);
		free(in->arrival_gap_ns);
		free(in->service_ns);
		return -1;
	}
	gsl_rng_set(r, BENCH_SEED);
	for (size_t i = 0; i < MIX_RING; i++) {
		in->arrival_gap_ns[i] = bench_exp_ns(r, BENCH_MEAN_NS);
		in->service_ns[i] = bench_exp_ns(r, MIX_SERVICE_MEAN_NS);
	}
	gsl_rng_free(r);
	return 0;
}

/* One repetition of the engine-shaped loop: a request arrives, waits in a
 * backlog, and idle devices take up to MIX_MAX_BATCH waiting requests as one
 * task whose completion is an event. Returns ns per event (one pop and, on
 * average, about one push); *mean_size gets the mean queue size seen. */
static double mix_run(enum evq_impl impl, const struct mix_input *in,
		      uint64_t *sum, double *mean_size)
{
	struct evq *q = evq_create(impl, 8);
	int busy[MIX_DEVICES] = { 0 };
	uint64_t backlog = 0, next_id = 0, acc = 0, size_sum = 0;
	uint32_t ia = 0, sv = 0;
	struct event ev = { .time_ns = 0, .key = next_id++, .kind = EV_ARRIVAL };

	if (!q || evq_push(q, ev) != 0)
		goto fail;
	double t0 = bench_now_ns();
	for (long e = 0; e < MIX_EVENTS; e++) {
		size_sum += evq_size(q);
		evq_pop(q, &ev);
		acc = acc * 31 + (uint64_t)ev.time_ns + ev.seq;
		int64_t now = ev.time_ns;
		if (ev.kind == EV_ARRIVAL) {
			backlog++;
			struct event next = { .time_ns = now + in->arrival_gap_ns[ia++ & (MIX_RING - 1)],
					      .key = next_id++, .kind = EV_ARRIVAL };
			if (evq_push(q, next) != 0)
				goto fail;
		} else {
			busy[ev.aux] = 0;
		}
		for (uint32_t d = 0; d < MIX_DEVICES && backlog > 0; d++) {
			if (busy[d])
				continue;
			uint64_t take = backlog < MIX_MAX_BATCH ? backlog : MIX_MAX_BATCH;
			struct event done = { .time_ns = now + in->service_ns[sv++ & (MIX_RING - 1)],
					      .key = next_id - 1 - backlog, .kind = EV_TASK_DONE, .aux = d };
			backlog -= take;
			busy[d] = 1;
			if (evq_push(q, done) != 0)
				goto fail;
		}
	}
	double t1 = bench_now_ns();
	evq_destroy(q);
	*sum = acc;
	*mean_size = (double)size_sum / MIX_EVENTS;
	return (t1 - t0) / MIX_EVENTS;
fail:
	evq_destroy(q);
	return -1;
}

static int bench_usage(FILE *f)
{
	fprintf(f, "usage: evq_bench [--reps=R]\n"
		   "  hold-model and sim-mix timings of every evq implementation;\n"
		   "  each cell is the median of R repetitions (odd, 1..%d, default 5)\n",
		BENCH_MAX_REPS);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	int reps = 5;
	double t[EVQ_IMPL_COUNT][BENCH_MAX_REPS];
	uint64_t sums[EVQ_IMPL_COUNT];
	double t_start = bench_now_ns();

	for (int i = 1; i < argc; i++) {
		char *end;
		if (strcmp(argv[i], "--help") == 0)
			return bench_usage(stdout);
		if (strncmp(argv[i], "--reps=", 7) == 0) {
			long v = strtol(argv[i] + 7, &end, 10);
			if (*end == '\0' && v >= 1 && v <= BENCH_MAX_REPS && v % 2 == 1) {
				reps = (int)v;
				continue;
			}
			fprintf(stderr, "evq_bench: --reps must be odd, 1..%d: %s\n",
				BENCH_MAX_REPS, argv[i]);
			return 2;
		}
		fprintf(stderr, "evq_bench: unknown argument: %s\n", argv[i]);
		return bench_usage(stderr);
	}

	printf("hold model: ns per hold (pop + push), median of %d; mean increment %.0f ns\n",
	       reps, BENCH_MEAN_NS);
	printf("%10s %9s", "N", "holds");
	for (int k = 0; k < EVQ_IMPL_COUNT; k++)
		printf(" %13s", evq_impl_name((enum evq_impl)k));
	printf("\n");
	for (size_t c = 0; c < sizeof bench_cases / sizeof bench_cases[0]; c++) {
		const struct bench_case *bc = &bench_cases[c];
		struct hold_input in;
		if (hold_input_make(&in, bc) != 0) {
			fprintf(stderr, "evq_bench: out of memory generating N=%zu\n", bc->n);
			return 1;
		}
		for (int r = 0; r < reps; r++) {
			for (int k = 0; k < EVQ_IMPL_COUNT; k++) {
				uint64_t s;
				t[k][r] = hold_run((enum evq_impl)k, bc, &in, &s);
				if (t[k][r] < 0) {
					fprintf(stderr, "evq_bench: out of memory at N=%zu\n", bc->n);
					return 1;
				}
				if (r == 0)
					sums[k] = s;
				if (s != sums[0]) {
					fprintf(stderr, "evq_bench: %s popped a different sequence at N=%zu\n",
						evq_impl_name((enum evq_impl)k), bc->n);
					return 1;
				}
			}
		}
		hold_input_free(&in);
		printf("%10zu %9zu", bc->n, bc->holds);
		for (int k = 0; k < EVQ_IMPL_COUNT; k++)
			printf(" %13.1f", bench_median(t[k], reps));
		printf("\n");
		fflush(stdout);
	}

	struct mix_input mix;
	double mean_size = 0;
	if (mix_input_make(&mix) != 0) {
		fprintf(stderr, "evq_bench: out of memory generating sim-mix\n");
		return 1;
	}
	for (int r = 0; r < reps; r++) {
		for (int k = 0; k < EVQ_IMPL_COUNT; k++) {
			uint64_t s;
			t[k][r] = mix_run((enum evq_impl)k, &mix, &s, &mean_size);
			if (t[k][r] < 0) {
				fprintf(stderr, "evq_bench: out of memory in sim-mix\n");
				return 1;
			}
			if (r == 0)
				sums[k] = s;
			if (s != sums[0]) {
				fprintf(stderr, "evq_bench: %s popped a different sequence in sim-mix\n",
					evq_impl_name((enum evq_impl)k));
				return 1;
			}
		}
	}
	free(mix.arrival_gap_ns);
	free(mix.service_ns);
	printf("\nsim-mix: ns per event (pop + about one push), median of %d; %d events,\n"
	       "1 arrival stream + %d devices, mean queue size %.2f\n",
	       reps, MIX_EVENTS, MIX_DEVICES, mean_size);
	printf("%20s", "");
	for (int k = 0; k < EVQ_IMPL_COUNT; k++)
		printf(" %13s", evq_impl_name((enum evq_impl)k));
	printf("\n%20s", "sim-mix");
	for (int k = 0; k < EVQ_IMPL_COUNT; k++)
		printf(" %13.1f", bench_median(t[k], reps));
	printf("\n\nall structures popped identical sequences; total %.1f s\n",
	       (bench_now_ns() - t_start) / 1e9);
	return 0;
}
