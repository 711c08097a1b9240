/* hwmodels/caltab.c: reading, checking and writing calibration
 * tables (format in caltab.h and calib/README.md). Every problem
 * is reported once, as "FILE:LINE: field F: ..." so a person can go straight
 * to the cell that is wrong.
 */
#include "../util/lines.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/outfile.h"
#include "../util/text.h"
#include "caltab.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const caltab_op_names[CALTAB_OP_COUNT] = { "gemm", "attn", "elementwise" };

/* Column ids, in the order CALTAB_COLUMNS writes them. */
enum caltab_col { COL_OP, COL_M, COL_K, COL_N, COL_BATCH, COL_LATENCY, COL_MEASURED, COL_REPS, COL_COUNT };

static const char *const caltab_col_names[COL_COUNT] = {
	"op", "m_per_sample", "k", "n", "batch", "latency_s", "measured_s", "reps",
};
#define CALTAB_REQUIRED_COLS 6   /* op .. latency_s; measured_s and reps are optional */

const char *caltab_op_name(enum caltab_op op)
{
	return (unsigned)op < CALTAB_OP_COUNT ? caltab_op_names[op] : "?";
}

int caltab_check_device(const char *name)
{
	size_t len;

	if (strcmp(name, "cpu") == 0)
		return 0;
	if (strncmp(name, "gpu-", 4) != 0)
		return -1;
	len = strlen(name + 4);
	if (len < 1 || len > 47)
		return -1;
	for (const char *p = name + 4; *p; p++)
		if (!(islower((unsigned char)*p) || isdigit((unsigned char)*p) || strchr("_-", *p)))
			return -1;
	return 0;
}

int caltab_create(struct caltab **out)
{
	struct caltab *t = calloc(1, sizeof *t);

	*out = NULL;
	if (!t || !(t->path = strdup(""))) {
		free(t);
		return -1;
	}
	*out = t;
	return 0;
}

void caltab_destroy(struct caltab *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nfields; i++) {
		free(t->fields[i].key);
		free(t->fields[i].value);
	}
	free(t->fields);
	free(t->rows);
	free(t->path);
	free(t);
}

/* "FILE:LINE", "FILE" or, for a table built in memory, "calibration table". */
static const char *caltab_where(const struct caltab *t, unsigned long line, char *buf, size_t len)
{
	const char *name = t->path && *t->path ? t->path : "calibration table";

	if (line)
		snprintf(buf, len, "%s:%lu", name, line);
	else
		snprintf(buf, len, "%s", name);
	return buf;
}

/* Sets a field, remembering the line it came from. */
static int caltab_put_field(struct caltab *t, const char *key, const char *value, unsigned long line,
                            char *err, size_t errlen)
{
	char *v;

	if (strcmp(key, "device") == 0) {
		char word[sizeof t->device];
		size_t n = strcspn(value, " \t");
		char where[600];

		if (n >= sizeof word)
			n = sizeof word - 1;
		memcpy(word, value, n);
		word[n] = '\0';
		if (caltab_check_device(word) != 0) {
			snprintf(err, errlen, "%s: field device: unknown device '%s' (expected cpu or gpu-NAME, NAME of a-z 0-9 _ -)",
			         caltab_where(t, line, where, sizeof where), word);
			return -1;
		}
		memcpy(t->device, word, n + 1);
	}
	if (!(v = strdup(value)))
		goto oom;
	for (size_t i = 0; i < t->nfields; i++) {
		if (strcmp(t->fields[i].key, key) == 0) {
			free(t->fields[i].value);
			t->fields[i].value = v;
			t->fields[i].line = line;
			return 0;
		}
	}
	struct caltab_field *grown = realloc(t->fields, (t->nfields + 1) * sizeof *grown);
	if (!grown) {
		free(v);
		goto oom;
	}
	t->fields = grown;
	t->fields[t->nfields].value = v;
	t->fields[t->nfields].line = line;
	if (!(t->fields[t->nfields].key = strdup(key))) {
		free(v);
		goto oom;
	}
	t->nfields++;
	return 0;
oom:
	err_memory(err, errlen, "out of memory");
	return -1;
}

int caltab_set_field(struct caltab *t, const char *key, const char *value, char *err, size_t errlen)
{
	return caltab_put_field(t, key, value, 0, err, errlen);
}

