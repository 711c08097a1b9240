/* tests/put_file.h: a test's input file written whole (text at path, in the
 * test's own temporary directory). Header-only, for cmocka tests, included
 * after <cmocka.h>. */
#ifndef SB_TEST_PUT_FILE_H
#define SB_TEST_PUT_FILE_H

#include <stdio.h>

static void put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

#endif
