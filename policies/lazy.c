/* policies/lazy.c: LazyBatching (Choi, Kim and Rhu, Sec. IV) and its Oracle
 * (Sec. VI): node-level scheduling on a BatchTable stack per device
 * (batch_table.h), lazily batching pending inputs with the active batch only
 * when the SLA-aware slack predictor (slack.h) says no affected request
 * would miss its SLA.
 *
 * At every node boundary of a device (next_task on an idle device):
 *  1. Pending inputs (the InfQ, arrival order) are offered to the device's
 *     table: the largest prefix, within the room the max batch leaves, whose
 *     admission keeps the predicted slack of every affected request
 *     non-negative. Admitted inputs are pushed on the stack, preempting the
 *     active batch; the predictor holding inputs back is a
 *     "slack_rejection", and the active batch runs on uninterrupted.
 *     A device with an empty table has no active batch to preempt, so its
 *     pending inputs start together (up to the max batch) unchecked: Eq. 2
 *     prices a batch as the sum of its members run alone, so starting them
 *     together is never predicted slower than one after another.
 *  2. The top entry runs one node; afterwards the stack merges the entries
 *     that reached the same node (Fig. 10).
 * Preemption and merging therefore happen only at node boundaries.
 *
 * Slack of a request r when the set S (the table's members and the
 * newcomers) is to run:  SLA - ((now - arrival_r) + E(S)),  where
 * now - arrival_r is Eq. 1's T_wait for a request that has not started (and
 * its time so far, waiting and running, for one that has), and E(S) is the
 * predicted time to finish S:
 *  - lazy: Eq. 2, the sum over S of each member's remaining single-input
 *    time: its Algorithm 1 estimate at arrival (with dec_timesteps) less the
 *    single-input time of the nodes it has run (never below 0);
 *  - oracle: the exact drain time of S at batched latencies with the true
 *    lengths (slk_exact_drain_ns).
 * Every member counts, also one already predicted to miss its SLA: letting
 * newcomers preempt a late table delays it further while it holds the
 * room, and under overload that thrashes (measured: GNMT at 255 req/s on
 * the NPU, mean latency 2 s instead of 75 ms, throughput 214 instead of
 * 250 req/s). A late table instead drains undisturbed, and the InfQ then
 * starts together on the empty device, batched up to the max batch.
 *
 * --no-preemption (not the paper's; an intervention that isolates what preemption costs) admits
 * pending inputs onto an empty table only: a running batch is never preempted, and newcomers
 * start together once it drains. As the slack check only ever guards a preemption, it turns
 * the check off too.
 * --no-slack-check (not the paper's either; the intervention that changes the other of the two)
 * keeps preemption and drops the check: at every boundary the pending inputs join the table, up
 * to the room the max batch leaves, whatever the predictor says. Lazy and the oracle then differ
 * in nothing (their predictors are never asked) and make the same decisions.
 *
 * pol_word[0] holds a request's Algorithm 1 estimate, pol_word[1] the
 * single-input time of the nodes it ran (lazy only). */
#include <stdio.h>
#include <stdlib.h>
#include "batch_table.h"
#include "../util/errkind.h"
#include "dec_profile.h"
#include "fifo.h"
#include "policy.h"
#include "slack.h"

struct lazy_state {
	const struct mdl_model *model;   /* not owned */
	int64_t sla_ns;
	uint32_t max_batch;
	int exact;                       /* the oracle: exact batched latencies, true lengths */
	struct pol_fifo infq;            /* pending inputs, arrival order */
	struct batch_table *tables;      /* owned: one per device */
	uint8_t *rejecting;              /* owned, per device: its task was issued with inputs pending and room */
	uint64_t *walk_runs;             /* owned, max_batch: oracle_rejecting_run's top members' remaining runs */
	uint32_t *walk_phase;            /* owned, max_batch: and nodes until that count drops */
	uint32_t ntables;
	struct pol_request **scratch;    /* owned, max_batch + 1 slots: the set S, then the admitted inputs */
	struct slk_table slk;            /* lazy: NodeLatency table and Algorithm 1 */
	struct slk_exact drain;          /* oracle */
	uint64_t slack_rejections;       /* boundaries where the predictor held back pending inputs */
	uint64_t lazy_admissions;        /* inputs admitted onto a non-empty table */
	int no_preemption;               /* --no-preemption: admit onto an empty table only (an intervention) */
	int no_slack_check;              /* --no-slack-check: admit up to the room, preempting (an intervention) */
};

