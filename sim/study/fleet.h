/* sim/study/fleet.h: a run's fleet options and set-up (fleet.c): replicas, groups, pools, the router,
 * and every price the engine needs to run them (a disaggregated fleet's KV move included). */
#ifndef SB_RUN_FLEET_H
#define SB_RUN_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../../util/options.h"
#include "../../hwmodels/hwmodel.h"
#include "../../models/model.h"
#include "../engine/engine.h"
#include "../../hwmodels/kv_link.h"
#include "../../policies/fleet.h"

#define RUN_FLEET_GROUPS 16

/* The options of a disaggregated fleet, run's after its own (cmd_run.c). */
extern const struct opt_def run_fleet_pool_opts[];
extern const size_t run_fleet_npool_opts;
     /* --replicas=N:HW,... groups at most */

struct run_fleet {               /* a heterogeneous fleet's groups; zeroed when none */
	struct hw_model *hw[RUN_FLEET_GROUPS];     /* each group's hardware (owned) */
	uint32_t count[RUN_FLEET_GROUPS];          /* ... and its replicas */
	size_t ngroups;
	const struct hw_model **replica_hw;        /* [replicas] each one's group's (owned array) */
	struct kv_link *link;                      /* a disaggregated fleet's (--prefill-replicas): its KV link (owned) */
	struct fleet_disagg dis;                   /* ... and its pools and moves (c->disagg points here) */
	char hw_label[160];                        /* ... on hardware of two kinds: "prefill P:HW, decode D:HW" */
	struct opt_set router_params;              /* the router's knobs, given or default (c->router_params) */
};

/* Sets c's replicas, workers, router (and its knobs) and refresh from o (and for a
 * heterogeneous fleet c->hw and c->replica_hw, from f's groups; for a
 * disaggregated one, --prefill-replicas and --decode-replicas, c->disagg and
 * its link); refuses what a fleet cannot be (one line in err). 0, or -1. */
int run_fleet_setup(const struct opt_set *o, const struct mdl_model *m, struct eng_config *c, struct run_fleet *f,
                    char *err, size_t errlen);
void run_fleet_free(struct run_fleet *f);
/* When every replica names its hardware (--replicas=N:HW,... or both
 * --prefill-replicas=P:HW and --decode-replicas=D:HW) and --hw is not
 * given: the first group's hardware in hw, its length returned; else 0.
 * Such a fleet runs on no default --hw, so none is opened or checked. */
size_t run_fleet_named_hw(const struct opt_set *o, char *hw, size_t hwlen);


#endif
