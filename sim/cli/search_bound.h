/* sim/cli/search_bound.h: the values the capacity bound is decided on (search_bound.c; sim/SEARCH.md), read
 * from a configuration's options and its capacity child's JSON: a plain fleet of N replicas serves at most N
 * times what one of them can (the decision: study_search_bounded, sim/study/search_plan.h). */
#ifndef SB_SEARCH_BOUND_H
#define SB_SEARCH_BOUND_H

#include <stddef.h>

struct search_config;
struct study_search_row;
struct json_doc;

/* Whether c is a plain fleet (replicas of one GPU kind serving whole requests, behind a router
 * that does not route by prefix), its replica count, and its options but --replicas hashed: its
 * family, into w. */
void search_family(const struct search_config *c, struct study_search_row *w);
/* The lowest rate capacity's JSON (its "points") found saturated, NaN when none. */
double search_saturated_rps(const struct json_doc *d);

#endif
