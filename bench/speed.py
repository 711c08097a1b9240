#!/usr/bin/env python3
"""Simulator speed and memory on the reference workload of the core issue:
resnet50 on npu, Poisson at 70% of the serial capacity, every latency kept.
Runs each configuration REPS times and reports the median simulated requests
per wall second (completed / the run's own wall_s, the simulation proper),
per CPU-second of the whole process (user + system time from wait4: start-up,
simulation, sorting, output; steadier than wall time on a shared machine) and
the peak resident memory of the process (ru_maxrss from wait4).
Usage: bench/speed.py [BUILD_DIR] [REQUESTS] [REPS]"""
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/speed.py"
args = tc.hand_args(PROG, __doc__, sys.argv[1:], [], ["BUILD_DIR", "REQUESTS", "REPS"])
try:
    build = args.get("BUILD_DIR", "build")
    n = tc.number(args.get("REQUESTS", "10000000"), "REQUESTS", int, 1)
    reps = tc.number(args.get("REPS", "5"), "REPS", int, 1)
    if not os.access(f"{build}/simbatch", os.X_OK):
        raise tc.BadInput(f"{build}/simbatch: no such program (give the build directory)")
except tc.BadInput as e:
    tc.die(PROG, e)
sb = f"{build}/simbatch"

info = json.loads(subprocess.run([sb, "model-info", "--model=resnet50", "--hw=npu", "--batch=1", "--json"],
                                 check=True, capture_output=True, text=True).stdout)
rate = 0.7 / (info["total_ms"] / 1e3)
print(f"resnet50 on npu: single-batch {info['total_ms']:.4f} ms -> 70% load = {rate:.1f} req/s, {n} requests")


def one(args):
    """One run: (requests per wall second, the child's own peak RSS in KiB, its JSON)."""
    p = subprocess.Popen([sb, *args], stdout=subprocess.PIPE, text=True)
    out = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)
    if status != 0:
        sys.exit(f"{sb} {' '.join(args)} failed with status {status}")
    j = json.loads(out)
    cpu_s = ru.ru_utime + ru.ru_stime
    return j["completed"] / j["wall_s"], ru.ru_maxrss, j, j["completed"] / cpu_s


for label, extra in (("serial", ["--policy=serial"]), ("graph", ["--policy=graph", "--max-batch=64"]),
                     ("graph window 5 ms", ["--policy=graph", "--max-batch=64", "--window=5"])):
    args = [*extra, "--model=resnet50", "--hw=npu", f"--rate={rate}", f"--requests={n}", "--no-db", "--json"]
    speeds, rss, cpu_speeds, last = [], [], [], None
    for _ in range(reps):
        s, r, last, c = one(args)
        speeds.append(s)
        cpu_speeds.append(c)
        rss.append(r)
    peak = max(rss) / 1024
    print(f"{label:18s} median {statistics.median(speeds) / 1e6:6.2f} M req/s (min {min(speeds) / 1e6:.2f}, "
          f"max {max(speeds) / 1e6:.2f}); per CPU-second (whole process) median "
          f"{statistics.median(cpu_speeds) / 1e6:.2f} M; peak RSS {peak:.0f} MiB = {peak * 1048576 / n:.1f} B/request, "
          f"mean latency {last['latency_ms']['mean']:.3f} ms, mean batch {last['mean_batch']:.2f}")
