/* hwmodels/engine_profile.c: reading a serving engine's profile (engine_profile.h,
 * engines/FORMAT.md) and the two rules of vLLM it prices: the captured CUDA-graph
 * sizes and the all-reduce algorithm at a message size. */
#include "engine_profile.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef SB_ENGINES_DIR
#define SB_ENGINES_DIR "engines"
#endif

#define ENG_KIND_LINE "# simbatch engine profile"
#define ENG_MAX_US 1e6          /* a launch latency of a second is no GPU's */

const char *eng_profiles_dir(void)
{
	const char *env = getenv("SIMBATCH_ENGINES");
	return env && *env ? env : SB_ENGINES_DIR;
}

enum eng_kind { EK_NAME, EK_WORD, EK_UINT, EK_ONOFF, EK_US, EK_BYTES };

struct eng_key {
	const char *name;
	enum eng_kind kind;
	uint64_t max;       /* EK_UINT, EK_BYTES */
};

/* Every key, each required once; the tp-indexed ones end in _tp2, _tp4, _tp8. */
static const struct eng_key eng_keys[] = {
	{ "engine", EK_NAME, 0 }, { "policy", EK_WORD, 0 }, { "max_batched_tokens", EK_UINT, 10000000 },
	{ "max_seqs", EK_UINT, 65536 }, { "prefix_caching", EK_ONOFF, 0 }, { "async_scheduling", EK_ONOFF, 0 },
	{ "cuda_graphs", EK_ONOFF, 0 }, { "cudagraph_max_size", EK_UINT, 65536 }, { "launch_us", EK_US, 0 },
	{ "kernels_per_layer", EK_UINT, 1000 }, { "allreduce_gpu", EK_WORD, 0 },
	{ "custom_allreduce_max_bytes_tp2", EK_BYTES, 1ull << 40 }, { "custom_allreduce_max_bytes_tp4", EK_BYTES, 1ull << 40 },
	{ "custom_allreduce_max_bytes_tp8", EK_BYTES, 1ull << 40 }, { "symm_mem_max_bytes_tp2", EK_BYTES, 1ull << 40 },
	{ "symm_mem_max_bytes_tp4", EK_BYTES, 1ull << 40 }, { "symm_mem_max_bytes_tp8", EK_BYTES, 1ull << 40 },
};
#define ENG_NKEYS (sizeof eng_keys / sizeof eng_keys[0])

static int eng_set(struct eng_profile *e, size_t k, const char *v, char *bad, size_t badlen)
{
	const struct eng_key *d = &eng_keys[k];
	uint64_t u = 0;
	double x = 0;
	switch (d->kind) {
	case EK_NAME:
	case EK_WORD: {
		char *dst = k == 0 ? e->name : k == 1 ? e->policy : e->allreduce_gpu;
		size_t cap = k == 0 ? sizeof e->name : k == 1 ? sizeof e->policy : sizeof e->allreduce_gpu;
		if (strlen(v) >= cap || strpbrk(v, " \t,/")) {
			snprintf(bad, badlen, "must be one word of at most %zu characters", cap - 1);
			return -1;
		}
		snprintf(dst, cap, "%s", v);
		return 0;
	}
	case EK_ONOFF:
		if (strcmp(v, "on") != 0 && strcmp(v, "off") != 0) {
			snprintf(bad, badlen, "must be on or off");
			return -1;
		}
		*(k == 4 ? &e->prefix_caching : k == 5 ? &e->async_scheduling : &e->cuda_graphs) = strcmp(v, "on") == 0;
		return 0;
	case EK_UINT:
	case EK_BYTES:
		if (txt_parse_uint(v, d->max, &u) != 0 || (d->kind == EK_UINT && u == 0)) {
			snprintf(bad, badlen, "must be a whole number from %d to %llu", d->kind == EK_UINT,
			         (unsigned long long)d->max);
			return -1;
		}
		break;
	case EK_US:
		if (txt_parse_double(v, &x) != 0 || !(x >= 0) || x > ENG_MAX_US) {
			snprintf(bad, badlen, "must be a time in us from 0 to %g (not NaN, not negative)", ENG_MAX_US);
			return -1;
		}
		e->launch_s = x * 1e-6;
		return 0;
	}
	const char *n = d->name;
	uint32_t tp = (uint32_t)(n[strlen(n) - 1] - '0');
	if (strcmp(n, "max_batched_tokens") == 0)
		e->max_batched_tokens = (uint32_t)u;
	else if (strcmp(n, "max_seqs") == 0)
		e->max_seqs = (uint32_t)u;
	else if (strcmp(n, "cudagraph_max_size") == 0)
		e->graph_max_size = (uint32_t)u;
	else if (strcmp(n, "kernels_per_layer") == 0)
		e->kernels_per_layer = (uint32_t)u;
	else if (strncmp(n, "custom_", 7) == 0)
		e->custom_max[tp] = u;
	else
		e->symm_max[tp] = u;
	return 0;
}

/* The names in the profiles directory, for the message naming a missing one. */
static void eng_list_names(char *buf, size_t len)
{
	DIR *d = opendir(eng_profiles_dir());
	size_t used = 0;
	buf[0] = '\0';
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && used < len) {
		size_t n = strlen(de->d_name);
		if (n > 7 && strcmp(de->d_name + n - 7, ".engine") == 0)
			used += (size_t)snprintf(buf + used, len - used, "%s%.*s", used ? ", " : "", (int)(n - 7), de->d_name);
	}
	closedir(d);
}

