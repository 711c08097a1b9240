/* util/sqlite_read.c: see sqlite_read.h. */
#include "sqlite_read.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* 1 when PATH+suffix exists (or its name is too long to tell: then read with locks). */
static int side_file_exists(const char *path, const char *suffix)
{
	char name[4200];
	if ((size_t)snprintf(name, sizeof name, "%s%s", path, suffix) >= sizeof name)
		return 1;
	return access(name, F_OK) == 0;
}

/* "file:" URI for path (RFC 3986 percent-encoding, as SQLite decodes it) with immutable=1;
 * an absolute path gets an empty authority so that "//x" stays a path. NULL: out of memory. */
static char *immutable_uri(const char *path)
{
	static const char tail[] = "?immutable=1";
	char *uri = malloc(3 * strlen(path) + sizeof "file://" + sizeof tail);
	if (!uri)
		return NULL;
	char *u = uri + sprintf(uri, path[0] == '/' ? "file://" : "file:");
	for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
		if (isalnum(*p) || strchr("/-._~", *p))
			*u++ = (char)*p;
		else
			u += sprintf(u, "%%%02X", *p);
	}
	memcpy(u, tail, sizeof tail);
	return uri;
}

int sqlite_open_read(const char *path, sqlite3 **db)
{
	if (side_file_exists(path, "-wal") || side_file_exists(path, "-journal"))
		return sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY, NULL);
	char *uri = immutable_uri(path);
	if (!uri) {
		*db = NULL;
		return SQLITE_NOMEM;
	}
	int rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
	free(uri);
	return rc;
}
