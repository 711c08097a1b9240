/* sim/cli/search_front.c: `simbatch search FILE --front=CSV` (search_front.h): the tokens/s/user
 * against tokens/s/GPU front GPU vendors and AIConfigurator plot, over the searched configurations.
 *
 * Each configuration with a capacity is run once more at that capacity (the highest rate it serves within
 * the search's SLOs, so every point is one the SLOs allow), as a child `simbatch run --json --no-db`:
 * tokens_per_s_per_user is 1000 / its mean TPOT in ms (the speed one user sees), tokens_per_s_per_gpu the
 * run's own output_tokens_per_s_per_gpu (docs/METRICS.md: output tokens a second over the measured span,
 * divided by its GPUs, replicas x --tp, prefill and decode pools together). A point is on the front when no
 * other has at least as much of both and more of one. */
#include "search_front.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli.h"
#include "procpool.h"
#include "search_config.h"
#include "../study/scenario.h"
#include "../../models/model.h"
#include "../../policies/driver.h"
#include "../../util/errkind.h"
#include "../../util/json_read.h"
#include "../../util/options.h"
#include "../../util/outfile.h"

struct front_point {
	size_t row;                   /* the configuration */
	double tpot_mean_ms, tokens_per_s, tokens_per_s_per_user, tokens_per_s_per_gpu;
	int on_front, exit_code;
	char rate_arg[48], requests_arg[48], warmup_arg[48];
	char error[512];
};

struct front_run {
	struct search_run *r;
	struct front_point *pts;
	size_t npts, next;
	uint64_t requests;
	char *argv[SEARCH_MAX_OPTS + 16];
	struct search_config c;       /* the configuration of the job being started */
	char preset_args[2][48];      /* --preset's targets as run options */
	char failure[512];
};

int search_front_check(const struct search_spec *s, const char *path, char *err, size_t errlen)
{
	char dir[600];
	const char *slash = strrchr(path, '/');
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) + 1 : 1, slash ? path : ".");
	if (access(dir, W_OK | X_OK) != 0) {
		snprintf(err, errlen, "--front=%s: its folder %s is not there or not writable", path, dir);
		return -1;
	}
	const struct search_axis *ax = search_axis(s, "model");
	const char *fixed = search_fixed_value(s, "model", NULL);
	size_t n = ax ? ax->nvalues : 1;
	for (size_t i = 0; i < n; i++) {
		const char *name = ax ? ax->values[i] : fixed ? fixed : "transformer";
		struct mdl_model *m = NULL;
		if (mdl_load(name, &m, err, errlen) != 0)
			return -1;
		int llm = m->is_llm;
		mdl_free(m);
		if (!llm) {
			snprintf(err, errlen, "--front draws output tokens a second against TPOT; model %s is node-level", name);
			return -1;
		}
	}
	return 0;
}

/* A run option of the configuration's, or 0 for capacity's own (the preset's targets come in its place). */
static int front_run_option(struct front_run *f, const char *opt, size_t *k)
{
	size_t ncap;
	const struct opt_def *cap = cmd_capacity_options(&ncap);
	if (strcmp(opt, "--preset=mlperf-llama2-70b") == 0) {   /* capacity_targets.c's: MLPerf's Llama-2-70B server */
		const struct study_scenario_def *server = study_scenario_of(SCN_SERVER);
		snprintf(f->preset_args[0], sizeof f->preset_args[0], "--ttft-slo=%g", server->ttft_ms);
		snprintf(f->preset_args[1], sizeof f->preset_args[1], "--tpot-slo=%g", server->tpot_ms);
		f->argv[(*k)++] = f->preset_args[0];
		f->argv[(*k)++] = f->preset_args[1];
		return 0;
	}
	for (size_t i = 0; i < ncap; i++) {
		size_t n = strlen(cap[i].name);
		if (strncmp(opt + 2, cap[i].name, n) == 0 && (opt[2 + n] == '=' || opt[2 + n] == 0))
			return 0;
	}
	return 1;
}

static int front_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct front_run *f = ud;
	if (f->next >= f->npts)
		return 0;
	struct front_point *p = &f->pts[f->next++];
	search_config_free(&f->c);
	if (search_config_make(f->r->spec, p->row, &f->c, err, errlen) != 0)
		return -1;
	size_t k = 0;
	f->argv[k++] = "simbatch";
	f->argv[k++] = "run";
	f->argv[k++] = "--json";
	f->argv[k++] = "--no-db";
	f->argv[k++] = p->rate_arg;
	f->argv[k++] = p->requests_arg;
	f->argv[k++] = p->warmup_arg;
	for (size_t o = 0; o < f->c.nopts; o++)
		if (front_run_option(f, f->c.opts[o], &k))
			f->argv[k++] = f->c.opts[o];
	f->argv[k] = NULL;
	job->argv = f->argv;           /* posix_spawn copies argv */
	job->ctx = p;
	job->capture_stdout = 1;
	return 1;
}

static void front_done(void *ud, void *ctx, const struct pp_result *res)
{
	(void)ud;
	struct front_point *p = ctx;
	struct json_doc *d = res->exit_code == 0 ? json_doc_parse(res->out) : NULL;
	p->exit_code = res->exit_code;
	if (!d || json_doc_number(d, "tpot_ms", "mean", -1, &p->tpot_mean_ms) != 0) {
		const char *e = strncmp(res->errtext, "simbatch: ", 10) == 0 ? res->errtext + 10 : res->errtext;
		snprintf(p->error, sizeof p->error, "%.*s", (int)strcspn(e, "\n"), *e ? e : "a run printed no summary");
		p->exit_code = p->exit_code ? p->exit_code : 1;
	} else if (json_doc_number(d, NULL, "output_tokens_per_s", -1, &p->tokens_per_s) != 0 ||
	           json_doc_number(d, NULL, "output_tokens_per_s_per_gpu", -1, &p->tokens_per_s_per_gpu) != 0) {
		snprintf(p->error, sizeof p->error, "a run's summary has no output_tokens_per_s (docs/METRICS.md)");
		p->exit_code = 1;
	} else {
		p->tokens_per_s_per_user = p->tpot_mean_ms > 0 ? 1000 / p->tpot_mean_ms : 0;
	}
	json_doc_free(d);
}

