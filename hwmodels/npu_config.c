/* hwmodels/npu_config.c: reads NPU configuration files (format in
 * npu_config.h). Every key lives in one table with its field, unit and
 * bounds, so parsing, messages and the documentation cannot drift apart.
 */
#include "../util/lines.h"
#include "npu_config.h"
#include "../util/text.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum npu_key_kind {
	NPU_KEY_U32,       /* uint32_t field, integer in the file */
	NPU_KEY_KIB,       /* uint64_t byte field, integer KiB in the file */
	NPU_KEY_SCALED,    /* double field = file value * scale */
	NPU_KEY_DATAFLOW,  /* enum hw_dataflow field, ws | os | is */
	NPU_KEY_RATE_OR_MEMORY, /* double field: a number in (min, max], or `memory` (stored as 0) */
};

struct npu_key {
	const char *name;
	enum npu_key_kind kind;
	size_t offset;       /* field in struct npu_config */
	double scale;        /* NPU_KEY_SCALED: file unit -> field unit */
	double min, max;     /* accepted values, in the file's unit */
	int min_open;        /* 1: the value must be > min */
	const char *unit;    /* for messages */
};

/* Bounds keep every product in npu_systolic.c far inside 64 bits and say
 * what makes physical sense; they are not tuned to anything. The clock and
 * the memory have floors (1 MHz, 1 MB/s: below any accelerator or DRAM
 * interface built) so that a typo such as freq_mhz = 0.000001 is refused by
 * name instead of giving nodes that outlast the simulated clock. */
static const struct npu_key npu_keys[] = {
	{ "rows", NPU_KEY_U32, offsetof(struct npu_config, rows), 1, 1, 65536, 0, "PEs" },
	{ "cols", NPU_KEY_U32, offsetof(struct npu_config, cols), 1, 1, 65536, 0, "PEs" },
	{ "freq_mhz", NPU_KEY_SCALED, offsetof(struct npu_config, freq_hz), 1e6, 1, 1e6, 0, "MHz" },
	{ "act_sram_kib", NPU_KEY_KIB, offsetof(struct npu_config, act_sram_bytes), 1024, 1, 1 << 30, 0, "KiB" },
	{ "weight_sram_kib", NPU_KEY_KIB, offsetof(struct npu_config, weight_sram_bytes), 1024, 1, 1 << 30, 0, "KiB" },
	{ "mem_channels", NPU_KEY_U32, offsetof(struct npu_config, mem_channels), 1, 1, 4096, 0, "channels" },
	{ "mem_latency_cycles", NPU_KEY_U32, offsetof(struct npu_config, mem_latency_cycles), 1, 0, 1e7, 0, "cycles" },
	{ "mem_bw_gbs", NPU_KEY_SCALED, offsetof(struct npu_config, mem_bw_bytes_s), 1e9, 1e-3, 1e6, 0, "GB/s" },
	{ "elem_bytes", NPU_KEY_U32, offsetof(struct npu_config, elem_bytes), 1, 1, 16, 0, "bytes" },
	{ "vector_lanes", NPU_KEY_U32, offsetof(struct npu_config, vector_lanes), 1, 1, 1 << 24, 0, "lanes" },
	{ "dataflow", NPU_KEY_DATAFLOW, offsetof(struct npu_config, dataflow), 1, 0, 0, 0, "" },
	{ "weight_double_buffer", NPU_KEY_U32, offsetof(struct npu_config, weight_double_buffer), 1, 0, 1, 0, "" },
	{ "weight_load_bytes_per_cycle", NPU_KEY_RATE_OR_MEMORY,
	  offsetof(struct npu_config, weight_load_bytes_per_cycle), 1, 0, 1e9, 1, "bytes per cycle" },
	{ "vector_overlap", NPU_KEY_U32, offsetof(struct npu_config, vector_overlap), 1, 0, 1, 0, "" },
	{ "mem_capacity_gb", NPU_KEY_SCALED, offsetof(struct npu_config, mem_capacity_bytes), 1e9, 0, 1e6, 0, "GB" },
};
#define NPU_NKEYS (sizeof npu_keys / sizeof npu_keys[0])
#define NPU_KIND_KEY "kind"
#define NPU_KIND "npu"

struct npu_parser {
	const char *path;
	unsigned long line;
	char *err;
	size_t errlen;
	unsigned long kind_line;           /* 0 until `kind = npu` is read */
	unsigned long key_line[NPU_NKEYS]; /* where each key was set, 0 if not */
};

