#!/usr/bin/env python3
"""The prefix cache's own cost: one simbatch binary run with --prefix-cache=on and =off in turn
(alternating which goes first), REPS pairs, CPU seconds of the child (user + system); prints the
medians and the median and range of the pairs' on/off ratios. The KV cache issue allows the cache
30% on the Azure conversation trace and on the Mooncake conversation trace at its own timestamps.

Usage: bench/prefix_cost.py SIMBATCH REPS [SIMBATCH OPTIONS...]
  e.g. bench/prefix_cost.py build/simbatch 30 --model=codellama-34b --tp=4 --replicas=4
       --router=prefix-affinity --trace=../shared/data/mooncake-fast25/conversation_trace.jsonl
       --over-context=drop"""
import os
import resource
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/prefix_cost.py"
if sys.argv[1:2] in (["-h"], ["--help"]):
    print(__doc__)
    sys.exit(0)
if len(sys.argv) < 3 or sys.argv[1].startswith("-") or sys.argv[2].startswith("-"):
    bad = next((a for a in sys.argv[1:3] if a.startswith("-")), None)
    tc.usage_error(PROG, (f"unknown option {bad}: " if bad else "") + "expected SIMBATCH REPS [SIMBATCH OPTIONS...]")
try:
    binary, reps, extra = sys.argv[1], tc.number(sys.argv[2], "REPS", int, 1), sys.argv[3:]
except tc.BadInput as e:
    tc.die(PROG, e)
cpu = {"on": [], "off": []}
for i in range(reps):
    for side in (("on", "off") if i % 2 == 0 else ("off", "on")):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([binary, *extra, "--prefix-cache=" + side, "--no-db", "--quiet"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:     # the run's own line, and its status
            print(f"{PROG}: {r.stderr.strip() or f'simbatch exited {r.returncode}'}", file=sys.stderr)
            sys.exit(2 if r.returncode == 2 else 1)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[side].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
ratios = sorted(a / b for a, b in zip(cpu["on"], cpu["off"]) if b > 0)
on, off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
print(f"on {on:.3f} s, off {off:.3f} s (medians of {reps}); on/off pairs: median {statistics.median(ratios):.2f}, "
      f"range {ratios[0]:.2f}-{ratios[-1]:.2f}")
