/* traces/make_trace.c: the make-trace tool. Writes a trace CSV (DESIGN.md
 * section 4) of N requests: open-loop arrivals at a mean rate (Poisson, as
 * in LazyBatching Sec. V and BatchMaker Sec. 7.1, or Gamma with another
 * cv) and input/output lengths drawn from length specs. A trace pins one
 * workload down so several policies, or the simulator and the live
 * runtime, can be compared on exactly the same requests.
 *
 * Arrivals and lengths use two mt19937 generators seeded from --seed, so
 * changing a length spec leaves the arrival times alone: the run's own
 * streams (util/rng.h), so a seed means the same streams here and in a run.
 *
 * --shared-prefix=N:S:U writes inference-perf's shared-prefix workload:
 * N system prompts of S tokens, U users each; the requests go round the
 * N x U users in turn (request i is user i mod NU's, whose system prompt is
 * user / U), each prompt its system prompt followed by a question of
 * --input-len tokens; the trace's prefix columns name the system prompt
 * (prefix_id 1..N, prefix_len S) for a prefix cache. --shared-prefix=N:S:U:T
 * makes each user's requests turns of conversations of T turns: a turn's
 * prompt is the conversation so far (the system prompt, every earlier
 * question and answer) and its new question, the session column names the
 * conversation (1 + user + N U x its number), and after T turns the user
 * starts a new one (a turn arrives N U requests after the one before, so at
 * a rate the users' answers keep up with, it finds them cached).
 *
 * --prompt-pool=G:P:S writes a pool of whole prompts as inference-perf's
 * shared_prefix generator sends them (kubernetes-sigs/inference-perf,
 * inference_perf/datagen/shared_prefix_datagen.py): G groups of P prompts,
 * each its group's S-token system prompt and a question of --input-len
 * tokens, made once (lengths drawn once per prompt, so a prompt is the same
 * on every visit), the pool shuffled once, and request k sent the prompt at
 * position k mod GP. The prefix columns name the whole prompt (prefix_id
 * 1..GP, prefix_len its input_len), the inner prefix columns its system
 * prompt (inner_id 1..G, inner_len S): a prompt sent before is found whole
 * in a prefix cache, a new prompt of a group sent before finds the system
 * prompt. --from-experiment=DIR builds the same from what an inference-perf
 * run sent (traces/experiment.h): its pool, its stages (fixed intervals or
 * Poisson, a stage's requests from pool position 0), its output_len, and the
 * measured prompt lengths: the GP prompts' lengths are the measured
 * quantiles' inverse at GP evenly spaced probabilities, dealt to the prompts
 * in a shuffled order, so the visits reproduce the measured spread.
 *
 * Exit status: 0 done, 1 write error, 2 bad option.
 */
#include "../util/outfile.h"
#include "../util/errkind.h"
#include "../util/rng.h"
#include "../util/text.h"
#include "workload.h"
#include "experiment.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>

#define MT_DEFAULT_LENGTHS "lognormal:2.715:0.535:80"

