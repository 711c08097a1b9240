/* traces/lengths.c: request-length distributions (encoder steps, decoder
 * steps, sentence lengths in words). Lognormal and empirical-file specs are
 * turned into one exact discrete table at parse time, so what a run draws,
 * what LazyBatching's dec_timesteps coverage quantile reads (Sec. IV-C,
 * Fig. 11: the output length at N% coverage) and what the M/G/1 checks use
 * as moments all describe the same distribution, rounding and clamping
 * included.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L   /* getline */
#endif
#include "workload.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_randist.h>

enum trc_len_kind {
	TRC_LEN_FIXED,     /* always lo (== hi) */
	TRC_LEN_UNIFORM,   /* integer uniform on [lo, hi] */
	TRC_LEN_TABLE,     /* value[i] with probability cdf[i] - cdf[i-1] */
};

struct trc_lengths {
	enum trc_len_kind kind;
	uint32_t lo, hi;              /* smallest and largest value with positive probability */
	size_t n;                     /* table entries, all with positive probability */
	uint32_t *value;              /* table: increasing lengths (owned) */
	double *cdf;                  /* table: P(L <= value[i]); the last is exactly 1 (owned) */
	gsl_ran_discrete_t *walker;   /* table: alias table for O(1) draws (owned) */
	double mean;                  /* exact E[L] */
	double second_moment;         /* exact E[L^2] */
};

#define TRC_SPEC_FIELDS 5   /* one more than the longest spec, to detect extra fields */

/* Builds the table from (value, weight) pairs sorted by value with distinct
 * values, and fills the moments. Zero weights are dropped so draws and
 * quantiles never meet them. Returns -1 on allocation failure or when no
 * weight is positive; d's table fields stay NULL then. */
static int trc_lengths_set_table(struct trc_lengths *d, const uint32_t *value, const double *weight, size_t n)
{
	double total = 0;
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		total += weight[i];
	for (size_t i = 0; i < n; i++)
		if (weight[i] > 0)
			kept++;
	if (kept == 0 || !(total > 0) || !isfinite(total))
		return -1;
	d->value = malloc(kept * sizeof *d->value);
	d->cdf = malloc(kept * sizeof *d->cdf);
	double *p = malloc(kept * sizeof *p);
	if (!d->value || !d->cdf || !p)
		goto fail;
	size_t k = 0;
	double cum = 0, m1 = 0, m2 = 0;
	for (size_t i = 0; i < n; i++) {
		if (!(weight[i] > 0))
			continue;
		double pi = weight[i] / total;
		double v = value[i];
		d->value[k] = value[i];
		p[k] = pi;
		cum += pi;
		d->cdf[k] = cum;
		m1 += pi * v;
		m2 += pi * v * v;
		k++;
	}
	/* Rounding leaves the running sum a few ulps off 1; coverage 1 must
	 * still land on the largest value. */
	d->cdf[kept - 1] = 1.0;
	d->walker = gsl_ran_discrete_preproc(kept, p);
	if (!d->walker)
		goto fail;
	free(p);
	d->kind = TRC_LEN_TABLE;
	d->n = kept;
	d->lo = d->value[0];
	d->hi = d->value[kept - 1];
	d->mean = m1;
	d->second_moment = m2;
	return 0;
fail:
	free(p);
	free(d->value);
	free(d->cdf);
	d->value = NULL;
	d->cdf = NULL;
	return -1;
}

/* P(round(exp(N(mu, sigma^2))) clamped to [1, max] == L) for L = 1..max,
 * into w[L - 1]. The rounding cell of L is (L - 0.5, L + 0.5); everything
 * below 1.5 folds into 1 and everything above max - 0.5 into max. */
static void trc_lognormal_cells(double mu, double sigma, uint32_t max, double *w)
{
	double median = exp(mu);
	for (uint32_t L = 1; L <= max; L++) {
		double a = L - 0.5, b = L + 0.5;
		double p;
		if (L == 1 && L == max)
			p = 1.0;
		else if (L == 1)
			p = gsl_cdf_lognormal_P(b, mu, sigma);
		else if (L == max)
			p = gsl_cdf_lognormal_Q(a, mu, sigma);
		else if (a < median)  /* lower half: differences of P keep their digits */
			p = gsl_cdf_lognormal_P(b, mu, sigma) - gsl_cdf_lognormal_P(a, mu, sigma);
		else                  /* upper half: differences of Q do */
			p = gsl_cdf_lognormal_Q(a, mu, sigma) - gsl_cdf_lognormal_Q(b, mu, sigma);
		w[L - 1] = p > 0 ? p : 0;
	}
}

