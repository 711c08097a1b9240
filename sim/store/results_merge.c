/* sim/store/results_merge.c: merging results databases (results_merge.h).
 *
 * The copy is generic over the schema: three families of rows, runs,
 * configuration searches and capacity answers, each a parent table (`runs`, `searches`, `capacities`) and every
 * table with a foreign key to it, whose columns are read from OUT's own
 * schema (PRAGMA table_info / foreign_key_list), so a table added to the
 * schema later is merged without touching this file. Identities of runs and
 * searches already seen live in a TEMP table of OUT's connection (never in
 * the file). */
#include "results_merge.h"
#include "results_db.h"
#include "../../util/grow.h"
#include "../../util/errkind.h"
#include "../../util/sqlite_read.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "results.h"

#define RMERGE_BUSY_MS 10000
#define RMERGE_MAX_TABLES 32
#define RMERGE_MAX_COLS 64

/* Options that only say where output went; they do not change a run. */
static const char *const rmerge_routing_keys[] = {
	"db", "no-db", "json", "quiet", "requests-out", "timeline-out", "db-requests", "dry-run",
};

struct rmerge_table {                 /* one table copied per run */
	char name[64];
	char fk[64];                      /* the column holding run_id */
	char cols[RMERGE_MAX_COLS][64];
	size_t ncols;
	sqlite3_stmt *ins;                /* owned: INSERT INTO main.<name> */
};

/* A parent table and the tables that reference it: copied together, the
 * parent's id assigned afresh in OUT. */
struct rmerge_family {
	struct rmerge_table parent;       /* fk unused: its id column is left out and assigned */
	const char *id;                   /* that column */
	struct rmerge_table child[RMERGE_MAX_TABLES];
	size_t nchild;
	int present;                      /* OUT has the parent table */
};

enum { RM_RUNS, RM_SEARCHES, RM_CAPACITIES, RM_FAMILIES };
static const char *const rm_parent_name[RM_FAMILIES] = { "runs", "searches", "capacities" };
static const char *const rm_parent_id[RM_FAMILIES] = { "run_id", "search_id", "capacity_id" };

struct rmerge {
	const char *out_path;
	sqlite3 *out;                     /* owned */
	struct rmerge_family fam[RM_FAMILIES];
	sqlite3_stmt *seen;               /* owned: INSERT OR IGNORE INTO temp.rmerge_seen */
	char *err;
	size_t errlen;
};

static int rm_fail(struct rmerge *m, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->err, m->errlen, fmt, ap);
	va_end(ap);
	return code;
}

/* A shard SQLite finds damaged or not a database is bad input, as it is to
 * run and compare; any other read failure is the machine's. */
static int rm_read_code(sqlite3 *db)
{
	int e = sqlite3_errcode(db);
	return e == SQLITE_CORRUPT || e == SQLITE_NOTADB ? RMERGE_BAD_INPUT : -1;
}

int rmerge_read_version(sqlite3 *db, const char *path, char *ver, size_t verlen, char *err, size_t errlen)
{
	sqlite3_stmt *st = NULL;
	int rc = sqlite3_prepare_v2(db, "SELECT (SELECT value FROM simbatch_meta WHERE key = 'application'),"
	                            " (SELECT value FROM simbatch_meta WHERE key = 'schema_version')", -1, &st, NULL);
	if (rc != SQLITE_OK) {
		/* no simbatch_meta table, or not an SQLite file at all */
		int foreign = (rc & 0xff) == SQLITE_ERROR || (rc & 0xff) == SQLITE_NOTADB;
		snprintf(err, errlen, foreign ? "'%s' is not a simbatch results database" : "cannot read '%s': %s", path,
		         err_sqlite_msg(db));
		return foreign ? RMERGE_BAD_INPUT : -1;
	}
	rc = sqlite3_step(st);
	if (rc != SQLITE_ROW) {
		snprintf(err, errlen, "cannot read '%s': %s", path, err_sqlite_msg(db));
		sqlite3_finalize(st);
		return -1;
	}
	const unsigned char *app = sqlite3_column_text(st, 0), *v = sqlite3_column_text(st, 1);
	if (!app || strcmp((const char *)app, "simbatch") != 0) {
		snprintf(err, errlen, "'%s' is not a simbatch results database", path);
		sqlite3_finalize(st);
		return RMERGE_BAD_INPUT;
	}
	snprintf(ver, verlen, "%s", v ? (const char *)v : "(none)");
	sqlite3_finalize(st);
	return 0;
}

