/* sim/cli/report_overload.c: whether a run was saturated, and what an overloaded run's summary advises
 * (report.h), by the run's kind:
 * the lever that adds service where it lives (an LLM's replicas, a node-level model's workers) and
 * the one that lowers the load where the run has one (a generated rate; a replayed trace's arrivals
 * are its own, --rate is refused there, so it is replayed slower; a closed loop has clients). */
#include <math.h>
#include "report.h"

int report_saturated(const struct report_run *r)
{
	const struct drv_result *res = r->res;
	return res->busy_fraction > 0.99 && r->rate_rps > 0 && res->throughput_rps < 0.95 * r->rate_rps;
}

const char *report_lever(const struct report_run *r)
{
	int llm = r->res->llm, replay = isnan(r->arrival_cv);
	if (r->concurrency)
		return llm ? "add --replicas or lower --concurrency" : "add --workers or lower --concurrency";
	if (replay)
		return llm ? "add --replicas, or replay the trace slower with --trace-speedup below 1"
		           : "add --workers, or replay the trace slower with --trace-speedup below 1";
	return llm ? "add --replicas, or find the rate one holds with simbatch capacity" : "lower --rate or add --workers";
}

void report_overload_text(FILE *f, const struct report_run *r)
{
	const struct drv_result *res = r->res;
	/* an overloaded run's percentiles describe a growing queue, not a steady state */
	if (report_saturated(r))
		fprintf(f, "  SATURATED: served %.1f of %.6g req/s offered; the queue grew for the whole run, "
		        "so latencies depend on its length (%s)\n", res->throughput_rps, r->rate_rps, report_lever(r));
	/* the queue grew inside the run (util/overload.h), whatever the whole run's throughput says */
	if (res->overload.flagged)
		fprintf(f, "  OVERLOADED from %.1f s to %.1f s: the fewest requests in the system rose window after window "
		        "from %llu to %llu (flagged at %.1f s); arrivals outpaced service there (%s)\n",
		        res->overload.start_ns * 1e-9, res->overload.end_ns * 1e-9,
		        (unsigned long long)res->overload.floor_from, (unsigned long long)res->overload.floor_to,
		        res->overload.flagged_ns * 1e-9, report_lever(r));
}
