#!/usr/bin/env python3
"""simbatch against a real vLLM server (docs/VALIDATION.md, "LLM serving
against a real vLLM server"): vLLM v0.15.1 on one H100 SXM serving
Llama-2-7B, and on four serving Llama-2-70B at TP 4, measured by the
inference-sim project (../shared/data/vllm-h100-llama2-7b/ and
../shared/data/vllm-h100-tp/, whose README gives provenance and traps).

Every stage of every experiment is simulated with the server's settings
(chunked prefill, max_num_batched_tokens and max_num_seqs from its
exp-config.yaml, KV blocks of 16 tokens), requests at the stage's fixed
interval, prompt lengths drawn from the measured prompt_len quantiles (the
inverse of the piecewise-linear CDF through them, at evenly spaced
probabilities, shuffled with a fixed seed) and outputs of the profile's
output_len (ignore_eos: every request generates exactly that many). A
multi-stage experiment is one trace; each stage's metrics come from the
requests that arrived in it.

The server cached prefixes (vLLM V1's prefix caching). Three columns a
hardware model: "no reuse" (--prefix-cache=off, every prompt prefilled
whole), "sys cached" (the earlier bound, cache off: every use of a system
prompt after its first has its prompt shortened by the system prompt's full
KV blocks, which also drops them from the context its attention reads) and
"prefix cache" (simbatch's prefix cache, on as on the server: each request
carries its system prompt as a trace prefix column, prefix_id the prompt,
prefix_len system_prompt_len, and the cache decides what is reused; the
profile's multi-turn flag did not grow the measured prompts, 580 to 604
tokens at codegen: the system prompt and the question, so nothing more was
shared).

"prompt pool" is the workload as the client sent it (the data README's
second trap): make-trace --from-experiment rebuilds inference-perf's pool of
num_groups x num_prompts_per_group whole prompts from the run's
results/config.yaml, shuffled once and sent in that order (a stage's
request k the prompt at k mod the pool), each prompt's length fixed across
its visits (the measured prompt_len quantiles' inverse at evenly spaced
probabilities); the trace names the whole prompt as its prefix and the
group's system prompt inside it, and the prefix cache (on) finds a prompt
sent before whole and a new prompt's system prompt. The earlier three
columns stay as bounds.

The prefix hit rate (blocks found cached of the prompt blocks asked) is
printed for every stage and column with a cache: simbatch counts them over a
run, so a later stage's is the whole run's less the run cut at its start.

Measured per-token latency is (request_latency mean - TTFT mean) /
(generated tokens - 1), as the data README says: inference-perf's own
time_per_output_token counts re-tokenised text. Measured output throughput
is requests/s x generated tokens for the same reason.

--ablate: instead, the measured GPU model (gpu-h100, "sys cached") with each
of its terms priced at 0 in turn (the operator profile's "# exclude"), and
what that does to every metric of every stage: each term's contribution.

--async-scheduling: every simulation with vLLM's async scheduling, which the
server ran (its default since v0.14): an arrival joins the iteration after
next.

--modes=A,B: only these columns (of "no reuse", "sys cached", "prefix cache",
"prompt pool"; a build from before prompt pools has no "prompt pool").

Usage: bench/vllm_validation.py SIMBATCH [--hw=H ...] [--data=DIR ...] [--ablate] [--async-scheduling]
       [--modes=A,B]
(default hardware: gpu-h100 and gpu-h100-roofline; default data: the three
7B stages and the 70B TP 4 roleplay)."""
import csv
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

BLOCK = 16          # KV block tokens, vLLM's default
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")
DATA = [os.path.join(SHARED, "vllm-h100-llama2-7b", d) for d in ("20260217-155451-llama-2-7b-tp1-codegen",
                                                                 "20260217-162547-llama-2-7b-tp1-roleplay")] + \
       [os.path.join(SHARED, "vllm-h100-tp", "20260218-084319-llama-2-70b-tp4-roleplay")]
MODELS = {"meta-llama/Llama-2-7b-hf": "llama2-7b", "meta-llama/Llama-2-70b-hf": "llama2-70b"}
QUANTILE_KEYS = [("min", 0.0), ("p0.1", 0.001), ("p1", 0.01), ("p5", 0.05), ("p10", 0.10), ("p25", 0.25),
                 ("median", 0.50), ("p75", 0.75), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99), ("p99.9", 0.999),
                 ("max", 1.0)]


