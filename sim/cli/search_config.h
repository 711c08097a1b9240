/* sim/cli/search_config.h: the lookups into a loaded search file that both its checks
 * (search_spec.c) and its configurations (search_config.c, search_config_make in
 * search_spec.h) use. */
#ifndef SB_SEARCH_CONFIG_H
#define SB_SEARCH_CONFIG_H

#include <stddef.h>
#include "search_spec.h"

/* The value of name in the file's fixed options ("" for a flag), or NULL; *at (if not NULL) its index. */
const char *search_fixed_value(const struct search_spec *s, const char *name, size_t *at);
/* The axis called name, or NULL. */
const struct search_axis *search_axis(const struct search_spec *s, const char *name);

/* Whether a configuration's model fits its hardware at its --tp, cached by model, hardware and tp. */
struct search_fit {
	char key[300];
	int ok;
	char reason[300];
};
/* The value of --name in c's options into *value: 1, or 0 when c does not set it. */
struct search_config;
int search_config_value(const struct search_config *c, const char *name, const char **value);
/* 1 when c's model fits its hardware at its --tp (the cache grown), else 0 with why. */
int search_fits(const struct search_config *c, struct search_fit **cache, size_t *ncache, char *why, size_t whylen);

#endif
