#!/usr/bin/env python3
"""Headers state the serving configuration an answer depends on, and capacity stores its answer
(issue 51, item 3), end to end:

- run's first line and JSON: for an LLM the TP degree, EP when set, the replicas, a disaggregated
  fleet's pools, the router when there are several replicas, the engine profile and the GPUs in
  total (never "1 worker"); TP 2, 2 replicas and a 1+1 split give three different headers;
- capacity's header and JSON the same, and its answer stored (--db, as run's) in capacities with
  its probes: the row read back equals the printed answer (the text's digits and the JSON's
  numbers, each parsed here), its configuration columns what the options ask (GPUs = TP x
  replicas, worked out here);
- search's configurations state theirs, as their capacity's own header does;
- a version-5 database upgraded to 7 by the first capacity stored into it, its runs kept; merge
  carries capacity answers and their probes, each once;
- --no-db stores nothing and creates no file; --db with --no-db is refused; a capacity that finds
  no rate stores nothing and leaves no file it created.
Usage: test_serving_headers.py SIMBATCH"""
import json
import math
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True          # nothing written into the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from case_log import check, finish  # noqa: E402

SB = os.path.abspath(sys.argv[1])
td = tempfile.mkdtemp(prefix="simbatch-headers-")
LLM = ["--model=llama2-7b"]
TARGETS = ["--ttft-slo=500", "--tpot-slo=50"]
# name, options, what they ask: tp, replicas, prefill and decode pools, the router (several replicas)
CONFIGS = [
    ("TP 2", ["--tp=2"], 2, 1, 0, 0, None),
    ("2 replicas", ["--replicas=2"], 1, 2, 0, 0, "round-robin"),
    ("a 1+1 split", ["--prefill-replicas=1", "--decode-replicas=1"], 1, 2, 1, 1, "round-robin"),
]


def sb(*args, cwd=td):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def expected_serving(tp, replicas, prefill, decode, router, engine=None, ep=1):
    return {"tp": tp, "ep": ep, "replicas": replicas, "prefill_replicas": prefill, "decode_replicas": decode,
            "router": router, "engine": engine, "gpus": tp * replicas}


