/* traces/corpus.h: sentence lengths (in words) of a plain-text corpus, the
 * raw material of an empirical length distribution (LazyBatching Fig. 11
 * counts words per sentence of WMT-2019 the same way; BatchMaker Sec. 7.1
 * samples Europarl / WMT-15 sentences).
 *
 * Tokenizer rules (see traces/README.md for examples):
 *  - A word is a maximal run of non-whitespace bytes (space, tab, CR, LF, VT,
 *    FF) containing at least one letter or digit: an ASCII letter or digit,
 *    or a UTF-8 character outside the common punctuation and symbol blocks.
 *    "--", "-" and a lone quote are not words; "3.5", "e-mail" and "über" are.
 *  - A sentence ends at a run of non-whitespace whose last character is '.',
 *    '!' or '?' (once closing quotes and brackets after it are set aside),
 *    followed by whitespace or the end of input; at a blank line (a line of
 *    only whitespace); and at the end of input.
 *  - Sentences with no words are skipped.
 *
 * Contract:
 *  - Feeding text in any chunking gives the same sentences as feeding it at
 *    once: all state lives in the counter, none in the chunk boundaries.
 *  - Only trc_corpus_create allocates; feeding never fails.
 */
#ifndef SB_TRC_CORPUS_H
#define SB_TRC_CORPUS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct trc_corpus;

/* Called once per non-empty sentence, in text order, with its word count,
 * before the max_words filter (so it also sees sentences that are dropped). */
typedef void (*trc_sentence_fn)(uint64_t words, void *ctx);

/* A counter keeping a histogram of sentence lengths 1..max_words (longer
 * sentences are counted as dropped). max_words in [1, TRC_LENGTH_LIMIT].
 * on_sentence may be NULL; ctx is not owned. Free with trc_corpus_destroy. */
int trc_corpus_create(uint32_t max_words, trc_sentence_fn on_sentence, void *ctx,
                      struct trc_corpus **out, char *err, size_t errlen);
void trc_corpus_destroy(struct trc_corpus *c);                 /* NULL is fine */

/* Tokenizes the next n bytes of text (any bytes: a NUL is a non-letter). */
void trc_corpus_feed(struct trc_corpus *c, const char *text, size_t n);
/* End of input: closes the last word and sentence. Feeding may go on after
 * it, as a new document. */
void trc_corpus_finish(struct trc_corpus *c);

uint64_t trc_corpus_sentences(const struct trc_corpus *c);     /* kept (<= max_words) */
uint64_t trc_corpus_dropped(const struct trc_corpus *c);       /* longer than max_words */
uint64_t trc_corpus_count(const struct trc_corpus *c, uint32_t words);  /* kept with exactly this length */
double trc_corpus_mean_words(const struct trc_corpus *c);      /* over kept sentences; 0 if none */
/* Smallest L with (kept sentences of length <= L) >= coverage * kept; 0 if none. */
uint32_t trc_corpus_quantile_words(const struct trc_corpus *c, double coverage);

/* Writes the histogram as an empirical length file (header "length,weight",
 * one row per length that occurred, weight = count). 0, or -1 on a write
 * error (errno from stdio). */
int trc_corpus_write(const struct trc_corpus *c, FILE *f);

#endif
