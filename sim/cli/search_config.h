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

#endif
