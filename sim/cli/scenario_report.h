/* sim/cli/scenario_report.h: what a run under --scenario reports (MLPerf's
 * metric and constraint, sim/study/scenario.h), as JSON members and a line
 * of text beside run's summary. */
#ifndef SB_SCENARIO_REPORT_H
#define SB_SCENARIO_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct drv_result;
struct drv_request_row;
struct study_scenario_def;

/* The nearest-rank quantile pct (rank ceil(n pct / 100)) of the latencies, in ms, of queries of `samples`
 * requests sent together (ids q*samples .. q*samples + samples - 1, the measured ones: first id >= warmup): a
 * query's latency is its last sample's finish less its arrival. -1 when no whole query was measured. */
double scenario_query_latency_ms(const struct drv_request_row *rows, size_t n, uint32_t samples, uint64_t warmup,
                                 double pct);

/* The scenario's figures of a finished run: JSON members ("\"scenario\":{...}", report.c adds the comma) into *json
 * and one or two lines
 * into *text (both malloc'd); sla_ms a node-level server's constraint. 0, or -1 (out of memory). */
int scenario_report(const struct study_scenario_def *d, const struct drv_result *res, int llm, uint64_t warmup,
                    double sla_ms, char **json, char **text);

#endif
