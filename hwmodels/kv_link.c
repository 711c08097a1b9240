/* hwmodels/kv_link.c: a KV move's price, measured or modelled (kv_link.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kv_link.h"
#include "../util/errkind.h"
#include "../util/text.h"

/* The largest messages whose median rate continues the table. Vidur's 40 largest send/recv sizes
 * span 61 to 64 MiB: all bandwidth-bound (a 2 KiB message takes 5-17 us, these 0.2-8.6 ms), and
 * single rows are noisy (64 MiB across H100 nodes 1.87 ms, 63.9 MiB 2.08 ms), so the median of 40
 * holds the rate within 1% (H100 across nodes: 34.9 GB/s over the last 40, 34.6 over the last
 * 100, 33.3 over the last 8). */
#define KV_LINK_TAIL_ROWS 40
#define KV_LINK_BYTES_PER_GB 1e9     /* units: GB/s as link datasheets state them (SI) */
#define KV_LINK_S_PER_US 1e-6

static int kv_link_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* model:GBPS:US */
static int kv_link_model(const char *spec, struct kv_link *l, char *err, size_t errlen)
{
	char buf[128];
	snprintf(buf, sizeof buf, "%s", spec + strlen("model:"));
	char *colon = strchr(buf, ':');
	double gbps, us;
	if (colon)
		*colon = '\0';
	if (!colon || txt_parse_double(buf, &gbps) != 0 || txt_parse_double(colon + 1, &us) != 0 || !isfinite(gbps) ||
	    !isfinite(us)) {
		snprintf(err, errlen, "--kv-link=%s: expected model:GBPS:US (a bandwidth in GB/s and a latency in us)", spec);
		return -1;
	}
	if (!(gbps > 0)) {
		snprintf(err, errlen, "--kv-link=%s: the bandwidth must be a positive number of GB/s, not %s", spec, buf);
		return -1;
	}
	if (us < 0) {
		snprintf(err, errlen, "--kv-link=%s: the latency must be 0 us or more, not %s", spec, colon + 1);
		return -1;
	}
	l->model_bytes_per_s = gbps * KV_LINK_BYTES_PER_GB;
	l->model_latency_s = us * KV_LINK_S_PER_US;
	snprintf(l->label, sizeof l->label, "modelled: %g GB/s, %g us a message (given, not measured)", gbps, us);
	return 0;
}

static int kv_link_measured(const char *spec, const char *tables_dir, const char *gpu, struct kv_link *l,
                            char *err, size_t errlen)
{
	char path[1024];
	if (!gpu || !gpu[0]) {
		snprintf(err, errlen, "--kv-link=%s needs a measured GPU's send/recv profile; this hardware has none "
		         "(gpu-h100 and gpu-a100 do), so give --kv-link=model:GBPS:US", spec);
		return -1;
	}
	if (snprintf(path, sizeof path, "%s/sendrecv-%s.csv", tables_dir, gpu) >= (int)sizeof path) {
		snprintf(err, errlen, "tables directory path too long");
		return -1;
	}
	FILE *probe = fopen(path, "r");
	if (!probe) {
		snprintf(err, errlen, "--kv-link=%s on %s needs a measured send/recv, and %s %s (give "
		         "--kv-link=model:GBPS:US)", spec, gpu, path,
		         errno == ENOENT ? "does not exist (none was measured for this GPU)" : err_strerror(errno));
		return -1;
	}
	fclose(probe);
	if (opp_sendrecv_load(path, &l->prof, err, errlen) != 0)
		return -1;
	l->measured = 1;
	l->nodes = strcmp(spec, "same-node") == 0 ? 1 : 2;
	if (!opp_collective_has(l->prof, l->nodes)) {
		snprintf(err, errlen, "%s holds no send/recv %s", path, l->nodes == 1 ? "within one node" : "across two nodes");
		return -1;
	}
	size_t first, n;
	opp_collective_rows(l->prof, l->nodes, &first, &n);
	l->row_first = first;
	l->rows = n;
	size_t k = n < KV_LINK_TAIL_ROWS ? n : KV_LINK_TAIL_ROWS;
	double rate[KV_LINK_TAIL_ROWS];
	for (size_t i = 0; i < k; i++)
		rate[i] = l->prof->bytes[first + n - k + i] / l->prof->ms[first + n - k + i];
	qsort(rate, k, sizeof rate[0], kv_link_cmp_double);
	l->tail_bytes_per_ms = k % 2 ? rate[k / 2] : 0.5 * (rate[k / 2 - 1] + rate[k / 2]);   /* their median */
	l->max_bytes = l->prof->bytes[first + n - 1];
	l->max_ms = l->prof->ms[first + n - 1];
	snprintf(l->label, sizeof l->label, "%s, measured: NCCL send/recv %s (%s; past %.0f MiB at %.1f GB/s)", spec,
	         l->nodes == 1 ? "within one node" : "between two nodes", path, l->max_bytes / (1024.0 * 1024.0),
	         l->tail_bytes_per_ms / OPP_S_PER_MS / KV_LINK_BYTES_PER_GB);
	return 0;
}

int kv_link_open(const char *spec, const char *tables_dir, const char *gpu, struct kv_link **out, char *err,
                 size_t errlen)
{
	*out = NULL;
	struct kv_link *l = calloc(1, sizeof *l);
	if (!l)
		return err_memory(err, errlen, "out of memory");
	int rc = strncmp(spec, "model:", 6) == 0 ? kv_link_model(spec, l, err, errlen)
	         : strcmp(spec, "same-node") == 0 || strcmp(spec, "cross-node") == 0
	         ? kv_link_measured(spec, tables_dir, gpu, l, err, errlen)
	         : (snprintf(err, errlen, "unknown --kv-link '%s' (known: same-node, cross-node, model:GBPS:US)", spec), -1);
	if (rc != 0) {
		kv_link_close(l);
		return -1;
	}
	*out = l;
	return 0;
}

void kv_link_close(struct kv_link *l)
{
	if (!l)
		return;
	opp_collective_free(l->prof);
	free(l);
}

double kv_link_seconds(const struct kv_link *l, double bytes, int *extrapolated)
{
	if (!l->measured)
		return l->model_latency_s + bytes / l->model_bytes_per_s;
	if (bytes <= l->max_bytes)
		return opp_collective_rows_ms(l->prof, l->row_first, l->rows, bytes, extrapolated) * OPP_S_PER_MS;
	*extrapolated = 1;
	return (l->max_ms + (bytes - l->max_bytes) / l->tail_bytes_per_ms) * OPP_S_PER_MS;
}
