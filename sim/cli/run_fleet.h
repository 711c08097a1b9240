/* sim/cli/run_fleet.h: a run's fleet options (run_fleet.c). */
#ifndef SB_RUN_FLEET_H
#define SB_RUN_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include "../../util/options.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../engine/engine.h"

#define RUN_FLEET_GROUPS 16      /* --replicas=N:HW,... groups at most */

struct run_fleet {               /* a heterogeneous fleet's groups; zeroed when none */
	struct hw_model *hw[RUN_FLEET_GROUPS];     /* each group's hardware (owned) */
	uint32_t count[RUN_FLEET_GROUPS];          /* ... and its replicas */
	size_t ngroups;
	const struct hw_model **replica_hw;        /* [replicas] each one's group's (owned array) */
};

/* Sets c's replicas, workers, router and refresh from o (and for a
 * heterogeneous fleet c->hw and c->replica_hw, from f's groups); refuses what
 * a fleet cannot be (one line in err). 0, or -1. */
int run_fleet_setup(const struct opt_set *o, const struct mdl_model *m, struct eng_config *c, struct run_fleet *f,
                    char *err, size_t errlen);
void run_fleet_free(struct run_fleet *f);

#endif
