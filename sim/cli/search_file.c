/* sim/cli/search_file.c: a search's results file (search_file.h): a configuration's line
 * appended as it is answered, and the lines of an earlier run (or of parts) taken back. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>
#include "cli.h"
#include "search_run.h"
#include "search_file.h"
#include "search_results.h"
#include "procpool.h"
#include "parts_export.h"
#include "../store/results.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../../util/errkind.h"
#include "../../util/json_read.h"
#include "../../util/options.h"
#include "../../util/text.h"

/* FNV-1a of s, continued from h (SEARCH_HASH_START: s alone). */
uint64_t search_hash_more(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

uint64_t search_hash(const char *s)
{
	return search_hash_more(SEARCH_HASH_START, s);
}

int search_append(struct search_run *r, size_t i, char *err, size_t errlen)
{
	struct search_config c;
	if (search_config_make(r->spec, i, &c, err, errlen) != 0)
		return -1;
	char line[4096];
	size_t n = search_results_format(line, sizeof line, c.key, &r->plan.rows[i]);
	search_config_free(&c);
	/* one write a line: a kill leaves whole lines, or a last part the next run drops */
	if (n == 0 || write(r->out_fd, line, n) != (ssize_t)n) {
		snprintf(err, errlen, "%s: %s", r->out_path, n ? err_strerror(errno) : "a line longer than 4096 bytes");
		return -1;
	}
	return 0;
}

/* The row key names, among configurations whose hash matches (by_hash sorted), or SIZE_MAX. */
static size_t search_find(const struct search_run *r, const size_t *by_hash, const char *key)
{
	uint64_t h = search_hash(key);
	size_t lo = 0, hi = r->spec->nconfigs;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (r->plan.rows[by_hash[mid]].key_hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < r->spec->nconfigs && r->plan.rows[by_hash[lo]].key_hash == h; lo++) {
		struct search_config c;
		char err[64];
		if (search_config_make(r->spec, by_hash[lo], &c, err, sizeof err) != 0)
			return SIZE_MAX;
		int same = strcmp(c.key, key) == 0;
		search_config_free(&c);
		if (same)
			return by_hash[lo];
	}
	return SIZE_MAX;
}

static const struct search_run *search_sort_run;

static int search_cmp_hash(const void *a, const void *b)
{
	uint64_t x = search_sort_run->plan.rows[*(const size_t *)a].key_hash, y = search_sort_run->plan.rows[*(const size_t *)b].key_hash;
	return (x > y) - (x < y);
}

struct search_take {                /* where a results file's lines go */
	struct search_run *r;
	const size_t *by_hash;
	int own;
	size_t taken;
};

/* A results file's row into the configuration it keys (search_results_fn): a row filled already is kept; one
 * filled here is marked resumed, 1 from the results file itself, 2 from another (a shard). */
static int search_take(void *ctx, const char *key, const struct study_search_row *row, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct search_take *t = ctx;
	struct search_run *r = t->r;
	size_t i = search_find(r, t->by_hash, key);
	if (i == SIZE_MAX || r->plan.rows[i].status == STUDY_SR_PRUNED || r->plan.rows[i].status == STUDY_SR_OK ||
	    r->plan.rows[i].status == STUDY_SR_INFEASIBLE)
		return 0;                     /* another search's configuration, or one read already */
	struct study_search_row w = *row;
	w.key_hash = r->plan.rows[i].key_hash;
	w.resumed = t->own ? 1 : 2;
	r->plan.rows[i] = w;
	t->taken++;
	return 0;
}

/* Opens the results file (creating it, and results/ for the default, with
 * its header), takes in the lines a previous run wrote, then those of the
 * other results files given (a distributed search's shards), which it
 * appends to its own so that it holds them all. 0, or -1. */
int search_resume(struct search_run *r, const char *const *more, size_t nmore, char *err, size_t errlen)
{
	size_t *by_hash = malloc(r->spec->nconfigs * sizeof *by_hash), taken = 0;
	if (!by_hash)
		return err_memory(err, errlen, "out of memory");
	for (size_t i = 0; i < r->spec->nconfigs; i++)
		by_hash[i] = i;
	search_sort_run = r;
	qsort(by_hash, r->spec->nconfigs, sizeof *by_hash, search_cmp_hash);
	off_t keep = 0;
	struct search_take t = { .r = r, .by_hash = by_hash, .own = 1 };
	int rc = search_results_read(r->out_path, 1, search_take, &t, &keep, err, errlen);
	size_t own = t.taken;
	t.own = 0;
	for (size_t k = 0; rc == 0 && k < nmore; k++)
		rc = search_results_read(more[k], 0, search_take, &t, NULL, err, errlen);
	taken = t.taken;
	free(by_hash);
	if (rc != 0)
		return -1;
	if (!keep && strncmp(r->out_path, "results/", 8) == 0 && mkdir("results", 0777) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "results/: %s", err_strerror(errno));
		return -1;
	}
	r->out_fd = open(r->out_path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
	if (r->out_fd < 0 || ftruncate(r->out_fd, keep) != 0 || lseek(r->out_fd, 0, SEEK_END) < 0 ||
	    (keep == 0 && write(r->out_fd, SEARCH_RESULTS_HEADER "\n", sizeof SEARCH_RESULTS_HEADER) !=
	     (ssize_t)sizeof SEARCH_RESULTS_HEADER)) {
		snprintf(err, errlen, "%s: %s", r->out_path, err_strerror(errno));
		return -1;
	}
	if (taken > own)                  /* the shards' lines join this file: it holds the whole search */
		for (size_t i = 0; i < r->spec->nconfigs; i++)
			if (r->plan.rows[i].resumed == 2 && search_append(r, i, err, errlen) != 0)
				return -1;
	return 0;
}
