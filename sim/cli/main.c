/* sim/cli/main.c: the simbatch program: picks the subcommand and returns its exit
 * status. The only place that exits. */
#include <stdio.h>
#include <string.h>
#include <gsl/gsl_errno.h>
#include "cli.h"
#include "procpool.h"
#include "../store/results.h"
#include "../../util/errkind.h"

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

static const struct cli_command commands[] = {
	{ "run", cmd_run, "simulate one run (the default subcommand)" },
	{ "list", cmd_list, "list models | policies | routers | hw" },
	{ "model-info", cmd_model_info, "per-node latency table of a model on a hardware model" },
	{ "hw-info", cmd_hw_info, "one GEMM's cycles and time on a hardware model" },
	{ "compare", cmd_compare, "compare two runs' latency CDFs (exit 1 on regression)" },
	{ "live", cmd_live, "the same run on real kernels, on the wall clock (simbatch live --help)" },
	{ "calibrate", cmd_calibrate, "run microbenchmarks, write a calibration table (--device=cpu|gpu)" },
	{ "sweep", cmd_sweep, "run a sweep file's grid of runs (parallel, resumable); --summary, --export" },
	{ "capacity", cmd_capacity, "highest Poisson rate whose p99 latency meets --sla (bisection)" },
	{ "search", cmd_search, "the cheapest configuration meeting a rate under SLOs, from a search file" },
	{ "merge", cmd_merge, "fold results database shards into one, without duplicates" },
};

static void main_usage(FILE *f)
{
	fprintf(f, "usage: simbatch [SUBCOMMAND] [--key=value ...]   (--help on every subcommand)\n\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-12s %s\n", commands[i].name, commands[i].help);
}

/* The program's entry without its setup: picks the subcommand. A sweep's
 * worker (procpool.h) calls it once per run. */
static int simbatch_main(int argc, char **argv)
{
	err_kind_reset();             /* a failure's kind is this command's (a worker runs many) */
	if (argc >= 2 && argv[1][0] != '-') {
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (strcmp(argv[1], commands[i].name) == 0)
				return commands[i].run(argc - 1, argv + 1);
		fprintf(stderr, "simbatch: unknown subcommand '%s' (the subcommands: simbatch --help)\n", argv[1]);
		return CLI_BAD_INPUT;
	}
	if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		main_usage(stdout);
		printf("\n");
	}
	return cmd_run(argc, argv);
}

int main(int argc, char **argv)
{
	/* GSL's default handler aborts; every GSL call here checks its result. */
	gsl_set_error_handler_off();
	/* internal, not a subcommand to type: the worker a sweep runs its points in */
	if (argc == 2 && strcmp(argv[1], PP_WORKER_SUBCOMMAND) == 0) {
		results_keep_open(1);        /* its points store into one database */
		int rc = pp_worker_serve(simbatch_main);
		results_keep_open(0);
		return rc;
	}
	return simbatch_main(argc, argv);
}
