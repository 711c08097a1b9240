/* sim/engine/latency.h: the per-run latency cache. Asks the hardware model once per
 * (node type, batch) and answers the policy's and the engine's questions from
 * a table, so the hot loop never calls a hardware model.
 *
 * Contract:
 *  - Built for batch sizes (cells) 1..max_cells; asking outside that range is
 *    a bug (asserted). max_cells is the policy's max batch, or more for tree
 *    models, whose lone request may run a level wider than the max batch.
 *  - graph_ns(b, in, out) is the latency of a padded graph batch: every node
 *    at batch b, encoder nodes in times, decoder nodes out times, pass nodes
 *    at b requests of in tokens
 *    (LazyBatching Algorithm 1 summed at batch b instead of 1); for a tree
 *    model, every level of a tree with in leaves at b times its width.
 *  - The hardware model must outlive the cache: pass nodes are priced at a
 *    token count when a batch first runs it.
 *  - Values are the hardware model's seconds rounded to the nearest ns, at
 *    least 1 ns, so simulated time always advances.
 */
#ifndef SB_LATENCY_H
#define SB_LATENCY_H

#include <stddef.h>
#include <stdint.h>
#include "../../models/model.h"
#include "../../hwmodels/hwmodel.h"
#include "../../policies/policy.h"

struct eng_latency;

/* Longest one node (at any batch) or one cold start may take, in seconds:
 * every hardware model's bound on a task (hwmodel.h, HW_MAX_TASK_S, and its
 * reason). Sums beyond it saturate (util/ns_math.h) and the engine refuses a
 * task that would end past the clock's range. */
#define ENG_MAX_NODE_S HW_MAX_TASK_S

/* max_len: the longest request's input length, which sizes a pass node's
 * tables (tokens up to max_cells * max_len); 0 for a model without one.
 * max_out: the longest output, which sizes the decoder step's table over P. */
struct eng_latency *eng_latency_create(const struct mdl_model *m, const struct hw_model *hw,
                                       uint32_t max_cells, uint32_t max_len, uint32_t max_out, char *err,
                                       size_t errlen);
void eng_latency_destroy(struct eng_latency *l);
uint32_t eng_latency_max_cells(const struct eng_latency *l);
int64_t eng_latency_node_ns(void *l, uint32_t node_type, uint32_t batch);
int64_t eng_latency_graph_ns(void *l, uint32_t batch, uint32_t input_len, uint32_t output_len);
/* What the device takes (the engine's prices). node_ns answers a decoder node
 * with terms over P and S (models/model.h) at the model's estimate lengths,
 * which is what a policy estimates with; the device runs each member at its
 * own: the node with every member at P = S = 1 (the device table) plus what
 * each member's own lengths add, when the hardware model prices shapes and
 * the lengths change its price (step_varies); graph_ns counts the same. The
 * device table, for a caller's own inline lookups: node type t at batch b is
 * table[t * stride + b]. */
const int64_t *eng_latency_device_table(const struct eng_latency *l, size_t *stride);
int eng_latency_step_varies(const struct eng_latency *l, uint32_t node_type);
/* Whether a step_varies type's price changes with its members' step (P), not only their input (S). */
int eng_latency_step_on_p(const struct eng_latency *l, uint32_t node_type);
/* Whether a type's price at cells depends on its members' own lengths (a
 * pass node, or a step_varies decoder node at a batch where the lengths can
 * change its price): table[type * stride + cells], stride as the device
 * table's. Elsewhere the device table is the price. */
const uint8_t *eng_latency_by_members_table(const struct eng_latency *l);
/* A NODE task's node of this type as the device runs it (pol_latency.task_node_ns), its
 * members passes decoder steps past their next node's (a run's later passes). */
int64_t eng_latency_task_node_ns(void *l, uint32_t node_type, uint32_t n, struct pol_request *const *reqs,
                                 uint32_t cells, uint32_t passes);
/* A step_varies type run by reqs[0..n), each passes decoder steps past its
 * next node's step. */
int64_t eng_latency_step_ns(const struct eng_latency *l, uint32_t node_type, uint32_t n,
                            struct pol_request *const *reqs, uint32_t passes);
/* Pass node types (models/model.h): the node at a batch's summed tokens,
 * and one request's own part (its attention) at its length. */
struct pol_pass_part eng_latency_pass_part(void *l, uint32_t node_type, uint64_t tokens);
struct pol_pass_part eng_latency_member_part(void *l, uint32_t node_type, uint32_t len);
/* Both for one request of len tokens, the node's time (asked once a length). */
int64_t eng_latency_pass_single_ns(void *l, uint32_t node_type, uint32_t len);
/* The estimates a policy sees (pol_env.lat), all from this table. */
struct pol_latency eng_latency_estimates(struct eng_latency *l);

/* The hardware model's cold start (hwmodel.h): what the first task to run
 * node_type pays after its device sat idle idle_ns. Sampled from the model
 * at idle times of 0.5 ms to 1 s (1-2-5 steps) and linear in between, from
 * 0 at no idle; flat beyond 1 s. eng_latency_has_cold: whether any node
 * type pays anything (else the engine skips the bookkeeping). */
int eng_latency_has_cold(const struct eng_latency *l);
int64_t eng_latency_cold_ns(const struct eng_latency *l, uint32_t node_type, int64_t idle_ns);

#endif