/* "name" with quotes doubled, for identifiers read from a schema. */
static void rm_quote(char *dst, size_t len, const char *id)
{
	size_t k = 0;
	if (len < 3)
		return;
	dst[k++] = '"';
	for (; *id && k + 3 < len; id++) {
		if (*id == '"')
			dst[k++] = '"';
		dst[k++] = *id;
	}
	dst[k++] = '"';
	dst[k] = '\0';
}

/* Reads the column names of table name in db into t (all of them, or all
 * but skip). Returns the count (0: no such table) or -1. */
static int rm_columns(sqlite3 *db, const char *name, const char *skip, struct rmerge_table *t)
{
	sqlite3_stmt *st = NULL;
	t->ncols = 0;
	if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?1) ORDER BY cid", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *c = (const char *)sqlite3_column_text(st, 0);
		if (!c || (skip && strcmp(c, skip) == 0))
			continue;
		if (t->ncols == RMERGE_MAX_COLS || strlen(c) >= sizeof t->cols[0]) {
			sqlite3_finalize(st);
			return -1;
		}
		snprintf(t->cols[t->ncols++], sizeof t->cols[0], "%s", c);
	}
	sqlite3_finalize(st);
	return rc == SQLITE_DONE ? (int)t->ncols : -1;
}

/* Learns OUT's tables: each family's parent (runs, searches), and every table whose foreign key names it. */
static int rm_schema(struct rmerge *m)
{
	for (int f = 0; f < RM_FAMILIES; f++) {
		struct rmerge_family *fam = &m->fam[f];
		sqlite3_stmt *st = NULL;
		fam->id = rm_parent_id[f];
		snprintf(fam->parent.name, sizeof fam->parent.name, "%s", rm_parent_name[f]);
		int n = rm_columns(m->out, fam->parent.name, fam->id, &fam->parent);
		if (n < 0 || (n == 0 && f == RM_RUNS))
			return rm_fail(m, -1, "cannot read the schema of '%s': %s", m->out_path, err_sqlite_msg(m->out));
		if (!(fam->present = n > 0))
			continue;
		if (sqlite3_prepare_v2(m->out, "SELECT t.name, f.\"from\" FROM sqlite_schema t, pragma_foreign_key_list(t.name) f"
		                       " WHERE t.type = 'table' AND f.\"table\" = ?1 ORDER BY t.name", -1, &st, NULL) != SQLITE_OK)
			return rm_fail(m, -1, "cannot read the schema of '%s': %s", m->out_path, err_sqlite_msg(m->out));
		sqlite3_bind_text(st, 1, fam->parent.name, -1, SQLITE_STATIC);
		int rc;
		while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(st, 0), *fk = (const char *)sqlite3_column_text(st, 1);
			if (fam->nchild == RMERGE_MAX_TABLES || !name || !fk || strlen(name) >= 64 || strlen(fk) >= 64) {
				sqlite3_finalize(st);
				return rm_fail(m, -1, "'%s': schema too large to merge", m->out_path);
			}
			struct rmerge_table *t = &fam->child[fam->nchild++];
			snprintf(t->name, sizeof t->name, "%s", name);
			snprintf(t->fk, sizeof t->fk, "%s", fk);
		}
		sqlite3_finalize(st);
		if (rc != SQLITE_DONE)
			return rm_fail(m, -1, "cannot read the schema of '%s': %s", m->out_path, err_sqlite_msg(m->out));
		for (size_t i = 0; i < fam->nchild; i++)
			if (rm_columns(m->out, fam->child[i].name, NULL, &fam->child[i]) <= 0)
				return rm_fail(m, -1, "cannot read the schema of '%s': %s", m->out_path, err_sqlite_msg(m->out));
	}
	return 0;
}

/* OUT's table called name (a parent or a child of one), and in *skip the column left out of its copy
 * (a parent's id; NULL for a child); NULL when OUT has none. */