static void mt_usage(FILE *f)
{
	fprintf(f,
	        "usage: make-trace --rate=R --requests=N [--arrival-cv=CV] [--input-len=SPEC]\n"
	        "                  [--output-len=SPEC] [--shared-prefix=N:S:U[:T] | --prompt-pool=G:P:S]\n"
	        "                  [--seed=S] [-o FILE]\n"
	        "       make-trace --from-experiment=DIR [--seed=S] [-o FILE]\n"
	        "Writes a trace CSV 'arrival_s,input_len,output_len' (for simbatch --trace=FILE).\n"
	        "  --rate=R          mean arrival rate, requests per second (required but with\n"
	        "                    --from-experiment)\n"
	        "  --requests=N      number of requests, >= 1 (likewise)\n"
	        "  --arrival-cv=CV   coefficient of variation of the gaps: 1 = Poisson (default),\n"
	        "                    otherwise Gamma gaps with the same mean\n"
	        "  --input-len=SPEC  input length distribution (default " MT_DEFAULT_LENGTHS ")\n"
	        "  --output-len=SPEC output length distribution (default " MT_DEFAULT_LENGTHS ")\n"
	        "                    SPEC: fixed:N | uniform:A:B | lognormal:MU:SIGMA[:MAX] | file:PATH | N\n"
	        "  --shared-prefix=N:S:U[:T]  N system prompts of S tokens, U users each, requests round the users;\n"
	        "                    --input-len is then a question after the system prompt (prefix columns);\n"
	        "                    with T > 1 a user's requests are turns of T-turn conversations, each\n"
	        "                    prompt the conversation so far and a new question (session column)\n"
	        "  --prompt-pool=G:P:S  a pool of G x P whole prompts (G groups of P, each its group's S-token\n"
	        "                    system prompt and a question of --input-len tokens, drawn once a prompt),\n"
	        "                    shuffled once, request k sent prompt k mod GP, output --output-len drawn\n"
	        "                    once a prompt: prefix columns the whole prompt, inner prefix columns the\n"
	        "                    system prompt\n"
	        "  --from-experiment=DIR  the prompt pool an inference-perf run sent: DIR/results/config.yaml\n"
	        "                    (pool, stages, lengths) and stage_0_lifecycle_metrics.json's measured\n"
	        "                    prompt_len quantiles; --rate, --requests and the length options then\n"
	        "                    come from there\n"
	        "  --seed=S          seed, a non-negative integer (default 1)\n"
	        "  -o, --output=FILE write there instead of standard output\n"
	        "  -h, --help        this text\n");
}

static int mt_bad(const char *what, const char *value)
{
	fprintf(stderr, "make-trace: %s, got '%s'\n", what, value);
	return 2;
}

struct mt_args {
	double rate_rps, cv;
	uint64_t requests, seed;
	const char *in_spec, *out_spec, *out_path;
	uint64_t prompts, prompt_len, users;     /* --shared-prefix (prompts 0: none) ... */
	uint64_t turns;                          /* ... and each conversation's turns (1: single requests) */
	uint64_t pool_groups, pool_per_group, pool_system;   /* --prompt-pool (pool_groups 0: none) */
	const char *experiment;                  /* --from-experiment's directory (NULL: none) */
	const char *workload_option;             /* the first option that sets the workload, for a conflict */
};

/* Reads the options into *a. Returns -1 to go on, else the exit status
 * (0 after --help, 2 for a bad option, with its message printed). */
