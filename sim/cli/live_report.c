/* sim/cli/live_report.c: what a live run writes beside run's report (live_report.h). */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../util/outfile.h"
#include "../../util/errkind.h"
#include "cli.h"
#include "live_report.h"
#include "../study/kernel_profile.h"
#include "../study/run.h"
#include "../engine/latency.h"
#include "../engine/timeline.h"
#include "../../runtime/kernels.h"
#include "../../runtime/live.h"
#include "../../runtime/profile.h"
#include "../../runtime/cpu_contention.h"

int live_write_timeline(struct timeline *tl, const struct live_result *lr, uint32_t max_batch)
{
	struct pol_request *reqs = calloc(max_batch, sizeof *reqs);
	struct pol_request **ptrs = calloc(max_batch, sizeof *ptrs);
	int rc = reqs && ptrs ? 0 : -1;
	for (size_t i = 0; i < lr->ntasks_logged && rc == 0; i++) {
		const struct live_task *lt = &lr->task_log[i];
		for (uint32_t j = 0; j < lt->nreq; j++) {
			reqs[j].id = lr->task_ids[lt->first_id + j];
			ptrs[j] = &reqs[j];
		}
		struct pol_task t = { .kind = lt->kind, .node_type = lt->node_type, .nreq = lt->nreq, .reqs = ptrs,
		                      .device = lt->device, .cells = lt->cells, .start_ns = lt->start_ns,
		                      .end_ns = lt->end_ns };
		rc = timeline_task(tl, &t);
	}
	free(reqs);
	free(ptrs);
	return rc;
}

int live_write_outputs(const char *path, const struct live_result *lr, char *err, size_t errlen)
{
	struct outfile of;
	if (outfile_open(&of, path, err, errlen) != 0)
		return -1;
	FILE *f = of.f;
	fprintf(f, "# id input_len output_len | emitted tokens | final vector\n");
	for (uint64_t i = 0; i < lr->n; i++) {
		const struct live_request *q = &lr->reqs[i];
		if (q->status != LIVE_DONE || !q->values)
			continue;
		fprintf(f, "%llu %u %u |", (unsigned long long)i, q->input_len, q->output_len);
		for (uint32_t t = 0; t < q->ntokens; t++)
			fprintf(f, " %d", q->tokens[t]);
		fprintf(f, " |");
		for (uint32_t j = 0; j < q->nvalues; j++)
			fprintf(f, " %.9g", q->values[j]);
		fputc('\n', f);
	}
	return outfile_commit(&of, err, errlen);
}

int live_write_issue(const char *path, const struct live_result *lr, char *err, size_t errlen)
{
	struct outfile of;
	if (outfile_open(&of, path, err, errlen) != 0)
		return -1;
	FILE *f = of.f;
	fprintf(f, "id,scheduled_s,issue_s,late_us,status\n");
	static const char *const status[] = { "not_issued", "done", "dropped", "abandoned" };
	for (uint64_t i = 0; i < lr->n; i++) {
		const struct live_request *q = &lr->reqs[i];
		if (q->issue_ns < 0)
			continue;
		fprintf(f, "%llu,%.9f,%.9f,%.3f,%s\n", (unsigned long long)i, q->arrival_ns * 1e-9, q->issue_ns * 1e-9,
		        (q->issue_ns - q->arrival_ns) * 1e-3, status[q->status]);
	}
	return outfile_commit(&of, err, errlen);
}

/* ---- the summary's live part ---- */

struct live_late {
	double p50_us, p99_us, max_us;
};

static int live_lateness(const struct live_result *lr, struct live_late *o)
{
	memset(o, 0, sizeof *o);
	int64_t *v = malloc((lr->issued ? lr->issued : 1) * sizeof *v);
	size_t n = 0;
	if (!v)
		return -1;
	for (uint64_t i = 0; i < lr->n; i++)
		if (lr->reqs[i].issue_ns >= 0)
			v[n++] = lr->reqs[i].issue_ns - lr->reqs[i].arrival_ns;
	metrics_sort_ns(v, n);
	if (n) {
		o->p50_us = v[(n - 1) / 2] * 1e-3;
		o->p99_us = v[(size_t)ceil(0.99 * n) - 1] * 1e-3;
		o->max_us = v[n - 1] * 1e-3;
	}
	free(v);
	return 0;
}

static void live_json_escape(const char *in, char *out, size_t len)
{
	size_t j = 0;
	for (size_t i = 0; in[i] && j + 2 < len; i++) {
		if (in[i] == '"' || in[i] == '\\')
			out[j++] = '\\';
		out[j++] = (unsigned char)in[i] < 0x20 ? ' ' : in[i];
	}
	out[j] = '\0';
}

