/* sim/cli/report_metrics.h: a run's metrics by the one list of names (sim/store/metric_names.h): their values,
 * an LLM run's token throughput in the JSON and the text summary, and the rows of run_metric_values.
 * docs/METRICS.md defines each. */
#ifndef SB_REPORT_METRICS_H
#define SB_REPORT_METRICS_H

#include <stdio.h>
#include "report.h"
#include "../store/metric_names.h"

/* Every metric's value in v[id], has[id] 1 when the run has it (metric_names.h: which runs have which). */
void report_metric_values(const struct report_run *r, double v[METRIC_COUNT], int has[METRIC_COUNT]);
/* The fraction of an LLM run's measured requests that met both targets. */
double report_slo_attainment(const struct drv_result *res);
/* The run's GPUs, as its header states them (study_serving: its devices, workers, replicas or both
 * pools, times --tp). */
unsigned report_gpus(const struct report_run *r);
/* An LLM run's token throughput as JSON members, each led by a comma. */
void report_tokens_json(FILE *f, const struct report_run *r);
/* ... and as the text summary's line. */
void report_tokens_text(FILE *f, const struct report_run *r);
/* The rows of run_metric_values: (name, value) of each metric the run has; returns how many (<= METRIC_COUNT). */
size_t report_metric_rows(const struct report_run *r, struct results_stat out[METRIC_COUNT]);

#endif
