#!/usr/bin/env python3
"""End-to-end tests of experiments at scale: `simbatch sweep` (every point once,
resumable after SIGKILL / SIGTERM, two sweeps sharing a database, bad input,
--part, --summary against statistics recomputed here), `simbatch merge`
(union without duplicates, refused schema versions), the GNU parallel and
Slurm exports run locally, and `simbatch capacity` against M/D/1 theory.
Usage: test_sweep_cli.py PATH/TO/simbatch"""
import json
import io
import csv
import math
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SB = os.path.abspath(sys.argv[1])
failures = []
td = tempfile.mkdtemp(prefix="simbatch-sweep-")


def sb(*args, timeout=300, **kw):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=timeout, **kw)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def write(name, text):
    path = os.path.join(td, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def points(db):
    """sweep-point key -> number of runs holding it."""
    if not os.path.exists(db):
        return {}
    con = sqlite3.connect(db)
    try:
        rows = con.execute("select value, count(*) from run_config where key='sweep-point' group by value").fetchall()
    except sqlite3.OperationalError:
        rows = []
    con.close()
    return dict(rows)


def run_count(db):
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("select count(*) from runs").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        con.close()


def runs_complete(db):
    """Every run has its metrics row and its 1000-point CDF (no half-written run)."""
    con = sqlite3.connect(db)
    bad = con.execute("select count(*) from runs r where (select count(*) from run_metrics m where m.run_id=r.run_id) != 1"
                      " or (select count(*) from run_cdf c where c.run_id=r.run_id) != 1000").fetchone()[0]
    con.close()
    return bad == 0


def keys_of(sweep_file):
    r = sb("sweep", sweep_file, "--list")
    return r.stdout.split("\n")[:-1] if r.returncode == 0 else None


# ---- a small sweep: every point once, a rerun runs nothing ----
small = write("small.sweep", """# two variants, two rates, three seeds
fixed --model=resnet50 --requests=400
axis rate = 100 400
variant serial = --policy=serial
variant graph5 = --policy=graph --window=5 --max-batch=16
seeds 1..3
""")
keys = keys_of(small)
check("list gives 12 distinct keys", keys is not None and len(keys) == 12 and len(set(keys)) == 12, keys)
db = os.path.join(td, "small.db")
r = sb("sweep", small, f"--db={db}", "--jobs=2")
check("sweep exits 0", r.returncode == 0, r.stderr)
check("sweep prints nothing on stdout", r.stdout == "", r.stdout)
check("sweep reports progress on stderr", "sweep [" in r.stderr and "12/12" in r.stderr, r.stderr)
got = points(db)
check("every point stored exactly once", sorted(got) == sorted(keys) and set(got.values()) == {1}, got)
check("runs complete", runs_complete(db))
r = sb("sweep", small, f"--db={db}")
check("rerun exits 0", r.returncode == 0, r.stderr)
check("rerun skips every point", run_count(db) == 12 and "12 stored already, 0 to run" in r.stderr, r.stderr)

# the stored run is the run the key describes
con = sqlite3.connect(db)
rid = con.execute("select run_id from run_config where key='sweep-point' and value=?",
                  ("max-batch=16 model=resnet50 policy=graph rate=400 requests=400 seed=2 window=5",)).fetchone()[0]
cfg = dict(con.execute("select key, value from run_config where run_id=?", (rid,)).fetchall())
con.close()
check("stored options match the key", cfg.get("policy") == "graph" and cfg.get("window") == "5" and
      cfg.get("seed") == "2" and cfg.get("rate") == "400" and cfg.get("max-batch") == "16", cfg)
direct = sb("--policy=graph", "--window=5", "--max-batch=16", "--model=resnet50", "--requests=400", "--rate=400",
            "--seed=2", "--no-db", "--json")
con = sqlite3.connect(db)
stored = json.loads(con.execute("select summary_json from runs where run_id=?", (rid,)).fetchone()[0])
con.close()
dj = json.loads(direct.stdout) if direct.returncode == 0 else {}
check("stored point equals a direct run", stored.get("latency_ms") == dj.get("latency_ms"), (stored, dj))

# ---- summary: recomputed here from the stored rows ----
r = sb("sweep", small, f"--db={db}", "--summary", "--csv", "--metrics=mean_ms,p99_ms,throughput_rps")
check("summary csv exits 0", r.returncode == 0, r.stderr)
lines = r.stdout.strip().split("\n")
head = lines[0].split(",") if lines else []
check("summary header", head[:3] == ["rate", "variant", "n"] and "p99_ms_ci95_hi" in head, head)
check("summary has one row per configuration", len(lines) == 5, lines)
rows = [dict(zip(head, ln.split(","))) for ln in lines[1:]]
con = sqlite3.connect(db)


def stored_metric(key, col):
    return con.execute("select m." + col + " from run_config c join run_metrics m on m.run_id=c.run_id "
                       "where c.key='sweep-point' and c.value=?", (key,)).fetchone()[0]


def quantile(sorted_v, q):  # linear interpolation between order statistics
    h = (len(sorted_v) - 1) * q
    lo = math.floor(h)
    return sorted_v[lo] + (h - lo) * (sorted_v[min(lo + 1, len(sorted_v) - 1)] - sorted_v[lo])


T975_DF2 = 4.302653  # Student t, 97.5% quantile, 2 degrees of freedom (printed tables)
row = next((x for x in rows if x.get("rate") == "400" and x.get("variant") == "serial"), {})
vals = sorted(stored_metric(f"model=resnet50 policy=serial rate=400 requests=400 seed={s}", "p99_ms") for s in (1, 2, 3))
con.close()
mean = sum(vals) / 3
sd = math.sqrt(sum((v - mean) ** 2 for v in vals) / 2)
check("summary n", row.get("n") == "3", row)
check("summary mean", abs(float(row.get("p99_ms_mean", "nan")) - mean) < 1e-6 * mean, (row, vals))
check("summary p25/p75", abs(float(row.get("p99_ms_p25", "nan")) - quantile(vals, 0.25)) < 1e-6 * mean and
      abs(float(row.get("p99_ms_p75", "nan")) - quantile(vals, 0.75)) < 1e-6 * mean, (row, vals))
check("summary 95% CI", abs(float(row.get("p99_ms_ci95_hi", "nan")) - (mean + T975_DF2 * sd / math.sqrt(3))) < 1e-5 * mean,
      (row, vals))
r = sb("sweep", small, f"--db={db}", "--summary")
check("summary text: a node-level sweep's default metrics by their one names",
      r.returncode == 0 and all(m in r.stdout.splitlines()[0] for m in ("latency_ms.mean", "latency_ms.p99",
                                "throughput_rps", "sla_violation_rate")) and "graph5" in r.stdout, r.stdout + r.stderr)
r = sb("sweep", small, f"--db={db}", "--summary", "--metrics=nope")
check("summary unknown metric -> exit 2", r.returncode == 2 and "nope" in r.stderr, r.stderr)
r = sb("sweep", small, f"--db={os.path.join(td, 'missing.db')}", "--summary")
check("summary of a missing database -> exit 2, nothing created", r.returncode == 2 and
      not os.path.exists(os.path.join(td, "missing.db")), r.stderr)

# ---- bad input: the line is named, nothing runs ----
bad_cases = {
    "unknown directive": ("fixed --model=resnet50\nvariant a = --policy=serial\nbogus 1 2\n", ":3:"),
    "bad option value": ("fixed --model=resnet50\naxis rate = 100 fast\n", ":2:"),
    "seed in fixed": ("fixed --seed=4\n", ":1:"),
    "option set twice": ("fixed --rate=5\naxis rate = 1 2\n", ":2:"),
}
bad_db = os.path.join(td, "bad.db")
for name, (text, where) in bad_cases.items():
    f = write("bad.sweep", text)
    r = sb("sweep", f, f"--db={bad_db}")
    lines_err = r.stderr.strip().splitlines()
    check(f"malformed sweep file ({name}) -> exit 2, one line naming it", r.returncode == 2 and len(lines_err) == 1 and
          (f + where) in r.stderr, r.stderr)
check("malformed sweep files store nothing", run_count(bad_db) == 0)
# a value only the run can judge (an unknown policy): every configuration is checked before any runs
f = write("badpol.sweep", "fixed --model=resnet50 --requests=200\nvariant ok = --policy=serial\nvariant typo = --policy=graf\n")
r = sb("sweep", f, f"--db={bad_db}")
check("unknown policy in a variant -> exit 2 naming the configuration", r.returncode == 2 and "graf" in r.stderr and
      "configuration" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
check("a sweep with a bad configuration stores nothing", run_count(bad_db) == 0, run_count(bad_db))
r = sb("sweep", small, "--part=3/2")
check("bad --part -> exit 2", r.returncode == 2, r.stderr)
r = sb("sweep", os.path.join(td, "nope.sweep"))
check("missing sweep file -> exit 2", r.returncode == 2 and "nope.sweep" in r.stderr, r.stderr)

# ---- killed midway (SIGKILL to the whole process group), then restarted ----
big = write("big.sweep", """fixed --model=gnmt --policy=graph --window=2 --requests=6000
axis rate = 300 600 900 1200 1500 1800
seeds 1..6
""")
big_keys = keys_of(big)
kdb = os.path.join(td, "killed.db")
p = subprocess.Popen([SB, "sweep", big, f"--db={kdb}", "--jobs=2", "--quiet"], start_new_session=True,
                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
deadline = time.time() + 600     # generous: under ASan on a loaded machine, 4 runs took over 120 s
while time.time() < deadline and run_count(kdb) < 4 and p.poll() is None:
    time.sleep(0.005)
os.killpg(p.pid, signal.SIGKILL)
p.wait()
p.stderr.close()
for _ in range(2000):  # the group's runs die too; wait until none is left before counting
    try:
        os.killpg(p.pid, 0)
        time.sleep(0.005)
    except ProcessLookupError:
        break
at_kill = run_count(kdb)
check("killed midway (some runs stored, not all)", 0 < at_kill < len(big_keys), f"{at_kill} of {len(big_keys)}")
check("killed sweep left only complete runs", runs_complete(kdb))
r = sb("sweep", big, f"--db={kdb}", "--jobs=2")
check("restarted sweep exits 0", r.returncode == 0, r.stderr)
got = points(kdb)
check("after restart every point present exactly once", sorted(got) == sorted(big_keys) and set(got.values()) == {1},
      {k: v for k, v in got.items() if v != 1} or f"{len(got)} of {len(big_keys)}")
check("restart skipped what was stored", f"{at_kill} stored already" in r.stderr or at_kill == 0, r.stderr)

# ---- SIGTERM to the sweep alone: it stops its runs and says how to continue ----
tdb = os.path.join(td, "term.db")
p = subprocess.Popen([SB, "sweep", big, f"--db={tdb}", "--jobs=2"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, text=True)
deadline = time.time() + 120
while time.time() < deadline and run_count(tdb) < 3 and p.poll() is None:
    time.sleep(0.005)
p.send_signal(signal.SIGTERM)
err = p.communicate(timeout=120)[1]
check("SIGTERM: exit 128+15 with a resume hint", p.returncode == 128 + signal.SIGTERM and "again to continue" in err,
      (p.returncode, err))
check("SIGTERM: only complete runs", runs_complete(tdb) and run_count(tdb) < len(big_keys))
r = sb("sweep", big, f"--db={tdb}", "--quiet")
got = points(tdb)
check("SIGTERM: restart completes every point once", r.returncode == 0 and len(got) == len(big_keys) and
      set(got.values()) == {1}, r.stderr)

# ---- runs go through workers (sim/cli/procpool.h): a point that fails at run time, after the
# configuration checks, fails alone with its own message; the worker goes on with the rest ----
fdb = os.path.join(td, "fails.db")
fkeys = keys_of(small)
bad_key = fkeys[4]
check("fresh database for the failing point", sb("sweep", small, f"--db={fdb}", "--part=1/99", "--quiet").returncode == 0)
con = sqlite3.connect(fdb)
con.execute("pragma foreign_keys=on")
con.execute("delete from runs")   # the one point of part 1 goes; the trigger refuses one key at store time
con.execute("create trigger refuse before insert on run_config when new.key = 'sweep-point' and new.value = '"
            + bad_key + "' begin select raise(abort, 'refused by the test trigger'); end")
con.commit()
con.close()
r = sb("sweep", small, f"--db={fdb}", "--jobs=2")
got = points(fdb)
check("failing point: exit 1, reported with its key and its own message",
      r.returncode == 1 and f"sweep point '{bad_key}' failed (exit 1)" in r.stderr and "refused by the test trigger" in r.stderr,
      (r.returncode, r.stderr))
check("failing point: every other point stored once", sorted(got) == sorted(k for k in fkeys if k != bad_key) and
      set(got.values()) == {1}, got)
check("failing point: runs complete", runs_complete(fdb))

# a worker killed in the middle of a point fails that point only; a fresh worker takes the rest
def is_worker(pid):
    """A child may exit between pgrep listing it and this read; a vanished one is no worker."""
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read().split("\0")[1:2] == ["run-worker"]
    except (FileNotFoundError, ProcessLookupError):
        return False


# big's points take about 3 ms each, the whole sweep 0.1 s: too short for the poll below to catch a
# worker inside a point on a loaded machine; these take about 0.15 s each (3 s in all)
slow = write("slow.sweep", """fixed --model=gnmt --policy=graph --window=2 --requests=1000000
axis rate = 300 600 900 1200 1500 1800
seeds 1..6
""")
slow_keys = keys_of(slow)
wdb = os.path.join(td, "worker.db")
p = subprocess.Popen([SB, "sweep", slow, f"--db={wdb}", "--jobs=2", "--quiet"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.PIPE, text=True)
# the configuration check stores one point a configuration with workers of its own; the kill waits for the
# main phase's workers, listed after more than those points are stored
checked = len(slow_keys) // 6
deadline = time.time() + 120
workers = []
while time.time() < deadline and p.poll() is None:
    past_check = run_count(wdb) >= checked + 2
    kids = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True).stdout.split()
    workers = [k for k in kids if is_worker(k)]
    if past_check and workers:
        break
    workers = []
    time.sleep(0.005)
killed = bool(workers)
if killed:
    os.kill(int(workers[0]), signal.SIGKILL)
err = p.communicate(timeout=300)[1]
got = points(wdb)
check("killed worker: one point failed by signal 9, exit 1", killed and p.returncode == 1 and
      err.count("failed (killed by signal 9)") == 1 and "1 sweep point(s) failed" in err, (killed, p.returncode, err))
check("killed worker: the other points stored once", len(got) == len(slow_keys) - 1 and set(got.values()) == {1}
      and runs_complete(wdb), f"{len(got)} of {len(slow_keys)}")
r = sb("sweep", slow, f"--db={wdb}", "--quiet")
check("killed worker: rerun stores the failed point", r.returncode == 0 and len(points(wdb)) == len(slow_keys), r.stderr)

# ---- two processes sweeping into one database lose no run ----
other = write("other.sweep", """fixed --model=transformer --policy=serial --requests=3000
axis rate = 100 200 300 400
seeds 1..4
""")
# Sweeps creating one new database at once (issue 47): all but the creator find the file there before its
# schema is committed. Whether one does depends on timing, so the state each meets is also made directly:
# a 0-byte file (what the creator's open leaves) and an SQLite file in WAL mode with no table yet (what its
# journal-mode switch leaves); then eight sweeps at once, three rounds, on a fresh path each.
tiny = write("tiny.sweep", "fixed --model=resnet50 --requests=200\naxis rate = 100 400\nvariant serial = "
             "--policy=serial\nseeds 1..2\n")
creating = []
for made in ("0-byte", "wal-no-tables"):
    path = os.path.join(td, f"creating-{made}.db")
    if made == "0-byte":
        open(path, "w").close()
    else:
        con = sqlite3.connect(path)
        con.execute("pragma journal_mode=wal")
        con.close()
    r = sb("sweep", tiny, f"--db={path}", "--jobs=2", "--quiet")
    creating.append((made, r.returncode, r.stderr.strip()))
for rnd in range(3):
    path = os.path.join(td, f"creating-{rnd}.db")
    ps = [subprocess.Popen([SB, "sweep", tiny, f"--db={path}", "--jobs=2", "--quiet"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True) for _ in range(8)]
    creating += [(f"round {rnd}", q.returncode, e.strip()) for q, e in ((q, q.communicate(timeout=300)[1]) for q in ps)]
    creating.append((f"round {rnd}: each point once", 0 if sorted(set(points(path).values())) == [1] and
                     len(points(path)) == 4 else 1, str(points(path))))
cdb = os.path.join(td, "concurrent.db")
procs = [subprocess.Popen([SB, "sweep", f, f"--db={cdb}", "--jobs=2", "--quiet"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) for f in (big, other, big)]
outs = [q.communicate(timeout=300) for q in procs]
check("concurrent sweeps exit 0 (and sweeps creating one database: a database being created is taken as new; "
      "8 at once, 3 rounds, every point stored once)", all(q.returncode == 0 for q in procs) and
      all(rc == 0 for _, rc, _ in creating), [o[1] for o in outs] + [c for c in creating if c[1] != 0])
got = points(cdb)
want = sorted(big_keys + keys_of(other))
check("concurrent sweeps: the union, every point exactly once", sorted(got) == want and set(got.values()) == {1},
      {k: v for k, v in got.items() if v != 1} or f"{len(got)} of {len(want)}")
check("concurrent sweeps: runs complete", runs_complete(cdb))

# ---- parts: two halves in two databases, merged ----
p1, p2, pm = (os.path.join(td, n) for n in ("part1.db", "part2.db", "parts.db"))
r1 = sb("sweep", small, f"--db={p1}", "--part=1/2", "--quiet")
r2 = sb("sweep", small, f"--db={p2}", "--part=2/2", "--quiet")
check("parts run", r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr)
check("parts split the points", len(points(p1)) == 6 and len(points(p2)) == 6 and not set(points(p1)) & set(points(p2)))

# ---- merge: union without duplicates; schema version refused ----
r = sb("merge", pm, p1, p2, p1)
check("merge exits 0", r.returncode == 0, r.stderr)
got = points(pm)
check("merge: union, each point once", sorted(got) == sorted(keys) and set(got.values()) == {1}, got)
check("merge: runs complete (CDF, metrics moved with their run)", runs_complete(pm))
r = sb("merge", pm, p1, p2)
check("merge again adds nothing", r.returncode == 0 and run_count(pm) == 12 and " 0 added" in r.stdout, r.stdout + r.stderr)
con1, con2 = sqlite3.connect(db), sqlite3.connect(pm)
q = ("select c.value, r.summary_json, m.p99_ms from runs r join run_config c on c.run_id=r.run_id and c.key='sweep-point' "
     "join run_metrics m on m.run_id=r.run_id order by c.value")
check("merged rows equal the single-database sweep", con1.execute(q).fetchall() == con2.execute(q).fetchall())
con1.close()
con2.close()
v2 = os.path.join(td, "v4.db")
shutil.copy(p1, v2)
for ext in ("-wal", "-shm"):
    if os.path.exists(p1 + ext):
        shutil.copy(p1 + ext, v2 + ext)
con = sqlite3.connect(v2)
con.execute("update simbatch_meta set value='99' where key='schema_version'")   # a newer simbatch's
con.commit()
con.close()
before = run_count(pm)
fresh = os.path.join(td, "fresh.db")
r = sb("merge", fresh, p2, v2)
check("merge refuses another schema version (exit 2, one line)", r.returncode == 2 and "schema version" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1, r.stderr)
check("refused merge writes nothing", run_count(fresh) == 0 and run_count(pm) == before)
not_db = write("notes.txt", "not a database\n" * 50)
r = sb("merge", pm, not_db)
check("merge refuses a non-database", r.returncode == 2 and "notes.txt" in r.stderr, r.stderr)
r = sb("merge", pm, os.path.join(td, "absent.db"))
check("merge refuses a missing shard", r.returncode == 2 and "absent.db" in r.stderr, r.stderr)
r = sb("merge", pm, pm)
check("merge refuses OUT as its own shard", r.returncode == 2, r.stderr)
# LLM runs' token CDFs travel with a merge; a shard of schema 2 (before them) merges into a version-3
# database with its requests' first_token_s NULL and no token CDF
llm_new, llm_old = os.path.join(td, "llm3.db"), os.path.join(td, "llm2.db")
for path, seed in ((llm_new, 1), (llm_old, 2)):
    sb("--policy=continuous", "--model=llm-tiny", "--hw=gpu-h100-roofline", "--rate=100", "--requests=50",
       f"--seed={seed}", f"--db={path}", "--db-requests", "--quiet")
con = sqlite3.connect(llm_old)
con.executescript("drop table run_token_cdf; alter table run_requests drop column first_token_s;"
                  "update simbatch_meta set value = '2' where key = 'schema_version';")
con.close()
llm_all = os.path.join(td, "llm-all.db")
r = sb("merge", llm_all, llm_new, llm_old)
con = sqlite3.connect(llm_all) if r.returncode == 0 else None
check("merge: a version-3 LLM shard's 3000 token-CDF rows and a version-2 shard's runs without them",
      con is not None and con.execute("select count(*) from runs").fetchone()[0] == 2 and
      con.execute("select count(*) from run_token_cdf").fetchone()[0] == 3000 and
      con.execute("select count(*), count(first_token_s) from run_requests").fetchone() == (100, 50), r.stderr)
# a shard of schema 5 (before run_metric_values) merges into a version-6 database with its runs' metrics named
# as an upgrade names them: each stored then, under its name (TTFT p99 from run_stats, p99 from run_metrics), and
# none of the token rates it did not store
llm_v5 = os.path.join(td, "llm5.db")
sb("--policy=continuous", "--model=llm-tiny", "--hw=gpu-h100-roofline", "--rate=100", "--requests=50", "--seed=3",
   f"--db={llm_v5}", "--quiet")
con = sqlite3.connect(llm_v5)
con.executescript("drop table run_metric_values; drop table metric_names;"
                  "update simbatch_meta set value = '5' where key = 'schema_version';")
con.close()
llm_named = os.path.join(td, "llm-named.db")
r = sb("merge", llm_named, llm_new, llm_v5)
con = sqlite3.connect(llm_named) if r.returncode == 0 else None
named = dict(con.execute("select v.metric, v.value from run_metric_values v join runs r using (run_id) "
                         "where r.seed = 3")) if con else {}
stat = con.execute("select s.value from run_stats s join runs r using (run_id) where r.seed = 3 and "
                   "s.key = 'ttft_ms.p99'").fetchone() if con else None
p99 = con.execute("select m.p99_ms from run_metrics m join runs r using (run_id) where r.seed = 3").fetchone() if con else None
check("merge: a version-5 shard's run gets its stored metrics under their names, no token rates",
      con is not None and stat is not None and named.get("ttft_ms.p99") == stat[0] and
      named.get("latency_ms.p99") == p99[0] and "output_tokens_per_s" not in named and
      con.execute("select count(distinct run_id) from run_metric_values").fetchone()[0] == 2, (r.stderr, named))

# ---- beyond one machine: GNU parallel job list, run locally ----
if shutil.which("parallel"):
    work = os.path.join(td, "par")
    os.mkdir(work)
    r = sb("sweep", small, "--export=parallel", "--shards=3", "--shard-dir=shards", cwd=work)
    jobs = r.stdout.strip().split("\n")
    check("parallel export: one command per shard", r.returncode == 0 and len(jobs) == 3 and
          all("--db=shards/shard-%d.db" % (i + 1) in j and "--part=%d/3" % (i + 1) in j for i, j in enumerate(jobs)), r.stdout)
    with open(os.path.join(work, "jobs.txt"), "w") as f:
        f.write(r.stdout)
    par = subprocess.run("parallel -j2 --halt now,fail=1 < jobs.txt", shell=True, cwd=work, capture_output=True,
                         text=True, timeout=300)
    check("parallel -j2 runs the jobs", par.returncode == 0, par.stderr)
    shards = sorted(os.path.join(work, "shards", n) for n in os.listdir(os.path.join(work, "shards")) if n.endswith(".db"))
    check("each job wrote its own shard", len(shards) == 3, shards)
    out = os.path.join(work, "all.db")
    r = sb("merge", out, *shards)
    got = points(out)
    check("parallel shards merge to every point once", r.returncode == 0 and sorted(got) == sorted(keys) and
          set(got.values()) == {1}, r.stderr)
else:
    print("skip GNU parallel export: `parallel` is not installed (scripts/install-deps installs it)")
    failures.append("GNU parallel missing")

# ---- the Slurm array script, run as Slurm would (one task id at a time) ----
work = os.path.join(td, "slurm")
os.mkdir(work)
r = sb("sweep", small, "--export=slurm", "--shards=2", cwd=work)
script = r.stdout
check("slurm export: an sbatch array script", r.returncode == 0 and "#SBATCH --array=1-2" in script and
      "SLURM_ARRAY_TASK_ID" in script, script)
with open(os.path.join(work, "sweep.sbatch"), "w") as f:
    f.write(script)
os.mkdir(os.path.join(work, "shards"))
ok = True
for task in (1, 2):
    env = dict(os.environ, SLURM_ARRAY_TASK_ID=str(task))
    t = subprocess.run(["bash", "sweep.sbatch"], cwd=work, env=env, capture_output=True, text=True, timeout=300)
    ok = ok and t.returncode == 0
check("slurm script tasks run", ok)
out = os.path.join(work, "all.db")
r = sb("merge", out, os.path.join(work, "shards", "shard-1.db"), os.path.join(work, "shards", "shard-2.db"))
got = points(out)
check("slurm shards merge to every point once", r.returncode == 0 and sorted(got) == sorted(keys) and
      set(got.values()) == {1}, r.stderr)
t = subprocess.run(["bash", "sweep.sbatch"], cwd=work, capture_output=True, text=True, timeout=60)
check("slurm script refuses to run without a task id", t.returncode != 0 and "SLURM_ARRAY_TASK_ID" in t.stderr, t.stderr)

# ---- capacity: serial policy, deterministic 1 ms service, Poisson arrivals = M/D/1 ----
model = write("one.model", "model one\nsource test: one static node\nnode a static gemm=1,16,16\n")
table = write("d1.csv", "node,batch,latency_s\n*,1,0.001\n")
D, SLA = 1e-3, 10e-3


def md1_wait_cdf(lam, t):
    """P(W <= t) for the M/D/1 queue's waiting time (Erlang's formula)."""
    s = 0.0
    for k in range(int(math.floor(t / D)) + 1):
        x = lam * (k * D - t)
        s += x ** k / math.factorial(k) * math.exp(-x)
    return (1 - lam * D) * s


lo_t, hi_t = 1.0, 1 / D * (1 - 1e-12)
for _ in range(200):  # the rate whose sojourn-time p99 is exactly the SLA
    mid = (lo_t + hi_t) / 2
    lo_t, hi_t = (mid, hi_t) if md1_wait_cdf(mid, SLA - D) >= 0.99 else (lo_t, mid)
theory = lo_t
r = sb("capacity", "--no-db", "--policy=serial", f"--model={model}", f"--hw={table}", "--sla=10", "--seeds=3", "--json")
cap = json.loads(r.stdout) if r.returncode == 0 else {}
check("capacity exits 0 with one JSON object", r.returncode == 0 and r.stdout.count("\n") == 1, r.stderr)
lo, hi = cap.get("bracket_rps", [0, 0])
check("capacity bracket within the tolerance", lo > 0 and hi > lo and (hi - lo) <= 0.02 * lo and cap["capacity_rps"] == lo,
      cap)
check("capacity p99 meets the SLA at lo and misses it at hi", cap and cap["p99_ms_at_bracket"][0] <= 10 <
      cap["p99_ms_at_bracket"][1], cap)
check("capacity agrees with M/D/1 theory within 5%", abs(lo - theory) / theory < 0.05, f"found {lo}, theory {theory:.1f}")


def p99_at(rate, seed):
    out = sb("--policy=serial", f"--model={model}", f"--hw={table}", "--sla=10", f"--rate={rate:.10g}",
             f"--requests={cap['requests']}", f"--warmup={cap['warmup']}", f"--seed={seed}", "--no-db", "--json")
    return json.loads(out.stdout)["latency_ms"]["p99"]


if cap:
    p_lo = sum(p99_at(lo, s) for s in (1, 2, 3)) / 3
    p_hi = sum(p99_at(hi, s) for s in (1, 2, 3)) / 3
    check("runs at the bracket reproduce it: p99(lo) <= SLA < p99(hi)", p_lo <= 10 < p_hi, (p_lo, p_hi))
r = sb("capacity", "--no-db", "--policy=serial", f"--model={model}", f"--hw={table}", "--sla=10")
check("capacity text names the rate and bracket", r.returncode == 0 and r.stdout.startswith("capacity ") and
      "req/s" in r.stdout, r.stdout + r.stderr)
r = sb("capacity", "--no-db", "--policy=serial", f"--model={model}", f"--hw={table}", "--sla=0.5")
check("capacity: an SLA below the service time has no rate (exit 1)", r.returncode == 1 and "no rate" in r.stderr, r.stderr)
r = sb("capacity", "--no-db", "--policy=nope", "--sla=10")
check("capacity: unknown policy -> exit 2", r.returncode == 2 and "nope" in r.stderr, r.stderr)
r = sb("capacity", "--no-db", "--rate=5", "--sla=10")
check("capacity: --rate refused -> exit 2", r.returncode == 2 and "--rate" in r.stderr, r.stderr)
r = sb("capacity", "--no-db", "--policy=graph", f"--model={model}", f"--hw={table}", "--max-batch=8", "--sla=10")
check("capacity: a run's own bad input comes back as exit 2", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
      r.stderr)

# ---- an LLM sweep's summary offers its token figures, each the mean of the stored run_stats (issue 38) ----
llm_sweep = os.path.join(td, "llm.sweep")
with open(llm_sweep, "w") as f:
    f.write("fixed --model=llama2-7b --requests=200 --ttft-slo=40 --tpot-slo=9\naxis rate = 4 8\nseeds 1..3\n")
llm_db = os.path.join(td, "llm-sweep.db")
r = sb("sweep", llm_sweep, f"--db={llm_db}", "--quiet")
r = sb("sweep", llm_sweep, f"--db={llm_db}", "--summary", "--csv", "--metrics=ttft_p99_ms,tpot_mean_ms,slo_attainment")
rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
con = sqlite3.connect(llm_db)
ok = len(rows) == 2
for row in rows:
    for metric, key in (("ttft_p99_ms", "ttft_ms.p99"), ("tpot_mean_ms", "tpot_ms.mean"),
                        ("slo_attainment", "slo_attainment")):
        vals = [v for (v,) in con.execute(
            "select s.value from run_stats s join run_config c on c.run_id = s.run_id "
            "join run_config k on k.run_id = s.run_id where s.key = ? and c.key = 'rate' and c.value = ? "
            "and k.key = 'sweep-point'", (key, row["rate"]))]
        ok = ok and len(vals) == 3 and abs(float(row[f"{metric}_mean"]) - sum(vals) / 3) <= 1e-6 * max(1, abs(sum(vals)))
con.close()
check("an LLM sweep's summary: TTFT, TPOT and SLO attainment columns, each the mean of the stored runs'", ok,
      r.stdout + r.stderr)
# without --metrics an LLM sweep's summary shows LLM metrics (issue 51): TTFT and TPOT p99, output tokens/s and,
# its runs having SLOs, goodput in tokens; no SLA violation rate. Each the mean of the runs' JSON summaries.
r = sb("sweep", llm_sweep, f"--db={llm_db}", "--summary", "--csv")
rows = list(csv.DictReader(io.StringIO(r.stdout))) if r.returncode == 0 else []
con = sqlite3.connect(llm_db)
ok = len(rows) == 2 and rows[0] and not any(k.startswith("sla_violation_rate") for k in rows[0])
for row in rows:
    summaries = [json.loads(j) for (j,) in con.execute(
        "select r.summary_json from runs r join run_config c on c.run_id = r.run_id join run_config k on "
        "k.run_id = r.run_id where c.key = 'rate' and c.value = ? and k.key = 'sweep-point'", (row["rate"],))]
    for metric, path in (("ttft_ms.p99", ("ttft_ms", "p99")), ("tpot_ms.p99", ("tpot_ms", "p99")),
                         ("output_tokens_per_s", ("output_tokens_per_s",)),
                         ("goodput_output_tokens_per_s", ("goodput_output_tokens_per_s",))):
        vals = [s[path[0]] if len(path) == 1 else s[path[0]][path[1]] for s in summaries]
        ok = ok and len(vals) == 3 and abs(float(row[f"{metric}_mean"]) - sum(vals) / 3) <= 1e-6 * max(1, abs(sum(vals)))
con.close()
check("an LLM sweep's default summary: TTFT and TPOT p99, output tokens/s, goodput in tokens (the JSON's means), "
      "no SLA violation rate", ok, r.stdout + r.stderr)
r = sb("sweep", llm_sweep, f"--db={llm_db}", "--summary", "--metrics=ttft_ms.p99,ttft_p99_ms")
head = r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else ""
cells = [l.split()[-1] for l in r.stdout.splitlines()[1:]] if head else []
check("--metrics takes the one name and the old one (its alias), each column headed as asked, the same values",
      "ttft_ms.p99:" in head and "ttft_p99_ms:" in head and r.stdout.splitlines()[1].count(cells[0]) == 2 if cells
      else False, r.stdout + r.stderr)

# ---- capacity of an LLM under token targets (measured H100, Llama-2-7B) ----
def binom_upper(k, n, conf):
    """The one-sided upper Clopper-Pearson bound, by bisection on the exact binomial sum."""
    if k >= n:
        return 1.0
    lo_f, hi_f = 0.0, 1.0
    for _ in range(100):
        f = (lo_f + hi_f) / 2
        p = sum(math.comb(n, i) * f ** i * (1 - f) ** (n - i) for i in range(k + 1))
        lo_f, hi_f = (f, hi_f) if p > 1 - conf else (lo_f, f)
    return lo_f


# fixed lengths (the model file's): the checks below rerun a probe's run by hand with these options and a rate
llm = ["--model=llama2-7b", "--policy=chunked", "--max-seqs=64", "--ttft-slo=150", "--tpot-slo=15",
       "--input-len=fixed:1020", "--output-len=fixed:129"]
r = sb("capacity", "--no-db", *llm, "--percentile=95", "--json")
cap = json.loads(r.stdout) if r.returncode == 0 else {}
check("LLM capacity exits 0 with one JSON object", r.returncode == 0 and "llm" in cap, r.stderr)
if cap:
    lo, hi = cap["bracket_rps"]
    check("LLM capacity: a bracket within the tolerance", 0 < lo < hi and hi - lo <= 0.02 * lo, cap["bracket_rps"])
    check("LLM capacity: the hardware's band around the bracket", cap["llm"]["hw_band_rps"][0] < lo and
          cap["llm"]["hw_band_rps"][1] > hi, cap["llm"])
    for rate, want_pass in ((lo, True), (hi, False)):
        out = sb("run", *llm, f"--rate={rate:.10g}", f"--requests={cap['requests']}", f"--warmup={cap['warmup']}",
                 "--seed=1", "--no-db", "--json")
        j = json.loads(out.stdout)
        missed, n = j["slo_measured"] - j["slo_met"], j["slo_measured"]
        bound = binom_upper(missed, n, 0.95)
        w = j["steady_window"]
        passes = bound <= 0.05 and w["departure_rps"] >= 0.95 * w["arrival_rps"] and j["overload_window"] is None
        check(f"LLM capacity: a run at {'lo' if want_pass else 'hi'} {'passes' if want_pass else 'fails'} by the "
              f"bound worked out here ({missed} of {n} missed, bound {bound:.4f})", passes == want_pass, j)
# targets no run misses: only saturation (departures below 95% of arrivals in the steady window) or overload
# within a window (the queue's floor trending up, util/overload.h) can fail a probe
loose = ["--model=llama2-7b", "--policy=chunked", "--max-seqs=64", "--ttft-slo=1e9", "--tpot-slo=1e9",
         "--input-len=fixed:1020", "--output-len=fixed:129"]
r = sb("capacity", "--no-db", *loose, "--json")
cap = json.loads(r.stdout) if r.returncode == 0 else {}
check("LLM capacity with loose targets: every saturated probe fails, and some were",
      cap and all(not p["pass"] for p in cap["points"] if p["saturated"]) and
      any(p["saturated"] for p in cap["points"]) and all(p["sla_violation_rate"] == 0 for p in cap["points"]),
      cap.get("points", r.stderr))
if cap:
    for rate, keeps_up in ((cap["bracket_rps"][0], True), (cap["bracket_rps"][1], False)):
        j = json.loads(sb("run", *loose, f"--rate={rate:.10g}", f"--requests={cap['requests']}",
                          f"--warmup={cap['warmup']}", "--seed=1", "--no-db", "--json").stdout)
        w = j["steady_window"]
        check(f"LLM capacity: the run at {'lo keeps up' if keeps_up else 'hi falls behind'} in its steady window "
              f"or within a window", (w["departure_rps"] >= 0.95 * w["arrival_rps"] and
                                      j["overload_window"] is None) == keeps_up, j)
bad = [
    ("no targets", ["--model=llama2-7b"], "--ttft-slo"),
    ("--sla for an LLM", ["--model=llama2-7b", "--ttft-slo=100", "--sla=5"], "--sla"),
    ("a percentile for a node-level model", ["--model=lstm", "--percentile=90"], "--percentile"),
    ("an unknown preset", ["--model=llama2-7b", "--preset=foo"], "--preset=foo"),
    ("a preset and targets", ["--model=llama2-7b", "--preset=mlperf-llama2-70b", "--ttft-slo=3"], "--preset"),
    ("the 100th percentile", ["--model=llama2-7b", "--ttft-slo=100", "--percentile=100"], "--percentile=100"),
    ("an attainment of 0", ["--model=llama2-7b", "--ttft-slo=100", "--attainment=0"], "--attainment=0"),
    ("a percentile and an attainment", ["--model=llama2-7b", "--ttft-slo=100", "--percentile=90",
                                        "--attainment=0.9"], "not both"),
]
for name, args, needle in bad:
    r = sb("capacity", "--no-db", *args, "--quiet")
    check(f"LLM capacity bad input: {name} -> exit 2, one line", r.returncode == 2 and
          len(r.stderr.strip().splitlines()) == 1 and needle in r.stderr and r.stdout == "", r.stderr)
r = sb("capacity", "--no-db", "--model=llama2-7b", "--ttft-slo=1", "--quiet")
check("LLM capacity, targets no rate meets -> exit 1 (an answer, as a node-level model's), one line",
      r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "no rate meets the targets" in r.stderr and
      r.stdout == "", r.stderr)

# ---- simbatch search (issue 36): the cheapest configuration, worked out by hand ----
# Serial batching on constant-latency devices: "slow" (1 ms, $1 a device-hour) and "fast" (0.5 ms,
# $3), 1 to 3 workers, p99 within 10 ms. One slow worker is the M/D/1 queue above: its capacity is
# `theory`. The target, 1.3 x theory, is beyond one slow worker; two slow workers sharing the queue
# wait less than two M/D/1 queues at half the rate each, so they hold at least 2 x theory: the
# cheapest that meets it is two slow workers, $2 an hour (one fast one costs $3).
fast = write("d05.csv", "node,batch,latency_s\n*,1,0.0005\n")
target = 1.3 * theory
spec = write("hand.search", f"""# the hand-worked search
fixed  --policy=serial --model={model} --sla=10
axis   hw = {table} {fast}
axis   workers = 1 2 3
cost   {table} = 1
cost   {fast} = 3
target {target:.6g}
""")
out1, out2 = os.path.join(td, "s1.csv"), os.path.join(td, "s2.csv")
# --jobs=1: configurations run cheapest first, one at a time, so which ones the answer saves is fixed (with
# two at a time, a costlier one may start before the answer is known)
r = sb("search", spec, "--no-db", f"--out={out1}", "--json", "--jobs=1")
sj = json.loads(r.stdout) if r.returncode == 0 else {}
ans = sj.get("answer") or {}
check("search: the cheapest configuration meeting the target is the hand-worked one (two slow workers, $2)",
      ans.get("cost_per_hour") == 2 and ans.get("config") == f"hw={table} workers=2" and
      ans.get("capacity_rps", 0) >= target, r.stderr[-400:] or sj)
check("search: what costs more than the answer is not run", sj.get("not_run", 0) >= 3 and
      sj.get("simulated") == sj.get("configurations", 0) - sj.get("not_run", 0), sj)
r2 = sb("search", spec, "--no-db", f"--out={out2}", "--json", "--exhaustive")
sx = json.loads(r2.stdout) if r2.returncode == 0 else {}
check("search: pruning keeps the answer an exhaustive search picks", (sx.get("answer") or {}).get("config") ==
      ans.get("config") and sx.get("simulated") == 6 and sx.get("not_run") == 0, r2.stderr[-300:] or sx)
front = [(p["cost_per_hour"], p["capacity_rps"]) for p in sx.get("pareto", [])]
check("search: the Pareto front rises in both cost and capacity", front and all(
      a[0] < b[0] and a[1] < b[1] for a, b in zip(front, front[1:])), front)
# stored: the finished search in the database, one row a configuration as the report has it
sdb = os.path.join(td, "search.db")
r6 = sb("search", spec, f"--db={sdb}", f"--out={os.path.join(td, 's6.csv')}", "--json", "--exhaustive")
s6 = json.loads(r6.stdout) if r6.returncode == 0 else {}
rows6, head6 = [], None
if os.path.exists(sdb):
    con = sqlite3.connect(sdb)
    head6 = con.execute("select search_id, spec_text, target_rps, budget_per_hour, exhaustive, answer, report_json"
                        " from searches").fetchall()
    rows6 = con.execute("select config, status, cost_per_hour, capacity_rps, pareto, answer from search_configs"
                        " where search_id = ? order by config", (s6.get("search_id", -1),)).fetchall()
    con.close()
want6 = sorted((x["config"], x["status"], x["cost_per_hour"], x.get("capacity_rps")) for x in s6.get("results", []))
check("search stored: one search with its file's text, goal, answer and report; a row a configuration, as the "
      "report gives it, the front and the answer marked",
      len(head6 or []) == 1 and head6[0][0] == s6.get("search_id") and head6[0][1] == open(spec).read() and
      head6[0][2] == float(f"{target:.6g}") and head6[0][3] is None and head6[0][4] == 1 and
      head6[0][5] == ans.get("config") and json.loads(head6[0][6]).get("answer") == s6.get("answer") and
      sorted((c, st, cost, cap) for c, st, cost, cap, _, _ in rows6) == want6 and len(rows6) == 6 and
      sorted(c for c, *_, p, _ in rows6 if p) == sorted(x["config"] for x in s6.get("pareto", [])) and
      [c for c, *_, a in rows6 if a] == [ans.get("config")], (r6.stderr[-300:], head6, rows6))
# merged: the same search stored in two databases is kept once; another search comes along
sdb2 = os.path.join(td, "search2.db")
shutil.copy(sdb, sdb2)
r7 = sb("search", spec, f"--db={sdb2}", f"--out={os.path.join(td, 's7.csv')}", "--json")   # pruned: another report
mdb = os.path.join(td, "searches-merged.db")
r8 = sb("merge", mdb, sdb, sdb2)
counts = (0, 0)
if os.path.exists(mdb):
    con = sqlite3.connect(mdb)
    counts = (con.execute("select count(*) from searches").fetchone()[0],
              con.execute("select count(*) from search_configs").fetchone()[0])
    con.close()
check("merge: searches without duplicates (the one in both once, the other added), their configurations along",
      r7.returncode == 0 and r8.returncode == 0 and counts == (2, 12) and
      "2 configuration searches added, 1 already present" in r8.stdout, (r7.stderr[-200:], r8.stdout, r8.stderr, counts))
# with a budget of $2 an hour instead: the most capacity it buys is again two slow workers (one fast
# one costs $3, beyond it); nothing above the budget runs
bspec = write("hand-budget.search", open(spec).read().replace(f"target {target:.6g}", "budget 2"))
rb = sb("search", bspec, "--no-db", f"--out={os.path.join(td, 'sb.csv')}", "--json")
sbj = json.loads(rb.stdout) if rb.returncode == 0 else {}
check("search with a budget: the most capacity within it, nothing above it run",
      (sbj.get("answer") or {}).get("config") == f"hw={table} workers=2" and sbj.get("simulated") == 2 and
      sbj.get("not_run") == 4, rb.stderr[-300:] or sbj)
# a killed search: its file cut after one result, mid-line; the rerun takes the whole line, drops the
# part, simulates the rest and ends with the same answer
with open(out1) as f:
    lines = f.read().splitlines(keepends=True)
with open(out1, "w") as f:
    f.write(lines[0] + lines[1] + lines[2][:15])
r3 = sb("search", spec, "--no-db", f"--out={out1}", "--json")
s3 = json.loads(r3.stdout) if r3.returncode == 0 else {}
with open(out1) as f:
    again = list(csv.reader(f))
check("search resumes from its results file: one configuration read back, the same answer, every line whole",
      s3.get("resumed") == 1 and (s3.get("answer") or {}).get("config") == ans.get("config") and
      len(again) == 1 + s3.get("simulated", -1) and all(len(row) == 10 for row in again), (r3.stderr[-300:], s3, again))
# a search stopped by SIGTERM keeps what it finished and says so; the rerun ends as the uninterrupted one
out3 = os.path.join(td, "s3.csv")
proc = subprocess.Popen([SB, "search", spec, "--no-db", f"--out={out3}", "--exhaustive", "--jobs=1"], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True)
deadline = time.time() + 60
while time.time() < deadline and proc.poll() is None:
    if os.path.exists(out3) and open(out3).read().count("\n") >= 2:
        break
    time.sleep(0.02)
proc.send_signal(signal.SIGTERM)
_, perr = proc.communicate(timeout=60)
r4 = sb("search", spec, "--no-db", f"--out={out3}", "--json", "--exhaustive")
s4 = json.loads(r4.stdout) if r4.returncode == 0 else {}
check("search stopped by SIGTERM: exit 128+15 naming its file; the rerun resumes and ends as the whole search did",
      proc.returncode == 143 and out3 in perr and s4.get("resumed", 0) >= 1 and
      [(p["config"], p["capacity_rps"]) for p in s4.get("pareto", [])] ==
      [(p["config"], p["capacity_rps"]) for p in sx.get("pareto", [])], (proc.returncode, perr[-300:], s4))
# the capacity bound from a cheaper run: llama2-7b on H100s, 1 to 8 replicas, a target of 60 req/s. One
# replica's capacity search sees it saturate at some rate R; N replicas cannot serve more than N x R, so
# the fleets with N x R below 60 are pruned unsimulated (the router is left out of the one-replica
# configuration, which has none to choose among), and the answer is the exhaustive search's. SLOs loose
# enough that one replica's capacity search probes rates that saturate it (its throughput falls short)
bspec = write("bound.search", "fixed --model=llama2-7b --policy=chunked --ttft-slo=5000 --tpot-slo=200 "
              "--input-len=fixed:1020 --output-len=fixed:129 --router=least-outstanding\naxis replicas = 1 2 3 4 8\ncost gpu-h100 = 4\ntarget 60\n")
rb1 = sb("search", bspec, "--no-db", f"--out={os.path.join(td, 'bound1.csv')}", "--json", "--jobs=1")
rb2 = sb("search", bspec, "--no-db", f"--out={os.path.join(td, 'bound2.csv')}", "--json", "--exhaustive")
b1 = json.loads(rb1.stdout) if rb1.returncode == 0 else {}
b2 = json.loads(rb2.stdout) if rb2.returncode == 0 else {}
by1 = {x["config"]: x for x in b1.get("results", [])}
by2 = {x["config"]: x for x in b2.get("results", [])}
bounded = [c for c, x in by1.items() if x["status"] == "pruned" and "saturated at" in x.get("reason", "")]
sat = float(bounded and by1[bounded[0]]["reason"].split("saturated at ")[1].split()[0] or 0)
check("search: a fleet whose replicas x one replica's saturating rate is below the target is pruned "
      "unsimulated; the answer is the exhaustive one's, and every simulated fleet's capacity is within the bound",
      bounded == ["replicas=2"] and (b1.get("answer") or {}).get("config") == (b2.get("answer") or {}).get("config")
      and by2.get("replicas=1", {}).get("status") == "ok" and sat > 0 and
      all(x["capacity_rps"] <= int(c.split("=")[1]) * sat for c, x in by2.items() if x["status"] == "ok"),
      (rb1.stderr[-300:], bounded, sat, b1.get("answer"), b2.get("answer")))
# a configuration's cost: its pools, each on its own GPUs: (1 x $4 + 2 x $2) x TP 2 = $16; 3 replicas of
# the axis's H100s at TP 2 = $24
pspec = write("pools.search", "fixed --model=llama2-7b --tp=2 --ttft-slo=500\naxis hw = gpu-h100\n"
              "axis replicas = 3 1:gpu-h100+2:gpu-a100\ncost gpu-h100 = 4\ncost gpu-a100 = 2\ntarget 1\n")
r = sb("search", pspec, "--no-db", "--list")
costs = sorted(float(l.split()[0][1:]) for l in r.stdout.splitlines())
check("search --list: a configuration's cost from its pools' own GPUs", r.returncode == 0 and costs == [16, 24],
      r.stdout + r.stderr)
# spread over machines: --export=parallel prints one job a part; the parts' results files, read
# together, give the whole search's answer with nothing simulated again
r = sb("search", spec, "--export=parallel", "--shards=3", f"--shard-dir={os.path.join(td, 'sh')}")
jobs = r.stdout.splitlines()
os.makedirs(os.path.join(td, "sh"), exist_ok=True)
ran = [subprocess.run(j, shell=True, capture_output=True, text=True, timeout=300).returncode for j in jobs]
parts = sorted(os.path.join(td, "sh", f) for f in os.listdir(os.path.join(td, "sh")))
merged = os.path.join(td, "merged.csv")
r5 = sb("search", spec, "--no-db", *parts, f"--out={merged}", "--json")
s5 = json.loads(r5.stdout) if r5.returncode == 0 else {}
with open(merged) as f:
    mrows = list(csv.reader(f))
check("search --export=parallel: three parts; joined, the answer of the whole search, nothing run again, "
      "their lines in --out", len(jobs) == 3 and ran == [0, 0, 0] and len(parts) == 3 and
      (s5.get("answer") or {}).get("config") == ans.get("config") and s5.get("resumed") == s5.get("simulated") and
      len(mrows) == 1 + s5.get("simulated", -1), (jobs, ran, parts, r5.stderr[-300:], s5))
r = sb("search", spec, "--export=slurm", "--shards=2")
check("search --export=slurm: an array script of 2 tasks", r.returncode == 0 and "#SBATCH --array=1-2" in r.stdout
      and "--part=\"$SLURM_ARRAY_TASK_ID\"/2" in r.stdout, r.stdout + r.stderr)
bad_search = [
    ("an unknown directive", "colour blue\n", "bad.search:1: unknown directive 'colour'"),
    ("an unknown option", "axis speed = 1 2\n", "bad.search:1: unknown option --speed"),
    ("a GPU kind without a price", f"fixed --policy=serial --model={model} --sla=10\naxis hw = {table} {fast}\n"
     f"cost {table} = 1\ntarget 5\n", f"bad.search:2: {fast} has no price"),
    ("a target and a budget", f"fixed --model=llama2-7b --ttft-slo=500\ncost gpu-h100 = 4\ntarget 5\nbudget 9\n",
     "bad.search:4: one goal"),
    ("SLOs capacity refuses", f"fixed --model=llama2-7b --ttft-slo=500 --percentile=100\ncost gpu-h100 = 4\n"
     "target 5\n", "bad.search:1: --percentile=100"),
    ("nothing left after pruning", "fixed --model=llama2-70b --ttft-slo=2000\naxis hw = gpu-a40\n"
     "cost gpu-a40 = 1\ntarget 1\n", "no configuration left after pruning"),
    ("a price of zero", "cost gpu-h100 = 0\n", "bad.search:1: a GPU-hour of gpu-h100 must cost a positive"),
]
never_db = os.path.join(td, "never.db")
for name, text, needle in bad_search:
    path = write("bad.search", text)
    out = os.path.join(td, "never.csv")
    r = sb("search", path, f"--db={never_db}", f"--out={out}")
    check(f"search bad input: {name} -> one line naming it, exit 2, nothing written or stored",
          r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
          not os.path.exists(out) and not os.path.exists(never_db), f"exit {r.returncode}: {r.stderr}")
r = sb("search", spec, f"--db={never_db}", "--part=4/3", f"--out={os.path.join(td, 'never.csv')}")
check("search bad input: a part out of range -> one line, exit 2, nothing written", r.returncode == 2 and
      "--part=4/3" in r.stderr and not os.path.exists(os.path.join(td, "never.csv")) and
      not os.path.exists(never_db), r.stderr)
# a database that cannot be written: refused before anything runs (no results file either)
r = sb("search", spec, f"--db={td}", f"--out={os.path.join(td, 'never.csv')}")
check("search bad input: a database path that is a directory -> one line, exit 2, nothing run", r.returncode == 2 and
      "not a regular file" in r.stderr and not os.path.exists(os.path.join(td, "never.csv")), r.stderr)

for sub in (["sweep"], ["merge"], ["capacity"], ["search"]):
    r = sb(*sub, "--help")
    check(f"{sub[0]} --help", r.returncode == 0 and "usage" in r.stdout)

shutil.rmtree(td, ignore_errors=True)
print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
