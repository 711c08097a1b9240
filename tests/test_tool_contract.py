#!/usr/bin/env python3
"""The Python (and shell) tools of scripts/ and bench/ keep simbatch's
contract (docs/CONTRACT.md; issue 47, items 1, 2 and 11):

- every tool: --help exits 0 with its usage; an unknown option is one line
  naming it and --help, exit 2, never the whole usage or a traceback; a new
  tool in either folder must be listed here to be held to it;
- bad input (junk, NUL bytes, not UTF-8, numbers that are not, an invalid
  --date, a time or TP degree simbatch would refuse): one line, exit 2;
- inputs read with a bound: a FIFO fed without end, or a sparse file past
  the limit, is refused, not read forever;
- outputs (ops-merge, vidur-import, trace-lengths, plot): written whole,
  renamed only over a regular file; a FIFO is written in place and stays
  one, a symbolic link stays a link, a directory is refused, and a full
  device (RLIMIT_FSIZE, and a private /dev/full node where mknod is allowed)
  exits 1 with one line, every target as it was and no temporary file left.
Runs only in temporary directories, on private FIFOs and device nodes.
Usage: test_tool_contract.py SIMBATCH"""
import os
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
import time

sys.dont_write_bytecode = True          # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from case_log import check, finish  # noqa: E402

SB = os.path.abspath(sys.argv[1])
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SCRIPTS, BENCH = os.path.join(ROOT, "scripts"), os.path.join(ROOT, "bench")
ENV = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")     # no __pycache__ in the source tree
td = tempfile.mkdtemp(prefix="simbatch-tools-")


