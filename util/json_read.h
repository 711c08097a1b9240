/* util/json_read.h: numbers read back from the JSON this program printed
 * (a child's --json summary, which capacity and search read), through a JSON
 * parser (jansson), not by scanning text for key names.
 *
 * Contract: integers are read as doubles (JSON_DECODE_INT_AS_REAL), so a
 * 64-bit seed or count never fails the parse; a lookup names its path (a
 * top-level key, or a key of a top-level object), never "the first such key
 * anywhere". */
#ifndef SB_UTIL_JSON_READ_H
#define SB_UTIL_JSON_READ_H

#include <stddef.h>

struct json_doc;

/* Parses text (one JSON object). The document, or NULL when text is not one
 * (or memory ran out). */
struct json_doc *json_doc_parse(const char *text);
void json_doc_free(struct json_doc *d);      /* NULL is fine */

/* The number at key (top level), or at obj.key when obj is given; with
 * k >= 0, element k of the array there. 0 and *out, or -1 when it is not
 * there or not a number. */
int json_doc_number(const struct json_doc *d, const char *obj, const char *key, int k, double *out);
/* 1 when the top-level key holds true, else 0. */
int json_doc_true(const struct json_doc *d, const char *key);
/* 1 when the top-level key holds an object (not null), else 0. */
int json_doc_has_object(const struct json_doc *d, const char *key);
/* The length of the array at the top-level key; 0 when there is none. */
size_t json_doc_count(const struct json_doc *d, const char *key);
/* Of element i of that array (an object): the number at field (0 and *out,
 * or -1), and whether field holds true. */
int json_doc_item_number(const struct json_doc *d, const char *key, size_t i, const char *field, double *out);
int json_doc_item_true(const struct json_doc *d, const char *key, size_t i, const char *field);

#endif
