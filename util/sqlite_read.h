/* util/sqlite_read.h: opening an SQLite database only to read it, leaving nothing beside it.
 *
 * A read-only connection to a WAL database makes NAME-wal and NAME-shm and, not allowed to
 * checkpoint, leaves them there when it closes: reading a shard, comparing two runs or checking
 * a database before a run would create files the user never asked for. Where the database and
 * its directory are writable it is therefore opened read-write (never created) with
 * `PRAGMA query_only`, so nothing can be written through it, and SQLite's locks keep it
 * consistent with any process writing it; the last connection to close removes the side
 * files, as every writer's does. Where it is not writable, it is opened read-only as before
 * (SQLite may then leave the side files; it cannot be helped without write access).
 *
 * Contract: sqlite_open_read returns an SQLite result code and sets *db as sqlite3_open_v2 does
 * (a handle to close even on failure, or NULL when out of memory); it never creates the database.
 */
#ifndef SB_SQLITE_READ_H
#define SB_SQLITE_READ_H

#include <sqlite3.h>

int sqlite_open_read(const char *path, sqlite3 **db);

#endif