__attribute__((format(printf, 2, 3)))
static int npu_cfg_fail(struct npu_parser *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lines_vfail(p->err, p->errlen, p->path, p->line, fmt, ap);
	va_end(ap);
	return -1;
}

/* Cuts a trailing comment and surrounding blanks in place. */
static int npu_cfg_value(struct npu_parser *p, const struct npu_key *k, const char *v,
                         struct npu_config *c)
{
	char *field = (char *)c + k->offset;

	if (k->kind == NPU_KEY_DATAFLOW) {
		enum hw_dataflow df;
		char msg[128];

		if (npu_dataflow_parse(v, &df, msg, sizeof msg))
			return npu_cfg_fail(p, "key '%s': expected ws, os or is, got '%s'", k->name, v);
		memcpy(field, &df, sizeof df);
		return 0;
	}
	if (k->kind == NPU_KEY_RATE_OR_MEMORY && strcmp(v, "memory") == 0) {
		double as_memory = 0;
		memcpy(field, &as_memory, sizeof as_memory);
		return 0;
	}
	if (k->kind == NPU_KEY_SCALED || k->kind == NPU_KEY_RATE_OR_MEMORY) {
		char *end;
		double x;

		errno = 0;
		x = strtod(v, &end);
		if (end == v || *end != '\0' || errno == ERANGE || !isfinite(x) ||
		    (k->min_open ? !(x > k->min) : !(x >= k->min)) || x > k->max)
			return npu_cfg_fail(p, "key '%s': expected %sa number %s %g and <= %g %s, got '%s'",
			                    k->name, k->kind == NPU_KEY_RATE_OR_MEMORY ? "'memory' or " : "",
			                    k->min_open ? ">" : ">=", k->min, k->max, k->unit, v);
		x *= k->scale;
		memcpy(field, &x, sizeof x);
		return 0;
	}
	/* integers: digits only, so "+5", "-1", "5.0" and "0x10" are refused */
	unsigned long long u = 0;
	int ok = isdigit((unsigned char)v[0]) != 0;
	for (const char *s = v; ok && *s; s++) {
		if (!isdigit((unsigned char)*s) || u > (ULLONG_MAX - 9) / 10)
			ok = 0;
		else
			u = u * 10 + (unsigned long long)(*s - '0');
	}
	if (!ok || (double)u < k->min || (double)u > k->max)
		return npu_cfg_fail(p, "key '%s': expected an integer in [%.0f, %.0f] %s, got '%s'",
		                    k->name, k->min, k->max, k->unit, v);
	if (k->kind == NPU_KEY_KIB) {
		uint64_t bytes = (uint64_t)u * (uint64_t)k->scale;
		memcpy(field, &bytes, sizeof bytes);
	} else {
		uint32_t x = (uint32_t)u;
		memcpy(field, &x, sizeof x);
	}
	return 0;
}

static int npu_cfg_line(struct npu_parser *p, char *line, struct npu_config *c)
{
	char *key, *value;
	int got = txt_setting(line, &key, &value);

	if (got == 0)
		return 0;
	if (got < 0)
		return npu_cfg_fail(p, "expected KEY = VALUE, got '%s'", key);
	if (*key == '\0')
		return npu_cfg_fail(p, "expected KEY = VALUE, got '= %s'", value);
	if (strcmp(key, NPU_KIND_KEY) == 0) {
		if (p->kind_line)
			return npu_cfg_fail(p, "key 'kind' given twice (first on line %lu)", p->kind_line);
		if (strcmp(value, NPU_KIND) != 0)
			return npu_cfg_fail(p, "key 'kind': unknown hardware kind '%s' (expected npu)", value);
		p->kind_line = p->line;
		return 0;
	}
	if (!p->kind_line)
		return npu_cfg_fail(p, "key '%s' before 'kind = npu' (the first setting must be kind = npu)",
		                    key);
	for (size_t i = 0; i < NPU_NKEYS; i++) {
		if (strcmp(key, npu_keys[i].name) != 0)
			continue;
		if (p->key_line[i])
			return npu_cfg_fail(p, "key '%s' given twice (first on line %lu)", key, p->key_line[i]);
		if (*value == '\0')
			return npu_cfg_fail(p, "key '%s' has no value", key);
		p->key_line[i] = p->line;
		return npu_cfg_value(p, &npu_keys[i], value, c);
	}
	char known[400];
	size_t used = (size_t)snprintf(known, sizeof known, "%s", NPU_KIND_KEY);
	for (size_t i = 0; i < NPU_NKEYS && used < sizeof known; i++)
		used += (size_t)snprintf(known + used, sizeof known - used, ", %s", npu_keys[i].name);
	return npu_cfg_fail(p, "unknown key '%s' (known: %s)", key, known);
}

