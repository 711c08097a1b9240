/* hwmodels/kv_link.h: what moving a request's KV cache from a prefill GPU to
 * a decode GPU costs (prefill/decode disaggregation, --kv-link; policies/
 * fleet.h moves it).
 *
 * A link is measured or modelled:
 *  - same-node: two GPUs of one node (NVLink), and
 *  - cross-node: one GPU on each of two nodes (the cluster's network), both
 *    from the NCCL send/recv times the Vidur project measured on DGX nodes
 *    (calib/tables/sendrecv-GPU.csv, scripts/vidur-import), interpolated by
 *    message size; past the largest message measured (64 MiB) the time grows
 *    at the median rate of the largest 40 messages (a transfer that large is
 *    bandwidth-bound: latency is 10 us of 2 ms);
 *  - model:GBPS:US: a named bandwidth (GB/s) and latency (us), such as an
 *    InfiniBand port's datasheet rate; reported as a model, not a measurement.
 * One move is one message a GPU pair (a TP replica's GPUs each send their
 * shard to their counterpart at once, each over its own link). */
#ifndef SB_KV_LINK_H
#define SB_KV_LINK_H

#include <stddef.h>
#include <stdint.h>
#include "op_profile.h"

struct kv_link {
	char label[1200];               /* what it is, where its numbers come from (results, --help) */
	int measured;
	struct opp_collective *prof;     /* measured: the send/recv profile (owned) ... */
	uint32_t nodes;                  /* ... the nodes the pair spans (1, 2), their rows in it ... */
	size_t row_first, rows;
	double max_bytes, max_ms;        /* ... its largest message */
	double tail_bytes_per_ms;        /* ... and the rate past it */
	double model_bytes_per_s, model_latency_s;   /* model: */
};

/* The link spec names (same-node, cross-node, model:GBPS:US); a measured one
 * reads tables_dir/sendrecv-GPU.csv. 0 and *out, or -1 with err. */
int kv_link_open(const char *spec, const char *tables_dir, const char *gpu, struct kv_link **out, char *err,
                 size_t errlen);
void kv_link_close(struct kv_link *l);

/* Seconds one message of bytes takes over l (bytes > 0); *extrapolated set
 * (never cleared) past the largest message measured. */
double kv_link_seconds(const struct kv_link *l, double bytes, int *extrapolated);

#endif