static int mt_parse(int argc, char **argv, struct mt_args *a)
{
	static const struct option opts[] = {
		{"rate", required_argument, NULL, 'r'},
		{"requests", required_argument, NULL, 'n'},
		{"arrival-cv", required_argument, NULL, 'c'},
		{"input-len", required_argument, NULL, 'i'},
		{"output-len", required_argument, NULL, 'L'},
		{"seed", required_argument, NULL, 's'},
		{"shared-prefix", required_argument, NULL, 'p'},
		{"prompt-pool", required_argument, NULL, 'P'},
		{"from-experiment", required_argument, NULL, 'x'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int have_rate = 0, have_requests = 0, opt;
	*a = (struct mt_args){ .cv = 1.0, .seed = 1, .in_spec = MT_DEFAULT_LENGTHS, .out_spec = MT_DEFAULT_LENGTHS };
	const char *abbreviated;
	opterr = 0;      /* one line of our own for a bad option, not getopt's and the whole usage */
	while ((opt = txt_getopt_whole(argc, argv, "o:h", opts, &abbreviated)) != -1) {
		if (abbreviated) {
			fprintf(stderr, "make-trace: unknown option '%s' (options are whole names; see --help)\n", abbreviated);
			return 2;
		}
		/* the options an experiment sets itself */
		if (strchr("rncpiLP", opt) && !a->workload_option)
			a->workload_option = argv[optind - 1];
		switch (opt) {
		case 'r':
			if (txt_parse_double(optarg, &a->rate_rps) != 0)
				return mt_bad("--rate must be a positive number of requests per second", optarg);
			have_rate = 1;
			break;
		case 'n':
			if (txt_parse_uint(optarg, UINT64_MAX, &a->requests) != 0 || a->requests < 1)
				return mt_bad("--requests must be an integer >= 1", optarg);
			have_requests = 1;
			break;
		case 'c':
			if (txt_parse_double(optarg, &a->cv) != 0)
				return mt_bad("--arrival-cv must be a positive number", optarg);
			break;
		case 'i': a->in_spec = optarg; break;
		case 'L': a->out_spec = optarg; break;
		case 's':
			if (txt_parse_uint(optarg, UINT64_MAX, &a->seed) != 0)
				return mt_bad("--seed must be a non-negative integer", optarg);
			break;
		case 'o': a->out_path = optarg; break;
		case 'p': {
			char buf[96], *f[5];
			snprintf(buf, sizeof buf, "%s", optarg);
			size_t nf = txt_split(buf, ':', f, 5);
			a->turns = 1;
			if ((nf != 3 && nf != 4) || txt_parse_uint(f[0], 1000000, &a->prompts) != 0 || a->prompts < 1 ||
			    txt_parse_uint(f[1], TRC_LENGTH_LIMIT, &a->prompt_len) != 0 || a->prompt_len < 1 ||
			    txt_parse_uint(f[2], 1000000, &a->users) != 0 || a->users < 1 ||
			    (nf == 4 && (txt_parse_uint(f[3], 1000000, &a->turns) != 0 || a->turns < 1)))
				return mt_bad("--shared-prefix must be N:S:U[:T], N system prompts (1 to 1000000) of S tokens (1 to "
				              "1000000), U users each (1 to 1000000), T turns a conversation (1 to 1000000)", optarg);
			break;
		}
		case 'P': {
			char buf[96], *f[4];
			snprintf(buf, sizeof buf, "%s", optarg);
			if (txt_split(buf, ':', f, 4) != 3 || txt_parse_uint(f[0], 1000000, &a->pool_groups) != 0 ||
			    txt_parse_uint(f[1], 1000000, &a->pool_per_group) != 0 ||
			    txt_parse_uint(f[2], TRC_LENGTH_LIMIT, &a->pool_system) != 0 || a->pool_groups < 1 ||
			    a->pool_per_group < 1)
				return mt_bad("--prompt-pool must be G:P:S, G groups (1 to 1000000) of P prompts (1 to 1000000; "
				              "a pool of zero prompts sends nothing) with S-token system prompts (0 to 1000000)",
				              optarg);
			break;
		}
		case 'x': a->experiment = optarg; break;
		case 'h':
			mt_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "make-trace: unknown option or missing value: '%s' (make-trace --help lists the "
			        "options)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "make-trace: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (a->experiment) {
		if (a->workload_option) {
			fprintf(stderr, "make-trace: %s: --from-experiment takes the rates, requests, lengths and pool from the "
			        "experiment; leave it out\n", a->workload_option);
			return 2;
		}
		return -1;
	}
	if (a->pool_groups && a->prompts) {
		fprintf(stderr, "make-trace: --prompt-pool and --shared-prefix are two workloads; give one\n");
		return 2;
	}
	if (!have_rate || !have_requests) {
		fprintf(stderr, "make-trace: --rate and --requests are required (make-trace --help)\n");
		return 2;
	}
	return -1;
}

/* Request i's arrival: one more gap after *t_s. 0, or -1 past TRC_MAX_SPAN_S (message printed). */
static int mt_next_arrival(const struct trc_arrivals *arr, gsl_rng *r_arr, uint64_t i, double *t_s)
{
	*t_s += trc_arrivals_next_gap_s(arr, r_arr);
	if (*t_s <= TRC_MAX_SPAN_S)
		return 0;
	fprintf(stderr, "make-trace: request %llu arrives at %.4g s, past the %.0e s a trace may span; raise --rate or "
	        "lower --requests\n", (unsigned long long)i, *t_s, TRC_MAX_SPAN_S);
	return -1;
}

/* The trace: provenance comments, the header, one row per request. 0, or
 * -1 when an arrival lands past TRC_MAX_SPAN_S (message printed). */
static int mt_write(FILE *out, const struct mt_args *a, const struct trc_arrivals *arr, const struct trc_lengths *in_len,
                    const struct trc_lengths *out_len, gsl_rng *r_arr, gsl_rng *r_len)
{
	/* Provenance first: the trace says how it was made (comments are part
	 * of the format). */
	fprintf(out, "# make-trace --rate=%.17g --requests=%llu --arrival-cv=%.17g --input-len=%s "
	        "--output-len=%s --seed=%llu",
	        a->rate_rps, (unsigned long long)a->requests, a->cv, a->in_spec, a->out_spec,
	        (unsigned long long)a->seed);
	if (a->prompts)
		fprintf(out, " --shared-prefix=%llu:%llu:%llu", (unsigned long long)a->prompts,
		        (unsigned long long)a->prompt_len, (unsigned long long)a->users);
	if (a->turns > 1)
		fprintf(out, ":%llu", (unsigned long long)a->turns);
	/* a conversation's turn t carries t earlier questions and answers: (T - 1) / 2 on average */
	double turns_before = a->turns > 1 ? (double)(a->turns - 1) / 2 : 0;
	fprintf(out, "\n# mean input_len %.6f, mean output_len %.6f (exact, of the distributions%s)\n",
	        trc_lengths_mean(in_len) + (double)a->prompt_len +
	        turns_before * (trc_lengths_mean(in_len) + trc_lengths_mean(out_len)), trc_lengths_mean(out_len),
	        a->turns > 1 ? "; input: the system prompt, the conversation so far and the question, over whole "
	                       "conversations"
	        : a->prompts ? "; input: the system prompt and the question" : "");
	fputs(a->turns > 1 ? "arrival_s,input_len,output_len,prefix_id,prefix_len,session_id\n"
	      : a->prompts ? "arrival_s,input_len,output_len,prefix_id,prefix_len\n" : "arrival_s,input_len,output_len\n",
	      out);
	/* conversations: each user's so far (the users the requests reach, at most one a request) */
	uint64_t nusers = a->prompts * a->users, used = nusers < a->requests ? nusers : a->requests;
	uint64_t *so_far = a->turns > 1 ? calloc(used, sizeof *so_far) : NULL;
	if (a->turns > 1 && !so_far) {
		fprintf(stderr, "make-trace: out of memory\n");
		return -1;
	}
	/* Nanosecond resolution is the simulator's clock tick, so replaying
	 * the trace loses nothing; rounding keeps the times non-decreasing. */
	double t_s = 0;
	for (uint64_t i = 0; i < a->requests; i++) {
		if (mt_next_arrival(arr, r_arr, i, &t_s) != 0) {
			free(so_far);
			return -1;
		}
		uint32_t in_l = trc_lengths_draw(in_len, r_len);
		uint32_t out_l = trc_lengths_draw(out_len, r_len);
		if (a->prompts) {
			uint64_t user = i % nusers, prompt = user / a->users + 1, turn = i / nusers % a->turns;
			if (so_far && turn == 0)
				so_far[user] = a->prompt_len;      /* a new conversation: its system prompt */
			uint64_t total = (uint64_t)in_l + (so_far ? so_far[user] : a->prompt_len);
			if (total > TRC_LENGTH_LIMIT) {
				fprintf(stderr, "make-trace: request %llu's prompt of %llu tokens is past %u\n",
				        (unsigned long long)i, (unsigned long long)total, TRC_LENGTH_LIMIT);
				free(so_far);
				return -1;
			}
			int w = so_far ? fprintf(out, "%.9f,%llu,%u,%llu,%llu,%llu\n", t_s, (unsigned long long)total, out_l,
			                         (unsigned long long)prompt, (unsigned long long)a->prompt_len,
			                         (unsigned long long)(1 + user + nusers * (i / nusers / a->turns)))
			               : fprintf(out, "%.9f,%llu,%u,%llu,%llu\n", t_s, (unsigned long long)total, out_l,
			                         (unsigned long long)prompt, (unsigned long long)a->prompt_len);
			if (so_far)
				so_far[user] = total + out_l;      /* the next turn's prompt begins with this one and its answer */
			if (w < 0)
				break;
		} else if (fprintf(out, "%.9f,%u,%u\n", t_s, in_l, out_l) < 0) {
			break;
		}
	}
	free(so_far);
	return 0;
}

/* A pool of whole prompts: each prompt's lengths, fixed across its visits, and the order it is sent in. */
struct mt_pool {
	uint64_t n, per_group, system_len;
	uint32_t *prompt_len, *output_len;       /* [n] pool prompt p's (group p / per_group) */
	uint64_t *order;                         /* [n] position k of the shuffled pool holds prompt order[k] */
};

static void mt_pool_free(struct mt_pool *p)
{
	free(p->prompt_len);
	free(p->output_len);
	free(p->order);
}

static int mt_pool_alloc(struct mt_pool *p, uint64_t groups, uint64_t per_group, uint64_t system_len)
{
	*p = (struct mt_pool){ .n = groups * per_group, .per_group = per_group, .system_len = system_len };
	p->prompt_len = malloc(p->n * sizeof *p->prompt_len);
	p->output_len = malloc(p->n * sizeof *p->output_len);
	p->order = malloc(p->n * sizeof *p->order);
	return p->prompt_len && p->output_len && p->order ? 0 : -1;
}

/* The pool shuffled once (Fisher-Yates on the lengths' stream), as inference-perf shuffles its prompts. */
static void mt_pool_shuffle(struct mt_pool *p, gsl_rng *r)
{
	for (uint64_t k = 0; k < p->n; k++)
		p->order[k] = k;
	for (uint64_t k = p->n; k > 1; k--) {
		uint64_t j = gsl_rng_uniform_int(r, (unsigned long)k), t = p->order[k - 1];
		p->order[k - 1] = p->order[j];
		p->order[j] = t;
	}
}

/* One request: pool position k's prompt, the whole prompt its prefix, its group's system prompt inside. */
static int mt_pool_row(FILE *out, const struct mt_pool *p, double t_s, uint64_t k)
{
	uint64_t prompt = p->order[k % p->n];
	return fprintf(out, "%.9f,%u,%u,%llu,%u,%llu,%llu\n", t_s, p->prompt_len[prompt], p->output_len[prompt],
	               (unsigned long long)prompt + 1, p->prompt_len[prompt],
	               (unsigned long long)(p->system_len ? prompt / p->per_group + 1 : 0),
	               (unsigned long long)p->system_len);
}

/* The mean prompt over requests positions [0, n) of each stage, and the pool's header lines. */
static void mt_pool_header(FILE *out, const struct mt_pool *p, const uint64_t *stage_requests, size_t nstages,
                           const char *lengths_from)
{
	double sum = 0, count = 0, out_sum = 0;
	for (size_t s = 0; s < nstages; s++)
		for (uint64_t k = 0; k < stage_requests[s]; k++) {
			sum += p->prompt_len[p->order[k % p->n]];
			out_sum += p->output_len[p->order[k % p->n]];
			count++;
		}
	fprintf(out, "# mean input_len %.6f, mean output_len %.6f (of the requests)\n", sum / count, out_sum / count);
	fprintf(out, "# prompt pool: %llu prompts, %llu a group, system prompts of %llu tokens; %s\n",
	        (unsigned long long)p->n, (unsigned long long)p->per_group, (unsigned long long)p->system_len,
	        lengths_from);
	fputs("arrival_s,input_len,output_len,prefix_id,prefix_len,inner_id,inner_len\n", out);
}

/* --prompt-pool: the pool's lengths drawn once a prompt, then arrivals as for any trace. */
static int mt_write_pool(FILE *out, const struct mt_args *a, const struct trc_arrivals *arr,
                         const struct trc_lengths *in_len, const struct trc_lengths *out_len, gsl_rng *r_arr,
                         gsl_rng *r_len)
{
	struct mt_pool p;
	if (mt_pool_alloc(&p, a->pool_groups, a->pool_per_group, a->pool_system) != 0) {
		mt_pool_free(&p);
		fprintf(stderr, "make-trace: out of memory for a pool of %llu prompts\n", (unsigned long long)p.n);
		return -1;
	}
	int status = -1;
	for (uint64_t k = 0; k < p.n; k++) {
		uint64_t total = a->pool_system + trc_lengths_draw(in_len, r_len);
		if (total > TRC_LENGTH_LIMIT) {
			fprintf(stderr, "make-trace: pool prompt %llu of %llu tokens is past %u\n", (unsigned long long)k + 1,
			        (unsigned long long)total, TRC_LENGTH_LIMIT);
			goto done;
		}
		p.prompt_len[k] = (uint32_t)total;
		p.output_len[k] = trc_lengths_draw(out_len, r_len);
	}
	mt_pool_shuffle(&p, r_len);
	fprintf(out, "# make-trace --rate=%.17g --requests=%llu --arrival-cv=%.17g --input-len=%s --output-len=%s "
	        "--seed=%llu --prompt-pool=%llu:%llu:%llu\n", a->rate_rps, (unsigned long long)a->requests, a->cv,
	        a->in_spec, a->out_spec, (unsigned long long)a->seed, (unsigned long long)a->pool_groups,
	        (unsigned long long)a->pool_per_group, (unsigned long long)a->pool_system);
	mt_pool_header(out, &p, &a->requests, 1, "questions of --input-len tokens");
	double t_s = 0;
	for (uint64_t k = 0; k < a->requests; k++) {
		if (mt_next_arrival(arr, r_arr, k, &t_s) != 0)
			goto done;
		if (mt_pool_row(out, &p, t_s, k) < 0)
			break;
	}
	status = 0;
done:
	mt_pool_free(&p);
	return status;
}

/* --from-experiment: what an inference-perf run sent, stage after stage (traces/experiment.h). A stage
 * starts where the one before sent its last request's interval; a constant stage's request i arrives
 * i / rate after its start, a Poisson stage's after i + 1 exponential gaps. */
static int mt_write_experiment(FILE *out, const struct mt_args *a, const struct trc_experiment *x, gsl_rng *r_arr,
                               gsl_rng *r_len)
{
	struct mt_pool p;
	char lengths_from[4200];
	if (mt_pool_alloc(&p, x->groups, x->prompts_per_group, x->system_prompt_len) != 0) {
		mt_pool_free(&p);
		fprintf(stderr, "make-trace: out of memory for a pool of %llu prompts\n", (unsigned long long)p.n);
		return -1;
	}
	/* the measured spread: the quantiles' inverse at n evenly spaced probabilities, dealt out shuffled */
	for (uint64_t k = 0; k < p.n; k++) {
		double len = x->measured ? round(trc_experiment_prompt_len(x, ((double)k + 0.5) / (double)p.n))
		                         : (double)(x->system_prompt_len + x->question_len);
		p.prompt_len[k] = (uint32_t)len;
		p.output_len[k] = (uint32_t)x->output_len;
	}
	for (uint64_t k = p.n; k > 1; k--) {
		uint64_t j = gsl_rng_uniform_int(r_len, (unsigned long)k);
		uint32_t t = p.prompt_len[k - 1];
		p.prompt_len[k - 1] = p.prompt_len[j];
		p.prompt_len[j] = t;
	}
	mt_pool_shuffle(&p, r_len);
	if (x->measured)
		snprintf(lengths_from, sizeof lengths_from, "prompt lengths from %s's prompt_len quantiles",
		         x->quantile_path);
	else
		snprintf(lengths_from, sizeof lengths_from, "prompt lengths as configured (no %s)", x->quantile_path);
	fputs("# make-trace --from-experiment=", out);
	fputs(a->experiment, out);
	fprintf(out, " --seed=%llu (", (unsigned long long)a->seed);
	for (size_t s = 0; s < x->nstages; s++)
		fprintf(out, "%s%llu requests at %.17g/s %s", s ? ", then " : "", (unsigned long long)x->requests[s],
		        x->rate[s], x->poisson ? "Poisson" : "at a fixed interval");
	fputs(")\n", out);
	mt_pool_header(out, &p, x->requests, x->nstages, lengths_from);
	double start = 0;
	for (size_t s = 0; s < x->nstages; s++) {
		struct trc_arrivals arr;
		char err[256];
		if (trc_arrivals_init(&arr, x->rate[s], 1.0, err, sizeof err) != 0) {
			fprintf(stderr, "make-trace: stage %zu: %s\n", s, err);
			mt_pool_free(&p);
			return -1;
		}
		double t_s = start;
		for (uint64_t k = 0; k < x->requests[s]; k++) {
			t_s = x->poisson ? t_s + trc_arrivals_next_gap_s(&arr, r_arr) : start + (double)k / x->rate[s];
			if (mt_pool_row(out, &p, t_s, k) < 0)
				break;
		}
		start += (double)x->requests[s] / x->rate[s];
	}
	mt_pool_free(&p);
	return 0;
}

int main(int argc, char **argv)
{
	struct mt_args a;
	int status = mt_parse(argc, argv, &a);
	if (status >= 0)
		return status;

	char err[512];
	struct trc_arrivals arr;
	struct trc_lengths *in_len = NULL, *out_len = NULL;
	gsl_rng *r_arr = NULL, *r_len = NULL;
	struct outfile of = { 0 };
	FILE *out = stdout;
	static struct trc_experiment x;
	status = 2;
	if (a.experiment) {
		if (trc_experiment_load(a.experiment, &x, err, sizeof err) != 0) {
			fprintf(stderr, "make-trace: %s\n", err);
			goto done;
		}
		double span = 0;
		for (size_t st = 0; st < x.nstages; st++)
			span += (double)x.requests[st] / x.rate[st];
		if (span > TRC_MAX_SPAN_S) {
			fprintf(stderr, "make-trace: %s/results/config.yaml: load.stages span about %.3g s, past the %.0e s a "
			        "trace may span\n", a.experiment, span, TRC_MAX_SPAN_S);
			goto done;
		}
	} else if (trc_arrivals_init(&arr, a.rate_rps, a.cv, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: %s\n", err);
		goto done;
	}
	if (a.experiment) {
		/* the experiment gives every length */
	} else if ((double)a.requests / a.rate_rps > TRC_MAX_SPAN_S) {
		fprintf(stderr, "make-trace: %llu requests at %g req/s span about %.3g s, past the %.0e s a trace may "
		        "span\n", (unsigned long long)a.requests, a.rate_rps, (double)a.requests / a.rate_rps,
		        TRC_MAX_SPAN_S);
		goto done;
	}
	if (!a.experiment && trc_lengths_parse(a.in_spec, &in_len, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: --input-len: %s\n", err);
		goto done;
	}
	if (!a.experiment && trc_lengths_parse(a.out_spec, &out_len, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: --output-len: %s\n", err);
		goto done;
	}
	r_arr = rng_create(a.seed, RNG_ARRIVALS);
	r_len = rng_create(a.seed, RNG_LENGTHS);
	if (!r_arr || !r_len) {
		fprintf(stderr, "make-trace: out of memory\n");
		status = 1;
		goto done;
	}
	/* a file appears whole when the trace is done (util/outfile.h) */
	if (a.out_path) {
		if (outfile_open(&of, a.out_path, err, sizeof err) != 0) {
			fprintf(stderr, "make-trace: %s\n", err);
			goto done;
		}
		out = of.f;
	}
	if (a.experiment ? mt_write_experiment(out, &a, &x, r_arr, r_len) != 0
	    : a.pool_groups ? mt_write_pool(out, &a, &arr, in_len, out_len, r_arr, r_len) != 0
	    : mt_write(out, &a, &arr, in_len, out_len, r_arr, r_len) != 0)
		goto done;
	status = 1;
	if (!a.out_path && (fflush(out) != 0 || ferror(out))) {
		fprintf(stderr, "make-trace: write error on standard output: %s\n", err_strerror(errno));
		goto done;
	}
	if (a.out_path && outfile_commit(&of, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: %s\n", err);
		goto done;
	}
	status = 0;
done:
	outfile_abort(&of);
	gsl_rng_free(r_arr);
	gsl_rng_free(r_len);
	trc_lengths_free(in_len);
	trc_lengths_free(out_len);
	return status;
}