def load_yaml_scalars(path):
    """The flat key: value lines of a small YAML file (exp-config.yaml)."""
    out = {}
    for line in open(path):
        m = re.match(r"^(\w+):\s*(\S+)\s*$", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def inverse_cdf(quantiles, p):
    pts = [(q, quantiles[k]) for k, q in QUANTILE_KEYS]
    for (q0, v0), (q1, v1) in zip(pts, pts[1:]):
        if p <= q1:
            return v0 + (v1 - v0) * ((p - q0) / (q1 - q0) if q1 > q0 else 0)
    return pts[-1][1]


def experiment(path):
    exp = load_yaml_scalars(os.path.join(path, "exp-config.yaml"))
    profile = json.load(open(os.path.join(path, "profile.yaml")))   # JSON is YAML
    sp = profile["data"]["shared_prefix"]
    stages = []
    for k, st in enumerate(profile["load"]["stages"]):
        res = json.load(open(os.path.join(path, "results", f"stage_{k}_lifecycle_metrics.json")))
        stages.append({"rate": st["rate"], "duration": st["duration"], "measured": res})
    return {"name": os.path.basename(path).split("-", 2)[2], "exp": exp, "shared_prefix": sp, "stages": stages,
            "path": path, "model": MODELS[exp["model"]]}


MODES = ("no reuse", "sys cached", "prefix cache", "prompt pool")
CACHED = ("prefix cache", "prompt pool")      # the columns run with the prefix cache on


def make_trace(e, path, mode, seed=1):
    """Fixed-interval arrivals stage after stage; returns each stage's [start, end) in s."""
    if mode == "prompt pool":
        # what the client sent, made by make-trace beside the simulator: the same stage windows (a stage of
        # int(rate x duration) requests from where the one before ended)
        subprocess.run([MAKE_TRACE[0], f"--from-experiment={e['path']}", f"--seed={seed}", "-o", path], check=True,
                       capture_output=True, text=True)
        windows, t0 = [], 0.0
        for st in e["stages"]:
            n = int(st["rate"] * st["duration"])
            windows.append((t0, t0 + n / st["rate"]))
            t0 += n / st["rate"]
        return windows
    sys_cached = mode == "sys cached"
    rng = random.Random(seed)
    sp = e["shared_prefix"]
    out_len = sp["output_len"]
    sys_len = sp["system_prompt_len"] // BLOCK * BLOCK    # vLLM caches whole blocks only
    prompts_seen = 0
    rows, windows, t0 = [], [], 0.0
    users = sp["num_unique_system_prompts"] * sp["num_users_per_system_prompt"]
    for st in e["stages"]:
        n = int(round(st["rate"] * st["duration"]))
        q = st["measured"]["successes"]["prompt_len"]
        lens = [int(round(inverse_cdf(q, (i + 0.5) / n))) for i in range(n)]
        rng.shuffle(lens)
        for i in range(n):
            # requests cycle through the users; user u's system prompt is u // users-per-prompt
            first_use = prompts_seen < sp["num_unique_system_prompts"] and (len(rows) % users) % \
                sp["num_users_per_system_prompt"] == 0
            if first_use:
                prompts_seen += 1
            p = lens[i] - (sys_len if sys_cached and not first_use else 0)
            user = len(rows) % users
            rows.append((t0 + i / st["rate"], p, out_len, user // sp["num_users_per_system_prompt"] + 1))
        windows.append((t0, t0 + n / st["rate"]))
        t0 += n / st["rate"]
    with open(path, "w") as f:
        if mode == "prefix cache":   # the system prompt as the shared prefix (a prompt never shorter than it)
            f.write("arrival_s,input_len,output_len,prefix_id,prefix_len\n")
            f.writelines(f"{a:.9f},{p},{o},{sid},{min(sp['system_prompt_len'], p)}\n" for a, p, o, sid in rows)
        else:
            f.write("arrival_s,input_len,output_len\n")
            f.writelines(f"{a:.9f},{p},{o}\n" for a, p, o, _ in rows)
    return windows


def percentile(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


EXTRA = []   # options given to every simulation (--async-scheduling)
MAKE_TRACE = [None]   # make-trace, beside the simulator


def prefix_counts(args, trace, upto):
    """(hit, queried) prompt blocks of a run of the trace's requests arriving before upto s."""
    cut = trace + ".cut.csv"
    with open(trace) as f, open(cut, "w") as g:
        for line in f:
            if line[0].isdigit() and float(line.split(",", 1)[0]) >= upto:
                break
            g.write(line)
    out = subprocess.run([a if not a.startswith("--trace=") else f"--trace={cut}" for a in args
                          if not a.startswith("--requests-out=")], check=True, capture_output=True, text=True)
    stats = json.loads(out.stdout).get("policy_stats", {})
    return stats.get("prefix_hit_blocks", 0), stats.get("prefix_queried_blocks", 0)


def simulate(binary, e, hw, mode, tmp):
    tag = mode.replace(" ", "-")
    trace = os.path.join(tmp, f"{e['name']}-{tag}.csv")
    reqs = os.path.join(tmp, f"{e['name']}-{os.path.basename(hw)}-{tag}-req.csv")
    windows = make_trace(e, trace, mode)
    args = [binary, f"--model={e['model']}", f"--hw={hw}", "--policy=chunked", f"--trace={trace}",
            f"--max-batched-tokens={e['exp']['max_num_batched_tokens']}", f"--max-seqs={e['exp']['max_num_seqs']}",
            f"--tp={e['exp']['tensor_parallelism']}", f"--block-size={BLOCK}", "--no-db", "--json",
            f"--requests-out={reqs}", f"--prefix-cache={'on' if mode in CACHED else 'off'}", *EXTRA]
    t = time.monotonic()
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    wall = time.monotonic() - t
    rows = list(csv.DictReader(open(reqs)))
    out = []
    gen = e["shared_prefix"]["output_len"]
    # each stage's prefix hits: the run's counts less those of the run cut at the stage's start
    stats = json.loads(run.stdout).get("policy_stats", {})
    counts = [(stats.get("prefix_hit_blocks", 0), stats.get("prefix_queried_blocks", 0))]
    if mode in CACHED:
        for (a, _) in reversed(windows[1:]):
            counts.insert(0, prefix_counts(args, trace, a))
    counts.insert(0, (0, 0))
    for k, (a, b) in enumerate(windows):
        rs = [r for r in rows if a <= float(r["arrival_s"]) < b]
        ttft = [float(r["first_token_s"]) - float(r["arrival_s"]) for r in rs]
        e2e = [float(r["finish_s"]) - float(r["arrival_s"]) for r in rs]
        span = max(float(r["finish_s"]) for r in rs) - min(float(r["arrival_s"]) for r in rs)
        out.append({
            "ttft_mean": sum(ttft) / len(ttft), "ttft_p50": percentile(ttft, .5), "ttft_p90": percentile(ttft, .9),
            "ttft_p99": percentile(ttft, .99), "e2e_mean": sum(e2e) / len(e2e), "e2e_p90": percentile(e2e, .9),
            "e2e_p99": percentile(e2e, .99),
            "per_token": (sum(e2e) / len(e2e) - sum(ttft) / len(ttft)) / (gen - 1),
            "out_tps": len(rs) * gen / span,
            "hit_rate": ((counts[k + 1][0] - counts[k][0]) / (counts[k + 1][1] - counts[k][1])
                         if mode in CACHED and counts[k + 1][1] > counts[k][1] else None),
        })
    return out, wall


def measured(e, st):
    s = st["measured"]["successes"]
    lat = s["latency"]
    gen = e["shared_prefix"]["output_len"]
    t, r = lat["time_to_first_token"], lat["request_latency"]
    return {"ttft_mean": t["mean"], "ttft_p50": t["median"], "ttft_p90": t["p90"], "ttft_p99": t["p99"],
            "e2e_mean": r["mean"], "e2e_p90": r["p90"], "e2e_p99": r["p99"],
            "per_token": (r["mean"] - t["mean"]) / (gen - 1), "out_tps": s["throughput"]["requests_per_sec"] * gen}


TERMS = [("GEMMs (QKV, out, up, down)", "attn_pre_proj, attn_post_proj, mlp_up_proj, mlp_down_proj"),
         ("norms", "input_layernorm, post_attention_layernorm"), ("rotary", "attn_rope"), ("activation", "mlp_act"),
         ("residual add", "add"), ("embedding", "emb"), ("LM head", "lm_head"),
         ("attention prefill", "attention_prefill"), ("attention decode", "attention_decode")]
METRICS = [("ttft_mean", "TTFT mean", 1e3), ("ttft_p50", "TTFT p50", 1e3), ("ttft_p90", "TTFT p90", 1e3),
           ("ttft_p99", "TTFT p99", 1e3), ("per_token", "per-token", 1e3), ("e2e_mean", "E2E mean", 1e3),
           ("e2e_p90", "E2E p90", 1e3), ("e2e_p99", "E2E p99", 1e3), ("out_tps", "output tok/s", 1)]


def ablation(binary, exps, tmp):
    """Each term of gpu-h100 priced at 0 in turn: the metrics' change against the whole model."""
    table = os.path.join(HERE, "..", "calib", "tables", "ops-h100.csv")
    lines = open(table).read().split("\n")
    keys = ["ttft_mean", "per_token", "e2e_mean", "e2e_p99"]
    print("| term priced at 0 | stage | " + " | ".join(label for k, label, _ in METRICS if k in keys) + " |")
    print("| --- | --- | " + " | ".join("---:" for _ in keys) + " |")
    exps = [e for e in exps if e["model"] == "llama2-7b"]      # the profile's TP 1 rows: the 7B stages
    full = {e["name"]: simulate(binary, e, "gpu-h100", "sys cached", tmp)[0] for e in exps}
    for label, terms in TERMS:
        path = os.path.join(tmp, "ops-h100.csv")      # beside it no all-reduce: these runs are tp 1
        with open(path, "w") as f:
            f.write("\n".join([lines[0], f"# exclude = {terms}"] + lines[1:]))
        for e in exps:
            sim, _ = simulate(binary, e, path, "sys cached", tmp)
            for k, st in enumerate(e["stages"]):
                cells = [f"{100 * (sim[k][key] / full[e['name']][k][key] - 1):+.1f}%" for key in keys]
                print(f"| {label} | {e['name']} {st['rate']} req/s | " + " | ".join(cells) + " |")


def main(argv):
    binary = None
    hws, data, ablate, modes = [], [], False, MODES
    for a in argv:
        if a.startswith("--hw="):
            hws.append(a[5:])
        elif a.startswith("--data="):
            data.append(a[7:])
        elif a.startswith("--modes="):
            modes = tuple(a[8:].split(","))
            if not set(modes) <= set(MODES):
                sys.exit(f"--modes: each of {', '.join(MODES)}")
        elif a == "--ablate":
            ablate = True
        elif a == "--async-scheduling":
            EXTRA.append(a)
        elif binary is None:
            binary = a
        else:
            sys.exit(__doc__)
    if binary is None:
        sys.exit(__doc__)
    hws = hws or ["gpu-h100", "gpu-h100-roofline"]
    MAKE_TRACE[0] = os.path.join(os.path.dirname(os.path.abspath(binary)), "make-trace")
    exps = [experiment(d) for d in data or DATA]
    tmp = tempfile.mkdtemp()
    if ablate:
        ablation(binary, exps, tmp)
        return
    walls = []
    cols = [(hw, c) for hw in hws for c in modes]
    print("| stage | metric | measured | " + " | ".join(f"{hw} {c}" for hw, c in cols) + " |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in cols) + " |")
    for e in exps:
        sims = []
        for hw, c in cols:
            try:
                r, wall = simulate(binary, e, hw, c, tmp)
            except subprocess.CalledProcessError as err:   # a hardware model this run refuses (the roofline at TP 4)
                if err.returncode != 2:
                    raise
                sims.append(None)
                continue
            sims.append(r)
            walls.append(wall)
        for k, st in enumerate(e["stages"]):
            m = measured(e, st)
            for key, label, scale in METRICS:
                cells = []
                for sim in sims:
                    if sim is None:
                        cells.append("refused")
                        continue
                    v = sim[k][key]
                    cells.append(f"{v * scale:.1f} ({100 * (v / m[key] - 1):+.1f}%)")
                print(f"| {e['name']} {st['rate']} req/s | {label} | {m[key] * scale:.1f} | " + " | ".join(cells) + " |")
            hits = [f"{100 * sim[k]['hit_rate']:.1f}%" if sim and sim[k]["hit_rate"] is not None else "-"
                    for sim in sims]
            print(f"| {e['name']} {st['rate']} req/s | prefix hit rate | - | " + " | ".join(hits) + " |")
    print(f"\n{len(walls)} simulations, {sum(walls):.2f} s wall in all (largest {max(walls):.2f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