static int trc_parse_length(const char *s, uint32_t *out)
{
	uint64_t v;
	if (txt_parse_uint(s, TRC_LENGTH_LIMIT, &v) != 0)
		return -1;
	*out = (uint32_t)v;
	return 0;
}

static int trc_lengths_parse_lognormal(struct trc_lengths *d, const char *spec, char **f, size_t nf,
                                       char *err, size_t errlen)
{
	double mu, sigma;
	uint32_t max = 1000;
	double *w = NULL;
	uint32_t *v = NULL;
	if (nf != 3 && nf != 4) {
		snprintf(err, errlen, "bad length spec '%s': expected lognormal:MU:SIGMA[:MAX]", spec);
		return -1;
	}
	if (txt_parse_double(f[1], &mu) != 0) {
		snprintf(err, errlen, "bad length spec '%s': MU must be a finite number, got '%s'", spec, f[1]);
		return -1;
	}
	if (txt_parse_double(f[2], &sigma) != 0 || !(sigma > 0)) {
		snprintf(err, errlen, "bad length spec '%s': SIGMA must be a positive number, got '%s'", spec, f[2]);
		return -1;
	}
	if (nf == 4 && (trc_parse_length(f[3], &max) != 0 || max < 1)) {
		snprintf(err, errlen, "bad length spec '%s': MAX must be an integer in [1, %u], got '%s'",
		         spec, TRC_LENGTH_LIMIT, f[3]);
		return -1;
	}
	w = malloc((size_t)max * sizeof *w);
	v = malloc((size_t)max * sizeof *v);
	if (!w || !v)
		goto oom;
	trc_lognormal_cells(mu, sigma, max, w);
	for (uint32_t L = 1; L <= max; L++)
		v[L - 1] = L;
	if (trc_lengths_set_table(d, v, w, max) != 0)
		goto oom;
	free(w);
	free(v);
	return 0;
oom:
	free(w);
	free(v);
	err_memory(err, errlen, "bad length spec '%s': out of memory building the table", spec);
	return -1;
}

struct trc_len_row {
	uint32_t length;
	double weight;
};

static int trc_cmp_row(const void *a, const void *b)
{
	uint32_t x = ((const struct trc_len_row *)a)->length;
	uint32_t y = ((const struct trc_len_row *)b)->length;
	return (x > y) - (x < y);
}

/* Reads the "length,weight" rows of an empirical length file into *rows
 * (caller frees), in file order. */
