/* traces/trace.c: what every trace reader (trace_csv.c, trace_mooncake.c)
 * shares: growing a trace's rows and releasing a loaded trace. */
#include <stdlib.h>
#include "workload.h"

/* Reallocates column col to ncap rows, or returns -1 from the caller. */
#define TRC_GROW_COLUMN(col, ncap)                                            \
	do {                                                                  \
		void *grown_ = realloc((col), (ncap) * sizeof *(col));        \
		if (!grown_)                                                  \
			return -1;                                            \
		(col) = grown_;                                               \
	} while (0)

/* Makes room for one more row, doubling the capacity; the optional columns only where the trace has them. */
int trc_trace_grow(struct trc_trace *t, size_t *cap)
{
	if (t->n < *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 1024;
	TRC_GROW_COLUMN(t->arrival_s, ncap);
	TRC_GROW_COLUMN(t->input_len, ncap);
	TRC_GROW_COLUMN(t->output_len, ncap);
	if (t->prefix_id) {
		TRC_GROW_COLUMN(t->prefix_id, ncap);
		TRC_GROW_COLUMN(t->prefix_len, ncap);
	}
	if (t->hash_start) {
		TRC_GROW_COLUMN(t->hash_start, ncap);
		TRC_GROW_COLUMN(t->hash_count, ncap);
	}
	if (t->session_id)
		TRC_GROW_COLUMN(t->session_id, ncap);
	if (t->inner_id) {
		TRC_GROW_COLUMN(t->inner_id, ncap);
		TRC_GROW_COLUMN(t->inner_len, ncap);
	}
	*cap = ncap;
	return 0;
}

void trc_trace_free(struct trc_trace *t)
{
	if (!t)
		return;
	free(t->arrival_s);
	free(t->input_len);
	free(t->output_len);
	free(t->prefix_id);
	free(t->session_id);
	free(t->inner_id);
	free(t->inner_len);
	free(t->prefix_len);
	free(t->hash_ids);
	free(t->hash_start);
	free(t->hash_count);
	free(t);
}
