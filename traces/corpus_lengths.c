/* traces/corpus_lengths.c: the corpus-lengths tool. Reads a plain-text
 * corpus (a file, or standard input for "-") and writes the empirical
 * distribution of its sentence lengths in words, the file a file:PATH
 * length spec reads. This is how a trace gets the length mix of a real
 * translation workload (LazyBatching Fig. 11, BatchMaker Sec. 7.1) without
 * shipping the corpus. Tokenizer rules: traces/corpus.h.
 *
 * Exit status: 0 done, 1 write error, 2 bad option, unreadable input or a
 * corpus without sentences.
 */
#include "corpus.h"
#include "../util/errkind.h"
#include "../util/text.h"
#include "workload.h"
#include "../util/outfile.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void cl_usage(FILE *f)
{
	fprintf(f,
	        "usage: corpus-lengths [--max=N] [-o FILE] FILE|-\n"
	        "Writes the distribution of sentence lengths (in words) of a plain-text corpus\n"
	        "as a 'length,weight' file for --input-len=file:PATH / --output-len=file:PATH.\n"
	        "  --max=N        drop sentences longer than N words (default 1000, at most %u)\n"
	        "  -o, --output=FILE  write there instead of standard output\n"
	        "  -h, --help     this text\n"
	        "Summary (sentences, mean, 50/90/99%% lengths) goes to standard error.\n",
	        TRC_LENGTH_LIMIT);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"max", required_argument, NULL, 'm'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	uint64_t max_words = 1000;
	const char *out_path = NULL;
	int opt;
	const char *abbreviated;
	opterr = 0;      /* one line of our own for a bad option, not getopt's and the whole usage */
	while ((opt = txt_getopt_whole(argc, argv, "o:h", opts, &abbreviated)) != -1) {
		if (abbreviated) {
			fprintf(stderr, "corpus-lengths: unknown option '%s' (options are whole names; see --help)\n", abbreviated);
			return 2;
		}
		switch (opt) {
		case 'm':
			if (txt_parse_uint(optarg, TRC_LENGTH_LIMIT, &max_words) != 0 || max_words < 1) {
				fprintf(stderr, "corpus-lengths: --max must be an integer in [1, %u], got '%s'\n",
				        TRC_LENGTH_LIMIT, optarg);
				return 2;
			}
			break;
		case 'o':
			out_path = optarg;
			break;
		case 'h':
			cl_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "corpus-lengths: unknown option or missing value: '%s' (corpus-lengths --help lists "
			        "the options)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "corpus-lengths: expected exactly one input (a file, or - for standard input; "
		        "corpus-lengths --help)\n");
		return 2;
	}
	const char *in_path = argv[optind];

	char err[256];
	struct trc_corpus *c = NULL;
	FILE *in = NULL, *out = NULL;
	int status = 2;
	if (trc_corpus_create((uint32_t)max_words, NULL, NULL, &c, err, sizeof err) != 0) {
		fprintf(stderr, "corpus-lengths: %s\n", err);
		goto done;
	}
	in = strcmp(in_path, "-") == 0 ? stdin : fopen(in_path, "rb");
	if (!in) {
		fprintf(stderr, "corpus-lengths: cannot open corpus '%s': %s\n", in_path, err_strerror(errno));
		goto done;
	}
	char buf[1 << 16];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
		/* text has no NUL bytes; without this check /dev/zero would be read forever */
		if (memchr(buf, '\0', n)) {
			fprintf(stderr, "corpus-lengths: '%s' holds a NUL byte: not a text corpus\n", in_path);
			goto done;
		}
		trc_corpus_feed(c, buf, n);
	}
	if (ferror(in)) {
		fprintf(stderr, "corpus-lengths: read error on '%s': %s\n", in_path, err_strerror(errno));
		goto done;
	}
	trc_corpus_finish(c);
	if (trc_corpus_sentences(c) == 0) {
		fprintf(stderr, "corpus-lengths: '%s' has no sentences of 1 to %u words\n",
		        in_path, (unsigned)max_words);
		goto done;
	}
	/* a file appears whole when it is done (util/outfile.h) */
	struct outfile of = { 0 };
	if (out_path && outfile_open(&of, out_path, err, sizeof err) != 0) {
		fprintf(stderr, "corpus-lengths: %s\n", err);
		goto done;
	}
	out = out_path ? of.f : stdout;
	int werr = trc_corpus_write(c, out) != 0;
	werr |= fflush(out) != 0;
	out = NULL;
	if (werr || (out_path && outfile_commit(&of, err, sizeof err) != 0)) {
		if (werr)
			err_io(err, sizeof err, "write error on '%s': %s", out_path ? out_path : "standard output",
			         err_strerror(errno));
		outfile_abort(&of);
		fprintf(stderr, "corpus-lengths: %s\n", err);
		status = 1;
		goto done;
	}
	fprintf(stderr, "corpus-lengths: %llu sentences (%llu longer than %u dropped), mean %.3f words, "
	        "p50 %u, p90 %u, p99 %u\n",
	        (unsigned long long)trc_corpus_sentences(c), (unsigned long long)trc_corpus_dropped(c),
	        (unsigned)max_words, trc_corpus_mean_words(c), trc_corpus_quantile_words(c, 0.50),
	        trc_corpus_quantile_words(c, 0.90), trc_corpus_quantile_words(c, 0.99));
	status = 0;
done:
	if (in && in != stdin)
		fclose(in);
	trc_corpus_destroy(c);
	return status;
}
