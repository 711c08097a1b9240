#!/usr/bin/env python3
"""Issue-12 classes of defect, end to end: every text reader bounded (a file
with no newline, a 100 MB line and NUL bytes are refused with one line and
exit 2 under a memory limit), simulated time that cannot overflow, and output
files left whole by a refused or killed run.
Usage: test_hardening.py PATH/TO/simbatch"""
import json
import math
import os
import resource
import shutil
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
    "engine profile": (b"# simbatch engine profile\n", lambda p: ["--engine=" + p, "--model=llama2-7b",
                                                                   "--requests=10"]),
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
    cases["/dev/zero"] = ("/dev/zero", "/dev/zero")
    for case, (path, want) in cases.items():
        extra = [] if argv(path)[0] in ("sweep", "compare") else ["--no-db"]
        refused(f"{what}: {case} is refused", sb(*argv(path), *extra), want)
# a file larger than its kind may be (sparse, so the test writes nothing)
big = os.path.join(td, "big-model")
with open(big, "wb") as f:
    f.truncate(65 << 20)
refused("model: a 65 MiB file is refused by its size", sb("--model=" + big, "--no-db"), "more than the 64 MiB")

# ---- simulated time: refused up front at the bound, checked beyond it ----
def node_table(name, latency_s):
    return write(name, f"node,batch,latency_s\n*,1,{latency_s}\n".encode())


ONE = ["--model=lstm", "--policy=serial", "--input-len=fixed:1", "--rate=10"]
odb = os.path.join(td, "overflow.db")
r = sb("--hw=" + node_table("t1e9.csv", "1e9"), *ONE, "--requests=20", "--json", "--db=" + odb)
refused("a node of 1e9 s is refused (the issue's example)", r, "more than the 1e+06 s a node may take")
check("... and nothing is stored", not os.path.exists(odb), "the database was created")
refused("a node of 1e300 s is refused", sb("--hw=" + node_table("t1e300.csv", "1e300"), *ONE, "--no-db"),
        "more than the 1e+06 s")
refused("a node just over 1e6 s is refused", sb("--hw=" + node_table("tover.csv", "1000000.001"), *ONE, "--no-db"),
        "more than the 1e+06 s")
r = sb("--hw=" + node_table("tedge.csv", "1e6"), *ONE, "--requests=20", "--no-db", "--json")
check("a node of exactly 1e6 s runs", r.returncode == 0 and '"completed":20' in r.stdout.replace(" ", ""),
      r.stderr)
# 10,000 requests of 1e6 s back to back need 1e10 s; the clock holds 9.22e9
r = sb("--hw=" + node_table("tedge2.csv", "1e6"), *ONE, "--requests=10000", "--db=" + odb)
refused("a run whose clock would pass 292 years is refused", r, "simulated time overflows")
check("... and nothing is stored", not os.path.exists(odb), "the database was created")
model = write("huge.model", b"model huge\nsource test: one node of 2^64-1 elementwise operations\n"
              b"node n static elementwise=18446744073709551615\n")
refused("elementwise = 2^64-1 on the NPU is refused", sb("--model=" + model, "--hw=npu", "--no-db"), "node n at batch 1")
for freq in ("0.000001", "1e-300"):
    cfg = write("slow.cfg", f"kind = npu\nfreq_mhz = {freq}\n".encode())
    refused(f"an NPU at {freq} MHz is refused by name", sb("--hw=" + cfg, "--no-db"), "key 'freq_mhz'")

# ---- output files: a refused, failed or killed run leaves them byte for byte ----
KEEP = b"keep me\n"
outs = {name: write(name, KEEP) for name in ("r.csv", "t.json", "o.txt", "i.csv")}


def outputs_unchanged(name):
    changed = [n for n, p in outs.items() if open(p, "rb").read() != KEEP]
    check(name, not changed, f"changed: {changed}")


