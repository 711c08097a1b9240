#!/usr/bin/env python3
"""Paired A/B speed of two simbatch binaries (a change against the commit before it).

Runs each workload REPS times per binary, alternating which goes first, and
prints the median simulated requests per wall second of each and the median
of the per-pair ratios new/old with their range. A ratio near 1 with a range
that straddles it is "within noise" on a shared machine; compare only runs
taken together.

Usage: bench/paired.py OLD_SIMBATCH NEW_SIMBATCH REPS [serial] [lazy]
(the names pick workloads; none: both)"""
import json
import statistics
import subprocess
import sys

WORKLOADS = {
    # the core issue's reference: resnet50 on npu at 70% of its serial capacity (0.7 / 0.6634 ms)
    "serial": ["--policy=serial", "--model=resnet50", "--hw=npu", "--rate=1055", "--requests=5000000"],
    # a node-level policy: its event loop and the driver's per-task calls dominate
    "lazy": ["--policy=lazy", "--model=gnmt", "--rate=1000", "--requests=200000"],
}


def speed(binary, args):
    out = subprocess.run([binary, *args, "--no-db", "--json"], capture_output=True, text=True, check=True).stdout
    j = json.loads(out)
    return j["completed"] / j["wall_s"]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    old, new, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    names = sys.argv[4:] or list(WORKLOADS)
    for name in names:
        args = WORKLOADS[name]
        r = {old: [], new: []}
        for i in range(reps):
            for b in ((old, new) if i % 2 == 0 else (new, old)):
                r[b].append(speed(b, args))
        ratios = [n / o for n, o in zip(r[new], r[old])]
        print(f"{name} ({' '.join(args)}): median old {statistics.median(r[old]) / 1e6:.3f} M req/s, "
              f"new {statistics.median(r[new]) / 1e6:.3f}; paired ratio new/old median {statistics.median(ratios):.3f} "
              f"(min {min(ratios):.3f}, max {max(ratios):.3f})", flush=True)


if __name__ == "__main__":
    main()
