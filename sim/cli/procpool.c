/* sim/cli/procpool.c: a small process pool on posix_spawn and poll (procpool.h). */
#include "procpool.h"

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
};

static int pp_buf_add(struct pp_buf *b, const char *data, size_t n)
{
	if (b->len + 1 >= b->max)
		return 0;
	if (n > b->max - 1 - b->len)
		n = b->max - 1 - b->len;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 1024;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->data, cap);
		if (!p)
			return -1;
		b->data = p;
		b->cap = cap;
	}
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
	memset(c, 0, sizeof *c);
	c->fd[0] = c->fd[1] = -1;
}

/* Starts one child; 0, or -1 with err (nothing left open). */
static int pp_spawn(const struct pp_config *cfg, const struct pp_job *job, struct pp_child *c,
                    char *err, size_t errlen)
{
	int out[2] = { -1, -1 }, errp[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none;
	int rc, fa_ok = 0, attr_ok = 0;

	memset(c, 0, sizeof *c);
	c->fd[0] = c->fd[1] = -1;
	/* close-on-exec: no child inherits another child's pipes */
	if ((job->capture_stdout && pipe2(out, O_CLOEXEC) != 0) || pipe2(errp, O_CLOEXEC) != 0) {
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
	    (rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) != 0 ||
	    (rc = job->capture_stdout ? posix_spawn_file_actions_adddup2(&fa, out[1], 1)
	                              : posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0)) != 0 ||
	    (rc = posix_spawn_file_actions_adddup2(&fa, errp[1], 2)) != 0)
		goto fail;
	if ((rc = posix_spawn(&c->pid, cfg->exe, &fa, &attr, job->argv, environ)) != 0)
		goto fail;
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (job->capture_stdout)
		close(out[1]);
	close(errp[1]);
	c->fd[0] = out[0];
	c->fd[1] = errp[0];
	c->buf[0].max = PP_STDOUT_MAX;
	c->buf[1].max = PP_STDERR_MAX;
	c->ctx = job->ctx;
	return 0;
fail:
	snprintf(err, errlen, "cannot start %s: %s", cfg->exe, strerror(rc));
	if (fa_ok)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_ok)
		posix_spawnattr_destroy(&attr);
	for (int k = 0; k < 2; k++) {
		if (out[k] >= 0)
			close(out[k]);
		if (errp[k] >= 0)
			close(errp[k]);
	}
	c->pid = 0;
	return -1;
}

/* Reaps child c (both pipes at EOF) and reports it. */
static void pp_finish(const struct pp_config *cfg, struct pp_child *c)
{
	int status = 0;
	while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
		;
	struct pp_result r = {
		.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1,
		.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0,
		.out = c->buf[0].data ? c->buf[0].data : "",
		.outlen = c->buf[0].len,
		.errtext = c->buf[1].data ? c->buf[1].data : "",
	};
	cfg->done(cfg->ud, c->ctx, &r);
	pp_child_release(c);
}

int pp_run(const struct pp_config *cfg, char *err, size_t errlen)
{
	unsigned jobs = cfg->jobs ? cfg->jobs : 1;
	int tick_ms = cfg->tick_ms ? (int)cfg->tick_ms : 250;
	struct pp_child *kids = calloc(jobs, sizeof *kids);
	struct pollfd *pfd = calloc(2 * (size_t)jobs, sizeof *pfd);
	int more = 1, stopping = 0, failed = 0;
	unsigned nrun = 0;
	if (!kids || !pfd) {
		snprintf(err, errlen, "out of memory");
		free(kids);
		free(pfd);
		return -1;
	}
	for (unsigned i = 0; i < jobs; i++)
		kids[i].fd[0] = kids[i].fd[1] = -1;

	for (;;) {
		if (cfg->stop && *cfg->stop && !stopping) {
			stopping = 1;
			more = 0;
			for (unsigned i = 0; i < jobs; i++)
				if (kids[i].pid > 0)
					kill(kids[i].pid, SIGTERM);
		}
		while (more && nrun < jobs) {
			struct pp_job job = { 0 };
			int r = cfg->next(cfg->ud, &job, err, errlen);
			if (r <= 0) {
				more = 0;
				failed |= r < 0;
				break;
			}
			unsigned slot = 0;
			while (kids[slot].pid > 0)
				slot++;
			if (pp_spawn(cfg, &job, &kids[slot], err, errlen) != 0) {
				more = 0;
				failed = 1;
				break;
			}
			nrun++;
		}
		if (nrun == 0)
			break;

		nfds_t n = 0;
		for (unsigned i = 0; i < jobs; i++)
			for (int k = 0; k < 2; k++)
				if (kids[i].pid > 0 && kids[i].fd[k] >= 0)
					pfd[n++] = (struct pollfd){ .fd = kids[i].fd[k], .events = POLLIN };
		if (n > 0 && poll(pfd, n, tick_ms) < 0 && errno != EINTR) {
			snprintf(err, errlen, "poll: %s", strerror(errno));
			failed = 1;     /* keep reaping: never leave children behind */
		}
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
						if (pp_buf_add(&c->buf[k], chunk, (size_t)got) != 0)
							c->buf[k].max = 0;     /* out of memory: keep draining, keep nothing more */
					} else if (got == 0 || errno != EINTR) {
						close(c->fd[k]);
						c->fd[k] = -1;
					}
				}
			}
			if (c->fd[0] < 0 && c->fd[1] < 0) {
				pp_finish(cfg, c);
				nrun--;
			}
		}
		if (cfg->tick)
			cfg->tick(cfg->ud);
	}
	free(kids);
	free(pfd);
	if (failed)
		return -1;
	return stopping ? 1 : 0;
}