def count(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


# ---- run: the first line and the JSON's serving object ----
heads = []
for name, opts, tp, reps, pre, dec, router in CONFIGS:
    r = sb(*LLM, *opts, "--rate=2", "--requests=40", "--no-db")
    head = r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else ""
    heads.append(head)
    pools = f"{pre} prefill + {dec} decode replicas" if pre else f"{reps} replica{'s' if reps > 1 else ''}"
    check(f"run header, {name}: states its replicas or pools, TP, router and GPUs, not workers",
          f"{pools} at TP {tp}" in head and f"{tp * reps} GPU" in head and "worker" not in head and
          ((f"behind {router}" in head) if router else "behind" not in head), (head, r.stderr[-300:]))
    r = sb(*LLM, *opts, "--rate=2", "--requests=40", "--no-db", "--json")
    got = json.loads(r.stdout).get("serving") if r.returncode == 0 else None
    check(f"run JSON, {name}: serving as the options ask", got == expected_serving(tp, reps, pre, dec, router),
          (got, r.stderr[-300:]))
check("run headers of TP 2, 2 replicas and a 1+1 split differ", len(set(heads)) == 3, heads)
r = sb("--model=llama2-7b", "--tp=2", "--replicas=2", "--engine=vllm-0.15", "--router=least-kv", "--rate=2",
       "--requests=40", "--no-db", "--json")
got = json.loads(r.stdout).get("serving") if r.returncode == 0 else None
check("run JSON: the engine profile and router named, GPUs = TP x replicas",
      got == expected_serving(2, 2, 0, 0, "least-kv", "vllm-0.15"), (got, r.stderr[-300:]))
r = sb("--model=mixtral-8x7b", "--tp=2", "--ep=2", "--rate=1", "--requests=20", "--no-db")
head = r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else ""
check("run header: expert parallelism when set", "at TP 2 EP 2, 2 GPUs" in head, (head, r.stderr[-300:]))
r = sb("--model=resnet50", "--policy=serial", "--workers=3", "--rate=100", "--requests=50", "--no-db", "--json")
got = json.loads(r.stdout) if r.returncode == 0 else {}
check("a node-level run keeps its workers", got.get("serving") == {"workers": 3} and got.get("workers") == 3, got)

# ---- capacity: header, JSON and the stored row, read back independently ----
db = os.path.join(td, "cap.db")
seconds = []
for name, opts, tp, reps, pre, dec, router in CONFIGS:
    r = sb("capacity", *LLM, *opts, *TARGETS, f"--db={db}", "--jobs=2", "--quiet")
    lines = r.stdout.splitlines()
    m = re.match(r"capacity (\d+(?:\.(\d+))?) req/s", lines[0]) if r.returncode == 0 and lines else None
    ident = re.search(r"stored as capacity (\d+)$", lines[1]) if m and len(lines) > 1 else None
    seconds.append(lines[1] if len(lines) > 1 else "")
    pools = f"{pre} prefill + {dec} decode replicas" if pre else f"{reps} replica{'s' if reps > 1 else ''}"
    check(f"capacity header, {name}: its configuration and targets",
          m and f"{pools} at TP {tp}" in lines[1] and f"{tp * reps} GPUs" in lines[1] and
          "TTFT 500 ms and TPOT 50 ms" in lines[1], (lines[:2], r.stderr[-300:]))
    if not (m and ident):
        check(f"capacity {name}: stored, its id printed", False, (lines, r.stderr[-300:]))
        continue
    con = sqlite3.connect(db)
    row = con.execute("select capacity_rps, tp, replicas, prefill_replicas, decode_replicas, router, gpus, "
                      "ttft_slo_ms, tpot_slo_ms, serving from capacities where capacity_id = ?",
                      (int(ident.group(1)),)).fetchone()
    con.close()
    digits = len(m.group(2) or "")
    check(f"capacity {name}: the stored answer is the printed one, to the digits printed",
          row is not None and f"{row[0]:.{digits}f}" == m.group(1), (row, lines[0]))
    check(f"capacity {name}: the stored configuration is what the options ask",
          row is not None and row[1:9] == (tp, reps, pre, dec, router, tp * reps, 500.0, 50.0) and row[9] in lines[1],
          (row, lines[1]))
check("capacity headers of TP 2, 2 replicas and a 1+1 split differ",
      len({re.sub(r"capacity \d+", "", s) for s in seconds}) == 3, seconds)

r = sb("capacity", *LLM, "--replicas=2", *TARGETS, f"--db={db}", "--jobs=2", "--json")
rep = json.loads(r.stdout) if r.returncode == 0 else {}
con = sqlite3.connect(db)
row = con.execute("select capacity_rps, bracket_lo_rps, bracket_hi_rps, band_lo_rps, band_hi_rps, estimate_rps, "
                  "requests, warmup, seeds, first_seed, allowed_miss_fraction, confidence, report_json "
                  "from capacities where capacity_id = ?", (rep.get("capacity_id") or -1,)).fetchone()
probes = con.execute("select rate_rps, pass from capacity_probes where capacity_id = ? order by probe",
                     (rep.get("capacity_id") or -1,)).fetchall()
con.close()
llm = rep.get("llm", {})
want = (rep.get("capacity_rps"), *rep.get("bracket_rps", [None, None]), *(llm.get("hw_band_rps") or [None, None]),
        rep.get("estimate_rps"), rep.get("requests"), rep.get("warmup"), rep.get("seeds"), rep.get("first_seed"),
        llm.get("allowed_miss_fraction"), llm.get("confidence"))
# the answer and bracket are the rates simulated (6 digits), exact; the rest to the JSON's 10 digits
check("capacity --json: the stored row is the JSON's answer, bracket, band and requests",
      row is not None and row[:3] == want[:3] and row[6:10] == want[6:10] and
      all(math.isclose(a, b, rel_tol=1e-9) for a, b in zip(row[3:6] + row[10:12], want[3:6] + want[10:12])),
      (row, want))
check("capacity --json: a probe row a rate simulated, in order", row is not None and
      [(p["rate_rps"], p["pass"]) for p in rep.get("points", [])] == [(a, bool(b)) for a, b in probes], probes)
stored = json.loads(row[12]) if row else {}
check("capacity --json: the stored report is the printed one without its id",
      stored.get("capacity_id", 0) is None and {**stored, "capacity_id": rep.get("capacity_id")} == rep)
check("capacity JSON: serving as the options ask", rep.get("serving") == expected_serving(1, 2, 0, 0, "round-robin"),
      rep.get("serving"))

r = sb("capacity", "--policy=serial", "--model=resnet50", "--workers=2", "--sla=20", "--requests=2000",
       f"--db={db}", "--jobs=2", "--json")
rep = json.loads(r.stdout) if r.returncode == 0 else {}
con = sqlite3.connect(db)
row = con.execute("select workers, tp, gpus, sla_ms, quantile, ttft_slo_ms, capacity_rps from capacities "
                  "where capacity_id = ?", (rep.get("capacity_id") or -1,)).fetchone()
con.close()
check("a node-level capacity: its workers and SLA stored, an LLM's columns NULL",
      row == (2, None, None, 20.0, 0.99, None, rep.get("capacity_rps")) and rep.get("serving") == {"workers": 2},
      (row, rep.get("serving"), r.stderr[-300:]))

# ---- search: each configuration's serving from its options alone, as its capacity's own header has it ----
spec = os.path.join(td, "t.search")
with open(spec, "w") as f:
    f.write("fixed --model=llama2-7b --ttft-slo=500 --tpot-slo=50\naxis tp = 1 2\naxis replicas = 1 2 1+1\n"
            "cost gpu-h100 = 2\ntarget 30\n")
r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 't.csv')}", "--exhaustive", "--quiet", "--json")
rows = json.loads(r.stdout).get("results", []) if r.returncode == 0 else []
agree = len(rows) == 6
for row in rows:
    opts = ["--" + w.replace("replicas=1+1", "prefill-replicas=1 --decode-replicas=1") for w in row["config"].split()]
    opts = " ".join(opts).split()
    c = sb("capacity", *LLM, *opts, *TARGETS, "--no-db", "--json", "--quiet", "--jobs=2")
    own = json.loads(c.stdout).get("serving") if c.returncode == 0 else None
    agree = agree and row.get("serving") == own and row.get("gpus") == (own or {}).get("gpus")
