/* sim/cli/sweep_pool.c: a sweep's points (or its configurations' checks) run through the
 * process pool, with its progress line (sweep_pool.h). */
#include "sweep_pool.h"

#define SWEEP_LINE_PROGRESS_S 60.0     /* without a terminal: a progress line at least this often */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "procpool.h"
#include "sweep_spec.h"
#include "../store/sweep_db.h"
#include "../../util/errkind.h"

double sweep_now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

/* "1h02m", "3m05s", "12s" */
static void sweep_fmt_duration(char *buf, size_t len, double s)
{
	long t = (long)(s + 0.5);
	if (t >= 3600)
		snprintf(buf, len, "%ldh%02ldm", t / 3600, t % 3600 / 60);
	else if (t >= 60)
		snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
	else
		snprintf(buf, len, "%lds", t);
}

struct sweep_job {                /* one child: a point's run or a configuration's check */
	struct sweep_point pt;
	char **argv;                  /* owned, NULL-terminated; strings owned except args borrowed from pt */
	size_t nowned;                /* argv[0..nowned) are owned strings */
};

static void sweep_job_free(struct sweep_job *j)
{
	if (!j)
		return;
	if (j->argv)
		for (size_t i = 0; i < j->nowned; i++)
			free(j->argv[i]);
	free(j->argv);
	sweep_point_free(&j->pt);
	free(j);
}

static char *sweep_strcat2(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s%s", a, b);
	return s;
}

/* "--sweep-name=NAME": the sweep file's name without its directory and .sweep. NULL: no memory. */
static char *sweep_name_arg(const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	size_t len = strlen(name);
	if (len > 6 && strcmp(name + len - 6, ".sweep") == 0)
		len -= 6;
	char *arg = malloc(sizeof "--sweep-name=" + len);
	if (arg)
		sprintf(arg, "--sweep-name=%.*s", (int)len, name);
	return arg;
}

/* The label of the point's value on the variant axis; NULL when the sweep has none. */
static const char *sweep_variant_label(const struct sweep_spec *spec, const struct sweep_point *pt)
{
	for (size_t a = 0; a < spec->naxes; a++)
		if (strcmp(spec->axes[a].name, "variant") == 0)
			return spec->axes[a].values[pt->choice[a]].label;
	return NULL;
}

/* argv of a point's run: simbatch run --db=.. --sweep-point=KEY --sweep-name=NAME
 * [--sweep-variant=LABEL] --quiet OPTS; or, checking, simbatch run --dry-run --no-db OPTS.
 * The name and label are stored with the run for readers (not part of the key). */
static struct sweep_job *sweep_job_make(const struct sweep_run *r, size_t index)
{
	size_t k = 0;
	struct sweep_job *j = calloc(1, sizeof *j);
	if (!j || sweep_point_make(r->spec, index, &j->pt) != 0)
		goto fail;
	if (!(j->argv = calloc(j->pt.nargs + 8, sizeof *j->argv)))
		goto fail;
	if (!(j->argv[k++] = strdup("simbatch")) || !(j->argv[k++] = strdup("run")))
		goto fail;
	const char *variant = sweep_variant_label(r->spec, &j->pt);
	if (r->checking) {
		if (!(j->argv[k++] = strdup("--dry-run")) || !(j->argv[k++] = strdup("--no-db")))
			goto fail;
	} else if (!(j->argv[k++] = sweep_strcat2("--db=", r->db_path)) ||
	           !(j->argv[k++] = sweep_strcat2("--sweep-point=", j->pt.key)) ||
	           !(j->argv[k++] = sweep_name_arg(r->spec->path)) ||
	           (variant && !(j->argv[k++] = sweep_strcat2("--sweep-variant=", variant))) ||
	           !(j->argv[k++] = strdup("--quiet"))) {
		goto fail;
	}
	j->nowned = k;
	for (size_t i = 0; i < j->pt.nargs; i++)
		j->argv[k++] = j->pt.args[i];
	return j;
fail:
	if (j)
		j->nowned = j->argv ? k : 0;
	sweep_job_free(j);
	return NULL;
}

/* The key of a point without its seed: names a configuration in messages. */
static void sweep_config_name(const struct sweep_point *p, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < p->nargs && used < len; i++)
		if (strncmp(p->args[i], "--seed=", 7) != 0)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "", p->args[i] + 2);
}

