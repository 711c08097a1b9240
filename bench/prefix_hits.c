/* bench/prefix_hits.c: a trace's prefix-cache hit rate at a cache capacity,
 * the requests taken in sequence only (no timing: each prompt is looked up,
 * its missing blocks entered and all let go before the next arrives), as the
 * Mooncake paper's Figure 9 measures its traces (FAST '25, section 5.3.1).
 * It drives simbatch's own prefix cache (policies/llm/prefix_cache.h), so the
 * same code the simulator runs is checked against the paper's figure
 * (docs/VALIDATION.md, "Prefix caching against the Mooncake paper").
 *
 * Usage: prefix_hits TRACE BLOCK_TOKENS CAPACITY_TOKENS...
 * Prints, for each capacity, the hit rate in tokens (hit blocks' tokens over
 * prompt tokens) and in blocks (hit over the full blocks the prompts' hash
 * ids cover: a partial last block is never cached), and the blocks evicted.
 * A prompt larger than the cache enters only what fits. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../policies/llm/prefix_cache.h"
#include "../traces/workload.h"
#include "../util/text.h"

/* Replays t through a cache of capacity_blocks: 0, or -1 (out of memory). */
static int replay(const struct trc_trace *t, uint32_t bs, uint64_t capacity_blocks, uint64_t *hit_tokens,
                  uint64_t *tokens, uint64_t *hit_blocks, uint64_t *blocks, uint64_t *evictions)
{
	struct prefix_cache pc;
	if (pc_init(&pc, capacity_blocks) != 0)
		return -1;
	*hit_tokens = *tokens = *hit_blocks = *blocks = 0;
	for (size_t i = 0; i < t->n; i++) {
		struct pol_request r = { .id = i, .input_len = t->input_len[i], .chain_len = 1, .next_node = 1,
		                         .hash_ids = t->hash_ids + t->hash_start[i], .nhash = t->hash_count[i],
		                         .hash_block = t->hash_block_tokens };
		/* full blocks only: a prompt's partial last block is never cached (vLLM's rule, and the simulator's) */
		uint32_t keyed = (uint32_t)(pol_hashed_tokens(&r) / bs), evictable, hit = pc_lookup(&pc, &r, bs, keyed, &evictable);
		*hit_blocks += hit;
		*blocks += keyed;
		*hit_tokens += (uint64_t)hit * bs < r.input_len ? (uint64_t)hit * bs : r.input_len;
		*tokens += r.input_len;
		pc_take(&pc, &r, bs, hit);
		uint64_t want = keyed - hit, room = capacity_blocks - pc.entries;
		if (want > room)
			room += pc_evict_n(&pc, want - room);
		uint32_t upto = hit + (uint32_t)(want < room ? want : room);
		pc_enter_blocks(&pc, &r, bs, hit, upto);
		pc_release(&pc, &r, bs, upto);
	}
	*evictions = pc.evictions;
	pc_fini(&pc);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t bs, cap;
	if (argc < 4 || txt_parse_uint(argv[2], UINT32_MAX, &bs) != 0 || bs == 0) {
		fprintf(stderr, "usage: prefix_hits TRACE BLOCK_TOKENS CAPACITY_TOKENS...\n");
		return 2;
	}
	char err[512];
	struct trc_trace *t;
	if (trc_trace_load(argv[1], &t, err, sizeof err) != 0) {
		fprintf(stderr, "prefix_hits: %s\n", err);
		return 2;
	}
	if (!t->hash_ids) {
		fprintf(stderr, "prefix_hits: %s: no hash ids (a Mooncake trace's JSON lines)\n", argv[1]);
		trc_trace_free(t);
		return 2;
	}
	printf("capacity_tokens,block_tokens,hit_rate_tokens,hit_rate_blocks,evicted_blocks\n");
	for (int a = 3; a < argc; a++) {
		uint64_t ht, tk, hb, bk, ev;
		if (txt_parse_uint(argv[a], (uint64_t)1e12, &cap) != 0 || cap / bs == 0) {
			fprintf(stderr, "prefix_hits: capacity %s: not a whole number of tokens of at least one block\n",
			        argv[a]);
			trc_trace_free(t);
			return 2;
		}
		if (replay(t, (uint32_t)bs, cap / bs, &ht, &tk, &hb, &bk, &ev) != 0) {
			fprintf(stderr, "prefix_hits: out of memory for %s tokens\n", argv[a]);
			trc_trace_free(t);
			return 1;
		}
		printf("%" PRIu64 ",%" PRIu64 ",%.4f,%.4f,%" PRIu64 "\n", cap, bs, (double)ht / (double)tk,
		       (double)hb / (double)bk, ev);
	}
	trc_trace_free(t);
	return 0;
}