static void live_cfg(struct run_extra *x, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void live_cfg(struct run_extra *x, const char *key, const char *fmt, ...)
{
	if (x->ncfg == RUN_EXTRA_MAX)
		return;
	va_list ap;
	va_start(ap, fmt);
	snprintf(x->cfg_key[x->ncfg], sizeof x->cfg_key[0], "%s", key);
	vsnprintf(x->cfg_value[x->ncfg], sizeof x->cfg_value[0], fmt, ap);
	va_end(ap);
	x->ncfg++;
}

/* How long the run's threads waited for a core, as JSON members and a text line, and whether a
 * simulation of this run on a CPU calibration is void (cpu_contention.h). The verdict needs the
 * workers' counters and the CPU device: a GPU worker's CPU time is not what its calibration timed. */
static void live_contention(const struct opt_set *o, const struct live_result *lr, struct run_extra *x, char *json,
                            size_t jsonlen, char *text, size_t textlen)
{
	double cpu_ms = lr->workers_cpu_ns * 1e-6, wait_ms = lr->workers_runq_wait_ns * 1e-6;
	double share = cpu_ms > 0 ? wait_ms / cpu_ms : 0;
	double psi = lr->psi_ok && lr->end_ns > 0 ? lr->psi_some_us * 1e3 / (double)lr->end_ns : -1;
	int judged = lr->sched_ok && cpu_ms > 0 && strcmp(opt_str(o, "device"), "cpu") == 0;
	int void_run = judged && share > CPU_CONTENTION_VOID_SHARE;
	char psi_json[32] = "null", psi_text[96] = "", void_text[160] = "";
	if (void_run)
		snprintf(void_text, sizeof void_text, "; VOID as a check of the simulation: the wait is above %.0f%% of "
		         "the CPU time, which is all a CPU calibration times", 100 * CPU_CONTENTION_VOID_SHARE);
	if (psi >= 0) {
		snprintf(psi_json, sizeof psi_json, "%.6f", psi);
		snprintf(psi_text, sizeof psi_text, "; machine: a task waited for a CPU during %.0f%% of the run (PSI)",
		         100 * psi);
	}
	if (!lr->sched_ok) {
		snprintf(json, jsonlen, "\"cpu_contention\":{\"workers_cpu_ms\":null,\"workers_runq_wait_ms\":null,"
		         "\"runq_wait_vs_cpu\":null,\"scheduler_runq_wait_ms\":null,\"psi_cpu_some_share\":%s,"
		         "\"void_above\":%g,\"sim_comparison_void\":null}", psi_json, CPU_CONTENTION_VOID_SHARE);
		snprintf(text, textlen, "  contention no per-thread counters (/proc/thread-self/schedstat)%s\n", psi_text);
		return;
	}
	snprintf(json, jsonlen, "\"cpu_contention\":{\"workers_cpu_ms\":%.6f,\"workers_runq_wait_ms\":%.6f,"
	         "\"runq_wait_vs_cpu\":%.6f,\"scheduler_runq_wait_ms\":%.6f,\"psi_cpu_some_share\":%s,"
	         "\"void_above\":%g,\"sim_comparison_void\":%s}", cpu_ms, wait_ms, share,
	         lr->scheduler_runq_wait_ns * 1e-6, psi_json, CPU_CONTENTION_VOID_SHARE,
	         judged ? (void_run ? "true" : "false") : "null");
	snprintf(text, textlen, "  contention workers waited %.1f ms for a core beside %.1f ms on one (%.1f%%), the "
	         "scheduler %.1f ms%s%s\n", wait_ms, cpu_ms, 100 * share, lr->scheduler_runq_wait_ns * 1e-6, psi_text,
	         void_text);
	live_cfg(x, "live.runq-wait-vs-cpu", "%.6f", share);
	if (judged)
		live_cfg(x, "live.sim-comparison-void", "%d", void_run);
}

int live_extra(const struct opt_set *o, const struct live_result *lr, int stop_sig, struct run_extra *x, char *err,
               size_t errlen)
{
	struct live_late late;
	if (live_lateness(lr, &late) != 0)
		goto oom;
	double tasks = lr->run.tasks ? (double)lr->run.tasks : 1.0;
	double dec_us = lr->decide_ns / tasks * 1e-3, done_us = lr->complete_ns / tasks * 1e-3;
	double move_us = lr->move_ns / tasks * 1e-3, dev_ms = lr->device_ns / tasks * 1e-6;
	/* how fast the kernels ran against the latencies --hw gave (1 = as the
	 * simulator would have priced these very tasks): a drifting or stale
	 * calibration shows here, apart from any queueing effect */
	double est_ms = (double)lr->estimate_ns * 1e-6, busy_ms = (double)lr->busy_ns * 1e-6;
	double vs_hw = est_ms > 0 ? busy_ms / est_ms : 0;
	double warm_vs_hw = lr->warm_estimate_ns > 0 ? (double)lr->warm_busy_ns / (double)lr->warm_estimate_ns : 0;
	char dev[512], kern[400];
	live_json_escape(lr->device_desc, dev, sizeof dev);
	live_json_escape(lr->model_desc, kern, sizeof kern);
	live_cfg(x, "live.partial", "%d", lr->partial);
	live_cfg(x, "live.device", "%s", lr->device_desc);
	live_cfg(x, "live.kernels", "%s", lr->model_desc);
	live_cfg(x, "live.dropped", "%llu", (unsigned long long)lr->dropped);
	live_cfg(x, "live.abandoned", "%llu", (unsigned long long)lr->abandoned);
	live_cfg(x, "live.issue-late-p50-us", "%.3f", late.p50_us);
	live_cfg(x, "live.issue-late-p99-us", "%.3f", late.p99_us);
	live_cfg(x, "live.issue-late-max-us", "%.3f", late.max_us);
	live_cfg(x, "live.overhead-decide-us", "%.3f", dec_us);
	live_cfg(x, "live.overhead-complete-us", "%.3f", done_us);
	live_cfg(x, "live.overhead-move-us", "%.3f", move_us);
	live_cfg(x, "live.setup-s", "%.3f", lr->setup_s);
	live_cfg(x, "live.busy-vs-hw", "%.6f", vs_hw);
	live_cfg(x, "live.warm-busy-vs-hw", "%.6f", warm_vs_hw);
	char cont_json[512], cont_text[512];
	live_contention(o, lr, x, cont_json, sizeof cont_json, cont_text, sizeof cont_text);
	if (asprintf(&x->json,
	             "\"live\":true,\"partial\":%s,\"dropped\":%llu,\"abandoned\":%llu,"
	             "\"device\":\"%s\",\"kernels\":\"%s\",\"gemm\":\"%s\",\"weight_bytes\":%llu,\"setup_s\":%.6f,"
	             "\"max_queue\":%s,\"max_outstanding\":%u,\"realtime\":%s,"
	             "\"issue_late_us\":{\"p50\":%.3f,\"p99\":%.3f,\"max\":%.3f},"
	             "\"overhead_us\":{\"decide\":%.3f,\"complete\":%.3f,\"move\":%.3f,\"total\":%.3f},"
	             "\"device_ms_per_task\":%.6f,"
	             "\"hw_estimate\":{\"busy_ms\":%.6f,\"estimate_ms\":%.6f,\"busy_vs_hw\":%.6f,"
	             "\"warm_tasks\":%llu,\"warm_busy_vs_hw\":%.6f},%s",
	             lr->partial ? "true" : "false", (unsigned long long)lr->dropped, (unsigned long long)lr->abandoned,
	             dev, kern, opt_str(o, "gemm"), (unsigned long long)lr->weight_bytes,
	             lr->setup_s, opt_str(o, "max-queue"), lr->max_outstanding, lr->realtime ? "true" : "false", late.p50_us, late.p99_us, late.max_us,
	             dec_us, done_us, move_us, dec_us + done_us + move_us, dev_ms, busy_ms, est_ms,
	             vs_hw, (unsigned long long)lr->warm_tasks,
	             warm_vs_hw, cont_json) < 0) {
		x->json = NULL;
		goto oom;
	}
	if (asprintf(&x->text,
	             "  live       %s; %s\n"
	             "  issue      late p50 %.1f us, p99 %.1f us, max %.1f us; %llu dropped (max queue %s)%s\n"
	             "  overhead   per task: policy %.1f us, completion %.1f us, gather/scatter %.1f us; device %.3f ms\n"
	             "  vs --hw    tasks took %.3fx what --hw=%s gives for them (busy %.1f ms, estimated %.1f ms); "
	             "the %llu warm ones (started within 0.5 ms of the previous) %.3fx\n%s",
	             lr->device_desc, lr->model_desc, late.p50_us, late.p99_us, late.max_us,
	             (unsigned long long)lr->dropped, opt_str(o, "max-queue"),
	             lr->partial ? "; STOPPED (partial run)" : "", dec_us, done_us, move_us, dev_ms, vs_hw,
	             opt_str(o, "hw"), busy_ms, est_ms, (unsigned long long)lr->warm_tasks, warm_vs_hw, cont_text) < 0) {
		x->text = NULL;
		goto oom;
	}
	x->exit_code = lr->partial ? 128 + stop_sig : CLI_OK;
	return 0;
oom:
	err_memory(err, errlen, "out of memory");
	return -1;
}

