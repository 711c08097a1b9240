/* sim/cli/cmd_merge.c: `simbatch merge OUT.db SHARD.db...`: folds database
 * shards (a sweep exported to GNU parallel or Slurm) into one database, each
 * run once (results_merge.h says what makes two runs the same). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "../../util/errkind.h"
#include "../../util/options.h"
#include "../store/results_merge.h"

static const struct opt_def merge_opts[] = {
	{ "quiet", OPT_FLAG, NULL, 0, 0, 0, "print nothing on success" },
	{ "help", OPT_FLAG, NULL, 0, 0, 0, "this help" },
};
#define MERGE_NOPTS (sizeof merge_opts / sizeof merge_opts[0])

static const char merge_usage[] =
	"usage: simbatch merge OUT.db SHARD.db...\n"
	"Copies every run of the shards into OUT.db (created when missing) with fresh run ids,\n"
	"skipping runs OUT.db already holds: same code version and same options (output routing\n"
	"such as --db left out). Shards of an older schema merge (what they lack is left empty);\n"
	"shards of a newer one are refused. All shards merge in one transaction, or none does.";

int cmd_merge(int argc, char **argv)
{
	char err[1024];
	struct opt_set o;
	/* the option parser keeps a handful of positional words; shards can be thousands */
	char **opts = calloc((size_t)argc + 1, sizeof *opts);
	const char **paths = calloc((size_t)argc + 1, sizeof *paths);
	int nopts = 0, npaths = 0, rc = CLI_BAD_INPUT;
	if (!opts || !paths) {
		err_memory(err, sizeof err, "out of memory");
		rc = CLI_FAILED;
		goto fail;
	}
	opts[nopts++] = argv[0];
	for (int i = 1; i < argc; i++) {
		if (strncmp(argv[i], "-", 1) == 0)
			opts[nopts++] = argv[i];
		else
			paths[npaths++] = argv[i];
	}
	if (opt_parse(&o, merge_opts, MERGE_NOPTS, nopts, opts, 0, err, sizeof err) != 0)
		goto fail;
	if (opt_flag(&o, "help")) {
		opt_print_help(stdout, merge_usage, merge_opts, MERGE_NOPTS);
		free(opts);
		free(paths);
		return CLI_OK;
	}
	if (npaths < 2) {
		snprintf(err, sizeof err, "give the output database and at least one shard (simbatch merge OUT.db SHARD.db...)");
		goto fail;
	}
	struct rmerge_stats st;
	int mrc = rmerge_merge(paths[0], paths + 1, (size_t)npaths - 1, &st, err, sizeof err);
	if (mrc != 0) {
		/* creating OUT on a full disk is the machine's failure, not the input's */
		rc = mrc == RMERGE_BAD_INPUT ? cli_exit_status() : cli_exit_status_late();
		goto fail;
	}
	if (!opt_flag(&o, "quiet")) {
		printf("merged %zu shard(s) into %s: %zu runs read, %zu added, %zu already present", st.shards,
		       paths[0], st.runs_read, st.runs_added, st.runs_duplicate);
		if (st.searches_added || st.searches_duplicate)
			printf("; %zu configuration searches added, %zu already present", st.searches_added,
			       st.searches_duplicate);
		if (st.capacities_added || st.capacities_duplicate)
			printf("; %zu capacity answers added, %zu already present", st.capacities_added,
			       st.capacities_duplicate);
		putchar('\n');
	}
	free(opts);
	free(paths);
	return CLI_OK;
fail:
	fprintf(stderr, "simbatch: %s\n", err);
	free(opts);
	free(paths);
	return rc;
}