static int trc_lengths_read_rows(const char *path, struct trc_len_row **rows, size_t *nrows, char *err,
                                 size_t errlen)
{
	struct lines_reader rd;
	char *line;
	size_t len, n = 0, cap = 0;
	struct trc_len_row *row = NULL;
	int seen_data = 0, got;

	if (lines_open(&rd, path, LINES_MAX_WORKLOAD_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		unsigned long lineno = rd.lineno;
		char *s = txt_trim(line);
		if (txt_line_is_blank_or_comment(s))
			continue;
		if (!seen_data) {
			seen_data = 1;
			if (strcmp(s, "length,weight") == 0)
				continue;
		}
		char *f[3];
		size_t nf = txt_split(s, ',', f, 3);
		if (nf != 2) {
			snprintf(err, errlen, "%s:%lu: expected 2 fields 'length,weight', got %zu", path, lineno, nf);
			goto fail;
		}
		uint32_t length;
		double weight;
		if (trc_parse_length(f[0], &length) != 0) {
			snprintf(err, errlen, "%s:%lu: length must be an integer in [0, %u], got '%s'",
			         path, lineno, TRC_LENGTH_LIMIT, f[0]);
			goto fail;
		}
		if (txt_parse_double(f[1], &weight) != 0 || weight < 0) {
			snprintf(err, errlen, "%s:%lu: weight must be a non-negative number, got '%s'", path, lineno, f[1]);
			goto fail;
		}
		if (GROW(row, cap, n + 1, 64) != 0) {
			err_memory(err, errlen, "%s: out of memory", path);
			goto fail;
		}
		row[n].length = length;
		row[n].weight = weight;
		n++;
	}
	if (got < 0)
		goto fail;
	if (n == 0) {
		snprintf(err, errlen, "%s: no 'length,weight' rows", path);
		goto fail;
	}
	lines_close(&rd);
	*rows = row;
	*nrows = n;
	return 0;
fail:
	lines_close(&rd);
	free(row);
	return -1;
}

/* Reads an empirical "length,weight" file into a table. Repeated lengths
 * add their weights, so concatenated histograms stay valid files. */
static int trc_lengths_load_file(struct trc_lengths *d, const char *path, char *err, size_t errlen)
{
	struct trc_len_row *row = NULL;
	uint32_t *v = NULL;
	double *w = NULL;
	size_t n = 0;

	if (trc_lengths_read_rows(path, &row, &n, err, errlen) != 0)
		return -1;
	qsort(row, n, sizeof *row, trc_cmp_row);
	v = malloc(n * sizeof *v);
	w = malloc(n * sizeof *w);
	if (!v || !w)
		goto oom;
	size_t distinct = 0;
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		if (distinct > 0 && v[distinct - 1] == row[i].length) {
			w[distinct - 1] += row[i].weight;
		} else {
			v[distinct] = row[i].length;
			w[distinct] = row[i].weight;
			distinct++;
		}
		total += row[i].weight;
	}
	if (!(total > 0)) {
		snprintf(err, errlen, "%s: all weights are zero (at least one must be positive)", path);
		goto fail;
	}
	if (!isfinite(total)) {
		snprintf(err, errlen, "%s: weights sum to infinity", path);
		goto fail;
	}
	if (trc_lengths_set_table(d, v, w, distinct) != 0)
		goto oom;
	free(row);
	free(v);
	free(w);
	return 0;
oom:
	err_memory(err, errlen, "%s: out of memory", path);
fail:
	free(row);
	free(v);
	free(w);
	return -1;
}

int trc_lengths_parse(const char *spec, struct trc_lengths **out, char *err, size_t errlen)
{
	struct trc_lengths *d = NULL;
	char *copy = NULL;
	*out = NULL;
	if (!spec || !*spec) {
		snprintf(err, errlen, "bad length spec '': empty (expected fixed:N, uniform:A:B, "
		         "lognormal:MU:SIGMA[:MAX], file:PATH or N)");
		return -1;
	}
	d = calloc(1, sizeof *d);
	copy = strdup(spec);
	if (!d || !copy) {
		err_memory(err, errlen, "bad length spec '%s': out of memory", spec);
		goto fail;
	}

	/* The path may itself contain ':', so file: is not split. */
	if (strncmp(spec, "file:", 5) == 0) {
		const char *path = spec + 5;
		if (!*path) {
			snprintf(err, errlen, "bad length spec '%s': missing PATH after 'file:'", spec);
			goto fail;
		}
		if (trc_lengths_load_file(d, path, err, errlen) != 0)
			goto fail;
		goto done;
	}

	char *f[TRC_SPEC_FIELDS];
	size_t nf = txt_split(copy, ':', f, TRC_SPEC_FIELDS);
	uint32_t a, b;
	if (nf == 1 && trc_parse_length(f[0], &a) == 0) {
		d->kind = TRC_LEN_FIXED;
		d->lo = d->hi = a;
	} else if (strcmp(f[0], "fixed") == 0) {
		if (nf != 2) {
			snprintf(err, errlen, "bad length spec '%s': expected fixed:N", spec);
			goto fail;
		}
		if (trc_parse_length(f[1], &a) != 0) {
			snprintf(err, errlen, "bad length spec '%s': N must be an integer in [0, %u], got '%s'",
			         spec, TRC_LENGTH_LIMIT, f[1]);
			goto fail;
		}
		d->kind = TRC_LEN_FIXED;
		d->lo = d->hi = a;
	} else if (strcmp(f[0], "uniform") == 0) {
		if (nf != 3) {
			snprintf(err, errlen, "bad length spec '%s': expected uniform:A:B", spec);
			goto fail;
		}
		if (trc_parse_length(f[1], &a) != 0) {
			snprintf(err, errlen, "bad length spec '%s': A must be an integer in [0, %u], got '%s'",
			         spec, TRC_LENGTH_LIMIT, f[1]);
			goto fail;
		}
		if (trc_parse_length(f[2], &b) != 0) {
			snprintf(err, errlen, "bad length spec '%s': B must be an integer in [0, %u], got '%s'",
			         spec, TRC_LENGTH_LIMIT, f[2]);
			goto fail;
		}
		if (a > b) {
			snprintf(err, errlen, "bad length spec '%s': A must be <= B", spec);
			goto fail;
		}
		d->kind = TRC_LEN_UNIFORM;
		d->lo = a;
		d->hi = b;
	} else if (strcmp(f[0], "lognormal") == 0) {
		if (trc_lengths_parse_lognormal(d, spec, f, nf, err, errlen) != 0)
			goto fail;
	} else if (nf == 1) {
		snprintf(err, errlen, "bad length spec '%s': expected fixed:N, uniform:A:B, "
		         "lognormal:MU:SIGMA[:MAX], file:PATH or a length in [0, %u]", spec, TRC_LENGTH_LIMIT);
		goto fail;
	} else {
		snprintf(err, errlen, "bad length spec '%s': unknown kind '%s' (expected fixed, uniform, "
		         "lognormal or file)", spec, f[0]);
		goto fail;
	}
	if (d->kind == TRC_LEN_FIXED) {
		d->mean = d->lo;
		d->second_moment = (double)d->lo * d->lo;
	} else if (d->kind == TRC_LEN_UNIFORM) {
		/* Discrete uniform on n points: variance (n^2 - 1) / 12. */
		double n = (double)d->hi - d->lo + 1;
		d->mean = 0.5 * ((double)d->lo + d->hi);
		d->second_moment = (n * n - 1) / 12.0 + d->mean * d->mean;
	}
done:
	free(copy);
	*out = d;
	return 0;
fail:
	free(copy);
	trc_lengths_free(d);
	return -1;
}