static size_t npu_cfg_key_index(const char *name)
{
	size_t i = 0;

	while (i < NPU_NKEYS && strcmp(npu_keys[i].name, name) != 0)
		i++;
	assert(i < NPU_NKEYS);   /* callers pass names from the table */
	return i;
}

/* Blames a check that involves several keys on the last of them that the
 * file sets (the kind line when all are defaults). */
static void npu_cfg_blame(struct npu_parser *p, const char *const *involved, size_t n)
{
	p->line = p->kind_line;
	for (size_t i = 0; i < n; i++) {
		unsigned long l = p->key_line[npu_cfg_key_index(involved[i])];
		if (l > p->line)
			p->line = l;
	}
}

/* The checks that involve several keys. */
static int npu_cfg_cross_check(struct npu_parser *p, const struct npu_config *c)
{
	static const char *const sram[] = { "weight_sram_kib", "rows", "cols", "elem_bytes" };
	static const char *const path[] = { "weight_load_bytes_per_cycle", "mem_bw_gbs", "freq_mhz" };
	uint64_t need = 2ull * c->rows * c->cols * c->elem_bytes;

	if (c->weight_sram_bytes < need) {
		npu_cfg_blame(p, sram, sizeof sram / sizeof sram[0]);
		return npu_cfg_fail(p, "key 'weight_sram_kib': %llu KiB cannot double-buffer one fold of weights "
		                    "(needs 2 * rows * cols * elem_bytes = %llu bytes)",
		                    (unsigned long long)(c->weight_sram_bytes >> 10), (unsigned long long)need);
	}
	if (!npu_weight_path_fits(c)) {
		npu_cfg_blame(p, path, sizeof path / sizeof path[0]);
		return npu_cfg_fail(p, "key 'weight_load_bytes_per_cycle': %g bytes per cycle is wider than the "
		                    "memory (mem_bw_gbs / freq_mhz = %g bytes per cycle)",
		                    c->weight_load_bytes_per_cycle, npu_mem_bytes_per_cycle(c));
	}
	return 0;
}

int npu_config_load(const char *path, struct npu_config *out, char *err, size_t errlen)
{
	struct npu_parser p = { .path = path, .err = err, .errlen = errlen };
	struct npu_config c;
	struct lines_reader rd;
	char *line = NULL;
	size_t len;
	int rc = -1, got;

	npu_config_default(&c);
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		p.line = rd.lineno;
		if (npu_cfg_line(&p, line, &c))
			goto done;
	}
	if (got < 0)
		goto done;
	if (!p.kind_line) {
		if (p.line == 0)
			p.line = 1;
		npu_cfg_fail(&p, "no settings (the first must be kind = npu)");
		goto done;
	}
	/* The vector unit matches the array's width unless the file says otherwise. */
	if (!p.key_line[npu_cfg_key_index("vector_lanes")])
		c.vector_lanes = c.cols;
	if (npu_cfg_cross_check(&p, &c))
		goto done;
	if (npu_config_check(&c, err, errlen)) {
		/* unreachable while the table's bounds imply npu_config_check */
		char msg[256];
		snprintf(msg, sizeof msg, "%s", err);
		snprintf(err, errlen, "%s: %s", path, msg);
		goto done;
	}
	*out = c;
	rc = 0;
done:
	lines_close(&rd);
	return rc;
}

/* The first line with data must be "kind = npu". */
static int npu_cfg_judge(char *line, unsigned long lineno, void *ctx)
{
	char *key, *value;
	int got = txt_setting(line, &key, &value);

	(void)lineno;
	(void)ctx;
	if (got == 0)
		return -1;
	return got > 0 && strcmp(key, NPU_KIND_KEY) == 0;
}

int npu_config_sniff(const char *path, char *err, size_t errlen)
{
	return txt_sniff_lines(path, npu_cfg_judge, NULL, err, errlen);
}

int npu_config_open(const char *path, const struct mdl_model *m, struct hw_model **out,
                    char *err, size_t errlen)
{
	struct npu_config c;
	const char *slash = strrchr(path, '/');
	const char *label = slash && slash[1] ? slash + 1 : path;

	*out = NULL;
	if (npu_config_load(path, &c, err, errlen))
		return -1;
	return npu_hw_create(&c, label, m, out, err, errlen);
}
