/* hwmodels/node_table.c: the node latency table hardware model (--hw=FILE,
 * DESIGN.md section 4). It plays the role of LazyBatching's profiled
 * NodeLatency table (Sec. IV-C, Algorithm 1): latency per node type and batch
 * size, measured once and looked up by the scheduler.
 *
 * File format: CSV with the header node,batch,latency_s; `#` starts a comment
 * (whole line or trailing); blank lines are ignored. `node` is a node name of
 * the model or `*` for every node. A node that has rows of its own uses only
 * those: its rows replace the `*` rows as a whole rather than batch by batch,
 * so one node's curve never mixes two sources of measurements.
 *
 * A pass node's batch is the tokens it runs, its requests' input lengths
 * summed (models/FORMAT.md): its rows price the node over that many tokens,
 * the requests' attention over their own tokens included as measured, and
 * the table adds nothing per request (member_cost is zero). The table's
 * max batch is the other nodes'.
 *
 * Between listed batch sizes the latency is interpolated over batch size:
 * one point is the answer for that batch only, two points are joined by a
 * line, three or more by Steffen's monotone cubic (gsl_interp_steffen), which
 * never overshoots the data, so a monotone table stays monotone and
 * non-negative latencies stay non-negative. Listed points are returned
 * exactly. Batches outside [smallest, largest] listed are errors: we do not
 * extrapolate measurements. Latencies need not increase with batch (measured
 * tables can dip), but must be finite and >= 0.
 *
 * One comment is read: "# task_overhead_s: S", the seconds of each row that
 * a task pays once however many nodes it runs (handing it to the device and
 * waiting for its end), which a table measured with one node a task carries
 * in every row (`live --profile-out` measures it, runtime/profile.c): a
 * graph task of n nodes costs its rows less n - 1 times S (hwmodel.h
 * task_overhead). At most once, finite, >= 0 and no more than any row.
 *
 * GSL's error handler is never reached: points are strictly increasing and
 * queries are range-checked before any GSL call.
 */
#include "../util/lines.h"
#include "../util/grow.h"
#include "../util/errkind.h"
#include "../util/text.h"
#include "node_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_curve.h"

#define HWTABLE_STAR UINT32_MAX   /* node id of `*` rows; sorts after every real node */

struct hwtable_row {
	uint32_t node;       /* model node index, or HWTABLE_STAR */
	uint32_t batch;
	double latency_s;
	unsigned long line;  /* 1-based line in the file, for messages */
};

struct hwtable_curve {
	struct batch_curve bc;  /* the node's listed batches, on linear axes */
};

struct hwtable_hw {
	struct hw_model base;          /* first: the hw_model the caller sees */
	char *path;                    /* as given, for messages */
	uint32_t ncurves;              /* = model nnodes */
	struct hwtable_curve *curves;  /* one per model node */
	uint32_t max_batch;            /* smallest "largest listed batch" over nodes other than pass nodes (0: none) */
	double task_overhead_s;        /* "# task_overhead_s: S" (0 without) */
};

#define HWTABLE_OVERHEAD_KEY "task_overhead_s:"

/* Cuts a trailing comment and surrounding blanks and line ends. */
static char *hwtable_clean(char *s)
{
	char *hash = strchr(s, '#');
	size_t len;

	if (hash)
		*hash = '\0';
	while (*s == ' ' || *s == '\t')
		s++;
	len = strlen(s);
	while (len > 0 && strchr(" \t\r\n", s[len - 1]))
		s[--len] = '\0';
	return s;
}

/* Whether a cleaned line is the header; tramples the line. */
static int hwtable_is_header(char *line)
{
	char *f[3];

	return (int)txt_split(line, ',', f, 3) == 3 && strcmp(f[0], "node") == 0 &&
	       strcmp(f[1], "batch") == 0 && strcmp(f[2], "latency_s") == 0;
}

/* The first line with data, which must be the header; ctx records its number. */
static int hwtable_judge(char *line, unsigned long lineno, void *ctx)
{
	char *s = hwtable_clean(line);

	if (*s == '\0')
		return -1;
	*(unsigned long *)ctx = lineno;
	return hwtable_is_header(s);
}

int hwtable_sniff(const char *path, unsigned long *lineno, char *err, size_t errlen)
{
	*lineno = 0;
	return txt_sniff_lines(path, hwtable_judge, lineno, err, errlen);
}

