/* sim/cli/live_report.h: what a live run writes beside run's report (live_report.c): its
 * timeline, the outputs and issue times, and live's own configuration rows and JSON members. */
#ifndef SB_LIVE_REPORT_H
#define SB_LIVE_REPORT_H

#include <stddef.h>
#include <stdint.h>

struct timeline;
struct live_result;
struct opt_set;
struct run_extra;

/* Every task the live run logged, into the Chrome-trace timeline: 0, or -1. */
int live_write_timeline(struct timeline *tl, const struct live_result *lr, uint32_t max_batch);
/* --outputs-out: each finished request's emitted tokens and final vector. 0, or -1 with err. */
int live_write_outputs(const char *path, const struct live_result *lr, char *err, size_t errlen);
/* --issue-out: when each request was due and when it was issued. 0, or -1 with err. */
int live_write_issue(const char *path, const struct live_result *lr, char *err, size_t errlen);
/* live's configuration rows, JSON members and summary lines into x, and its exit code: 128 plus
 * stop_sig for a run a signal stopped (lr->partial), else 0. 0, or -1 with err. */
int live_extra(const struct opt_set *o, const struct live_result *lr, int stop_sig, struct run_extra *x, char *err,
               size_t errlen);

#endif