static void lazy_fini(struct pol_state *st)
{
	struct lazy_state *s = (struct lazy_state *)st;
	if (s->tables)
		for (uint32_t i = 0; i < s->ntables; i++)
			bt_fini(&s->tables[i]);
	free(s->tables);
	free(s->rejecting);
	free(s->scratch);
	free(s->walk_runs);
	free(s->walk_phase);
	slk_fini(&s->slk);
	slk_exact_fini(&s->drain);      /* a no-op unless the oracle initialized it */
	s->tables = NULL;
	s->rejecting = NULL;
	s->scratch = NULL;
	s->walk_runs = NULL;
	s->walk_phase = NULL;
}

static int lazy_setup(struct lazy_state *s, const struct pol_env *env, int exact, char *err, size_t errlen)
{
	const char *name = exact ? "oracle" : "lazy";
	s->model = env->model;
	s->sla_ns = env->sla_ns;
	s->max_batch = env->max_batch;
	s->exact = exact;
	s->no_preemption = opt_flag(env->params, "no-preemption");
	s->no_slack_check = opt_flag(env->params, "no-slack-check");
	if (s->no_preemption && s->no_slack_check) {
		snprintf(err, errlen, "%s: --no-preemption and --no-slack-check each change one thing; give one of them",
		         name);
		return -1;
	}
	/* lazy profiles output lengths only for a model that has them, or to check a --profile-len given */
	const char *prof = exact ? NULL : opt_str(env->params, "profile-len");
	uint32_t dec_timesteps = 0;
	if (!exact && (env->model->uses_output_len || prof)) {
		if (dec_profile_timesteps(prof ? prof : env->model->output_len_spec, opt_double(env->params, "coverage"),
		                          &dec_timesteps, err, errlen) != 0)
			return -1;
		if (!env->model->uses_output_len)
			dec_timesteps = 0;
	}
	s->ntables = env->workers ? env->workers : 1;
	s->tables = calloc(s->ntables, sizeof *s->tables);
	s->rejecting = calloc(s->ntables, sizeof *s->rejecting);
	s->scratch = calloc((size_t)env->max_batch + 1, sizeof *s->scratch);
	s->walk_runs = calloc(env->max_batch, sizeof *s->walk_runs);
	s->walk_phase = calloc(env->max_batch, sizeof *s->walk_phase);
	if (!s->tables || !s->rejecting || !s->scratch || !s->walk_runs || !s->walk_phase)
		goto oom;
	for (uint32_t i = 0; i < s->ntables; i++) {
		if (bt_init(&s->tables[i], env->max_batch) != 0)
			goto oom;
		s->tables[i].unit_cells = !env->model->is_tree;
	}
	if (slk_init(&s->slk, env->model, &env->lat, dec_timesteps, err, errlen) != 0)
		goto fail;
	if (exact && slk_exact_init(&s->drain, env->model, &env->lat, env->max_batch, err, errlen) != 0)
		goto fail;
	return 0;
oom:
	err_memory(err, errlen, "%s: out of memory", name);
fail:
	lazy_fini((struct pol_state *)s);
	return -1;
}

static int lazy_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return lazy_setup((struct lazy_state *)st, env, 0, err, errlen);
}

static int oracle_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	return lazy_setup((struct lazy_state *)st, env, 1, err, errlen);
}

static void lazy_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	struct lazy_state *s = (struct lazy_state *)st;
	r->pol_word[0] = s->exact ? 0 : (uint64_t)slk_single_exec_ns(&s->slk, r->input_len);
	r->pol_word[1] = 0;
	pol_fifo_push(&s->infq, r);
}

