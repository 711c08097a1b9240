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
 * Exit status: 0 done, 1 write error, 2 bad option.
 */
#include "../util/outfile.h"
#include "../util/errkind.h"
#include "../util/rng.h"
#include "../util/text.h"
#include "workload.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_rng.h>

#define MT_DEFAULT_LENGTHS "lognormal:2.715:0.535:80"

static void mt_usage(FILE *f)
{
	fprintf(f,
	        "usage: make-trace --rate=R --requests=N [--arrival-cv=CV] [--input-len=SPEC]\n"
	        "                  [--output-len=SPEC] [--seed=S] [-o FILE]\n"
	        "Writes a trace CSV 'arrival_s,input_len,output_len' (for simbatch --trace=FILE).\n"
	        "  --rate=R          mean arrival rate, requests per second (required)\n"
	        "  --requests=N      number of requests, >= 1 (required)\n"
	        "  --arrival-cv=CV   coefficient of variation of the gaps: 1 = Poisson (default),\n"
	        "                    otherwise Gamma gaps with the same mean\n"
	        "  --input-len=SPEC  input length distribution (default " MT_DEFAULT_LENGTHS ")\n"
	        "  --output-len=SPEC output length distribution (default " MT_DEFAULT_LENGTHS ")\n"
	        "                    SPEC: fixed:N | uniform:A:B | lognormal:MU:SIGMA[:MAX] | file:PATH | N\n"
	        "  --shared-prefix=N:S:U[:T]  N system prompts of S tokens, U users each, requests round the users;\n"
	        "                    --input-len is then a question after the system prompt (prefix columns);\n"
	        "                    with T > 1 a user's requests are turns of T-turn conversations, each\n"
	        "                    prompt the conversation so far and a new question (session column)\n"
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
	if (!have_rate || !have_requests) {
		fprintf(stderr, "make-trace: --rate and --requests are required (make-trace --help)\n");
		return 2;
	}
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
		t_s += trc_arrivals_next_gap_s(arr, r_arr);
		if (!(t_s <= TRC_MAX_SPAN_S)) {
			fprintf(stderr, "make-trace: request %llu arrives at %.4g s, past the %.0e s a trace may span; "
			        "raise --rate or lower --requests\n", (unsigned long long)i, t_s, TRC_MAX_SPAN_S);
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
	status = 2;
	if (trc_arrivals_init(&arr, a.rate_rps, a.cv, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: %s\n", err);
		goto done;
	}
	if ((double)a.requests / a.rate_rps > TRC_MAX_SPAN_S) {
		fprintf(stderr, "make-trace: %llu requests at %g req/s span about %.3g s, past the %.0e s a trace may "
		        "span\n", (unsigned long long)a.requests, a.rate_rps, (double)a.requests / a.rate_rps,
		        TRC_MAX_SPAN_S);
		goto done;
	}
	if (trc_lengths_parse(a.in_spec, &in_len, err, sizeof err) != 0) {
		fprintf(stderr, "make-trace: --input-len: %s\n", err);
		goto done;
	}
	if (trc_lengths_parse(a.out_spec, &out_len, err, sizeof err) != 0) {
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
	if (mt_write(out, &a, &arr, in_len, out_len, r_arr, r_len) != 0)
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
