#!/usr/bin/env python3
"""Paired A/B speed of two simbatch binaries (a change against the commit before it).

Runs each workload REPS times per binary, alternating which goes first, and
prints for each binary the median CPU seconds (user + system of the child)
and wall seconds (the run's own wall_s) with the simulated requests per CPU
second, and the median of the per-pair speed-ups old/new with their range.
A ratio near 1 with a range that straddles it is "within noise" on a shared
machine; compare only runs taken together. Every pair must print the same
results (the JSON less wall_s): a speed-up that moves a number is a bug.

Usage: bench/paired.py OLD_SIMBATCH NEW_SIMBATCH REPS [WORKLOAD...]
(the names pick workloads from WORKLOADS; none: serial and lazy)"""
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

WORKLOADS = {
    # the core issue's reference: resnet50 on npu at 70% of its serial capacity (0.7 / 0.6634 ms)
    "serial": ["--policy=serial", "--model=resnet50", "--hw=npu", "--rate=1055", "--requests=5000000"],
    # a node-level policy: its event loop and the driver's per-task calls dominate
    "lazy": ["--policy=lazy", "--model=gnmt", "--rate=1000", "--requests=200000"],
    # the speed issue's table (1M requests unless noted)
    "serial10m": ["--policy=serial", "--model=resnet50", "--hw=npu", "--rate=1055", "--requests=10000000"],
    "cellular": ["--policy=cellular", "--model=lstm", "--rate=20000", "--max-batch=512", "--requests=1000000"],
    "topup": ["--policy=topup", "--model=seq2seq", "--rate=2000", "--requests=1000000"],
    "lazy-gnmt": ["--policy=lazy", "--model=gnmt", "--rate=300", "--requests=1000000"],
    "lazy-transformer": ["--policy=lazy", "--model=transformer", "--rate=300", "--requests=1000000"],
    "oracle-transformer": ["--policy=oracle", "--model=transformer", "--rate=300", "--requests=1000000"],
    "oracle-gnmt": ["--policy=oracle", "--model=gnmt", "--rate=300", "--requests=1000000"],
    # several devices at the same load per device (bench/scaling.py's lazy row): arrivals cut runs
    "lazy-gnmt-w4": ["--policy=lazy", "--model=gnmt", "--workers=4", "--rate=1200", "--requests=1000000"],
    "lazy-gnmt-w16": ["--policy=lazy", "--model=gnmt", "--workers=16", "--rate=4800", "--requests=1000000"],
    # overload, where the oracle decides at most boundaries (the figure set's costliest runs)
    "oracle-overload": ["--policy=oracle", "--model=transformer", "--rate=1500", "--requests=100000"],
    # an LLM policy on real traffic: the Azure conversation trace (2023) replayed 3x faster on the measured H100
    "continuous-azure": ["--policy=continuous", "--model=llama2-7b", "--over-context=drop", "--trace-speedup=3",
                         "--requests=19366", "--trace=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "..", "shared", "data", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv")],
    # a fleet (bench/scaling.py's row): 64 llama2-7b replicas behind least-outstanding, 4.5 req/s each, the
    # Azure conversation trace's rows drawn jointly; every request's blocks pass through its replica's prefix cache
    "fleet64": ["--model=llama2-7b", "--replicas=64", "--router=least-outstanding", "--rate=288", "--requests=200000",
                "--trace-pairs", "--over-context=drop", "--trace=" + os.path.join(os.path.dirname(os.path.abspath(
                    __file__)), "..", "..", "shared", "data", "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv")],
    # the KV cache issue's other speed case: the Mooncake conversation trace at its own timestamps, 4 replicas of
    # CodeLlama-34B at TP 4 behind prefix-affinity (routing by the prompts' hash ids), prompts shared in chunks
    "mooncake4": ["--model=codellama-34b", "--tp=4", "--replicas=4", "--router=prefix-affinity", "--over-context=drop",
                  "--trace=" + os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data",
                                            "mooncake-fast25", "conversation_trace.jsonl")],
}


def fresh_copy(binary, scratch):
    """A new copy of binary, kept until scratch is removed. On the shared VM a file's pages keep
    their place in memory, and that place moves the CPU time of every run of it: six copies of
    one binary, run in turn three times each, took 0.39-0.44 s (four of them) and 0.47-0.52 s
    (two) for a 5M serial run, each copy alike every time (no hardware counters here to say why).
    No number of runs of one copy averages that out; a copy for every run samples the
    placements, and keeping the copies keeps the next one from reusing the pages just freed."""
    fd, path = tempfile.mkstemp(dir=scratch, prefix="simbatch-")
    os.close(fd)
    shutil.copyfile(binary, path)
    os.chmod(path, 0o755)
    return path


def child_cpu_s(argv, **kwargs):
    """Runs argv (subprocess.run's kwargs, check=True): (its CPU s, user + system; the completed process)"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, check=True, **kwargs)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done


def run(binary, args, scratch):
    """(CPU s, wall s, the JSON less wall_s)"""
    exe = fresh_copy(binary, scratch)
    cpu, done = child_cpu_s([exe, *args, "--no-db", "--json"], capture_output=True, text=True)
    j = json.loads(done.stdout)
    wall = j.pop("wall_s")
    return cpu, wall, j


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["OLD_SIMBATCH", "NEW_SIMBATCH", "REPS"], rest="WORKLOAD")
    old, new, reps = a["OLD_SIMBATCH"], a["NEW_SIMBATCH"], tc.number(a["REPS"], "REPS", int, 1)
    names = a["WORKLOAD"] or ["serial", "lazy"]
    scratch = tempfile.mkdtemp(prefix="paired-")
    print("| workload | old CPU s | new CPU s | old wall s | new wall s | new M req/CPU s | "
          "speed-up old/new CPU (min-max) | wall |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in names:
        args = WORKLOADS[name]
        r = {old: [], new: []}
        for i in range(reps):
            pair = {}
            for b in ((old, new) if i % 2 == 0 else (new, old)):
                cpu, wall, j = run(b, args, scratch)
                r[b].append((cpu, wall, j["completed"]))
                pair[b] = j
            if pair[old] != pair[new]:
                diff = sorted(k for k in pair[old].keys() | pair[new].keys() if pair[old].get(k) != pair[new].get(k))
                print(f"{name}: results differ in {diff}", flush=True)
        med = {b: (statistics.median(x[0] for x in r[b]), statistics.median(x[1] for x in r[b])) for b in r}
        cpu_ratios = [o[0] / n[0] for o, n in zip(r[old], r[new])]
        wall_ratios = [o[1] / n[1] for o, n in zip(r[old], r[new])]
        print(f"| {name} | {med[old][0]:.3f} | {med[new][0]:.3f} | {med[old][1]:.3f} | {med[new][1]:.3f} | "
              f"{r[new][0][2] / med[new][0] / 1e6:.2f} | {statistics.median(cpu_ratios):.2f} "
              f"({min(cpu_ratios):.2f}-{max(cpu_ratios):.2f}) | {statistics.median(wall_ratios):.2f} |", flush=True)
    shutil.rmtree(scratch)


PROG = "bench/paired.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
