/* sim/cli/sweep_pool.h: a sweep's run (sweep_pool.c): its state, and its points, or one check
 * a configuration, run through the process pool with a progress line on stderr. */
#ifndef SB_SWEEP_POOL_H
#define SB_SWEEP_POOL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

struct sweep_spec;
struct sweep_db;

struct sweep_run {
	const struct sweep_spec *spec;
	const char *exe;
	const char *db_path;
	struct sweep_db *db;
	size_t *todo;                 /* point indices (or, checking, one point per configuration) */
	size_t ntodo, next;
	int checking;                 /* 1: --dry-run each configuration; 0: run points */
	size_t ran, skipped, failed;
	int bad_input;                /* some child exited 2 */
	char first_error[1024];
	int quiet, tty;
	double t0, last_line_s;
	int last_decile;
	char err[512];
	volatile sig_atomic_t *stop;  /* the signal that asked the sweep to stop (0: none) */
};

/* Seconds on the monotonic clock. */
double sweep_now_s(void);
/* Runs r's points to do (r->checking: a dry run each) on jobs processes: pp_run's answer
 * (1: stopped by *r->stop's signal; -1 with r->err). */
int sweep_pool(struct sweep_run *r, unsigned jobs);
/* The progress line (final: the last one, ending a redrawn line), and its clearing. */
void sweep_progress(struct sweep_run *r, int final);
void sweep_clear_line(const struct sweep_run *r);

#endif
