/* policies/topup.c: top-up batching for encoder-decoder models, Amun
 * (Edinburgh et al., WNGT'18) Sec. 6.1, Algorithms 5 and 6, with the
 * threshold of Sec. 7.2.
 *
 *  - Encoding (Algorithm 5): arrivals wait in an input queue; an encoding
 *    batch of up to --max-batch of them runs the encoder phase (every node
 *    before the decoder) together, and each sentence goes to the encoded
 *    queue q the moment its own encoder steps end. Sentences leave the
 *    encoding batch as they finish rather than being padded to the longest,
 *    so encoder cost is the same for every threshold and the comparison
 *    isolates the decoder.
 *  - Decoding (Algorithm 6): each device keeps one running decoder batch of at
 *    most --max-batch-decoder (default --max-batch) sentences. After every
 *    decoder step (all decoder nodes once, e.g. dec_cell then dec_proj),
 *    finished sentences leave, and the batch is topped up from q when at least
 *    --topup-threshold of it is free (Sec. 7.2: "only when it is at least half
 *    empty", the default 0.5). Threshold 0 tops up whenever a slot is free,
 *    Algorithm 6 taken literally. Threshold 1 tops up only an empty batch:
 *    a batch decodes until its last sentence ends, dropping finished ones on
 *    the way, which is Amun's standard mini-batching (Algorithm 1), the
 *    baseline top-up is compared with.
 *  - Amun runs encoding and decoding asynchronously on one GPU, its encoder
 *    running ahead over the whole input file, so q is never empty when the
 *    decoder tops up. A server has no file to run ahead over. Here the two
 *    sides share each device as two threads would: the encoder wants the
 *    device while it has sentences to encode and q holds fewer than one
 *    decoder batch (--max-batch-decoder sentences); the decoder wants it
 *    while its batch is not empty; when both want it, the side that has used
 *    less device time goes (ties to the decoder), and a side gets no credit
 *    for time it did not want the device. Equal time rather than equal steps
 *    lets the cheap encoder steps keep q ahead of a saturated decoder, while
 *    at moderate load arrivals gather into encoding batches instead of each
 *    being encoded alone. A step (all nodes of one repetition) is never
 *    interrupted by the other side.
 * The model must have exactly one decoder segment, placed last (Seq2Seq,
 * GNMT, Transformer); tree models and models without a decoder are refused.
 * Several workers each keep their own encoding and decoding batches and
 * share the two queues. The policy never waits for a timer. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include "fifo.h"
#include "../util/errkind.h"
#include "policy.h"

struct tu_dev {
	struct pol_request **enc;   /* encoding batch (points into tu_state.pool) */
	uint32_t nenc;
	struct pol_request **dec;   /* running decoder batch (points into tu_state.pool) */
	uint32_t ndec;
	int64_t enc_ns, dec_ns;     /* device time each side has used: the fair share */
	int enc_wanted, dec_wanted; /* which sides wanted the device at the last choice */
};

struct tu_state {
	const struct mdl_model *model;  /* not owned */
	uint32_t dec_seg;               /* the decoder segment */
	uint32_t dec_first;             /* its first node type */
	uint32_t enc_max, dec_max;      /* batch limits (sentences) */
	double threshold;               /* --topup-threshold */
	uint32_t workers;
	struct pol_fifo input;          /* arrived, not yet encoding (through pol_next) */
	struct pol_fifo encoded;        /* encoded, waiting for a decoder slot: Amun's q */
	struct tu_dev *devs;            /* owned */
	struct pol_request **pool;      /* owned: workers * (enc_max + dec_max) */
	/* counters for the run summary */
	uint64_t encode_batches;        /* encoding batches started */
	uint64_t decode_batches;        /* decoder batches started empty */
	uint64_t topups;                /* top-ups of a running decoder batch */
	uint64_t topup_sentences;       /* sentences those top-ups added */
	uint64_t decode_steps;          /* decoder steps run */
};

static int tu_is_dec(const struct tu_state *s, const struct pol_request *r)
{
	return s->model->nodes[pol_req_node(r)].segment == s->dec_seg;
}

/* 1 when the request stands at the first node of its segment's repetition,
 * i.e. between steps. */
static int tu_at_step_start(const struct tu_state *s, const struct pol_request *r)
{
	const struct mdl_node *n = &s->model->nodes[pol_req_node(r)];
	return pol_req_node(r) == s->model->segments[n->segment].first_node;
}

