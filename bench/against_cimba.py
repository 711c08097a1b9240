#!/usr/bin/env python3
"""The serial engine against Cimba on M/D/1 at 70% load, 10M customers (the speed issue's
comparison; bench/README.md "The serial engine against Cimba" says how Cimba is built).

Runs each program PAIRS times, alternating which goes first, each run from a fresh copy of
its binary (bench/paired.py fresh_copy: where a binary's pages lie moves every run of it by up
to a quarter on the shared VM), and prints the median CPU time (user + system) of each and
the median of the per-pair ratios Cimba / simbatch with their range.

Usage: bench/against_cimba.py SIMBATCH CIMBA_MD1_SINGLE CIMBA_LIB [PAIRS]
(CIMBA_LIB: the libcimba.so.1 it loads, from Cimba's build/src)"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

from paired import child_cpu_s, fresh_copy

# 70% of the NPU's ResNet-50 serial capacity (0.7 / 0.6634 ms); Cimba's MD1_single is set to
# ARRIVAL_RATE 0.7 with a constant unit service time and 10M customers
SIMBATCH_ARGS = ["--policy=serial", "--model=resnet50", "--hw=npu", "--rate=1055", "--requests=10000000",
                 "--no-db", "--quiet"]


def cpu_s(binary, args, scratch, lib=None):
    """lib: a shared library the binary loads, copied fresh beside it too (Cimba's libcimba)"""
    exe = fresh_copy(binary, scratch)
    env = dict(os.environ)
    if lib:
        libdir = tempfile.mkdtemp(dir=scratch, prefix="lib-")
        shutil.copyfile(lib, os.path.join(libdir, os.path.basename(lib)))
        env["LD_LIBRARY_PATH"] = libdir
    return child_cpu_s([exe, *args], stdout=subprocess.DEVNULL, env=env)[0]


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH", "CIMBA_MD1_SINGLE", "CIMBA_LIB"], ["PAIRS"])
    simbatch, cimba, cimba_lib = a["SIMBATCH"], a["CIMBA_MD1_SINGLE"], a["CIMBA_LIB"]
    pairs = tc.number(a.get("PAIRS", "11"), "PAIRS", int, 1)
    scratch = tempfile.mkdtemp(prefix="cimba-")
    sb, cb = [], []
    for i in range(pairs):
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            if which == 0:
                sb.append(cpu_s(simbatch, SIMBATCH_ARGS, scratch))
            else:
                cb.append(cpu_s(cimba, [], scratch, cimba_lib))
    shutil.rmtree(scratch)
    ratios = [c / s for s, c in zip(sb, cb)]
    print(f"simbatch {statistics.median(sb):.3f} CPU s, Cimba {statistics.median(cb):.3f} CPU s, "
          f"Cimba / simbatch {statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}), {pairs} pairs")


PROG = "bench/against_cimba.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
