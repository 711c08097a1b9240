/* sim/study/search_plan.h: a configuration search's decisions as functions over values
 * (search_plan.c; sim/SEARCH.md): the order configurations are measured in (cheapest first), which
 * are not measured (one that costs more than an answer already found, or than the budget; a plain
 * fleet a cheaper sibling's saturation bounds below the target), the answer and the Pareto front of
 * cost against capacity. Each configuration is a row of values (its cost, GPUs, family, and once
 * measured its capacity, bracket and status); the measuring is the caller's (the CLI runs `simbatch
 * capacity` children, several at a time, through study_search_next and study_search_measured; a
 * caller measuring one at a time may hand study_search_run a callback). This never prints, exits or
 * keeps state of its own. */
#ifndef SB_STUDY_SEARCH_PLAN_H
#define SB_STUDY_SEARCH_PLAN_H

#include <stddef.h>
#include <stdint.h>

enum study_search_status { STUDY_SR_TODO = 0, STUDY_SR_OK, STUDY_SR_INFEASIBLE, STUDY_SR_PRUNED, STUDY_SR_SKIPPED };

struct study_search_row {
	enum study_search_status status;
	double cost, capacity, lo, hi, band_lo, band_hi;   /* band: NaN when the hardware has none */
	uint32_t gpus;
	uint64_t key_hash;
	int resumed;
	char reason[300];
	/* the capacity bound (study_search_bounded): a plain fleet's replicas (0: not one: disaggregated,
	 * heterogeneous, or behind prefix-affinity), its options but the replicas hashed, and once measured the
	 * lowest rate its capacity search found saturated (NaN: none seen) */
	uint32_t plain_replicas;
	uint64_t family;
	double saturated_rps;
};

/* The label of configuration i (its axis values) into buf, for the reason a bound gives. */
typedef void (*study_search_label_fn)(void *ctx, size_t i, char *buf, size_t len);

struct study_search {
	struct study_search_row *rows;
	size_t n;
	size_t *order;                /* n indices: study_search_order sorts them by cost, then index */
	size_t next;                  /* in order: the next to consider */
	double target_rps, budget;    /* the goal: a target rate (> 0), else the most capacity within budget */
	int exhaustive;               /* measure every configuration that fits */
	size_t part_i, part_n;        /* only the configurations i with i % part_n == part_i - 1 (part_n 0: all) */
	double best_cost;             /* a target search: the cheapest cost found meeting it (INFINITY: none) */
	study_search_label_fn label;
	void *label_ctx;
};

/* order[] = 0..n-1 sorted by cost, cheapest first (ties in configuration order). */
void study_search_order(struct study_search *s);
/* 1 when a cheaper measured sibling of row i's family bounds its capacity below the target (the reason in its
 * row), else 0. */
int study_search_bounded(const struct study_search *s, size_t i);
/* Row i measured (or read back from a results file): what it tells of the answer so far. */
void study_search_measured(struct study_search *s, size_t i);
/* The next configuration to measure, those passed over on the way marked skipped or pruned; SIZE_MAX when none
 * is left. */
size_t study_search_next(struct study_search *s);
/* The answer: the cheapest meeting the target (ties: the most capacity), or the most capacity within the budget
 * (ties: the cheapest); SIZE_MAX when none. */
size_t study_search_answer(const struct study_search *s);
/* The Pareto front of cost against capacity into front (n entries at most), cheapest first: each measured
 * configuration no cheaper (or equal) one out-serves. Its length. */
size_t study_search_pareto(const struct study_search *s, size_t *front);
/* on_front[i] = 1 when no other of the n points has at least as much of both figures and more of one. */
void study_front_mark(const double *per_user, const double *per_gpu, size_t n, int *on_front);

/* Measures row i in place (status STUDY_SR_OK or STUDY_SR_INFEASIBLE, capacity, bracket, saturated_rps):
 * 0, or -1 with err (a failure that stops the search). */
typedef int (*study_search_measure_fn)(void *ctx, struct study_search_row *w, size_t i, char *err, size_t errlen);
/* The whole search, one configuration at a time: 0, or the measurement's -1 with err. */
int study_search_run(struct study_search *s, study_search_measure_fn measure, void *ctx, char *err, size_t errlen);

#endif
