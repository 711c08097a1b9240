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

--engine=VERSION: every simulation with that serving-engine profile (engines/VERSION.engine: vLLM
v0.15's all-reduce algorithms, CUDA-graph padding and host launches on the measured GPU; its
scheduler defaults stay under the server's own settings, which every simulation passes, and its
async scheduling is the server's). --engine-ablate: instead, the "prompt pool" workload on gpu-h100
with the engine, each of its terms switched off in turn (--engine-off), all three off (the GPU's
kernels alone), and no engine at all: every stage and metric, measured beside each. --fit-terms:
instead, the terms only these runs could calibrate (a per-request front end, a per-iteration CPU
time), each fitted on one model's stages and held out on the other's (docs/VALIDATION.md section 6).

--routing=uniform|FILE: a mixture of experts' routing model (Mixtral; simbatch
run's --routing), passed to every simulation of a MoE model.

--modes=A,B: only these columns (of "no reuse", "sys cached", "prefix cache",
"prompt pool"; a build from before prompt pools has no "prompt pool").

Usage: bench/vllm_validation.py SIMBATCH [--hw=H ...] [--data=DIR ...] [--ablate] [--async-scheduling]
       [--modes=A,B] [--engine=VERSION] [--engine-ablate] [--fit-terms]
       [--routing=uniform|FILE]
(default hardware: gpu-h100 and gpu-h100-roofline; default data: the three
7B stages, the 70B TP 4 roleplay and the Mixtral-8x7B TP 2 roleplay; the
roofline prices no mixture of experts, so its Mixtral column says refused)."""
import csv
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/vllm_validation.py"

BLOCK = 16          # KV block tokens, vLLM's default
MOE_MODELS = ("mixtral-8x7b",)    # the models a --routing applies to
HERE = os.path.dirname(os.path.abspath(__file__))
SHARED = os.path.join(HERE, "..", "..", "shared", "data")
DATA = [os.path.join(SHARED, "vllm-h100-llama2-7b", d) for d in ("20260217-155451-llama-2-7b-tp1-codegen",
                                                                 "20260217-162547-llama-2-7b-tp1-roleplay")] + \
       [os.path.join(SHARED, "vllm-h100-tp", "20260218-084319-llama-2-70b-tp4-roleplay"),
        os.path.join(SHARED, "vllm-h100-tp", "20260218-141024-mixtral-8x7b-v0-1-tp2-roleplay")]
MODELS = {"meta-llama/Llama-2-7b-hf": "llama2-7b", "meta-llama/Llama-2-70b-hf": "llama2-70b",
          "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b"}
QUANTILE_KEYS = [("min", 0.0), ("p0.1", 0.001), ("p1", 0.01), ("p5", 0.05), ("p10", 0.10), ("p25", 0.25),
                 ("median", 0.50), ("p75", 0.75), ("p90", 0.90), ("p95", 0.95), ("p99", 0.99), ("p99.9", 0.999),
                 ("max", 1.0)]


def load_yaml_scalars(path):
    """The flat key: value lines of a small YAML file (exp-config.yaml)."""
    out = {}
    for line in tc.read_text(path, tc.SMALL_FILE, "YAML file").splitlines():
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


def read_json(path):
    try:
        return json.loads(tc.read_text(path, tc.SMALL_FILE, "JSON file"))
    except ValueError as e:
        raise tc.BadInput(f"{path}: not JSON ({e})")


def experiment(path):
    """One experiment's directory: its settings, shared prefix and stages (BadInput naming what lacks)."""
    try:
        return load_experiment(path)
    except (KeyError, TypeError, IndexError) as e:
        raise tc.BadInput(f"{path}: not an inference-perf experiment (no {e})")


def load_experiment(path):
    exp = load_yaml_scalars(os.path.join(path, "exp-config.yaml"))
    profile = read_json(os.path.join(path, "profile.yaml"))   # JSON is YAML
    sp = profile["data"]["shared_prefix"]
    stages = []
    for k, st in enumerate(profile["load"]["stages"]):
        res = read_json(os.path.join(path, "results", f"stage_{k}_lifecycle_metrics.json"))
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
            f"--requests-out={reqs}", f"--prefix-cache={'on' if mode in CACHED else 'off'}",
            *[x for x in EXTRA if not x.startswith("--routing=") or e["model"] in MOE_MODELS]]
    t = time.monotonic()
    run = subprocess.run(args, check=True, capture_output=True, text=True)
    wall = time.monotonic() - t
    rows = list(csv.DictReader(tc.read_text(reqs, tc.WORKLOAD_FILE, "requests file").splitlines()))
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
            "n": len(rs), "ttft_var": variance(ttft),
            "gen_var": variance([(b - a) / (gen - 1) for a, b in zip(ttft, e2e)]),
            "hit_rate": ((counts[k + 1][0] - counts[k][0]) / (counts[k + 1][1] - counts[k][1])
                         if mode in CACHED and counts[k + 1][1] > counts[k][1] else None),
        })
    return out, wall