static void tu_fini(struct pol_state *st)
{
	struct tu_state *s = (struct tu_state *)st;
	free(s->devs);
	free(s->pool);
}

static int tu_init(struct pol_state *st, const struct pol_env *env, char *err, size_t errlen)
{
	struct tu_state *s = (struct tu_state *)st;
	const struct mdl_model *m = env->model;
	uint32_t ndec = 0, dec_seg = 0;
	for (uint32_t i = 0; i < m->nsegments; i++)
		if (m->segments[i].kind == MDL_DECODER) {
			ndec++;
			dec_seg = i;
		}
	/* Encoding batch members move in lockstep until each leaves for the
	 * decoder; that holds when only the segment before the decoder repeats. */
	int lockstep = 1;
	for (uint32_t i = 0; i + 1 < dec_seg; i++)
		lockstep &= m->segments[i].kind == MDL_STATIC;
	if (m->is_tree || ndec != 1 || dec_seg != m->nsegments - 1 || !lockstep) {
		snprintf(err, errlen, "topup: model %s is not an encoder-decoder model (encoder steps, then "
		         "one decoder segment at the end), which top-up batching needs (Amun Sec. 6.1)", m->name);
		return -1;
	}
	uint32_t max_batch_decoder = (uint32_t)opt_uint(env->params, "max-batch-decoder");
	if (max_batch_decoder > env->max_batch) {
		snprintf(err, errlen, "topup: --max-batch-decoder=%u exceeds --max-batch=%u", max_batch_decoder,
		         env->max_batch);
		return -1;
	}
	s->model = m;
	s->dec_seg = dec_seg;
	s->dec_first = m->segments[dec_seg].first_node;
	s->enc_max = env->max_batch;
	s->dec_max = max_batch_decoder ? max_batch_decoder : env->max_batch;
	s->threshold = opt_double(env->params, "topup-threshold");
	s->workers = env->workers;
	s->devs = calloc(s->workers, sizeof *s->devs);
	s->pool = calloc((size_t)s->workers * (s->enc_max + s->dec_max), sizeof *s->pool);
	if (!s->devs || !s->pool) {
		err_memory(err, errlen, "topup: out of memory");
		tu_fini(st);  /* the caller does not call fini after a failed init */
		return -1;
	}
	for (uint32_t d = 0; d < s->workers; d++) {
		s->devs[d].enc = s->pool + (size_t)d * (s->enc_max + s->dec_max);
		s->devs[d].dec = s->devs[d].enc + s->enc_max;
	}
	return 0;
}

static void tu_on_arrival(struct pol_state *st, struct pol_request *r, int64_t now_ns)
{
	(void)now_ns;
	struct tu_state *s = (struct tu_state *)st;
	/* a request with no encoder steps is encoded already */
	pol_fifo_push(tu_is_dec(s, r) ? &s->encoded : &s->input, r);
}

static void tu_on_task_done(struct pol_state *st, const struct pol_task *t, int64_t now_ns)
{
	(void)now_ns;
	struct tu_state *s = (struct tu_state *)st;
	struct tu_dev *d = &s->devs[t->device];
	uint32_t keep = 0;
	if (s->model->nodes[t->node_type].segment == s->dec_seg) {
		d->dec_ns += t->end_ns - t->start_ns;
		/* finished sentences leave the decoder batch at once */
		for (uint32_t i = 0; i < d->ndec; i++)
			if (!pol_req_done(d->dec[i]))
				d->dec[keep++] = d->dec[i];
		d->ndec = keep;
		const struct mdl_segment *seg = &s->model->segments[s->dec_seg];
		if (t->node_type == seg->first_node + seg->nnodes - 1)
			s->decode_steps++;
		return;
	}
	d->enc_ns += t->end_ns - t->start_ns;
	/* encoded sentences go to q in batch order; the rest keep encoding */
	for (uint32_t i = 0; i < d->nenc; i++) {
		struct pol_request *r = d->enc[i];
		if (pol_req_done(r))
			continue;  /* no decoder steps: finished while encoding */
		if (tu_is_dec(s, r))
			pol_fifo_push(&s->encoded, r);
		else
			d->enc[keep++] = r;
	}
	d->nenc = keep;
}