OUT_ARGS = ["--requests-out=" + outs["r.csv"], "--timeline-out=" + outs["t.json"]]
r = sb("--model=treelstm", "--policy=graph", "--requests=10", "--no-db", *OUT_ARGS)
check("the issue's refused run exits 2", r.returncode == 2, r.stderr)
outputs_unchanged("a run refused by its policy leaves --requests-out and --timeline-out whole")
os.makedirs(os.path.join(td, "adir"), exist_ok=True)
r = sb("--requests=10", "--db=" + os.path.join(td, "adir"), *OUT_ARGS)
check("a directory as --db is refused", r.returncode == 2, r.stderr)
outputs_unchanged("a bad --db leaves the outputs whole")
r = sb("--hw=" + node_table("tedge3.csv", "1e6"), *ONE, "--requests=10000", "--no-db", *OUT_ARGS)
check("a run failing mid-way exits 2", r.returncode == 2, r.stderr)
outputs_unchanged("a run that fails mid-way leaves the outputs whole")
# killed while writing a long timeline
p = subprocess.Popen([SB, "--model=gnmt", "--policy=lazy", "--requests=2000000", "--no-db", *OUT_ARGS],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=td)
try:
    p.wait(timeout=1.0)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
check("the long run was killed, not finished", p.returncode == -9, p.returncode)
outputs_unchanged("SIGKILL during the run leaves the outputs whole")
live_outs = ["--outputs-out=" + outs["o.txt"], "--issue-out=" + outs["i.csv"]]
r = sb("live", "--model=gnmt", "--policy=graph", "--requests=10", "--no-db", "--max-batch=0", *OUT_ARGS, *live_outs)
check("a refused live run exits 2", r.returncode == 2, r.stderr)
outputs_unchanged("a refused live run leaves its four outputs whole")
leftovers = [n for n in os.listdir(td) if n.startswith(".") and n[1:].split(".")[0] in ("r", "t", "o", "i")]
check("refused runs leave no temporary files", len(leftovers) <= 2, leftovers)   # the killed run's two
r = sb("--requests=10", "--no-db", *OUT_ARGS)
check("a good run replaces the outputs", r.returncode == 0 and open(outs["r.csv"], "rb").read() != KEEP
      and open(outs["t.json"], "rb").read().startswith(b"{"), r.stderr)
check("... with the usual permissions", oct(os.stat(outs["r.csv"]).st_mode & 0o777) == oct(0o666 & ~os.umask(0o22)),
      oct(os.stat(outs["r.csv"]).st_mode))

# ---- undefined behaviour (UBSan halts the sanitizer build's run) ----
r = sb("--hw=" + write("header-only.csv", b"node,batch,latency_s\n"), "--model=lstm", "--no-db")
refused("a node table with only its header is refused (qsort of no rows)", r, "header-only.csv")

# ---- exit codes: 2 for bad input, 1 when the machine failed ----
r = sb("frobnicate")
check("an unknown subcommand: one line, exit 2", r.returncode == 2 and len(r.stderr.strip().split("\n")) == 1
      and "simbatch --help" in r.stderr, r.stderr)
for form in (["--po=serial"], ["--policy", "serial"], ["-policy=serial"]):
    refused(f"{' '.join(form)} is refused (only --key=value, whole names)", sb(*form, "--requests=5", "--no-db"),
            "--policy")