static int eng_path(const char *arg, char *path, size_t len, char *err, size_t errlen)
{
	struct stat st;
	int is_path = strchr(arg, '/') != NULL;
	int n = is_path ? snprintf(path, len, "%s", arg) : snprintf(path, len, "%s/%s.engine", eng_profiles_dir(), arg);
	if (n < 0 || (size_t)n >= len) {
		snprintf(err, errlen, "--engine=%s: path too long", arg);
		return -1;
	}
	if (stat(path, &st) == 0)
		return 0;
	if (is_path) {
		snprintf(err, errlen, "--engine=%s: %s", arg, err_strerror(errno));
		return -1;
	}
	char names[512];
	eng_list_names(names, sizeof names);
	snprintf(err, errlen, "--engine=%s: no such engine profile (%s holds: %s)", arg, eng_profiles_dir(),
	         names[0] ? names : "none");
	return -1;
}

int eng_profile_load(const char *arg, struct eng_profile *out, char *err, size_t errlen)
{
	struct eng_profile e;
	unsigned long seen[ENG_NKEYS] = { 0 };
	struct lines_reader rd;
	char *line, bad[160];
	size_t len;
	int got;
	memset(&e, 0, sizeof e);
	e.use_allreduce_algos = e.use_padding = e.use_launch = 1;
	if (eng_path(arg, e.path, sizeof e.path, err, errlen) != 0)
		return -1;
	if (lines_open(&rd, e.path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		if (rd.lineno == 1 && strcmp(txt_trim(line), ENG_KIND_LINE) != 0) {
			snprintf(err, errlen, "%s:1: not an engine profile (its first line must be '%s')", e.path, ENG_KIND_LINE);
			goto fail;
		}
		char *key, *value;
		int s = txt_setting(line, &key, &value);
		if (s == 0)
			continue;
		if (s < 0) {
			snprintf(err, errlen, "%s:%lu: expected KEY = VALUE, got '%.80s'", e.path, rd.lineno, key);
			goto fail;
		}
		size_t k = 0;
		while (k < ENG_NKEYS && strcmp(key, eng_keys[k].name) != 0)
			k++;
		if (k == ENG_NKEYS) {
			snprintf(err, errlen, "%s:%lu:%.60s: unknown key (engines/FORMAT.md lists the keys)", e.path, rd.lineno,
			         key);
			goto fail;
		}
		if (seen[k]) {
			snprintf(err, errlen, "%s:%lu:%s: given twice (first on line %lu)", e.path, rd.lineno, key, seen[k]);
			goto fail;
		}
		if (*value == '\0') {
			snprintf(err, errlen, "%s:%lu:%s: missing value", e.path, rd.lineno, key);
			goto fail;
		}
		if (eng_set(&e, k, value, bad, sizeof bad) != 0) {
			snprintf(err, errlen, "%s:%lu:%s: %s, not '%.40s'", e.path, rd.lineno, key, bad, value);
			goto fail;
		}
		seen[k] = rd.lineno;
	}
	if (got < 0)
		goto fail;
	lines_close(&rd);
	for (size_t k = 0; k < ENG_NKEYS; k++)
		if (!seen[k]) {
			snprintf(err, errlen, "%s:%s: missing key (engines/FORMAT.md)", e.path, eng_keys[k].name);
			return -1;
		}
	*out = e;
	return 0;
fail:
	lines_close(&rd);
	return -1;
}

uint32_t eng_graph_cap(const struct eng_profile *e, uint32_t max_seqs, uint32_t max_batched_tokens)
{
	uint64_t cap = e->graph_max_size;
	if (2ull * max_seqs < cap)
		cap = 2ull * max_seqs;
	if (max_batched_tokens < cap)
		cap = max_batched_tokens;
	return (uint32_t)cap;
}

/* vLLM's list: 1, 2, 4, then multiples of 8 below 256, then multiples of 16 from 256 */
uint32_t eng_graph_pad(uint32_t tokens, uint32_t cap)
{
	uint64_t p = tokens <= 1 ? 1 : tokens <= 2 ? 2 : tokens <= 4 ? 4
	             : tokens <= 248 ? ((uint64_t)tokens + 7) / 8 * 8 : tokens <= 256 ? 256
	             : ((uint64_t)tokens + 15) / 16 * 16;
	return p <= cap ? (uint32_t)p : 0;
}

enum eng_ar_algo eng_allreduce_algo(const struct eng_profile *e, uint32_t gpus, double bytes)
{
	if (gpus > ENG_MAX_TP || !e->use_allreduce_algos)
		return ENG_AR_NCCL;
	uint64_t b = (uint64_t)bytes;
	/* custom_all_reduce.py should_custom_ar: a multiple of 16 bytes, below its max_size (strict) */
	if (e->custom_max[gpus] && b % 16 == 0 && b < e->custom_max[gpus])
		return ENG_AR_CUSTOM;
	/* symm_mem.py should_use_symm_mem: a multiple of 4 bytes, up to its max_size */
	if (e->symm_max[gpus] && b % 4 == 0 && b <= e->symm_max[gpus])
		return ENG_AR_SYMM;
	return ENG_AR_NCCL;
}

int eng_profile_switch_off(struct eng_profile *e, const char *list, char *err, size_t errlen)
{
	const char *p = list;
	while (p && *p) {
		size_t n = strcspn(p, ",");
		if (n == 9 && strncmp(p, "allreduce", n) == 0)
			e->use_allreduce_algos = 0;
		else if (n == 7 && strncmp(p, "padding", n) == 0)
			e->use_padding = 0;
		else if (n == 6 && strncmp(p, "launch", n) == 0)
			e->use_launch = 0;
		else if (n == 5 && strncmp(p, "async", n) == 0)
			e->async_scheduling = 0;
		else {
			snprintf(err, errlen, "--engine-off=%s: unknown term '%.*s' (the terms: allreduce, padding, launch, async)", list,
			         (int)n, p);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}
