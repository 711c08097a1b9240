/* sim/cli/sweep_cmd.h: the parts of `simbatch sweep` beside running it
 * (cmd_sweep.c): --summary (sweep_summary.c) and --export (sweep_export.c). */
#ifndef SB_SWEEP_CMD_H
#define SB_SWEEP_CMD_H

#include "sweep_spec.h"
#include "../../util/options.h"

/* Prints the sweep's aggregate table (o: sweep's options); an exit status. */
int sweep_summary(const struct sweep_spec *spec, const struct opt_set *o);
/* Writes the sweep's job list or array script; an exit status. */
int sweep_export(const struct sweep_spec *spec, const struct opt_set *o);

#endif
