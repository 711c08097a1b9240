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
#include "../study/sweep_stats.h"

/* --metrics: each name of the list (metric_names.h; an old sweep name is its alias, shown as given) into out and
 * its header label into label. */
static int sweep_parse_metrics(const char *list, const struct metric_name **out, const char **label, size_t max,
                               size_t *n, char *buf, size_t buflen, char *err, size_t errlen)
{
	*n = 0;
	if (strlen(list) >= buflen) {
		snprintf(err, errlen, "--metrics: list too long");
		return -1;
	}
	strcpy(buf, list);
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		const struct metric_name *m = metric_find(t, NULL);
		if (*n == max) {
			snprintf(err, errlen, "--metrics: at most %zu metrics", max);
			return -1;
		}
		if (!m) {
			size_t used = (size_t)snprintf(err, errlen, "--metrics: unknown metric '%s' (known:", t);
			for (size_t i = 0; i < METRIC_COUNT && used < errlen; i++)
				used += (size_t)snprintf(err + used, errlen - used, " %s", metric_names[i].name);
			if (used < errlen)
				snprintf(err + used, errlen - used, "; --metrics=help says what each is)");
			return -1;
		}
		label[*n] = t;
		out[(*n)++] = m;
	}
	if (*n == 0) {
		snprintf(err, errlen, "--metrics: no metric given");
		return -1;
	}
	return 0;
}

/* --metrics=help: the registry, a line each: name, unit, the runs that have it, meaning, old name. */
static void sweep_metrics_help(void)
{
	for (size_t i = 0; i < METRIC_COUNT; i++) {
		const struct metric_name *m = &metric_names[i];
		printf("%-34s %-9s %-14s %s%s%s%s\n", m->name, m->unit, metric_runs_text(m->runs), m->meaning,
		       m->alias ? " (was " : "", m->alias ? m->alias : "", m->alias ? ")" : "");
	}
}

/* Without --metrics: an LLM sweep's metrics when its first stored point is an LLM run's (it has a TTFT), and
 * goodput in tokens when that run set SLOs; else a node-level sweep's. 0, or -1 with err. */
static int sweep_default_metrics(const struct sweep_spec *spec, struct sweep_db *db, char *list, size_t len,
                                 char *err, size_t errlen)
{
	const struct metric_name *probe[2] = { &metric_names[METRIC_TTFT_MEAN],
	                                       &metric_names[METRIC_GOODPUT_OUTPUT_TOKENS_PER_S] };
	double v[2];
	snprintf(list, len, "%s", SWEEP_NODE_METRICS);
	for (size_t i = 0; i < spec->npoints; i++) {
		struct sweep_point p;
		if (sweep_point_make(spec, i, &p) != 0)
			return err_memory(err, errlen, "out of memory");
		int got = sweep_db_point_metrics(db, p.key, probe, 2, v, err, errlen);
		sweep_point_free(&p);
		if (got < 0)
			return -1;
		if (!got)
			continue;
		if (!isnan(v[0]))
			snprintf(list, len, "%s%s", SWEEP_LLM_METRICS, isnan(v[1]) ? "" : ",goodput_output_tokens_per_s");
		return 0;
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
static void sweep_summary_header(const struct sweep_spec *spec, const char *const *label, size_t nm, int csv)
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
				printf(",%s_%s", label[k], part[q]);
		} else {
			char head[96];
			snprintf(head, sizeof head, "%s: mean +-95%% [p25, p75]", label[k]);
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
	struct sweep_config_stats cs;
	struct agg_stats st[SWEEP_MAX_METRICS];
	sweep_config_summarize(vals, spec->nseeds, n, nm, &cs, st);
	char sat_text[24] = "";   /* "?" in the table: a run's saturation not recorded */
	if (!cs.unknown)
		snprintf(sat_text, sizeof sat_text, "%zu", cs.saturated);
	if (csv)
		printf("%s%zu,%s", spec->naxes ? "," : "", n, sat_text);
	else
		printf("%4zu %4s", n, cs.unknown ? "?" : sat_text);
	for (size_t k = 0; k < nm; k++) {
		if (!csv) {
			sweep_print_cell(&st[k]);
			continue;
		}
		sweep_print_number(st[k].mean);
		sweep_print_number(st[k].p25);
		sweep_print_number(st[k].p75);
		sweep_print_number(st[k].ci_lo);
		sweep_print_number(st[k].ci_hi);
	}
	putchar('\n');
}
int sweep_summary(const struct sweep_spec *spec, const struct opt_set *o)
{
	const struct metric_name *m[SWEEP_MAX_METRICS + 1];
	const char *label[SWEEP_MAX_METRICS];
	char names[1024], defaults[256];
	size_t nm = 0, missing = 0;
	char err[1024];
	struct sweep_db *db = NULL;
	double *vals = NULL, *row = NULL;
	int csv = opt_flag(o, "csv"), rc = CLI_BAD_INPUT;
	const char *list = opt_str(o, "metrics");
	if (list && strcmp(list, "help") == 0) {
		sweep_metrics_help();
		return CLI_OK;
	}
	/* a list given is checked before the database is opened; the default depends on what the database holds */
	if ((list && sweep_parse_metrics(list, m, label, SWEEP_MAX_METRICS, &nm, names, sizeof names, err,
	                                 sizeof err) != 0) || sweep_db_open(opt_str(o, "db"), 1, &db, err, sizeof err) != 0)
		goto fail;
	if (!list && (sweep_default_metrics(spec, db, defaults, sizeof defaults, err, sizeof err) != 0 ||
	              sweep_parse_metrics(defaults, m, label, SWEEP_MAX_METRICS, &nm, names, sizeof names, err,
	                                  sizeof err) != 0)) {
		rc = CLI_FAILED;
		goto fail;
	}
	/* every summary also reads each run's saturation flag: block nm of vals */
	m[nm] = &metric_names[METRIC_SATURATED];
	rc = CLI_FAILED;
	if (!(vals = malloc((nm + 1) * spec->nseeds * sizeof *vals)) || !(row = malloc((nm + 1) * sizeof *row))) {
		err_memory(err, sizeof err, "out of memory");
		goto fail;
	}
	sweep_summary_header(spec, label, nm, csv);
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
