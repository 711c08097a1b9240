/* hwmodels/caltab.h: the calibration table (DESIGN.md section 4):
 * measured latency per (op, shape, batch size) on one device, with the
 * device, library, kernel set and date in a header. calib/ measures and
 * writes it; hwmodels/calibrated.c reads it and turns it into node latencies.
 * It lives on floor 2 so both can use it.
 *
 * File format (CSV; calib/README.md has the full description):
 *
 *   # simbatch calibration table
 *   # device: cpu (Intel(R) Xeon(R) Processor, 1 of 2 online CPUs)
 *   # date: 2025-01-31T12:00:00Z
 *   # library: ...        (any number of "# key: value" lines: kept in order)
 *   op,m_per_sample,k,n,batch,latency_s,measured_s,reps
 *   gemm,1,2048,4096,1,0.00153,0.00153,41
 *
 *  - Comment lines before the column header of the form "# key: value" are
 *    header fields; `device` (cpu or gpu-NAME, then free text) and `date`
 *    are required. After the column header `#` starts a comment anywhere.
 *  - Columns are found by name: op, m_per_sample, k, n, batch and latency_s
 *    are required; measured_s (the raw median before the monotone envelope)
 *    and reps (repetitions behind it) are optional; any other column is an
 *    error, so a misspelt required column is reported, not ignored.
 *  - op: gemm (M = batch * m_per_sample rows times a shared K x N weight),
 *    attn (batch independent m_per_sample x K by K x N products, no shared
 *    operand), elementwise (m_per_sample = element-wise ops per sample, k and
 *    n are 0).
 *  - latency_s is finite and > 0, and non-decreasing in batch within one
 *    (op, m_per_sample, k, n) shape: a batch can always be padded up to a
 *    larger one, so a measured dip is a measurement artefact (calib writes
 *    the suffix minimum and keeps the raw median in measured_s).
 *
 * Contract:
 *  - caltab_read validates everything above and reports the first problem as
 *    one line "FILE:LINE: field F: problem" (or "FILE: problem" when no line
 *    applies) and returns -1; *out is NULL then.
 *  - A table built in memory (caltab_create + caltab_add_row) is checked by
 *    caltab_validate with the same rules; rows then have line 0.
 *  - Rows are kept in file order until caltab_sort; lookups need sorted rows.
 */
#ifndef SB_CALIBRATED_TABLE_H
#define SB_CALIBRATED_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CALTAB_MAGIC "# simbatch calibration table"
/* Optional header field: what coming back from idle costs (calibrated.c
 * parses it, calib-cpu measures it). */
#define CALTAB_COLD_START_FIELD "cold-start"
#define CALTAB_COLD_MAX 32   /* idle times in it, at most */
#define CALTAB_COLUMNS "op,m_per_sample,k,n,batch,latency_s,measured_s,reps"

enum caltab_op {
	CALTAB_GEMM = 0,      /* batch * m_per_sample rows times a shared K x N weight */
	CALTAB_ATTN,          /* batch independent products, activation x activation */
	CALTAB_ELEMENTWISE,   /* m_per_sample element-wise ops per sample; k = n = 0 */
	CALTAB_OP_COUNT
};

struct caltab_row {
	enum caltab_op op;
	uint64_t m_per_sample;    /* rows per sample (gemm, attn); ops per sample (elementwise) */
	uint64_t k, n;            /* 0 for elementwise */
	uint32_t batch;           /* >= 1 */
	double latency_s;         /* the value models use: > 0, non-decreasing in batch */
	double measured_s;        /* raw median as measured (= latency_s when the file has none) */
	uint32_t reps;            /* repetitions behind the median; 0 = not recorded */
	unsigned long line;       /* 1-based line in the file; 0 for rows built in memory */
};

struct caltab_field {
	char *key;                /* owned; e.g. "device", "library" */
	char *value;              /* owned; the rest of the line, trimmed */
	unsigned long line;       /* 1-based line in the file; 0 when set in memory */
};

