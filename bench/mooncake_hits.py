#!/usr/bin/env python3
"""Prefix-cache hit rates on the Mooncake traces beside the Mooncake paper's (Qin et al., FAST 2025:
"Mooncake: Trading More Storage for Less Computation", section 5.3; the PDF is in kvcache-ai/Mooncake,
FAST25-release/Mooncake-FAST25.pdf). Two of its measurements, at its cache capacities:

1. Figure 9, "theoretical" hit rates by cache capacity, "the sequence of requests" only (no timing).
   Ours: bench/prefix_hits (simbatch's own prefix cache, the requests in sequence), checked here
   against a second implementation (a plain LRU of hash ids in Python). The paper's values are read
   off its figure (its curves' knots; about +-0.005).
2. Figure 10's local cache: 10 prefill nodes, each a 3M-token cache of its own, requests sent where
   their prefix matches best, outputs cut to 1 token. Ours: the simulator itself, 10 replicas of
   llama3.1-70b (the paper's Table 1 architecture) on 8 A100s each (the paper's A800s), --kv-blocks
   of 3M tokens each, behind prefix-affinity, round-robin and least-outstanding. Its global cache
   (the 10 nodes' 30M tokens pooled) beside ours with one 30M-token cache, requests in sequence.
   The paper's bars are read off its figure (about +-1 point).

Usage: bench/mooncake_hits.py BUILD_DIR [DATA_DIR]   (DATA_DIR: ../shared/data by default; ~30 s)"""
import collections
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/mooncake_hits.py"
build = data = traces = None      # set by main from its arguments


CAPACITIES = [10**4, 10**5, 10**6, 2 * 10**6, 3 * 10**6, 5 * 10**6, 10**7, 5 * 10**7, 10**8]
# Figure 9, read off at its knots (the 3M values from its labels: 41% and 46% of the maxima)
PAPER_FIG9 = {
    "conversation": [0.045, 0.072, 0.087, 0.121, 0.164, 0.249, 0.326, 0.399, 0.400],
    "synthetic": [0.000, 0.011, 0.148, 0.230, 0.304, 0.450, 0.590, 0.659, 0.660],
}
# Figure 10's bars (local: each node's 3M tokens; global: pooled) and Table 2's cache ratios
PAPER_FIG10 = {"conversation": (0.17, 0.375), "synthetic": (0.265, 0.625)}
PAPER_TABLE2 = {"conversation": 0.40, "synthetic": 0.66}


def rows(path):
    out = []
    for n, line in enumerate(tc.read_text(path, tc.WORKLOAD_FILE, "Mooncake trace").splitlines(), 1):
        if line.strip():
            try:
                r = json.loads(line)
                if not isinstance(r, dict) or not isinstance(r.get("hash_ids"), list) or \
                        not isinstance(r.get("input_length"), int):
                    raise ValueError("not a request with hash_ids and input_length")
            except ValueError as e:
                raise tc.BadInput(f"{path}:{n}: {e}")
            out.append(r)
    return out


