#!/usr/bin/env python3
"""What simulating a mixture of experts costs (issue 50): Mixtral-8x7B (8 experts,
top 2: 12.9 B active parameters) against a dense model of the same active size on
the same pricing path, and against today's dense path.

  moe    mixtral-8x7b: every MoE layer of every iteration draws its tokens' experts
         (hwmodels/moe_route.h) and sums the reached experts' GEMMs
  dense  mixtral-8x7b with its MoE layers as one expert of twice the width, every
         token through it (experts=1 top_k=1 expert_ffn=28672): the same active
         parameters a token, the same pricing path, one GEMM pair a layer and no
         routing to draw (a file written to a temp directory)
  llama  llama2-7b on its measured operator curves (today's dense path, for scale)

Each workload runs REPS times, the three in turn with the order rotated, at TP 2 on
gpu-h100, the chunked policy at 4 req/s of the default lengths (1,020 prompt and
129 output tokens), seed 1. Printed: median CPU seconds (user + system of the
child) a workload, and the median of the per-round ratios moe / dense and
moe / llama with their range (paired: each ratio from runs taken together).

Usage: bench/moe_cost.py SIMBATCH [REPS=7] [REQUESTS=2000]"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/moe_cost.py"
DENSE = ("model mixtral-dense\nsource mixtral-8x7b with one expert of twice the width (bench/moe_cost.py)\n"
         "input_len fixed:1020\noutput_len fixed:129\n"
         "llm layers=32 hidden=4096 heads=32 kv_heads=8 head_dim=128 ffn=28672 vocab=32000 context=32768 "
         "dtype=bf16\nmoe experts=1 top_k=1 expert_ffn=28672 router=topk_softmax\n")


def cpu_of(sb, args, common):
    """The child's CPU seconds (user + system) for one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sb, *args, *common], capture_output=True, text=True, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], optional=["REPS", "REQUESTS"])
    sb = os.path.abspath(a["SIMBATCH"])
    if not os.access(sb, os.X_OK) or os.path.isdir(sb):
        raise tc.BadInput(f"{a['SIMBATCH']}: not an executable simbatch")
    reps = tc.number(a.get("REPS", "7"), "REPS", int, 1)
    requests = tc.number(a.get("REQUESTS", "2000"), "REQUESTS", int, 1)
    td = tempfile.mkdtemp(prefix="simbatch-moe-cost-")
    dense = os.path.join(td, "mixtral-dense.model")
    with open(dense, "w") as f:
        f.write(DENSE)
    common = ["--hw=gpu-h100", "--tp=2", "--policy=chunked", "--rate=4", f"--requests={requests}", "--seed=1",
              "--no-db", "--json"]
    work = {"moe": ["--model=mixtral-8x7b"], "dense": ["--model=" + dense], "llama": ["--model=llama2-7b"]}
    names = list(work)
    times = {n: [] for n in names}
    for i in range(reps):
        for n in names[i % 3:] + names[:i % 3]:
            times[n].append(cpu_of(sb, work[n], common))
    for n in names:
        print(f"{n:6s} median {statistics.median(times[n]):.3f} CPU s ({requests} requests; "
              f"range {min(times[n]):.3f}-{max(times[n]):.3f})")
    for other in ("dense", "llama"):
        ratios = [m / o for m, o in zip(times["moe"], times[other])]
        print(f"moe / {other}: median {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}, "
              f"{reps} rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, main, sys.argv[1:]))
