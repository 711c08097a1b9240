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

/* The number after "key": in JSON this program printed (compact, as the
 * DESIGN.md contract gives it), inside the flat object "obj":{...} when obj
 * is given; with k >= 0, element k of the array there. 0 and *out, or -1
 * when it is not there. Not a JSON parser: the first such key wins. */
int json_number_after(const char *json, const char *obj, const char *key, int k, double *out);

#endif