static void lazy_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)now_ns;
	struct lazy_state *s = (struct lazy_state *)st;
	if (!s->exact && t->run_len > 1) {
		/* a pass segment's nodes cost each member what its length makes them */
		int pass = mdl_is_pass(s->model, t->node_type);
		uint64_t ran_ns = 0;
		for (uint32_t i = 0; i < t->nreq; i++) {
			if (i == 0 || pass)
				ran_ns = slk_run_single_ns(&s->slk, t->node_type, t->run_len, t->reqs[i]->input_len);
			t->reqs[i]->pol_word[1] += ran_ns;
		}
	} else if (!s->exact) {
		for (uint32_t i = 0; i < t->nreq; i++) {
			struct pol_request *r = t->reqs[i];
			/* output_len is no input to a tree's cells, and lazy may not read it */
			uint32_t cells = s->model->is_tree ? mdl_cells_at(s->model, r->next_node - 1, r->input_len, 0) : 1;
			r->pol_word[1] += (uint64_t)slk_node_single_ns(&s->slk, t->node_type, cells, r->input_len);
		}
	}
	if (s->rejecting[t->device])
		s->slack_rejections += t->run_len - 1;   /* each boundary the run skipped refused the InfQ's head */
	bt_task_done(&s->tables[t->device], t);
}

/* Eq. 2's share of one request: what is left of its single-input estimate. */
static int64_t lazy_remaining_ns(const struct pol_request *r)
{
	return r->pol_word[0] > r->pol_word[1] ? (int64_t)(r->pol_word[0] - r->pol_word[1]) : 0;
}

/* Oracle: does admitting the first k pending inputs keep the slack of the
 * request that has waited longest (wait_ns so far) non-negative? scratch
 * holds the table's members, then the candidates. Out of memory counts as
 * unsafe, the conservative answer. */
static int oracle_safe(struct lazy_state *s, uint32_t nmembers, uint32_t k, int64_t wait_ns)
{
	int64_t drain_ns = slk_exact_drain_ns(&s->drain, s->scratch, nmembers + k);
	return drain_ns >= 0 && slk_slack_ns(s->sla_ns, wait_ns, drain_ns) >= 0;
}

/* How many pending inputs to push onto the device's table now: the largest
 * k whose admission keeps the predicted slack of every affected request
 * (the table's members and the k newcomers) non-negative. As E(S) is one
 * number for the whole set, the binding slack is that of the request that
 * has waited longest. */
static uint32_t lazy_admissible(struct lazy_state *s, const struct batch_table *bt, int64_t now_ns)
{
	uint32_t room = bt_room(bt);
	uint32_t kmax = s->infq.len < room ? (uint32_t)s->infq.len : room;
	if (!kmax || !bt->nmembers)
		return kmax;
	if (s->no_preemption)
		return 0;       /* newcomers wait for the table to drain, then start together */
	if (s->no_slack_check) {
		s->lazy_admissions += kmax;
		return kmax;    /* newcomers preempt whatever the predictor would say */
	}
	uint32_t n = bt->nmembers, k = 0;
	int64_t oldest_ns = INT64_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (bt->members[i]->arrival_ns < oldest_ns)
			oldest_ns = bt->members[i]->arrival_ns;
	/* the InfQ is in arrival order: its head is the oldest newcomer */
	int64_t oldest_new_ns = s->infq.head->arrival_ns < oldest_ns ? s->infq.head->arrival_ns : oldest_ns;
	if (s->exact) {
		for (uint32_t i = 0; i < n; i++)
			s->scratch[i] = bt->members[i];
		struct pol_request *c = s->infq.head;
		for (uint32_t i = 0; i < kmax; i++, c = c->pol_next)
			s->scratch[n + i] = c;
		/* The drain time grows with k: the largest safe k by bisection, after
		 * the two answers that are most common (refused at once, all fit). */
		int64_t wait_ns = now_ns - oldest_new_ns;
		if (oracle_safe(s, n, 1, wait_ns)) {
			uint32_t lo = 1, hi = kmax + 1;      /* safe(lo), unsafe(hi) */
			if (kmax == 1 || oracle_safe(s, n, kmax, wait_ns))
				lo = kmax;
			else
				hi = kmax;
			while (hi - lo > 1) {
				uint32_t mid = lo + (hi - lo) / 2;
				if (oracle_safe(s, n, mid, wait_ns))
					lo = mid;
				else
					hi = mid;
			}
			k = lo;
		}
	} else {
		int64_t sum_ns = 0;
		for (uint32_t i = 0; i < n; i++)
			sum_ns = ns_add(sum_ns, lazy_remaining_ns(bt->members[i]));
		for (const struct pol_request *c = s->infq.head; k < kmax; c = c->pol_next) {
			sum_ns = ns_add(sum_ns, lazy_remaining_ns(c));      /* Eq. 2: one more member's estimate */
			if (slk_slack_ns(s->sla_ns, now_ns - oldest_new_ns, sum_ns) < 0)
				break;
			k++;
		}
	}
	if (k < kmax)
		s->slack_rejections++;
	s->lazy_admissions += k;
	return k;
}

