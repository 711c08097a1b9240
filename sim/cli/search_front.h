/* sim/cli/search_front.h: a configuration search's tokens/s/user against tokens/s/GPU front
 * (`simbatch search FILE --front=CSV`, docs/SCENARIOS.md; search_front.c says how each point is measured). */
#ifndef SB_SEARCH_FRONT_H
#define SB_SEARCH_FRONT_H

#include <stddef.h>
#include <stdint.h>
#include "search_run.h"

/* 0 when every model of the search is an LLM (the front is of tokens) and path's folder is writable, else -1
 * with err. */
int search_front_check(const struct search_spec *s, const char *path, char *err, size_t errlen);
/* Runs each configuration with a capacity once at it (requests each, 10% warm-up), writes the front's CSV to
 * path and, when text, its table on stdout: CLI_OK, or an exit code with err (nothing written). */
int search_front(struct search_run *r, const char *path, uint64_t requests, const char *exe, unsigned jobs, int text,
                 char *err, size_t errlen);

#endif