static int hwtable_row_cmp(const void *pa, const void *pb)
{
	const struct hwtable_row *a = pa, *b = pb;

	if (a->node != b->node)
		return a->node < b->node ? -1 : 1;
	if (a->batch != b->batch)
		return a->batch < b->batch ? -1 : 1;
	return (a->line > b->line) - (a->line < b->line);
}

static const char *hwtable_node_name(const struct mdl_model *m, uint32_t node)
{
	return node == HWTABLE_STAR ? "*" : m->nodes[node].name;
}

/* Parses one cleaned, non-blank data line into *row. */
static int hwtable_parse_row(const char *path, unsigned long lineno, char *s,
                             const struct mdl_model *m, struct hwtable_row *row,
                             char *err, size_t errlen)
{
	char *f[3], *end;
	int nf = (int)txt_split(s, ',', f, 3);
	unsigned long long batch;
	double lat;

	if (nf != 3) {
		snprintf(err, errlen, "%s:%lu: expected 3 fields (node,batch,latency_s), got %d",
		         path, lineno, nf);
		return -1;
	}
	if (strcmp(f[0], "*") == 0) {
		row->node = HWTABLE_STAR;
	} else {
		uint32_t i;

		for (i = 0; i < m->nnodes; i++)
			if (strcmp(f[0], m->nodes[i].name) == 0)
				break;
		if (i == m->nnodes) {
			snprintf(err, errlen, "%s:%lu: node '%s' is not a node of model %s",
			         path, lineno, f[0], m->name);
			return -1;
		}
		row->node = i;
	}

	errno = 0;
	batch = (f[1][0] >= '0' && f[1][0] <= '9') ? strtoull(f[1], &end, 10) : 0;
	if (batch == 0 || *end != '\0' || errno == ERANGE || batch > UINT32_MAX) {
		snprintf(err, errlen, "%s:%lu: batch '%s' is not a positive integer", path, lineno, f[1]);
		return -1;
	}
	row->batch = (uint32_t)batch;

	lat = strtod(f[2], &end);
	if (f[2][0] == '\0' || *end != '\0' || !isfinite(lat) || lat < 0) {
		snprintf(err, errlen, "%s:%lu: latency '%s' is not a finite number >= 0",
		         path, lineno, f[2]);
		return -1;
	}
	row->latency_s = lat;
	row->line = lineno;
	return 0;
}

/* Whether line is the comment "# task_overhead_s: S": 1 with *s, 0 another line (its trailing blanks
 * trimmed, nothing else changed), -1 with err (a bad or repeated value; *seen_line is the line of the
 * first). */
static int hwtable_overhead_line(const char *path, unsigned long lineno, char *line, double *s,
                                 unsigned long *seen_line, char *err, size_t errlen)
{
	char *p = txt_trim(line);
	if (*p != '#')
		return 0;
	p = txt_trim(p + 1);
	if (strncmp(p, HWTABLE_OVERHEAD_KEY, strlen(HWTABLE_OVERHEAD_KEY)) != 0)
		return 0;
	char *v = txt_trim(p + strlen(HWTABLE_OVERHEAD_KEY));
	double x;
	if (txt_parse_double(v, &x) != 0 || x < 0) {
		snprintf(err, errlen, "%s:%lu: task_overhead_s '%.40s' is not a finite number >= 0", path, lineno, v);
		return -1;
	}
	if (*seen_line) {
		snprintf(err, errlen, "%s:%lu: task_overhead_s given again (first on line %lu)", path, lineno, *seen_line);
		return -1;
	}
	*seen_line = lineno;
	*s = x;
	return 1;
}

