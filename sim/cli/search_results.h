/* sim/cli/search_results.h: a configuration search's results file (sim/SEARCH.md "Results,
 * resuming"): a header, then one line a finished configuration, each written whole in one write.
 *
 * Contract: search_results_format writes one line (with its newline) of a row; search_results_read
 * reads a file through the bounded line reader (util/lines.h) and hands each line's key and row to
 * fn, refusing with "FILE:LINE: message" a foreign header, a line no search writes, and a number
 * no search stores (a capacity, bracket, band or cost that is NaN where it must be a number,
 * negative or infinite; an ok capacity that is not positive; a bracket whose low end is above its
 * high end). A last line a kill cut short (no newline) is dropped and left out of *keep, the bytes
 * of the whole lines; a file whose first line is cut short is no results file (an empty one is). */
#ifndef SB_SEARCH_RESULTS_H
#define SB_SEARCH_RESULTS_H

#include <stddef.h>
#include <sys/types.h>
#include "search_run.h"

#define SEARCH_RESULTS_HEADER "key,gpus,cost_per_hour,status,capacity_rps,bracket_lo_rps,bracket_hi_rps," \
	"band_lo_rps,band_hi_rps,reason"

/* A line of configuration key's row w (status ok or infeasible) into buf: its length, or 0 if it does not fit. */
size_t search_results_format(char *buf, size_t len, const char *key, const struct study_search_row *w);

/* fn(ctx, key, row): the row's status, numbers and reason are set from the line. 0 goes on; -1 stops the read
 * (fn set err). */
typedef int (*search_results_fn)(void *ctx, const char *key, const struct study_search_row *w, char *err, size_t errlen);

/* Reads path: 0, or -1 with err. own: the search's own --out (missing: none yet; refused when not a regular
 * file, since it is written in place); *keep (may be NULL) the bytes of its whole lines. */
int search_results_read(const char *path, int own, search_results_fn fn, void *ctx, off_t *keep, char *err,
                        size_t errlen);

#endif
