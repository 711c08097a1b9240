/* hwmodels/moe_route.c: routing models and one layer's draw (moe_route.h). */
#include "moe_route.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int moe_route_uniform(uint32_t experts, uint32_t top_k, struct moe_route **out, char *err, size_t errlen)
{
	struct moe_route *r = calloc(1, sizeof *r);
	*out = NULL;
	if (!r) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	r->experts = experts;
	r->top_k = top_k;
	r->uniform = 1;
	snprintf(r->source, sizeof r->source, "uniform");
	snprintf(r->path, sizeof r->path, "uniform");
	*out = r;
	return 0;
}

void moe_route_free(struct moe_route *r)
{
	if (!r)
		return;
	free(r->cum);
	free(r);
}

/* One row "expert,share" of the file: the expert must be the next one. */
static int moe_route_row(const char *path, unsigned long lineno, char *line, uint32_t want, uint32_t experts,
                         double *share, char *err, size_t errlen)
{
	char *comma = strchr(line, ',');
	uint64_t e;
	if (!comma) {
		snprintf(err, errlen, "%s:%lu: expected 'expert,share', got '%s'", path, lineno, line);
		return -1;
	}
	*comma = '\0';
	if (txt_parse_uint(txt_trim(line), UINT32_MAX, &e) != 0 || e != want) {
		snprintf(err, errlen, "%s:%lu: expert '%s' out of order (expected %u: rows 0 to %u, one an expert)", path,
		         lineno, line, want, experts - 1);
		return -1;
	}
	if (txt_parse_double(txt_trim(comma + 1), share) != 0 || !isfinite(*share) || *share < 0) {
		snprintf(err, errlen, "%s:%lu: expert %u's share '%s' is not a finite number at least 0", path, lineno, want,
		         comma + 1);
		return -1;
	}
	return 0;
}

int moe_route_load(const char *path, uint32_t experts, uint32_t top_k, struct moe_route **out, char *err,
                   size_t errlen)
{
	struct lines_reader rd = { 0 };
	struct moe_route *r = calloc(1, sizeof *r);
	char *line;
	size_t len;
	int got, header = 0;
	uint32_t rows = 0, positive = 0;
	*out = NULL;
	if (!r || !(r->cum = calloc(experts, sizeof *r->cum))) {
		err_memory(err, errlen, "out of memory");
		goto fail;
	}
	r->experts = experts;
	r->top_k = top_k;
	snprintf(r->path, sizeof r->path, "%s", path);
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		unsigned long n = rd.lineno;
		char *t = txt_trim(line), *key, *value;
		if (n == 1 && strcmp(t, MOE_ROUTE_KIND_LINE) != 0) {
			snprintf(err, errlen, "%s:1: not a routing-skew file (the first line must be '%s')", path,
			         MOE_ROUTE_KIND_LINE);
			goto fail;
		}
		if (n == 1)
			continue;
		if (t[0] == '#') {
			if (!header && txt_setting(t + 1, &key, &value) == 1 && strcmp(key, "source") == 0)
				snprintf(r->source, sizeof r->source, "%s", value);
			continue;
		}
		if (!*t)
			continue;
		if (!header) {
			if (strcmp(t, "expert,share") != 0) {
				snprintf(err, errlen, "%s:%lu: expected the header 'expert,share', got '%s'", path, n, t);
				goto fail;
			}
			if (!r->source[0]) {
				snprintf(err, errlen, "%s:%lu: a routing-skew file needs '# source = ...' before its header "
				         "(where the shares come from)", path, n);
				goto fail;
			}
			header = 1;
			continue;
		}
		if (rows >= experts) {
			snprintf(err, errlen, "%s:%lu: more rows than the model's %u experts", path, n, experts);
			goto fail;
		}
		double share;
		if (moe_route_row(path, n, t, rows, experts, &share, err, errlen) != 0)
			goto fail;
		r->cum[rows] = (rows ? r->cum[rows - 1] : 0) + share;
		positive += share > 0;
		rows++;
	}
	if (got < 0)
		goto fail;
	if (rows != experts) {
		snprintf(err, errlen, "%s: %u expert rows, and the model has %u experts (one row each, 0 to %u)", path, rows,
		         experts, experts - 1);
		goto fail;
	}
	if (fabs(r->cum[experts - 1] - 1) > MOE_ROUTE_SUM_TOL) {
		snprintf(err, errlen, "%s: the shares sum to %.6g, not 1 (within %g): not a distribution over the experts",
		         path, r->cum[experts - 1], MOE_ROUTE_SUM_TOL);
		goto fail;
	}
	if (positive < top_k) {
		snprintf(err, errlen, "%s: %u experts have a positive share, and each token picks %u distinct ones", path,
		         positive, top_k);
		goto fail;
	}
	lines_close(&rd);
	*out = r;
	return 0;
fail:
	lines_close(&rd);
	moe_route_free(r);
	return -1;
}

/* An expert by the cumulative shares: the first whose cumulative share exceeds u (in [0, total)). */
static uint32_t moe_route_pick(const struct moe_route *r, double u)
{
	uint32_t lo = 0, hi = r->experts - 1;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (r->cum[mid] > u)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Token by token: k distinct experts each, a repeat drawn again. */
static void moe_route_tokens(const struct moe_route *r, gsl_rng *gen, uint32_t tokens, uint32_t *counts,
                             uint32_t *chosen)
{
	double total = r->uniform ? 0 : r->cum[r->experts - 1];
	for (uint32_t t = 0; t < tokens; t++)
		for (uint32_t j = 0; j < r->top_k;) {
			uint32_t e = r->uniform ? (uint32_t)gsl_rng_uniform_int(gen, r->experts)
			                        : moe_route_pick(r, gsl_rng_uniform(gen) * total);
			uint32_t seen = 0;
			for (uint32_t i = 0; i < j && !seen; i++)
				seen = chosen[i] == e;
			if (seen || (!r->uniform && r->cum[e] <= (e ? r->cum[e - 1] : 0)))
				continue;
			chosen[j++] = e;
			counts[e]++;
		}
}

/* Uniform, expert by expert: group[j] tokens have picked j experts among those before expert i. */
static void moe_route_groups(const struct moe_route *r, gsl_rng *gen, uint32_t tokens, uint32_t *counts,
                             uint32_t *group)
{
	uint32_t k = r->top_k, e = r->experts;
	memset(group, 0, (k + 1) * sizeof *group);
	group[0] = tokens;
	for (uint32_t i = 0; i < e; i++) {
		uint32_t got = 0;
		for (uint32_t j = k; j-- > 0;) {    /* from the fullest group down, so a moved token moves once */
			if (!group[j])
				continue;
			double p = (double)(k - j) / (double)(e - i);
			uint32_t x = p >= 1 ? group[j] : (uint32_t)gsl_ran_binomial(gen, p, group[j]);
			group[j] -= x;
			group[j + 1] += x;
			got += x;
		}
		counts[i] = got;
	}
}

void moe_route_draw(const struct moe_route *r, gsl_rng *gen, uint32_t tokens, uint32_t *counts, uint32_t *scratch)
{
	memset(counts, 0, r->experts * sizeof *counts);
	if (r->uniform && (uint64_t)r->experts * (r->top_k + 1) < (uint64_t)tokens * r->top_k)
		moe_route_groups(r, gen, tokens, counts, scratch);
	else
		moe_route_tokens(r, gen, tokens, counts, scratch);
}

double moe_route_expected_reached(uint32_t experts, uint32_t top_k, uint32_t b)
{
	return experts * (1 - pow(1 - (double)top_k / experts, b));
}
