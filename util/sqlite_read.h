/* util/sqlite_read.h: opening an SQLite database only to read it, leaving nothing beside it.
 *
 * A read-only connection to a WAL database makes NAME-wal and NAME-shm and, not allowed to
 * checkpoint, leaves them there when it closes: reading a shard, comparing two runs or
 * checking a database before a run would create files the user never asked for. A database with
 * no NAME-wal or NAME-journal beside it has all of its content in the file itself (no process
 * is writing it: a WAL writer keeps NAME-wal while connected, a rollback writer NAME-journal
 * while in a transaction), so it is opened immutable: no locks, no side files. One with such a
 * file is read through SQLite's locks as usual (the side files exist already).
 *
 * Contract: sqlite_open_read returns sqlite3_open_v2's code and sets *db as it does (a handle
 * to close even on failure, or NULL when out of memory); it never creates the database.
 */
#ifndef SB_SQLITE_READ_H
#define SB_SQLITE_READ_H

#include <sqlite3.h>

int sqlite_open_read(const char *path, sqlite3 **db);

#endif
