/* traces/source.c: the run's request stream (source.h). */
#include "source.h"
#include "../util/errkind.h"

#include <stdio.h>
#include <string.h>
#include "../util/rng.h"

int trc_source_init(struct trc_source *s, const struct trc_source_config *c, char *err, size_t errlen)
{
	memset(s, 0, sizeof *s);
	s->c = *c;
	if (c->trace && !c->trace_pairs)
		return 0;
	if (trc_arrivals_init(&s->arrivals, c->rate_rps, c->arrival_cv, err, errlen) != 0)
		return -1;
	s->rng_arrivals = rng_create(c->seed, RNG_ARRIVALS);
	s->rng_lengths = rng_create(c->seed, RNG_LENGTHS);
	s->gaps_used = TRC_GAP_BLOCK;            /* none drawn yet */
	if (!s->rng_arrivals || !s->rng_lengths) {
		trc_source_fini(s);
		err_memory(err, errlen, "out of memory for the random streams");
		return -1;
	}
	return 0;
}

/* A trace row's prefix: its prefix columns, or a Mooncake trace's hash ids. */
static void trc_source_prefix_of(const struct trc_trace *t, size_t row, struct trc_request *out)
{
	if (t->prefix_id) {
		out->prefix_id = t->prefix_id[row];
		out->prefix_len = t->prefix_len[row];
	}
	if (t->session_id)
		out->session_id = t->session_id[row];
	if (t->inner_id) {
		out->inner_id = t->inner_id[row];
		out->inner_len = t->inner_len[row];
	}
	if (t->hash_ids) {
		out->hash_ids = t->hash_ids + t->hash_start[row];
		out->nhash = t->hash_count[row];
		out->hash_block = t->hash_block_tokens;
	}
}

/* A generated request's lengths: one trace row's (trace_pairs), or one draw of each distribution. */
static void trc_source_draw_lengths(struct trc_source *s, struct trc_request *out)
{
	const struct trc_source_config *c = &s->c;
	if (c->trace) {     /* trace_pairs: one row's prompt and output together */
		size_t row = gsl_rng_uniform_int(s->rng_lengths, c->trace->n);
		out->input_len = c->trace->input_len[row];
		out->output_len = c->trace->output_len[row];
		trc_source_prefix_of(c->trace, row, out);
	} else {
		out->input_len = c->input_len ? trc_lengths_draw(c->input_len, s->rng_lengths) : 0;
		out->output_len = c->output_len ? trc_lengths_draw(c->output_len, s->rng_lengths) : 0;
	}
}

void trc_source_next_lengths(struct trc_source *s, struct trc_request *out)
{
	*out = (struct trc_request){ .id = s->next_id++ };
	trc_source_draw_lengths(s, out);
}

int trc_source_next(struct trc_source *s, struct trc_request *out, char *err, size_t errlen)
{
	const struct trc_source_config *c = &s->c;
	uint64_t id = s->next_id;
	if (s->ended)
		return 0;
	if (c->trace && !c->trace_pairs) {
		uint64_t limit = c->requests && c->requests < c->trace->n ? c->requests : c->trace->n;
		if (id >= limit)
			goto end;
		double at_s = c->trace_speedup > 0 ? c->trace->arrival_s[id] / c->trace_speedup : c->trace->arrival_s[id];
		*out = (struct trc_request){ .id = id, .arrival_ns = (int64_t)(at_s * 1e9 + 0.5),
		                             .input_len = c->trace->input_len[id], .output_len = c->trace->output_len[id] };
		trc_source_prefix_of(c->trace, id, out);
	} else {
		if (id > 0) {
			if (s->gaps_used == TRC_GAP_BLOCK) {
				trc_arrivals_next_gaps_s(&s->arrivals, s->rng_arrivals, s->gaps, TRC_GAP_BLOCK);
				s->gaps_used = 0;
			}
			s->next_arrival_s += s->gaps[s->gaps_used++];
		}
		if ((c->requests && id >= c->requests) || (!c->requests && s->next_arrival_s >= c->duration_s))
			goto end;
		/* the expected span is checked before the run; a draw can still land past it */
		if (!(s->next_arrival_s <= TRC_MAX_SPAN_S)) {      /* NaN too */
			snprintf(err, errlen, "request %llu arrives at %.4g s of simulated time, past the %.0e s arrivals "
			         "may span (int64 nanoseconds); raise --rate or lower --requests",
			         (unsigned long long)id, s->next_arrival_s, TRC_MAX_SPAN_S);
			return -1;
		}
		*out = (struct trc_request){ .id = id, .arrival_ns = (int64_t)(s->next_arrival_s * 1e9 + 0.5) };
		trc_source_draw_lengths(s, out);
	}
	s->next_id++;
	return 1;
end:
	s->ended = 1;
	return 0;
}

void trc_source_fini(struct trc_source *s)
{
	if (s->rng_arrivals)
		gsl_rng_free(s->rng_arrivals);
	if (s->rng_lengths)
		gsl_rng_free(s->rng_lengths);
	s->rng_arrivals = s->rng_lengths = NULL;
}
