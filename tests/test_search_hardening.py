#!/usr/bin/env python3
"""Issue 47's rules for configuration search, the results database and capacity, end to end: the search's
results files read with bounds and every number checked (items 3, 4), the database opened before anything
runs (item 6), a search file's deployment values checked at load (item 7), one rule for an empty database in
run, sweep and search (item 8), an LLM capacity too short to judge refused and "no rate meets" an answer
(item 9), and the prefix cache's memory following what is cached (item 5).
Usage: test_search_hardening.py PATH/TO/simbatch"""
import hashlib
import math
import os
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile

SB = os.path.abspath(sys.argv[1])
failures = []
td = tempfile.mkdtemp(prefix="simbatch-search-hard-")
ASAN = bool(os.environ.get("ASAN_OPTIONS"))     # how the suite knows it runs under AddressSanitizer (meson.build)


def sb(*args, timeout=300, preexec=None):
    try:
        return subprocess.run([SB, *args], capture_output=True, text=True, errors="replace", timeout=timeout,
                              preexec_fn=preexec, cwd=td)
    except subprocess.TimeoutExpired as e:     # a hang is a failure of the case, not of the suite
        return subprocess.CompletedProcess(e.cmd, None, "", f"timed out after {timeout} s")


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:600]))
    if not cond:
        failures.append(name)


def write(name, data):
    path = os.path.join(td, name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


def refused(name, r, *wants):
    """exit 2, one line on stderr holding every want, nothing on stdout"""
    lines = r.stderr.strip().split("\n")
    check(name, r.returncode == 2 and len(lines) == 1 and all(w in r.stderr for w in wants) and r.stdout == "",
          f"rc {r.returncode}, stderr {r.stderr.strip()[:400]!r}")


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def full_disk(limit):
    """RLIMIT_FSIZE: a write past `limit` bytes of a file fails (EFBIG) as on a full disk, SIGXFSZ ignored"""
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def searches(db):
    if not os.path.exists(db) or os.path.getsize(db) == 0:
        return None
    con = sqlite3.connect(db)
    try:
        return con.execute("select count(*) from searches").fetchone()[0]
    except sqlite3.Error:
        return None
    finally:
        con.close()


HEADER = "key,gpus,cost_per_hour,status,capacity_rps,bracket_lo_rps,bracket_hi_rps,band_lo_rps,band_hi_rps,reason"
# a node-level search small enough to run in seconds: the transformer on the NPU, one to three workers
spec = write("small.search", "fixed  --policy=serial --model=transformer --sla=10\naxis   hw = npu\n"
             "axis   workers = 1 2 3\ncost   npu = 1.5\nbudget 4\n")
good_out = os.path.join(td, "good.csv")
r = sb("search", spec, "--no-db", f"--out={good_out}", "--quiet", "--jobs=2")
check("the small search runs (the file the cases below change)", r.returncode == 0 and os.path.exists(good_out),
      r.stderr)
good_lines = open(good_out).read().splitlines() if os.path.exists(good_out) else [HEADER, ""]
first_key = good_lines[1].split('",')[0] + '"' if len(good_lines) > 1 else '"x"'

# ---- item 3: every results file read with a bound; --out a regular file or nothing yet ----
never = os.path.join(td, "never.db")
fifo = os.path.join(td, "out.fifo")
os.mkfifo(fifo)
os.mkdir(os.path.join(td, "outdir"))
r = sb("search", spec, f"--db={never}", f"--out={fifo}", timeout=60)
refused("search --out naming a FIFO: refused at once, nothing stored", r, "out.fifo", "not a regular file")
check("... the FIFO stays a FIFO and no database is left", stat.S_ISFIFO(os.stat(fifo).st_mode) and
      not os.path.exists(never))
r = sb("search", spec, f"--db={never}", f"--out={os.path.join(td, 'outdir')}")
refused("search --out naming a directory: refused", r, "outdir", "not a regular file")
try:
    os.mknod(os.path.join(td, "node-zero"), 0o666 | stat.S_IFCHR, os.makedev(1, 5))
    nodes = True
except OSError as e:       # no CAP_MKNOD: the FIFO above covers a non-regular --out
    print(f"skip private device nodes (counted as 2 cases): {e}")
    nodes = False
if nodes:
    zero = os.path.join(td, "node-zero")
    r = sb("search", spec, f"--db={never}", f"--out={zero}", timeout=60)
    refused("search --out naming a private zero device: refused before a byte is read", r, "node-zero",
            "not a regular file")
    r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 'z.csv')}", zero, timeout=60)
    refused("a results file that is a private zero device: the bounded reader stops at its first NUL", r,
            "node-zero:1")
