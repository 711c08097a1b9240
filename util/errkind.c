/* util/errkind.c: the kind of the last failure, beside its message (errkind.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>
#include "errkind.h"

static _Thread_local enum err_kind err_last;

void err_kind_reset(void)
{
	err_last = ERR_NONE;
}

enum err_kind err_kind(void)
{
	return err_last;
}

void err_kind_mark(enum err_kind k)
{
	err_last = k;
}

static int err_vset(enum err_kind k, char *err, size_t errlen, const char *fmt, va_list ap)
{
	err_last = k;
	if (err && errlen > 0)
		vsnprintf(err, errlen, fmt, ap);
	return -1;
}

int err_memory(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(ERR_MEMORY, err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

int err_io(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	err_vset(ERR_IO, err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

const char *err_strerror(int e)
{
	if (e == ENOMEM)
		err_last = ERR_MEMORY;
	else if (e == EIO || e == ENOSPC || e == EDQUOT || e == EFBIG)
		err_last = ERR_IO;
	return strerror(e);
}

static void err_sqlite_mark(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_NOMEM:
		err_last = ERR_MEMORY;
		break;
	case SQLITE_IOERR:
	case SQLITE_FULL:
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		err_last = ERR_IO;
		break;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		err_last = ERR_INPUT;
		break;
	default:
		break;
	}
}

const char *err_sqlite_msg(struct sqlite3 *db)
{
	err_sqlite_mark(sqlite3_extended_errcode(db));
	return sqlite3_errmsg(db);
}

const char *err_sqlite_str(int rc)
{
	err_sqlite_mark(rc);
	return sqlite3_errstr(rc);
}