static uint64_t lazy_rejecting_run(const struct lazy_state *s, const struct batch_table *bt,
                                   const struct pol_task *task, int64_t now_ns, uint64_t n);
static uint64_t oracle_rejecting_run(struct lazy_state *s, const struct batch_table *bt,
                                     const struct pol_task *task, int64_t now_ns, uint64_t n);

/* The first node j >= 1 of a run from node type k whose type is below's or
 * later, 0 when none is: the run's types cycle through k's segment, first ..
 * last, so if none in one pass reaches below, none ever does. */
static uint64_t lazy_steps_to(const struct mdl_model *m, uint32_t k, uint32_t below)
{
	const struct mdl_segment *seg = &m->segments[m->nodes[k].segment];
	uint32_t first = seg->first_node, last = first + seg->nnodes - 1;
	if (below <= first)
		return 1;
	if (below > last)
		return 0;
	if (k == last)                 /* wraps to first, then climbs to below */
		return below - first + 1;
	return k + 1 >= below ? 1 : below - k;
}

/* How many nodes the issued task may run as one (policy.h, "Optional capability: runs"). When no
 * pending input could be admitted at the boundaries it skips: the InfQ is
 * empty (until the next arrival, which ends the run) or the table is full
 * (until a member completes, which ends the run too); or, for lazy on one
 * device, while Eq. 2 goes on refusing the InfQ's head. Then each
 * skipped boundary would re-issue the same top entry (bt_task_done:
 * nothing completes, nothing splits inside the members' segment spans)
 * unless the top's next node type reaches the entry below's: equal, the
 * two merge; past it, the entry below is behind and runs first (bt_settle).
 * Other devices' tables are their own and a device never takes from the
 * InfQ it does not see non-empty. */
static uint64_t lazy_run_max(struct lazy_state *s, const struct batch_table *bt, const struct pol_task *task,
                             int64_t now_ns)
{
	/* inputs pending with room: only lazy alone on its device looks ahead
	 * (lazy_rejecting_run); another device could take the InfQ's head */
	int pending = !s->no_preemption && s->infq.len && bt_room(bt);
	/* unchecked, the InfQ's head joins at the next boundary: no run to look ahead through */
	if (s->model->is_tree || (pending && (s->ntables > 1 || task->run_until_ns <= now_ns || s->no_slack_check)))
		return 1;
	const struct mdl_model *m = s->model;
	uint64_t n = UINT64_MAX;
	for (uint32_t i = 0; i < task->nreq; i++) {
		const struct pol_request *r = task->reqs[i];
		uint64_t left = pol_req_span_left(r);
		if (left < n)
			n = left;
	}
	if (bt->depth >= 2) {
		uint64_t j = lazy_steps_to(m, task->node_type, bt->entries[bt->depth - 2].key);
		if (j && j < n)
			n = j;
	}
	if (!pending || n <= 1)
		return n;
	/* the look-ahead prices a node at one batched latency; a pass node's depends on its members */
	if (mdl_is_pass(m, task->node_type))
		return 1;
	return s->exact ? oracle_rejecting_run(s, bt, task, now_ns, n) : lazy_rejecting_run(s, bt, task, now_ns, n);
}