garbage = {
    "binary, no newline": b"\x7fELF\x02\x01\x01" + bytes(range(1, 200)),
    "text with no header": b"hello,world\n1,2,3\n",
    "a header cut short": HEADER[:30].encode(),
    "a line of 2 MiB": (HEADER + "\n").encode() + b"x" * (2 << 20) + b"\n",
    "a NUL byte": (HEADER + "\n" + first_key + ",1,1.5,ok,60\x00,60,61,nan,nan,\"\"\n").encode(),
}
for name, data in garbage.items():
    path = write("garbage.csv", data)
    r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 'g.csv')}", path)
    refused(f"a results file of garbage ({name}): FILE:LINE, exit 2", r, "garbage.csv:")
    own = write("own.csv", data)
    before = digest(own)
    r = sb("search", spec, f"--db={never}", f"--out={own}")
    refused(f"--out holding garbage ({name}): refused, the file untouched", r, "own.csv:")
    check(f"... ({name}) --out byte for byte as it was, nothing stored", digest(own) == before and
          not os.path.exists(never))

# ---- item 4: a number no search writes is refused, never an answer ----
fields = good_lines[1] if len(good_lines) > 1 else ""
key, rest = fields.split('",', 1) if '",' in fields else ('"', ",,,,,,,,,")
cols = rest.split(",")
bad_numbers = {
    "a nan capacity": (4 - 1, "nan"),
    "a negative capacity": (4 - 1, "-5"),
    "an infinite capacity": (4 - 1, "inf"),
    "a zero capacity marked ok": (4 - 1, "0"),
    "a negative cost": (2 - 1, "-1"),
    "a nan bracket": (5 - 1, "nan"),
    "no GPUs": (1 - 1, "0"),
}
for name, (at, value) in bad_numbers.items():
    c = list(cols)
    c[at] = value
    path = write("bad-number.csv", HEADER + "\n" + key + '",' + ",".join(c) + "\n")
    db = os.path.join(td, "bad-number.db")
    r = sb("search", spec, f"--db={db}", f"--out={os.path.join(td, 'bn.csv')}", path)
    refused(f"a results line with {name}: bad-number.csv:2, exit 2", r, "bad-number.csv:2")
    check(f"... ({name}) nothing stored, no results file made", searches(db) is None and
          not os.path.exists(os.path.join(td, "bn.csv")))
c = list(cols)
c[4 - 1], c[5 - 1] = "60", "70"        # a bracket upside down: low 70 above high c[6 - 1]
c[6 - 1] = "65"
path = write("bad-number.csv", HEADER + "\n" + key + '",' + ",".join(c) + "\n")
r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 'bn.csv')}", path)
refused("a results line whose bracket is upside down: refused", r, "bad-number.csv:2", "bracket")

# ---- item 6: the database opened before anything runs; a full disk is the machine's (exit 1) ----
new_db, out = os.path.join(td, "full-new.db"), os.path.join(td, "full.csv")
r = sb("search", spec, f"--db={new_db}", f"--out={out}", "--quiet", preexec=full_disk(0))
check("search on a full disk, new database: exit 1 with one line before any configuration runs, nothing left",
      r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "full-new.db" in r.stderr and
      not os.path.exists(new_db) and not os.path.exists(out), (r.returncode, r.stderr, os.listdir(td)))