static const struct rmerge_table *rm_table_named(const struct rmerge *m, const char *name, const char **skip)
{
	for (int f = 0; f < RM_FAMILIES; f++) {
		const struct rmerge_family *fam = &m->fam[f];
		if (!fam->present)
			continue;
		if (strcmp(fam->parent.name, name) == 0) {
			*skip = fam->id;
			return &fam->parent;
		}
		for (size_t i = 0; i < fam->nchild; i++)
			if (strcmp(fam->child[i].name, name) == 0) {
				*skip = NULL;
				return &fam->child[i];
			}
	}
	return NULL;
}

/* Prepares "INSERT INTO main.T(cols) VALUES(?1..?n)" for t. */
static int rm_prepare_insert(struct rmerge *m, struct rmerge_table *t)
{
	char sql[8192], q[140];
	size_t used = 0;
	rm_quote(q, sizeof q, t->name);
	used += (size_t)snprintf(sql + used, sizeof sql - used, "INSERT INTO main.%s(", q);
	for (size_t i = 0; i < t->ncols; i++) {
		rm_quote(q, sizeof q, t->cols[i]);
		used += (size_t)snprintf(sql + used, sizeof sql - used, "%s%s", i ? ", " : "", q);
	}
	used += (size_t)snprintf(sql + used, sizeof sql - used, ") VALUES(");
	for (size_t i = 0; i < t->ncols && used < sizeof sql; i++)
		used += (size_t)snprintf(sql + used, sizeof sql - used, "%s?%zu", i ? ", " : "", i + 1);
	if (used + 2 >= sizeof sql)
		return rm_fail(m, -1, "'%s': schema too large to merge", m->out_path);
	snprintf(sql + used, sizeof sql - used, ")");
	if (sqlite3_prepare_v2(m->out, sql, -1, &t->ins, NULL) != SQLITE_OK)
		return rm_fail(m, -1, "cannot prepare a merge into '%s': %s", m->out_path, err_sqlite_msg(m->out));
	return 0;
}

/* Opens a shard to read and reads its schema version: 0, or RMERGE_BAD_INPUT (-1 for the
 * machine's failures) with the reason; *db is to be closed either way. */
static int rm_open_versioned(struct rmerge *m, const char *path, sqlite3 **db, char *ver, size_t verlen)
{
	int rc = sqlite_open_read(path, db);
	if (rc != SQLITE_OK) {
		rm_fail(m, RMERGE_BAD_INPUT, "cannot open shard '%s': %s", path,
		        (rc & 0xff) == SQLITE_CANTOPEN ? "no such file, or not readable" : err_sqlite_str(rc));
		return RMERGE_BAD_INPUT;
	}
	sqlite3_busy_timeout(*db, RMERGE_BUSY_MS);
	return rmerge_read_version(*db, path, ver, verlen, m->err, m->errlen);
}

/* A shard read whole before anything is written: 0, or RMERGE_BAD_INPUT (-1 for the machine's
 * failures) with the reason. */
static int rm_shard_whole(struct rmerge *m, const char *path)
{
	char ver[32];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int code = rm_open_versioned(m, path, &db, ver, sizeof ver);
	if (code != 0)
		goto done;
	code = RMERGE_BAD_INPUT;
	if (atoi(ver) < 1 || atoi(ver) > RESULTS_SCHEMA_VERSION) {
		rm_fail(m, code, "cannot merge '%s': schema version %s (this simbatch writes %d)", path, ver,
		        RESULTS_SCHEMA_VERSION);
		goto done;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW ||
	    strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0) {
		rm_fail(m, code, "cannot read '%s': database disk image is malformed", path);
		goto done;
	}
	code = 0;
done:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return code;
}

/* Opens a shard read-only and checks it can be merged into OUT: a simbatch
 * database of OUT's schema version, with no table or column OUT lacks (a
 * column or table OUT has and the shard lacks is fine: NULL / no rows). */
