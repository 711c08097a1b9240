/* traces/trace.c: what every trace reader (trace_csv.c, trace_mooncake.c)
 * shares: growing a trace's rows and releasing a loaded trace. */
#include <stdlib.h>
#include "workload.h"

/* Makes room for one more row, doubling the capacity. */
int trc_trace_grow(struct trc_trace *t, size_t *cap)
{
	if (t->n < *cap)
		return 0;
	size_t ncap = *cap ? 2 * *cap : 1024;
	double *a = realloc(t->arrival_s, ncap * sizeof *a);
	if (!a)
		return -1;
	t->arrival_s = a;
	uint32_t *in = realloc(t->input_len, ncap * sizeof *in);
	if (!in)
		return -1;
	t->input_len = in;
	uint32_t *outl = realloc(t->output_len, ncap * sizeof *outl);
	if (!outl)
		return -1;
	t->output_len = outl;
	if (t->prefix_id) {
		uint64_t *pid = realloc(t->prefix_id, ncap * sizeof *pid);
		if (!pid)
			return -1;
		t->prefix_id = pid;
		uint32_t *plen = realloc(t->prefix_len, ncap * sizeof *plen);
		if (!plen)
			return -1;
		t->prefix_len = plen;
	}
	if (t->hash_start) {
		size_t *hs = realloc(t->hash_start, ncap * sizeof *hs);
		if (!hs)
			return -1;
		t->hash_start = hs;
		uint32_t *hc = realloc(t->hash_count, ncap * sizeof *hc);
		if (!hc)
			return -1;
		t->hash_count = hc;
	}
	if (t->session_id) {
		uint64_t *sid = realloc(t->session_id, ncap * sizeof *sid);
		if (!sid)
			return -1;
		t->session_id = sid;
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
	free(t->prefix_len);
	free(t->hash_ids);
	free(t->hash_start);
	free(t->hash_count);
	free(t);
}
