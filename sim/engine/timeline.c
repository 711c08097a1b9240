/* sim/engine/timeline.c: Chrome trace-event JSON ("X" complete events, times in
 * microseconds with nanosecond decimals). See timeline.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "timeline.h"
#include "../../util/errkind.h"
#include "../../util/outfile.h"

struct timeline {
	struct outfile out;             /* renamed onto the target when the run succeeds */
	FILE *f;                        /* out.f */
	const struct mdl_model *model;  /* not owned: node names */
	int failed;                     /* a write failed */
};

int timeline_open(const char *path, const struct mdl_model *m, uint32_t workers,
                  struct timeline **out, char *err, size_t errlen)
{
	*out = NULL;
	struct timeline *t = calloc(1, sizeof *t);
	if (!t) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	t->model = m;
	if (outfile_open(&t->out, path, err, errlen) != 0) {
		free(t);
		return -1;
	}
	t->f = t->out.f;
	fprintf(t->f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n"
	        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"simbatch %s\"}}",
	        m->name);
	for (uint32_t d = 0; d < workers; d++)
		fprintf(t->f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
		        "\"args\":{\"name\":\"device %u\"}}", d, d);
	*out = t;
	return 0;
}

int timeline_task(struct timeline *t, const struct pol_task *task)
{
	/* an LLM's iteration runs the whole model, not one of its (no) node types */
	const char *cat = task->kind == POL_TASK_GRAPH ? "graph" : task->kind == POL_TASK_ITER ? "iteration" : "node";
	const char *name = task->kind == POL_TASK_NODE ? t->model->nodes[task->node_type].name : cat;
	fprintf(t->f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,"
	        "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"batch\":%u,\"requests\":[",
	        name, cat, task->device,
	        task->start_ns / 1e3, (task->end_ns - task->start_ns) / 1e3, task->cells);
	for (uint32_t i = 0; i < task->nreq; i++)
		fprintf(t->f, "%s%llu", i ? "," : "", (unsigned long long)task->reqs[i]->id);
	if (fputs("]}}", t->f) == EOF)
		t->failed = 1;
	/* the KV cache's occupancy over time, a counter track: what the
	 * iteration's device holds while it runs, none once it ends (a next
	 * iteration starting then sets it again, after this in the file) */
	if (task->kind == POL_TASK_ITER &&
	    fprintf(t->f, ",\n{\"name\":\"kv_blocks_held\",\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"args\":{\"device %u\":%llu}},"
	            "\n{\"name\":\"kv_blocks_held\",\"ph\":\"C\",\"pid\":1,\"ts\":%.3f,\"args\":{\"device %u\":0}}",
	            task->start_ns / 1e3, task->device, (unsigned long long)task->kv_blocks_held, task->end_ns / 1e3,
	            task->device) < 0)
		t->failed = 1;
	return t->failed ? -1 : 0;
}

int timeline_close(struct timeline *t, int keep, char *err, size_t errlen)
{
	if (!t)
		return 0;
	int rc = 0;
	if (keep && !t->failed) {
		fputs("\n]}\n", t->f);
		rc = outfile_commit(&t->out, err, errlen);
	} else {
		if (keep)
			err_io(err, errlen, "error writing --timeline-out '%s'", t->out.path);
		rc = keep ? -1 : 0;
		outfile_abort(&t->out);
	}
	free(t);
	return rc;
}
