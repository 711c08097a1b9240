#!/usr/bin/env python3
"""The overload-within-a-run criterion (util/overload.h, docs/OVERLOAD.md) measured.

    python3 bench/overload.py build/simbatch [--seeds=100] [--rho=0.9] [--delay-seeds=20]

1. False positives: long stable Poisson runs at rho (default 0.9) of two models, one run a
   seed, counting the runs that name an "overload_window". rho is the offered rate over the
   model's saturated throughput, read from a run at twice the rate it can serve (its
   throughput_rps once the queue grows without bound):
     node-level: resnet50, serial, npu (an M/D/1 queue), 200,000 requests a run;
     node-level: transformer, lazy, npu (the defaults), 200,000 requests a run (bistable at
          rho 0.9 of its full-batch throughput: docs/OVERLOAD.md);
     LLM: llama2-7b on gpu-h100, chunked, --max-batched-tokens=2048 --max-seqs=128,
          prompts 566 and outputs 247 tokens (the codegen lengths), 60,000 requests a run
          (about an hour simulated).
   Printed: flagged runs of all, and the one-sided 95% Clopper-Pearson upper bound.
2. Detection delay on issue 46's example: the LLM above at 5 req/s for 900 s, then 20 req/s
   for 300 s (two make-trace traces joined, each seed its own), seconds after the 20 req/s
   stage begins at which the flagged window begins, is flagged, and ends.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

LLM = ["--model=llama2-7b", "--hw=gpu-h100", "--policy=chunked", "--max-batched-tokens=2048",
       "--max-seqs=128", "--block-size=16"]
LLM_LENGTHS = ["--input-len=566", "--output-len=247"]
MODELS = {
    "node-level (resnet50, serial, npu)": (["--policy=serial", "--model=resnet50"], 200000, 3000.0),
    "node-level (transformer, lazy, npu)": ([], 200000, 6000.0),
    "LLM (llama2-7b, chunked, gpu-h100)": (LLM + LLM_LENGTHS, 60000, 40.0),
}


def run(exe, args):
    out = subprocess.run([exe, "run", "--no-db", "--json"] + args, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def binom_cdf(k, n, p):
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k + 1))


def upper_bound(k, n, conf=0.95):
    """One-sided Clopper-Pearson upper bound on a proportion seen k times in n."""
    if k == n:
        return 1.0
    lo, hi = k / n, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if binom_cdf(k, n, mid) > 1 - conf:
            lo = mid
        else:
            hi = mid
    return hi


def false_positives(exe, seeds, rho):
    for name, (args, requests, over_rate) in MODELS.items():
        mu = run(exe, args + [f"--rate={over_rate}", f"--requests={requests // 4}"])["throughput_rps"]
        rate = round(rho * mu, 4)
        flagged = []
        for seed in range(1, seeds + 1):
            d = run(exe, args + [f"--rate={rate}", f"--requests={requests}", f"--seed={seed}"])
            if d["overload_window"] is not None:
                flagged.append((seed, d["overload_window"]))
        print(f"{name}: saturated throughput {mu:.6g} req/s, rho {rho} -> --rate={rate}, {requests} requests a run: "
              f"{len(flagged)} of {seeds} seeds flagged (95% upper bound {100 * upper_bound(len(flagged), seeds):.2g}%)")
        for seed, w in flagged[:5]:
            print(f"  seed {seed}: {w}")


def make_trace(tool, rate, requests, seed, path):
    subprocess.run([tool, f"--rate={rate}", f"--requests={requests}", "--input-len=566", "--output-len=247",
                    f"--seed={seed}", "-o", path], check=True)
    return [line for line in open(path) if not line.startswith("#") and not line.startswith("arrival_s")]


def detection_delay(exe, seeds):
    tool = os.path.join(os.path.dirname(exe), "make-trace")
    print("issue 46's example: 5 req/s for 900 s, then 20 req/s for 300 s (seconds after the second stage begins)")
    print("seed  window begins  flagged  window ends  saturated")
    with tempfile.TemporaryDirectory() as td:
        for seed in range(1, seeds + 1):
            one = make_trace(tool, 5, 4700, 2 * seed, os.path.join(td, "a.csv"))
            two = make_trace(tool, 20, 6200, 2 * seed + 1, os.path.join(td, "b.csv"))
            path = os.path.join(td, "staged.csv")
            with open(path, "w") as f:
                f.write("arrival_s,input_len,output_len\n")
                for line in one:
                    t, rest = line.split(",", 1)
                    if float(t) < 900:
                        f.write(line)
                for line in two:
                    t, rest = line.split(",", 1)
                    if float(t) < 300:
                        f.write(f"{float(t) + 900:.9f},{rest}")
            d = run(exe, LLM + [f"--trace={path}"])
            w = d["overload_window"]
            if w is None:
                print(f"{seed:4d}  not flagged{'':22s}{d['saturated']}")
            else:
                print(f"{seed:4d}  {w['start_s'] - 900:13.1f}  {w['flagged_s'] - 900:7.1f}  {w['end_s'] - 900:11.1f}  "
                      f"{d['saturated']}")


def main():
    exe = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else "build/simbatch"
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--"))
    false_positives(exe, int(opts.get("seeds", 100)), float(opts.get("rho", 0.9)))
    detection_delay(exe, int(opts.get("delay-seeds", 20)))


if __name__ == "__main__":
    main()