int caltab_set_fieldf(struct caltab *t, const char *key, char *err, size_t errlen, const char *fmt, ...)
{
	char value[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(value, sizeof value, fmt, ap);
	va_end(ap);
	return caltab_set_field(t, key, value, err, errlen);
}

const char *caltab_field(const struct caltab *t, const char *key)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (strcmp(t->fields[i].key, key) == 0)
			return t->fields[i].value;
	return NULL;
}

static unsigned long caltab_field_line(const struct caltab *t, const char *key)
{
	for (size_t i = 0; i < t->nfields; i++)
		if (strcmp(t->fields[i].key, key) == 0)
			return t->fields[i].line;
	return 0;
}

int caltab_add_row(struct caltab *t, const struct caltab_row *row, char *err, size_t errlen)
{
	if (GROW(t->rows, t->cap, t->nrows + 1, 64) != 0) {
		err_memory(err, errlen, "out of memory");
		return -1;
	}
	t->rows[t->nrows++] = *row;
	return 0;
}

/* A "# key: value" header comment: returns 1 and points key and value into
 * s (trampled), or 0 for a plain comment. Keys are [A-Za-z0-9_-]+. */
static int caltab_header_field(char *s, char **key, char **value)
{
	char *p = s + 1, *k;

	while (*p == ' ' || *p == '\t')
		p++;
	k = p;
	while (isalnum((unsigned char)*p) || *p == '_' || *p == '-')
		p++;
	if (p == k || *p != ':')
		return 0;
	*p = '\0';
	*key = k;
	*value = txt_trim(p + 1);
	return 1;
}

static int caltab_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)s[0]))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

static int caltab_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	if (s[0] == '\0')
		return -1;
	v = strtod(s, &end);
	if (*end != '\0' || !isfinite(v) || !(v > 0))
		return -1;
	*out = v;
	return 0;
}

/* Parses the column header line: col_of[i] = column id of field i. */
static int caltab_parse_columns(const struct caltab *t, unsigned long line, char *s, int *col_of, int *ncols,
                                char *err, size_t errlen)
{
	char *f[COL_COUNT + 1], where[600];
	int n = (int)txt_split(s, ',', f, COL_COUNT + 1), seen[COL_COUNT] = { 0 };

	caltab_where(t, line, where, sizeof where);
	if (n > COL_COUNT) {
		snprintf(err, errlen, "%s: %d columns; expected at most %d (%s)", where, n, COL_COUNT, CALTAB_COLUMNS);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		int c;

		for (c = 0; c < COL_COUNT; c++)
			if (strcmp(f[i], caltab_col_names[c]) == 0)
				break;
		if (c == COL_COUNT) {
			snprintf(err, errlen, "%s: unknown column '%s' (columns: %s)", where, f[i], CALTAB_COLUMNS);
			return -1;
		}
		if (seen[c]) {
			snprintf(err, errlen, "%s: column '%s' appears twice", where, f[i]);
			return -1;
		}
		seen[c] = 1;
		col_of[i] = c;
	}
	for (int c = 0; c < CALTAB_REQUIRED_COLS; c++) {
		if (!seen[c]) {
			snprintf(err, errlen, "%s: missing column '%s' (required: op,m_per_sample,k,n,batch,latency_s)",
			         where, caltab_col_names[c]);
			return -1;
		}
	}
	*ncols = n;
	return 0;
}

/* Parses one data line into *row. */
static int caltab_parse_row(const struct caltab *t, unsigned long line, char *s, const int *col_of, int ncols,
                            struct caltab_row *row, char *err, size_t errlen)
{
	char *f[COL_COUNT + 1], where[600];
	int n = (int)txt_split(s, ',', f, COL_COUNT + 1), have_measured = 0;