/* Reads every data row of the file, and its task overhead. *rows is caller-freed, also on failure. */
static int hwtable_read(const char *path, const struct mdl_model *m, struct hwtable_row **rows,
                        size_t *nrows, double *overhead_s, char *err, size_t errlen)
{
	unsigned long overhead_line = 0;
	struct lines_reader rd;
	char *line = NULL;
	size_t len, alloc = 0;
	unsigned long lineno = 0;
	int seen_header = 0, rc = -1, got;

	*rows = NULL;
	*nrows = 0;
	if (lines_open(&rd, path, LINES_MAX_SMALL_FILE, err, errlen) != 0)
		return -1;
	*overhead_s = 0;
	while ((got = lines_next(&rd, &line, &len, err, errlen)) > 0) {
		lineno = rd.lineno;
		if (hwtable_overhead_line(path, lineno, line, overhead_s, &overhead_line, err, errlen) < 0)
			goto out;
		char *s = hwtable_clean(line);

		if (*s == '\0')
			continue;
		if (!seen_header) {
			if (!hwtable_is_header(s)) {
				snprintf(err, errlen, "%s:%lu: expected header %s", path, lineno,
				         HWTABLE_HEADER);
				goto out;
			}
			seen_header = 1;
			continue;
		}
		if (grow_array(rows, &alloc, *nrows + 1, 64, sizeof **rows) != 0) {
			err_memory(err, errlen, "%s: out of memory", path);
			goto out;
		}
		if (hwtable_parse_row(path, lineno, s, m, &(*rows)[*nrows], err, errlen))
			goto out;
		(*nrows)++;
	}
	if (got < 0)
		goto out;
	if (!seen_header) {
		snprintf(err, errlen, "%s: no header: expected %s", path, HWTABLE_HEADER);
		goto out;
	}
	for (size_t i = 0; i < *nrows; i++)
		if ((*rows)[i].latency_s < *overhead_s) {
			snprintf(err, errlen, "%s:%lu: latency %g s is below the task_overhead_s of line %lu (%g s), which "
			         "every row includes", path, (*rows)[i].line, (*rows)[i].latency_s, overhead_line, *overhead_s);
			goto out;
		}
	rc = 0;
out:
	lines_close(&rd);
	return rc;
}

/* rows sorted by (node, batch, line): the earliest line that repeats a
 * (node, batch) pair is reported, with the line it repeats. */
static int hwtable_check_duplicates(const char *path, const struct mdl_model *m,
                                    const struct hwtable_row *rows, size_t n,
                                    char *err, size_t errlen)
{
	size_t dup = 0, first = 0;
	int found = 0;

	for (size_t i = 1, group = 0; i < n; i++) {
		if (rows[i].node != rows[i - 1].node || rows[i].batch != rows[i - 1].batch) {
			group = i;
			continue;
		}
		if (!found || rows[i].line < rows[dup].line) {
			dup = i;
			first = group;
			found = 1;
		}
	}
	if (!found)
		return 0;
	snprintf(err, errlen, "%s:%lu: duplicate row for node %s batch %u (first at line %lu)",
	         path, rows[dup].line, hwtable_node_name(m, rows[dup].node), rows[dup].batch,
	         rows[first].line);
	return -1;
}

static void hwtable_curve_free(struct hwtable_curve *c)
{
	bc_free(&c->bc);
}

/* Builds one curve from n rows of one node, sorted by batch, no repeats. */
static int hwtable_curve_build(struct hwtable_curve *c, const struct hwtable_row *rows, size_t n)
{
	if (bc_alloc(&c->bc, n, 0) != 0)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		c->bc.batch[i] = rows[i].batch;
		c->bc.latency_s[i] = rows[i].latency_s;
	}
	if (bc_fit(&c->bc) == 0)
		return 0;
fail:
	hwtable_curve_free(c);
	return -1;
}

static void hwtable_close(struct hw_model *hw)
{
	struct hwtable_hw *t = (struct hwtable_hw *)hw;

	if (!t)
		return;
	for (uint32_t i = 0; t->curves && i < t->ncurves; i++)
		hwtable_curve_free(&t->curves[i]);
	free(t->curves);
	free(t->path);
	free(t);
}

/* The label is the path as given; a path too long for the label field is
 * shortened to its last component. */
static void hwtable_set_label(struct hwtable_hw *t, const char *path)
{
	const char *base = strrchr(path, '/');

	if (strlen(path) < sizeof t->base.label || !base || base[1] == '\0')
		snprintf(t->base.label, sizeof t->base.label, "%s", path);
	else
		snprintf(t->base.label, sizeof t->base.label, "%s", base + 1);
}

