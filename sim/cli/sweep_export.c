/* sim/cli/sweep_export.c: `simbatch sweep FILE --export=parallel|slurm`:
 * a sweep as a GNU parallel job list or a Slurm array script whose jobs each
 * run a part of it into a database shard for `simbatch merge`
 * (parts_export.h). */
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
#include "parts_export.h"
#include "procpool.h"

int sweep_export(const struct sweep_spec *spec, const struct opt_set *o)
{
	char exe[4096], err[512];
	err_kind_reset();
	if (opt_given(o, "simbatch")) {
		snprintf(exe, sizeof exe, "%s", opt_str(o, "simbatch"));
	} else if (pp_self_exe(exe, sizeof exe, err, sizeof err) != 0) {
		fprintf(stderr, "simbatch: %s; give --simbatch=PATH\n", err);
		return CLI_BAD_INPUT;
	}
	struct parts_export e = {
		.kind = opt_str(o, "export"), .subcommand = "sweep", .path = spec->path, .exe = exe,
		.items = spec->npoints, .items_name = "points", .parts = opt_given(o, "shards") ? opt_uint(o, "shards") : 0,
		.dir = opt_str(o, "shard-dir"), .out_option = "db", .prefix = "shard", .ext = ".db",
		.what_each_writes = "database shard (resumable: a requeued task skips the points its shard holds)",
		.join = "simbatch merge results/simbatch.db", .quiet = opt_flag(o, "quiet"),
	};
	if (parts_export_print(&e, err, sizeof err) != 0) {
		fprintf(stderr, "simbatch: %s\n", err);
		return cli_exit_status();
	}
	return CLI_OK;
}