	caltab_where(t, line, where, sizeof where);
	memset(row, 0, sizeof *row);
	row->line = line;
	if (n != ncols) {
		snprintf(err, errlen, "%s: expected %d fields, got %d", where, ncols, n);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const char *name = caltab_col_names[col_of[i]];
		uint64_t u = 0;
		double d = 0;
		int c = col_of[i], bad = 0;

		switch (c) {
		case COL_OP: {
			int op;

			for (op = 0; op < CALTAB_OP_COUNT; op++)
				if (strcmp(f[i], caltab_op_names[op]) == 0)
					break;
			if (op == CALTAB_OP_COUNT) {
				snprintf(err, errlen, "%s: field op: unknown op '%s' (expected gemm, attn or elementwise)",
				         where, f[i]);
				return -1;
			}
			row->op = (enum caltab_op)op;
			break;
		}
		case COL_M: case COL_K: case COL_N: case COL_BATCH: case COL_REPS:
			bad = caltab_parse_u64(f[i], &u) != 0 ||
			      ((c == COL_BATCH || c == COL_REPS) && u > UINT32_MAX) ||
			      (c == COL_BATCH && u == 0);
			if (bad) {
				snprintf(err, errlen, "%s: field %s: '%s' is not a%s integer", where, name, f[i],
				         c == COL_BATCH ? " positive 32-bit" : c == COL_REPS ? " 32-bit unsigned" : "n unsigned");
				return -1;
			}
			if (c == COL_M)
				row->m_per_sample = u;
			else if (c == COL_K)
				row->k = u;
			else if (c == COL_N)
				row->n = u;
			else if (c == COL_BATCH)
				row->batch = (uint32_t)u;
			else
				row->reps = (uint32_t)u;
			break;
		default: /* latency_s, measured_s */
			if (caltab_parse_seconds(f[i], &d) != 0) {
				snprintf(err, errlen, "%s: field %s: '%s' is not a finite number > 0 (seconds)", where, name, f[i]);
				return -1;
			}
			if (c == COL_LATENCY)
				row->latency_s = d;
			else {
				row->measured_s = d;
				have_measured = 1;
			}
			break;
		}
	}
	if (!have_measured)
		row->measured_s = row->latency_s;
	return 0;
}

static int caltab_row_cmp(const void *pa, const void *pb)
{
	const struct caltab_row *a = pa, *b = pb;

	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	if (a->m_per_sample != b->m_per_sample)
		return a->m_per_sample < b->m_per_sample ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	if (a->n != b->n)
		return a->n < b->n ? -1 : 1;
	if (a->batch != b->batch)
		return a->batch < b->batch ? -1 : 1;
	return (a->line > b->line) - (a->line < b->line);
}

void caltab_sort(struct caltab *t)
{
	if (t->nrows > 1)
		qsort(t->rows, t->nrows, sizeof *t->rows, caltab_row_cmp);
}

static int caltab_same_shape(const struct caltab_row *a, const struct caltab_row *b)
{
	return a->op == b->op && a->m_per_sample == b->m_per_sample && a->k == b->k && a->n == b->n;
}

/* The checks of one row that need no other row. */
static int caltab_check_row(const struct caltab *t, const struct caltab_row *r, char *err, size_t errlen)
{
	char where[600];

	caltab_where(t, r->line, where, sizeof where);
	if ((unsigned)r->op >= CALTAB_OP_COUNT) {
		snprintf(err, errlen, "%s: field op: unknown op %d", where, (int)r->op);
		return -1;
	}
	if (r->m_per_sample == 0) {
		snprintf(err, errlen, "%s: field m_per_sample: must be >= 1", where);
		return -1;
	}
	if (r->op == CALTAB_ELEMENTWISE && (r->k != 0 || r->n != 0)) {
		snprintf(err, errlen, "%s: field %s: must be 0 for an elementwise row (got %llu)", where,
		         r->k != 0 ? "k" : "n", (unsigned long long)(r->k != 0 ? r->k : r->n));
		return -1;
	}
	if (r->op != CALTAB_ELEMENTWISE && (r->k == 0 || r->n == 0)) {
		snprintf(err, errlen, "%s: field %s: must be >= 1 for a %s row", where, r->k == 0 ? "k" : "n",
		         caltab_op_name(r->op));
		return -1;
	}
	if (r->batch == 0) {
		snprintf(err, errlen, "%s: field batch: must be >= 1", where);
		return -1;
	}
	if (!isfinite(r->latency_s) || !(r->latency_s > 0)) {
		snprintf(err, errlen, "%s: field latency_s: %g is not a finite number > 0", where, r->latency_s);
		return -1;
	}
	if (!isfinite(r->measured_s) || !(r->measured_s > 0)) {
		snprintf(err, errlen, "%s: field measured_s: %g is not a finite number > 0", where, r->measured_s);
		return -1;
	}
	return 0;
}

void caltab_shape_text(enum caltab_op op, uint64_t m_per_sample, uint64_t k, uint64_t n, char *buf, size_t len)
{
	if (op == CALTAB_ELEMENTWISE)
		snprintf(buf, len, "elementwise %llu ops/sample", (unsigned long long)m_per_sample);
	else
		snprintf(buf, len, "%s %llux%llux%llu", caltab_op_name(op), (unsigned long long)m_per_sample,
		         (unsigned long long)k, (unsigned long long)n);
}