/* Lazy's run through slack rejections: with inputs pending and room
 * for them, each boundary of the run asks Eq. 2 again for the InfQ's head,
 * and the run goes on while it is refused. Over the run the waiting time
 * grows by each node's batched latency and the top members' remaining
 * estimates shrink by its single-input latency (lazy_on_task_done), while
 * the members below, the head and the oldest arrival stay as they are: the
 * first boundary whose slack is non-negative ends the run, there or at the
 * caller's horizon, whichever comes first.
 *
 * Boundary by boundary that is a walk; whole passes through the segment
 * are skipped when no boundary in them can admit. A node of type t changes
 * the checked sum (waiting + estimates) by its batched latency less at
 * most b single-input latencies, so over a pass the sum falls by at most
 * the negative part of those differences (zero at b = 1): while the sum
 * stays above the SLA by more than that per pass, every boundary refuses. */
struct lazy_lookahead {
	int64_t fixed_ns;        /* the members below the top and the InfQ's head: their remaining estimates */
	int64_t oldest_ns;       /* earliest arrival among members and head */
	int64_t top_ns;          /* the top's remaining estimates, summed; least_ns the smallest (-1: saturated) */
	int64_t least_ns;
};

/* The checked sum at a boundary where the top has run ran_ns of single-input time. */
static int64_t lazy_checked_ns(const struct batch_table *bt, const struct lazy_lookahead *a, int64_t t_ns,
                               int64_t ran_ns)
{
	const struct bt_entry *top = bt_top(bt);
	int64_t left_ns = 0;                         /* sum of max(0, remaining - ran) over the top */
	if (ran_ns <= a->least_ns) {
		left_ns = a->top_ns - (int64_t)top->n * ran_ns;
	} else {
		for (uint32_t i = top->first; i < top->first + top->n; i++) {
			int64_t rem = lazy_remaining_ns(bt->members[i]);
			left_ns = ns_add(left_ns, rem > ran_ns ? rem - ran_ns : 0);
		}
	}
	return ns_add(t_ns - a->oldest_ns, ns_add(a->fixed_ns, left_ns));
}

static uint64_t lazy_rejecting_run(const struct lazy_state *s, const struct batch_table *bt,
                                   const struct pol_task *task, int64_t now_ns, uint64_t n)
{
	const struct bt_entry *top = bt_top(bt);
	struct lazy_lookahead a = { .fixed_ns = lazy_remaining_ns(s->infq.head), .oldest_ns = s->infq.head->arrival_ns,
	                            .least_ns = INT64_MAX };
	for (uint32_t i = 0; i < bt->nmembers; i++) {
		const struct pol_request *r = bt->members[i];
		int64_t rem = lazy_remaining_ns(r);
		if (r->arrival_ns < a.oldest_ns)
			a.oldest_ns = r->arrival_ns;
		if (i < top->first) {
			a.fixed_ns = ns_add(a.fixed_ns, rem);
		} else {
			a.top_ns = ns_add(a.top_ns, rem);
			if (rem < a.least_ns)
				a.least_ns = rem;
		}
	}
	if (a.top_ns == INT64_MAX)
		a.least_ns = -1;                         /* saturated: the sum member by member */
	const struct mdl_segment *seg = &s->model->segments[s->model->nodes[task->node_type].segment];
	uint32_t last = seg->first_node + seg->nnodes - 1, type = task->node_type, b = task->nreq;
	int64_t pass_ns = 0, pass_single_ns = 0, pass_drop_ns = 0;
	for (uint32_t t = seg->first_node; t <= last; t++) {
		int64_t lat = s->slk.lat.node_ns(s->slk.lat.ctx, t, b), single = s->slk.node_ns[t];
		pass_ns = ns_add(pass_ns, lat);
		pass_single_ns = ns_add(pass_single_ns, single);
		if (lat - (int64_t)b * single < 0)
			pass_drop_ns += lat - (int64_t)b * single;
	}
	const int64_t small = INT64_MAX / 4;         /* far from saturation: the bound is plain arithmetic */
	int64_t t_ns = now_ns, ran_ns = 0;
	uint64_t j = 1, next_try = 1;
	while (j < n) {
		if (j == next_try) {
			/* boundaries j .. j - 1 + q * nnodes all refuse */
			int64_t sum_ns = lazy_checked_ns(bt, &a, t_ns, ran_ns);
			uint64_t q = (n - j) / seg->nnodes;
			if (sum_ns > s->sla_ns && sum_ns < small && pass_ns < small / (int64_t)n &&
			    pass_single_ns < small / (int64_t)n) {
				uint64_t fit = (uint64_t)((task->run_until_ns - 1 - t_ns) / pass_ns);
				if (fit < q)
					q = fit;
				if (pass_drop_ns < 0 && (uint64_t)((sum_ns - s->sla_ns - 1) / -pass_drop_ns) < q)
					q = (uint64_t)((sum_ns - s->sla_ns - 1) / -pass_drop_ns);
			} else {
				q = 0;
			}
			t_ns += (int64_t)q * pass_ns;
			ran_ns += (int64_t)q * pass_single_ns;
			j += q * seg->nnodes;
			next_try = j + seg->nnodes;
			continue;
		}
		/* boundary j: node j - 1, of this type, has ended */
		t_ns = ns_add(t_ns, s->slk.lat.node_ns(s->slk.lat.ctx, type, b));
		if (t_ns >= task->run_until_ns)
			return j;
		ran_ns += s->slk.node_ns[type];
		if (slk_slack_ns(s->sla_ns, 0, lazy_checked_ns(bt, &a, t_ns, ran_ns)) >= 0)
			return j;
		type = type == last ? seg->first_node : type + 1;
		j++;
	}
	return n;
}