MT = os.path.join(os.path.dirname(SB), "make-trace")
r = subprocess.run([MT, "--rat=5", "--requests=2"], capture_output=True, text=True, cwd=td)
refused("make-trace refuses an abbreviated option", r, "unknown option '--rat=5'")
good = os.path.join(td, "good.db")
r = sb("--requests=20", "--db=" + good)
check("a run to damage is stored", r.returncode == 0, r.stderr)
damaged = write("damaged.db", open(good, "rb").read())
with open(damaged, "r+b") as f:
    f.seek(os.path.getsize(damaged) // 2)
    f.write(b"\xff" * 4096)
merged = os.path.join(td, "merged.db")
r = sb("merge", merged, damaged)
refused("merge of a damaged shard exits 2, as run and compare do", r, "damaged.db")
check("... and creates no output database", not os.path.exists(merged), "merged.db exists")
if not MEM_LIMIT:
    print("skip out of memory (sanitizer build)")
else:
    r = subprocess.run(["bash", "-c", f"ulimit -v 200000; exec {SB} --requests=50000000 --no-db --model=resnet50 "
                        "--policy=serial"], capture_output=True, text=True, timeout=60)
    check("out of memory exits 1 (cli.h)", r.returncode == 1 and "out of memory" in r.stderr, r.stderr)
# a full disk: a small tmpfs where the machine lets us mount one (root, outside most containers)
full = os.path.join(td, "full")
os.makedirs(full)
if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", full], capture_output=True).returncode != 0:
    print("skip full disk (cannot mount a tmpfs here)")
else:
    try:
        with open(os.path.join(full, "fill"), "wb") as f:
            f.write(b"\0" * 12288)
        r = sb("--requests=10", "--db=" + os.path.join(full, "r.db"))
        check("a full disk creating the database exits 1", r.returncode == 1, r.stderr)
        check("... and leaves no database", not os.path.exists(os.path.join(full, "r.db")), os.listdir(full))
        spec = write("tiny.sweep", b"fixed --model=lstm --requests=10\naxis policy = serial lazy\n")
        r = sb("sweep", spec, "--db=" + os.path.join(full, "s.db"), "--quiet")
        check("a full disk creating a sweep's database exits 1, leaving none", r.returncode == 1 and
              not os.path.exists(os.path.join(full, "s.db")), r.stderr + str(os.listdir(full)))
        r = sb("merge", os.path.join(full, "m.db"), good)
        check("a full disk creating a merge's database exits 1, leaving none", r.returncode == 1 and
              not os.path.exists(os.path.join(full, "m.db")), r.stderr + str(os.listdir(full)))
        r = sb("--requests=2000", "--no-db", "--timeline-out=" + os.path.join(full, "t.json"))
        check("a full disk writing the timeline exits 1", r.returncode == 1, r.stderr)
        check("... and leaves no file", os.listdir(full) == ["fill"], os.listdir(full))
    finally:
        subprocess.run(["umount", full])
r = sb("calibrate", "--device=cpu", "--out=" + td, "--no-db", timeout=10)
check("calibrate --out=DIR is refused before any benchmark", r.returncode == 2 and "directory" in r.stderr, r.stderr)

# ---- defaults that work: live on every live model with no --hw ----
for model in ("gru", "mlp", "lstm"):
    r = sb("live", "--model=" + model, "--requests=20", "--rate=50", "--no-db", "--json", timeout=300)
    check(f"live --model={model} with the default --hw runs", r.returncode == 0 and '"hw":"profile"' in
          r.stdout.replace(" ", ""), r.stderr[-300:])

# ---- every numeric run option at the edges of its bounds ----
# Each either runs, with every number in its JSON finite and every time >= 0,
# or is refused with one line (2) or fails cleanly (1): never a wrapped clock.
def json_numbers(x):
    if isinstance(x, dict):
        for v in x.values():
            yield from json_numbers(v)
    elif isinstance(x, list):
        for v in x:
            yield from json_numbers(v)
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield x


EDGES = [  # (policy, model, options): min and max of each numeric option of `run`
    ("serial", "resnet50", ["--rate=1e12"]), ("serial", "resnet50", ["--rate=1e-300"]),
    ("serial", "resnet50", ["--rate=1e-6", "--duration=1e9", "--requests=0"]),
    ("serial", "resnet50", ["--warmup=1000000000000"]), ("serial", "resnet50", ["--workers=4096"]),
    ("lazy", "gnmt", ["--sla=1e9"]), ("lazy", "gnmt", ["--sla=1e-300"]),
    ("serial", "resnet50", ["--seed=18000000000000000000"]),
    ("serial", "resnet50", ["--arrival-cv=100"]), ("serial", "resnet50", ["--arrival-cv=1e-300"]),
    ("graph", "gnmt", ["--window=1e9"]), ("graph", "gnmt", ["--bucket-width=1000000000"]),
    ("graph", "gnmt", ["--max-batch=65536"]), ("cellular", "lstm", ["--max-batch=65536", "--min-batch=65536"]),
    ("cellular", "lstm", ["--max-tasks=1000000"]), ("cellular", "seq2seq", ["--max-batch-decoder=65536"]),
    ("lazy", "gnmt", ["--coverage=1"]), ("lazy", "gnmt", ["--coverage=1e-300"]),
    ("topup", "seq2seq", ["--topup-threshold=0"]), ("topup", "seq2seq", ["--topup-threshold=1"]),
]
if MEM_LIMIT:   # a trillion requests' statistics: out of memory, which ASan reports as an error of its own
    EDGES.append(("serial", "resnet50", ["--rate=1e12", "--requests=1000000000000"]))
for policy, model, opts in EDGES:
    args = ["--policy=" + policy, "--model=" + model, "--requests=50", "--no-db", "--json", *opts]
    if "--requests=0" in opts:
        args = [a for a in args if not a.startswith("--requests")]
    r = sb(*args, timeout=300)
    name = f"{policy} {model} {' '.join(opts)}"
    if r.returncode == 0:
        j = json.loads(r.stdout)
        nums = list(json_numbers(j))
        lat = j["latency_ms"]
        check(f"{name}: runs with finite numbers and latencies >= 0",
              all(math.isfinite(v) for v in nums) and lat["min"] >= 0 and lat["max"] >= lat["min"], r.stdout[:300])
    else:
        lines = r.stderr.strip().split("\n")
        check(f"{name}: refused or failed with one line ({r.returncode})", r.returncode in (1, 2) and len(lines) == 1,
              r.stderr[-300:])

# ---- every NPU key at its bounds (hwmodels/npu_config.c), the others at Table I ----
NPU_EDGES = {"rows": (1, 65536), "cols": (1, 65536), "freq_mhz": (1, 1e6), "act_sram_kib": (1, 1 << 30),
             "weight_sram_kib": (1, 1 << 30), "mem_channels": (1, 4096), "mem_latency_cycles": (0, 10000000),
             "mem_bw_gbs": (0.001, 1e6), "elem_bytes": (1, 16), "vector_lanes": (1, 1 << 24)}
for key, edges in NPU_EDGES.items():
    for v in edges:
        cfg = write(f"edge-{key}-{v}.npu", f"kind = npu\n{key} = {v}\n".encode())
        r = sb("--hw=" + cfg, "--model=resnet50", "--policy=serial", "--requests=20", "--no-db", "--json",
               timeout=300)
        if r.returncode == 0:
            j = json.loads(r.stdout)
            check(f"NPU {key} = {v}: runs with finite numbers",
                  all(math.isfinite(x) for x in json_numbers(j)) and j["latency_ms"]["min"] >= 0, r.stdout[:200])
        else:
            check(f"NPU {key} = {v}: refused with one line", r.returncode == 2 and
                  len(r.stderr.strip().split("\n")) == 1, r.stderr[-300:])

# ---- a refused sweep creates no database, and leaves an existing one as it was (issue 37) ----
bad_sweep = write("refused.sweep", b"fixed --model=lstm --requests=10\naxis policy = serial nosuch\n")
new_db = os.path.join(td, "refused-new.db")
r = sb("sweep", bad_sweep, "--db=" + new_db, "--quiet")
check("a sweep refused by a point's check creates no database", r.returncode == 2 and not os.path.exists(new_db),
      r.stderr)
new_dirs = os.path.join(td, "refused-dirs")
r = sb("sweep", bad_sweep, "--db=" + os.path.join(new_dirs, "a", "b.db"), "--quiet")
check("... nor the directories its path names", r.returncode == 2 and not os.path.exists(new_dirs), r.stderr)
kept = os.path.join(td, "refused-kept.db")
sb("--model=lstm", "--requests=20", "--db=" + kept, "--quiet")
before = open(kept, "rb").read()
r = sb("sweep", bad_sweep, "--db=" + kept, "--quiet")
check("... and leaves an existing one byte for byte", r.returncode == 2 and open(kept, "rb").read() == before,
      r.stderr)

# ---- every script keeps the contract: bad input one line and exit 2, --help exit 0 (issue 37) ----
scripts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts")
nul_trace = write("nul-trace.csv", b"arrival_s,input_len,output_len\n0,\0,3\n")
bad_rows = write("bad-rows.csv", b"arrival_s,input_len,output_len\n0,a,3\n")
for script, args in (("fidelity", ["--bogus"]), ("fidelity", ["--capacity=half"]), ("ci-compare", ["--bogus"]),
                     ("trace-lengths", []), ("trace-lengths", [nul_trace, os.path.join(td, "tl")]),
                     ("trace-lengths", [bad_rows, os.path.join(td, "tl")]),
                     ("trace-lengths", ["--max-total=abc", bad_rows, os.path.join(td, "tl")])):
    r = subprocess.run([sys.executable, os.path.join(scripts, script), *args], capture_output=True, text=True,
                       cwd=td, timeout=60)
    check(f"scripts/{script} {' '.join(os.path.basename(a) for a in args) or '(nothing)'}: one line, exit 2",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, f"rc {r.returncode} {r.stderr[-300:]!r}")
for script in ("fidelity", "ci-compare", "trace-lengths"):
    r = subprocess.run([sys.executable, os.path.join(scripts, script), "--help"], capture_output=True, text=True,
                       cwd=td, timeout=60)
    check(f"scripts/{script} --help: exit 0", r.returncode == 0 and r.stdout, r.stderr[-300:])

# ---- a damaged database is bad input, and the failed run leaves it as it was (issue 37, class 5) ----
import sqlite3
base = os.path.join(td, "to-damage.db")
for seed in (1, 2, 3):
    sb("--model=lstm", "--requests=200", f"--seed={seed}", "--db=" + base, "--quiet")
for mode in ("wal", "delete"):
    path = os.path.join(td, f"damaged-{mode}.db")
    shutil.copy(base, path)
    con = sqlite3.connect(path)
    con.execute(f"pragma journal_mode={mode}")
    con.close()
    with open(path, "r+b") as f:       # page 4 (of 4 KiB) overwritten
        f.seek(3 * 4096)
        f.write(b"\xff" * 4096)
    before = open(path, "rb").read()
    r = sb("--model=lstm", "--requests=20", "--db=" + path)
    refused(f"a damaged database ({mode} journal): one line, exit 2", r, "malformed")
    check(f"... and the failed run leaves it byte for byte ({mode})", open(path, "rb").read() == before)
truncated = os.path.join(td, "truncated.db")
with open(truncated, "wb") as f:
    f.write(open(base, "rb").read()[:5 * 4096])
r = sb("merge", os.path.join(td, "from-truncated.db"), truncated)
refused("merging a truncated shard: one line, exit 2", r, "malformed")
SIDE_FILES = ("-wal", "-shm", "-journal")
check("... and leaves nothing beside it", not any(os.path.exists(truncated + x) for x in SIDE_FILES))
read_only = os.path.join(td, "read-only-use.db")      # a WAL database nobody has open
shutil.copy(base, read_only)
before = open(read_only, "rb").read()
sb("merge", os.path.join(td, "merged-from-read-only.db"), read_only)
sb("compare", "--db=" + read_only, "1", "1")
subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "plot"),
                "cdf", "--db=" + read_only, "--out=" + os.path.join(td, "read-only-plot")],
               capture_output=True, text=True, cwd=td)
