/* sim/cli/compare_seeds.h: prints `simbatch compare --by-seed` (the method is in
 * sim/study/compare_seeds.c). Contract: compare_print_seeds prints the result study_compare filled
 * for req (by_seed set) as text, or one JSON object. */
#ifndef SB_COMPARE_SEEDS_H
#define SB_COMPARE_SEEDS_H

struct study_compare_req;
struct study_compare_result;

void compare_print_seeds(const struct study_compare_req *req, const struct study_compare_result *res, int json);

#endif
