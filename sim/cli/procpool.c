/* sim/cli/procpool.c: a small process pool on posix_spawn and poll (procpool.h). */
#include "procpool.h"
#include "../../util/errkind.h"
#include "../../util/grow.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

struct pp_buf {
	char *data;
	size_t len, cap, max;        /* max: bytes kept; more is read and dropped */
};

struct pp_child {
	pid_t pid;
	int fd[2];                   /* stdout, stderr read ends; -1 once at EOF */
	struct pp_buf buf[2];
	void *ctx;
	int busy;                    /* running a job (a spawned child always is) */
	int in_fd;                   /* a worker's stdin, write end; -1 otherwise */
	int marker;                  /* a worker: 1 between a job's NUL and its newline */
	int marker_status;           /* the exit status read after the NUL */
	int ending;                  /* a worker told to end (its stdin closed) after its last job */
};

static int pp_buf_add(struct pp_buf *b, const char *data, size_t n)
{
	if (b->len + 1 >= b->max)
		return 0;
	if (n > b->max - 1 - b->len)
		n = b->max - 1 - b->len;
	if (GROW(b->data, b->cap, b->len + n + 1, 1024) != 0)
		return -1;
	memcpy(b->data + b->len, data, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static void pp_child_release(struct pp_child *c)
{
	for (int k = 0; k < 2; k++) {
		if (c->fd[k] >= 0)
			close(c->fd[k]);
		free(c->buf[k].data);
	}
	if (c->in_fd >= 0)
		close(c->in_fd);
	memset(c, 0, sizeof *c);
	c->fd[0] = c->fd[1] = c->in_fd = -1;
}

/* Starts one child running argv (a job, or a worker when worker is set: its
 * stdin a pipe whose write end the child slot keeps); 0, or -1 with err
 * (nothing left open). */
static int pp_spawn(const struct pp_config *cfg, char *const *argv, int capture_stdout, int worker,
                    struct pp_child *c, char *err, size_t errlen)
{
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 }, in[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int rc, fa_ok = 0, attr_ok = 0;

	memset(c, 0, sizeof *c);
	c->fd[0] = c->fd[1] = c->in_fd = -1;
	/* close-on-exec: no child inherits another child's pipes */
	if ((capture_stdout && pipe2(out, O_CLOEXEC) != 0) || pipe2(errp, O_CLOEXEC) != 0 ||
	    (worker && pipe2(in, O_CLOEXEC) != 0)) {
		rc = errno;
		goto fail;
	}
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		goto fail;
	fa_ok = 1;
	if ((rc = posix_spawnattr_init(&attr)) != 0)
		goto fail;
	attr_ok = 1;
	/* the parent may block signals around its bookkeeping; children start clean */
	sigemptyset(&none);
	if ((rc = posix_spawnattr_setsigmask(&attr, &none)) != 0 ||
	    (rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK)) != 0 ||
	    (rc = worker ? posix_spawn_file_actions_adddup2(&fa, in[0], 0)
	                 : posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
	    (rc = capture_stdout ? posix_spawn_file_actions_adddup2(&fa, out[1], 1)
	                         : posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, errp[1], 2)) != 0)
		goto fail;
	if ((rc = posix_spawn(&c->pid, cfg->exe, &fa, &attr, argv, environ)) != 0)
		goto fail;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (capture_stdout)
		close(out[1]);
	close(errp[1]);
	if (worker)
		close(in[0]);
	c->fd[0] = out[0];
	c->fd[1] = errp[0];
	c->in_fd = in[1];
	c->buf[0].max = PP_STDOUT_MAX;
	c->buf[1].max = PP_STDERR_MAX;
	return 0;
fail:
	snprintf(err, errlen, "cannot start %s: %s", cfg->exe, err_strerror(rc));
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	for (int k = 0; k < 2; k++) {
		if (out[k] >= 0)
			close(out[k]);
		if (errp[k] >= 0)
			close(errp[k]);
		if (in[k] >= 0)
			close(in[k]);
	}
	c->pid = 0;
	return -1;
}

/* Writes all n bytes; 0, or -1 (the reader is gone). */
static int pp_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Hands a job to an idle worker (the protocol of procpool.h). A worker that
 * is gone fails the job when it is reaped. */
static void pp_send_job(struct pp_child *c, const struct pp_job *job)
{
	size_t argc = 0;
	char head[32];
	while (job->argv[argc])
		argc++;
	int n = snprintf(head, sizeof head, "%zu\n", argc);
	int ok = pp_write_all(c->in_fd, head, (size_t)n) == 0;
	for (size_t i = 0; ok && i < argc; i++)
		ok = pp_write_all(c->in_fd, job->argv[i], strlen(job->argv[i]) + 1) == 0;
	c->busy = 1;
	c->ctx = job->ctx;
	if (!ok) {                        /* it cannot read: make sure it ends, to be reaped */
		kill(c->pid, SIGKILL);
		close(c->in_fd);
		c->in_fd = -1;
	}
}

static void pp_report(const struct pp_config *cfg, struct pp_child *c, int exit_code, int sig)
{
	struct pp_result r = {
		.exit_code = exit_code,
		.signal = sig,
		.out = c->buf[0].data ? c->buf[0].data : "",
		.outlen = c->buf[0].len,
		.errtext = c->buf[1].data ? c->buf[1].data : "",
	};
	cfg->done(cfg->ud, c->ctx, &r);
	c->busy = 0;
	c->ctx = NULL;
	for (int k = 0; k < 2; k++) {
		c->buf[k].len = 0;
		if (c->buf[k].data)
			c->buf[k].data[0] = '\0';
	}
}

/* Reaps child c (its pipes at EOF) and reports the job it was running: a
 * worker that ends in the middle of a job fails it (an exit 0 there is a
 * failure too, reported as exit -1). 0, or -1 with err when a worker told to
 * end did not end cleanly: what it does at exit (a leak checker's report,
 * say) would otherwise go unseen. */
static int pp_finish(const struct pp_config *cfg, struct pp_child *c, char *err, size_t errlen)
{
	int status = 0, rc = 0;
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (c->busy) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		if (c->in_fd >= 0 && code == 0)
			code = -1;
		pp_report(cfg, c, code, WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	} else if (c->ending && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		snprintf(err, errlen, "a worker (%s) ended with %s %d after its last job: %.300s", cfg->exe,
		         WIFEXITED(status) ? "exit" : "signal", WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
		         c->buf[1].data ? c->buf[1].data : "");
		rc = -1;
	}
	pp_child_release(c);
	return rc;
}

/* A worker's stderr: the job's text up to a NUL, then its exit status and a
 * newline end the job. */
static void pp_worker_read(const struct pp_config *cfg, struct pp_child *c, const char *p, size_t n)
{
	while (n > 0) {
		if (!c->marker) {
			const char *nul = memchr(p, '\0', n);
			size_t text = nul ? (size_t)(nul - p) : n;
			if (pp_buf_add(&c->buf[1], p, text) != 0)
				c->buf[1].max = 0;
			p += text;
			n -= text;
			if (nul) {
				c->marker = 1;
				c->marker_status = 0;
				p++;
				n--;
			}
			continue;
		}
		char ch = *p++;
		n--;
		if (ch >= '0' && ch <= '9' && c->marker_status < 1000)
			c->marker_status = c->marker_status * 10 + (ch - '0');
		else if (ch == '\n') {
			c->marker = 0;
			if (c->busy)
				pp_report(cfg, c, c->marker_status, 0);
		}
	}
}

/* Reads what poll found ready on each child's pipes (a worker's results, a
 * child's output kept) and finishes each child whose pipes both closed: 0, or
 * -1 when finishing one failed (err). */
static int pp_drain(const struct pp_config *cfg, struct pp_child *kids, unsigned jobs, int workers,
                    const struct pollfd *pfd, nfds_t n, char *err, size_t errlen)
{
	int failed = 0;
	for (unsigned i = 0; i < jobs; i++) {
		struct pp_child *c = &kids[i];
		if (c->pid <= 0)
			continue;
		for (int k = 0; k < 2; k++) {
			if (c->fd[k] < 0)
				continue;
			for (nfds_t j = 0; j < n; j++) {
				if (pfd[j].fd != c->fd[k] || !pfd[j].revents)
					continue;
				char chunk[8192];
				ssize_t got = read(c->fd[k], chunk, sizeof chunk);
				if (got > 0) {
					if (workers && k == 1)
						pp_worker_read(cfg, c, chunk, (size_t)got);
					else if (pp_buf_add(&c->buf[k], chunk, (size_t)got) != 0)
						c->buf[k].max = 0;     /* out of memory: keep draining, keep nothing more */
				} else if (got == 0 || errno != EINTR) {
					close(c->fd[k]);
					c->fd[k] = -1;
				}
			}
		}
		if (c->fd[0] < 0 && c->fd[1] < 0 && pp_finish(cfg, c, err, errlen) != 0)
			failed = 1;
	}
	return failed ? -1 : 0;
}

int pp_run(const struct pp_config *cfg, char *err, size_t errlen)
{
	unsigned jobs = cfg->jobs ? cfg->jobs : 1;
	int tick_ms = cfg->tick_ms ? (int)cfg->tick_ms : 250;
	int workers = cfg->worker_argv != NULL;
	struct pp_child *kids = calloc(jobs, sizeof *kids);
	struct pollfd *pfd = calloc(2 * (size_t)jobs, sizeof *pfd);
	int more = 1, stopping = 0, failed = 0;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;
	if (!kids || !pfd) {
		err_memory(err, errlen, "out of memory");
		free(kids);
		free(pfd);
		return -1;
	}
	for (unsigned i = 0; i < jobs; i++)
		kids[i].fd[0] = kids[i].fd[1] = kids[i].in_fd = -1;
	/* a worker that died leaves its stdin without a reader: writing there must
	 * fail, not kill the pool */
	if (workers)
		sigaction(SIGPIPE, &ign, &old_pipe);

	for (;;) {
		if (cfg->stop && *cfg->stop && !stopping) {
			stopping = 1;
			more = 0;
			for (unsigned i = 0; i < jobs; i++)
				if (kids[i].pid > 0)
					kill(kids[i].pid, SIGTERM);
		}
		for (unsigned slot = 0; more && slot < jobs; slot++) {
			struct pp_child *c = &kids[slot];
			/* a spawned child is busy while it lives; a worker whose input is closed takes no job */
			if (c->busy || (c->pid > 0 && c->in_fd < 0))
				continue;
			struct pp_job job = { 0 };
			int r = cfg->next(cfg->ud, &job, err, errlen);
			if (r <= 0) {
				more = 0;
				failed |= r < 0;
				break;
			}
			if (c->pid <= 0 && pp_spawn(cfg, workers ? cfg->worker_argv : job.argv, job.capture_stdout,
			                            workers, c, err, errlen) != 0) {
				struct pp_result none = { .exit_code = -1, .out = "", .errtext = "" };
				cfg->done(cfg->ud, job.ctx, &none);   /* the caller frees the job */
				more = 0;
				failed = 1;
				break;
			}
			if (workers)
				pp_send_job(c, &job);
			else {
				c->busy = 1;
				c->ctx = job.ctx;
			}
		}
		/* no more jobs: idle workers get the end of their stdin and exit */
		unsigned alive = 0;
		for (unsigned i = 0; i < jobs; i++) {
			struct pp_child *c = &kids[i];
			if (!more && !c->busy && c->in_fd >= 0) {
				close(c->in_fd);
				c->in_fd = -1;
				c->ending = !stopping;
			}
			alive += c->pid > 0;
		}
		if (alive == 0)
			break;

		nfds_t n = 0;
		for (unsigned i = 0; i < jobs; i++)
			for (int k = 0; k < 2; k++)
				if (kids[i].pid > 0 && kids[i].fd[k] >= 0)
					pfd[n++] = (struct pollfd){ .fd = kids[i].fd[k], .events = POLLIN };
		if (n > 0 && poll(pfd, n, tick_ms) < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", err_strerror(errno));
			failed = 1;     /* keep reaping: never leave children behind */
		}
		if (pp_drain(cfg, kids, jobs, workers, pfd, n, err, errlen) != 0)
			failed = 1;
		if (cfg->tick)
			cfg->tick(cfg->ud);
	}
	if (workers)
		sigaction(SIGPIPE, &old_pipe, NULL);
	free(kids);
	free(pfd);
	if (failed)
		return -1;
	return stopping ? 1 : 0;
}

/* Reads one job: argc and a newline, then argc NUL-terminated arguments.
 * 1 with *argv (one malloc'd block: the NULL-terminated pointers, then the
 * strings they point to), 0 at the end of the input, -1 when malformed. */
static int pp_read_job(FILE *in, int *argc, char ***argv)
{
	unsigned long n = 0;
	int ch, digits = 0;
	while ((ch = getc(in)) >= '0' && ch <= '9' && n < 4096) {
		n = n * 10 + (unsigned long)(ch - '0');
		digits++;
	}
	if (ch == EOF && digits == 0)
		return 0;
	if (ch != '\n' || digits == 0 || n == 0 || n >= 4096)
		return -1;
	size_t head = (n + 1) * sizeof(char *), len = head, cap = head + 1024;
	char *block = malloc(cap);
	if (!block)
		return -1;
	for (unsigned long seen = 0; seen < n;) {
		if ((ch = getc(in)) == EOF)
			goto fail;
		if (GROW(block, cap, len + 1, cap) != 0)
			goto fail;
		block[len++] = (char)ch;
		seen += ch == '\0';
	}
	char **out = (char **)block, *p = block + head;
	for (unsigned long i = 0; i < n; p += strlen(p) + 1)
		out[i++] = p;
	out[n] = NULL;
	*argc = (int)n;
	*argv = out;
	return 1;
fail:
	free(block);
	return -1;
}

int pp_worker_serve(int (*entry)(int argc, char **argv))
{
	/* the jobs come on their own descriptor; a job's stdin is /dev/null */
	int jobs_fd = dup(STDIN_FILENO);
	int null_fd = open("/dev/null", O_RDONLY);
	FILE *in = jobs_fd >= 0 ? fdopen(jobs_fd, "r") : NULL;
	if (!in || null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0) {
		fprintf(stderr, "simbatch: worker: cannot set up its input: %s\n", err_strerror(errno));
		return 2;
	}
	close(null_fd);
	for (;;) {
		int argc;
		char **argv;
		int got = pp_read_job(in, &argc, &argv);
		if (got <= 0) {
			fclose(in);
			if (got < 0)
				fprintf(stderr, "simbatch: worker: malformed job on its input\n");
			return got < 0 ? 2 : 0;
		}
		int status = entry(argc, argv);
		free(argv);
		fflush(stdout);
		fprintf(stderr, "%c%d\n", '\0', status);
		fflush(stderr);
	}
}

int pp_self_exe(char *buf, size_t len, char *err, size_t errlen)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0) {
		snprintf(err, errlen, "cannot find the simbatch binary (/proc/self/exe): %s", err_strerror(errno));
		return -1;
	}
	buf[n] = '\0';
	return 0;
}
