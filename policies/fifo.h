/* policies/fifo.h: an intrusive FIFO of requests through pol_request.pol_next,
 * shared by the policies that queue whole requests. O(1), no allocation.
 *
 * Contract: a request is in at most one FIFO (pol_next is its link); the
 * FIFO owns no request and frees nothing; pop on an empty FIFO returns NULL.
 */
#ifndef SB_POL_FIFO_H
#define SB_POL_FIFO_H

#include <stddef.h>
#include "policy.h"

struct pol_fifo {
	struct pol_request *head, *tail;  /* not owned */
	size_t len;
};

static inline void pol_fifo_push(struct pol_fifo *f, struct pol_request *r)
{
	r->pol_next = NULL;
	if (f->tail)
		f->tail->pol_next = r;
	else
		f->head = r;
	f->tail = r;
	f->len++;
}

/* Puts r at the head (a request sent back to wait, first in line again). */
static inline void pol_fifo_push_front(struct pol_fifo *f, struct pol_request *r)
{
	r->pol_next = f->head;
	f->head = r;
	if (!f->tail)
		f->tail = r;
	f->len++;
}

static inline struct pol_request *pol_fifo_pop(struct pol_fifo *f);

/* Takes r, whose predecessor is prev (NULL: r is the head), out of f. */
static inline void pol_fifo_unlink(struct pol_fifo *f, struct pol_request *prev, struct pol_request *r)
{
	if (!prev) {
		pol_fifo_pop(f);
		return;
	}
	prev->pol_next = r->pol_next;
	if (f->tail == r)
		f->tail = prev;
	r->pol_next = NULL;
	f->len--;
}

static inline struct pol_request *pol_fifo_pop(struct pol_fifo *f)
{
	struct pol_request *r = f->head;
	if (!r)
		return NULL;
	f->head = r->pol_next;
	if (!f->head)
		f->tail = NULL;
	r->pol_next = NULL;
	f->len--;
	return r;
}

#endif