int caltab_validate(struct caltab *t, char *err, size_t errlen)
{
	char where[600], shape[96];
	const char *name = t->path && *t->path ? t->path : "calibration table";

	if (!caltab_field(t, "device")) {
		snprintf(err, errlen, "%s: no '# device:' header field (expected cpu or gpu-NAME)", name);
		return -1;
	}
	if (caltab_check_device(t->device) != 0) {
		snprintf(err, errlen, "%s: field device: unknown device '%s' (expected cpu or gpu-NAME)",
		         caltab_where(t, caltab_field_line(t, "device"), where, sizeof where), t->device);
		return -1;
	}
	if (!caltab_field(t, "date") || !*caltab_field(t, "date")) {
		snprintf(err, errlen, "%s: no '# date:' header field (when the table was measured)", name);
		return -1;
	}
	if (t->nrows == 0) {
		snprintf(err, errlen, "%s: no data rows", name);
		return -1;
	}
	for (size_t i = 0; i < t->nrows; i++)
		if (caltab_check_row(t, &t->rows[i], err, errlen) != 0)
			return -1;
	caltab_sort(t);
	/* Report the problem on the earliest line, so the message does not
	 * depend on the sort order. */
	size_t bad = 0, other = 0;
	int kind = 0;  /* 1 duplicate, 2 decrease */
	for (size_t i = 1; i < t->nrows; i++) {
		const struct caltab_row *a = &t->rows[i - 1], *b = &t->rows[i];
		int k = 0;

		if (!caltab_same_shape(a, b))
			continue;
		if (a->batch == b->batch)
			k = 1;
		else if (b->latency_s < a->latency_s)
			k = 2;
		if (k && (!kind || b->line < t->rows[bad].line)) {
			kind = k;
			bad = i;
			other = i - 1;
		}
	}
	if (kind == 1) {
		caltab_shape_text(t->rows[bad].op, t->rows[bad].m_per_sample, t->rows[bad].k, t->rows[bad].n, shape,
		                  sizeof shape);
		snprintf(err, errlen, "%s: field batch: duplicate row for %s batch %u (first at line %lu)",
		         caltab_where(t, t->rows[bad].line, where, sizeof where), shape, t->rows[bad].batch,
		         t->rows[other].line);
		return -1;
	}
	if (kind == 2) {
		const struct caltab_row *a = &t->rows[other], *b = &t->rows[bad];

		caltab_shape_text(b->op, b->m_per_sample, b->k, b->n, shape, sizeof shape);
		snprintf(err, errlen, "%s: field latency_s: non-monotone: %s takes %g s at batch %u but %g s at the smaller "
		         "batch %u (line %lu); latency must not decrease with batch",
		         caltab_where(t, b->line, where, sizeof where), shape, b->latency_s, b->batch, a->latency_s,
		         a->batch, a->line);
		return -1;
	}
	return 0;
}

size_t caltab_make_monotone(struct caltab *t)
{
	size_t lowered = 0;

	caltab_sort(t);
	for (size_t end = t->nrows; end > 0;) {
		size_t first = end - 1;
		double best;

		while (first > 0 && caltab_same_shape(&t->rows[first - 1], &t->rows[end - 1]))
			first--;
		best = t->rows[end - 1].measured_s;
		for (size_t i = end; i-- > first;) {
			if (t->rows[i].measured_s < best)
				best = t->rows[i].measured_s;
			if (best < t->rows[i].measured_s)
				lowered++;
			t->rows[i].latency_s = best;
		}
		end = first;
	}
	return lowered;
}

