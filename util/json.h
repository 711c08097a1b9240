/* util/json.h: the one JSON string writer of the program. Names in JSON
 * output come from files and paths, so every string goes through it.
 *
 * Contract: any NUL-terminated byte string gives valid JSON text (bytes of
 * 0x80 and above are passed through as they are); write errors are left in
 * the stream's error flag for the caller's final check.
 */
#ifndef SB_UTIL_JSON_H
#define SB_UTIL_JSON_H

#include <stdio.h>

/* Writes s as a quoted JSON string: quote and backslash escaped, control
 * characters as \u00XX. */
void json_write_string(FILE *f, const char *s);

#endif
