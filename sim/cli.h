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

/* "unknown policy 'x' (known: a, b)" into err. */
void cli_unknown_policy(const char *name, char *err, size_t errlen);

#endif
