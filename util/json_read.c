/* util/json_read.c: see json_read.h. */
#include "json_read.h"

#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>

struct json_doc {
	json_t *root;
};

struct json_doc *json_doc_parse(const char *text)
{
	json_error_t e;
	json_t *root = json_loads(text, JSON_DECODE_INT_AS_REAL, &e);
	if (!root || !json_is_object(root)) {
		json_decref(root);
		return NULL;
	}
	struct json_doc *d = malloc(sizeof *d);
	if (!d) {
		json_decref(root);
		return NULL;
	}
	d->root = root;
	return d;
}

void json_doc_free(struct json_doc *d)
{
	if (!d)
		return;
	json_decref(d->root);
	free(d);
}

int json_doc_number(const struct json_doc *d, const char *obj, const char *key, int k, double *out)
{
	const json_t *where = obj ? json_object_get(d->root, obj) : d->root;
	const json_t *v = json_is_object(where) ? json_object_get(where, key) : NULL;
	if (k >= 0)
		v = json_is_array(v) ? json_array_get(v, (size_t)k) : NULL;
	if (!json_is_number(v))
		return -1;
	*out = json_number_value(v);
	return 0;
}

int json_doc_true(const struct json_doc *d, const char *key)
{
	return json_is_true(json_object_get(d->root, key));
}

int json_doc_has_object(const struct json_doc *d, const char *key)
{
	return json_is_object(json_object_get(d->root, key));
}

size_t json_doc_count(const struct json_doc *d, const char *key)
{
	return json_array_size(json_object_get(d->root, key));    /* 0 for what is no array */
}

static const json_t *item_field(const struct json_doc *d, const char *key, size_t i, const char *field)
{
	const json_t *item = json_array_get(json_object_get(d->root, key), i);
	return json_is_object(item) ? json_object_get(item, field) : NULL;
}

int json_doc_item_number(const struct json_doc *d, const char *key, size_t i, const char *field, double *out)
{
	const json_t *v = item_field(d, key, i, field);
	if (!json_is_number(v))
		return -1;
	*out = json_number_value(v);
	return 0;
}

int json_doc_item_true(const struct json_doc *d, const char *key, size_t i, const char *field)
{
	return json_is_true(item_field(d, key, i, field));
}
