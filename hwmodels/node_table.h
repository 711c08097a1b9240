/* hwmodels/node_table.h: the node latency table hardware model (--hw=FILE,
 * DESIGN.md section 4): measured or hand-written latencies per (node type,
 * batch size), interpolated in between.
 *
 * Contract:
 *  - hwtable_ops.open takes a path and a model (required: the table is
 *    checked against the model's node names) and refuses a malformed file with
 *    "FILE:LINE: problem" in err. The instance copies what it needs; the model
 *    must outlive it (hw_model.model is not owned).
 *  - node_cost answers only inside each node's listed batch range; outside it
 *    is an error naming the file, the node and the range.
 *  - A table knows no breakdown: compute_seconds = memory_seconds = 0 and
 *    bound = HW_COMPUTE_BOUND.
 */
#ifndef SB_HW_NODE_TABLE_H
#define SB_HW_NODE_TABLE_H

#include <stddef.h>
#include "hwmodel.h"

/* The header line every table starts with (after comments and blank lines). */
#define HWTABLE_HEADER "node,batch,latency_s"

/* Returns 1 when the first line of path that is neither blank nor a comment is
 * the table header (fields compared after trimming blanks), 0 when it is
 * something else or the file has no such line, -1 with err when the file
 * cannot be read. *line is set to that line's 1-based number (0 when the file
 * has none), so a caller can name it. */
int hwtable_sniff(const char *path, unsigned long *line, char *err, size_t errlen);

extern const struct hw_ops hwtable_ops;

#endif