check("merging, comparing and plotting a database leave nothing beside it and it byte for byte",
      not any(os.path.exists(read_only + x) for x in SIDE_FILES) and open(read_only, "rb").read() == before,
      str([x for x in SIDE_FILES if os.path.exists(read_only + x)]))
older_out = os.path.join(td, "older-out.db")        # an OUT of schema 2: merging into it would upgrade it
sb("--model=lstm", "--requests=20", "--db=" + older_out, "--quiet")
con = sqlite3.connect(older_out)
con.executescript("drop table run_token_cdf; alter table run_requests drop column first_token_s;"
                  "update simbatch_meta set value = '2' where key = 'schema_version';")
con.close()
before = open(older_out, "rb").read()
r = sb("merge", older_out, base, truncated)
refused("merging a truncated shard into an older database: one line, exit 2", r, "malformed")
check("... which stays byte for byte (not upgraded)", open(older_out, "rb").read() == before)
plot_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "plot")
r = subprocess.run([sys.executable, plot_py, "cdf", "--db=" + os.path.join(td, "damaged-wal.db"),
                    "--out=" + os.path.join(td, "never")], capture_output=True, text=True, cwd=td)
refused("scripts/plot on a damaged database: one line, exit 2", r, "malformed")

# ---- usage errors are one line, not the whole usage (issue 37, class 10) ----
CL = os.path.join(os.path.dirname(SB), "corpus-lengths")
MT_ = os.path.join(os.path.dirname(SB), "make-trace")
for tool, args in ((MT_, ["--bogus"]), (MT_, ["--rate"]), (MT_, []), (CL, ["--bogus"]), (CL, [])):
    r = subprocess.run([tool, *args], capture_output=True, text=True, cwd=td)
    refused(f"{os.path.basename(tool)} {' '.join(args) or '(nothing)'}: one line, exit 2", r, "--help")
    r = subprocess.run([tool, "--help"], capture_output=True, text=True, cwd=td)
    check(f"{os.path.basename(tool)} --help: the usage, exit 0", r.returncode == 0 and "usage:" in r.stdout, r.stderr)

