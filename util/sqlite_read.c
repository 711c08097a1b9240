/* util/sqlite_read.c: see sqlite_read.h. */
#include "sqlite_read.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* 1 when path and its directory (where SQLite puts NAME-wal and NAME-shm) are writable. */
static int writable_with_directory(const char *path)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	if (access(path, W_OK) != 0)
		return 0;
	if (!slash)
		return access(".", W_OK) == 0;
	if ((size_t)(slash - path) >= sizeof dir)
		return 0;
	snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return access(dir, W_OK) == 0;
}

int sqlite_open_read(const char *path, sqlite3 **db)
{
	if (!writable_with_directory(path))
		return sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL);
	int rc = sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(*db, "PRAGMA query_only = 1", NULL, NULL, NULL);
	return rc;
}
