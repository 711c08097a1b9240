/* traces/corpus.c: the sentence tokenizer and length histogram behind the
 * corpus-lengths tool (rules in corpus.h). It is a byte-at-a-time state
 * machine so a corpus of any size streams through in fixed memory, and a
 * UTF-8 decoder only so far as telling letters from punctuation needs.
 */
#include "corpus.h"
#include "../util/errkind.h"
#include "workload.h"

#include <stdlib.h>
#include <string.h>

#define TRC_TAIL_BYTES 16   /* last bytes of the current word, enough to see "word.\"»)" */

struct trc_corpus {
	uint32_t max_words;           /* longest sentence kept */
	uint64_t *count;              /* count[L] = kept sentences of L words, L = 0..max_words (owned) */
	uint64_t kept;                /* sentences in count[] */
	uint64_t dropped;             /* sentences longer than max_words */
	trc_sentence_fn on_sentence;  /* optional observer */
	void *ctx;                    /* observer's argument (not owned) */
	/* tokenizer state */
	uint64_t words;               /* words so far in the current sentence */
	int in_word;                  /* inside a run of non-whitespace */
	int word_has_alnum;           /* that run has a letter or digit */
	int newline_seen;             /* a newline since the last non-whitespace: a second one makes a blank line */
	unsigned char tail[TRC_TAIL_BYTES]; /* ring of the word's last bytes */
	size_t word_bytes;            /* bytes in the current word */
	uint32_t cp;                  /* UTF-8 code point being decoded */
	int cp_need;                  /* continuation bytes still expected */
};

int trc_corpus_create(uint32_t max_words, trc_sentence_fn on_sentence, void *ctx,
                      struct trc_corpus **out, char *err, size_t errlen)
{
	*out = NULL;
	if (max_words < 1 || max_words > TRC_LENGTH_LIMIT) {
		snprintf(err, errlen, "max sentence length must be in [1, %u] words, got %u",
		         TRC_LENGTH_LIMIT, max_words);
		return -1;
	}
	struct trc_corpus *c = calloc(1, sizeof *c);
	if (!c)
		goto oom;
	c->count = calloc((size_t)max_words + 1, sizeof *c->count);
	if (!c->count)
		goto oom;
	c->max_words = max_words;
	c->on_sentence = on_sentence;
	c->ctx = ctx;
	*out = c;
	return 0;
oom:
	trc_corpus_destroy(c);
	err_memory(err, errlen, "out of memory for a histogram of %u lengths", max_words);
	return -1;
}

void trc_corpus_destroy(struct trc_corpus *c)
{
	if (!c)
		return;
	free(c->count);
	free(c);
}

/* Letters and digits in the wide sense: a non-ASCII character counts unless
 * it sits in a block of punctuation or symbols (Latin-1 signs, general
 * punctuation such as dashes, quotes and the ellipsis, currency, arrows and
 * technical symbols, CJK punctuation, emoji), so a lone "—" or "«" is no
 * word but "Straße" or "日本" is. */