static int rm_open_shard(struct rmerge *m, const char *path, const char *out_ver, sqlite3 **out)
{
	char ver[32];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int rc;
	*out = NULL;
	int code = rm_open_versioned(m, path, &db, ver, sizeof ver);
	if (code != 0)
		goto fail;
	code = RMERGE_BAD_INPUT;
	/* an older shard merges into a newer OUT: its columns are a subset (checked
	 * below) and the ones it lacks stay NULL, as in a database upgraded in place */
	if (atoi(ver) < 1 || atoi(ver) > atoi(out_ver)) {
		rm_fail(m, code, "cannot merge '%s' (schema version %s) into '%s' (schema version %s): "
		        "a newer shard does not fit an older database", path, ver, m->out_path, out_ver);
		goto fail;
	}
	if (sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
	                       -1, &st, NULL) != SQLITE_OK) {
		code = rm_fail(m, rm_read_code(db), "cannot read shard '%s': %s", path, err_sqlite_msg(db));
		goto fail;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		/* what the file says of itself, not rows: its application and version, the metric names it was written by */
		if (!name || strcmp(name, "simbatch_meta") == 0 || strcmp(name, "metric_names") == 0)
			continue;
		const char *skip = NULL;
		const struct rmerge_table *mine = rm_table_named(m, name, &skip);
		if (!mine) {
			rm_fail(m, code, "shard '%s' has a table '%s' that '%s' lacks (written by another simbatch "
			        "with the same schema version?)", path, name, m->out_path);
			goto fail;
		}
		struct rmerge_table theirs;
		if (rm_columns(db, name, skip, &theirs) < 0) {
			code = rm_fail(m, rm_read_code(db), "cannot read shard '%s': %s", path, err_sqlite_msg(db));
			goto fail;
		}
		for (size_t c = 0; c < theirs.ncols; c++) {
			size_t k = 0;
			while (k < mine->ncols && strcmp(mine->cols[k], theirs.cols[c]) != 0)
				k++;
			if (k == mine->ncols) {
				rm_fail(m, code, "shard '%s' has a column %s.%s that '%s' lacks", path, name,
				        theirs.cols[c], m->out_path);
				goto fail;
			}
		}
	}
	if (rc != SQLITE_DONE) {
		code = rm_fail(m, rm_read_code(db), "cannot read shard '%s': %s", path, err_sqlite_msg(db));
		goto fail;
	}
	sqlite3_finalize(st);
	*out = db;
	return 0;
fail:
	sqlite3_finalize(st);
	sqlite3_close(db);
	return code;
}

/* Appends s to a growing string; -1 on allocation failure. */
static int rm_cat(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s);
	if (grow_array(buf, cap, *len + n + 1, 256, 1) != 0)
		return -1;
	memcpy(*buf + *len, s, n + 1);
	*len += n;
	return 0;
}

static int rm_is_routing(const char *key)
{
	for (size_t i = 0; i < sizeof rmerge_routing_keys / sizeof rmerge_routing_keys[0]; i++)
		if (strcmp(key, rmerge_routing_keys[i]) == 0)
			return 1;
	return 0;
}

/* A database runs and searches are read from (a shard, or OUT itself while
 * it is indexed), with its statements prepared once. */
struct rm_src {
	sqlite3 *db;                      /* not owned */
	const char *path;
	sqlite3_stmt *id_run, *id_cfg;    /* owned: identity queries (a run's) ... */
	sqlite3_stmt *id_search;          /* ... a search's (NULL: the database has no searches) */
	sqlite3_stmt *id_capacity;        /* ... a capacity's (NULL: the database has none, before schema 7) */
	sqlite3_stmt *sel[RM_FAMILIES][1 + RMERGE_MAX_TABLES];  /* owned: the parent, then its children; NULL:
	                                                         * no such table */
};

static void rm_src_release(struct rm_src *s)
{
	sqlite3_finalize(s->id_run);
	sqlite3_finalize(s->id_cfg);
	sqlite3_finalize(s->id_search);
	sqlite3_finalize(s->id_capacity);
	for (int f = 0; f < RM_FAMILIES; f++)
		for (size_t i = 0; i < 1 + RMERGE_MAX_TABLES; i++)
			sqlite3_finalize(s->sel[f][i]);
	memset(s, 0, sizeof *s);
}

