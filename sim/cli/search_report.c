/* sim/cli/search_report.c: a finished configuration search's report
 * (search_run.h): the answer, where the hardware error band changes the
 * ranking, the Pareto front, as text or JSON. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "search_run.h"
#include "cli.h"
#include "engine_launch.h"
#include "version.h"
#include "../study/serving.h"
#include "../../models/model.h"
#include "../store/search_store.h"
#include "../../util/errkind.h"
#include "../../util/json.h"
#include "../../util/text.h"

const char *const search_status_name[] = { "todo", "ok", "infeasible", "pruned", "skipped" };

/* The configuration's axis values, "name=value" joined by spaces: what tells it from the others. */
void search_label(const struct search_spec *s, size_t i, char *buf, size_t len)
{
	size_t at[SEARCH_MAX_OPTS], used = 0;         /* each axis's value: the last axis varies fastest */
	for (size_t a = s->naxes; a-- > 0;) {
		at[a] = i % s->axes[a].nvalues;
		i /= s->axes[a].nvalues;
	}
	buf[0] = '\0';
	for (size_t a = 0; a < s->naxes && used < len; a++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s=%s", a ? " " : "", s->axes[a].name,
		                         s->axes[a].values[at[a]]);
	if (!s->naxes)
		snprintf(buf, len, "(the one configuration)");
}

static void search_count(const struct search_run *r, size_t count[5], size_t *resumed)
{
	memset(count, 0, 5 * sizeof *count);
	*resumed = 0;
	for (size_t i = 0; i < r->spec->nconfigs; i++) {
		count[r->plan.rows[i].status]++;
		*resumed += r->plan.rows[i].resumed != 0;
	}
}

/* Configuration i's serving configuration (study/serving.h), from its run options (a capacity option,
 * such as --preset, left out): 0, or -1 where they cannot be read. */
static int search_serving(const struct search_spec *s, size_t i, struct study_serving *sv)
{
	struct search_config c;
	char err[256], *words[SEARCH_MAX_OPTS + 1] = { "capacity" };
	size_t nrd, n = 1;
	const struct opt_def *rd = cmd_run_options(&nrd);
	if (search_config_make(s, i, &c, err, sizeof err) != 0)
		return -1;
	for (size_t k = 0; k < c.nopts; k++) {
		char name[128];
		snprintf(name, sizeof name, "%.*s", (int)strcspn(c.opts[k] + 2, "="), c.opts[k] + 2);
		if (opt_find(rd, nrd, name))
			words[n++] = c.opts[k];
	}
	struct opt_set o;
	struct mdl_model *m = NULL;
	int rc = opt_parse(&o, rd, nrd, (int)n, words, 0, err, sizeof err) == 0 &&
	         mdl_load(opt_str(&o, "model"), &m, err, sizeof err) == 0 ? 0 : -1;
	if (rc == 0)
		study_serving_of_options(&o, m->is_llm, sv);
	mdl_free(m);
	search_config_free(&c);
	return rc;
}

static void search_print_row(FILE *f, const struct search_run *r, size_t i)
{
	const struct study_search_row *w = &r->plan.rows[i];
	char label[1024];
	search_label(r->spec, i, label, sizeof label);
	/* the capacity to the digits its bracket supports, requests per dollar to 3 (plain, no exponent) */
	char per_dollar[40];
	txt_format_sig(per_dollar, sizeof per_dollar, w->capacity * 3600 / w->cost, 3);
	fprintf(f, "  $%-9.2f %5u GPUs  %9.*f req/s  %9s req/$", w->cost, w->gpus, txt_band_decimals(w->hi - w->lo),
	        w->capacity, per_dollar);
	if (!isnan(w->band_lo)) {
		int d = txt_band_decimals(w->band_hi - w->band_lo) + 1;   /* its edges to its width's second digit */
		fprintf(f, "  band [%.*f, %.*f]", d, w->band_lo, d, w->band_hi);
	}
	struct study_serving sv;
	char serving[256];
	if (search_serving(r->spec, i, &sv) == 0)
		fprintf(f, "  %s (%s)\n", label, study_serving_text(&sv, serving, sizeof serving));
	else
		fprintf(f, "  %s\n", label);
}

/* The serving engine's launch command for configuration i (engine_launch.h). */
static void search_print_launch(FILE *f, const struct search_spec *s, size_t i)
{
	struct search_config c;
	char err[256];
	if (search_config_make(s, i, &c, err, sizeof err) != 0)
		return;
	run_engine_launch_words(f, c.opts, c.nopts);
	search_config_free(&c);
}