/* Top-up (Algorithm 6 with the Sec. 7.2 threshold): refills the decoder batch
 * from q when it is empty or at least threshold * dec_max slots are free. */
static void tu_top_up(struct tu_state *s, struct tu_dev *d)
{
	uint32_t free_slots = s->dec_max - d->ndec;
	if (!s->encoded.len || !free_slots)
		return;
	if (d->ndec && (double)free_slots < s->threshold * s->dec_max)
		return;
	uint32_t before = d->ndec;
	while (d->ndec < s->dec_max && s->encoded.len)
		d->dec[d->ndec++] = pol_fifo_pop(&s->encoded);
	if (before) {
		s->topups++;
		s->topup_sentences += d->ndec - before;
	} else {
		s->decode_batches++;
	}
}

static int tu_run(struct pol_task *task, struct pol_request *const *m, uint32_t n)
{
	task->kind = POL_TASK_NODE;
	task->node_type = pol_req_node(m[0]);
	task->nreq = n;
	for (uint32_t i = 0; i < n; i++) {
		assert(pol_req_node(m[i]) == task->node_type);
		task->reqs[i] = m[i];
	}
	return 1;
}

static int tu_next_task(struct pol_state *st, uint32_t device, int64_t now_ns,
                        struct pol_task *task, int64_t *wake_ns)
{
	(void)now_ns;
	(void)wake_ns;
	struct tu_state *s = (struct tu_state *)st;
	struct tu_dev *d = &s->devs[device];
	/* a step under way finishes before anything else runs */
	if (d->nenc && !tu_at_step_start(s, d->enc[0]))
		return tu_run(task, d->enc, d->nenc);
	if (d->ndec && !tu_at_step_start(s, d->dec[0]))
		return tu_run(task, d->dec, d->ndec);

	tu_top_up(s, d);
	int enc_wants = (d->nenc || s->input.len) && s->encoded.len < s->dec_max;
	int dec_wants = d->ndec != 0;
	/* a side that starts wanting the device gets no credit for its idle time */
	if (enc_wants && !d->enc_wanted && d->enc_ns < d->dec_ns)
		d->enc_ns = d->dec_ns;
	if (dec_wants && !d->dec_wanted && d->dec_ns < d->enc_ns)
		d->dec_ns = d->enc_ns;
	d->enc_wanted = enc_wants;
	d->dec_wanted = dec_wants;
	if (dec_wants && (!enc_wants || d->dec_ns <= d->enc_ns))
		return tu_run(task, d->dec, d->ndec);
	if (!enc_wants)
		return 0;
	if (!d->nenc) {
		/* Algorithm 5: a new encoding batch from the oldest arrivals */
		while (d->nenc < s->enc_max && s->input.len)
			d->enc[d->nenc++] = pol_fifo_pop(&s->input);
		s->encode_batches++;
	}
	return tu_run(task, d->enc, d->nenc);
}

static size_t tu_stats(const struct pol_state *st, struct pol_stat *out, size_t max)
{
	const struct tu_state *s = (const struct tu_state *)st;
	const struct pol_stat all[] = {
		{ "encode_batches", (double)s->encode_batches },
		{ "decode_batches", (double)s->decode_batches },
		{ "topups", (double)s->topups },
		{ "topup_sentences", (double)s->topup_sentences },
		{ "decode_steps", (double)s->decode_steps },
	};
	size_t n = 0;
	for (; n < sizeof all / sizeof all[0] && n < max; n++)
		out[n] = all[n];
	return n;
}

static const struct opt_def tu_params[] = {
	{ "topup-threshold", OPT_DOUBLE, "0.5", 0, 1, 0, "top up when at least this fraction of the batch is free "
	  "(1 = mini-batching)" },
	POL_PARAM_MAX_BATCH_DECODER,
};

const struct pol_ops topup_policy_ops = {
	.name = "topup",
	.help = "top-up batching (Amun): a running decoder batch refilled from encoded sentences",
	.state_size = sizeof(struct tu_state),
	.default_max_batch = 128,
	.params = tu_params,
	.nparams = sizeof tu_params / sizeof tu_params[0],
	.init = tu_init,
	.fini = tu_fini,
	.on_arrival = tu_on_arrival,
	.on_task_done = tu_on_task_done,
	.next_task = tu_next_task,
	.stats = tu_stats,
};
