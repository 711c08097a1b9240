/* sim/cli/search_bound.c: the values the capacity bound is decided on: a configuration's family and its
 * capacity search's lowest saturated rate (search_bound.h). */
#include "search_bound.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "search_file.h"
#include "search_run.h"
#include "search_spec.h"
#include "../../util/json_read.h"
#include "../../util/text.h"

/* Whether c is a plain fleet (replicas of one GPU kind serving whole requests, behind a router that
 * does not route by prefix), its replica count, and its options but --replicas hashed: its family. */
void search_family(const struct search_config *c, struct study_search_row *w)
{
	uint64_t h = SEARCH_HASH_START;
	w->plain_replicas = 1;
	for (size_t k = 0; k < c->nopts; k++) {
		const char *o = c->opts[k];
		if (strncmp(o, "--replicas=", 11) == 0) {
			uint64_t n;
			w->plain_replicas = txt_parse_uint(o + 11, UINT32_MAX, &n) == 0 ? (uint32_t)n : 0;
			continue;
		}
		if (strncmp(o, "--prefill-replicas=", 19) == 0 || strcmp(o, "--router=prefix-affinity") == 0)
			w->plain_replicas = 0;
		if (strncmp(o, "--router", 8) == 0)
			continue;                     /* one replica has none (search_config_make leaves it out) */
		h = search_hash_more(search_hash_more(h, o), " ");
	}
	w->family = h;
}

/* The lowest rate capacity's JSON (its "points") found saturated, NaN when none. */
double search_saturated_rps(const struct json_doc *d)
{
	double lowest = NAN, rate;
	for (size_t i = 0; i < json_doc_count(d, "points"); i++)
		if (json_doc_item_number(d, "points", i, "rate_rps", &rate) == 0 &&
		    json_doc_item_true(d, "points", i, "saturated") && (isnan(lowest) || rate < lowest))
			lowest = rate;
	return lowest;
}

