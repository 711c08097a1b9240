/* sim/cli/sweep_summary.c: `simbatch sweep FILE --summary`: a finished
 * sweep's points aggregated across seeds (mean and confidence interval a
 * metric), as a table or CSV. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../util/text.h"
#include "../../util/errkind.h"
#include "../store/aggregate.h"
#include "cli.h"
#include "../../util/options.h"
#include "../store/results.h"
#include "../store/sweep_db.h"
#include "sweep_spec.h"
#include "sweep_cmd.h"

static int sweep_parse_metrics(const char *list, const struct sweep_metric **out, size_t max, size_t *n,
                               char *err, size_t errlen)
{
	char buf[1024];
	*n = 0;
	if (strlen(list) >= sizeof buf) {
		snprintf(err, errlen, "--metrics: list too long");
		return -1;
	}
	strcpy(buf, list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const struct sweep_metric *m = sweep_metric_find(t);
		if (*n == max) {
			snprintf(err, errlen, "--metrics: at most %zu metrics", max);
			return -1;
		}
		if (!m) {
			size_t nm;
			const struct sweep_metric *all = sweep_metrics(&nm);
			size_t used = (size_t)snprintf(err, errlen, "--metrics: unknown metric '%s' (known:", t);
			for (size_t i = 0; i < nm && used < errlen; i++)
				used += (size_t)snprintf(err + used, errlen - used, " %s", all[i].name);
			if (used < errlen)
				snprintf(err + used, errlen - used, ")");
			return -1;
		}
		out[(*n)++] = m;
	}
	if (*n == 0) {
		snprintf(err, errlen, "--metrics: no metric given");
		return -1;
	}
	return 0;
}

static void sweep_csv_field(const char *s)
{
	if (strpbrk(s, ",\"\n")) {
		putchar('"');
		for (; *s; s++) {
			if (*s == '"')
				putchar('"');
			putchar(*s);
		}
		putchar('"');
	} else {
		fputs(s, stdout);
	}
}

static void sweep_print_number(double v)
{
	if (isfinite(v))
		printf(",%.10g", v);
	else
		printf(",");
}

#define SWEEP_CELL_WIDTH 36

/* One metric in the text table: "mean +-half [p25, p75]". */
static void sweep_print_cell(const struct agg_stats *st)
{
	char cell[128];
	if (st->count == 0)
		snprintf(cell, sizeof cell, "-");
	else if (st->count == 1)
		snprintf(cell, sizeof cell, "%.5g", st->mean);
	else if (!(st->ci_hi - st->mean > 0))
		snprintf(cell, sizeof cell, "%.5g +-0 [%.5g, %.5g]", st->mean, st->p25, st->p75);
	else {
		/* every figure to the place of the interval's second digit: no digit it does not support */
		double half = st->ci_hi - st->mean;
		int d = txt_band_decimals(half) + 1;
		snprintf(cell, sizeof cell, "%.*f +-%.*f [%.*f, %.*f]", d, st->mean, d, half, d, st->p25, d, st->p75);
	}
	printf("  %-*s", SWEEP_CELL_WIDTH, cell);
}

#define SWEEP_MAX_METRICS 16

/* The summary's header line: the axes, n, then each metric's columns. */
static void sweep_summary_header(const struct sweep_spec *spec, const struct sweep_metric *const *m, size_t nm,
                                 int csv)
{
	for (size_t a = 0; a < spec->naxes; a++) {
		if (csv) {
			if (a)
				putchar(',');
			sweep_csv_field(spec->axes[a].name);
		} else {
			printf("%-14s ", spec->axes[a].name);
		}
	}
	if (csv)
		printf("%sn,saturated_runs", spec->naxes ? "," : "");
	else
		printf("%4s %4s", "n", "sat");
	for (size_t k = 0; k < nm; k++) {
		static const char *const part[] = { "mean", "p25", "p75", "ci95_lo", "ci95_hi" };
		if (csv) {
			for (size_t q = 0; q < 5; q++)
				printf(",%s_%s", m[k]->name, part[q]);
		} else {
			char head[96];
			snprintf(head, sizeof head, "%s: mean +-95%% [p25, p75]", m[k]->name);
			printf("  %-*s", SWEEP_CELL_WIDTH, head);
		}
	}
	putchar('\n');
}

/* One configuration's line: its axis labels (from point p), the seeds found
 * (n), how many of them were saturated, and each metric's statistics over
 * them (vals: nm blocks of nseeds, sorted in place, then the saturation
 * flags). */
