/* util/errkind.h: what kind of failure an error message reports, kept beside
 * the message: the input's fault unless the machine failed (memory, a read
 * or write, the disk). The exit status comes from the kind (sim/cli
 * exit_status.c: 2 for the input, 1 for the machine), never from the text.
 *
 * Like errno, one per thread: err_kind_reset() before a unit of work (a
 * command, a sweep worker's point); the code that finds a failure marks its
 * kind (err_memory, err_io, err_strerror, err_sqlite_msg do as they format);
 * the command reads err_kind() when the message reaches it. An error nobody
 * marked is ERR_NONE: the input's, for a command that checks its input. */
#ifndef SB_ERRKIND_H
#define SB_ERRKIND_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum err_kind {
	ERR_NONE = 0,     /* nothing marked */
	ERR_INPUT,        /* marked the input's though found late (a damaged or foreign database) */
	ERR_MEMORY,       /* out of memory */
	ERR_IO,           /* a read or write failed, the disk is full, a file is held by another writer */
};

void err_kind_reset(void);
enum err_kind err_kind(void);
void err_kind_mark(enum err_kind k);

/* snprintf into err, marking the kind; return -1 (for `return err_memory(...)`). */
int err_memory(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int err_io(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* strerror(e), marking ENOMEM as memory and EIO, ENOSPC, EDQUOT, EFBIG as
 * I/O (a missing or forbidden path stays the input's). */
const char *err_strerror(int e);

/* sqlite3_errmsg(db) and sqlite3_errstr(rc), marking the result code: out of
 * memory; I/O, a full disk, a busy or locked file (the machine's); a corrupt
 * file or not a database (the input's, found late). */
struct sqlite3;
const char *err_sqlite_msg(struct sqlite3 *db);
const char *err_sqlite_str(int rc);

#ifdef __cplusplus
}
#endif

#endif