check("search: each configuration's serving (JSON) is its capacity's, GPUs as the search prices them", agree, rows)
r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 't.csv')}", "--exhaustive", "--quiet")
check("search text: a front row states its configuration",
      "tp=2 replicas=2 (2 replicas at TP 2 behind round-robin, 4 GPUs)" in r.stdout, r.stdout[-600:])

# ---- a version-5 database, upgraded by the first capacity stored ----
old = os.path.join(td, "v5.db")
r = sb(*LLM, "--rate=2", "--requests=30", f"--db={old}", "--quiet")
con = sqlite3.connect(old)
con.executescript("drop table capacity_probes; drop table capacities; drop table run_metric_values;"
                  "drop table metric_names; update simbatch_meta set value = '5' where key = 'schema_version';")
con.close()
r = sb("capacity", *LLM, *TARGETS, f"--db={old}", "--jobs=2", "--quiet")
check("a version-5 database: upgraded to 7, the capacity stored, its run kept",
      r.returncode == 0 and count(old, "select value from simbatch_meta where key = 'schema_version'") == "7" and
      count(old, "select count(*) from capacities") == 1 and count(old, "select count(*) from runs") == 1,
      r.stderr[-300:])

# ---- merge carries capacity answers with their probes, each once ----
merged = os.path.join(td, "merged.db")
r = sb("merge", merged, db, old)
r2 = sb("merge", merged, old)
distinct = {}                      # an answer is its options and report: the same capacity run twice is one
for path in (db, old):
    con = sqlite3.connect(path)
    for ident, probes_of in con.execute("select run_options || report_json, (select count(*) from capacity_probes p "
                                        "where p.capacity_id = c.capacity_id) from capacities c"):
        distinct[ident] = probes_of
    con.close()
want, want_probes = len(distinct), sum(distinct.values())
check("merge: every distinct capacity answer and its probes copied once, a second merge adding none",
      r.returncode == 0 and r2.returncode == 0 and count(merged, "select count(*) from capacities") == want and
      count(merged, "select count(*) from capacity_probes") == want_probes and
      "0 capacity answers added, 1 already present" in r2.stdout, (r.stdout, r2.stdout, r.stderr))

# ---- --no-db, and nothing left by a failed capacity ----
fresh = os.path.join(td, "fresh")
os.mkdir(fresh)
r = sb("capacity", *LLM, *TARGETS, "--no-db", "--jobs=2", "--quiet", cwd=fresh)
check("capacity --no-db: the answer printed, no database created (not even the default)",
      r.returncode == 0 and r.stdout.startswith("capacity ") and "stored as" not in r.stdout and
      os.listdir(fresh) == [], (os.listdir(fresh), r.stderr[-300:]))
before = count(db, "select count(*) from capacities")
r = sb("capacity", *LLM, *TARGETS, "--no-db", f"--db={db}", "--quiet")
check("capacity --no-db with --db: refused, one line, exit 2",
      r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--no-db" in r.stderr, r.stderr)
r = sb("capacity", *LLM, "--ttft-slo=1", f"--db={db}", "--jobs=2", "--quiet")
gone = os.path.join(td, "gone.db")
r2 = sb("capacity", *LLM, "--ttft-slo=1", f"--db={gone}", "--jobs=2", "--quiet")
check("a capacity finding no rate stores nothing, and leaves no database it created",
      r.returncode == 1 and r2.returncode == 1 and count(db, "select count(*) from capacities") == before and
      not os.path.exists(gone), (r.stderr, r2.stderr))

shutil.rmtree(td)
finish()
