#!/usr/bin/env python3
"""How a run's cost grows: simulated requests per wall second and per CPU
second against the number of requests (1e4 .. 1e7) and of workers (1, 4,
16), for one workload at a fixed load per worker. The speed issue's
"how cost grows" figure; a flat row means cost linear in the requests.

Usage: bench/scaling.py SIMBATCH REPS WORKLOAD [MAX_REQUESTS]
  WORKLOAD: serial (resnet50 on npu, 70% of one device's capacity per worker)
            lazy   (gnmt on npu, 300 req/s per worker)
Prints a markdown table of medians over REPS runs (user+system CPU of the
child, and wall time as the run reports it)."""
import json
import os
import resource
import statistics
import subprocess
import sys

WORKLOADS = {
    "serial": (["--policy=serial", "--model=resnet50", "--hw=npu"], 1055.0),
    "lazy": (["--policy=lazy", "--model=gnmt", "--hw=npu"], 300.0),
}


def one(binary, args):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([binary, *args, "--no-db", "--json"], capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    j = json.loads(out)
    return j["completed"] / j["wall_s"], j["completed"] / cpu


def main():
    binary, reps, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    top = int(float(sys.argv[4])) if len(sys.argv) > 4 else 10_000_000
    base, rate = WORKLOADS[name]
    print(f"| {name} | workers | requests | M req/s (wall) | M req/s (CPU) |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for workers in (1, 4, 16):
        n = 10_000
        while n <= top:
            runs = [one(binary, base + [f"--workers={workers}", f"--rate={rate * workers:g}", f"--requests={n}"])
                    for _ in range(reps)]
            wall = statistics.median(r[0] for r in runs) / 1e6
            cpu = statistics.median(r[1] for r in runs) / 1e6
            print(f"| | {workers} | {n:,} | {wall:.3f} | {cpu:.3f} |", flush=True)
            n *= 10


if __name__ == "__main__":
    main()