def lru_hit_rate(reqs, capacity_tokens, block=512):
    """The second implementation: a plain LRU of hash ids, a request's blocks touched deepest first
    (the order the simulator's cache lets them go), hits a leading run of full blocks."""
    cap = capacity_tokens // block
    lru = collections.OrderedDict()
    hit_tokens = tokens = 0
    for r in reqs:
        ids = r["hash_ids"][:min(len(r["hash_ids"]) * block, r["input_length"]) // block]
        h = 0
        while h < len(ids) and ids[h] in lru:
            h += 1
        hit_tokens += h * block
        tokens += r["input_length"]
        for x in reversed(ids):
            if x in lru:
                lru.move_to_end(x)
            else:
                lru[x] = True
                while len(lru) > cap:
                    lru.popitem(last=False)
    return hit_tokens / tokens


def prefix_hits(path, caps):
    out = subprocess.run([os.path.join(build, "bench", "prefix_hits"), path, "512", *map(str, caps)],
                         capture_output=True, text=True, check=True).stdout.splitlines()[1:]
    return [float(line.split(",")[2]) for line in out]


def simulate(path, router, out_dir):
    """Figure 10's local cache on the simulator: the trace with every output cut to one token."""
    cut = os.path.join(out_dir, os.path.basename(path))
    if not os.path.exists(cut):
        with open(cut, "w") as f:
            for r in rows(path):
                r["output_length"] = 1
                f.write(json.dumps(r) + "\n")
    cmd = [os.path.join(build, "simbatch"), "--model=llama3.1-70b", "--hw=gpu-a100", "--tp=8", "--replicas=10",
           "--router=" + router, "--kv-blocks=" + str(3 * 10**6 // 16), "--trace=" + cut, "--over-context=drop",
           "--no-db", "--json"]
    j = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)
    p = j["policy_stats"]
    return p["prefix_hit_blocks"] / p["prefix_queried_blocks"], j.get("dropped_over_context", 0)


def main(argv):
    global build, data, traces
    a = tc.hand_args(PROG, __doc__, argv, ["BUILD_DIR"], ["DATA_DIR"])
    build = a["BUILD_DIR"]
    data = a.get("DATA_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))
    traces = {name: os.path.join(data, "mooncake-fast25", name + "_trace.jsonl")
              for name in ("conversation", "synthetic")}
    for path in traces.values():
        if not os.path.exists(path):
            raise tc.BadInput(f"{path}: no such file (give the data directory)")
    print("Figure 9: hit rate (prompt tokens found cached) by cache capacity, requests in sequence, 512-token blocks\n")
    print("| trace | capacity (tokens) | paper | ours | ours - paper | plain LRU (check) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    notes = []
    for name, path in traces.items():
        reqs = rows(path)
        ours = prefix_hits(path, CAPACITIES)
        for cap, paper, mine in zip(CAPACITIES, PAPER_FIG9[name], ours):
            check = lru_hit_rate(reqs, cap)
            flag = "" if abs(check - mine) < 5e-5 else " DIFFERS"
            print(f"| {name} | {cap:.0e} | {paper:.3f} | {mine:.4f} | {100 * (mine - paper):+.1f} pt | "
                  f"{check:.4f}{flag} |")
        # the granularity of the released trace: a prompt whose run of hits stops inside it loses, on average,
        # half a block that finer blocks of the same tokens would have found
        seen, stops, tokens = set(), 0, 0
        for r in reqs:
            ids = r["hash_ids"]
            h = 0
            while h < len(ids) and ids[h] in seen:
                h += 1
            stops += 0 < h < len(ids)
            tokens += r["input_length"]
            seen.update(ids)
        notes.append(f"{name}: Table 2's cache ratio {PAPER_TABLE2[name]:.2f}; half a block for each of the {stops} of "
                     f"{len(reqs)} prompts whose run of hits stops inside them: +{100 * stops * 256 / tokens:.1f} pt")
    print("\n" + "\n".join(notes))

    print("\nFigure 10: 10 prefill nodes of 3M tokens each (local) and their 30M pooled (global), outputs 1 token\n")
    print("| trace | paper local | ours prefix-affinity | ours round-robin | ours least-outstanding | paper global | "
          "ours one 30M cache, in sequence |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in traces.items():
            sims = [simulate(path, router, tmp) for router in ("prefix-affinity", "round-robin", "least-outstanding")]
            pooled = prefix_hits(path, [3 * 10**7])[0]
            local, glob = PAPER_FIG10[name]
            dropped = f" ({sims[0][1]} prompts over 131,072 tokens dropped)" if sims[0][1] else ""
            print(f"| {name}{dropped} | {local:.3f} | {sims[0][0]:.4f} | {sims[1][0]:.4f} | {sims[2][0]:.4f} | "
                  f"{glob:.3f} | {pooled:.4f} |")
    return 0


if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, main, sys.argv[1:]))