void search_report_text(FILE *f, const struct search_run *r)
{
	const struct search_spec *s = r->spec;
	size_t count[5], resumed;
	search_count(r, count, &resumed);
	fprintf(f, "simbatch search %s: %zu configurations: %zu pruned (their hardware cannot hold them, or a cheaper run bounds their capacity below the target), %zu simulated "
	        "(%zu from %s), %zu infeasible, %zu not run (%s)\n", s->path, s->nconfigs, count[STUDY_SR_PRUNED],
	        count[STUDY_SR_OK] + count[STUDY_SR_INFEASIBLE], resumed, r->out_path, count[STUDY_SR_INFEASIBLE], count[STUDY_SR_SKIPPED],
	        s->budget > 0 ? "above the budget" : "costlier than a configuration meeting the target");
	if (r->search_id)
		fprintf(f, "stored     as search %lld in %s\n", (long long)r->search_id, r->db_path);
	if (r->plan.part_n)
		fprintf(f, "part       %zu of %zu: %zu configurations are other parts' (`simbatch search FILE PARTS.csv ...` "
		        "joins them)\n", r->plan.part_i, r->plan.part_n, count[STUDY_SR_TODO]);
	size_t a = study_search_answer(&r->plan);
	if (s->target_rps > 0)
		fprintf(f, "goal       the cheapest configuration serving %.6g req/s within the SLOs\n", s->target_rps);
	else
		fprintf(f, "goal       the most capacity for at most $%.6g an hour\n", s->budget);
	if (a == SIZE_MAX) {
		fprintf(f, "answer     none: no configuration simulated %s\n",
		        s->target_rps > 0 ? "meets the target" : "fits the budget");
	} else {
		fprintf(f, "answer   ");
		search_print_row(f, r, a);
		search_print_launch(f, r->spec, a);
		const struct study_search_row *w = &r->plan.rows[a];
		/* where the hardware model's measured error changes the ranking */
		if (!isnan(w->band_lo) && s->target_rps > 0 && w->band_lo < s->target_rps)
			fprintf(f, "           its band reaches below the target: with the hardware model's error it may miss "
			        "%.6g req/s\n", s->target_rps);
		for (size_t i = 0; i < s->nconfigs; i++) {
			const struct study_search_row *o = &r->plan.rows[i];
			if (i == a || o->status != STUDY_SR_OK || isnan(o->band_hi) || isnan(w->band_lo))
				continue;
			int rivals = s->target_rps > 0 ? o->cost < w->cost && o->band_hi >= s->target_rps
			                               : o->cost <= s->budget && o->band_hi >= w->band_lo;
			if (rivals) {
				fprintf(f, "           within the band this could %s:", s->target_rps > 0 ? "meet it for less" : "rank first");
				search_print_row(f, r, i);
			}
		}
	}
	size_t *front = malloc(s->nconfigs * sizeof *front);
	if (front) {
		size_t n = study_search_pareto(&r->plan, front);
		fprintf(f, "Pareto front (cost against capacity, of those simulated%s):\n",
		        r->plan.exhaustive ? "" : "; --exhaustive for every configuration");
		for (size_t k = 0; k < n; k++)
			search_print_row(f, r, front[k]);
		free(front);
	}
	for (size_t i = 0, shown = 0; i < s->nconfigs && shown < 3; i++)
		if (r->plan.rows[i].status == STUDY_SR_INFEASIBLE || r->plan.rows[i].status == STUDY_SR_PRUNED) {
			char label[1024];
			search_label(s, i, label, sizeof label);
			fprintf(f, "%s %s: %s\n", shown++ ? "          " : "not served", label, r->plan.rows[i].reason);
		}
}

static void search_json_row(FILE *f, const struct search_run *r, size_t i)
{
	const struct study_search_row *w = &r->plan.rows[i];
	char label[1024];
	search_label(r->spec, i, label, sizeof label);
	fputs("{\"config\":", f);
	json_write_string(f, label);
	fprintf(f, ",\"status\":\"%s\",\"gpus\":%u,\"cost_per_hour\":%.10g", search_status_name[w->status], w->gpus,
	        w->cost);
	struct study_serving sv;
	if (search_serving(r->spec, i, &sv) == 0) {
		fputc(',', f);
		study_serving_json(f, &sv);
	}
	if (w->status == STUDY_SR_OK) {
		fprintf(f, ",\"capacity_rps\":%.10g,\"bracket_rps\":[%.10g,%.10g],\"requests_per_dollar\":%.10g", w->capacity,
		        w->lo, w->hi, w->capacity * 3600 / w->cost);
		if (!isnan(w->band_lo))
			fprintf(f, ",\"band_rps\":[%.10g,%.10g]", w->band_lo, w->band_hi);
	} else if (w->reason[0]) {
		fputs(",\"reason\":", f);
		json_write_string(f, w->reason);
	}
	fputc('}', f);
}

