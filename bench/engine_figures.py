#!/usr/bin/env python3
"""Llama-2-70B at TP 2, 4 and 8 on the measured H100 (gpu-h100) and the Azure LLM conversation trace 2023's
(prompt, output) pairs (../shared/data/azure-llm-2023, CC-BY 4.0; --trace-pairs --over-context=drop: the
rows within the 4,096-token context), before and after the serving-engine profile (engines/FORMAT.md):

  defaults     simbatch's defaults (continuous: vLLM V1 without chunked prefill, 256 sequences, no async)
  v0.15 sched  vLLM v0.15's scheduler settings (chunked, 8192 tokens, 1024 sequences, async scheduling),
               priced by the GPU's kernels alone
  vllm-0.15    --engine=vllm-0.15: the same settings, and its all-reduce algorithms, CUDA-graph padding and
               host launches

For each: TTFT and TPOT p50/p99 at 2 req/s (Poisson), and the capacity (simbatch capacity: the highest rate
at which at most 1% of requests miss a target, at 95% confidence) under MLPerf Inference's Llama-2-70B
latency targets: the server scenario's TTFT 2 s and TPOT 200 ms (p99; MLPerf Inference v4.0 rules) and the
interactive one's 450 ms and 40 ms.
--cost instead: the CPU seconds of one run with and without --engine (the whole conversation trace's pairs at
6 req/s on TP 4, v0.15's scheduler settings both), 7 alternating pairs, the median ratio and its range.
Usage: bench/engine_figures.py SIMBATCH [--requests=N] [--cost]"""
import json
import os
import resource
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/engine_figures.py"

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "azure-llm-2023",
                     "AzureLLMInferenceTrace_conv.csv")
BASE = ["--model=llama2-70b", "--hw=gpu-h100", f"--trace={TRACE}", "--trace-pairs", "--over-context=drop"]
CONFIGS = [("defaults", []),
           ("v0.15 sched", ["--policy=chunked", "--max-batched-tokens=8192", "--max-seqs=1024", "--async-scheduling"]),
           ("vllm-0.15", ["--engine=vllm-0.15"])]
TARGETS = [("server 2 s / 200 ms", ["--ttft-slo=2000", "--tpot-slo=200"]),
           ("interactive 450 ms / 40 ms", ["--ttft-slo=450", "--tpot-slo=40"])]


def cpu_s(args):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, check=True, capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def cost(sb):
    args = [sb, *BASE, "--tp=4", "--rate=6", "--requests=19366", "--no-db", "--json", *CONFIGS[1][1]]
    alone, engine, ratios = [], [], []
    for i in range(7):
        order = [False, True] if i % 2 == 0 else [True, False]
        got = {}
        for with_engine in order:
            got[with_engine] = cpu_s(args + (["--engine=vllm-0.15"] if with_engine else []))
        alone.append(got[False])
        engine.append(got[True])
        ratios.append(got[True] / got[False])
    print(f"CPU s a run: GPU alone {statistics.median(alone):.3f}, --engine=vllm-0.15 {statistics.median(engine):.3f}; "
          f"engine / alone {statistics.median(ratios):.3f} ({min(ratios):.3f}-{max(ratios):.3f})")


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], flags=("requests", "cost"))
    sb = a["SIMBATCH"]
    if not os.access(sb, os.X_OK):
        raise tc.BadInput(f"{sb}: not an executable simbatch")
    if a.get("cost"):
        cost(sb)
        return
    requests = str(tc.number(a.get("requests", "3000"), "--requests", int, 1))
    print("| TP | configuration | TTFT p50 / p99 ms (2 req/s) | TPOT p50 / p99 ms | " +
          " | ".join(f"capacity, {t} (req/s)" for t, _ in TARGETS) + " |")
    print("| ---: | --- | ---: | ---: | " + " | ".join("---:" for _ in TARGETS) + " |")
    for tp in (2, 4, 8):
        for label, opts in CONFIGS:
            args = [*BASE, f"--tp={tp}", *opts]
            r = json.loads(subprocess.run([sb, *args, "--rate=2", f"--requests={requests}", "--no-db", "--json"],
                                          check=True, capture_output=True, text=True).stdout)
            caps = []
            for _, slo in TARGETS:
                c = subprocess.run([sb, "capacity", *args, *slo, f"--requests={requests}", "--jobs=2", "--no-db", "--json"],
                                   capture_output=True, text=True)
                caps.append(f"{json.loads(c.stdout)['capacity_rps']:.2f}" if c.returncode == 0 else
                            "none" if "no rate meets" in c.stderr else "error: " + c.stderr.strip()[:80])
            print(f"| {tp} | {label} | {r['ttft_ms']['p50']:.1f} / {r['ttft_ms']['p99']:.1f} | "
                  f"{r['tpot_ms']['p50']:.1f} / {r['tpot_ms']['p99']:.1f} | " + " | ".join(caps) + " |")


if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
