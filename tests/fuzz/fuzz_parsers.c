/* tests/fuzz/fuzz_parsers.c: libFuzzer targets for every file format simbatch
 * reads. One source, one executable per parser (FUZZ_PARSER selects it; see
 * tests/fuzz/meson.build and docs/FUZZING.md). Each input is handed to the
 * parser as a file (an in-memory file by its /proc/self/fd path, as a user's
 * file would be), and whatever the parser makes of it is released: the
 * sanitizers catch a crash, a leak, an overflow or undefined behaviour; a
 * parser may refuse any input, but must refuse it cleanly. */
#define _GNU_SOURCE               /* memfd_create */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../../hwmodels/caltab.h"
#include "../../hwmodels/op_profile.h"
#include "../../hwmodels/engine_profile.h"
#include "../../hwmodels/moe_route.h"
#include "../../hwmodels/node_table.h"
#include "../../hwmodels/npu_config.h"
#include "../../models/model.h"
#include "../../sim/cli/cli.h"
#include "../../util/options.h"
#include "../../sim/cli/sweep_spec.h"
#include "../../sim/cli/search_spec.h"
#include "../../sim/cli/search_results.h"
#include "../../traces/workload.h"

enum { TRACE, MODEL, NODE_TABLE, NPU_CONFIG, CALTAB, SWEEP, LENGTHS, OP_PROFILE, ALLREDUCE, ENGINE, SEARCH,
       SEARCH_RESULTS, ROUTING };

/* The input as a file: returns its path, valid while fd is open. */
static int fuzz_file(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
	int fd = memfd_create("fuzz", 0);
	if (fd < 0)
		abort();
	for (size_t done = 0; done < size;) {
		ssize_t w = write(fd, data + done, size - done);
		if (w <= 0)
			abort();
		done += (size_t)w;
	}
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

/* A results file's row, taken and checked as a search takes it (search_results_fn). */
static int fuzz_search_row(void *ctx, const char *key, const struct study_search_row *w, char *err, size_t errlen)
{
	(void)ctx;
	(void)err;
	(void)errlen;
	if (!*key || (w->status != STUDY_SR_OK && w->status != STUDY_SR_INFEASIBLE) || w->capacity < 0 || w->lo > w->hi)
		abort();                  /* search_results_read hands on only rows a search could have written */
	return 0;
}

static void fuzz_parse(const char *path)
{
	char err[1024];
	switch (FUZZ_PARSER) {
	case TRACE: {
		struct trc_trace *t = NULL;
		if (trc_trace_load(path, &t, err, sizeof err) == 0)
			trc_trace_free(t);
		break;
	}
	case MODEL: {
		struct mdl_model *m = NULL;
		if (mdl_load_file(path, &m, err, sizeof err) == 0)
			mdl_free(m);
		break;
	}
	case NODE_TABLE: {
		/* a table is checked against a model's node names: the LSTM's, and
		 * the '*' rows any model takes */
		static struct mdl_model *lstm;
		if (!lstm && mdl_load("lstm", &lstm, err, sizeof err) != 0)
			abort();
		struct hw_model *hw = NULL;
		if (hwtable_ops.open(path, lstm, &hw, err, sizeof err) == 0)
			hw_close(hw);
		break;
	}
	case NPU_CONFIG: {
		struct npu_config c;
		npu_config_load(path, &c, err, sizeof err);
		break;
	}
	case CALTAB: {
		struct caltab *t = NULL;
		if (caltab_read(path, &t, err, sizeof err) == 0)
			caltab_destroy(t);
		break;
	}
	case SWEEP: {
		size_t n;
		const struct opt_def *defs = cmd_run_options(&n);
		struct sweep_spec *s = NULL;
		if (sweep_spec_load(path, defs, n, &s, err, sizeof err) == 0)
			sweep_spec_free(s);
		break;
	}
	case OP_PROFILE: {
		struct op_profile *p = NULL;
		if (opp_load(path, &p, err, sizeof err) == 0)
			opp_free(p);
		break;
	}
	case ALLREDUCE: {
		struct opp_collective *a = NULL;
		if (opp_allreduce_load(path, &a, err, sizeof err) == 0)
			opp_collective_free(a);
		break;
	}
	case ENGINE: {
		struct eng_profile e;
		(void)eng_profile_load(path, &e, err, sizeof err);   /* a path: it holds a '/' */
		break;
	}
	case SEARCH: {
		struct search_spec *s = NULL;
		if (search_spec_load(path, &s, err, sizeof err) == 0)
			search_spec_free(s);
		break;
	}
	case SEARCH_RESULTS:
		search_results_read(path, 0, fuzz_search_row, NULL, NULL, err, sizeof err);
		break;
	case ROUTING: {
		/* a routing-skew file for Mixtral's 8 experts, top 2 */
		struct moe_route *r = NULL;
		if (moe_route_load(path, 8, 2, &r, err, sizeof err) == 0)
			moe_route_free(r);
		break;
	}
	case LENGTHS: {
		char spec[80];
		struct trc_lengths *d = NULL;
		snprintf(spec, sizeof spec, "file:%s", path);
		if (trc_lengths_parse(spec, &d, err, sizeof err) == 0)
			trc_lengths_free(d);
		break;
	}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_file(data, size, path, sizeof path);
	fuzz_parse(path);
	close(fd);
	return 0;
}
