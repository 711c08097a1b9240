#!/usr/bin/env python3
"""How a run's cost grows: simulated requests per wall second and per CPU
second, and the process's peak memory, against the number of requests
(1e4 .. MAX) and of workers (1, 4, 16) or a fleet's replicas (1, 4, 16, 64),
for one workload at a fixed load per worker. The speed issue's "how cost
grows" figure; a flat row means cost linear in the requests.

Usage: bench/scaling.py SIMBATCH REPS WORKLOAD [MAX_REQUESTS]
  WORKLOAD: serial (resnet50 on npu, 70% of one device's capacity per worker)
            lazy   (gnmt on npu, 300 req/s per worker)
            fleet  (llama2-7b on H100 replicas behind least-outstanding, 4.5 req/s a replica, each
                    request a row of the Azure conversation trace 2023, prompt and output together)
            fleet-hist (the same, --quantiles=histogram)
Prints a markdown table of medians over REPS runs (user+system CPU of the
child, wall time as the run reports it, the child's own peak resident memory)."""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

AZURE_CONV = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "azure-llm-2023",
                          "AzureLLMInferenceTrace_conv.csv")
WORKLOADS = {   # base options, rate per device, the option that sets the devices, their counts
    "serial": (["--policy=serial", "--model=resnet50", "--hw=npu"], 1055.0, "workers", (1, 4, 16)),
    "lazy": (["--policy=lazy", "--model=gnmt", "--hw=npu"], 300.0, "workers", (1, 4, 16)),
    "fleet": (["--model=llama2-7b", "--trace=" + AZURE_CONV, "--trace-pairs", "--over-context=drop"], 4.5, "replicas",
              (1, 4, 16, 64)),
    # the same with --quantiles=histogram: memory that grows with the requests in flight only
    "fleet-hist": (["--model=llama2-7b", "--trace=" + AZURE_CONV, "--trace-pairs", "--over-context=drop",
                    "--quantiles=histogram"], 4.5, "replicas", (1, 4, 16, 64)),
}


def one(binary, args):
    """One run: (requests per wall second, per CPU second, the child's own peak RSS in KiB)."""
    p = subprocess.Popen([binary, *args, "--no-db", "--json"], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise SystemExit(f"scaling: {binary} {' '.join(args)}: exit {p.returncode}")
    j = json.loads(out)
    return j["completed"] / j["wall_s"], j["completed"] / (ru.ru_utime + ru.ru_stime), ru.ru_maxrss


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH", "REPS", "WORKLOAD"], ["MAX_REQUESTS"])
    binary, reps, name = a["SIMBATCH"], tc.number(a["REPS"], "REPS", int, 1), a["WORKLOAD"]
    top = int(tc.number(a.get("MAX_REQUESTS", "1e7"), "MAX_REQUESTS", float, 1e4))
    if name not in WORKLOADS:
        raise tc.BadInput(f"WORKLOAD {name}: not one of {', '.join(WORKLOADS)}")
    base, rate, devices, counts = WORKLOADS[name]
    print(f"| {name} | {devices} | requests | M req/s (wall) | M req/s (CPU) | peak MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for k in counts:
        n = 10_000
        while n <= top:
            router = ["--router=least-outstanding"] if devices == "replicas" and k > 1 else []
            runs = [one(binary, base + router + [f"--{devices}={k}", f"--rate={rate * k:g}", f"--requests={n}"])
                    for _ in range(reps)]
            wall = statistics.median(r[0] for r in runs) / 1e6
            cpu = statistics.median(r[1] for r in runs) / 1e6
            print(f"| | {k} | {n:,} | {wall:.3f} | {cpu:.3f} | {max(r[2] for r in runs) / 1024:.0f} |", flush=True)
            n *= 10


PROG = "bench/scaling.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