struct caltab {
	char *path;               /* owned; file it was read from, "" when built in memory */
	char device[64];          /* first word of the device field: "cpu" or "gpu-NAME" */
	size_t nfields;
	struct caltab_field *fields;  /* owned; header fields in file order */
	size_t nrows, cap;
	struct caltab_row *rows;  /* owned */
};

/* An empty table for writers (path ""). Returns 0, or -1 when out of memory. */
int caltab_create(struct caltab **out);
void caltab_destroy(struct caltab *t);

/* Sets header field key to value (replacing an earlier value, keeping its
 * place). For key "device" the first word must pass caltab_check_device.
 * Returns 0, or -1 with err. */
int caltab_set_field(struct caltab *t, const char *key, const char *value, char *err, size_t errlen);
/* caltab_set_field with the value formatted (at most 2047 characters kept). */
int caltab_set_fieldf(struct caltab *t, const char *key, char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The value of header field key, or NULL. Not owned by the caller. */
const char *caltab_field(const struct caltab *t, const char *key);

/* Appends a row (copied; its line is kept as given). Returns 0, or -1 when
 * out of memory. Values are checked by caltab_validate, not here. */
int caltab_add_row(struct caltab *t, const struct caltab_row *row, char *err, size_t errlen);

/* Reads and validates a calibration table file. Returns 0 and *out (caller
 * frees with caltab_destroy), or -1 with a one-line message. */
int caltab_read(const char *path, struct caltab **out, char *err, size_t errlen);

/* Whether the file is a calibration table: its first line is CALTAB_MAGIC
 * or its first non-comment line starts with the column "op". Returns 1 or
 * 0, or -1 with err when it cannot be read. */
int caltab_sniff(const char *path, char *err, size_t errlen);

/* Checks every row and the header (device, date, values, duplicates,
 * monotone latency); sorts the rows. Returns 0, or -1 with a message naming
 * the file and line where rows came from a file. */
int caltab_validate(struct caltab *t, char *err, size_t errlen);

/* Sorts rows by (op, m_per_sample, k, n, batch, line). */
void caltab_sort(struct caltab *t);

/* Sets every row's latency_s to the smallest measured_s at its batch or any
 * larger batch of the same shape (the padding argument above), so the table
 * is monotone. Sorts the rows. Returns how many rows were lowered. */
size_t caltab_make_monotone(struct caltab *t);

/* Writes the table as CSV: the magic line, the header fields in order, the
 * column header, the rows sorted. Returns 0, or -1 with err on a write error. */
int caltab_write(struct caltab *t, FILE *f, const char *name, char *err, size_t errlen);
/* caltab_write into a temporary file beside path, renamed onto it when whole
 * (util/outfile.h): a failed calibration leaves an existing table as it was. */
int caltab_write_file(struct caltab *t, const char *path, char *err, size_t errlen);

/* 0 when name is "cpu" or "gpu-NAME" with NAME of [a-z0-9_-] (1 to 47
 * characters; no dot, so "gpu-x.csv" reads as a file name); -1 otherwise. */
int caltab_check_device(const char *name);

/* "gemm", "attn", "elementwise"; "?" otherwise. */
const char *caltab_op_name(enum caltab_op op);
/* A shape as messages and plans print it: "gemm 1x1024x4096", or
 * "elementwise 13312 ops/sample". */
void caltab_shape_text(enum caltab_op op, uint64_t m_per_sample, uint64_t k, uint64_t n, char *buf, size_t len);

/* Index of the first row of shape (op, m, k, n) in a sorted table and how
 * many rows it has (sorted by batch); returns -1 when the table has none. */
long caltab_find_shape(const struct caltab *t, enum caltab_op op, uint64_t m, uint64_t k, uint64_t n,
                       size_t *count);

#endif
