/* sim/cli/capacity_requests.h: how many requests each capacity probe runs (the rules in cmd_capacity.c's
 * head comment: MLPerf's early stopping for a p99, the Clopper-Pearson trials for an LLM's miss fraction, a
 * warm-up of 10%), and whether they can judge an LLM's allowance at all. */
#ifndef SB_CAPACITY_REQUESTS_H
#define SB_CAPACITY_REQUESTS_H

#include <stddef.h>
#include <stdint.h>
#include "../../util/options.h"

#define CAP_QUANTILE 0.99
#define CAP_TAIL_SAMPLES 200          /* measured requests above the p99 (cmd_capacity.c's rule) */
#define CAP_WARMUP_FRACTION 0.1
#define CAP_LLM_MIN_MEASURED 3200     /* 2 / sqrt(3200 / 2) = 0.05: the window's noise, 2 sigma, within 5% */

/* A probe's requests and warm-up, from capacity's options o (--requests, --warmup: as given, else by the
 * rules), for an LLM (llm) judged on a miss fraction of at most allowed at confidence over nseeds seeds, or a
 * p99. 0, or -1 with err when they leave none to measure or, for an LLM, too few to judge: with m measured
 * (all seeds) and none missing, the bound on the miss fraction is 1 - (1 - confidence)^(1/m), within the
 * allowance a only from m = ln(1 - confidence) / ln(1 - a) (about 3 / a at 95%: 299 for 1%); below, no probe
 * can pass, and the search would halve its rate to nothing. */
int cap_requests(const struct opt_set *o, int llm, double allowed, double confidence, uint64_t nseeds,
                 uint64_t *requests, uint64_t *warmup, char *err, size_t errlen);

#endif
