/* sim/cli/compare_seeds.c: `simbatch compare --by-seed` printed: two configurations compared with
 * the seed as the unit (study_compare_seeds, sim/study/compare_seeds.c, says how). */
#include <stdio.h>
#include "../../util/json.h"
#include "../study/compare.h"
#include "compare_seeds.h"

static void seeds_print_side(const char *name, const char *selector, const char *path,
                             const struct study_seed_side *s, int json)
{
	if (json) {
		printf("\"%s\":{\"selector\":", name);
		json_write_string(stdout, selector);
		printf(",\"source\":");
		json_write_string(stdout, path);
		printf(",\"runs\":%zu,\"seeds\":[", s->n);
		for (size_t i = s->n; i-- > 0;)              /* oldest run first */
			printf("%llu%s", (unsigned long long)s->seeds[i], i ? "," : "");
		printf("]},");
		return;
	}
	printf("%-10s %zu runs matching '%s' in %s (seeds", name, s->n, selector, path);
	for (size_t i = s->n; i-- > 0;)
		printf(" %llu", (unsigned long long)s->seeds[i]);
	printf(")\n");
}

void compare_print_seeds(const struct study_compare_req *req, const struct study_compare_result *res, int json)
{
	const struct study_seed_side *b = &res->seed_base, *c = &res->seed_cand;
	const char *bpath = req->baseline_db ? req->baseline_db : req->db;
	if (json) {
		printf("{");
		seeds_print_side("baseline", req->base, bpath, b, 1);
		seeds_print_side("candidate", req->cand, req->db, c, 1);
		printf("\"metric\":\"%s\",\"unit\":\"seed\",\"confidence\":%g,\"quantiles\":[", req->metric,
		       res->confidence);
	} else {
		seeds_print_side("baseline:", req->base, bpath, b, 0);
		seeds_print_side("candidate:", req->cand, req->db, c, 0);
		printf("\nthe seed is the unit: each run's quantile is one observation; the difference of the means "
		       "with its %g%% Student t-interval (pooled variance, %zu degrees of freedom)\n",
		       res->confidence * 100, b->n + c->n - 2);
		printf("%-8s %12s %12s %12s %25s\n", "quantile", "baseline_ms", "candidate_ms", "cand-base", "interval");
	}
	for (int k = 0; k < CDFC_NQUANTILES; k++) {
		const struct study_seed_diff *d = &res->seed_diffs[k];
		if (json)
			printf("%s{\"name\":\"%s\",\"base_mean_ms\":%.17g,\"cand_mean_ms\":%.17g,\"diff_ms\":%.17g,"
			       "\"low_ms\":%.17g,\"high_ms\":%.17g,\"worse\":%s,\"better\":%s}",
			       k ? "," : "", cdfc_points[k].name, b->mean[k], c->mean[k], d->diff, d->lo, d->hi,
			       d->worse ? "true" : "false", d->better ? "true" : "false");
		else
			printf("%-8s %12.6g %12.6g %12.6g   [%10.6g, %10.6g]%s\n", cdfc_points[k].name, b->mean[k],
			       c->mean[k], d->diff, d->lo, d->hi,
			       d->worse ? "  worse" : d->better ? "  better" : "  no difference shown");
	}
	if (json)
		printf("],\"tolerance\":%.15g,\"regression\":%s}\n", req->tolerance, res->failed ? "true" : "false");
	else
		printf("\n%s\n", res->failed ? "REGRESSION: a quantile's whole interval lies above the tolerance"
		                             : "OK: no quantile's interval lies wholly above the tolerance");
}
