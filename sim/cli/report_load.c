/* sim/cli/report_load.c: how an LLM's default load was chosen (sim/study/default_load.h), in the
 * text summary and the JSON: its rate as a share of which estimate, its lengths from which table,
 * so a reader knows what the numbers above describe and which option chooses another load. */
#include <string.h>
#include "report.h"
#include "../../util/json.h"
#include "../study/default_load.h"

/* The table's name: its file's, without the directory (which is the build's) and the suffix. */
static void report_load_table_name(char *out, size_t len)
{
	const char *path = study_load_table(), *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	size_t n = strlen(name), suffix = strlen("-pairs.csv");
	if (n > suffix && strcmp(name + n - suffix, "-pairs.csv") == 0)
		n -= suffix;
	snprintf(out, len, "%.*s", (int)n, name);
}

void report_load_text(FILE *f, const struct report_run *r)
{
	if (!r->load || !r->load->on)
		return;
	char name[128];
	report_load_table_name(name, sizeof name);
	if (r->load->rate[0])
		fprintf(f, "  rate       %s req/s: %s the estimated capacity %.3g req/s of %s on %s (an LLM's default; "
		        "set --rate to choose)\n", r->load->rate, STUDY_LOAD_RATE_SHARE_TEXT,
		        r->load->estimate_rps, r->model, r->hw);
	fprintf(f, "  lengths    each request's prompt and output drawn together from %s: %llu of its %llu pairs, "
	        "those within %s's %u-token context (traces/tables/%s-pairs.csv; --trace or --input-len/--output-len "
	        "choose others)\n", STUDY_LOAD_NAME, (unsigned long long)r->load_pairs,
	        (unsigned long long)(r->load_pairs + r->dropped_over_context), r->model, r->model_def->llm.context, name);
}

void report_load_json(FILE *f, const struct report_run *r)
{
	if (!r->load || !r->load->on)
		return;
	char name[128];
	report_load_table_name(name, sizeof name);
	fprintf(f, ",\"default_load\":{");
	if (r->load->rate[0])
		fprintf(f, "\"rate_share\":%.10g,\"capacity_estimate_rps\":%.10g,", STUDY_LOAD_RATE_SHARE,
		        r->load->estimate_rps);
	fprintf(f, "\"pairs\":");
	json_write_string(f, name);
	fprintf(f, ",\"pairs_kept\":%llu,\"pairs_total\":%llu}", (unsigned long long)r->load_pairs,
	        (unsigned long long)(r->load_pairs + r->dropped_over_context));
}
