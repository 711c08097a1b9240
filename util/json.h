/* util/json.h: the one JSON string writer of the program. Names in JSON
 * output come from files and paths, so every string goes through it. */
#ifndef SB_JSON_H
#define SB_JSON_H

#include <stdio.h>

/* Writes s as a quoted JSON string: quote and backslash escaped, control
 * characters as \u00XX. */
void json_write_string(FILE *f, const char *s);

#endif
