/* sim/cli/search_file.h: a search's results file (search_file.c; the format is
 * search_results.h's): each configuration's line appended as its capacity child
 * answers, and the lines of an earlier run of the same search, or of its parts,
 * taken back so that nothing is simulated twice. */
#ifndef SB_SEARCH_FILE_H
#define SB_SEARCH_FILE_H

#include <stddef.h>
#include <stdint.h>

struct search_run;

#define SEARCH_HASH_START 1469598103934665603ull   /* FNV-1a's offset basis */

/* FNV-1a of s, continued from h (SEARCH_HASH_START: s alone). */
uint64_t search_hash_more(uint64_t h, const char *s);
/* The hash of a configuration's key (its row's key_hash). */
uint64_t search_hash(const char *s);
/* Appends row i's line to r's results file (opened on the first line). 0, or -1 with err. */
int search_append(struct search_run *r, size_t i, char *err, size_t errlen);
/* Takes back the rows of r's results file and of the nmore parts' files in more. 0, or -1 with err. */
int search_resume(struct search_run *r, const char *const *more, size_t nmore, char *err, size_t errlen);

#endif