# ---- a refused LLM run leaves an existing database byte for byte (issue 37, class 2) ----
db = os.path.join(td, "llm-refused.db")
r = sb("--model=lstm", "--requests=50", "--db=" + db, "--quiet")
if r.returncode == 0:     # a database of schema 2, as an older simbatch left it: opening upgrades it
    import sqlite3
    con = sqlite3.connect(db)
    con.executescript("drop table run_token_cdf; alter table run_requests drop column first_token_s;"
                      "update simbatch_meta set value = '2' where key = 'schema_version';")
    con.close()
before = open(db, "rb").read() if r.returncode == 0 else b""
for name, args in (("weights beyond the memory", ["--model=llama2-70b", "--hw=gpu-h100-roofline"]),
                   ("an LLM on a device with no memory", ["--model=llm-tiny", "--hw=npu"]),
                   ("a token budget below a prompt", ["--model=llama2-7b", "--policy=continuous",
                                                      "--max-batched-tokens=100", "--input-len=fixed:500"]),
                   ("weights that need more GPUs", ["--model=llama2-70b"])):
    r = sb(*args, "--requests=20", "--db=" + db)
    check(f"a refused LLM run ({name}): exit 2, the database byte for byte",
          before and r.returncode == 2 and open(db, "rb").read() == before and
          not os.path.exists(db + "-journal") and not os.path.exists(db + "-wal"), r.stderr)