old_db = os.path.join(td, "full-old.db")
r = sb("--model=resnet50", "--requests=50", f"--db={old_db}", "--quiet")
before = digest(old_db)
r = sb("search", spec, f"--db={old_db}", f"--out={out}", "--quiet", preexec=full_disk(1000))
check("search on a full disk, existing database: exit 1 (the machine's), the database as it was, no results file",
      r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and digest(old_db) == before and
      not os.path.exists(out), (r.returncode, r.stderr))
stopped_db = os.path.join(td, "stopped.db")
r = sb("search", spec, f"--db={stopped_db}", f"--out={os.path.join(td, 'gone', 'x.csv')}", "--quiet")
check("a search that fails after opening its new database (its --out's directory missing): exit 2, the "
      "database it created removed", r.returncode == 2 and not os.path.exists(stopped_db), (r.returncode, r.stderr))

# ---- item 7: the deployment's values checked when the file is read, at their line ----
bad_values = [
    ("replicas=0", "axis replicas = 1 0\n", "v.search:2: --replicas=0"),
    ("tp=3", "axis tp = 1 3\n", "v.search:2: --tp=3"),
    ("fixed --tp=3", "fixed --tp=3\n", "v.search:2: --tp=3"),
    ("an unknown GPU", "axis hw = gpu-h100 gpu-h999\n", "v.search:2: no measured table for gpu-h999"),
    ("unknown hardware", "fixed --hw=nope\n", "v.search:2: unknown hardware 'nope'"),
    ("a pool on an unknown GPU", "axis replicas = 1 1+1:gpu-zz\n", "v.search:2: no measured table for gpu-zz"),
    ("a pool of 0", "fixed --prefill-replicas=0 --decode-replicas=1\n", "v.search:2: --prefill-replicas=0"),
    ("a fleet of groups (no one price)", "axis replicas = 2:gpu-h100,1:gpu-a100\n", "v.search:2: --replicas=2:"),
    ("a trailing comma", "axis replicas = 2,\n", "v.search:2: --replicas=2,"),
]
for name, line, needle in bad_values:
    path = write("v.search", "fixed --model=llama2-7b --ttft-slo=1000 --tpot-slo=100\n" + line +
                 "cost gpu-h100 = 4\ncost gpu-a100 = 2\ntarget 5\n")
    out = os.path.join(td, "v.csv")
    r = sb("search", path, f"--db={never}", f"--out={out}")
    refused(f"search file with {name}: FILE:LINE at load, exit 2, nothing run or stored", r, needle)
    check(f"... ({name}) no results file, no database", not os.path.exists(out) and not os.path.exists(never))

# an axis value longer than a fixed buffer is kept whole: a configuration cut short was another (and the
# search read past an array looking its model up: the fuzz target's first find)
path = write("long.search", "fixed --hw=gpu-h100 --ttft-slo=1000\naxis model = llama2-7b " + "m" * 300 +
             "\ncost gpu-h100 = 4\ntarget 5\n")
r = sb("search", path, f"--db={never}", "--list")
refused("a 300-character axis value: refused by name, whole (not cut to a buffer)", r, "m" * 300 + "'")

# ---- item 8: an empty database (0 bytes: touch, or a creator that crashed) is where run, sweep and search
# create the schema; a reader (compare) refuses it ----
sweep = write("e.sweep", "fixed --model=resnet50 --requests=100\naxis rate = 100 200\n")
for cmd, args in (("run", ["--model=resnet50", "--requests=50", "--quiet"]),
                  ("sweep", ["sweep", sweep, "--quiet", "--jobs=1"]),
                  ("search", ["search", spec, f"--out={os.path.join(td, 'e.csv')}", "--quiet", "--jobs=2"])):
    db = write(f"empty-{cmd}.db", b"")
    r = sb(*args, f"--db={db}")
    con = sqlite3.connect(db)
    app = con.execute("select value from simbatch_meta where key='application'").fetchone() \
        if r.returncode == 0 else None
    stored = con.execute("select count(*) from runs").fetchone()[0] if r.returncode == 0 else 0
    con.close()
    check(f"{cmd} takes a 0-byte database and creates its schema there", r.returncode == 0 and
          app == ("simbatch",) and (stored > 0 or cmd == "search") and
          (cmd != "search" or searches(db) == 1), (r.returncode, r.stderr))