/* The oracle's run through rejections: the same, with the exact drain of
 * the members and the InfQ's head (oracle_safe at k = 1) kept up to date
 * node by node (slk_exact_walk_*) instead of drained again. Each top
 * member's remaining runs of the type it runs next are ceil(span left /
 * the segment's nodes), counted down as the run goes. */
static uint64_t oracle_rejecting_run(struct lazy_state *s, const struct batch_table *bt,
                                     const struct pol_task *task, int64_t now_ns, uint64_t n)
{
	const struct bt_entry *top = bt_top(bt);
	uint32_t nm = bt->nmembers;
	int64_t oldest_ns = s->infq.head->arrival_ns;
	for (uint32_t i = 0; i < nm; i++) {
		s->scratch[i] = bt->members[i];
		if (bt->members[i]->arrival_ns < oldest_ns)
			oldest_ns = bt->members[i]->arrival_ns;
	}
	s->scratch[nm] = s->infq.head;             /* scratch has max_batch + 1 slots */
	int64_t drain_ns = slk_exact_walk_begin(&s->drain, s->scratch, nm + 1);
	const int64_t small = INT64_MAX / 4;       /* far from saturation: the changes add up plainly */
	if (drain_ns < 0)
		return 1;                              /* out of memory: node by node, where it counts as unsafe */
	if (drain_ns >= small) {
		slk_exact_walk_end(&s->drain);
		return 1;
	}
	const struct mdl_segment *seg = &s->model->segments[s->model->nodes[task->node_type].segment];
	uint32_t last = seg->first_node + seg->nnodes - 1, type = task->node_type, b = task->nreq;
	for (uint32_t i = 0; i < b; i++) {
		uint64_t left = pol_req_span_left(bt->members[top->first + i]);    /* >= n >= 2 */
		s->walk_runs[i] = (left - 1) / seg->nnodes + 1;     /* ceil(left / nnodes): runs of type left */
		s->walk_phase[i] = (uint32_t)((left - 1) % seg->nnodes); /* nodes until the count drops */
	}
	int64_t t_ns = now_ns;
	uint64_t j = 1;
	for (; j < n; j++, type = type == last ? seg->first_node : type + 1) {
		/* boundary j: node j - 1, of this type, has ended */
		for (uint32_t i = 0; i < b; i++) {
			drain_ns += slk_exact_walk_step(&s->drain, type, (uint32_t)s->walk_runs[i]);
			if (s->walk_phase[i]-- == 0) {
				s->walk_phase[i] = seg->nnodes - 1;
				s->walk_runs[i]--;
			}
		}
		t_ns = ns_add(t_ns, s->slk.lat.node_ns(s->slk.lat.ctx, type, b));
		if (t_ns >= task->run_until_ns || drain_ns >= small ||
		    slk_slack_ns(s->sla_ns, t_ns - oldest_ns, drain_ns) >= 0)
			break;
	}
	slk_exact_walk_end(&s->drain);
	return j < n ? j : n;
}