# ---- outputs never replace what a path names (issue 37, class 1): in private nodes of td ----
import stat
import threading


def read_fifo(path, into):
    with open(path, "rb") as f:
        into.append(f.read())


def kind(path):
    m = os.lstat(path).st_mode
    return "link" if stat.S_ISLNK(m) else "fifo" if stat.S_ISFIFO(m) else "chr" if stat.S_ISCHR(m) else \
        "file" if stat.S_ISREG(m) else "other"


want_rows = None
for tool, args, out_opt in (
        ("run --requests-out", ["--model=lstm", "--requests=7", "--no-db", "--quiet"], "--requests-out="),
        ("run --timeline-out", ["--model=lstm", "--requests=7", "--no-db", "--quiet"], "--timeline-out=")):
    fifo = os.path.join(td, "out.fifo")
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=read_fifo, args=(fifo, got), daemon=True)
    reader.start()
    r = sb(*args, out_opt + fifo)
    reader.join(timeout=60)
    check(f"{tool} into a FIFO: its reader gets the whole output, the FIFO stays one",
          r.returncode == 0 and got and got[0].endswith(b"\n" if "requests" in out_opt else b"]}\n") and
          kind(fifo) == "fifo", f"rc {r.returncode} {r.stderr!r} {got[:1]!r} {kind(fifo)}")
    os.unlink(fifo)
