/* sim/cli/exit_status.c: the exit status of a failure, from the kind its
 * finder marked beside the message (util/errkind.h), never from the text. */
#include "cli.h"
#include "../../util/errkind.h"

int cli_exit_status(void)
{
	enum err_kind k = err_kind();
	return k == ERR_MEMORY || k == ERR_IO ? CLI_FAILED : CLI_BAD_INPUT;
}

int cli_exit_status_late(void)
{
	/* a damaged or foreign database is the input's fault, though found late, while storing */
	return err_kind() == ERR_INPUT ? CLI_BAD_INPUT : CLI_FAILED;
}
