/* sim/engine/clients.c: closed-loop clients (clients.h). */
#include "clients.h"

#include <stdlib.h>

static int clients_before(const struct trc_request *a, const struct trc_request *b)
{
	return a->arrival_ns < b->arrival_ns || (a->arrival_ns == b->arrival_ns && a->id < b->id);
}

static void clients_push(struct eng_clients *c, const struct trc_request *r)
{
	size_t i = c->n++;
	c->pending[i] = *r;
	while (i > 0 && clients_before(&c->pending[i], &c->pending[(i - 1) / 2])) {
		struct trc_request t = c->pending[i];
		c->pending[i] = c->pending[(i - 1) / 2];
		c->pending[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

/* The next request's id and lengths from src, arriving at arrival_ns. */
static void clients_send(struct eng_clients *c, int64_t arrival_ns, struct trc_source *src)
{
	struct trc_request r;
	trc_source_next_lengths(src, &r);
	r.arrival_ns = arrival_ns;
	clients_push(c, &r);
	c->sent++;
}

int eng_clients_init(struct eng_clients *c, uint32_t n, int64_t think_ns, uint64_t limit, struct trc_source *src)
{
	c->pending = malloc((size_t)n * sizeof *c->pending);
	if (!c->pending)
		return -1;
	c->n = 0;
	c->cap = n;
	c->sent = 0;
	c->limit = limit;
	c->think_ns = think_ns;
	c->lockstep = 0;
	c->answered = 0;
	for (uint32_t i = 0; i < n && c->sent < c->limit; i++)
		clients_send(c, 0, src);
	return 0;
}

void eng_clients_fini(struct eng_clients *c)
{
	free(c->pending);
	c->pending = NULL;
	c->n = 0;
}

void eng_clients_answered(struct eng_clients *c, int64_t finish_ns, struct trc_source *src)
{
	c->answered++;
	if (c->lockstep) {           /* the query is answered when its last sample is */
		for (uint32_t i = 0; c->answered == c->sent && i < c->cap && c->sent < c->limit; i++)
			clients_send(c, finish_ns + c->think_ns, src);
		return;
	}
	/* a client has at most one request out: at most cap are pending */
	if (c->sent < c->limit && c->n < c->cap)
		clients_send(c, finish_ns + c->think_ns, src);
}

int eng_clients_pop(struct eng_clients *c, struct trc_request *out)
{
	if (c->n == 0)
		return 0;
	*out = c->pending[0];
	c->pending[0] = c->pending[--c->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < c->n && clients_before(&c->pending[l], &c->pending[m]))
			m = l;
		if (l + 1 < c->n && clients_before(&c->pending[l + 1], &c->pending[m]))
			m = l + 1;
		if (m == i)
			break;
		struct trc_request t = c->pending[i];
		c->pending[i] = c->pending[m];
		c->pending[m] = t;
		i = m;
	}
	return 1;
}
