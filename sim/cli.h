/* sim/cli.h: the subcommands of the simbatch program and their exit codes
 * (DESIGN.md section 3: bad input exits 2). */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stddef.h>

enum cli_exit {
	CLI_OK = 0,
	CLI_FAILED = 1,       /* the work failed (I/O, out of memory), or compare found a regression */
	CLI_BAD_INPUT = 2,    /* an option, file or name was wrong */
};

int cmd_run(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_model_info(int argc, char **argv);
int cmd_hw_info(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_capacity(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* The run subcommand's option table (sweeps and capacity search check their
 * points' options against it); *n gets its length. */
struct opt_def;
const struct opt_def *cmd_run_options(size_t *n);

/* `run` and `live` share everything but the execution (sim/cmd_run.c):
 * options, inputs, checks, the database rows and the printed summary. A
 * mode says what differs: its option table (live's is run's plus its own),
 * how the prepared configuration is executed, and whether the stored run is
 * live. execute returns CLI_OK with res filled, or an exit code with err;
 * it may add configuration rows, JSON members and summary lines in x, and
 * an exit code for a run that is stored but did not complete (130 after
 * SIGINT). check (optional) runs with the other input checks, before
 * --dry-run returns. */
#define RUN_EXTRA_MAX 24
struct eng_config;
struct eng_result;
struct opt_set;
struct run_extra {
	size_t ncfg;                            /* extra run_config rows */
	char cfg_key[RUN_EXTRA_MAX][48];
	char cfg_value[RUN_EXTRA_MAX][256];
	char *json;                             /* malloc'd JSON members appended to the summary, or NULL */
	char *text;                             /* malloc'd lines printed after the text summary, or NULL */
	int exit_code;                          /* what the command returns once the run is stored */
};
struct run_mode {
	const char *usage;
	const struct opt_def *opts;
	size_t nopts;
	int live;                               /* runs.live */
	int (*check)(const struct opt_set *o, const struct eng_config *c, char *err, size_t errlen);
	int (*execute)(const struct opt_set *o, const struct eng_config *c, struct eng_result *res,
	               struct run_extra *x, char *err, size_t errlen);
};
int cmd_run_mode(int argc, char **argv, const struct run_mode *mode);
int cmd_live(int argc, char **argv);

/* "unknown policy 'x' (known: a, b)" into err. */
void cli_unknown_policy(const char *name, char *err, size_t errlen);

#endif
