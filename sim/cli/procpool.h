/* sim/cli/procpool.h: runs child processes (simbatch runs) N at a time, capturing
 * each one's stderr (and stdout when asked), for sweeps and capacity search.
 *
 * Separate processes rather than threads: a run is the same program a user
 * types, with its own option parsing, memory and failure isolation, and a
 * killed parent leaves only runs that either finished (and stored themselves
 * in one transaction) or never stored anything.
 *
 * Workers (cfg->worker_argv): instead of a process per job, each of the jobs
 * slots keeps one process that takes job after job, which saves a short
 * run most of its cost (starting a process, linking its libraries, faulting
 * in fresh memory: about 3 ms of a 6-9 ms sweep point, bench/README.md). A
 * job is then the worker's call of the program's own entry with the job's
 * argv (pp_worker_serve), so it parses its options and runs as it would in
 * a process of its own; a worker that dies fails only the job it was running,
 * and the next job gets a fresh worker. Protocol, both halves in procpool.c:
 * the parent writes a job to the worker's stdin as its argc in decimal and a
 * newline, then each argument NUL-terminated; the worker ends each job by
 * writing a NUL byte, its exit status in decimal and a newline to stderr, so
 * the job's stderr is everything before the NUL. The worker's stdin while a
 * job runs is /dev/null, as a spawned job's is.
 *
 * Contract:
 *  - pp_run asks cfg->next for jobs while fewer than cfg->jobs children run,
 *    and calls cfg->done exactly once per started child, after it exited and
 *    both its pipes were drained (so a chatty child can never deadlock the
 *    pool). cfg->tick, when set, is called at least every tick_ms while
 *    children run (progress bars).
 *  - When *cfg->stop becomes non-zero (a signal handler sets it) no new job
 *    starts, running children get SIGTERM, and pp_run returns 1 once all have
 *    been reaped. Children stay in the caller's process group, so killing the
 *    group kills them too.
 *  - Returns 0 when next ran dry and every child was reaped, 1 when stopped,
 *    -1 with err when a child could not be started or next failed (children
 *    already running are still reaped and reported first).
 */
#ifndef SB_PROCPOOL_H
#define SB_PROCPOOL_H

#include <signal.h>
#include <stddef.h>

struct pp_job {                  /* filled by next() */
	char *const *argv;           /* NULL-terminated; argv[0] is shown in messages; caller-owned until done() */
	void *ctx;                   /* handed back to done() */
	int capture_stdout;          /* 1: collect stdout; 0: stdout goes to /dev/null */
};

struct pp_result {
	int exit_code;               /* when it exited normally, else -1 */
	int signal;                  /* the signal that killed it, else 0 */
	const char *out;             /* captured stdout, NUL-terminated ("" when not captured) */
	size_t outlen;
	const char *errtext;         /* captured stderr, NUL-terminated, truncated to PP_STDERR_MAX */
};

#define PP_STDOUT_MAX (4u << 20)  /* bytes of stdout kept per child; the rest is read and dropped */
#define PP_STDERR_MAX (64u << 10)

struct pp_config {
	const char *exe;             /* program to execute (e.g. /proc/self/exe resolved) */
	unsigned jobs;               /* children at a time, >= 1 */
	/* 1: *job filled; 0: no more jobs; -1: stop with an error (message in err) */
	int (*next)(void *ud, struct pp_job *job, char *err, size_t errlen);
	void (*done)(void *ud, void *ctx, const struct pp_result *r);
	void (*tick)(void *ud);      /* optional */
	unsigned tick_ms;            /* 0: 250 */
	void *ud;
	volatile sig_atomic_t *stop; /* optional */
	/* optional: run the jobs in workers started with this argv (NULL-terminated;
	 * the program is exe); jobs must not ask for capture_stdout */
	char *const *worker_argv;
};

int pp_run(const struct pp_config *cfg, char *err, size_t errlen);

/* This program's own path (/proc/self/exe), what the pool starts children
 * of: 0, or -1 with err. */
int pp_self_exe(char *buf, size_t len, char *err, size_t errlen);

/* The worker's half: reads jobs from stdin until it ends, runs each as
 * entry(argc, argv) and ends it as the protocol above says. 0 when stdin
 * ended, 2 when a job was malformed. */
int pp_worker_serve(int (*entry)(int argc, char **argv));

/* `simbatch run-worker`: the program as a worker (sim/cli/main.c) */
#define PP_WORKER_SUBCOMMAND "run-worker"

#endif
