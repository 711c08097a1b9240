/* sim/cli/compare_seeds.h: `simbatch compare --by-seed` (see compare_seeds.c for the method).
 * Contract: compare_by_seed prints the comparison of every run bsel matches in bdb with every run
 * csel matches in cdb (text, or one JSON object) and returns the command's exit status: CLI_OK,
 * CLI_FAILED on a regression, or with err set (nothing printed) CLI_BAD_INPUT / CLI_FAILED. */
#ifndef SB_COMPARE_SEEDS_H
#define SB_COMPARE_SEEDS_H

#include <stddef.h>

struct results_db;

int compare_by_seed(struct results_db *bdb, const char *bpath, const char *bsel, struct results_db *cdb,
                    const char *cpath, const char *csel, const char *metric, double tol, int json, char *err,
                    size_t errlen);

#endif