static int hwtable_open(const char *path, const struct mdl_model *m, struct hw_model **out,
                        char *err, size_t errlen)
{
	struct hwtable_row *rows = NULL;
	size_t nrows = 0, star_first = 0, star_n = 0;
	struct hwtable_hw *t = NULL;
	double overhead_s = 0;

	*out = NULL;
	if (!m) {
		snprintf(err, errlen, "%s: a node latency table needs a model", path);
		return -1;
	}
	if (hwtable_read(path, m, &rows, &nrows, &overhead_s, err, errlen))
		goto fail;
	if (nrows > 1)         /* qsort of a NULL array, even of 0 rows, is undefined */
		qsort(rows, nrows, sizeof *rows, hwtable_row_cmp);
	if (hwtable_check_duplicates(path, m, rows, nrows, err, errlen))
		goto fail;

	t = calloc(1, sizeof *t);
	if (!t || !(t->path = strdup(path)) ||
	    (m->nnodes && !(t->curves = calloc(m->nnodes, sizeof *t->curves)))) {
		err_memory(err, errlen, "%s: out of memory", path);
		goto fail;
	}
	t->base.ops = &hwtable_ops;
	t->base.model = m;
	t->task_overhead_s = overhead_s;
	hwtable_set_label(t, path);
	t->ncurves = m->nnodes;

	/* `*` rows sort last */
	for (star_first = nrows; star_first > 0 && rows[star_first - 1].node == HWTABLE_STAR;)
		star_first--;
	star_n = nrows - star_first;

	for (size_t node = 0, i = 0; node < m->nnodes; node++) {
		size_t first, n;

		while (i < star_first && rows[i].node < node)
			i++;
		for (n = 0; i + n < star_first && rows[i + n].node == node;)
			n++;
		first = n ? i : star_first;
		if (!n)
			n = star_n;
		if (!n) {
			snprintf(err, errlen, "%s: node %s of model %s has no rows and the table has no '*' rows",
			         path, m->nodes[node].name, m->name);
			goto fail;
		}
		if (hwtable_curve_build(&t->curves[node], rows + first, n)) {
			err_memory(err, errlen, "%s: out of memory", path);
			goto fail;
		}
		/* a pass node's batch counts tokens: the members' bound is the others' */
		if (!mdl_is_pass(m, (uint32_t)node) && (!t->max_batch || rows[first + n - 1].batch < t->max_batch))
			t->max_batch = rows[first + n - 1].batch;
	}
	free(rows);
	*out = &t->base;
	return 0;

fail:
	free(rows);
	hwtable_close(t ? &t->base : NULL);
	return -1;
}

static int hwtable_node_cost(const struct hw_model *hw, uint32_t node_type, uint32_t batch,
                             struct hw_node_cost *out, char *err, size_t errlen)
{
	const struct hwtable_hw *t = (const struct hwtable_hw *)hw;
	const struct hwtable_curve *c;
	uint32_t first, last;

	memset(out, 0, sizeof *out);
	if (node_type >= t->ncurves) {
		snprintf(err, errlen, "%s: node type %u out of range (model has %u)", t->path,
		         node_type, t->ncurves);
		return -1;
	}
	c = &t->curves[node_type];
	first = (uint32_t)c->bc.batch[0];
	last = (uint32_t)c->bc.batch[c->bc.npoints - 1];
	const char *unit = mdl_is_pass(hw->model, node_type) ? "tokens" : "batch";
	if (batch > last) {
		snprintf(err, errlen, "%s: node %s has no latency for %s %u (largest listed is %u)",
		         t->path, hw->model->nodes[node_type].name, unit, batch, last);
		return -1;
	}
	if (batch < first) {
		snprintf(err, errlen, "%s: node %s has no latency for %s %u (smallest listed is %u)",
		         t->path, hw->model->nodes[node_type].name, unit, batch, first);
		return -1;
	}

	out->seconds = bc_eval(&c->bc, batch);
	out->compute_seconds = 0;
	out->memory_seconds = 0;
	out->bound = HW_COMPUTE_BOUND;
	return 0;
}

/* A pass node's rows price its tokens with its members' own attention in
 * them, as they were measured (the live profile runs pass nodes over
 * requests of its representative length, runtime/profile.c): nothing is
 * added per request. */
static int hwtable_member_cost(const struct hw_model *hw, uint32_t node_type, uint32_t len,
                               struct hw_node_cost *out, char *err, size_t errlen)
{
	(void)hw;
	(void)node_type;
	(void)len;
	(void)err;
	(void)errlen;
	memset(out, 0, sizeof *out);
	return 0;
}

static uint32_t hwtable_max_batch(const struct hw_model *hw)
{
	return ((const struct hwtable_hw *)hw)->max_batch;
}

static double hwtable_task_overhead(const struct hw_model *hw)
{
	return ((const struct hwtable_hw *)hw)->task_overhead_s;
}

const struct hw_ops hwtable_ops = {
	.name = "table",
	.help = "node latency table: a CSV file node,batch,latency_s (--hw=FILE)",
	.open = hwtable_open,
	.close = hwtable_close,
	.node_cost = hwtable_node_cost,
	.gemm_cost = NULL,
	.max_batch = hwtable_max_batch,
	.member_cost = hwtable_member_cost,
	.task_overhead = hwtable_task_overhead,
};