static int lazy_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                          struct pol_task *task, int64_t *wake_ns)
{
	(void)wake_ns;   /* never waits: work is offered at every boundary */
	struct lazy_state *s = (struct lazy_state *)st;
	struct batch_table *bt = &s->tables[device];
	uint32_t k = lazy_admissible(s, bt, now_ns);
	for (uint32_t i = 0; i < k; i++)
		s->scratch[i] = pol_fifo_pop(&s->infq);
	bt_push(bt, s->scratch, k);
	if (!bt_issue(bt, s->max_batch, task))
		return 0;
	task->run_max = lazy_run_max(s, bt, task, now_ns);
	s->rejecting[device] = !s->no_preemption && !s->no_slack_check && s->infq.len && bt_room(bt);
	return 1;
}

/* A boundary of the device weighs the InfQ when it has room (lazy_admissible). */
static int lazy_boundary_waits(const struct pol_state *st, uint32_t device)
{
	const struct lazy_state *s = (const struct lazy_state *)st;
	return s->infq.len && bt_room(&s->tables[device]);
}

static size_t lazy_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct lazy_state *s = (const struct lazy_state *)st;
	uint64_t pre = 0, mer = 0, spl = 0;
	uint32_t depth = 0;
	for (uint32_t i = 0; i < s->ntables; i++) {
		pre += s->tables[i].preemptions;
		mer += s->tables[i].merges;
		spl += s->tables[i].splits;
		if (s->tables[i].max_depth > depth)
			depth = s->tables[i].max_depth;
	}
	struct pol_stat all[] = {
		{ "preemptions", (double)pre },
		{ "merges", (double)mer },
		{ "splits", (double)spl },
		{ "slack_rejections", (double)s->slack_rejections },
		{ "lazy_admissions", (double)s->lazy_admissions },
		{ "max_stack_depth", (double)depth },
		{ "dec_timesteps", (double)s->slk.dec_timesteps },
	};
	size_t n = sizeof all / sizeof all[0];
	if (s->exact)
		n--;    /* the oracle uses the true lengths */
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++)
		out[i] = all[i];
	return n;
}

static const struct opt_def lazy_params[] = {
	{ "coverage", OPT_DOUBLE, "0.9", 0, 1, 1, "fraction of profiled output lengths the slack predictor covers "
	  "(dec_timesteps, Sec. IV-C)" },
	{ "profile-len", OPT_STR, NULL, 0, 0, 0, "output lengths the slack predictor is profiled on (default: the "
	  "model's; drawn apart from the traffic)" },
	POL_PARAM_NO_PREEMPTION,
	POL_PARAM_NO_SLACK_CHECK,
};

static const struct opt_def oracle_params[] = { POL_PARAM_NO_PREEMPTION, POL_PARAM_NO_SLACK_CHECK };

const struct pol_ops lazy_policy_ops = {
	.name = "lazy",
	.help = "LazyBatching: node-level batching on a BatchTable stack, slack-checked (Eq. 2)",
	.state_size = sizeof(struct lazy_state),
	.default_max_batch = 64,
	.params = lazy_params,
	.nparams = sizeof lazy_params / sizeof lazy_params[0],
	.init = lazy_init,
	.fini = lazy_fini,
	.on_arrival = lazy_on_arrival,
	.on_task_done = lazy_on_task_done,
	.next_task = lazy_next_task,
	.boundary_waits = lazy_boundary_waits,
	.stats = lazy_stats,
};

/* The same scheduler with an exact predictor: LazyBatching's upper bound. */
const struct pol_ops oracle_policy_ops = {
	.name = "oracle",
	.help = "LazyBatching with exact batched latencies and true output lengths (upper bound)",
	.state_size = sizeof(struct lazy_state),
	.default_max_batch = 64,
	.params = oracle_params,
	.nparams = sizeof oracle_params / sizeof oracle_params[0],
	.init = oracle_init,
	.fini = lazy_fini,
	.on_arrival = lazy_on_arrival,
	.on_task_done = lazy_on_task_done,
	.next_task = lazy_next_task,
	.boundary_waits = lazy_boundary_waits,
	.stats = lazy_stats,
};