static int trc_cp_is_alnum(uint32_t cp)
{
	if (cp < 0x80)
		return (cp >= '0' && cp <= '9') || (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z');
	if (cp <= 0xBF || cp == 0xD7 || cp == 0xF7)
		return 0;
	if ((cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x303F) ||
	    (cp >= 0xFE30 && cp <= 0xFE4F) || (cp >= 0x1F000 && cp <= 0x1FAFF))
		return 0;
	return 1;
}

static void trc_corpus_end_sentence(struct trc_corpus *c)
{
	if (c->words == 0)
		return;
	if (c->on_sentence)
		c->on_sentence(c->words, c->ctx);
	if (c->words <= c->max_words) {
		c->count[c->words]++;
		c->kept++;
	} else {
		c->dropped++;
	}
	c->words = 0;
}

/* Closing quotes and brackets that may follow a sentence's final mark. */
static size_t trc_closer_len(const unsigned char *s, size_t n)
{
	static const char *const closers[] = {
		"\"", "'", ")", "]", "}",
		"\xE2\x80\x9D", "\xE2\x80\x9C", "\xE2\x80\x99", /* ” “ ’ (German closes with “) */
		"\xC2\xBB", "\xC2\xAB",                         /* » « */
	};
	for (size_t i = 0; i < sizeof closers / sizeof closers[0]; i++) {
		size_t k = strlen(closers[i]);
		if (k <= n && memcmp(s + n - k, closers[i], k) == 0)
			return k;
	}
	return 0;
}

/* Whether the word just finished ends with '.', '!' or '?' once trailing
 * closers are set aside. */
static int trc_word_ends_sentence(const struct trc_corpus *c)
{
	unsigned char w[TRC_TAIL_BYTES];
	size_t n = c->word_bytes < TRC_TAIL_BYTES ? c->word_bytes : TRC_TAIL_BYTES;
	for (size_t i = 0; i < n; i++)
		w[i] = c->tail[(c->word_bytes - n + i) % TRC_TAIL_BYTES];
	size_t k;
	while (n > 0 && (k = trc_closer_len(w, n)) > 0)
		n -= k;
	return n > 0 && (w[n - 1] == '.' || w[n - 1] == '!' || w[n - 1] == '?');
}

/* A multi-byte sequence cut short is not UTF-8; most likely it is a Latin-1
 * letter such as 0xE0 ('a' grave), so it counts as a letter. */
static void trc_corpus_cut_sequence(struct trc_corpus *c)
{
	if (c->cp_need > 0)
		c->word_has_alnum = 1;
	c->cp_need = 0;
}

static void trc_corpus_end_word(struct trc_corpus *c)
{
	if (!c->in_word)
		return;
	trc_corpus_cut_sequence(c);
	if (c->word_has_alnum)
		c->words++;
	if (trc_word_ends_sentence(c))
		trc_corpus_end_sentence(c);
	c->in_word = 0;
	c->word_has_alnum = 0;
	c->word_bytes = 0;
}

static void trc_corpus_byte(struct trc_corpus *c, unsigned char b)
{
	if (b == ' ' || b == '\t' || b == '\r' || b == '\n' || b == '\v' || b == '\f') {
		trc_corpus_end_word(c);
		if (b == '\n') {
			if (c->newline_seen)
				trc_corpus_end_sentence(c);
			c->newline_seen = 1;
		}
		return;
	}
	c->newline_seen = 0;
	c->in_word = 1;
	c->tail[c->word_bytes % TRC_TAIL_BYTES] = b;
	c->word_bytes++;
	if (b < 0x80) {
		trc_corpus_cut_sequence(c);
		if (trc_cp_is_alnum(b))
			c->word_has_alnum = 1;
	} else if (b < 0xC0) {
		if (c->cp_need == 0) {
			c->word_has_alnum = 1;   /* stray continuation byte: Latin-1 again */
		} else {
			c->cp = (c->cp << 6) | (b & 0x3F);
			if (--c->cp_need == 0 && trc_cp_is_alnum(c->cp))
				c->word_has_alnum = 1;
		}
	} else if (b < 0xE0) {
		trc_corpus_cut_sequence(c);
		c->cp = b & 0x1F;
		c->cp_need = 1;
	} else if (b < 0xF0) {
		trc_corpus_cut_sequence(c);
		c->cp = b & 0x0F;
		c->cp_need = 2;
	} else if (b < 0xF8) {
		trc_corpus_cut_sequence(c);
		c->cp = b & 0x07;
		c->cp_need = 3;
	} else {
		trc_corpus_cut_sequence(c);
		c->word_has_alnum = 1;   /* never UTF-8: Latin-1 letters 0xF8-0xFF */
	}
}

void trc_corpus_feed(struct trc_corpus *c, const char *text, size_t n)
{
	const unsigned char *p = (const unsigned char *)text;
	for (size_t i = 0; i < n; i++)
		trc_corpus_byte(c, p[i]);
}

void trc_corpus_finish(struct trc_corpus *c)
{
	trc_corpus_end_word(c);
	trc_corpus_end_sentence(c);
	c->newline_seen = 0;
}

uint64_t trc_corpus_sentences(const struct trc_corpus *c)
{
	return c->kept;
}

uint64_t trc_corpus_dropped(const struct trc_corpus *c)
{
	return c->dropped;
}

uint64_t trc_corpus_count(const struct trc_corpus *c, uint32_t words)
{
	return words <= c->max_words ? c->count[words] : 0;
}

double trc_corpus_mean_words(const struct trc_corpus *c)
{
	if (c->kept == 0)
		return 0;
	double sum = 0;
	for (uint32_t L = 1; L <= c->max_words; L++)
		sum += (double)L * (double)c->count[L];
	return sum / (double)c->kept;
}

uint32_t trc_corpus_quantile_words(const struct trc_corpus *c, double coverage)
{
	if (c->kept == 0)
		return 0;
	uint64_t cum = 0;
	uint32_t last = 0;
	for (uint32_t L = 1; L <= c->max_words; L++) {
		if (c->count[L] == 0)
			continue;
		cum += c->count[L];
		last = L;
		if ((double)cum >= coverage * (double)c->kept)
			return L;
	}
	return last;
}

int trc_corpus_write(const struct trc_corpus *c, FILE *f)
{
	if (fputs("length,weight\n", f) < 0)
		return -1;
	for (uint32_t L = 1; L <= c->max_words; L++)
		if (c->count[L] > 0 && fprintf(f, "%u,%llu\n", L, (unsigned long long)c->count[L]) < 0)
			return -1;
	return 0;
}
