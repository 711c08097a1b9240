#!/usr/bin/env python3
"""LLM serving figures (the LLM-serving issue; bench/README.md "LLM serving"),
all on the GPU roofline (gpu-h100-roofline: a model from the datasheet, not a
measurement) and the Azure LLM inference trace 2023 (../shared/data/azure-llm-2023,
CC-BY 4.0):

 1. the whole conversation trace on Llama-2-7B under each LLM policy
    (requests beyond its 4096-token context dropped, as a server rejects
    them): TTFT and TPOT p50/p99, goodput, preemptions, wall time;
 2. 1M requests drawn from the trace's prompt and output lengths (the rows
    within 4096 tokens, drawn independently) under continuous on Llama-3-8B
    (context 8192 holds any pair of them): wall time;
 3. the highest Poisson rate each policy sustains with a p50 latency within
    a target (bisection), on Llama-3-8B and those lengths: the throughput
    ratio at equal p50 latency;
 4. TPOT and inter-token p99 of continuous, chunked and slo at equal rates.

Usage: bench/llm_figures.py SIMBATCH [parts: 1 2 3 4]"""
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "azure-llm-2023",
                    "AzureLLMInferenceTrace_conv.csv")
SLO = ["--ttft-slo=1000", "--tpot-slo=100"]


def run(binary, *args):
    t0 = time.monotonic()
    out = subprocess.run([binary, *args, "--hw=gpu-h100-roofline", "--no-db", "--json"], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out), time.monotonic() - t0


def length_files(tmp):
    """The conversation trace's prompt and output lengths within 4096 tokens (scripts/trace-lengths)."""
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "trace-lengths")
    prefix = os.path.join(tmp, "azure-conv")
    subprocess.run([sys.executable, tool, DATA, prefix, "--max-total=4096"], check=True, capture_output=True)
    return prefix + "-prompt.csv", prefix + "-output.csv"


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], rest="PART")
    binary, parts = a["SIMBATCH"], a["PART"] or ["1", "2", "3", "4"]
    if set(parts) - {"1", "2", "3", "4"}:
        raise tc.BadInput(f"PART {sorted(set(parts) - {'1', '2', '3', '4'})[0]}: the figures are 1, 2, 3 and 4")
    tmp = tempfile.mkdtemp()
    prompt, output = length_files(tmp)
    # what every table below rests on, so that one pasted elsewhere keeps it (issue 51)
    print("hardware: gpu-h100-roofline, the H100's datasheet roofline (a lower bound, not a measurement); "
          "lengths: the Azure LLM conversation trace 2023", flush=True)
    lens = [f"--input-len=file:{prompt}", f"--output-len=file:{output}", "--model=llama3-8b"]
    if "1" in parts:
        print("| policy | requests | TTFT p50 | TTFT p99 | TPOT p50 | TPOT p99 | ITL p99 | goodput req/s | preemptions | wall s |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for p in ("static", "continuous", "chunked", "slo"):
            j, wall = run(binary, f"--policy={p}", "--model=llama2-7b", f"--trace={DATA}", "--over-context=drop", *SLO)
            print(f"| {p} | {j['completed']} | {j['ttft_ms']['p50']:.1f} | {j['ttft_ms']['p99']:.1f} | "
                  f"{j['tpot_ms']['p50']:.2f} | {j['tpot_ms']['p99']:.2f} | {j['itl_ms']['p99']:.2f} | "
                  f"{j['goodput_rps']:.2f} | {j['preemptions']:.0f} | {wall:.2f} |", flush=True)
    if "2" in parts:
        j, wall = run(binary, "--policy=continuous", "--rate=5", "--requests=1000000", *lens)
        print(f"1M requests, continuous, llama3-8b at 5 req/s: {wall:.2f} s wall ({j['wall_s']:.2f} s simulating), "
              f"TTFT p99 {j['ttft_ms']['p99']:.1f} ms, TPOT p99 {j['tpot_ms']['p99']:.2f} ms", flush=True)
    if "3" in parts:
        target_ms = 3000.0
        print(f"highest rate with p50 latency within {target_ms:.0f} ms (20,000 requests a run, bisection on the rate):")
        best = {}
        for p in ("static", "continuous", "chunked"):
            lo, hi = 0.5, 200.0
            for _ in range(14):
                mid = (lo * hi) ** 0.5
                j, _ = run(binary, f"--policy={p}", f"--rate={mid:.4f}", "--requests=20000", *lens)
                if j["latency_ms"]["p50"] <= target_ms and not j["saturated"]:
                    lo = mid
                else:
                    hi = mid
            best[p] = lo
            print(f"  {p}: {lo:.2f} req/s", flush=True)
        print(f"  continuous / static: {best['continuous'] / best['static']:.2f}x; "
              f"chunked / continuous: {best['chunked'] / best['continuous']:.2f}x", flush=True)
    if "4" in parts:
        print("| rate | policy | throughput | TTFT p99 | TPOT p99 | ITL p99 | ITL max | goodput (TTFT 100 ms, TPOT 8 ms) |")
        print("| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
        for rate in (10, 20, 25):
            for p in ("continuous", "chunked", "slo"):
                j, _ = run(binary, f"--policy={p}", f"--rate={rate}", "--requests=20000", "--ttft-slo=100", "--tpot-slo=8",
                           *lens)
                print(f"| {rate} | {p} | {j['throughput_rps']:.2f} | {j['ttft_ms']['p99']:.1f} | {j['tpot_ms']['p99']:.2f} | "
                      f"{j['itl_ms']['p99']:.2f} | {j['itl_ms']['max']:.2f} | {j['goodput_rps']:.2f} |", flush=True)


PROG = "bench/llm_figures.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
