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

sb = sys.argv[1]
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
requests = sys.argv[3] if len(sys.argv) > 3 else "2000"
td = tempfile.mkdtemp(prefix="simbatch-moe-cost-")
dense = os.path.join(td, "mixtral-dense.model")
with open(dense, "w") as f:
    f.write("model mixtral-dense\nsource mixtral-8x7b with one expert of twice the width (bench/moe_cost.py)\n"
            "input_len fixed:1020\noutput_len fixed:129\n"
            "llm layers=32 hidden=4096 heads=32 kv_heads=8 head_dim=128 ffn=28672 vocab=32000 context=32768 "
            "dtype=bf16\n"
            "moe experts=1 top_k=1 expert_ffn=28672 router=topk_softmax\n")
common = ["--hw=gpu-h100", "--tp=2", "--policy=chunked", "--rate=4", f"--requests={requests}", "--seed=1",
          "--no-db", "--json"]
work = {"moe": ["--model=mixtral-8x7b"], "dense": ["--model=" + dense], "llama": ["--model=llama2-7b"]}


def cpu_of(args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sb, *args, *common], capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"moe_cost: {' '.join(args)}: {r.stderr.strip()}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


names = list(work)
times = {n: [] for n in names}
for i in range(reps):
    order = names[i % 3:] + names[:i % 3]
    for n in order:
        times[n].append(cpu_of(work[n]))
for n in names:
    print(f"{n:6s} median {statistics.median(times[n]):.3f} CPU s ({requests} requests; "
          f"range {min(times[n]):.3f}-{max(times[n]):.3f})")
for other in ("dense", "llama"):
    ratios = [m / o for m, o in zip(times["moe"], times[other])]
    print(f"moe / {other}: median {statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}, "
          f"{reps} rounds)")
