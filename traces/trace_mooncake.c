/* traces/trace_mooncake.c: the Mooncake traces' format (FAST 2025; the
 * conversation and synthetic traces in ../shared/data/mooncake-fast25/):
 * JSON lines, one request each, exactly
 *   {"timestamp": MS, "input_length": N, "output_length": N, "hash_ids": [ID, ...]}
 * in any order: the arrival in integer milliseconds from the start
 * (non-decreasing), the prompt and output tokens, and the prompt's
 * 512-token blocks as hash ids, one a block, the last block possibly
 * partial; an id stands for every token up to its block's end, so two
 * requests that share their first k ids share k x 512 tokens of KV cache.
 * Our KV blocks are smaller (--block-size): block j of a prompt takes the id
 * of the Mooncake block holding its last token (policies/llm/prefix_cache.h).
 * Every rejection names PATH:LINE. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "workload.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/lines.h"
#include "../util/text.h"

#define MOONCAKE_BLOCK 512        /* tokens a hash id covers (the traces' README) */

struct mc_row {
	uint64_t timestamp, input, output;
	int seen;                     /* bit k: field k given */
};

static const char *mc_skip(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* An unsigned integer at *p, within max: advances *p. 0, or -1. */
static int mc_uint(const char **p, uint64_t max, uint64_t *out)
{
	const char *s = mc_skip(*p);
	if (!isdigit((unsigned char)*s))
		return -1;
	uint64_t v = 0;
	while (isdigit((unsigned char)*s)) {
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s++ - '0');
	}
	*out = v;
	*p = s;
	return 0;
}

/* Room for one more row, and nh more hash ids. */
static int mc_push(struct trc_trace *t, size_t *cap, size_t *hcap, size_t nh)
{
	if (trc_trace_grow(t, cap) != 0)
		return -1;
	return grow_array(&t->hash_ids, hcap, t->nhash + nh, 16384, sizeof *t->hash_ids);
}

int trc_mooncake_load(const char *path, struct trc_trace **out, char *err, size_t errlen)
{
	struct lines_reader rd;
	char *line = NULL;
	size_t len, cap = 0, hcap = 0;
	int got;
	uint64_t *ids = NULL;
	size_t ids_cap = 0;
	*out = NULL;
	if (lines_open(&rd, path, LINES_MAX_WORKLOAD_FILE, err, errlen) != 0)
		return -1;
	struct trc_trace *t = calloc(1, sizeof *t);
	/* the hash-id columns: their arrays grow with the others (trc_trace_grow; a first, empty allocation) */
	if (t) {
		t->hash_start = malloc(sizeof *t->hash_start);
		t->hash_count = malloc(sizeof *t->hash_count);
	}
	if (!t || !t->hash_start || !t->hash_count) {
		trc_trace_free(t);
		lines_close(&rd);
		return err_memory(err, errlen, "%s: out of memory", path);
	}
	t->hash_block_tokens = MOONCAKE_BLOCK;
	static const char *const names[] = { "timestamp", "input_length", "output_length", "hash_ids" };
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		unsigned long ln = rd.lineno;
		const char *p = mc_skip(txt_trim(line));
		if (!*p)
			continue;
		struct mc_row row = { 0 };
		size_t nids = 0;
		if (*p++ != '{')
			goto syntax;
		for (;;) {
			p = mc_skip(p);
			if (*p == '}' && row.seen == 0)
				break;
			if (*p++ != '"')
				goto syntax;
			int k = -1;
			for (int i = 0; i < 4; i++)
				if (strncmp(p, names[i], strlen(names[i])) == 0 && p[strlen(names[i])] == '"')
					k = i;
			if (k < 0) {
				lines_fail(err, errlen, path, ln, "unknown key '%.30s' (expected timestamp, input_length, "
				           "output_length, hash_ids)", p);
				goto fail;
			}
			if (row.seen & (1 << k)) {
				lines_fail(err, errlen, path, ln, "%s given twice", names[k]);
				goto fail;
			}
			row.seen |= 1 << k;
			p = mc_skip(p + strlen(names[k]) + 1);
			if (*p++ != ':')
				goto syntax;
			if (k == 3) {
				p = mc_skip(p);
				if (*p++ != '[')
					goto syntax;
				p = mc_skip(p);
				while (*p != ']') {
					if (GROW(ids, ids_cap, nids + 1, 256) != 0)
						goto oom;
					if (mc_uint(&p, UINT64_MAX, &ids[nids]) != 0) {
						lines_fail(err, errlen, path, ln, "hash_ids: expected non-negative integers");
						goto fail;
					}
					nids++;
					p = mc_skip(p);
					if (*p == ',') {
						p = mc_skip(p + 1);
						if (*p == ']')    /* a trailing comma: not JSON */
							goto syntax;
					} else if (*p != ']') {
						goto syntax;
					}
				}
				p++;
			} else {
				uint64_t *v = k == 0 ? &row.timestamp : k == 1 ? &row.input : &row.output;
				uint64_t max = k == 0 ? (uint64_t)(TRC_MAX_SPAN_S * 1e3) : TRC_LENGTH_LIMIT;
				if (mc_uint(&p, max, v) != 0) {
					lines_fail(err, errlen, path, ln, "%s: expected an integer from 0 to %llu", names[k],
					           (unsigned long long)max);
					goto fail;
				}
			}
			p = mc_skip(p);
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p == '}')
				break;
			goto syntax;
		}
		if (*mc_skip(p + 1)) {
			lines_fail(err, errlen, path, ln, "text after the request's closing brace");
			goto fail;
		}
		if (row.seen != 15) {
			for (int i = 0; i < 4; i++)
				if (!(row.seen & (1 << i))) {
					lines_fail(err, errlen, path, ln, "%s is missing", names[i]);
					break;
				}
			goto fail;
		}
		uint64_t blocks = (row.input + MOONCAKE_BLOCK - 1) / MOONCAKE_BLOCK;
		if (nids != blocks) {
			lines_fail(err, errlen, path, ln, "%zu hash_ids for input_length %llu, which takes %llu blocks of %d "
			           "tokens", nids, (unsigned long long)row.input, (unsigned long long)blocks, MOONCAKE_BLOCK);
			goto fail;
		}
		double at = (double)row.timestamp * 1e-3;
		if (t->n && at < t->arrival_s[t->n - 1]) {
			lines_fail(err, errlen, path, ln, "timestamp %llu is earlier than the previous request's",
			           (unsigned long long)row.timestamp);
			goto fail;
		}
		if (mc_push(t, &cap, &hcap, nids) != 0)
			goto oom;
		t->arrival_s[t->n] = at;
		t->input_len[t->n] = (uint32_t)row.input;
		t->output_len[t->n] = (uint32_t)row.output;
		t->hash_start[t->n] = t->nhash;
		t->hash_count[t->n] = (uint32_t)nids;
		memcpy(t->hash_ids + t->nhash, ids, nids * sizeof *ids);
		t->nhash += nids;
		t->n++;
		continue;
syntax:
		lines_fail(err, errlen, path, ln, "not a Mooncake request line: expected {\"timestamp\": MS, "
		           "\"input_length\": N, \"output_length\": N, \"hash_ids\": [...]}");
		goto fail;
	}
	if (got < 0)
		goto fail;
	if (t->n == 0) {
		lines_fail(err, errlen, path, 0, "no requests");
		goto fail;
	}
	free(ids);
	lines_close(&rd);
	*out = t;
	return 0;
oom:
	err_memory(err, errlen, "%s: out of memory after %zu requests", path, t->n);
fail:
	free(ids);
	lines_close(&rd);
	trc_trace_free(t);
	return -1;
}
