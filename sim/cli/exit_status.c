/* sim/cli/exit_status.c: which exit code a failure message means (cli.h). */
#include <string.h>
#include "cli.h"

int cli_status_of(const char *err)
{
	static const char *const machine[] = {
		"out of memory", "error writing", "write error", "read error", "disk is full", "disk I/O error",
		"No space left", "Input/output error",
	};
	for (size_t i = 0; i < sizeof machine / sizeof machine[0]; i++)
		if (strstr(err, machine[i]))
			return CLI_FAILED;
	return CLI_BAD_INPUT;
}

int cli_status_of_failure(const char *err)
{
	/* a damaged or foreign database is the input's fault, though found late, while storing */
	return strstr(err, "malformed") || strstr(err, "not a database") ? CLI_BAD_INPUT : CLI_FAILED;
}