static int sweep_next(void *ud, struct pp_job *job, char *err, size_t errlen)
{
	struct sweep_run *r = ud;
	while (r->next < r->ntodo) {
		struct sweep_job *j = sweep_job_make(r, r->todo[r->next++]);
		if (!j) {
			err_memory(err, errlen, "out of memory");
			return -1;
		}
		if (!r->checking) {
			/* another sweep on the same database may have stored it meanwhile */
			int has = sweep_db_has_point(r->db, j->pt.key, err, errlen);
			if (has != 0) {
				sweep_job_free(j);
				if (has < 0)
					return -1;
				r->skipped++;
				continue;
			}
		}
		job->argv = j->argv;
		job->ctx = j;
		job->capture_stdout = 0;
		return 1;
	}
	return 0;
}

void sweep_clear_line(const struct sweep_run *r)
{
	if (r->tty && !r->quiet)
		fputs("\r\033[K", stderr);
}

static void sweep_done(void *ud, void *ctx, const struct pp_result *res)
{
	struct sweep_run *r = ud;
	struct sweep_job *j = ctx;
	if (res->exit_code == 0) {
		r->ran++;
		sweep_job_free(j);
		return;
	}
	r->failed++;
	r->bad_input |= res->exit_code == 2;
	/* the child's own one-line message, without its "simbatch: " prefix */
	char msg[512], what[256], cfg[512];
	const char *e = res->errtext;
	if (strncmp(e, "simbatch: ", 10) == 0)
		e += 10;
	size_t n = strcspn(e, "\n");
	snprintf(msg, sizeof msg, "%.*s", (int)(n < sizeof msg ? n : sizeof msg - 1), e);
	if (res->signal)
		snprintf(what, sizeof what, "killed by signal %d", res->signal);
	else
		snprintf(what, sizeof what, "exit %d", res->exit_code);
	if (r->checking) {
		sweep_config_name(&j->pt, cfg, sizeof cfg);
		if (!r->first_error[0])
			snprintf(r->first_error, sizeof r->first_error, "%.200s: configuration '%.300s': %.400s", r->spec->path, cfg,
			         msg[0] ? msg : what);
	} else if (!*r->stop) {
		/* a run interrupted by the sweep's own stop is expected, not a failure to report */
		sweep_clear_line(r);
		fprintf(stderr, "simbatch: sweep point '%s' failed (%s)%s%s\n", j->pt.key, what, msg[0] ? ": " : "", msg);
	}
	sweep_job_free(j);
}

void sweep_progress(struct sweep_run *r, int final)
{
	if (r->quiet || r->checking)
		return;
	double now = sweep_now_s(), el = now - r->t0;
	size_t finished = r->ran + r->failed + r->skipped;
	double frac = r->ntodo ? (double)finished / r->ntodo : 1;
	int decile = (int)(frac * 10);
	if (!r->tty && !final && decile == r->last_decile && now - r->last_line_s < SWEEP_LINE_PROGRESS_S)
		return;
	r->last_decile = decile;
	r->last_line_s = now;
	char elapsed[32], eta[32] = "--", bar[21];
	sweep_fmt_duration(elapsed, sizeof elapsed, el);
	size_t worked = r->ran + r->failed;
	if (worked > 0 && r->next > 0) {
		/* remaining runs at the pace of this session's completed runs */
		double left = (double)(r->ntodo - finished);
		sweep_fmt_duration(eta, sizeof eta, left * el / (double)worked);
	}
	int fill = (int)(frac * 20);
	for (int i = 0; i < 20; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[20] = '\0';
	char extra[64] = "";
	if (r->failed)
		snprintf(extra, sizeof extra, ", %zu failed", r->failed);
	fprintf(stderr, "%ssweep [%s] %zu/%zu (%.0f%%) elapsed %s, ETA %s%s%s", r->tty ? "\r\033[K" : "",
	        bar, finished, r->ntodo, 100 * frac, elapsed, final ? "0s" : eta, extra, r->tty && !final ? "" : "\n");
	fflush(stderr);
}

static void sweep_tick(void *ud)
{
	sweep_progress(ud, 0);
}

int sweep_pool(struct sweep_run *r, unsigned jobs)
{
	static char *const worker[] = { "simbatch", PP_WORKER_SUBCOMMAND, NULL };
	struct pp_config pc = {
		.exe = r->exe, .jobs = jobs, .next = sweep_next, .done = sweep_done, .tick = sweep_tick,
		.tick_ms = 250, .ud = r, .stop = r->stop, .worker_argv = worker,
	};
	return pp_run(&pc, r->err, sizeof r->err);
}