def variance(xs):
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / max(len(xs) - 1, 1)


def quantile_variance(q):
    """A measured metric's variance from its published quantiles: its piecewise-linear quantile function
    integrated (the mean of Q(p)^2 less the square of its mean), at 10,000 evenly spaced probabilities."""
    qs = [inverse_cdf(q, (i + 0.5) / 10000) for i in range(10000)]
    return variance(qs)


def measured(e, st):
    s = st["measured"]["successes"]
    lat = s["latency"]
    gen = e["shared_prefix"]["output_len"]
    t, r = lat["time_to_first_token"], lat["request_latency"]
    return {"ttft_mean": t["mean"], "ttft_p50": t["median"], "ttft_p90": t["p90"], "ttft_p99": t["p99"],
            "e2e_mean": r["mean"], "e2e_p90": r["p90"], "e2e_p99": r["p99"], "n": s["count"],
            "ttft_var": quantile_variance(t),
            # (e2e - ttft) / (gen - 1) per request: the two are not published together, so their covariance is
            # unknown; the sum of their variances bounds the difference's when they correlate positively
            "gen_var": (quantile_variance(r) + quantile_variance(t)) / (gen - 1) ** 2,
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
    lines = tc.read_text(table, tc.SMALL_FILE, "operator profile").split("\n")
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


ENGINE_TERMS = [("engine, every term", []), ("allreduce off", ["--engine-off=allreduce"]),
                ("padding off", ["--engine-off=padding"]), ("launch off", ["--engine-off=launch"]),
                ("all three off", ["--engine-off=allreduce,padding,launch"]), ("no engine", None)]
TARGETS = {"per_token": 10, "e2e_mean": 10, "ttft_mean": 15, "e2e_p99": 20}


def engine_ablation(binary, exps, tmp, engine):
    """The prompt-pool workload on gpu-h100 with the engine, each of its terms off in turn: every metric."""
    rows = {}
    for label, opts in ENGINE_TERMS:
        saved = list(EXTRA)
        EXTRA[:] = [a for a in EXTRA if not a.startswith("--engine")]
        if opts is not None:
            EXTRA.extend([f"--engine={engine}", *opts])
        try:
            for e in exps:
                rows[(label, e["name"])] = simulate(binary, e, "gpu-h100", "prompt pool", tmp)[0]
        finally:
            EXTRA[:] = saved
    labels = [label for label, _ in ENGINE_TERMS]
    print("| stage | metric | measured | " + " | ".join(labels) + " |")
    print("| --- | --- | ---: | " + " | ".join("---:" for _ in labels) + " |")
    for e in exps:
        for k, st in enumerate(e["stages"]):
            m = measured(e, st)
            for key, name, scale in METRICS:
                cells = []
                for label in labels:
                    v = rows[(label, e["name"])][k][key]
                    err = 100 * (v / m[key] - 1)
                    miss = "" if key not in TARGETS or abs(err) <= TARGETS[key] else " x"
                    cells.append(f"{v * scale:.1f} ({err:+.1f}%{miss})")
                print(f"| {e['name']} {st['rate']} req/s | {name} | {m[key] * scale:.1f} | " + " | ".join(cells) + " |")
    print("\n(x: outside its target: per-token and E2E mean 10%, TTFT mean 15%, E2E p99 20%)")


FIT_TERMS = [("per-request front end (TTFT and E2E)", "ttft_mean", "ttft_var"),
             ("per-iteration CPU time (per-token)", "per_token", "gen_var")]


def fit_terms(binary, exps, tmp, engine):
    """Each term that only the given runs could calibrate, fitted leaving one model out: its value as the
    mean residual (measured less simulated) of the fitting model's stages, that value's standard error,
    and what the value fitted on one model does to the other's (held out)."""
    EXTRA.append(f"--engine={engine}")
    sims = {e["name"]: simulate(binary, e, "gpu-h100", "prompt pool", tmp)[0] for e in exps}
    EXTRA.pop()
    models = sorted({e["model"] for e in exps})
    print("| term | fitted on | value | its standard error | held out: stage, metric, error without -> with |")
    print("| --- | --- | ---: | ---: | --- |")
    for label, key, var in FIT_TERMS:
        fits = {}
        for model in models:
            res, ses = [], []
            for e in exps:
                if e["model"] != model:
                    continue
                for k, st in enumerate(e["stages"]):
                    m, sim = measured(e, st), sims[e["name"]][k]
                    res.append(m[key] - sim[key])
                    ses.append(m[var] / m["n"] + sim[var] / sim["n"])
            fits[model] = (sum(res) / len(res), sum(ses) ** 0.5 / len(res))
        for model in models:
            v, se = fits[model]
            held = []
            for e in exps:
                if e["model"] == model:
                    continue
                for k, st in enumerate(e["stages"]):
                    m, sim = measured(e, st), sims[e["name"]][k]
                    keys = [key] + (["e2e_mean"] if key == "ttft_mean" else ["e2e_mean"])
                    for kk in dict.fromkeys(keys):
                        shift = v if key == "ttft_mean" else v * (e["shared_prefix"]["output_len"] - 1)
                        held.append(f"{e['name']} {st['rate']} req/s {kk} {100 * (sim[kk] / m[kk] - 1):+.1f}% -> "
                                    f"{100 * ((sim[kk] + shift) / m[kk] - 1):+.1f}%")
                        if kk == key and key == "per_token":
                            held[-1] = (f"{e['name']} {st['rate']} req/s per-token {100 * (sim[kk] / m[kk] - 1):+.1f}%"
                                        f" -> {100 * ((sim[kk] + v) / m[kk] - 1):+.1f}%")
            print(f"| {label} | {model} | {v * 1e3:.3f} ms | {se * 1e3:.3f} ms | " + "; ".join(held) + " |")
        (a, sa), (b, sb) = fits[models[0]], fits[models[-1]]
        moved, err = abs(a - b), (sa ** 2 + sb ** 2) ** 0.5
        print(f"| {label} | verdict | moves {moved * 1e3:.3f} ms between the fits, their error {err * 1e3:.3f} ms: "
              f"{'kept' if moved <= err else 'dropped (it moves more than its error)'} | | |")


def main(argv):
    binary = None
    hws, data, ablate, modes = [], [], False, MODES
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    engine, engine_ablate, fit = None, False, False
    for a in argv:
        if a.startswith("--hw="):
            hws.append(a[5:])
        elif a.startswith("--data="):
            data.append(a[7:])
        elif a.startswith("--modes="):
            modes = tuple(a[8:].split(","))
            if not set(modes) <= set(MODES):
                tc.usage_error(PROG, f"--modes: each of {', '.join(MODES)}")
        elif a == "--ablate":
            ablate = True
        elif a == "--async-scheduling" or a.startswith("--routing="):
            EXTRA.append(a)
        elif a.startswith("--engine="):
            EXTRA.append(a)
            engine = a[9:]
        elif a == "--engine-ablate":
            engine_ablate = True
        elif a == "--fit-terms":
            fit = True
        elif a.startswith("-"):
            tc.usage_error(PROG, f"unknown option {a.split('=', 1)[0]}")
        elif binary is None:
            binary = a
        else:
            tc.usage_error(PROG, f"one SIMBATCH, not also '{a}'")
    if binary is None:
        tc.usage_error(PROG, "expected SIMBATCH")
    for d in data:
        if not os.path.isdir(d):
            raise tc.BadInput(f"--data={d}: no such directory")
    hws = hws or ["gpu-h100", "gpu-h100-roofline"]
    MAKE_TRACE[0] = os.path.join(os.path.dirname(os.path.abspath(binary)), "make-trace")
    exps = [experiment(d) for d in data or DATA]
    tmp = tempfile.mkdtemp()
    if ablate:
        ablation(binary, exps, tmp)
        return
    if fit:
        fit_terms(binary, exps, tmp, engine or "vllm-0.15")
        return
    if engine_ablate:
        engine_ablation(binary, exps, tmp, engine or "vllm-0.15")
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
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
