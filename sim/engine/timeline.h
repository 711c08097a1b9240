/* sim/engine/timeline.h: writes every task of a run as Chrome trace-event JSON
 * (--timeline-out), which Perfetto and chrome://tracing open: one row per
 * device, one box per task named after its node type, with the batch and the
 * request ids as arguments, so a policy's decisions can be read the way the
 * papers draw them (BatchMaker Fig. 5, LazyBatching Fig. 8 and 10).
 *
 * Contract:
 *  - Streams: each task is written when it starts, so memory does not grow
 *    with the run, into a temporary file beside the target (util/outfile.h):
 *    timeline_close(t, 1) renames it into place, timeline_close(t, 0)
 *    removes it, so a failed run leaves an existing timeline as it was.
 */
#ifndef SB_TIMELINE_H
#define SB_TIMELINE_H

#include <stddef.h>
#include "../../models/model.h"
#include "../../policies/policy.h"

struct timeline;

int timeline_open(const char *path, const struct mdl_model *m, uint32_t workers,
                  struct timeline **out, char *err, size_t errlen);
/* Appends one task (its start_ns/end_ns/device/cells must be set). 0 or -1 (I/O error). */
int timeline_task(struct timeline *t, const struct pol_task *task);
/* Finishes the file (keep = 1) or removes it (keep = 0). 0, or -1 with err on a write error. */
int timeline_close(struct timeline *t, int keep, char *err, size_t errlen);

#endif