uint32_t trc_lengths_draw(const struct trc_lengths *d, gsl_rng *r)
{
	switch (d->kind) {
	case TRC_LEN_FIXED:
		return d->lo;
	case TRC_LEN_UNIFORM:
		return d->lo + (uint32_t)gsl_rng_uniform_int(r, (unsigned long)(d->hi - d->lo) + 1);
	case TRC_LEN_TABLE:
		return d->value[gsl_ran_discrete(r, d->walker)];
	}
	return d->lo;
}

double trc_lengths_mean(const struct trc_lengths *d)
{
	return d->mean;
}

double trc_lengths_second_moment(const struct trc_lengths *d)
{
	return d->second_moment;
}

uint32_t trc_lengths_max(const struct trc_lengths *d)
{
	return d->hi;
}

uint32_t trc_lengths_quantile(const struct trc_lengths *d, double coverage)
{
	if (!(coverage > 0))
		return d->lo;
	if (coverage >= 1)
		return d->hi;
	switch (d->kind) {
	case TRC_LEN_FIXED:
		return d->lo;
	case TRC_LEN_UNIFORM: {
		/* CDF at lo + k - 1 is k / n: the smallest k with k / n >= coverage,
		 * nudged so the answer agrees with that comparison in doubles. */
		uint64_t n = (uint64_t)(d->hi - d->lo) + 1;
		uint64_t k = (uint64_t)ceil(coverage * (double)n);
		if (k < 1)
			k = 1;
		if (k > n)
			k = n;
		while (k > 1 && (double)(k - 1) / (double)n >= coverage)
			k--;
		while (k < n && (double)k / (double)n < coverage)
			k++;
		return d->lo + (uint32_t)(k - 1);
	}
	case TRC_LEN_TABLE: {
		size_t lo = 0, hi = d->n - 1;   /* cdf[hi] == 1 >= coverage */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (d->cdf[mid] >= coverage)
				hi = mid;
			else
				lo = mid + 1;
		}
		return d->value[lo];
	}
	}
	return d->hi;
}

void trc_lengths_free(struct trc_lengths *d)
{
	if (!d)
		return;
	if (d->walker)
		gsl_ran_discrete_free(d->walker);
	free(d->value);
	free(d->cdf);
	free(d);
}