long caltab_find_shape(const struct caltab *t, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n,
                       size_t *count)
{
	struct caltab_row key = { .op = op, .m_per_sample = m, .k = k, .n = n, .batch = 0 };
	size_t lo = 0, hi = t->nrows;

	*count = 0;
	while (lo < hi) {  /* first row >= (shape, batch 0) */
		size_t mid = lo + (hi - lo) / 2;

		if (caltab_row_cmp(&t->rows[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == t->nrows || !caltab_same_shape(&t->rows[lo], &key))
		return -1;
	for (hi = lo; hi < t->nrows && caltab_same_shape(&t->rows[hi], &key);)
		hi++;
	*count = hi - lo;
	return (long)lo;
}

/* The magic first line, or a column header starting with "op" at the
 * first line that is not blank or a comment. */
static int caltab_judge(char *line, unsigned long lineno, void *ctx)
{
	char *s = txt_trim(line), *fields[1];

	(void)ctx;
	if (lineno == 1 && strcmp(s, CALTAB_MAGIC) == 0)
		return 1;
	if (*s == '\0' || *s == '#')
		return -1;
	txt_split(s, ',', fields, 1);
	return strcmp(fields[0], "op") == 0;
}

int caltab_sniff(const char *path, char *err, size_t errlen)
{
	return txt_sniff_lines(path, caltab_judge, NULL, err, errlen);
}

int caltab_read(const char *path, struct caltab **out, char *err, size_t errlen)
{
	struct caltab *t = NULL;
	struct lines_reader rd = { 0 };
	char *line = NULL, where[600];
	size_t len;
	unsigned long lineno = 0;
	int col_of[COL_COUNT], ncols = 0, in_rows = 0, got;

	*out = NULL;
	if (caltab_create(&t) != 0)
		goto oom;
	free(t->path);
	if (!(t->path = strdup(path)))
		goto oom;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		goto fail;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		char *s = txt_trim(line), *key, *value;

		lineno = rd.lineno;
		if (!in_rows) {
			if (*s == '\0' || strcmp(s, CALTAB_MAGIC) == 0)
				continue;
			if (*s == '#') {
				if (!caltab_header_field(s, &key, &value))
					continue;
				if (caltab_field(t, key)) {
					snprintf(err, errlen, "%s: field %s: repeated header field (first at line %lu)",
					         caltab_where(t, lineno, where, sizeof where), key, caltab_field_line(t, key));
					goto fail;
				}
				if (caltab_put_field(t, key, value, lineno, err, errlen) != 0)
					goto fail;
				continue;
			}
			if (caltab_parse_columns(t, lineno, s, col_of, &ncols, err, errlen) != 0)
				goto fail;
			in_rows = 1;
			continue;
		}
		char *hash = strchr(s, '#');
		if (hash)
			*hash = '\0';
		s = txt_trim(s);
		if (*s == '\0')
			continue;
		struct caltab_row row;
		if (caltab_parse_row(t, lineno, s, col_of, ncols, &row, err, errlen) != 0 ||
		    caltab_check_row(t, &row, err, errlen) != 0 || caltab_add_row(t, &row, err, errlen) != 0)
			goto fail;
	}
	if (got < 0)
		goto fail;
	if (!in_rows) {
		snprintf(err, errlen, "%s: no column header line (expected %s)", path, CALTAB_COLUMNS);
		goto fail;
	}
	if (caltab_validate(t, err, errlen) != 0)
		goto fail;
	lines_close(&rd);
	*out = t;
	return 0;
oom:
	err_memory(err, errlen, "%s: out of memory", path);
fail:
	lines_close(&rd);
	caltab_destroy(t);
	return -1;
}

int caltab_write_file(struct caltab *t, const char *path, char *err, size_t errlen)
{
	struct outfile o;
	if (outfile_open(&o, path, err, errlen) != 0)
		return -1;
	if (caltab_write(t, o.f, path, err, errlen) != 0) {
		outfile_abort(&o);
		return -1;
	}
	return outfile_commit(&o, err, errlen);
}

int caltab_write(struct caltab *t, FILE *f, const char *name, char *err, size_t errlen)
{
	caltab_sort(t);
	fprintf(f, "%s\n", CALTAB_MAGIC);
	for (size_t i = 0; i < t->nfields; i++)
		fprintf(f, "# %s: %s\n", t->fields[i].key, t->fields[i].value);
	fprintf(f, "%s\n", CALTAB_COLUMNS);
	for (size_t i = 0; i < t->nrows; i++) {
		const struct caltab_row *r = &t->rows[i];

		fprintf(f, "%s,%llu,%llu,%llu,%u,%.6e,%.6e,%u\n", caltab_op_name(r->op),
		        (unsigned long long)r->m_per_sample, (unsigned long long)r->k, (unsigned long long)r->n,
		        r->batch, r->latency_s, r->measured_s, r->reps);
	}
	if (fflush(f) != 0 || ferror(f)) {
		err_io(err, errlen, "%s: write error: %s", name, err_strerror(errno));
		return -1;
	}
	return 0;
}