real = os.path.join(td, "real.csv")
write("real.csv", b"old\n")
os.symlink("real.csv", os.path.join(td, "link.csv"))
r = sb("--model=lstm", "--requests=7", "--no-db", "--quiet", "--requests-out=link.csv")
check("an output through a symbolic link writes the file it names; the link stays a link",
      r.returncode == 0 and kind(os.path.join(td, "link.csv")) == "link" and
      open(real).read().startswith("id,arrival_s") and len(open(real).read().splitlines()) == 8, r.stderr)
os.symlink("sub-new.csv", os.path.join(td, "dangling.csv"))
r = sb("--model=lstm", "--requests=7", "--no-db", "--quiet", "--requests-out=dangling.csv")
check("an output through a dangling link creates the file it names", r.returncode == 0 and
      kind(os.path.join(td, "dangling.csv")) == "link" and os.path.isfile(os.path.join(td, "sub-new.csv")), r.stderr)
fifo = os.path.join(td, "trace.fifo")
os.mkfifo(fifo)
got = []
reader = threading.Thread(target=read_fifo, args=(fifo, got), daemon=True)
reader.start()
mt = os.path.join(os.path.dirname(SB), "make-trace")
r = subprocess.run([mt, "--rate=10", "--requests=5", "--seed=1", "-o", fifo], capture_output=True, text=True,
                   timeout=60, cwd=td)
reader.join(timeout=60)
check("make-trace -o a FIFO writes into it", r.returncode == 0 and got and got[0].count(b"\n") >= 6 and
      kind(fifo) == "fifo", r.stderr)
r = sb("--model=lstm", "--requests=5", "--db=" + fifo)
refused("--db naming a FIFO is refused", r, "not a regular file")
try:
    os.mknod(os.path.join(td, "node-null"), 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    os.mknod(os.path.join(td, "node-full"), 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    nodes = True
except OSError as e:       # no CAP_MKNOD here: the FIFO checks above cover writing in place
    print(f"skip private device nodes: {e}")
    nodes = False
if nodes:
    r = sb("--model=lstm", "--requests=7", "--no-db", "--quiet", "--requests-out=node-null")
    check("an output to a private null device: exit 0, still a device", r.returncode == 0 and
          kind(os.path.join(td, "node-null")) == "chr", r.stderr)
    r = sb("--model=lstm", "--requests=5000", "--no-db", "--quiet", "--requests-out=node-full")
    check("an output to a private full device: exit 1 with one line, still a device", r.returncode == 1 and
          len(r.stderr.strip().splitlines()) == 1 and "node-full" in r.stderr and kind(os.path.join(td, "node-full")) == "chr",
          r.stderr)
    for node in ("node-null", "node-full"):
        r = sb("--model=lstm", "--requests=5", "--db=" + node)
        refused(f"--db naming a private device ({node}) is refused, no journal beside it", r, "not a regular file")
        check(f"... {node} stays a device and has no journal", kind(os.path.join(td, node)) == "chr" and
              not os.path.exists(os.path.join(td, node + "-journal")))
    # a run that fails after simulating (its output cannot be written) leaves a schema-2 database as it was:
    # the database is opened only to store the run
    old_db = os.path.join(td, "schema2.db")
    r = sb("--model=lstm", "--requests=50", "--db=" + old_db, "--quiet")
    con = sqlite3.connect(old_db)
    con.executescript("drop table run_token_cdf; alter table run_requests drop column first_token_s;"
                      "update simbatch_meta set value = '2' where key = 'schema_version';")
    con.close()
    before = open(old_db, "rb").read()
    r = sb("--model=lstm", "--requests=5000", "--db=" + old_db, "--requests-out=node-full")
    check("a run failing on its output leaves an older database byte for byte (exit 1)", r.returncode == 1 and
          open(old_db, "rb").read() == before, r.stderr)
    os.mkdir(os.path.join(td, "out-dir"))
    r = sb("--model=lstm", "--requests=5", "--no-db", "--requests-out=out-dir")
    refused("an output that is a directory is refused", r, "directory")

shutil.rmtree(td, ignore_errors=True)     # the 100 MB files
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