void search_report_json(FILE *f, const struct search_run *r)
{
	const struct search_spec *s = r->spec;
	size_t count[5], resumed;
	search_count(r, count, &resumed);
	fprintf(f, "{\"file\":");
	json_write_string(f, s->path);
	if (r->search_id)
		fprintf(f, ",\"search_id\":%lld", (long long)r->search_id);
	fprintf(f, ",\"configurations\":%zu,\"pruned\":%zu,\"simulated\":%zu,\"resumed\":%zu,\"infeasible\":%zu,"
	        "\"not_run\":%zu,", s->nconfigs, count[STUDY_SR_PRUNED], count[STUDY_SR_OK] + count[STUDY_SR_INFEASIBLE], resumed,
	        count[STUDY_SR_INFEASIBLE], count[STUDY_SR_SKIPPED]);
	if (r->plan.part_n)
		fprintf(f, "\"part\":[%zu,%zu],\"other_parts\":%zu,", r->plan.part_i, r->plan.part_n, count[STUDY_SR_TODO]);
	if (s->target_rps > 0)
		fprintf(f, "\"target_rps\":%.10g,", s->target_rps);
	else
		fprintf(f, "\"budget_per_hour\":%.10g,", s->budget);
	size_t a = study_search_answer(&r->plan);
	fputs("\"answer\":", f);
	if (a == SIZE_MAX)
		fputs("null", f);
	else
		search_json_row(f, r, a);
	fputs(",\"pareto\":[", f);
	size_t *front = malloc(s->nconfigs * sizeof *front);
	size_t n = front ? study_search_pareto(&r->plan, front) : 0;
	for (size_t k = 0; k < n; k++) {
		fputs(k ? "," : "", f);
		search_json_row(f, r, front[k]);
	}
	free(front);
	fputs("],\"results\":[", f);
	for (size_t k = 0, first = 1; k < s->nconfigs; k++) {
		size_t i = r->plan.order[k];
		if (r->plan.rows[i].status == STUDY_SR_SKIPPED)
			continue;
		fputs(first ? "" : ",", f);
		first = 0;
		search_json_row(f, r, i);
	}
	fputs("]}\n", f);
}

int search_store(struct search_run *r, char *err, size_t errlen)
{
	const struct search_spec *s = r->spec;
	struct results_search_config *rows = calloc(s->nconfigs ? s->nconfigs : 1, sizeof *rows);
	char (*labels)[1024] = calloc(s->nconfigs ? s->nconfigs : 1, sizeof *labels);
	char (*keys)[2048] = calloc(s->nconfigs ? s->nconfigs : 1, sizeof *keys);
	size_t *front = calloc(s->nconfigs ? s->nconfigs : 1, sizeof *front);
	const char *spec_text = s->text;            /* as the search read it: bounded, and what it ran */
	char *json = NULL;
	size_t json_len = 0;
	FILE *mem = open_memstream(&json, &json_len);
	struct results_db *db = NULL;
	int rc = -1;
	if (!rows || !labels || !keys || !front || !mem) {
		err_memory(err, errlen, "out of memory storing the search");
		goto done;
	}
	search_report_json(mem, r);
	if (fclose(mem) != 0) {
		mem = NULL;
		err_memory(err, errlen, "out of memory storing the search");
		goto done;
	}
	mem = NULL;
	json[strcspn(json, "\n")] = '\0';
	size_t a = study_search_answer(&r->plan), nfront = study_search_pareto(&r->plan, front);
	for (size_t i = 0; i < s->nconfigs; i++) {
		const struct study_search_row *w = &r->plan.rows[i];
		struct search_config c;
		if (search_config_make(s, i, &c, err, errlen) != 0)
			goto done;
		snprintf(keys[i], sizeof keys[i], "%s", c.key);
		search_config_free(&c);
		search_label(s, i, labels[i], sizeof labels[i]);
		int ok = w->status == STUDY_SR_OK;
		rows[i] = (struct results_search_config){
			.config = labels[i], .key = keys[i], .status = search_status_name[w->status], .gpus = w->gpus,
			.cost_per_hour = w->cost, .capacity_rps = ok ? w->capacity : NAN, .bracket_lo_rps = ok ? w->lo : NAN,
			.bracket_hi_rps = ok ? w->hi : NAN, .band_lo_rps = ok ? w->band_lo : NAN,
			.band_hi_rps = ok ? w->band_hi : NAN, .answer = i == a, .reason = w->reason,
		};
	}
	for (size_t k = 0; k < nfront; k++)
		rows[front[k]].pareto = 1;
	struct results_search rec = {
		.code_version = SIMBATCH_VERSION, .file = s->path, .spec_text = spec_text, .target_rps = s->target_rps,
		.budget_per_hour = s->budget, .exhaustive = r->plan.exhaustive, .answer = a == SIZE_MAX ? NULL : labels[a],
		.report_json = json, .nconfigs = s->nconfigs, .configs = rows,
	};
	if (!r->db && results_open(r->db_path, &db, err, errlen) != 0)
		goto done;
	if (results_write_search(r->db ? r->db : db, &rec, &r->search_id, err, errlen) != 0)
		goto done;
	rc = 0;
done:
	if (mem)
		fclose(mem);
	results_close(db);
	free(json);
	free(front);
	free(keys);
	free(labels);
	free(rows);
	return rc;
}
