/* traces/trace.c: a loaded trace's release, whichever reader made it
 * (trace_csv.c, trace_mooncake.c). */
#include <stdlib.h>
#include "workload.h"

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