static void front_print(FILE *f, const struct front_run *fr, int csv)
{
	char label[1024];
	if (csv)
		fprintf(f, "config,gpus,rate_rps,tpot_mean_ms,output_tokens_per_s,tokens_per_s_per_user,"
		        "tokens_per_s_per_gpu,pareto\n");
	else
		fprintf(f, "tokens/s/user (1000 / mean TPOT) against output tokens/s/GPU, each configuration at its capacity "
		        "(* on the Pareto front)\n  tokens/s/user  tokens/s/GPU  GPUs  req/s  configuration\n");
	for (size_t i = 0; i < fr->npts; i++) {
		const struct front_point *p = &fr->pts[i];
		const struct study_search_row *w = &fr->r->plan.rows[p->row];
		search_label(fr->r->spec, p->row, label, sizeof label);
		if (csv) {
			fputc('"', f);
			for (const char *c = label; *c; c++)
				fputs(*c == '"' ? "\"\"" : (char[2]){ *c, 0 }, f);
			fprintf(f, "\",%u,%.10g,%.10g,%.10g,%.10g,%.10g,%d\n", w->gpus, w->capacity, p->tpot_mean_ms,
			        p->tokens_per_s, p->tokens_per_s_per_user, p->tokens_per_s_per_gpu, p->on_front);
		} else {
			fprintf(f, "%c %13.1f %13.1f %5u %6.3g  %s\n", p->on_front ? '*' : ' ', p->tokens_per_s_per_user,
			        p->tokens_per_s_per_gpu, w->gpus, w->capacity, label);
		}
	}
}

/* Every point's run, jobs at a time: 0, or an exit code with err. */
static int front_simulate(struct front_run *f, const char *exe, unsigned jobs, char *err, size_t errlen)
{
	uint64_t warmup = f->requests / 10;
	for (size_t i = 0; i < f->npts; i++) {
		struct front_point *p = &f->pts[i];
		snprintf(p->rate_arg, sizeof p->rate_arg, "--rate=%.10g", f->r->plan.rows[p->row].capacity);
		snprintf(p->requests_arg, sizeof p->requests_arg, "--requests=%llu", (unsigned long long)f->requests);
		snprintf(p->warmup_arg, sizeof p->warmup_arg, "--warmup=%llu", (unsigned long long)warmup);
	}
	struct pp_config pc = { .exe = exe, .jobs = jobs, .next = front_next, .done = front_done, .ud = f };
	int rc = pp_run(&pc, err, errlen);
	search_config_free(&f->c);
	if (rc != 0)
		return CLI_FAILED;
	for (size_t i = 0; i < f->npts; i++)
		if (f->pts[i].exit_code != 0) {
			snprintf(err, errlen, "--front: %s", f->pts[i].error);
			return f->pts[i].exit_code == 2 ? CLI_BAD_INPUT : CLI_FAILED;
		}
	return CLI_OK;
}

int search_front(struct search_run *r, const char *path, uint64_t requests, const char *exe, unsigned jobs, int text,
                 char *err, size_t errlen)
{
	struct front_run f = { .r = r, .requests = requests };
	struct outfile out = { 0 };
	int rc = CLI_FAILED;
	f.pts = calloc(r->spec->nconfigs, sizeof *f.pts);
	if (!f.pts) {
		err_memory(err, errlen, "out of memory");
		return CLI_FAILED;
	}
	for (size_t i = 0; i < r->spec->nconfigs; i++)
		if (r->plan.rows[i].status == STUDY_SR_OK)
			f.pts[f.npts++].row = i;
	if (!f.npts) {
		snprintf(err, errlen, "--front: no configuration has a capacity to run at");
		free(f.pts);
		return CLI_FAILED;
	}
	if ((rc = front_simulate(&f, exe, jobs, err, errlen)) != CLI_OK)
		goto done;
	double *user = calloc(f.npts, sizeof *user), *gpu = calloc(f.npts, sizeof *gpu);
	int *on = calloc(f.npts, sizeof *on);
	if (!user || !gpu || !on) {
		err_memory(err, errlen, "out of memory");
		rc = CLI_FAILED;
	} else {
		for (size_t i = 0; i < f.npts; i++) {
			user[i] = f.pts[i].tokens_per_s_per_user;
			gpu[i] = f.pts[i].tokens_per_s_per_gpu;
		}
		study_front_mark(user, gpu, f.npts, on);
		for (size_t i = 0; i < f.npts; i++)
			f.pts[i].on_front = on[i];
	}
	free(user);
	free(gpu);
	free(on);
	if (rc != CLI_OK)
		goto done;
	if (outfile_open(&out, path, err, errlen) != 0) {
		rc = cli_exit_status();
		goto done;
	}
	front_print(out.f, &f, 1);
	if (outfile_commit(&out, err, errlen) != 0) {
		rc = cli_exit_status();
		goto done;
	}
	if (text)
		front_print(stdout, &f, 0);
done:
	free(f.pts);
	return rc;
}
