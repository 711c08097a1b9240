/* sim/engine/clients.h: closed-loop clients, as benchmark tools drive a
 * server (vLLM's benchmark with a maximum concurrency, GuideLLM's
 * concurrent mode): N clients each send a request, wait for its answer,
 * think for a fixed time, and send the next. The engine asks the set for
 * the earliest pending request; every finished request makes its client
 * send the next one think_ns after the finish, until `limit` requests were
 * sent. All N send their first request at 0 s.
 *
 * Lockstep (MLPerf's multi-stream, docs/SCENARIOS.md): the N clients are
 * one stream sending queries of N samples; the next query's N are sent
 * together think_ns after the last sample of the one before is answered.
 *
 * Contract: requests are numbered in the order they are sent; with one
 * think time for every client, that is their arrival order, and the
 * pending ones come out earliest first (ties by id). The set owns its
 * pending requests (at most N), nothing else. */
#ifndef SB_ENG_CLIENTS_H
#define SB_ENG_CLIENTS_H

#include <stddef.h>
#include <stdint.h>
#include "../../traces/source.h"

struct eng_clients {
	struct trc_request *pending;   /* min-heap by (arrival_ns, id); owned */
	size_t n, cap;
	uint64_t sent, limit;          /* requests sent so far, and at most */
	int64_t think_ns;
	int lockstep;                  /* the next query's samples wait for the whole of the last one */
	uint64_t answered;             /* requests answered so far (lockstep) */
};

/* n clients (n >= 1) sending at most limit requests in all; their first
 * ones, drawn from src, arrive at 0. 0, or -1 (out of memory). */
int eng_clients_init(struct eng_clients *c, uint32_t n, int64_t think_ns, uint64_t limit, struct trc_source *src);
void eng_clients_fini(struct eng_clients *c);

/* A request finished at finish_ns: its client's next one, drawn from src,
 * pending at finish_ns + think_ns (unless the limit is reached); in
 * lockstep, once every sample sent is answered, the next query's. */
void eng_clients_answered(struct eng_clients *c, int64_t finish_ns, struct trc_source *src);

/* The earliest pending request into *out: 1, or 0 when none is pending. */
int eng_clients_pop(struct eng_clients *c, struct trc_request *out);

#endif
