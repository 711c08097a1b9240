/* calib/calib_cpu.c: the calib-cpu program (run as `simbatch calibrate
 * --device=cpu`): measures the GEMMs and element-wise work of the chosen
 * models' nodes on this CPU with OpenBLAS and writes a calibration table
 * (CSV, hwmodels/caltab.h) and its copy in SQLite (store.h).
 *
 * Kernel set: OpenBLAS reads OPENBLAS_CORETYPE once, when the library is
 * loaded, which is before main. So the program decides the kernel set first
 * (--coretype, else OPENBLAS_CORETYPE from the environment, else from the
 * CPU's flags, cpu_select.h), and when the environment does not say it yet,
 * sets it and executes itself again (/proc/self/exe, same arguments). It then
 * checks that OpenBLAS runs the kernels it asked for and records which ones
 * ran, and why, in the table header.
 *
 * Exit status: 0 done, 1 failure (I/O, memory, BLAS), 2 bad option.
 */
#include "../util/outfile.h"
#include "../util/errkind.h"
#include "../kernels/fpu.h"
#include "cpu_bench.h"
#include "../kernels/cpu_select.h"
#include "plan.h"
#include "store.h"
#include "../hwmodels/caltab.h"
#include "../models/model.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cblas.h>
#include "../util/options.h"
#include <gsl/gsl_errno.h>

#define CC_WHY_ENV "SIMBATCH_CALIB_CORETYPE_WHY"  /* carries the choice's reason across the re-exec */
#define CC_DEFAULT_OUT "results/calib-cpu.csv"
#define CC_DEFAULT_DB "results/calibration.db"

struct cc_args {
	struct calplan_models models;       /* --model, or the default list */
	const char *batches;
	uint32_t max_batch;
	uint32_t hidden;
	struct calbench_opts bench;
	double max_gflop, max_mib;
	const char *coretype;               /* NULL: choose automatically */
	uint32_t threads;
	const char *out, *db;
	int no_db, dry_run, quiet, help;
	int clock_given;                    /* --clock was given */
	uint32_t rounds;                    /* interleaved rounds over a shape's batches */
	int cold_start;                     /* measure the cold-start field (cc_cold_start) */
};

/* calib-cpu's options (util/options.h: bounds checked on input, listed by --help). The timing and
 * budget defaults are calib/README.md's "Timing" and "Budget": 0.2 s timed a point puts the
 * scheduler's slices and the clock's cost under a percent of it; 160 GFLOP and 2 GiB a call cover
 * every bundled model's GEMMs up to batch 2048 (ResNet-50's first im2col reaches 2 GiB at 192) while
 * the whole plan stays a few minutes (711 points, 3.6 TFLOP) on one core of this machine. */
