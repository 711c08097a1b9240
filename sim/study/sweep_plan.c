/* sim/study/sweep_plan.c: the points a run of a sweep does (sweep_plan.h): those of its part
 * that are not stored yet. */
#include "sweep_plan.h"

#include "../../util/errkind.h"

long sweep_plan_todo(const struct sweep_spec *s, uint64_t part_i, uint64_t part_n, sweep_stored_fn stored,
                     void *ud, size_t *todo, size_t *ntodo, size_t *nstored, char *err, size_t errlen)
{
	size_t inpart = 0;
	for (size_t i = 0; i < s->npoints; i++) {
		if (i % part_n != part_i - 1)
			continue;
		inpart++;
		struct sweep_point p;
		if (sweep_point_make(s, i, &p) != 0) {
			err_memory(err, errlen, "out of memory");
			return -1;
		}
		int has = stored ? stored(ud, p.key, err, errlen) : 0;
		sweep_point_free(&p);
		if (has < 0)
			return -1;
		if (has)
			(*nstored)++;
		else
			todo[(*ntodo)++] = i;
	}
	return (long)inpart;
}
