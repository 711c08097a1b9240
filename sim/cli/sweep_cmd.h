/* sim/cli/sweep_cmd.h: the parts of `simbatch sweep` beside running it
 * (cmd_sweep.c): --summary (sweep_summary.c) and --export (sweep_export.c). */
#ifndef SB_SWEEP_CMD_H
#define SB_SWEEP_CMD_H

#include "sweep_spec.h"
#include "../../util/options.h"

/* Prints the sweep's aggregate table (o: sweep's options); an exit status. */
/* sweep --summary's metrics when --metrics is not given: a node-level sweep's, an LLM sweep's (docs/METRICS.md) */
#define SWEEP_NODE_METRICS "latency_ms.mean,latency_ms.p99,throughput_rps,sla_violation_rate"
#define SWEEP_LLM_METRICS "ttft_ms.p99,tpot_ms.p99,output_tokens_per_s"

int sweep_summary(const struct sweep_spec *spec, const struct opt_set *o);
/* Writes the sweep's job list or array script; an exit status. */
int sweep_export(const struct sweep_spec *spec, const struct opt_set *o);

#endif
