/* policies/batch_table.h: LazyBatching's BatchTable (Sec. IV-B, Fig. 10), the
 * stack that tracks one device's sub-batches for node-level scheduling.
 *
 * The top entry is the active batch. An entry below it is a sub-batch that
 * was preempted at a node boundary so that newer inputs (pushed above it) can
 * catch up; when the two top entries reach the same node they merge and run
 * as one batch from there on.
 *
 * Entries are keyed by the node *type* their members run next, not by the
 * unrolled position. For a static graph (Fig. 10's nodes A..H, ResNet) the two
 * are the same thing. For a dynamic graph the decoder cell of step t of one
 * request and of step t' of another share weights and run as one batch, as
 * in cellular batching; keying by position would only ever batch requests
 * whose input lengths are equal, because the positions of two requests with
 * different input lengths never line up again after the encoder.
 *
 * Members of one entry can part ways after a node (one request's encoder
 * ends while another's goes on). The entry is then split by next node type,
 * and the parts are stacked with the lowest node type on top: node types are
 * numbered in graph order, so the part that is behind runs first and merges
 * with the others as it reaches their node type, the same catch-up as a push.
 *
 * Contract:
 *  - A table is owned by one device's scheduler and changed only at a node
 *    boundary: while a task from it runs, only bt_task_done may be called.
 *  - Members are not owned; every member is a distinct request that has not
 *    completed. Every member of an entry has pol_req_node == entry key.
 *  - The table holds at most cap requests in all, so any two entries can
 *    merge without exceeding it; a task is limited to max_cells cells by
 *    bt_issue (a lone member may exceed it, as policy.h allows).
 *  - Entries occupy consecutive ranges of members[], bottom entry first, so a
 *    merge of neighbours costs O(1) and the top entry's range is the tail.
 */
#ifndef SB_BATCH_TABLE_H
#define SB_BATCH_TABLE_H

#include <stdint.h>
#include "policy.h"

struct bt_entry {
	uint32_t key;        /* node type every member runs next */
	uint32_t first;      /* index of its first member in members[] */
	uint32_t n;          /* members (>= 1) */
};

struct batch_table {
	struct pol_request **members;  /* owned array of cap slots; the requests are not owned */
	struct bt_entry *entries;      /* owned array of cap slots; [0] bottom, [depth-1] top */
	uint32_t cap;                  /* most requests the table holds */
	uint32_t depth;                /* entries on the stack */
	uint32_t nmembers;             /* requests held */
	uint32_t issued;               /* members of the top entry in the running task; 0 when idle */
	uint64_t preemptions;          /* pushes that stacked a new entry on an active batch */
	uint64_t merges;               /* two entries merged into one (including a push joining the top) */
	uint64_t splits;               /* entries split because members' next node types differed */
	uint32_t max_depth;            /* deepest the stack has been */
	int unit_cells;                /* set by the owner: every member runs one cell a node (no tree), so
	                                * bt_issue takes the top's first max_cells members without summing */
};

/* Allocates room for cap requests. 0, or -1 on allocation failure. */
int bt_init(struct batch_table *bt, uint32_t cap);
void bt_fini(struct batch_table *bt);

/* Requests the table can still take. */
static inline uint32_t bt_room(const struct batch_table *bt) { return bt->cap - bt->nmembers; }
static inline const struct bt_entry *bt_top(const struct batch_table *bt)
{
	return bt->depth ? &bt->entries[bt->depth - 1] : NULL;
}

/* Pushes n <= bt_room requests (pending inputs) as a new sub-batch on top.
 * Requests are grouped by next node type; a group whose type equals the top
 * entry's joins it (a merge), any other becomes a new entry (a preemption of
 * the active batch when the table was not empty). The table must be idle. */
void bt_push(struct batch_table *bt, struct pol_request *const *reqs, uint32_t n);

/* Fills a NODE task with the top entry's members, at most max_cells cells
 * (at least one member). When the entry holds more, it is split and only the
 * part issued stays on top. Returns 1, or 0 when the table is empty. */
int bt_issue(struct batch_table *bt, uint32_t max_cells, struct pol_task *task);

/* After the caller advanced the issued members by one node: drops the ones
 * that completed, splits the top entry by next node type, merges neighbouring
 * entries that run the same node type (Fig. 10: the two top entries reaching
 * the same node), and, when the entry below the top is behind it (a lower node
 * type; only after a split at bt_issue), lets that entry run first. The task's
 * finished and respanned counts (policy.h) spare the looks at every member
 * when no one finished or left the run's segment. */
void bt_task_done(struct batch_table *bt, const struct pol_task *t);

#endif