static int rm_src_init(struct rmerge *m, struct rm_src *s, sqlite3 *db, const char *path)
{
	memset(s, 0, sizeof *s);
	s->db = db;
	s->path = path;
	if (sqlite3_prepare_v2(db, "SELECT coalesce(code_version, ''), live, coalesce(created_utc, '')"
	                       " FROM runs WHERE run_id = ?1", -1, &s->id_run, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT key, coalesce(value, '') FROM run_config WHERE run_id = ?1 ORDER BY key",
	                       -1, &s->id_cfg, NULL) != SQLITE_OK) {
		rm_fail(m, rm_read_code(db), "cannot read '%s': %s", path, err_sqlite_msg(db));
		rm_src_release(s);
		return -1;
	}
	/* a search is what it asked and what it found: its code, file, text and report (older files have none) */
	if (sqlite3_prepare_v2(db, "SELECT coalesce(code_version, ''), coalesce(file, ''), coalesce(spec_text, ''),"
	                       " coalesce(report_json, '') FROM searches WHERE search_id = ?1", -1, &s->id_search,
	                       NULL) != SQLITE_OK)
		s->id_search = NULL;
	/* a capacity answer is what it ran and what it found: its code, probes' options and report */
	if (sqlite3_prepare_v2(db, "SELECT coalesce(code_version, ''), coalesce(run_options, ''), coalesce(report_json, ''),"
	                       " '' FROM capacities WHERE capacity_id = ?1", -1, &s->id_capacity, NULL) != SQLITE_OK)
		s->id_capacity = NULL;
	return 0;
}

/* The identity text of a search or capacity id (tag names which): its statement's four columns (a
 * search's code version, file, text and report; a capacity's code version, options and report);
 * malloc'd, or NULL. */
static char *rm_doc_identity(sqlite3_stmt *st, const char *tag, sqlite3_int64 id)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ok = 0;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) == SQLITE_ROW) {
		ok = !rm_cat(&buf, &len, &cap, tag);
		for (int c = 0; ok && c < 4; c++)
			ok = !rm_cat(&buf, &len, &cap, (const char *)sqlite3_column_text(st, c)) &&
			     !rm_cat(&buf, &len, &cap, "\n");
	}
	sqlite3_reset(st);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The identity text of run id (see results_merge.h); malloc'd, or NULL. */
static char *rm_identity(struct rm_src *s, sqlite3_int64 id)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int ok = 0, rc;
	sqlite3_stmt *st = s->id_run;
	sqlite3_bind_int64(st, 1, id);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto done;
	int live = sqlite3_column_int(st, 1);
	if (rm_cat(&buf, &len, &cap, "code_version=") || rm_cat(&buf, &len, &cap, (const char *)sqlite3_column_text(st, 0)) ||
	    rm_cat(&buf, &len, &cap, live ? "\nlive=1\ncreated=" : "\nlive=0\n") ||
	    (live && (rm_cat(&buf, &len, &cap, (const char *)sqlite3_column_text(st, 2)) || rm_cat(&buf, &len, &cap, "\n"))))
		goto done;
	sqlite3_reset(st);
	st = s->id_cfg;
	sqlite3_bind_int64(st, 1, id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(st, 0), *v = (const char *)sqlite3_column_text(st, 1);
		if (!k || rm_is_routing(k))
			continue;
		if (rm_cat(&buf, &len, &cap, k) || rm_cat(&buf, &len, &cap, "=") || rm_cat(&buf, &len, &cap, v) ||
		    rm_cat(&buf, &len, &cap, "\n"))
			goto done;
	}
	ok = rc == SQLITE_DONE;
done:
	sqlite3_reset(s->id_run);
	sqlite3_reset(s->id_cfg);
	if (!ok) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Records the identity of family f's row id as seen; 1 when new, 0 when already seen, -1 on error. */