static const struct opt_def cc_opts[] = {
	{ "model", OPT_LIST, NULL, 0, 0, 0, "models, names or .model files, comma-separated (default "
	  CALPLAN_DEFAULT_MODELS ")" },
	{ "batches", OPT_STR, CALPLAN_DEFAULT_BATCHES, 0, 0, 0, "batch sizes, increasing" },
	{ "max-batch", OPT_UINT, NULL, 1, 65536, 0, "drop listed batches above B" },
	{ "hidden", OPT_UINT, "1024", 1, 1 << 20, 0, "hidden size of the LSTM cell whose element-wise work is timed" },
	{ "warmup", OPT_UINT, "2", 0, 1000, 0, "untimed calls per point" },
	{ "reps", OPT_UINT, "5", 1, 10000, 0, "timed samples per point, at least" },
	{ "max-reps", OPT_UINT, "41", 1, 10000, 0, "timed samples per point, at most" },
	{ "min-time", OPT_DOUBLE, "0.2", 0, 3600, 0, "keep timing a point until S seconds were timed" },
	{ "rounds", OPT_UINT, "3", 1, 100, 0, "spread each shape's samples over R interleaved rounds" },
	{ "max-gflop", OPT_DOUBLE, "160", 0, 1e6, 1, "skip points whose one call exceeds G GFLOP" },
	{ "max-mib", OPT_DOUBLE, "2048", 0, 1e7, 1, "skip points whose operands exceed M MiB" },
	{ "coretype", OPT_STR, NULL, 0, 0, 0, "OpenBLAS kernel set (OPENBLAS_CORETYPE), e.g. SkylakeX, Haswell; "
	  "'library' leaves it to OpenBLAS; default: from the CPU's flags" },
	{ "threads", OPT_UINT, "1", 1, 256, 0, "BLAS threads" },
	{ "m1-kernel", OPT_STR, "gemv", 0, 0, 0, "gemv or gemm: what runs a product with M = 1" },
	{ "clock", OPT_STR, NULL, 0, 0, 0, "cpu: the thread's CPU time, so time preempted by other jobs does not count "
	  "(default with one thread); wall: CLOCK_MONOTONIC (needed for more)" },
	{ "cold-start", OPT_STR, "on", 0, 0, 0, "on: also measure what the largest weight costs to refill after the "
	  "thread slept 0.5 to 200 ms (the table's cold-start field); off: skip it" },
	{ "statistic", OPT_STR, "median", 0, 0, 0, "median: a point's typical time; mean: what a serving loop pays on "
	  "average, the larger where the machine's speed wanders" },
	{ "out", OPT_STR, CC_DEFAULT_OUT, 0, 0, 0, "CSV table" },
	{ "db", OPT_STR, CC_DEFAULT_DB, 0, 0, 0, "SQLite copy" },
	{ "no-db", OPT_FLAG, NULL, 0, 0, 0, "skip the SQLite copy" },
	{ "dry-run", OPT_FLAG, NULL, 0, 0, 0, "print the plan (points, GFLOP) and exit" },
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "no progress lines" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define CC_NOPTS (sizeof cc_opts / sizeof cc_opts[0])

static void cc_usage(FILE *f)
{
	opt_print_help(f, "usage: simbatch calibrate --device=cpu [options]     (or: calib-cpu [options])\n"
	               "Times the GEMMs and element-wise work of the models' nodes with OpenBLAS over batch sizes and\n"
	               "writes a calibration table (CSV + SQLite) for --hw=FILE; calib/tables/cpu.csv is --hw=cpu.",
	               cc_opts, CC_NOPTS);
}

/* A two-way option: *out = 1 for yes, 0 for no, else an error. */
static int cc_pick(const struct opt_set *o, const char *name, const char *yes, const char *no, int *out, char *err,
                   size_t errlen)
{
	const char *text = opt_str(o, name);
	if (strcmp(text, yes) != 0 && strcmp(text, no) != 0) {
		snprintf(err, errlen, "--%s=%s: expected %s or %s", name, text, yes, no);
		return -1;
	}
	*out = strcmp(text, yes) == 0;
	return 0;
}

static int cc_parse(int argc, char **argv, struct cc_args *a, char *err, size_t errlen)
{
	struct opt_set o;
	memset(a, 0, sizeof *a);
	if (opt_parse(&o, cc_opts, CC_NOPTS, argc, argv, 0, err, errlen) != 0)
		return -1;
	a->help = opt_flag(&o, "help");
	for (size_t i = 0; i < opt_list_count(&o, "model"); i++)
		if (calplan_models_add(&a->models, opt_list_at(&o, "model", i), err, errlen) != 0)
			return -1;
	a->batches = opt_str(&o, "batches");
	a->max_batch = opt_given(&o, "max-batch") ? (uint32_t)opt_uint(&o, "max-batch") : UINT32_MAX;
	a->hidden = (uint32_t)opt_uint(&o, "hidden");
	a->bench = (struct calbench_opts){ .warmup = (uint32_t)opt_uint(&o, "warmup"),
	                                   .min_reps = (uint32_t)opt_uint(&o, "reps"),
	                                   .max_reps = (uint32_t)opt_uint(&o, "max-reps"),
	                                   .min_time_s = opt_double(&o, "min-time") };
	a->max_gflop = opt_double(&o, "max-gflop");
	a->max_mib = opt_double(&o, "max-mib");
	a->coretype = opt_str(&o, "coretype");
	a->threads = (uint32_t)opt_uint(&o, "threads");
	a->rounds = (uint32_t)opt_uint(&o, "rounds");
	a->out = opt_str(&o, "out");
	a->db = opt_str(&o, "db");
	a->no_db = opt_flag(&o, "no-db");
	a->dry_run = opt_flag(&o, "dry-run");
	a->quiet = opt_flag(&o, "quiet");
	a->clock_given = opt_given(&o, "clock");
	int median = 1;
	if (cc_pick(&o, "m1-kernel", "gemv", "gemm", &a->bench.m1_gemv, err, errlen) != 0 ||
	    (a->clock_given && cc_pick(&o, "clock", "cpu", "wall", &a->bench.thread_cpu_clock, err, errlen) != 0) ||
	    cc_pick(&o, "cold-start", "on", "off", &a->cold_start, err, errlen) != 0 ||
	    cc_pick(&o, "statistic", "median", "mean", &median, err, errlen) != 0)
		return -1;
	a->bench.mean = !median;
	if (a->bench.max_reps < a->bench.min_reps) {
		snprintf(err, errlen, "--max-reps=%u is below --reps=%u", a->bench.max_reps, a->bench.min_reps);
		return -1;
	}
	if (a->rounds > a->bench.max_reps) {
		snprintf(err, errlen, "--rounds=%u exceeds --max-reps=%u (one sample per round at least)", a->rounds,
		         a->bench.max_reps);
		return -1;
	}
	if (!a->clock_given)
		a->bench.thread_cpu_clock = a->threads == 1;
	if (a->bench.thread_cpu_clock && a->threads > 1) {
		snprintf(err, errlen, "--clock=cpu times the calling thread only: with --threads=%u use --clock=wall",
		         a->threads);
		return -1;
	}
	if (a->coretype && (!*a->coretype || strlen(a->coretype) > 32)) {
		snprintf(err, errlen, "--coretype='%s': expected an OpenBLAS core name or 'library'", a->coretype);
		return -1;
	}
	if (a->models.n == 0)
		return calplan_models_add(&a->models, CALPLAN_DEFAULT_MODELS, err, errlen);
	return 0;
}

static void cc_free_args(struct cc_args *a)
{
	calplan_models_free(&a->models);
}

/* Decides the kernel set; re-executes the program when OpenBLAS must be
 * loaded with another OPENBLAS_CORETYPE. Returns 0 with *want (NULL: the
 * library's own choice) and why, or -1 with err (the exec failed). */
static int cc_kernels(const struct cc_args *a, const struct calsel_cpu *cpu, char **argv, const char **want,
                      char *why, size_t whylen, char *err, size_t errlen)
{
	const char *env = getenv("OPENBLAS_CORETYPE"), *carried = getenv(CC_WHY_ENV);
	int library = a->coretype && strcmp(a->coretype, "library") == 0;
	char pick_why[160];

	if (env && !*env)
		env = NULL;
	if (library) {
		*want = NULL;
		snprintf(why, whylen, "OpenBLAS's own CPUID detection (--coretype=library)");
	} else if (a->coretype) {
		*want = a->coretype;
		snprintf(why, whylen, "--coretype=%s", a->coretype);
	} else if (env && !carried) {
		*want = env;
		snprintf(why, whylen, "OPENBLAS_CORETYPE=%s from the environment", env);
	} else if (carried) {
		*want = env;
		snprintf(why, whylen, "%s", carried);
	} else {
		*want = calsel_pick_coretype(cpu, pick_why, sizeof pick_why);
		snprintf(why, whylen, "picked from /proc/cpuinfo (%s)", pick_why);
	}
	int same = (*want == NULL) ? env == NULL : env && strcmp(env, *want) == 0;
	if (same) {
		unsetenv(CC_WHY_ENV);
		return 0;
	}
	if (carried) {
		snprintf(err, errlen, "re-executed with OPENBLAS_CORETYPE=%s but still not the wanted '%s'",
		         env ? env : "(unset)", *want ? *want : "(unset)");
		return -1;
	}
	if ((*want ? setenv("OPENBLAS_CORETYPE", *want, 1) : unsetenv("OPENBLAS_CORETYPE")) != 0 ||
	    setenv(CC_WHY_ENV, why, 1) != 0) {
		snprintf(err, errlen, "cannot set the environment: %s", err_strerror(errno));
		return -1;
	}
	fflush(NULL);
	execv("/proc/self/exe", argv);
	snprintf(err, errlen, "cannot re-execute /proc/self/exe with OPENBLAS_CORETYPE set: %s", err_strerror(errno));
	return -1;
}

/* The header of the table: what ran, where, when and how. */
static int cc_header(struct caltab *t, const struct cc_args *a, const struct calsel_cpu *cpu, const char *blas_path,
                     const char *kernels_why,
                     const struct calplan *p, size_t lowered, double load0, double wall_s, int argc, char **argv,
                     char *err, size_t errlen)
{
	char date[32], models[512] = "", command[1024] = "";
	time_t now = time(NULL);
	double load1 = 0;
	size_t used = 0;

	strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	getloadavg(&load1, 1);
	for (size_t i = 0; i < a->models.n && used < sizeof models; i++)
		used += (size_t)snprintf(models + used, sizeof models - used, "%s%s", i ? ", " : "", a->models.names[i]);
	used = 0;
	for (int i = 0; i < argc && used < sizeof command; i++)
		used += (size_t)snprintf(command + used, sizeof command - used, "%s%s", i ? " " : "", argv[i]);
	if (caltab_set_fieldf(t, "device", err, errlen, "cpu (%s; %u BLAS thread%s of %u online CPUs)", cpu->model_name, a->threads,
	             a->threads == 1 ? "" : "s", cpu->online_cpus) ||
	    caltab_set_fieldf(t, "date", err, errlen, "%s", date) ||
	    caltab_set_fieldf(t, "cpu-flags", err, errlen, "avx %d, avx2 %d, fma %d, avx512f %d, avx512cd %d, avx512bw %d, "
	             "avx512dq %d, avx512vl %d; nominal %.0f MHz", cpu->avx, cpu->avx2, cpu->fma, cpu->avx512f,
	             cpu->avx512cd, cpu->avx512bw, cpu->avx512dq, cpu->avx512vl, cpu->mhz) ||
	    caltab_set_fieldf(t, "library", err, errlen, "%s (openblas_get_config; cblas_sgemm from %s)", openblas_get_config(),
	             blas_path) ||
	    caltab_set_fieldf(t, "kernels", err, errlen, "%s (openblas_get_corename); %s", openblas_get_corename(), kernels_why) ||
	    caltab_set_fieldf(t, "threads", err, errlen, "%u (openblas_set_num_threads; the element-wise kernel runs on one)",
	             a->threads) ||
	    caltab_set_fieldf(t, "gemm", err, errlen, "cblas_sgemm, fp32, row-major: (batch*m_per_sample x k) times a shared "
	             "(k x n) weight%s", a->bench.m1_gemv ? "; M = 1 runs cblas_sgemv (--m1-kernel=gemv)" : "") ||
	    caltab_set_fieldf(t, "attn", err, errlen, "batch independent (m_per_sample x k) by (k x n) products, own operands per "
	             "sample, one gemm call each") ||
	    caltab_set_fieldf(t, "elementwise", err, errlen, "LSTM cell, hidden %u, %d ops per unit (4 bias adds, 3 sigmoid, "
	             "2 tanh, c = f*c + i*g, h = o*tanh(c)); the live runtime's own vectorized cell (kernels/cpu_cells.h), "
	             "denormals flushed", a->hidden,
	             CALBENCH_LSTM_OPS_PER_UNIT) ||
	    caltab_set_fieldf(t, "timing", err, errlen, "%s; each shape's batches in %u interleaved rounds (ascending, descending, "
	             "...), %u warm-up calls in the first round and 1 in later ones, samples until at least %u per point "
	             "and %.3g s timed, at most %u (calls under 20 us timed in groups); %s of a point's samples; "
	             "operands stay resident (warm caches, as a serving loop reusing its weights)",
	             a->bench.thread_cpu_clock ? "CLOCK_THREAD_CPUTIME_ID (the thread's CPU time: time preempted by "
	             "other jobs on this shared machine does not count)" : "CLOCK_MONOTONIC (wall)", a->rounds,
	             a->bench.warmup, ((a->bench.min_reps + a->rounds - 1) / a->rounds) * a->rounds,
	             a->bench.min_time_s, a->bench.max_reps, a->bench.mean ? "mean" : "median") ||
	    caltab_set_fieldf(t, "budget", err, errlen, "points above %.4g GFLOP per call or %.4g MiB of operands not measured; "
	             "a shape's curve ends at its largest batch within budget", p->max_gflop, a->max_mib) ||
	    caltab_set_fieldf(t, "monotone", err, errlen, "latency_s = smallest measured_s at this or a larger batch of the "
	             "shape (a batch can be padded up); %zu of %zu rows lowered", lowered, t->nrows) ||
	    caltab_set_fieldf(t, "models", err, errlen, "%s", models) ||
	    caltab_set_fieldf(t, "conditions", err, errlen, "load average %.2f at start, %.2f at end; %.0f s wall; machine "
	             "shared with other jobs", load0, load1, wall_s) ||
	    caltab_set_fieldf(t, "command", err, errlen, "%s", command))
		return -1;
	return 0;
}

/* The cold-start field (hwmodels/caltab.h): the refill after idle
 * measured on the plan's largest weight up to CC_COLD_MAX_BYTES (a GEMM at
 * batch 1, the case where a step reads all of it), at idle times from half
 * a millisecond to 200 ms, as seconds per weight byte (the simulator scales
 * it by each node's weights and interpolates between the idle times). The
 * bound keeps the probe to weights a serving loop keeps in cache: the
 * LSTM's 32 MiB here (the measurement behind the model), GNMT's 48 MiB in
 * the default plan, not its 126 MiB vocabulary projection. */
#define CC_COLD_MAX_BYTES (64ull << 20)
static int cc_cold_start(const struct cc_args *a, const struct calplan *p, struct caltab *t, char *err, size_t errlen)
{
	static const double idle_ms[] = { 0.5, 1, 2, 5, 10, 20, 50, 100, 200 };
	enum { NIDLE = sizeof idle_ms / sizeof idle_ms[0], COLD_REPS = 7 };
	const struct calplan_shape *big = NULL;
	struct calbench_buffers *buf = NULL;
	double extra[NIDLE];
	char curve[512] = "", raw[512] = "";
	size_t used = 0, rused = 0;

	for (size_t i = 0; i < p->nshapes; i++) {
		const struct calplan_shape *s = &p->shapes[i];
		if (s->op == CALTAB_GEMM && s->max_batch >= 1 && s->k * s->n * sizeof(float) <= CC_COLD_MAX_BYTES &&
		    (!big || s->k * s->n > big->k * big->n))
			big = s;
	}
	if (!big)
		return 0;
	if (calbench_buffers_create(big, 1, &buf, err, errlen) != 0)
		return -1;
	double bytes = (double)big->k * big->n * sizeof(float), level = 0;
	for (size_t i = 0; i < NIDLE; i++) {
		if (calbench_cold_extra(big, buf, a->bench.m1_gemv, idle_ms[i] * 1e-3, COLD_REPS, &extra[i], err,
		                        errlen) != 0) {
			calbench_buffers_destroy(buf);
			return -1;
		}
		/* the field is non-decreasing and >= 0 (a longer idle loses at least as much): a running maximum */
		level = extra[i] > level ? extra[i] : level;
		used += (size_t)snprintf(curve + used, sizeof curve - used, " %g:%.4e", idle_ms[i], level / bytes);
		rused += (size_t)snprintf(raw + rused, sizeof raw - rused, "%s%g ms %.3f", i ? ", " : "", idle_ms[i],
		                          extra[i] * 1e3);
	}
	calbench_buffers_destroy(buf);
	if (!a->quiet)
		fprintf(stderr, "calib-cpu: cold start on gemm %llux%llux%llu: ms more after idle: %s\n",
		        (unsigned long long)big->m, (unsigned long long)big->k, (unsigned long long)big->n, raw);
	return caltab_set_fieldf(t, CALTAB_COLD_START_FIELD, err, errlen,
	                "per weight byte after idle:%s; seconds per weight byte after MS ms idle, a running maximum of "
	                "gemm %llux%llux%llu at batch 1 (%.1f MiB of weights): %d calls right after a sleep less the %d "
	                "right before it, median of %d (ms: %s)", curve, (unsigned long long)big->m,
	                (unsigned long long)big->k, (unsigned long long)big->n, bytes / 1048576.0, CALBENCH_COLD_CALLS,
	                CALBENCH_COLD_CALLS, COLD_REPS, raw);
}

/* Times every point of the plan into t. A shape's batches are measured in
 * a->rounds interleaved rounds (ascending, then descending, ...), each
 * taking its share of the samples, and each point's median is over all its
 * samples: a burst of other jobs' load then spreads over every point of the
 * curve rather than bending one. */
static int cc_measure(const struct cc_args *a, const struct calplan *p, struct caltab *t, char *err, size_t errlen)
{
	uint32_t rounds = a->rounds, max = a->bench.max_reps;
	uint32_t per_round = (a->bench.min_reps + rounds - 1) / rounds;
	double *samples = malloc((size_t)p->nbatches * max * sizeof *samples);
	uint32_t *count = calloc(p->nbatches, sizeof *count);
	int rc = -1;

	if (!samples || !count) {
		err_memory(err, errlen, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < p->nshapes; i++) {
		const struct calplan_shape *s = &p->shapes[i];
		struct calbench_buffers *buf = NULL;
		size_t npts = 0;
		char shape[128];

		caltab_shape_text(s->op, s->m, s->k, s->n, shape, sizeof shape);
		if (s->max_batch == 0) {
			fprintf(stderr, "calib-cpu: %s (%s) exceeds the budget even at batch %u: not measured\n", shape,
			        s->user, p->batches[0]);
			continue;
		}
		while (npts < p->nbatches && p->batches[npts] <= s->max_batch)
			npts++;
		if (calbench_buffers_create(s, s->max_batch, &buf, err, errlen) != 0)
			goto out;
		memset(count, 0, p->nbatches * sizeof *count);
		for (uint32_t r = 0; r < rounds; r++) {
			uint32_t cap = (uint32_t)(((uint64_t)max * (r + 1) + rounds - 1) / rounds);

			for (size_t jj = 0; jj < npts; jj++) {
				size_t j = r % 2 == 0 ? jj : npts - 1 - jj;

				if (calbench_collect(s, buf, p->batches[j], &a->bench, r == 0 ? a->bench.warmup : 1, per_round,
				                     a->bench.min_time_s / rounds, cap, samples + j * max, &count[j], err,
				                     errlen) != 0) {
					calbench_buffers_destroy(buf);
					goto out;
				}
			}
		}
		calbench_buffers_destroy(buf);
		for (size_t j = 0; j < npts; j++) {
			struct calbench_result res;
			struct caltab_row row = { .op = s->op, .m_per_sample = s->m, .k = s->k, .n = s->n,
			                          .batch = p->batches[j] };

			calbench_summarize(samples + j * max, count[j], a->bench.mean, &res);
			if (!(res.value_s > 0)) {
				snprintf(err, errlen, "%s batch %u took no measurable time", shape, row.batch);
				goto out;
			}
			row.latency_s = row.measured_s = res.value_s;
			row.reps = res.reps;
			if (caltab_add_row(t, &row, err, errlen) != 0)
				goto out;
			if (!a->quiet)
				fprintf(stderr, "%-36s b=%-5u %11.4f ms  %8.2f G%s/s  (%s of %u, %.4f..%.4f ms)\n", shape,
				        row.batch, res.value_s * 1e3, calplan_flops(s, row.batch) / res.value_s / 1e9,
				        s->op == CALTAB_ELEMENTWISE ? "op" : "FLOP", a->bench.mean ? "mean" : "median", res.reps,
				        res.min_s * 1e3, res.max_s * 1e3);
		}
	}
	rc = 0;
out:
	free(samples);
	free(count);
	return rc;
}

int main(int argc, char **argv)
{
	struct cc_args a;
	struct calsel_cpu cpu;
	struct calplan *plan = NULL;
	struct caltab *t = NULL;
	const char *want = NULL;
	char err[1024], why[256];
	int rc = 2;
	double t0 = calbench_now(), load0 = 0, gflop;

	gsl_set_error_handler_off();
	fpu_flush_denormals();   /* as the live workers do (kernels/cpu_cells.h) */
	if (cc_parse(argc, argv, &a, err, sizeof err) != 0)
		goto fail;
	if (a.help) {
		cc_usage(stdout);
		cc_free_args(&a);
		return 0;
	}
	if (calplan_build(&plan, a.batches, a.max_batch, a.max_gflop, a.max_mib, a.models.names, a.models.n,
	                  err, sizeof err) != 0)
		goto fail;
	char ew_what[64];
	snprintf(ew_what, sizeof ew_what, "LSTM cell, hidden %u", a.hidden);
	if (calplan_add_elementwise(plan, (uint64_t)a.hidden * CALBENCH_LSTM_OPS_PER_UNIT, ew_what, err, sizeof err) != 0)
		goto fail;
	size_t points = calplan_apply_budget(plan, &gflop);
	if (a.dry_run) {
		for (size_t i = 0; i < plan->nshapes; i++) {
			char shape[128];

			caltab_shape_text(plan->shapes[i].op, plan->shapes[i].m, plan->shapes[i].k, plan->shapes[i].n,
			                  shape, sizeof shape);
			printf("%-40s up to batch %-5u (%s)\n", shape, plan->shapes[i].max_batch, plan->shapes[i].user);
		}
		printf("%zu shapes, %zu points, %.1f GFLOP per pass over the points\n", plan->nshapes, points, gflop);
		rc = 0;
		goto out;
	}
	/* before minutes of benchmarks: can the table be written there? */
	if (outfile_check(a.out, err, sizeof err) != 0 || (!a.no_db && calstore_check(a.db, err, sizeof err) != 0)) {
		rc = 2;
		goto fail;
	}

	rc = 1;
	if (calsel_read_cpuinfo("/proc/cpuinfo", &cpu, err, sizeof err) != 0 ||
	    cc_kernels(&a, &cpu, argv, &want, why, sizeof why, err, sizeof err) != 0)
		goto fail;
	/* The SGEMM that runs must be OpenBLAS's: a reference CBLAS linked
	 * first (GSL's libgslcblas) takes the symbol silently, 50x slower. */
	Dl_info dl;
	if (!dladdr((void *)cblas_sgemm, &dl) || !dl.dli_fname || !strstr(dl.dli_fname, "openblas")) {
		snprintf(err, sizeof err, "cblas_sgemm resolves to %s, not OpenBLAS: fix the link order",
		         dl.dli_fname ? dl.dli_fname : "an unknown library");
		goto fail;
	}
	openblas_set_num_threads((int)a.threads);
	if (want && strcasecmp(openblas_get_corename(), want) != 0) {
		snprintf(err, sizeof err, "OpenBLAS ignored OPENBLAS_CORETYPE=%s and runs its '%s' kernels: not a core "
		         "name this OpenBLAS knows (e.g. SkylakeX, Haswell, Sandybridge; --coretype=library to accept "
		         "its own choice)", want, openblas_get_corename());
		rc = 2;
		goto fail;
	}
	if (!a.quiet)
		fprintf(stderr, "calib-cpu: %s; kernels %s (%s); %u thread%s; %zu points, %.1f GFLOP\n",
		        openblas_get_config(), openblas_get_corename(), why, a.threads, a.threads == 1 ? "" : "s", points,
		        gflop);
	getloadavg(&load0, 1);
	if (caltab_create(&t) != 0) {
		err_memory(err, sizeof err, "out of memory");
		goto fail;
	}
	if (cc_measure(&a, plan, t, err, sizeof err) != 0 || (a.cold_start && cc_cold_start(&a, plan, t, err, sizeof err) != 0))
		goto fail;
	size_t lowered = caltab_make_monotone(t);
	if (cc_header(t, &a, &cpu, dl.dli_fname, why, plan, lowered, load0, calbench_now() - t0, argc, argv, err, sizeof err) != 0 ||
	    caltab_validate(t, err, sizeof err) != 0 || caltab_write_file(t, a.out, err, sizeof err) != 0)
		goto fail;
	int64_t id = 0;
	if (!a.no_db && calstore_write(a.db, t, a.out, &id, err, sizeof err) != 0)
		goto fail;
	if (!a.quiet)
		fprintf(stderr, "calib-cpu: %zu rows (%zu lowered to a larger batch's latency) in %.1f s -> %s%s%s\n",
		        t->nrows, lowered, calbench_now() - t0, a.out, a.no_db ? "" : " and ", a.no_db ? "" : a.db);
	rc = 0;
	goto out;
fail:
	fprintf(stderr, "calib-cpu: %s\n", err);
out:
	caltab_destroy(t);
	calplan_destroy(plan);
	cc_free_args(&a);
	return rc;
}