db = write("empty-read.db", b"")
r = sb("compare", f"--db={db}", "1", "2")
check("a reader (compare) refuses a 0-byte database as none of ours, exit 2", r.returncode == 2 and
      "not a simbatch results database" in r.stderr and os.path.getsize(db) == 0, (r.returncode, r.stderr))

# ---- item 9: an LLM capacity too short to judge; no rate meeting the targets is an answer (exit 1) ----
# With m measured requests and none missing, the 95% Clopper-Pearson bound on the miss fraction is
# 1 - 0.05^(1/m): within 1% from m = ceil(ln 0.05 / ln 0.99) = 299. The warm-up is 10% (floored), so
# --requests=332 measures 299 and --requests=331 measures 298.
least = math.ceil(math.log(0.05) / math.log(0.99))
need = next(n for n in range(1, 1000) if n - n // 10 >= least)
llm = ["capacity", "--no-db", "--model=llama2-7b", "--ttft-slo=1000", "--tpot-slo=100", "--quiet"]
r = sb(*llm, "--requests=50")
refused("LLM capacity with 45 measured requests: too short to judge 1%, the requests it needs named", r,
        "too short to judge", f"needs {least}", f"--requests={need}")
r = sb(*llm, f"--requests={need - 1}")
refused(f"... with {need - 1} requests ({need - 1 - (need - 1) // 10} measured): still refused", r,
        "too short to judge")
r = sb(*llm, f"--requests={need}", "--json")
check(f"... with {need} requests ({least} measured): judged (an answer)", r.returncode == 0 and
      '"capacity_rps"' in r.stdout, r.stderr)
r = sb(*llm, "--requests=100", "--seeds=3")
refused("... 90 measured requests on 3 seeds (270): refused, naming --requests=111", r, "--requests=111")
r = sb(*llm, "--requests=111", "--seeds=3", "--json")
check("... 100 measured on 3 seeds (300): judged", r.returncode == 0, r.stderr)
r = sb("capacity", "--no-db", "--model=llama2-7b", "--ttft-slo=1", "--quiet", "--requests=400")
check("LLM capacity, no rate meets the targets: exit 1 with one line (an answer, not bad input)",
      r.returncode == 1 and "no rate meets the targets" in r.stderr and len(r.stderr.strip().splitlines()) == 1,
      (r.returncode, r.stderr))
slow = write("slow.csv", "node,batch,latency_s\n*,1,0.05\n")
r = sb("capacity", "--no-db", "--policy=serial", "--model=resnet50", f"--hw={slow}", "--sla=1", "--quiet")
check("node-level capacity, no rate meets the SLA: exit 1 alike", r.returncode == 1 and
      "no rate meets the SLA" in r.stderr, (r.returncode, r.stderr))
path = write("short.search", "fixed --model=llama2-7b --ttft-slo=1000 --tpot-slo=100 --requests=50\n"
             "cost gpu-h100 = 4\ntarget 5\n")
r = sb("search", path, f"--db={never}", f"--out={os.path.join(td, 's.csv')}")
refused("a search file whose capacity runs are too short to judge: refused at load", r, "short.search",
        "too short to judge")

# ---- item 5: the prefix cache's memory follows the blocks cached, not the cache's size ----
# 100 million KV blocks a device: reserving a node (40 bytes) twice and a holders' record (132 bytes) for
# each at the start is 21 GB of address space; the run caches a few thousand blocks.
if ASAN:
    print("skip the prefix cache under RLIMIT_AS (counted as 2 cases): AddressSanitizer's shadow memory needs "
          "terabytes of address space")
else:
    def address_space(limit):
        def apply():
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        return apply
    r = sb("--model=llama2-7b", "--prefix-cache=on", "--kv-blocks=100000000", "--requests=2000", "--no-db",
           "--quiet", preexec=address_space(4 << 30))
    check("a prefix-cache run with 100M KV blocks under a 4 GB address-space limit: exit 0", r.returncode == 0,
          (r.returncode, r.stderr))
    mooncake = os.path.join(os.path.dirname(SB), "..", "..", "shared", "data", "mooncake-fast25",
                            "conversation_trace.jsonl")
    if os.path.exists(mooncake):
        args = ["--model=codellama-34b", "--tp=4", "--replicas=4", "--router=prefix-affinity",
                f"--trace={mooncake}", "--over-context=drop", "--no-db", "--quiet"]
    else:       # without ../shared: a pool of 3,000 prompts, each 3,000 shared tokens, so the cache's keyed
        # blocks, not the requests, are what the run holds most of (unkeyed prompts are one node a request)
        pool = os.path.join(td, "pool.csv")
        subprocess.run([os.path.join(os.path.dirname(SB), "make-trace"), "--rate=50", "--requests=6000", "--seed=1",
                        "--prompt-pool=3000:1:3000", "--input-len=1000", "--output-len=8", "-o", pool], check=True)
        args = ["--model=llama2-7b", "--prefix-cache=on", f"--trace={pool}", "--kv-blocks=2000000", "--no-db",
                "--quiet"]
    # every limit from 8 to 39 MiB: somewhere the cache's own failure path is met, and it fails the run
    # cleanly (exit 1, one line). A run that got through its simulation can still die by SIGSEGV just above
    # the limit where the cache fails: the end-of-run latency sort (util/metrics.c flag_sort_u64) needs
    # about 200 KB more stack, and under RLIMIT_AS the stack cannot grow; that is noted, not this case's
    outcomes = {}
    for mib in range(8, 40):
        r = sb(*args, preexec=address_space(mib << 20))
        if r.returncode == 127 and "error while loading shared libraries" in r.stderr:
            continue               # the dynamic loader's, before simbatch runs
        outcomes[mib] = (r.returncode, r.stderr.strip())
    cache_failed = [m for m, (rc, e) in outcomes.items() if rc == 1 and e == "simbatch: out of memory for the "
                    "policy's state"]
    signals = [m for m, (rc, _) in outcomes.items() if rc < 0]
    if signals:
        print(f"note: killed by a signal under {signals} MiB (the latency sort's stack, util/metrics.c)")
    check("a prefix-cache run under tight address-space limits: where the cache cannot have a node the run fails "
          "with exit 1 and one line, never a crash in the cache", cache_failed and
          all(rc in (0, 1) for m, (rc, _) in outcomes.items() if m < min(cache_failed)), outcomes)

# ---- a router that reads no replica state takes no --router-refresh: a search's fixed refresh is left out of
# its round-robin configurations (a run refuses it), kept for least-outstanding ----
rr_spec = write("rr.search", "fixed  --model=llama2-7b --requests=400 --router-refresh=20 --ttft-slo=2000 "
                "--tpot-slo=200\naxis   replicas = 2\naxis   router = round-robin least-outstanding\n"
                "cost   gpu-h100 = 4.0\ntarget 5\n")
rr_out = os.path.join(td, "rr.csv")
r = sb("search", rr_spec, "--no-db", f"--out={rr_out}", "--quiet", "--jobs=2", "--exhaustive")
rows = open(rr_out).read().splitlines()[1:] if os.path.exists(rr_out) else []
keys = {row.split('",')[0].strip('"'): row for row in rows}
check("search: round-robin's configuration runs without --router-refresh, least-outstanding's keeps it",
      r.returncode == 0 and any("router=round-robin" in k and "router-refresh" not in k for k in keys) and
      any("router=least-outstanding" in k and "router-refresh=20" in k for k in keys) and
      all(",ok," in row for row in rows), f"rc {r.returncode} {r.stderr[-300:]} {rows}")

shutil.rmtree(td, ignore_errors=True)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