static int rm_mark_seen(struct rmerge *m, struct rm_src *s, int f, sqlite3_int64 id)
{
	char *ident = f == RM_RUNS ? rm_identity(s, id) : f == RM_SEARCHES ? rm_doc_identity(s->id_search, "search\n", id)
	              : rm_doc_identity(s->id_capacity, "capacity\n", id);
	if (!ident)
		return -1;
	sqlite3_bind_text(m->seen, 1, ident, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(m->seen);
	sqlite3_reset(m->seen);
	free(ident);
	if (rc != SQLITE_DONE)
		return -1;
	return sqlite3_changes(m->out) > 0;
}

/* Prepares the SELECT of table t's rows of one parent row (of family fam)
 * in shard s (OUT's column order; NULL for a column the shard lacks); *st
 * stays NULL when the shard predates the table. */
static int rm_prepare_select(struct rmerge *m, struct rm_src *s, const struct rmerge_family *fam,
                             const struct rmerge_table *t, sqlite3_stmt **st)
{
	char sql[8192], q[140];
	struct rmerge_table theirs;
	size_t used = 0;
	int is_parent = t == &fam->parent;
	*st = NULL;
	int n = rm_columns(s->db, t->name, is_parent ? fam->id : NULL, &theirs);
	if (n < 0)
		return rm_fail(m, rm_read_code(s->db), "cannot read shard '%s': %s", s->path, err_sqlite_msg(s->db));
	if (n == 0)
		return 0;
	used += (size_t)snprintf(sql, sizeof sql, "SELECT ");
	for (size_t i = 0; i < t->ncols && used < sizeof sql; i++) {
		size_t k = 0;
		while (k < theirs.ncols && strcmp(theirs.cols[k], t->cols[i]) != 0)
			k++;
		if (k < theirs.ncols)
			rm_quote(q, sizeof q, t->cols[i]);
		else
			snprintf(q, sizeof q, "NULL");
		used += (size_t)snprintf(sql + used, sizeof sql - used, "%s%s", i ? ", " : "", q);
	}
	if (used + 300 >= sizeof sql)
		return rm_fail(m, -1, "'%s': schema too large to merge", m->out_path);
	rm_quote(q, sizeof q, t->name);
	used += (size_t)snprintf(sql + used, sizeof sql - used, " FROM %s WHERE ", q);
	rm_quote(q, sizeof q, is_parent ? fam->id : t->fk);
	snprintf(sql + used, sizeof sql - used, "%s = ?1", q);
	if (sqlite3_prepare_v2(s->db, sql, -1, st, NULL) != SQLITE_OK)
		return rm_fail(m, rm_read_code(s->db), "cannot read shard '%s': %s", s->path, err_sqlite_msg(s->db));
	return 0;
}

/* Copies the rows sel yields for the shard's parent row `from` into OUT's
 * table t, as parent row `to` (for the parent's own row `to` is unused:
 * SQLite assigns the id). */
static int rm_copy_rows(struct rmerge *m, struct rm_src *s, const struct rmerge_family *fam, struct rmerge_table *t,
                        sqlite3_stmt *sel, sqlite3_int64 from, sqlite3_int64 to)
{
	int rc, is_parent = t == &fam->parent;
	if (!sel)
		return 0;
	sqlite3_bind_int64(sel, 1, from);
	while ((rc = sqlite3_step(sel)) == SQLITE_ROW) {
		for (size_t i = 0; i < t->ncols; i++) {
			if (!is_parent && strcmp(t->cols[i], t->fk) == 0)
				sqlite3_bind_int64(t->ins, (int)i + 1, to);
			else
				sqlite3_bind_value(t->ins, (int)i + 1, sqlite3_column_value(sel, (int)i));
		}
		int irc = sqlite3_step(t->ins);
		sqlite3_reset(t->ins);
		sqlite3_clear_bindings(t->ins);
		if (irc != SQLITE_DONE) {
			sqlite3_reset(sel);
			return rm_fail(m, -1, "cannot write to '%s': %s", m->out_path, err_sqlite_msg(m->out));
		}
	}
	sqlite3_reset(sel);
	if (rc != SQLITE_DONE)
		return rm_fail(m, rm_read_code(s->db), "cannot read shard '%s': %s", s->path, err_sqlite_msg(s->db));
	return 0;
}

/* Copies the shard's rows of family f that OUT has not seen. */
static int rm_merge_family(struct rmerge *m, struct rm_src *s, int f, struct rmerge_stats *stats)
{
	struct rmerge_family *fam = &m->fam[f];
	sqlite3_stmt *ids = NULL;
	char sql[128];
	int code, rc;
	if ((code = rm_prepare_select(m, s, fam, &fam->parent, &s->sel[f][0])) != 0)
		return code;
	if (!s->sel[f][0])
		return 0;                         /* a shard older than the family: none of its rows */
	for (size_t i = 0; i < fam->nchild; i++)
		if ((code = rm_prepare_select(m, s, fam, &fam->child[i], &s->sel[f][1 + i])) != 0)
			return code;
	snprintf(sql, sizeof sql, "SELECT %s FROM %s ORDER BY %s", fam->id, fam->parent.name, fam->id);
	if (sqlite3_prepare_v2(s->db, sql, -1, &ids, NULL) != SQLITE_OK)
		return rm_fail(m, rm_read_code(s->db), "cannot read shard '%s': %s", s->path, err_sqlite_msg(s->db));
	code = -1;
	while ((rc = sqlite3_step(ids)) == SQLITE_ROW) {
		sqlite3_int64 from = sqlite3_column_int64(ids, 0);
		stats->runs_read += f == RM_RUNS;
		int fresh = rm_mark_seen(m, s, f, from);
		if (fresh < 0) {
			code = rm_fail(m, -1, "cannot compare %s of '%s' with '%s': %s", fam->parent.name, s->path, m->out_path,
			               err_sqlite_msg(m->out));
			goto done;
		}
		size_t *counts[RM_FAMILIES][2] = { { &stats->runs_added, &stats->runs_duplicate },
		                                   { &stats->searches_added, &stats->searches_duplicate },
		                                   { &stats->capacities_added, &stats->capacities_duplicate } };
		if (!fresh) {
			*counts[f][1] += 1;
			continue;
		}
		if ((code = rm_copy_rows(m, s, fam, &fam->parent, s->sel[f][0], from, 0)) != 0)
			goto done;
		sqlite3_int64 to = sqlite3_last_insert_rowid(m->out);
		for (size_t i = 0; i < fam->nchild; i++)
			if ((code = rm_copy_rows(m, s, fam, &fam->child[i], s->sel[f][1 + i], from, to)) != 0)
				goto done;
		*counts[f][0] += 1;
	}
	code = rc == SQLITE_DONE ? 0 : rm_fail(m, rm_read_code(s->db), "cannot read shard '%s': %s", s->path,
	                                       err_sqlite_msg(s->db));
done:
	sqlite3_finalize(ids);
	return code;
}

static int rm_merge_shard(struct rmerge *m, sqlite3 *db, const char *path, struct rmerge_stats *stats)
{
	struct rm_src s;
	int code = 0;
	if (rm_src_init(m, &s, db, path) != 0)
		return -1;
	/* code carries each step's failure: -1, or RMERGE_BAD_INPUT for a damaged shard */
	for (int f = 0; f < RM_FAMILIES && code == 0; f++)
		if (m->fam[f].present)
			code = rm_merge_family(m, &s, f, stats);
	rm_src_release(&s);
	return code;
}

static int rm_same_file(const char *a, const char *b)
{
	struct stat sa, sb;
	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

int rmerge_merge(const char *out_path, const char *const *shards, size_t nshards,
                 struct rmerge_stats *stats, char *err, size_t errlen)
{
	struct rmerge m = { .out_path = out_path, .err = err, .errlen = errlen };
	struct results_db *rdb = NULL;
	sqlite3 *db = NULL;
	char out_ver[32];
	int code = -1, in_tx = 0;
	memset(stats, 0, sizeof *stats);

	for (size_t i = 0; i < nshards; i++)
		if (rm_same_file(shards[i], out_path))
			return rm_fail(&m, RMERGE_BAD_INPUT, "shard '%s' is the output database", shards[i]);
	/* Before OUT is created or upgraded (results_open may do either): OUT as it is, and each shard
	 * whole (readable, not newer than this simbatch, SQLite's quick check), so that a bad shard
	 * leaves OUT as it was. Their columns against OUT's are checked once OUT is open, below. */
	if (results_check(out_path, err, errlen) != 0)
		return RMERGE_BAD_INPUT;
	for (size_t i = 0; i < nshards; i++)
		if ((code = rm_shard_whole(&m, shards[i])) != 0)
			return code;
	code = -1;
	/* results_open creates OUT with the current schema, or checks it is ours;
	 * a merge that fails removes an OUT it created */
	int created = access(out_path, F_OK) != 0;
	if (results_open(out_path, &rdb, err, errlen) != 0) {
		if (created)              /* a full disk leaves the empty file it made */
			results_remove(out_path);
		return RMERGE_BAD_INPUT;
	}
	results_close(rdb);
	if (sqlite3_open_v2(out_path, &m.out, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
		rm_fail(&m, -1, "cannot open '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	sqlite3_busy_timeout(m.out, RMERGE_BUSY_MS);
	if ((code = rmerge_read_version(m.out, out_path, out_ver, sizeof out_ver, err, errlen)) != 0)
		goto done;
	code = -1;
	if (rm_schema(&m) != 0)
		goto done;
	/* every shard is checked before anything is written */
	for (size_t i = 0; i < nshards; i++) {
		if ((code = rm_open_shard(&m, shards[i], out_ver, &db)) != 0)
			goto done;
		sqlite3_close(db);
		db = NULL;
	}
	code = -1;
	if (sqlite3_exec(m.out, "PRAGMA foreign_keys=ON; CREATE TEMP TABLE rmerge_seen(ident TEXT PRIMARY KEY)",
	                 NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(m.out, "INSERT OR IGNORE INTO temp.rmerge_seen(ident) VALUES(?1)", -1, &m.seen,
	                       NULL) != SQLITE_OK) {
		rm_fail(&m, -1, "cannot prepare a merge into '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	for (int f = 0; f < RM_FAMILIES; f++) {
		if (!m.fam[f].present)
			continue;
		if (rm_prepare_insert(&m, &m.fam[f].parent) != 0)
			goto done;
		for (size_t i = 0; i < m.fam[f].nchild; i++)
			if (rm_prepare_insert(&m, &m.fam[f].child[i]) != 0)
				goto done;
	}
	if (sqlite3_exec(m.out, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) {
		rm_fail(&m, -1, "cannot write to '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	in_tx = 1;
	/* what OUT holds already counts as seen */
	struct rm_src self;
	if (rm_src_init(&m, &self, m.out, out_path) != 0)
		goto done;
	int rc = SQLITE_DONE;
	for (int f = 0; f < RM_FAMILIES && rc == SQLITE_DONE; f++) {
		sqlite3_stmt *ids = NULL;
		char sql[128];
		if (!m.fam[f].present)
			continue;
		snprintf(sql, sizeof sql, "SELECT %s FROM main.%s", m.fam[f].id, m.fam[f].parent.name);
		rc = sqlite3_prepare_v2(m.out, sql, -1, &ids, NULL);
		if (rc == SQLITE_OK)
			while ((rc = sqlite3_step(ids)) == SQLITE_ROW)
				if (rm_mark_seen(&m, &self, f, sqlite3_column_int64(ids, 0)) < 0)
					break;
		sqlite3_finalize(ids);
	}
	rm_src_release(&self);
	if (rc != SQLITE_DONE) {
		rm_fail(&m, -1, "cannot read '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	for (size_t i = 0; i < nshards; i++) {
		/* already checked above; reopened one at a time to keep file handles few */
		if ((code = rm_open_shard(&m, shards[i], out_ver, &db)) != 0)
			goto done;
		if ((code = rm_merge_shard(&m, db, shards[i], stats)) != 0)
			goto done;
		sqlite3_close(db);
		db = NULL;
		stats->shards++;
	}
	/* a shard older than schema 6 brought runs without their metrics by name: named as an upgrade names them */
	if (rm_table_named(&m, "run_metric_values", &(const char *){ NULL }) && results_name_metrics(m.out) != 0) {
		code = rm_fail(&m, -1, "cannot write to '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	if (sqlite3_exec(m.out, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		code = rm_fail(&m, -1, "cannot write to '%s': %s", out_path, err_sqlite_msg(m.out));
		goto done;
	}
	in_tx = 0;
	code = 0;
done:
	if (in_tx)
		sqlite3_exec(m.out, "ROLLBACK", NULL, NULL, NULL);
	if (code != 0) {
		stats->runs_added = stats->searches_added = stats->capacities_added = 0;
		stats->shards = 0;
	}
	sqlite3_close(db);
	sqlite3_finalize(m.seen);
	for (int f = 0; f < RM_FAMILIES; f++) {
		sqlite3_finalize(m.fam[f].parent.ins);
		for (size_t i = 0; i < m.fam[f].nchild; i++)
			sqlite3_finalize(m.fam[f].child[i].ins);
	}
	sqlite3_close(m.out);
	if (code != 0 && created)
		results_remove(out_path);
	return code;
}
