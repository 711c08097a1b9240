#!/usr/bin/env python3
"""The prefix cache's own cost: one simbatch binary run with --prefix-cache=on and =off in turn
(alternating which goes first), REPS pairs, CPU seconds of the child (user + system); prints the
medians and the median and range of the pairs' on/off ratios. The KV cache issue allows the cache
30% on the Azure conversation trace and on the Mooncake conversation trace at its own timestamps.

Usage: bench/prefix_cost.py SIMBATCH REPS [SIMBATCH OPTIONS...]
  e.g. bench/prefix_cost.py build/simbatch 30 --model=codellama-34b --tp=4 --replicas=4
       --router=prefix-affinity --trace=../shared/data/mooncake-fast25/conversation_trace.jsonl
       --over-context=drop"""
import resource
import statistics
import subprocess
import sys

if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
    print(__doc__)
    sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
binary, reps, extra = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
cpu = {"on": [], "off": []}
for i in range(reps):
    for side in (("on", "off") if i % 2 == 0 else ("off", "on")):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([binary, *extra, "--prefix-cache=" + side, "--no-db", "--quiet"], check=True,
                       stdout=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu[side].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
ratios = sorted(a / b for a, b in zip(cpu["on"], cpu["off"]) if b > 0)
on, off = statistics.median(cpu["on"]), statistics.median(cpu["off"])
print(f"on {on:.3f} s, off {off:.3f} s (medians of {reps}); on/off pairs: median {statistics.median(ratios):.2f}, "
      f"range {ratios[0]:.2f}-{ratios[-1]:.2f}")