def tool(path, *args, fsize=None, timeout=120, cwd=None):
    """Runs a tool of scripts/ or bench/ (python3, or bash for a shell script); fsize: RLIMIT_FSIZE."""
    first = open(path, "rb").readline()
    interp = ["bash"] if b"bash" in first else [sys.executable]

    def limit():
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    # its own session: a tool still running at the timeout is killed with everything it started
    p = subprocess.Popen([*interp, path, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         errors="replace", cwd=cwd or td, env=ENV, preexec_fn=limit, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += f"\n(still running after {timeout} s: killed)"
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def one_line(r, status):
    lines = r.stderr.strip().splitlines()
    return r.returncode == status and len(lines) == 1 and "Traceback" not in r.stderr


def refused(name, r, want=""):
    check(name, one_line(r, 2) and want in r.stderr, f"rc {r.returncode} {r.stderr.strip()[-300:]!r}")


def kind(path):
    m = os.lstat(path).st_mode
    return ("link" if stat.S_ISLNK(m) else "fifo" if stat.S_ISFIFO(m) else "chr" if stat.S_ISCHR(m)
            else "file" if stat.S_ISREG(m) else "dir" if stat.S_ISDIR(m) else "other")


def write(name, data):
    path = os.path.join(td, name)
    with open(path, "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())
    return path


def leftovers(folder, base):
    """Temporary files a writer left beside base (.BASE.XXXXXX)."""
    return [n for n in os.listdir(folder) if n.startswith("." + base + ".")]


class Fifo:
    """A private FIFO with a thread at its other end: reading all it gets, or
    writing chunk without end (until the reader closes it)."""
    def __init__(self, name, feed=None):
        self.path = os.path.join(td, name)
        os.mkfifo(self.path)
        self.got = []
        self.thread = threading.Thread(target=self._feed if feed else self._read, args=(feed,), daemon=True)
        self.thread.start()

    def _read(self, _):
        with open(self.path, "rb") as f:
            self.got.append(f.read())

    def _feed(self, chunk):
        try:
            with open(self.path, "wb") as f:
                while True:
                    f.write(chunk)
        except OSError:         # the reader closed its end: the tool refused the input
            pass

    def close(self):
        """Unblocks a thread whose tool never opened the FIFO (a reader's end
        opened until its writer is in, then closed: EPIPE), and removes it."""
        for _ in range(50):
            if not self.thread.is_alive():
                break
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            time.sleep(0.1)
            os.close(fd)
            self.thread.join(timeout=0.1)
        os.unlink(self.path)


# ---- every tool: --help exits 0, an unknown option is one line and exit 2 (item 11) ----
PY_TOOLS = ["ci-compare", "fidelity", "lazy_figures", "ops-merge", "plot", "trace-lengths", "vidur-import", "floors",
            "file-loops", "file-sizes", "code-limits", "simbatch_results.py"]
SH_TOOLS = ["figures", "test", "build", "install-deps", "fuzz"]
LIBRARIES = {"plot_runs.py", "plot_files.py", "plot_csv.py", "tool_contract.py"}        # imported by the tools, never run
DATA = {"code-limits.allow"}                             # read by a tool
BENCH_TOOLS = sorted(f for f in os.listdir(BENCH) if f.endswith(".py"))
unlisted = sorted(set(os.listdir(SCRIPTS)) - set(PY_TOOLS) - set(SH_TOOLS) - LIBRARIES - DATA - {"__pycache__"})
check("every file of scripts/ is a tool held to the contract here, or a library", not unlisted, unlisted)
every = [os.path.join(SCRIPTS, t) for t in PY_TOOLS + SH_TOOLS] + [os.path.join(BENCH, t) for t in BENCH_TOOLS]
for path in every:
    name = os.path.relpath(path, ROOT)
    r = tool(path, "--help")
    check(f"{name} --help: the usage, exit 0", r.returncode == 0 and r.stdout.strip() and "Traceback" not in r.stderr,
          f"rc {r.returncode} {r.stderr[-200:]!r}")
    r = tool(path, "--no-such-option=1")
    check(f"{name} --no-such-option=1: one line naming it and --help, exit 2",
          one_line(r, 2) and "--no-such-option" in r.stderr and "--help" in r.stderr,
          f"rc {r.returncode} {r.stderr[-300:]!r}")

# usage errors with numbers or arguments that are not: one line, exit 2, no traceback
for script, args in ((BENCH + "/paired.py", ["a", "b", "many"]), (BENCH + "/scaling.py", ["a", "x", "serial"]),
                     (BENCH + "/scaling.py", [SB, "1", "nosuch"]), (BENCH + "/router_staleness.py", [SB, "eight"]),
                     (BENCH + "/against_cimba.py", ["a", "b", "c", "0"]), (BENCH + "/speed.py", ["build", "x"]),
                     (BENCH + "/store_cost.py", [SB, "-5"]), (BENCH + "/prefix_cost.py", [SB, "x"]),
                     (BENCH + "/llm_figures.py", [SB, "7"]), (BENCH + "/same_results.py", ["/nonexistent", SB]),
                     (BENCH + "/same_results.py", [SB, SB, "--broad", "--prefix"]),
                     (SCRIPTS + "/file-sizes", ["--max=lots"]), (SCRIPTS + "/fidelity", ["--loads=half"]),
                     (SCRIPTS + "/fidelity", ["--requests=0"]), (SCRIPTS + "/lazy_figures", ["--jobs=0"]),
                     (SCRIPTS + "/ci-compare", ["--jobs=x"]), (SCRIPTS + "/ops-merge", ["only-out.csv"]),
                     (SCRIPTS + "/vidur-import", ["a", "b"]), (SCRIPTS + "/vidur-import", ["a", "h100", td]),
                     (SCRIPTS + "/plot", ["cdf", "--rate=fast"]), (SCRIPTS + "/build", ["--release"])):
    r = tool(script, *args)
    refused(f"{os.path.relpath(script, ROOT)} {' '.join(os.path.basename(a) for a in args)}: one line, exit 2", r)

# ---- bad input files: one line, exit 2, no traceback, nothing written ----
HEADER = ("profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,input_layernorm,attn_pre_proj,attn_rope,"
          "attn_post_proj,post_attention_layernorm,mlp_up_proj,mlp_act,mlp_down_proj,add")


def profile(name, rows, tp=1, ms="1", source="hand-written"):
    text = (f"# simbatch llm operator profile\n# gpu = h100\n# mem_gb = 80\n# source = {source}\n{HEADER}\n" +
            "".join(f"llama2-7b,4096,32,32,11008,32000,1,{tp},{t}," + ",".join([ms] * 10) + "\n" for t in rows))
    return write(name, text)


a, b = profile("a.csv", range(1, 40)), profile("b.csv", range(40, 80), source="second run")
merged = os.path.join(td, "merged.csv")
r = tool(SCRIPTS + "/ops-merge", merged, a, b)
check("ops-merge merges two profiles", r.returncode == 0 and os.path.isfile(merged), r.stderr)
good_merge = open(merged, "rb").read()
os.unlink(merged)
bad_inputs = {
    "a tp 3 row (simbatch runs 1, 2, 4, 8)": (profile("tp3.csv", [1, 2], tp=3), "column tp: 3 GPUs: must be 1, 2, 4"),
    "a time of 1e300 ms": (profile("e300.csv", [1, 2], ms="1e300"), "more than the 1e9 ms"),
    "a time just past 1e9 ms": (profile("e9.csv", [1, 2], ms="1000000001"), "more than the 1e9 ms"),
    "tokens that are not a number": (write("tok.csv", open(a).read().replace(",1,1,1,", ",1,1,x,", 1)), "tokens"),
    "NUL bytes": (write("nul.csv", open(a, "rb").read() + b"x\0y\n"), "NUL byte"),
    "bytes that are not UTF-8": (write("latin.csv", open(a, "rb").read() + b"\xff\xfe\n"), "not UTF-8"),
    "a directory": (td, td),
    "a missing file": (os.path.join(td, "missing.csv"), "missing.csv"),
}
for what, (path, want) in bad_inputs.items():
    r = tool(SCRIPTS + "/ops-merge", merged, a, path)
    refused(f"ops-merge on {what}: one line naming it, exit 2", r, want)
    check(f"... and writes nothing ({what})", not os.path.exists(merged) and not leftovers(td, "merged.csv"))
r = subprocess.run([SB, "model-info", "--model=llama2-7b", "--hw=" + profile("tp3-sb.csv", [1, 2], tp=3)],
                   capture_output=True, text=True)
refused("simbatch refuses the same tp 3 row (the tool and the loader agree)", r, "tp3-sb.csv:6:8 (tp)")

# vidur-import: an invalid --date, a time past the bound, NUL bytes in a profile
EXCERPT = os.path.join(ROOT, "tests", "data", "vidur-excerpt")
out_dir = os.path.join(td, "vidur-out")
os.mkdir(out_dir)
for date in ("2026-13-45", "yesterday", "2026-02-30", "2026-1-1", "2026-01-01\n# injected"):
    r = tool(SCRIPTS + "/vidur-import", EXCERPT, "h100", out_dir, "--mem-gb=80", "--date=" + date)
    refused(f"vidur-import --date={date!r}: one line, exit 2", r, "not a date YYYY-MM-DD")
check("... and the invalid dates wrote nothing", os.listdir(out_dir) == [], os.listdir(out_dir))
broken = os.path.join(td, "vidur-broken")
shutil.copytree(EXCERPT, broken)
mlp = next(os.path.join(d, f) for d, _, fs in os.walk(broken) for f in fs if f == "mlp.csv")
rows = open(mlp).read().splitlines()
head = rows[0].split(",")
cells = rows[1].split(",")
cells[head.index("time_stats.mlp_up_proj.median")] = "1e300"
open(mlp, "w").write("\n".join([rows[0], ",".join(cells)] + rows[2:]) + "\n")
r = tool(SCRIPTS + "/vidur-import", broken, "h100", out_dir, "--mem-gb=80", "--date=2000-01-01")
refused("vidur-import: a time of 1e300 ms, one line naming file, line and column", r, "mlp.csv:2:")
with open(mlp, "ab") as f:
    f.write(b"\0\0\0\n")
r = tool(SCRIPTS + "/vidur-import", broken, "h100", out_dir, "--mem-gb=80", "--date=2000-01-01")
refused("vidur-import: a profile with NUL bytes, one line, exit 2", r, "NUL byte")
check("... and writes nothing", os.listdir(out_dir) == [], os.listdir(out_dir))

# the other tools' inputs: junk and NUL bytes, one line and exit 2 (no traceback)
PANDAS = subprocess.run([sys.executable, "-c", "import pandas"], capture_output=True).returncode == 0
if not PANDAS:      # simbatch_results.py then refuses every database with the same one line
    print("skip simbatch_results.py's own messages: python3-pandas is missing (it says so, exit 2)")
    PANDAS = "pandas is missing"
else:
    PANDAS = ""
junk = write("junk.bin", b"\x00\x01junk\n" * 10)
text_junk = write("junk.txt", "this is not any file a tool reads\n" * 3)
data_dir = os.path.join(td, "data")
os.makedirs(os.path.join(data_dir, "mooncake-fast25"))
for n in ("conversation", "synthetic"):
    write(os.path.join("data", "mooncake-fast25", n + "_trace.jsonl"),
          '{"hash_ids": [1], "input_length": 5}\nnot json\n')
exp = os.path.join(td, "vllm", "exp-1-x")
os.makedirs(exp)
write(os.path.join("vllm", "exp-1-x", "exp-config.yaml"), "max_num_seqs: 4\n")
write(os.path.join("vllm", "exp-1-x", "profile.yaml"), "{not json")
for script, args, want in (
        (SCRIPTS + "/trace-lengths", [junk, os.path.join(td, "tl")], "NUL byte"),
        (SCRIPTS + "/trace-lengths", [write("latin.csv", b"arrival_s,input_len,output_len\n\xff\n"),
                                      os.path.join(td, "tl")], "not UTF-8"),
        (SCRIPTS + "/simbatch_results.py", [text_junk], PANDAS or "not a readable simbatch results database"),
        (SCRIPTS + "/plot", ["cdf", "--db=" + text_junk, "--out=" + os.path.join(td, "p")], "not a simbatch"),
        (SCRIPTS + "/plot", ["batch-timeline", "--timeline=" + text_junk, "--out=" + os.path.join(td, "p")], "JSON"),
        (SCRIPTS + "/plot", ["search-pareto", "--results=" + junk, "--out=" + os.path.join(td, "p")], "NUL"),
        (BENCH + "/same_sweep.py", [text_junk, text_junk], "junk.txt"),
        (BENCH + "/vidur_roofline.py", [SB, text_junk], "not a Vidur mlp.csv"),
        (BENCH + "/mooncake_hits.py", [os.path.dirname(SB), data_dir], "conversation_trace.jsonl:2"),
        (BENCH + "/vllm_validation.py", [SB, "--data=" + exp], "profile.yaml: not JSON")):
    r = tool(script, *args)
    refused(f"{os.path.relpath(script, ROOT)} on {os.path.basename(args[-1])}: one line, exit 2", r, want)
check("... and the refused plots wrote nothing", not [n for n in os.listdir(td) if n.startswith("p.")])

# ---- bounded reads: a FIFO that never ends, a sparse file past the limit (item 11) ----
for what, chunk, script, args, want in (
        ("zeros (a /dev/zero)", b"\0" * 65536, SCRIPTS + "/trace-lengths", ["{}", os.path.join(td, "tl")], "NUL byte"),
        ("text without end", b"a,b\n" * 16384, SCRIPTS + "/ops-merge", [merged, a, "{}"], "more than the 64 MiB"),
        ("zeros", b"\0" * 65536, SCRIPTS + "/ops-merge", [merged, a, "{}"], "NUL byte"),
        ("zeros", b"\0" * 65536, SCRIPTS + "/plot", ["batch-timeline", "--timeline={}",
                                                     "--out=" + os.path.join(td, "p")], "NUL byte"),
        ("zeros", b"\0" * 65536, SCRIPTS + "/simbatch_results.py", ["{}"], PANDAS or "not a regular file"),
        ("zeros", b"\0" * 65536, SCRIPTS + "/plot", ["cdf", "--db={}", "--out=" + os.path.join(td, "p")],
         "not a regular file"),
        ("zeros", b"\0" * 65536, BENCH + "/same_sweep.py", ["{}", "{}"], "not a regular file")):
    fifo = Fifo("endless.fifo", chunk)
    r = tool(script, *[x.format(fifo.path) for x in args], timeout=120)
    refused(f"{os.path.relpath(script, ROOT)} fed {what} through a FIFO: refused, one line, exit 2", r, want)
    fifo.close()
sparse = os.path.join(td, "sparse.csv")
with open(sparse, "wb") as f:
    f.truncate(65 << 20)
refused("ops-merge: a 65 MiB (sparse) profile is refused by its size", tool(SCRIPTS + "/ops-merge", merged, a, sparse),
        "more than the 64 MiB")
check("... and no output", not os.path.exists(merged))

# ---- outputs: what the path names decides how, and a full device leaves every target as it was (item 1) ----
trace = write("trace.csv", "arrival_s,input_len,output_len\n" + "".join(f"{i / 10},{i + 1},{2 * i + 1}\n"
                                                                          for i in range(400)))
db = os.path.join(td, "runs.db")
for rate in ("100", "200"):
    subprocess.run([SB, "--model=lstm", "--requests=300", "--rate=" + rate, "--db=" + db, "--quiet"], check=True)
r = tool(SCRIPTS + "/plot", "cdf", "--db=" + db, "--out=" + os.path.join(td, "full"), fsize=100)
check("plot: a WAL database unreadable on a full device is the machine's failure: one line, exit 1", one_line(r, 1),
      (r.returncode, r.stderr[-300:]))
for side in ("-wal", "-shm"):       # SQLite leaves them when it cannot size its shared memory; not ours to remove
    if os.path.exists(db + side):
        os.unlink(db + side)
con = sqlite3.connect(db)           # a rollback journal: reading it below makes nothing, so only outputs are limited
con.execute("pragma journal_mode = delete")
con.close()
WRITERS = {   # name: (run with its output at path, the output's name under td)
    "ops-merge": (lambda out, **k: tool(SCRIPTS + "/ops-merge", out, a, b, **k), "merged.csv"),
    "trace-lengths": (lambda out, **k: tool(SCRIPTS + "/trace-lengths", trace, out[:-len("-prompt.csv")], **k),
                      "tl-prompt.csv"),
    "vidur-import": (lambda out, **k: tool(SCRIPTS + "/vidur-import", EXCERPT, "h100", os.path.dirname(out),
                                           "--mem-gb=80", "--date=2000-01-01", "--network=h100_dgx", **k),
                     os.path.join("vidur-out", "ops-h100.csv")),
}
if shutil.which("gnuplot"):
    WRITERS["plot"] = (lambda out, **k: tool(SCRIPTS + "/plot", "cdf", "--db=" + db, "--out=" + out[:-4], **k),
                       "fig.dat")
else:
    print("skip scripts/plot's outputs: gnuplot is not installed")
KEEP = b"keep me\n"
for name, (run, rel) in WRITERS.items():
    out = os.path.join(td, rel)
    folder, base = os.path.dirname(out), os.path.basename(out)
    for f in os.listdir(folder):
        if f.startswith(base.split("-")[0].split(".")[0]) and os.path.isfile(os.path.join(folder, f)):
            os.unlink(os.path.join(folder, f))
    # a good run, then the same into an existing file: replaced whole, with the usual permissions
    r = run(out)
    want = open(out, "rb").read() if r.returncode == 0 else None
    check(f"{name}: writes its output", r.returncode == 0 and want, r.stderr[-300:])
    write(rel, KEEP)
    r = run(out)
    check(f"{name}: replaces an existing file whole, mode 0666 less the umask",
          r.returncode == 0 and open(out, "rb").read() == want and
          os.stat(out).st_mode & 0o777 == 0o666 & ~0o022, (r.stderr[-300:], oct(os.stat(out).st_mode)))
    # a full device: RLIMIT_FSIZE below the output's size
    siblings = {f: open(os.path.join(folder, f), "rb").read() for f in os.listdir(folder)
                if os.path.isfile(os.path.join(folder, f))}
    write(rel, KEEP)
    siblings[base] = KEEP
    r = run(out, fsize=max(16, len(want) // 4))
    check(f"{name}: a full device (RLIMIT_FSIZE) exits 1 with one line", one_line(r, 1),
          (r.returncode, r.stderr[-300:]))
    now = {f: open(os.path.join(folder, f), "rb").read() for f in os.listdir(folder)
           if os.path.isfile(os.path.join(folder, f))}
    check(f"{name}: ... every output as it was, no temporary file left", now == siblings,
          sorted(set(now) ^ set(siblings)) or [f for f in now if now[f] != siblings.get(f)])
    # through a symbolic link: the file it names is written, the link stays a link
    real = out + ".real"
    os.unlink(out)
    write(os.path.relpath(real, td), KEEP)
    os.symlink(os.path.basename(real), out)
    r = run(out)
    check(f"{name}: through a symbolic link the named file is written, the link stays one",
          r.returncode == 0 and kind(out) == "link" and open(real, "rb").read() == want, r.stderr[-300:])
    os.unlink(out)
    os.unlink(real)
    os.symlink(os.path.basename(real), out)          # dangling: the file it names is created
    r = run(out)
    check(f"{name}: through a dangling link the named file is created", r.returncode == 0 and kind(out) == "link"
          and os.path.isfile(real) and open(real, "rb").read() == want, r.stderr[-300:])
    os.unlink(out)
    os.unlink(real)
    # a FIFO: written in place (its reader gets the whole output), never renamed over
    fifo = os.path.join(folder, base)
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = run(out)
    reader.join(timeout=60)
    check(f"{name}: into a FIFO its reader gets the whole output, the FIFO stays one",
          r.returncode == 0 and got == [want] and kind(fifo) == "fifo", (r.returncode, r.stderr[-300:], kind(fifo)))
    os.unlink(fifo)
    # a directory: refused, one line, exit 2, left as it was
    os.mkdir(out)
    r = run(out)
    refused(f"{name}: an output that is a directory is refused", r, "directory")
    check(f"{name}: ... the directory stays empty", kind(out) == "dir" and os.listdir(out) == [])
    os.rmdir(out)
    # private device nodes: a null device stays one; a full one fails the write, exit 1, still a device
    try:
        os.mknod(out, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except OSError as e:
        print(f"skip {name}: private device nodes ({e})")
        continue
    r = run(out)
    check(f"{name}: into a private null device: exit 0, still a device", r.returncode == 0 and kind(out) == "chr",
          r.stderr[-300:])
    os.unlink(out)
    os.mknod(out, 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    r = run(out)
    check(f"{name}: into a private full device: exit 1 with one line naming it, still a device",
          one_line(r, 1) and base in r.stderr and kind(out) == "chr", (r.returncode, r.stderr[-300:]))
    os.unlink(out)

shutil.rmtree(td, ignore_errors=True)
finish()