static void sweep_summary_row(const struct sweep_spec *spec, const struct sweep_point *p, double *vals,
                              size_t n, size_t nm, int csv)
{
	for (size_t a = 0; a < spec->naxes; a++) {
		const char *label = spec->axes[a].values[p->choice[a]].label;
		if (csv) {
			if (a)
				putchar(',');
			sweep_csv_field(label);
		} else {
			printf("%-14s ", label);
		}
	}
	/* block nm holds the runs' saturation flags: how many of the n were saturated ("?": not recorded) */
	size_t sat = 0, unknown = 0;
	for (size_t i = 0; i < n; i++) {
		double v = vals[nm * spec->nseeds + i];
		unknown += isnan(v);
		sat += v == 1;
	}
	char sat_text[24] = "";
	if (!unknown)
		snprintf(sat_text, sizeof sat_text, "%zu", sat);
	if (csv)
		printf("%s%zu,%s", spec->naxes ? "," : "", n, sat_text);
	else
		printf("%4zu %4s", n, unknown ? "?" : sat_text);
	for (size_t k = 0; k < nm; k++) {
		struct agg_stats st;
		agg_compute(&vals[k * spec->nseeds], n, &st);
		if (!csv) {
			sweep_print_cell(&st);
			continue;
		}
		sweep_print_number(st.mean);
		sweep_print_number(st.p25);
		sweep_print_number(st.p75);
		sweep_print_number(st.ci_lo);
		sweep_print_number(st.ci_hi);
	}
	putchar('\n');
}

int sweep_summary(const struct sweep_spec *spec, const struct opt_set *o)
{
	const struct sweep_metric *m[SWEEP_MAX_METRICS + 1];
	size_t nm = 0, missing = 0;
	char err[768];
	struct sweep_db *db = NULL;
	double *vals = NULL, *row = NULL;
	int csv = opt_flag(o, "csv"), rc = CLI_BAD_INPUT;
	if (strcmp(opt_str(o, "metrics"), "help") == 0) {
		size_t n;
		const struct sweep_metric *all = sweep_metrics(&n);
		for (size_t i = 0; i < n; i++)
			printf("%-20s %s\n", all[i].name, all[i].help);
		return CLI_OK;
	}
	if (sweep_parse_metrics(opt_str(o, "metrics"), m, SWEEP_MAX_METRICS, &nm, err, sizeof err) != 0 ||
	    sweep_db_open(opt_str(o, "db"), 1, &db, err, sizeof err) != 0)
		goto fail;
	/* every summary also reads each run's saturation flag: block nm of vals */
	m[nm] = sweep_metric_find("saturated");
	rc = CLI_FAILED;
	if (!(vals = malloc((nm + 1) * spec->nseeds * sizeof *vals)) || !(row = malloc((nm + 1) * sizeof *row))) {
		err_memory(err, sizeof err, "out of memory");
		goto fail;
	}
	sweep_summary_header(spec, m, nm, csv);
	for (size_t c = 0; c < spec->nconfigs; c++) {
		size_t n = 0;
		struct sweep_point p;
		for (size_t s = 0; s < spec->nseeds; s++) {
			if (sweep_point_make(spec, c * spec->nseeds + s, &p) != 0) {
				err_memory(err, sizeof err, "out of memory");
				goto fail;
			}
			int got = sweep_db_point_metrics(db, p.key, m, nm + 1, row, err, sizeof err);
			if (got < 0) {
				sweep_point_free(&p);
				goto fail;
			}
			if (got) {
				for (size_t k = 0; k <= nm; k++)
					vals[k * spec->nseeds + n] = row[k];
				n++;
			} else {
				missing++;
			}
			if (s + 1 < spec->nseeds)
				sweep_point_free(&p);
		}
		sweep_summary_row(spec, &p, vals, n, nm, csv);
		sweep_point_free(&p);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		err_io(err, sizeof err, "error writing the summary");
		goto fail;
	}
	if (missing)
		fprintf(stderr, "simbatch: %zu of %zu points of %s are not in %s (their configurations show n < %zu)\n",
		        missing, spec->npoints, spec->path, opt_str(o, "db"), spec->nseeds);
	free(vals);
	free(row);
	sweep_db_close(db);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(vals);
	free(row);
	sweep_db_close(db);
	return rc;
}
