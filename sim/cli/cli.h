/* sim/cli/cli.h: the subcommands of the simbatch program and their exit codes
 * (DESIGN.md section 3: bad input exits 2).
 *
 * Contract: a subcommand returns its exit code and never calls exit(); on
 * failure it has printed one line "simbatch: ..." on stderr and left no
 * output file half-written; bad input of any kind is CLI_BAD_INPUT.
 */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stddef.h>
#include <stdint.h>

enum cli_exit {
	CLI_OK = 0,
	CLI_FAILED = 1,       /* the work failed (I/O, out of memory), or compare found a regression */
	CLI_BAD_INPUT = 2,    /* an option, file or name was wrong */
};

/* The exit code of a failure, where one error path carries both kinds: from
 * the kind marked beside its message (util/errkind.h), CLI_FAILED when the
 * machine failed (out of memory, a read or write, a full disk, a file another
 * writer holds), CLI_BAD_INPUT otherwise. */
int cli_exit_status(void);
/* The exit status of a failure found late (storing a run, merging): the
 * machine's (CLI_FAILED) unless it was marked the input's (a damaged or
 * foreign database). */
int cli_exit_status_late(void);

int cmd_run(int argc, char **argv);

int cmd_list(int argc, char **argv);
int cmd_model_info(int argc, char **argv);
int cmd_hw_info(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_capacity(int argc, char **argv);
struct opt_def;
/* A command's own options (defs) into own, every other into run (the runs' options); both start with argv[0]. */
void cli_split_args(int argc, char **argv, const struct opt_def *defs, size_t ndefs, char **own, int *nown, char **run,
                    int *nrun);
/* `simbatch sweep --rates=auto` (sweep_auto.c): the saturation rate, then N rates below it. */
int cmd_sweep_auto(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* The run subcommand's option table (sweeps and capacity search check their
 * points' options against it); *n gets its length. */
struct opt_def;
const struct opt_def *cmd_run_options(size_t *n);
/* capacity's own options (the search file checks its options against both). */
const struct opt_def *cmd_capacity_options(size_t *n);
/* Whether capacity would take these arguments' targets (argv[0] a name):
 * 0, or -1 with capacity's own one line. */
int cmd_capacity_check_targets(int argc, char **argv, char *err, size_t errlen);
int cmd_search(int argc, char **argv);

/* `run` and `live` share everything but the execution (sim/cli/cmd_run.c):
 * options, inputs, checks, the database rows and the printed summary. Each
 * subcommand prepares a job from its option table (live's is run's plus its
 * own), executes it its own way, and hands the result back for storing and
 * printing:
 *   run_job_prepare -> (dry run: stop) -> execute -> run_job_report -> run_job_free
 * An executor may add configuration rows, JSON members and summary lines in
 * a run_extra, and an exit code for a run that is stored but did not
 * complete (130 after SIGINT). */
#define RUN_EXTRA_MAX 24
struct run_extra {
	size_t ncfg;                            /* extra run_config rows */
	char cfg_key[RUN_EXTRA_MAX][48];
	char cfg_value[RUN_EXTRA_MAX][256];
	char *json;                             /* malloc'd JSON members appended to the summary, or NULL */
	char *text;                             /* malloc'd lines printed after the text summary, or NULL */
	int exit_code;                          /* what the command returns once the run is stored */
};
struct run_job;
struct opt_set;
struct eng_config;
struct drv_result;
/* Parses argv against opts, loads and checks every input, opens every
 * output. CLI_OK with *job (NULL when --help was printed), or an exit code
 * with the message printed and nothing left behind. */
int run_job_prepare(int argc, char **argv, const struct opt_def *opts, size_t nopts, const char *usage,
                    struct run_job **job);
const struct opt_set *run_job_options(const struct run_job *j);
const struct eng_config *run_job_config(const struct run_job *j);
/* Writes --requests-out and the timeline, stores the run (live = 1: a live
 * run), prints the summary. Returns x->exit_code, or an exit code with the
 * message printed. */
int run_job_report(struct run_job *j, int live, const struct drv_result *res, const struct run_extra *x,
                   double wall_s);
void run_job_free(struct run_job *j);   /* NULL is fine; removes outputs never finished */
void run_extra_free(struct run_extra *x);
int cmd_live(int argc, char **argv);

#endif
