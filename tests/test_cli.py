#!/usr/bin/env python3
"""End-to-end tests of the simbatch program: the command-line and JSON
contract of DESIGN.md section 3, bad input (exit 2, one line on stderr, no
database rows), determinism, the per-request CSV and the results database.
Usage: test_cli.py PATH/TO/simbatch"""
import csv
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
failures = []


def sb(*args, timeout=300):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=timeout)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def run_count(db):
    if not os.path.exists(db):
        return 0
    con = sqlite3.connect(db)
    try:
        return con.execute("select count(*) from runs").fetchone()[0]
    finally:
        con.close()


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


td = tempfile.mkdtemp(prefix="simbatch-cli-")
db = os.path.join(td, "r.db")
SMALL = ["--requests=300", "--rate=200"]

# ---- a good run, stored ----
r = sb("--policy=graph", "--model=transformer", "--hw=npu", "--rate=500", "--requests=2000", "--seed=3",
       f"--db={db}", "--json")
check("run exits 0", r.returncode == 0, r.stderr)
j = json.loads(r.stdout) if r.returncode == 0 else {}
for k in ["policy", "model", "hw", "rate_rps", "seed", "requests", "completed", "throughput_rps", "latency_ms",
          "queue_ms", "sla_ms", "sla_violation_rate", "mean_batch", "events", "wall_s", "run_id"]:
    check(f"json has {k}", k in j)
lat = j.get("latency_ms", {})
check("percentiles ordered", lat and lat["p50"] <= lat["p90"] <= lat["p95"] <= lat["p99"] <= lat["p999"] <= lat["max"])
check("all completed", j.get("completed") == 2000 == j.get("requests"))
check("stdout is one line of JSON", r.stdout.count("\n") == 1)
check("one run stored", run_count(db) == 1)
con = sqlite3.connect(db)
rid = j.get("run_id")
check("cdf has 1000 quantiles", con.execute("select count(*) from run_cdf where run_id=?", (rid,)).fetchone()[0] == 1000)
cfg = dict(con.execute("select key, value from run_config where run_id=?", (rid,)).fetchall())
check("config stores every option", cfg.get("policy") == "graph" and cfg.get("seed") == "3" and cfg.get("rate") == "500"
      and cfg.get("effective.max-batch") == "64", str(cfg))
row = con.execute("select policy, model, hw, seed, completed, code_version from runs where run_id=?", (rid,)).fetchone()
check("runs row", row[:5] == ("graph", "transformer", "npu", 3, 2000) and row[5], str(row))
p99 = con.execute("select p99_ms from run_metrics where run_id=?", (rid,)).fetchone()[0]
check("stored p99 equals printed", abs(p99 - lat.get("p99", -1)) < 1e-6 * max(1, p99))
con.close()

# ---- determinism ----
def strip(out):
    d = json.loads(out)
    d.pop("wall_s", None)
    d.pop("run_id", None)
    return d

a = sb("--policy=graph", "--window=5", "--model=gnmt", "--requests=3000", "--rate=300", "--seed=9", "--no-db", "--json")
b = sb("--policy=graph", "--window=5", "--model=gnmt", "--requests=3000", "--rate=300", "--seed=9", "--no-db", "--json")
check("same seed, same JSON", a.returncode == 0 and strip(a.stdout) == strip(b.stdout), a.stderr)
c = sb("--policy=graph", "--window=5", "--model=gnmt", "--requests=3000", "--rate=300", "--seed=10", "--no-db", "--json")
check("other seed, other JSON", c.returncode == 0 and strip(a.stdout) != strip(c.stdout))

# ---- requests-out ----
out_csv = os.path.join(td, "req.csv")
r = sb("--policy=serial", "--model=lstm", "--requests=500", "--rate=100", "--no-db", f"--requests-out={out_csv}", "--quiet")
check("requests-out run", r.returncode == 0 and r.stdout == "", r.stderr)
rows = list(csv.DictReader(open(out_csv))) if r.returncode == 0 else []
check("requests-out header and rows", len(rows) == 500 and list(rows[0].keys()) ==
      ["id", "arrival_s", "start_s", "finish_s", "input_len", "output_len"])
check("requests-out times ordered", all(float(x["arrival_s"]) <= float(x["start_s"]) < float(x["finish_s"]) for x in rows))
check("requests-out ids in order", [int(x["id"]) for x in rows] == list(range(500)))

# ---- a trace replays arrivals and lengths, ids are row order ----
trace = os.path.join(td, "t.csv")
write(trace, "# a comment\narrival_s,input_len,output_len\n0.0,3,0\n0.001,2,0\n0.5,4,0\n")
r = sb("--policy=serial", "--model=lstm", f"--trace={trace}", "--no-db", f"--requests-out={out_csv}", "--json")
rows = list(csv.DictReader(open(out_csv))) if r.returncode == 0 else []
check("trace replay", r.returncode == 0 and [x["input_len"] for x in rows] == ["3", "2", "4"] and
      float(rows[2]["arrival_s"]) == 0.5, r.stderr)

# ---- bad input: exit 2, one line on stderr, nothing stored ----
bad_trace = os.path.join(td, "bad_trace.csv")
write(bad_trace, "arrival_s,input_len,output_len\n0.1,3,0\n0.05,2,0\n")
# the Azure LLM trace's own format (DESIGN.md 3b): CRLF, arrivals after the first timestamp
azure = os.path.join(td, "azure.csv")
write(azure, "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.6805900,374,44\r\n"
             "2023-11-16 18:15:50.9951690,396,109\r\n")
r = sb("--policy=serial", "--model=seq2seq", f"--trace={azure}", "--no-db", f"--requests-out={out_csv}", "--json")
rows = list(csv.DictReader(open(out_csv))) if r.returncode == 0 else []
check("Azure trace replay", r.returncode == 0 and [x["arrival_s"] for x in rows] == ["0.000000000", "4.314579000"] and
      [x["input_len"] for x in rows] == ["374", "396"] and [x["output_len"] for x in rows] == ["44", "109"],
      r.stderr + str(rows))
# an LLM run (DESIGN.md 3b): the token figures in --json; a row beyond the context refused, or dropped on request
llm_trace = os.path.join(td, "llm.csv")
write(llm_trace, "arrival_s,input_len,output_len\n0,20,5\n0.001,500,20\n0.002,30,3\n")
tpu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hwmodels", "tpu_v1_like.npu")
small_mem = os.path.join(td, "small.npu")
write(small_mem, "kind = npu\nmem_capacity_gb = 0.0007\n")    # 0.7 MB: llm-tiny's 0.62 MB of weights, 151 tokens of KV
r = sb("--policy=chunked", "--model=llm-tiny", f"--hw={tpu}", f"--trace={llm_trace}", "--no-db", "--json")
check("LLM beyond the context refused", r.returncode == 2 and "data row 2" in r.stderr and "context" in r.stderr, r.stderr)
r = sb("--policy=chunked", "--model=llm-tiny", f"--hw={tpu}", f"--trace={llm_trace}", "--over-context=drop", "--no-db", "--json",
       "--ttft-slo=1000", "--tpot-slo=100")
j = json.loads(r.stdout) if r.returncode == 0 else {}
check("LLM run: token figures and the dropped row in --json",
      j.get("completed") == 2 and j.get("dropped_over_context") == 1 and
      all(k in j for k in ("ttft_ms", "tpot_ms", "goodput_rps", "preemptions", "kv_peak_fraction")) and
      all(q in j["ttft_ms"] for q in ("mean", "p50", "p90", "p99")), r.stderr + r.stdout)
# an LLM run in the database: its TTFT and TPOT CDFs recomputed from its own request rows
# (linear interpolation between order statistics, as run_cdf), the inter-token CDF's p99 and
# maximum as --json reports them, and compare judging on one of them
llm_db = os.path.join(td, "llm.db")


def quantile(sorted_vals, q):
    h = (len(sorted_vals) - 1) * q
    lo = int(h)
    return sorted_vals[lo] + (h - lo) * (sorted_vals[min(lo + 1, len(sorted_vals) - 1)] - sorted_vals[lo])


llm_runs = [sb(f"--policy={p}", "--model=llm-tiny", f"--hw={tpu}", "--rate=400", "--requests=400", f"--db={llm_db}",
               "--db-requests", "--json", "--input-len=uniform:4:60", "--output-len=uniform:1:30") for p in ("continuous", "chunked")]
check("LLM runs stored", all(x.returncode == 0 for x in llm_runs), "".join(x.stderr for x in llm_runs))
if all(x.returncode == 0 for x in llm_runs):
    jl = json.loads(llm_runs[0].stdout)
    con = sqlite3.connect(llm_db)
    reqs = con.execute("select arrival_s, first_token_s, finish_s, output_len from run_requests where run_id = ?",
                       (jl["run_id"],)).fetchall()
    ttft = sorted((f - a) * 1e3 for a, f, e, o in reqs)
    tpot = sorted((e - f) / (o - 1) * 1e3 for a, f, e, o in reqs if o > 1)
    stored = {m: [v for (v,) in con.execute("select value_ms from run_token_cdf where run_id = ? and metric = ?"
                                          " order by quantile", (jl["run_id"], m))] for m in ("ttft", "tpot", "itl")}
    want = {"ttft": [quantile(ttft, i / 1000) for i in range(1, 1001)],
            "tpot": [quantile(tpot, i / 1000) for i in range(1, 1001)]}
    # first_token_s is stored to the ns as seconds: 1e-6 ms of rounding
    for m in ("ttft", "tpot"):
        check(f"stored {m} CDF = the rows' quantiles", len(stored[m]) == 1000 and
              max(abs(x - y) for x, y in zip(stored[m], want[m])) < 1e-5,
              f"{stored[m][:3]} vs {want[m][:3]}")
    check("stored itl CDF: row 990 the p99, row 1000 the max", len(stored["itl"]) == 1000 and
          abs(stored["itl"][989] - jl["itl_ms"]["p99"]) < 1e-9 and abs(stored["itl"][999] - jl["itl_ms"]["max"]) < 1e-9 and
          stored["itl"] == sorted(stored["itl"]), str(stored["itl"][985:]))
    con.close()
    jc = json.loads(llm_runs[1].stdout)
    r = sb("compare", f"--db={llm_db}", str(jl["run_id"]), str(jc["run_id"]), "--metric=ttft", "--json")
    jj = json.loads(r.stdout) if r.returncode in (0, 1) else {}
    check("compare --metric=ttft judges the TTFT CDF", jj.get("metric") == "ttft" and
          abs(jj["quantiles"][0]["base_ms"] - quantile(ttft, 0.5)) < 1e-5, r.stdout + r.stderr)
    r = sb("compare", f"--db={llm_db}", str(jl["run_id"]), str(jc["run_id"]), "--metric=e2e")
    check("compare --metric unknown: exit 2", r.returncode == 2 and "--metric" in r.stderr, r.stderr)
# an LLM's tasks in --timeline-out are iterations (it has no node types to name them by)
tl = os.path.join(td, "llm-timeline.json")
r = sb("--model=llm-tiny", "--hw=gpu-h100-roofline", "--rate=100", "--requests=5", "--no-db", f"--timeline-out={tl}",
       "--json")
allev = json.load(open(tl))["traceEvents"] if r.returncode == 0 else []
ev = [e for e in allev if e.get("ph") == "X"]
check("an LLM's timeline: every task an iteration", ev and all(e["name"] == e["cat"] == "iteration" for e in ev), r.stderr)
# and the KV cache's occupancy as a counter track: each iteration's blocks from its start, none from its end
cnt = [e for e in allev if e.get("ph") == "C" and e["name"] == "kv_blocks_held"]
jt = json.loads(r.stdout) if r.returncode == 0 else {}
held_us = sum(cnt[2 * i]["args"]["device 0"] * (e["ts"] + e["dur"] - e["ts"]) for i, e in enumerate(ev)) if len(cnt) == 2 * len(ev) else -1
check("an LLM's timeline: a kv_blocks_held counter per iteration, its time integral the JSON's kv_mean_fraction",
      len(cnt) == 2 * len(ev) and all(cnt[2 * i]["ts"] == e["ts"] and cnt[2 * i + 1]["args"]["device 0"] == 0
                                      for i, e in enumerate(ev)) and
      abs(held_us / (jt["sim_time_s"] * 1e6 * jt["policy_stats"]["kv_blocks"]) - jt["kv_mean_fraction"]) < 1e-6 * jt["kv_mean_fraction"],
      str(cnt[:4]) + r.stdout[:300])
# no --policy: an LLM runs continuous (lazy batches nodes, which an LLM has none of), and is stored so
r = sb("--model=llm-tiny", "--hw=gpu-h100-roofline", "--rate=100", "--requests=20", f"--db={llm_db}", "--json")
jd = json.loads(r.stdout) if r.returncode == 0 else {}
con = sqlite3.connect(llm_db)
stored = con.execute("select value from run_config where run_id = ? and key = 'policy'", (jd.get("run_id", -1),)).fetchone()
con.close()
check("an LLM's default policy is continuous", jd.get("policy") == "continuous" and stored == ("continuous",),
      r.stderr + str(stored))
r = sb("model-info", "--model=llm-tiny", f"--hw={tpu}", "--input-len=20", "--output-len=5", "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {}
# llm-tiny: 2 layers x 2 KV heads x 16 x 2 x 4 B a token; one prefill and 4 decode steps, the whole at least the prefill
check("model-info of an LLM", j.get("llm", {}).get("kv_bytes_per_token") == 512 and j.get("nodes") == [] and
      j["total_ms"] > j["llm"]["prefill_ms"] > 0 and j["llm"]["first_decode_ms"] > 0, r.stdout + r.stderr)
# The Transformer's one-pass encoder as 4 requests of 7 tokens run it (Vaswani et al. 2017: projections
# M = 4 x 7 = 28 rows of d = 512; per request and head, scores 7 x 64 x 7 and context 7 x 7 x 64, 8 heads x 4)
r = sb("model-info", "--model=transformer", "--input-len=7", "--output-len=3", "--batch=4", "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {"nodes": [{}]}
enc = j["nodes"][0]
check("model-info --gemms of a pass node",
      enc.get("type") == "pass" and enc.get("repeat") == 1 and
      [(g["m"], g["k"], g["n"], g["runs"]) for g in enc.get("gemms", [])] ==
      [(28, 512, 1536, 1), (28, 512, 512, 1), (28, 512, 2048, 1), (28, 2048, 512, 1), (7, 64, 7, 32), (7, 7, 64, 32)],
      r.stdout + r.stderr)
# scripts/trace-lengths: a trace's lengths as file: distributions (the excerpt's 12 rows, counted by hand)
here = os.path.dirname(os.path.abspath(__file__))
r = subprocess.run([sys.executable, os.path.join(here, "..", "scripts", "trace-lengths"),
                    os.path.join(here, "data", "azure-llm-2023-conv-head.csv"), os.path.join(td, "ex"), "--max-total=500"],
                   capture_output=True, text=True)
rows = {}
for name in ("prompt", "output"):
    p = os.path.join(td, f"ex-{name}.csv")
    rows[name] = [l.strip() for l in open(p) if l.strip() and not l.startswith("#")] if os.path.exists(p) else []
# rows within 500 tokens: all but 396+109, 879+55, 1313+142 and 394+124: 8 rows, prompt 91 twice
check("trace-lengths", r.returncode == 0 and rows["prompt"] == ["length,weight", "91,2", "209,1", "242,1", "374,1",
                                                                 "381,1", "388,1", "394,1"] and
      rows["output"] == ["length,weight", "14,1", "16,2", "44,1", "59,1", "84,2", "152,1"], r.stderr + str(rows))
bad_azure = os.path.join(td, "bad_azure.csv")
write(bad_azure, "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.6805900,374,0\r\n")
bad_model = os.path.join(td, "bad.model")
write(bad_model, "model bad\nsource test\nnode a static gemm=1,2\n")
bad_table = os.path.join(td, "bad_table.csv")
write(bad_table, "node,batch,latency_s\n*,1,0.001\n*,two,0.002\n")
not_db = os.path.join(td, "notes.txt")
write(not_db, "this is not a database\n" * 100)
foreign_db = os.path.join(td, "foreign.db")
fcon = sqlite3.connect(foreign_db)
fcon.execute("create table other(x)")
fcon.commit()
fcon.close()
before = run_count(db)
cases = {
    "unknown policy": ["--policy=nope"],
    "zero rate": ["--rate=0"],
    "non-numeric rate": ["--rate=fast"],
    "negative seed": ["--seed=-1x"],
    "unknown option": ["--no-such-option"],
    "unknown model": ["--model=nope"],
    "missing hw file": ["--hw=" + os.path.join(td, "missing.csv")],
    "missing trace": ["--trace=" + os.path.join(td, "missing.csv")],
    "malformed trace": ["--model=lstm", f"--trace={bad_trace}"],
    "Azure trace with zero output tokens": ["--model=seq2seq", f"--trace={bad_azure}"],
    "an LLM model under a node-level policy": ["--model=llm-tiny", "--policy=lazy"],
    "a node-level model under an LLM policy": ["--model=seq2seq", "--policy=continuous"],
    "a non-positive TTFT SLO": ["--model=llm-tiny", "--policy=continuous", "--ttft-slo=0"],
    "a non-positive TPOT SLO": ["--model=llm-tiny", "--policy=continuous", "--tpot-slo=-5"],
    "a KV block too large for the memory": ["--model=llm-tiny", "--policy=continuous", f"--hw={small_mem}",
                                           "--block-size=1024"],
    "a memory that cannot hold a request": ["--model=llm-tiny", "--policy=continuous", f"--hw={small_mem}",
                                           "--input-len=fixed:200", "--output-len=fixed:20"],
    "weights beyond the memory": ["--model=llama2-7b", "--policy=continuous", f"--hw={tpu}"],
    "an LLM on a device with no memory capacity": ["--model=llm-tiny", "--policy=continuous", "--hw=npu"],
    "an unknown --over-context": ["--model=llm-tiny", "--policy=continuous", "--over-context=clip"],
    "--tp not a power of two": ["--model=llama2-7b", "--tp=3"],
    "--tp past 8": ["--model=llama2-7b", "--tp=16"],
    "--tp that does not divide the heads": ["--model=llm-tiny", "--tp=8", "--hw=gpu-h100"],
    "--tp beyond what the profile measured": ["--model=phi-2", "--tp=2"],
    "--tp on a GPU with no measured all-reduce": ["--model=llama2-7b", "--hw=gpu-a40", "--tp=2"],
    "--tp on a one-device model": ["--model=llama2-7b", "--hw=gpu-h100-roofline", "--tp=2"],
    "weights that need more GPUs": ["--model=llama2-70b"],
    "a shape no profile holds": ["--model=llama3-8b", "--hw=gpu-h100"],
    "malformed model": [f"--model={bad_model}"],
    "malformed table": ["--model=lstm", f"--hw={bad_table}"],
    "bad length spec": ["--model=lstm", "--input-len=uniform:9:2"],
    "requests and duration": ["--requests=10", "--duration=1"],
    "saturating open-ended rate": ["--policy=serial", "--model=resnet50", "--rate=1e6", "--duration=10"],
    "warmup swallows all": ["--requests=10", "--warmup=10"],
    "zero workers": ["--workers=0"],
    "bad window": ["--window=-1"],
    "simulated time beyond int64 ns": ["--rate=1e-6", "--requests=22000"],
}
for name, args in cases.items():
    extra = [] if any(a.startswith("--requests") or a.startswith("--duration") for a in args) else SMALL
    r = sb(*args, *extra, f"--db={db}")
    lines = r.stderr.strip().splitlines()
    check(f"bad input: {name} -> exit 2 with one line", r.returncode == 2 and len(lines) == 1 and r.stdout == "",
          f"exit {r.returncode}, stderr {r.stderr!r}")
for name, path in {"db is not sqlite": not_db, "db is another application's": foreign_db,
                   "db in missing directory": os.path.join(td, "no", "such", "dir", "r.db")}.items():
    r = sb(*SMALL, f"--db={path}")
    check(f"bad input: {name} -> exit 2", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
          f"exit {r.returncode}, stderr {r.stderr!r}")
check("no partial rows after failures", run_count(db) == before)
check("malformed trace names file and line", "bad_trace.csv:3" in sb("--model=lstm", f"--trace={bad_trace}", "--no-db").stderr)
check("malformed model names file and line", "bad.model:3" in sb(f"--model={bad_model}", "--no-db").stderr)
check("malformed table names file and line", "bad_table.csv:3" in sb("--model=lstm", f"--hw={bad_table}", "--no-db").stderr)

# ---- a table hardware file drives the run ----
table = os.path.join(td, "table.csv")
write(table, "node,batch,latency_s\n*,1,0.001\n*,64,0.004\n")
r = sb("--policy=graph", "--model=resnet50", f"--hw={table}", *SMALL, "--no-db", "--json")
check("table hw run", r.returncode == 0, r.stderr)
r = sb("--policy=graph", "--model=resnet50", f"--hw={table}", "--max-batch=128", *SMALL, "--no-db")
check("table hw: batch beyond the table refused", r.returncode == 2, r.stderr)

# ---- inspection subcommands ----
r = sb("model-info", "--model=resnet50", "--hw=npu", "--batch=1", "--json")
mi = json.loads(r.stdout) if r.returncode == 0 else {}
check("model-info json", r.returncode == 0 and {"model", "hw", "batch", "input_len", "output_len", "total_ms", "nodes"} <= set(mi))
check("model-info nodes", mi and all({"name", "type", "repeat", "ms", "bound"} <= set(n) for n in mi["nodes"]))
check("model-info total is the sum", mi and abs(sum(n["ms"] * n["repeat"] for n in mi["nodes"]) - mi["total_ms"]) < 1e-6 * mi["total_ms"])
r = sb("hw-info", "--hw=npu", "--gemm=64,1024,4096", "--json")
hi = json.loads(r.stdout) if r.returncode == 0 else {}
check("hw-info json", r.returncode == 0 and {"hw", "gemm", "dataflow", "cycles", "compute_cycles", "memory_cycles", "ms", "utilization"} <= set(hi))
# double buffering overlaps transfers with compute, but a first fetch stays exposed
check("hw-info cycles between the max and the sum", hi and max(hi["compute_cycles"], hi["memory_cycles"])
      <= hi["cycles"] <= hi["compute_cycles"] + hi["memory_cycles"])
check("hw-info bad gemm", sb("hw-info", "--gemm=1,2").returncode == 2)
for what in ("models", "policies", "hw"):
    r = sb("list", what)
    check(f"list {what}", r.returncode == 0 and r.stdout.strip() != "")
check("list models has the five", all(m in sb("list", "models").stdout.split() for m in
                                      ("resnet50", "gnmt", "transformer", "lstm", "seq2seq")))
for sub in ([], ["run"], ["list"], ["model-info"], ["hw-info"]):
    r = sb(*sub, "--help")
    check(f"{' '.join(sub) or 'simbatch'} --help", r.returncode == 0 and "usage" in r.stdout)

# ---- NPU configuration files, dataflows, per-GEMM reports, batch sweeps ----
hwdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hwmodels")
table1 = os.path.join(hwdir, "table1.npu")
r = sb("hw-info", f"--hw={table1}", "--gemm=64,1024,4096", "--json")
check("hw-info --hw=FILE is Table I", r.returncode == 0 and json.loads(r.stdout)["cycles"] == hi.get("cycles"), r.stderr)
r = sb("--policy=graph", "--model=resnet50", f"--hw={os.path.join(hwdir, 'tpu_v1_like.npu')}", *SMALL, "--no-db", "--json")
check("run on an NPU configuration file", r.returncode == 0, r.stderr)
bad_npu = os.path.join(td, "bad.npu")
write(bad_npu, "kind = npu\n# rows below\nrows = many\n")
r = sb("hw-info", f"--hw={bad_npu}", "--gemm=1,2,3")
check("malformed NPU config: exit 2, file, line and key",
      r.returncode == 2 and f"{bad_npu}:3: key 'rows'" in r.stderr and r.stderr.count("\n") == 1, r.stderr)
write(bad_npu, "kind = npu\nrowz = 4\n")
r = sb("--model=resnet50", f"--hw={bad_npu}", "--requests=10", "--no-db")
check("unknown NPU config key: exit 2", r.returncode == 2 and "bad.npu:2: unknown key 'rowz'" in r.stderr, r.stderr)
r = sb("model-info", "--model=vgg16", "--dataflow=os", "--json")
mo = json.loads(r.stdout) if r.returncode == 0 else {}
check("model-info --dataflow", mo.get("dataflow") == "os", r.stderr)
check("model-info conv provenance", mo and mo["nodes"][0]["gemms"][0].get("conv", {}).get("out") == [224, 224]
      and {"cycles", "utilization", "bound"} <= set(mo["nodes"][0]["gemms"][0]))
r = sb("model-info", "--model=mobilenet", "--gemms")
check("model-info --gemms prints im2col shapes", r.returncode == 0 and "im2col of conv 112x112x32" in r.stdout, r.stderr)
check("model-info --dataflow on a table", sb("model-info", "--model=resnet50", f"--hw={table}", "--dataflow=os").returncode == 2)
check("model-info bad --dataflow", sb("model-info", "--model=resnet50", "--dataflow=xs").returncode == 2)
r = sb("hw-info", "--hw=npu", "--model=lstm", "--sweep-batch", "--max-batch=256", "--json")
sw = json.loads(r.stdout) if r.returncode == 0 else {}
check("hw-info --sweep-batch json", sw.get("batches") == [1, 2, 4, 8, 16, 32, 64, 128, 256]
      and len(sw["nodes"]) == 1 and {"latency_ms", "throughput_per_s", "saturation_batch"} <= set(sw["graph"]), r.stderr)
lat = sw.get("nodes", [{}])[0].get("latency_ms", [])
check("sweep latency never falls with batch", lat and all(a <= b for a, b in zip(lat, lat[1:])))
r = sb("hw-info", "--hw=npu", "--model=resnet50", "--sweep-batch", "--node=fc1000", "--max-batch=8")
check("hw-info --sweep-batch text", r.returncode == 0 and "node fc1000" in r.stdout and "node conv1 " not in r.stdout, r.stderr)
check("hw-info --sweep-batch needs --model", sb("hw-info", "--sweep-batch").returncode == 2)
# "95% at batch": one definition (the smallest swept batch whose throughput is at least 95% of the
# best over batches 1 .. the sweep's largest), its range named, on a table whose answer, by hand,
# depends on the range. Throughput (batch / latency) at 1, 2, 4, 8, 16, 32: 1000, 2000, 3333.3,
# 4210.5, 4705.9, 4848.5 /s. Over 1-8 the best is 4210.5, 95% of it 4000: first reached at 8.
# Over 1-32 the best is 4848.5, 95% of it 4606.1: 4210.5 at 8 falls short, 4705.9 at 16 meets it.
sat_table = os.path.join(td, "saturation.csv")
with open(sat_table, "w") as f:
    f.write("node,batch,latency_s\n*,1,0.001\n*,2,0.001\n*,4,0.0012\n*,8,0.0019\n*,16,0.0034\n*,32,0.0066\n")
for max_b, want in ((8, 8), (32, 16)):
    r = sb("hw-info", "--hw=" + sat_table, "--model=resnet50", "--sweep-batch", f"--max-batch={max_b}",
           "--node=fc1000", "--json")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    node = (j.get("nodes") or [{}])[0]
    check(f"hw-info --sweep-batch over 1-{max_b}: 95% of the best first at batch {want}, the range in the JSON",
          node.get("saturation_batch") == want and j["graph"].get("saturation_batch") == want and
          j.get("saturation_max_batch") == max_b and j.get("saturation_share") == 0.95, (r.stderr, j))
    r = sb("hw-info", "--hw=" + sat_table, "--model=resnet50", "--sweep-batch", f"--max-batch={max_b}",
           "--node=fc1000")
    check(f"hw-info --sweep-batch text over 1-{max_b} names the range",
          f"95% of its maximum over batches 1-{max_b} " in r.stdout and f"at batch {want}\n" in r.stdout, r.stdout)

check("hw-info --sweep-batch unknown node", sb("hw-info", "--model=lstm", "--sweep-batch", "--node=x").returncode == 2)

# ---- a trace replayed faster, and its (prompt, output) pairs drawn jointly at any rate (issue 34) ----
azure = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "azure-llm-2023-conv-head.csv")
rows = {}
for k, speed in (("once", []), ("x4", ["--trace-speedup=4"])):
    out = os.path.join(td, f"speed-{k}.csv")
    r = sb("--model=llama2-7b", f"--trace={azure}", *speed, "--no-db", "--quiet", f"--requests-out={out}")
    rows[k] = list(csv.DictReader(open(out))) if r.returncode == 0 else []
check("--trace-speedup=4: every request arrives at a quarter of its recorded time, row by row",
      len(rows["once"]) == 12 and len(rows["x4"]) == 12 and
      all(abs(float(b["arrival_s"]) - float(a["arrival_s"]) / 4) < 1e-9 and a["input_len"] == b["input_len"]
          for a, b in zip(rows["once"], rows["x4"])), str(rows["x4"][:3]))
trace_pairs = set()
for line in open(azure).read().splitlines()[1:]:
    f = line.split(",")
    trace_pairs.add((int(f[1]), int(f[2])))
out = os.path.join(td, "pairs.csv")
r = sb("--model=llama2-7b", f"--trace={azure}", "--trace-pairs", "--rate=20", "--requests=2000", "--no-db", "--quiet",
       f"--requests-out={out}")
got = list(csv.DictReader(open(out))) if r.returncode == 0 else []
drawn = [(int(g["input_len"]), int(g["output_len"])) for g in got]
gaps = [float(b["arrival_s"]) - float(a["arrival_s"]) for a, b in zip(got, got[1:])]
check("--trace-pairs: every request's prompt and output are one row of the trace, rows drawn throughout",
      len(drawn) == 2000 and all(p in trace_pairs for p in drawn) and len(set(drawn)) == len(trace_pairs), r.stderr)
check("--trace-pairs: arrivals at --rate, not the trace's (mean gap within 10% of 1/20 s)",
      gaps and abs(sum(gaps) / len(gaps) / 0.05 - 1) < 0.1, str(sum(gaps) / max(len(gaps), 1)))
for name, args in (("--trace-speedup without --trace", ["--trace-speedup=2"]),
                   ("--trace-pairs without --trace", ["--trace-pairs"]),
                   ("--trace-speedup of 0", [f"--trace={azure}", "--trace-speedup=0"]),
                   ("--trace-speedup with --trace-pairs", [f"--trace={azure}", "--trace-pairs", "--trace-speedup=2"])):
    r = sb("--model=llama2-7b", *args, "--no-db")
    check(f"bad input: {name} -> exit 2, one line", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
          r.stderr)

# ---- closed-loop clients (issue 34): N in flight at most, throughput N / cycle, each next request
#      think-time after an answer ----
one_model, d1 = os.path.join(td, "one.model"), os.path.join(td, "d1.csv")
write(one_model, "model one\nsource test: one static node\nnode a static gemm=1,16,16\n")
write(d1, "node,batch,latency_s\n*,1,0.001\n*,4,0.002\n")
for policy, clients, think in (("serial", 3, 2.0), ("graph", 5, 0.5), ("serial", 4, 0.0)):
    out = os.path.join(td, f"closed-{policy}-{clients}.csv")
    r = sb(f"--model={one_model}", f"--hw={d1}", f"--policy={policy}", "--max-batch=4", f"--concurrency={clients}",
           f"--think-time={think}", "--requests=2000", "--no-db", "--json", f"--requests-out={out}")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    rows = sorted(csv.DictReader(open(out)), key=lambda x: int(x["id"])) if j else []
    ev = sorted([(float(x["arrival_s"]), 1) for x in rows] + [(float(x["finish_s"]), -1) for x in rows],
                key=lambda e: (e[0], e[1]))   # a finish before an arrival at the same instant
    inflight = peak = 0
    for _, d in ev:
        inflight += d
        peak = max(peak, inflight)
    finishes = sorted(float(x["finish_s"]) for x in rows)
    later = [float(x["arrival_s"]) for x in rows[clients:]]
    # request clients + k is sent think ms after the k-th answer, in answer order
    sent_on_answer = all(abs(a - (f + think / 1000)) < 1e-9 for a, f in zip(later, finishes))
    cycle = sum(float(x["finish_s"]) - float(x["arrival_s"]) for x in rows) / len(rows) + think / 1000 if rows else 1
    check(f"closed loop ({policy}, {clients} clients, think {think} ms): at most {clients} in flight, each later "
          f"request sent on an answer", j and peak == clients and sent_on_answer and
          j.get("concurrency") == clients, str((peak, sent_on_answer, r.stderr)))
    check(f"closed loop ({policy}, {clients} clients): throughput = clients / mean cycle within 1%",
          j and abs(j["throughput_rps"] / (clients / cycle) - 1) < 0.01, str((j.get("throughput_rps"), clients / cycle)))
for name, args in (("--concurrency with --rate", ["--concurrency=2", "--rate=5"]),
                   ("--concurrency with --duration", ["--concurrency=2", "--duration=5"]),
                   ("--concurrency with a trace's timestamps", ["--concurrency=2", f"--trace={azure}"]),
                   ("--think-time without --concurrency", ["--think-time=5"]),
                   ("--concurrency of 0", ["--concurrency=0"])):
    r = sb("--model=llama2-7b", *args, "--no-db")
    check(f"bad input: {name} -> exit 2, one line", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
          r.stderr)
r = sb("--model=llama2-7b", "--concurrency=8", f"--trace={azure}", "--trace-pairs", "--requests=200", "--no-db", "--json")
check("closed-loop clients with a trace's pairs", r.returncode == 0 and json.loads(r.stdout)["completed"] == 200, r.stderr)

# ---- options that would be ignored are refused; a long trace says how much of it replays (issue 37) ----
for name, args in (("an LLM option on a node-level model", ["--model=lstm", "--ttft-slo=5"]),
                   ("--max-seqs on a node-level model", ["--model=gnmt", "--max-seqs=4"]),
                   ("--rate with a replayed trace", ["--model=llama2-7b", f"--trace={azure}", "--rate=5"]),
                   ("--arrival-cv with a replayed trace", ["--model=llama2-7b", f"--trace={azure}", "--arrival-cv=2"])):
    r = sb(*args, "--no-db")
    check(f"bad input: {name} -> exit 2, one line", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1,
          r.stderr)
r = sb("--model=llama2-7b", f"--trace={azure}", "--requests=5", "--no-db", "--json")
check("a trace cut by --requests says nothing", r.returncode == 0 and r.stderr == "", r.stderr)
long_trace = os.path.join(td, "long.csv")
write(long_trace, "arrival_s,input_len,output_len\n" + "".join(f"{i * 0.01:.2f},100,10\n" for i in range(20005)))
r = sb("--model=llama2-7b", f"--trace={long_trace}", "--no-db", "--json")
check("a trace longer than the default count says how many of its rows replay", r.returncode == 0 and
      "first 20000 of the trace's 20005 rows" in r.stderr and json.loads(r.stdout)["requests"] == 20000, r.stderr)

# ---- an LLM's summary says what a serving researcher reads (issue 38) ----
r = sb("--model=llama2-7b", "--requests=300", "--rate=5", "--no-db")
check("an LLM summary without --sla has no end-to-end SLA line, and says there is no goodput without targets",
      r.returncode == 0 and "SLA " not in r.stdout and "no goodput" in r.stdout and "iterating" in r.stdout, r.stdout)
reqs = os.path.join(td, "llm-req.csv")
r = sb("--model=llama2-7b", "--requests=300", "--rate=8", "--no-db", "--ttft-slo=40", "--tpot-slo=9", "--sla=2000",
       f"--requests-out={reqs}", "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {}
met = n = 0
if j:
    for row in csv.DictReader(open(reqs)):
        arr, first, fin = (round(float(row[k]) * 1e9) for k in ("arrival_s", "first_token_s", "finish_s"))
        out_len = int(row["output_len"])
        tpot = (fin - first) // (out_len - 1) if out_len > 1 else 0
        met += first - arr <= 40_000_000 and tpot <= 9_000_000
        n += 1
check("an LLM's SLO attainment, worked out from its requests", j and n == 300 and
      abs(j["slo_attainment"] - met / n) < 1e-9 and 0 < met < n, str((j.get("slo_attainment"), met, n)))
check("an LLM's mean iteration within its token budget", j and 0 < j["iteration_mean_tokens"] <= j["iteration_token_budget"],
      str(j))
r = sb("--model=llama2-7b", "--requests=300", "--rate=8", "--no-db", "--ttft-slo=40", "--tpot-slo=9", "--sla=2000")
check("an LLM summary with targets and --sla shows both", r.returncode == 0 and "SLA 2000 ms" in r.stdout and
      "SLOs       TTFT 40 ms, TPOT 9 ms:" in r.stdout, r.stdout)

# ---- a table's task overhead: in every row, paid once by a graph task ----
# the LSTM's one node type at 1 ms a call, 0.4 ms of it a task's: a request of 10 steps costs 10 ms as
# ten node tasks (lazy, cellular) and 10 x 1 - 9 x 0.4 = 6.4 ms as one graph task (serial, graph);
# without the line, 10 ms either way
table = os.path.join(td, "overhead.csv")
for line, graph_ms in (("# task_overhead_s: 0.0004\n", 6.4), ("", 10.0)):
    write(table, "node,batch,latency_s\nlstm_cell,1,0.001\nlstm_cell,2,0.001\n" + line)
    for pol, want in (("serial", graph_ms), ("graph", graph_ms), ("lazy", 10.0), ("cellular", 10.0)):
        r = sb("--model=lstm", "--hw=" + table, "--policy=" + pol, "--max-batch=2", "--input-len=fixed:10",
               "--rate=1", "--requests=5", "--no-db", "--json")
        lat = json.loads(r.stdout)["latency_ms"] if r.returncode == 0 else {}
        check(f"task overhead {'on' if line else 'off'}: {pol} prices a request at {want} ms",
              abs(lat.get("min", 0) - want) < 1e-6 and abs(lat.get("max", 0) - want) < 1e-6, str(lat) + r.stderr)
    r = sb("model-info", "--model=lstm", "--hw=" + table, "--input-len=10", "--json")
    mi = json.loads(r.stdout) if r.returncode == 0 else {}
    check(f"model-info with the task overhead {'on' if line else 'off'}",
          (abs(mi.get("graph_task_ms", 0) - 6.4) < 1e-9 and abs(mi["task_overhead_ms"] - 0.4) < 1e-9) if line
          else "graph_task_ms" not in mi and abs(mi.get("total_ms", 0) - 10) < 1e-9, str(mi)[:300] + r.stderr)

# ---- measured GPUs (issue 32): an LLM runs on gpu-h100 as it is; --tp; the extrapolation note ----
r = sb("--model=llama2-7b", "--requests=50", "--rate=2", "--no-db", "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {}
check("an LLM's default hw is gpu-h100", j.get("hw") == "gpu-h100" and j.get("completed") == 50, r.stderr)
check("a measured GPU's range in the JSON", j.get("hw_measured_tokens") == 4096 and j.get("hw_may_extrapolate") is False, j)
h100 = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calib", "tables", "ops-h100.csv")).read()
layer = next(l for l in h100.splitlines() if l.startswith("# leave_out layer = ")).split("=")[1].split()
check("its error band, the profile's own leave-out error, in the JSON",
      j.get("hw_layer_error_pct") == {"median": float(layer[0].rstrip("%")), "p90": float(layer[1].rstrip("%"))}, j)
r = sb("--model=llama2-70b", "--tp=4", "--requests=20", "--rate=1", "--no-db", "--json")
j4 = json.loads(r.stdout) if r.returncode == 0 else {}
r = sb("--model=llama2-70b", "--tp=8", "--requests=20", "--rate=1", "--no-db", "--json")
j8 = json.loads(r.stdout) if r.returncode == 0 else {}
check("Llama-2-70B serves on 4 and on 8 H100s, faster on 8", j4 and j8 and j8["tpot_ms"]["mean"] < j4["tpot_ms"]["mean"],
      (j4.get("tpot_ms"), j8.get("tpot_ms"), r.stderr))
r = sb("--model=llama2-7b", "--policy=static", "--requests=20", "--rate=1", "--no-db")
check("a static run on a measured GPU says it may extrapolate", r.returncode == 0 and "(extrapolated)" in r.stdout,
      r.stdout + r.stderr)
r = sb("model-info", "--model=llama2-70b", "--tp=8", "--json")
mi = json.loads(r.stdout) if r.returncode == 0 else {}
check("model-info of a measured GPU: profile, tp and leave-out errors",
      mi.get("gpu_profile", {}).get("tp") == 8 and "layer" in mi["gpu_profile"]["leave_out"]
      and mi["gpu_profile"]["prefill_parts_ms"]["allreduce"] > 0, r.stderr)

# ---- a fleet: replicas behind a router (issue 34) ----
r = sb("list", "routers")
routers = [l.split()[0] for l in r.stdout.splitlines()]
rj = sb("list", "routers", "--json")
registry = json.loads(rj.stdout)["routers"] if rj.returncode == 0 else []
check("list routers prints the registry's routers, in its order, with their help",
      len(registry) >= 1 and routers == [x["name"] for x in registry]
      and all(x["help"] in r.stdout for x in registry), (r.stdout, rj.stdout, rj.stderr))
fdb = os.path.join(td, "fleet.db")
r = sb("--model=llama2-7b", "--replicas=3", "--router=least-outstanding", "--router-refresh=50", "--rate=6",
       "--requests=300", f"--db={fdb}", "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {}
fleet = j.get("fleet", {})
reps = fleet.get("replicas", [])
check("a fleet's JSON: its router, refresh and each replica's share, the shares adding up",
      fleet.get("router") == "least-outstanding" and fleet.get("router_refresh_ms") == 50 and len(reps) == 3 and
      sum(p["routed"] for p in reps) == 300 and sum(p["completed"] for p in reps) == 300 and
      all(0 < p["busy_fraction"] <= 1 and 0 <= p["kv_peak_fraction"] <= 1 for p in reps), r.stderr or fleet)
if reps:
    con = sqlite3.connect(fdb)
    st = dict(con.execute("select key, value from run_stats where key like 'replica.%'").fetchall())
    cfg = dict(con.execute("select key, value from run_config").fetchall())
    con.close()
    check("each replica's share stored (replica.K.NAME), and the fleet's options",
          all(st.get(f"replica.{k}.routed") == reps[k]["routed"] for k in range(3)) and cfg.get("replicas") == "3"
          and cfg.get("router") == "least-outstanding", (st, cfg))
def one_line_error(r, needle, name):
    check(name + ": one line naming it, exit 2", r.returncode == 2 and needle in r.stderr
          and len(r.stderr.strip().splitlines()) == 1, f"exit {r.returncode}: {r.stderr}")
# a router's knobs, read from the registry: listed, stored with the run (given or default), shown by
# --router=NAME --help, refused for a router without them and without a fleet
for rt in registry:
    others = [x["name"] for x in registry if all(k["name"] != kn["name"] for kn in rt["knobs"] for k in x["knobs"])]
    h = sb(f"--router={rt['name']}", "--help")
    check(f"--router={rt['name']} --help: its help and each knob", h.returncode == 0 and rt["help"] in h.stdout
          and all("--" + k["name"] in h.stdout for k in rt["knobs"]), h.stdout + h.stderr)
    for k in rt["knobs"]:
        kdb = os.path.join(td, f"knob-{k['name']}.db")
        r1 = sb("--model=llama2-7b", "--replicas=2", f"--router={rt['name']}", "--rate=6", "--requests=20",
                f"--db={kdb}")
        r2 = sb("--model=llama2-7b", "--replicas=2", f"--router={rt['name']}", f"--{k['name']}={k['default']}",
                "--rate=6", "--requests=20", f"--db={kdb}")
        con = sqlite3.connect(kdb)
        vals = [v for (v,) in con.execute("select value from run_config where key = ? order by run_id", (k["name"],))]
        con.close()
        check(f"--{k['name']}: stored with the run, its default when not given", r1.returncode == 0 and
              r2.returncode == 0 and vals == [k["default"], k["default"]], (vals, r1.stderr, r2.stderr))
        for other in others[:1]:
            one_line_error(sb("--model=llama2-7b", "--replicas=2", f"--router={other}", f"--{k['name']}={k['default']}",
                              "--requests=5", "--no-db"), f"--{k['name']} does not apply to router {other}",
                           f"--{k['name']} refused for router {other}")
        one_line_error(sb("--model=llama2-7b", f"--{k['name']}={k['default']}", "--requests=5", "--no-db"),
                       f"--{k['name']} applies to a fleet", f"--{k['name']} refused without a fleet")
one = sb("--model=llama2-7b", "--replicas=1", "--rate=6", "--requests=200", "--no-db", "--json")
plain = sb("--model=llama2-7b", "--rate=6", "--requests=200", "--no-db", "--json")
strip = lambda t: {k: v for k, v in json.loads(t).items() if k not in ("wall_s", "run_id")} if t else None
check("--replicas=1 is the single server, bit for bit", one.returncode == 0 and strip(one.stdout) == strip(plain.stdout))
for args, needle in ((["--replicas=0"], "--replicas=0"), (["--replicas=4:gpu-h100,x:gpu-a100"], "expected N:HW"),
                     (["--replicas=2", "--router=random"],
                      "unknown router 'random' (known: " + ", ".join(x["name"] for x in registry)),
                     (["--replicas=2", "--router-refresh=-1"], "--router-refresh=-1"),
                     (["--replicas=2", "--router=round-robin", "--router-refresh=5"],
                      "--router-refresh does not apply to router round-robin"),
                     (["--router=least-kv"], "applies to a fleet"), (["--router-refresh=5"], "applies to a fleet"),
                     (["--replicas=2", "--workers=2"], "not both"),
                     (["--replicas=2", "--model=llama2-70b", "--tp=1"], "llama2-70b")):
    extra = [] if any(a.startswith("--model") for a in args) else ["--model=llama2-7b"]
    r = sb(*extra, *args, "--requests=20", f"--db={fdb}")
    check(f"fleet bad input {' '.join(args)}: one line naming it, exit 2, nothing stored",
          r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1 and run_count(fdb) == 1,
          f"exit {r.returncode}: {r.stderr}")
# A heterogeneous fleet behind round-robin is its replicas side by side: replica 0 (an H100) serves
# the even requests exactly as one H100 alone serves them, replica 1 (an A100) the odd ones (a second
# implementation of the same runs, row by row).
import random
rnd = random.Random(5)
rows, t = [], 0.0
for i in range(120):
    t += rnd.expovariate(4.0)
    rows.append((t, rnd.randint(20, 900), rnd.randint(1, 300)))
def trace_of(sel, path):
    write(path, "arrival_s,input_len,output_len\n" + "".join(f"{a:.6f},{i},{o}\n" for a, i, o in sel))
    return path
def finish_times(args, path):
    out = os.path.join(td, "reqs.csv")
    r = sb("--model=llama2-7b", f"--trace={path}", "--requests-out=" + out, "--no-db", *args)
    if r.returncode != 0:
        return None, r.stderr
    with open(out) as f:
        return [(float(x["arrival_s"]), float(x["finish_s"])) for x in csv.DictReader(f)], ""
both, e1 = finish_times(["--replicas=1:gpu-h100,1:gpu-a100", "--router=round-robin"], trace_of(rows, os.path.join(td, "all.csv")))
even, e2 = finish_times(["--hw=gpu-h100"], trace_of(rows[0::2], os.path.join(td, "even.csv")))
odd, e3 = finish_times(["--hw=gpu-a100"], trace_of(rows[1::2], os.path.join(td, "odd.csv")))
check("a heterogeneous fleet behind round-robin serves each request as its replica's GPU alone does",
      both is not None and even is not None and odd is not None and
      all(abs(both[k][1] - (even if k % 2 == 0 else odd)[k // 2][1]) < 1e-9 for k in range(len(rows))), e1 + e2 + e3)
r = sb("--model=llama2-7b", "--replicas=2:gpu-h100,1:gpu-h200", "--requests=20", "--no-db")
check("a fleet group of unknown hardware: exit 2, named", r.returncode == 2 and "gpu-h200" in r.stderr, r.stderr)
r = sb("--model=llama2-7b", "--replicas=2:gpu-h100", "--hw=gpu-a100", "--requests=20", "--no-db")
check("--hw beside a heterogeneous fleet: exit 2", r.returncode == 2 and "--hw" in r.stderr, r.stderr)
# capacity of a fleet: its estimate is its replicas' together, so the search starts near the answer
# and no warning says the rate is past the estimate; two balanced replicas hold about twice one
one = sb("capacity", "--no-db", "--model=llama2-7b", "--ttft-slo=500", "--tpot-slo=50", "--json")
two = sb("capacity", "--no-db", "--model=llama2-7b", "--replicas=2", "--router=least-outstanding", "--ttft-slo=500",
         "--tpot-slo=50", "--json")
c1 = json.loads(one.stdout).get("capacity_rps") if one.returncode == 0 else None
c2 = json.loads(two.stdout).get("capacity_rps") if two.returncode == 0 else None
check("capacity: two replicas behind least-outstanding hold about twice one H100, no estimate warning",
      c1 and c2 and 1.8 < c2 / c1 < 2.3 and "at or above the capacity estimate" not in two.stderr,
      str((c1, c2, two.stderr[-300:])))
# capacity on a trace's (prompt, output) pairs drawn at each probe's rate; a trace's timestamps refused
az = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "azure-llm-2023-conv-head.csv")
r = sb("capacity", "--no-db", "--model=llama2-7b", f"--trace={az}", "--trace-pairs", "--ttft-slo=500", "--tpot-slo=50", "--json")
cj = json.loads(r.stdout) if r.returncode == 0 else {}
check("capacity on a trace's pairs", cj.get("capacity_rps", 0) > 0, r.stderr[-300:])
r = sb("capacity", "--no-db", "--model=llama2-7b", f"--trace={az}", "--ttft-slo=500", "--tpot-slo=50")
check("capacity refuses a trace's timestamps, naming --trace-pairs", r.returncode == 2 and "--trace-pairs" in r.stderr,
      r.stderr)
r = sb("--model=gnmt", "--replicas=2", "--requests=20", "--no-db")
check("a fleet of a node-level model: exit 2", r.returncode == 2 and "node-level" in r.stderr, r.stderr)

# ---- prefill/decode disaggregation (issue 35) ----
# One request alone: its prompt runs on the prefill replica as on a lone server, its KV (llama2-7b:
# 32 layers x 32 KV heads x 128 x key and value x 2 bytes = 524288 bytes a token) moves over a
# 10 GB/s link of no latency, then its tokens run as on the lone server: TTFT and finish are the lone
# server's plus the move, 1000 x 524288 / 1e10 s = 52.4288 ms.
one_req = trace_of([(0.0, 1000, 5)], os.path.join(td, "one.csv"))
def first_and_finish(args):
    out = os.path.join(td, "one-reqs.csv")
    r = sb("--model=llama2-7b", f"--trace={one_req}", "--requests-out=" + out, "--no-db", *args)
    if r.returncode != 0:
        return None, r.stderr
    with open(out) as f:
        x = next(csv.DictReader(f))
    return (float(x["first_token_s"]), float(x["finish_s"])), ""
lone, e1 = first_and_finish([])
dis, e2 = first_and_finish(["--prefill-replicas=1", "--decode-replicas=1", "--kv-link=model:10:0"])
move = 1000 * 524288 / 1e10
check("disaggregation: one request's TTFT and finish are a lone server's plus its KV move",
      lone and dis and abs(dis[0] - lone[0] - move) < 1e-9 and abs(dis[1] - lone[1] - move) < 1e-9, f"{lone} {dis} {e1}{e2}")
ddb = os.path.join(td, "disagg.db")
dout = os.path.join(td, "disagg-reqs.csv")
r = sb("--model=llama2-7b", "--prefill-replicas=2", "--decode-replicas=3", "--router=least-outstanding", "--rate=8",
       "--requests=300", f"--db={ddb}", "--json", "--requests-out=" + dout)
dj = json.loads(r.stdout) if r.returncode == 0 else {}
dg = dj.get("fleet", {}).get("disaggregation", {})
dreps = dj.get("fleet", {}).get("replicas", [])
moved = []
if r.returncode == 0:
    with open(dout) as f:
        moved = [int(x["input_len"]) for x in csv.DictReader(f) if int(x["output_len"]) > 1]
check("a disaggregated fleet's JSON: its pools, and every request of 2+ tokens moved with its prompt's KV",
      dg.get("prefill_replicas") == 2 and dg.get("decode_replicas") == 3 and dg.get("kv_moves") == len(moved) and
      dg.get("kv_moved_bytes") == 524288 * sum(moved) and [p.get("pool") for p in dreps] == [1, 1, 2, 2, 2] and
      sum(p["routed"] for p in dreps[:2]) == 300 and sum(p["routed"] for p in dreps[2:]) == len(moved) and
      "cross-node, measured" in dg.get("kv_link", "") and dg.get("kv_transfer") == "after", r.stderr or dg)
if dreps:
    con = sqlite3.connect(ddb)
    st = dict(con.execute("select key, value from run_stats where key like 'replica.%'").fetchall())
    con.close()
    check("each pool's replicas stored with their pool and moves",
          st.get("replica.0.pool") == 1 and st.get("replica.4.pool") == 2 and
          st.get("replica.4.kv_moves") == dreps[4]["kv_moves"], st)
lw = sb("--model=llama2-7b", "--prefill-replicas=1", "--decode-replicas=1", "--kv-transfer=layerwise",
        f"--trace={one_req}", "--no-db", "--json")
af = sb("--model=llama2-7b", "--prefill-replicas=1", "--decode-replicas=1", f"--trace={one_req}", "--no-db", "--json")
ttft = lambda r: json.loads(r.stdout)["ttft_ms"]["mean"] if r.returncode == 0 else None
check("layerwise moves overlap the prefill: an earlier first token than moving after it",
      ttft(lw) is not None and ttft(af) is not None and ttft(lw) < ttft(af), (ttft(lw), ttft(af), lw.stderr, af.stderr))
for args, needle in ((["--prefill-replicas=0", "--decode-replicas=2"], "a pool of zero"),
                     (["--prefill-replicas=2"], "--decode-replicas is missing"),
                     (["--prefill-replicas=1", "--decode-replicas=1", "--kv-link=model:0:5"], "positive number of GB/s"),
                     (["--prefill-replicas=1", "--decode-replicas=1", "--kv-link=fibre"], "unknown --kv-link 'fibre'"),
                     (["--prefill-replicas=1", "--decode-replicas=1:gpu-a100", "--kv-link=same-node"],
                      "different hardware"),
                     (["--prefill-replicas=1", "--decode-replicas=1", "--hw=gpu-a40"], "sendrecv-a40.csv"),
                     (["--prefill-replicas=1", "--decode-replicas=1", "--kv-transfer=early"], "--kv-transfer=early"),
                     (["--kv-link=model:50:2"], "applies to a disaggregated fleet"),
                     (["--replicas=2", "--prefill-replicas=1", "--decode-replicas=1"], "not both"),
                     (["--prefill-replicas=1", "--decode-replicas=1", "--policy=static"], "cannot serve as a prefill"),
                     # internlm-20b's weights leave an A40 153 blocks of KV (2448 tokens), an H100 thousands
                     (["--prefill-replicas=1", "--decode-replicas=1:gpu-a40", "--model=internlm-20b",
                       "--input-len=fixed:3000", "--output-len=fixed:100", "--kv-link=model:50:2"], "the decode pool")):
    extra = [] if any(a.startswith("--model") for a in args) else ["--model=llama2-7b"]
    r = sb(*extra, *args, "--requests=20", f"--db={ddb}")
    check(f"disaggregation bad input {' '.join(args)}: one line naming it, exit 2, nothing stored",
          r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1 and run_count(ddb) == 1,
          f"exit {r.returncode}: {r.stderr}")

r = sb("live", "--model=llm-tiny", "--prefill-replicas=1", "--decode-replicas=1", "--kv-link=model:10:1",
       "--requests=5", "--no-db")
check("live refuses a disaggregated fleet, naming --prefill-replicas", r.returncode == 2 and
      "--prefill-replicas: a live run" in r.stderr, r.stderr)

# ---- the prefix cache (issue 35): a trace's prefix columns, hits worked out from the trace ----
# 400 requests, each one of 4 system prompts of 1000 tokens and a question of its own: with 16-token
# blocks a prompt's first 62 blocks (992 tokens) are its system prompt's; the 63rd holds its question
# too. Nothing is evicted (the H100's cache holds every prompt), so every request but each system
# prompt's first finds its 62 cached: hits 62 x 396; blocks asked, each prompt's full blocks.
prnd = random.Random(3)
pt, prows = 0.0, []
for i in range(400):
    pt += prnd.expovariate(8.0)
    prows.append((pt, 1000 + prnd.randint(20, 200), prnd.randint(20, 200), prnd.randint(1, 4)))
ptrace = os.path.join(td, "prefix.csv")
write(ptrace, "arrival_s,input_len,output_len,prefix_id,prefix_len\n" +
      "".join(f"{a:.6f},{i},{o},{p},1000\n" for a, i, o, p in prows))
pj = {}
for pc in ("on", "off"):
    r = sb("--model=llama2-7b", f"--trace={ptrace}", f"--prefix-cache={pc}", "--no-db", "--json")
    pj[pc] = json.loads(r.stdout) if r.returncode == 0 else {}
ps = pj["on"].get("policy_stats", {})
firsts = len({p for _, _, _, p in prows})
check("prefix cache: hits and blocks asked as the trace gives them", ps.get("prefix_hit_blocks") == 62 * (400 - firsts)
      and ps.get("prefix_queried_blocks") == sum(i // 16 for _, i, _, _ in prows) and ps.get("prefix_evictions") == 0, ps)
# behind round-robin each of the 4 replicas meets each system prompt once: 16 first times; behind
# prefix-affinity each system prompt stays where it went first, as on one server
rr = sb("--model=llama2-7b", f"--trace={ptrace}", "--replicas=4", "--router=round-robin", "--no-db", "--json")
pa = sb("--model=llama2-7b", f"--trace={ptrace}", "--replicas=4", "--router=prefix-affinity", "--no-db", "--json")
hits = lambda r: json.loads(r.stdout)["policy_stats"].get("prefix_hit_blocks") if r.returncode == 0 else None
check("prefix hits behind round-robin (62 x (400 - 16)) and prefix-affinity (62 x (400 - 4))",
      hits(rr) == 62 * (400 - 4 * firsts) and hits(pa) == 62 * (400 - firsts), (hits(rr), hits(pa), rr.stderr, pa.stderr))
if pa.returncode == 0:
    per = json.loads(pa.stdout)["fleet"]["replicas"]
    check("each replica's prefix hits, adding up to the fleet's", sum(p["prefix_hit_blocks"] for p in per) == hits(pa)
          and sum(p["prefix_queried_blocks"] for p in per) == sum(i // 16 for _, i, _, _ in prows), per)
check("prefix cache: cached system prompts shorten TTFT; off, nothing is asked of a cache",
      pj["on"]["ttft_ms"]["mean"] < pj["off"]["ttft_ms"]["mean"] and
      "prefix_hit_blocks" not in pj["off"].get("policy_stats", {}), (pj["on"].get("ttft_ms"), pj["off"].get("ttft_ms")))


def refused_traces(what, name, header, cases):
    """Each body under header as a trace: refused with the needle in one line, exit 2."""
    for body, needle in cases:
        bad = os.path.join(td, "bad-" + name, name + ".csv")
        os.makedirs(os.path.dirname(bad), exist_ok=True)
        write(bad, header + "\n" + body)
        r = sb("--model=llama2-7b", f"--trace={bad}", "--no-db")
        check(f"bad {what} {body.strip()}: one line, exit 2", r.returncode == 2 and needle in r.stderr and
              len(r.stderr.strip().splitlines()) == 1, r.stderr)


refused_traces("prefix columns", "prefix", "arrival_s,input_len,output_len,prefix_id,prefix_len",
               (("0.1,100,10,7,200\n", "prefix.csv:2: prefix_len 200 must be at most input_len 100"),
                ("0.1,100,10,7,0\n", "prefix.csv:2:"), ("0.1,100,10,x,5\n", "prefix.csv:2: prefix_id"),
                ("0.1,100,10\n", "prefix.csv:2: expected 5 fields")))
# ---- make-trace's shared-prefix workload (inference-perf's shared_prefix) ----
# 3 system prompts of 160 tokens (10 blocks), 2 users each, a 40-token question: request i is user
# i mod 6's, on system prompt i mod 6 // 2 + 1; each prompt's 12 full blocks asked, 10 found cached
# after each system prompt's first use (1 req/s: every prefill has ended before the next arrives).
mt = os.path.join(os.path.dirname(SB), "make-trace")
spt = os.path.join(td, "shared.csv")
r = subprocess.run([mt, "--rate=1", "--requests=60", "--shared-prefix=3:160:2", "--input-len=fixed:40",
                    "--output-len=fixed:8", "-o", spt], capture_output=True, text=True)
rows = [l.split(",") for l in open(spt).read().splitlines() if l and not l.startswith("#")][1:] if r.returncode == 0 else []
check("make-trace --shared-prefix: users in turn, each on its system prompt", len(rows) == 60 and
      all(int(x[3]) == i % 6 // 2 + 1 and x[1] == "200" and x[4] == "160" for i, x in enumerate(rows)), r.stderr)
r = sb("--model=llama2-7b", f"--trace={spt}", "--no-db", "--json")
ss = json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {}
check("the shared-prefix trace's hits: 10 blocks x 57 requests of 12 x 60 asked",
      ss.get("prefix_hit_blocks") == 570 and ss.get("prefix_queried_blocks") == 720, (ss, r.stderr))

# multi-turn conversations (--shared-prefix=N:S:U:T): 1 system prompt of 64 tokens, 2 users, 3 turns,
# 40-token questions, 24-token answers, 2 s apart. A user's turns ask 104, 168, 232 tokens (the
# conversation so far and the question); 16-token blocks. Turn 1 of each conversation finds the
# system prompt's 4 blocks (except the very first request); turn 2 its turn 1's 127 cached tokens'
# 7 full blocks, turn 3 its turn 2's 191 tokens' 11: per user and conversation 4 + 7 + 11, less the
# first request's 4: 2 x 2 x 22 - 4 = 84 hits of 2 x 2 x (6 + 10 + 14) = 120 blocks asked. Without
# the session column each turn finds its system prompt alone: 4 x 11 = 44.
sess = os.path.join(td, "sessions.csv")
r = subprocess.run([mt, "--rate=0.5", "--requests=12", "--shared-prefix=1:64:2:3", "--input-len=fixed:40",
                    "--output-len=fixed:24", "-o", sess], capture_output=True, text=True)
rows = [l.split(",") for l in open(sess).read().splitlines() if l and not l.startswith("#")][1:] if r.returncode == 0 else []
check("make-trace multi-turn: each turn's prompt the conversation so far, sessions numbered per user and conversation",
      [int(x[1]) for x in rows] == [104, 104, 168, 168, 232, 232] * 2 and
      [int(x[5]) for x in rows] == [1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4], (rows, r.stderr))
r = sb("--model=llama2-7b", f"--trace={sess}", "--no-db", "--json")
ss = json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {}
nosess = os.path.join(td, "nosessions.csv")
write(nosess, "arrival_s,input_len,output_len,prefix_id,prefix_len\n" + "".join(",".join(x[:5]) + "\n" for x in rows))
r2 = sb("--model=llama2-7b", f"--trace={nosess}", "--no-db", "--json")
ns = json.loads(r2.stdout).get("policy_stats", {}) if r2.returncode == 0 else {}
check("a conversation's turns find the turn before and its answer cached (84 of 120; 44 without sessions)",
      ss.get("prefix_hit_blocks") == 84 and ss.get("prefix_queried_blocks") == 120 and
      ns.get("prefix_hit_blocks") == 44, (ss, ns, r.stderr, r2.stderr))
badsess = os.path.join(td, "badsess", "s.csv")
os.makedirs(os.path.dirname(badsess), exist_ok=True)
write(badsess, "arrival_s,input_len,output_len,prefix_id,prefix_len,session_id\n0.1,100,10,1,50,x\n")
r = sb("--model=llama2-7b", f"--trace={badsess}", "--no-db")
check("a bad session column: FILE:LINE, exit 2", r.returncode == 2 and "s.csv:2: session_id" in r.stderr, r.stderr)
r = subprocess.run([mt, "--rate=1", "--requests=5", "--shared-prefix=1:64:2:0"], capture_output=True, text=True)
check("make-trace --shared-prefix with 0 turns: exit 2", r.returncode == 2 and "N:S:U[:T]" in r.stderr, r.stderr)

# ---- prompt pools (inference-perf's shared_prefix as it was sent): whole prompts in one shuffled order ----
# --prompt-pool=2:3:64: 2 groups of 3 prompts, each its group's 64-token system prompt (4 blocks of 16) and a
# 40-token question: 104 tokens, 6 full blocks, all of which a prompt sent before finds ((104 - 1) // 16 = 6:
# the partial seventh is computed). Request k gets pool position k mod 6, 1 req/s (each prefill ends before
# the next arrival, nothing evicted). First cycle: a group's first prompt finds nothing, its other two the
# system prompt's 4 blocks: 2 x (0 + 4 + 4) = 16; second cycle every prompt whole: 6 x 6 = 36. 52 of 72
# asked, whatever the shuffle. The same trace without the inner columns (the whole prompt alone): 36; with
# the system prompt alone as the prefix (the old bound): 4 for every request but each group's first, 40.
def trace_rows(path):
    return [l.split(",") for l in open(path).read().splitlines() if l and not l.startswith("#")][1:]


pool = os.path.join(td, "pool.csv")
r = subprocess.run([mt, "--rate=1", "--requests=12", "--prompt-pool=2:3:64", "--input-len=fixed:40",
                    "--output-len=fixed:8", "-o", pool], capture_output=True, text=True)
rows = trace_rows(pool) if r.returncode == 0 else []
ids = [int(x[3]) for x in rows]
check("make-trace --prompt-pool: a shuffled pool sent in one order, request k prompt k mod 6, the whole prompt "
      "the prefix and its group's system prompt inside", len(rows) == 12 and sorted(ids[:6]) == [1, 2, 3, 4, 5, 6]
      and ids[6:] == ids[:6] and ids[:6] != [1, 2, 3, 4, 5, 6] and
      all(x[1] == x[4] == "104" and int(x[5]) == (int(x[3]) - 1) // 3 + 1 and x[6] == "64" for x in rows),
      (rows, r.stderr))


def prefix_stats(path):
    r = sb("--model=llama2-7b", f"--trace={path}", "--no-db", "--json")
    return json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {"error": r.stderr}


outer_only, sys_only = os.path.join(td, "pool-outer.csv"), os.path.join(td, "pool-sys.csv")
write(outer_only, "arrival_s,input_len,output_len,prefix_id,prefix_len\n" +
      "".join(",".join(x[:5]) + "\n" for x in rows))
write(sys_only, "arrival_s,input_len,output_len,prefix_id,prefix_len\n" +
      "".join(",".join(x[:3] + [x[5], x[6]]) + "\n" for x in rows))
ps, po, pss = prefix_stats(pool), prefix_stats(outer_only), prefix_stats(sys_only)
check("a prompt pool's two levels: 52 of 72 blocks hit (36 with the whole prompt alone, 40 with the system "
      "prompt alone)", ps.get("prefix_hit_blocks") == 52 and ps.get("prefix_queried_blocks") == 72 and
      po.get("prefix_hit_blocks") == 36 and pss.get("prefix_hit_blocks") == 40, (ps, po, pss))
r = subprocess.run([mt, "--rate=1", "--requests=5", "--prompt-pool=10:10:8", "--input-len=fixed:4"],
                   capture_output=True, text=True)
rows = [l.split(",") for l in r.stdout.splitlines() if l and not l.startswith("#")][1:]
check("a pool larger than the requests is valid: 5 requests, 5 different prompts",
      r.returncode == 0 and len(rows) == 5 and len({x[3] for x in rows}) == 5, r.stderr)

# --from-experiment: an inference-perf experiment directory as it writes it. 2 groups x 2 prompts, two stages
# (2 req/s for 3 s, then 4 req/s for 1 s: int(rate x duration) = 6 and 4 requests at a fixed interval, the
# second stage from 3 s, each from pool position 0), measured prompt_len quantiles those of a uniform from
# 60 to 100 tokens (q(p) = 60 + 40 p): the 4 prompts' lengths are q at 1/8, 3/8, 5/8, 7/8: 65, 75, 85, 95.
CONFIG = """api:
  type: completion
  streaming: true
data:
  type: shared_prefix
  path: null
  shared_prefix:
    num_groups: 2
    num_prompts_per_group: 2
    system_prompt_len: 32
    question_len: 30
    output_len: 5
load:
  type: constant
  interval: 1.0
  stages:
  - rate: 2.0
    duration: 3
  - rate: 4.0
    duration: 1
  sweep: null
  circuit_breakers: []
server:
  base_url: http://10.0.0.1:8000
"""
QNAMES = ["min", "p0.1", "p1", "p5", "p10", "p25", "median", "p75", "p90", "p95", "p99", "p99.9", "max"]
QPROB = [0, .001, .01, .05, .10, .25, .50, .75, .90, .95, .99, .999, 1]


def experiment(name, config=CONFIG, metrics=True):
    d = os.path.join(td, name)
    os.makedirs(os.path.join(d, "results"), exist_ok=True)
    if config is not None:
        write(os.path.join(d, "results", "config.yaml"), config)
    if metrics:
        q = {k: 60 + 40 * p for k, p in zip(QNAMES, QPROB)}
        json.dump({"successes": {"count": 6, "latency": {"request_latency": {"mean": 1.0}},
                                 "prompt_len": {"mean": 80.0, **q}}}, open(os.path.join(d, "results",
                                                                            "stage_0_lifecycle_metrics.json"), "w"),
                  indent=2)
    return d


exp_out = os.path.join(td, "exp.csv")
r = subprocess.run([mt, f"--from-experiment={experiment('exp')}", "-o", exp_out], capture_output=True, text=True)
rows = trace_rows(exp_out) if r.returncode == 0 else []
lens = {int(x[3]): int(x[1]) for x in rows}
check("make-trace --from-experiment: stages at their intervals, each from pool position 0, the measured lengths",
      [float(x[0]) for x in rows] == [0, .5, 1, 1.5, 2, 2.5, 3, 3.25, 3.5, 3.75] and
      sorted(lens.values()) == [65, 75, 85, 95] and [x[3] for x in rows[6:]] == [x[3] for x in rows[:4]] and
      all(x[2] == "5" and x[1] == x[4] and x[6] == "32" and int(x[5]) == (int(x[3]) - 1) // 2 + 1 for x in rows),
      (rows, r.stderr))
r = subprocess.run([mt, f"--from-experiment={experiment('exp-nometrics', metrics=False)}"], capture_output=True,
                   text=True)
check("without measured lengths the configured ones: 32 + 30 tokens",
      r.returncode == 0 and {x[1] for x in [l.split(",") for l in r.stdout.splitlines()
                                           if l and l[0].isdigit()]} == {"62"}, r.stderr)
real = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "vllm-h100-llama2-7b",
                    "20260217-155451-llama-2-7b-tp1-codegen")
if os.path.isdir(real):
    r = subprocess.run([mt, f"--from-experiment={real}"], capture_output=True, text=True)
    rows = [l.split(",") for l in r.stdout.splitlines() if l and l[0].isdigit()]
    mean = sum(int(x[1]) for x in rows[:3000]) / 3000 if rows else 0
    check("the given codegen run: 3000 + 6000 requests of 100 prompts, the measured mean prompt (591.63) within "
          "0.5", r.returncode == 0 and len(rows) == 9000 and len({x[3] for x in rows}) == 100 and
          abs(mean - 591.63) < 0.5 and float(rows[3000][0]) == 600.0, (len(rows), mean, r.stderr[-300:]))

# bad input: one line naming the file, its line and the key, exit 2, nothing written
bad_cases = [
    ("no-config", None, "config.yaml: cannot open"),
    ("no-groups", CONFIG.replace("    num_groups: 2\n", ""), "config.yaml: data.shared_prefix.num_groups is missing"),
    ("word-groups", CONFIG.replace("num_groups: 2", "num_groups: two"),
     "config.yaml:8: data.shared_prefix.num_groups must be a whole number"),
    ("zero-pool", CONFIG.replace("num_prompts_per_group: 2", "num_prompts_per_group: 0"),
     "config.yaml:9: data.shared_prefix.num_prompts_per_group must be a whole number from 1"),
    ("bad-rate", CONFIG.replace("rate: 4.0", "rate: fast"), "config.yaml:19: load.stages[1].rate must be a positive"),
    ("no-duration", CONFIG.replace("    duration: 1\n", ""), "config.yaml:16: load.stages[1].duration is missing"),
    ("inner-longer", CONFIG.replace("system_prompt_len: 32", "system_prompt_len: 61"),
     "config.yaml:10: data.shared_prefix.system_prompt_len 61 is longer than the shortest measured prompt"),
]
for name, config, needle in bad_cases:
    out = os.path.join(td, f"never-{name}.csv")
    r = subprocess.run([mt, f"--from-experiment={experiment('bad-' + name, config)}", "-o", out],
                       capture_output=True, text=True)
    check(f"make-trace --from-experiment, {name}: one line naming it, exit 2, nothing written",
          r.returncode == 2 and needle in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
          not os.path.exists(out), r.stderr)
out = os.path.join(td, "never-pool0.csv")
r = subprocess.run([mt, "--rate=1", "--requests=5", "--prompt-pool=0:4:8", "-o", out], capture_output=True, text=True)
check("make-trace --prompt-pool of zero prompts: exit 2, nothing written", r.returncode == 2 and
      "a pool of zero prompts" in r.stderr and not os.path.exists(out), r.stderr)
r = subprocess.run([mt, f"--from-experiment={experiment('exp')}", "--rate=3"], capture_output=True, text=True)
check("--from-experiment with --rate: exit 2", r.returncode == 2 and "--rate=3" in r.stderr, r.stderr)
refused_traces("inner prefix columns", "inner", "arrival_s,input_len,output_len,prefix_id,prefix_len,inner_id,inner_len",
               (("0.1,100,10,7,40,3,50\n", "inner.csv:2: inner_len 50 must be at most prefix_len 40"),
                ("0.1,100,10,7,40,0,16\n", "inner.csv:2: inner_len 16"),
                ("0.1,100,10,7,40,y,16\n", "inner.csv:2: inner_id"),
                ("0.1,100,10,7,40\n", "inner.csv:2: expected 7 fields"),
                ("0.1,100,10,7,40,3,16\n0.2,90,10,8,40,3,16\n0.3,100,10,7,40,3,32\n",
                 "inner.csv:4: inner_id,inner_len 3,32 for prefix_id 7, which line 2 gave 3,16")))

# ---- the Mooncake trace's format: JSON lines with the prompt's 512-token blocks as hash ids ----
# r0 (600 tokens: ids 1, 2) then r1 (700: ids 1, 3), 2 s apart: in 16-token blocks r0's first 32
# (tokens 0-511) are id 1's, as are r1's, which finds them cached and stops at its 33rd (id 3):
# 32 hits of 600 // 16 + 700 // 16 = 80 blocks asked.
mc = os.path.join(td, "mc.jsonl")
write(mc, '{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n'
          '{"hash_ids": [1, 3], "output_length": 1, "input_length": 700, "timestamp": 2000}\n')
r = sb("--model=llama2-7b", f"--trace={mc}", "--no-db", "--json")
ms = json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {}
check("Mooncake lines: shared hash ids are shared blocks (32 of 80)", ms.get("prefix_hit_blocks") == 32 and
      ms.get("prefix_queried_blocks") == 80, (ms, r.stderr))
# --kv-blocks=50 (a cache of 50 blocks in place of the GPU's): between r0 and r1 comes rX (700 tokens, ids 9,
# 10: 44 blocks) at 1 s. r0 left its 37 full blocks cached (id 2's 5, let go first, then id 1's 32), 13 blocks
# free: rX evicts 31, id 2's 5 and id 1's deepest 26, so r1 finds id 1's first 6 blocks only: 6 hits of
# 37 + 43 + 43 asked. A cache that cannot hold the longest request (701 tokens: 44 blocks) is refused.
mc3 = os.path.join(td, "mc3.jsonl")
write(mc3, '{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1, 2]}\n'
           '{"timestamp": 1000, "input_length": 700, "output_length": 1, "hash_ids": [9, 10]}\n'
           '{"timestamp": 2000, "input_length": 700, "output_length": 1, "hash_ids": [1, 3]}\n')
r = sb("--model=llama2-7b", f"--trace={mc3}", "--kv-blocks=50", "--no-db", "--json")
ks = json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {}
check("--kv-blocks=50: the cache holds 50 blocks, r1 finds 6 of id 1's 32 left (6 of 123 asked)",
      ks.get("kv_blocks") == 50 and ks.get("prefix_hit_blocks") == 6 and ks.get("prefix_queried_blocks") == 123 and
      ks.get("prefix_evictions") == 31 + 37, (ks, r.stderr))
r = sb("--model=llama2-7b", f"--trace={mc3}", "--no-db", "--json")
ks = json.loads(r.stdout).get("policy_stats", {}) if r.returncode == 0 else {}
check("without --kv-blocks the H100's cache keeps all of id 1 (32 hits)", ks.get("prefix_hit_blocks") == 32, ks)
r = sb("--model=llama2-7b", f"--trace={mc3}", "--kv-blocks=43", "--no-db")
check("--kv-blocks too small for the longest request: one line, exit 2", r.returncode == 2 and
      "43 blocks of 16 tokens" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
for args, needle in ((["--policy=slo"], "modelled for continuous and chunked"),
                     (["--policy=static"], "modelled for continuous and chunked"),
                     (["--prefill-replicas=1", "--decode-replicas=1"], "modelled for continuous and chunked"),
                     (["--model=resnet50"], "applies to an LLM")):
    model = [] if args[0].startswith("--model") else ["--model=llama2-7b"]
    r = sb(*model, *args, "--async-scheduling", "--requests=5", "--no-db")
    check(f"--async-scheduling with {' '.join(args)}: one line, exit 2", r.returncode == 2 and needle in r.stderr and
          len(r.stderr.strip().splitlines()) == 1, r.stderr)
r = sb("--model=resnet50", "--kv-blocks=43", "--requests=5", "--no-db")
check("--kv-blocks on a node-level model: exit 2", r.returncode == 2 and "applies to an LLM" in r.stderr, r.stderr)
head = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "mooncake-conversation-head40.jsonl")
rows = [json.loads(l) for l in open(head)]
fits = [x for x in rows if x["input_length"] + x["output_length"] <= 16384]
out = os.path.join(td, "mc-reqs.csv")
r = sb("--model=codellama-34b", "--tp=2", f"--trace={head}", "--over-context=drop", "--no-db",
       "--requests-out=" + out)
got = []
if r.returncode == 0:
    with open(out) as f:
        got = [(int(x["input_len"]), int(x["output_len"]), round(float(x["arrival_s"]), 6)) for x in csv.DictReader(f)]
check("the Mooncake excerpt: every request within the context, lengths and arrivals as the file gives them",
      got == [(x["input_length"], x["output_length"], round(x["timestamp"] / 1000, 6)) for x in fits],
      (r.stderr, got[:3]))
for body, needle in (('{"timestamp": 0, "input_length": 600, "output_length": 1, "hash_ids": [1]}\n',
                      "1 hash_ids for input_length 600"),
                     ('{"timestamp": 5, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n'
                      '{"timestamp": 4, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n', ":2: timestamp 4"),
                     ('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1], "x": 1}\n', "unknown key"),
                     ('{"timestamp": 0, "input_length": 10, "hash_ids": [1]}\n', "output_length is missing"),
                     ('{"timestamp": -1, "input_length": 10, "output_length": 1, "hash_ids": [1]}\n', "timestamp:"),
                     ('{"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1,]}\n', "hash_ids")):
    bad = os.path.join(td, "badmc", "t.jsonl")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    write(bad, body)
    r = sb("--model=llama2-7b", f"--trace={bad}", "--no-db")
    check(f"bad Mooncake line ({needle}): one line naming file and line, exit 2", r.returncode == 2 and
          needle in r.stderr and "t.jsonl:" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)

r = sb("live", "--model=llm-tiny", "--prefix-cache=on", "--requests=3", "--no-db")
check("live refuses the prefix cache (its kernels keep no KV across requests)", r.returncode == 2 and
      "simulated only" in r.stderr, r.stderr)
r = sb("live", "--model=llm-tiny", "--async-scheduling", "--requests=3", "--no-db")
check("live refuses async scheduling (it plans each iteration when the one before ends)", r.returncode == 2 and
      "simulated only" in r.stderr, r.stderr)
r = sb("--model=llama2-7b", "--prefix-cache=maybe", "--requests=10", "--no-db")
check("--prefix-cache=maybe: exit 2", r.returncode == 2 and "on or off" in r.stderr, r.stderr)

# ---- the exit status comes from the failure's kind, not from words in the message (issue 33) ----
for args in (["--model=out of memory"], ["--trace=" + os.path.join(td, "read error.csv")],
             ["--input-len=file:" + os.path.join(td, "error writing")]):
    r = sb(*args, "--requests=10", "--no-db")
    check(f"bad input whose message holds a machine phrase still exits 2: {args[0]}",
          r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, f"exit {r.returncode}: {r.stderr}")

# ---- a policy's knobs are its own (issue 33): listed, helped, refused elsewhere, stored ----
listed = {}
for line in sb("list", "policies").stdout.splitlines():
    knobs = line.split("(knobs: ")[1].rstrip(")").split() if "(knobs: " in line else []
    listed[line.split()[0]] = [k.lstrip("-") for k in knobs]
check("the graph, cellular and lazy knobs listed", listed.get("graph") == ["window", "bucket-width"] and
      set(listed.get("cellular", [])) == {"min-batch", "max-tasks", "max-batch-decoder"} and
      set(listed.get("lazy", [])) == {"coverage", "profile-len", "no-preemption", "no-slack-check"} and listed.get("serial") == [], listed)
for pol, knobs in listed.items():
    r = sb("--policy=" + pol, "--help")
    helped = [l.split()[0].lstrip("-").split("=")[0] for l in r.stdout.splitlines() if l.startswith("  --")]
    check(f"--policy={pol} --help lists its knobs, and only them", r.returncode == 0 and helped == knobs,
          f"{helped} vs {knobs}: {r.stderr}")
full = sb("--help").stdout
for knob in {k for ks in listed.values() for k in ks}:
    takers = [p for p, ks in listed.items() if knob in ks]
    lines = [l for l in full.splitlines() if l.startswith(f"  --{knob}=") or l.startswith(f"  --{knob} ")]
    check(f"simbatch --help lists --{knob} once, naming {', '.join(takers)}",
          len(lines) == 1 and f"[{', '.join(takers)}]" in lines[0], lines)
r = sb("--help", "--policy=no-such")
check("--help of an unknown policy: exit 2", r.returncode == 2 and "unknown policy" in r.stderr, r.stderr)
kdb = os.path.join(td, "knobs.db")
r = sb("--policy=lazy", "--model=gnmt", "--window=5", "--requests=50", f"--db={kdb}")
check("a knob the policy does not take: exit 2, one line naming it, the policy and its knobs, nothing stored",
      r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--window" in r.stderr and "lazy" in r.stderr
      and "--coverage" in r.stderr and run_count(kdb) == 0, r.stderr)
r = sb("--policy=serial", "--model=gnmt", "--no-preemption", "--requests=50", f"--db={kdb}")
check("a policy with no knobs refuses one", r.returncode == 2 and "no knobs of its own" in r.stderr, r.stderr)
r = sb("--policy=lazy", "--model=gnmt", "--coverage=0", "--requests=50", f"--db={kdb}")
check("a knob's bounds come from its policy's table", r.returncode == 2 and "--coverage=0" in r.stderr, r.stderr)
sb("--policy=lazy", "--model=gnmt", "--requests=50", f"--db={kdb}", "--quiet")
sb("--policy=graph", "--model=gnmt", "--window=5", "--requests=50", f"--db={kdb}", "--quiet")
con = sqlite3.connect(kdb)
cfg = {(rid, k): v for rid, k, v in con.execute("select run_id, key, value from run_config")}
con.close()
check("every knob is stored with every run, given or its default", cfg.get((1, "window")) == "0" and
      cfg.get((1, "coverage")) == "0.9" and cfg.get((2, "window")) == "5" and cfg.get((2, "coverage")) == "0.9", cfg)

# ---- --quantiles=histogram: constant memory, quantiles within 1/256, the exact figures exact ----
qruns = {}
for q in ("exact", "histogram"):
    r = sb("--model=llama2-7b", "--rate=8", "--requests=600", "--ttft-slo=200", "--tpot-slo=50", "--json", "--no-db",
           f"--quantiles={q}")
    qruns[q] = json.loads(r.stdout) if r.returncode == 0 else {}
qe, qh = qruns["exact"], qruns["histogram"]
close = lambda a, b: abs(a - b) <= a / 100   # nearest rank against interpolation, then 1/256
check("--quantiles=histogram: mean, min, max, counts and goodput as the exact run's; each quantile within 1%",
      qe and qh and all(qe[m][k] == qh[m][k] for m in ("latency_ms", "ttft_ms", "tpot_ms") for k in ("mean", "max")) and
      qe["latency_ms"]["min"] == qh["latency_ms"]["min"] and
      qe["completed"] == qh["completed"] and qe["goodput_rps"] == qh["goodput_rps"] and
      all(close(qe[m][k], qh[m][k]) for m in ("latency_ms", "ttft_ms", "tpot_ms") for k in ("p50", "p90", "p99")),
      (qe.get("latency_ms"), qh.get("latency_ms")))
r = sb("--model=llama2-7b", "--requests=10", "--quantiles=approx", f"--db={os.path.join(td, 'q.db')}")
check("--quantiles=approx: one line naming it, exit 2, nothing stored", r.returncode == 2 and
      "--quantiles must be exact or histogram" in r.stderr and len(r.stderr.strip().splitlines()) == 1 and
      not os.path.exists(os.path.join(td, "q.db")), r.stderr)

# ---- mixtures of experts (issue 50): bad --ep, routing files and model files, one line, exit 2, nothing stored ----
mdb = os.path.join(td, "moe.db")
skew = os.path.join(td, "skew.csv")
write(skew, "# simbatch routing skew\n# source = test\nexpert,share\n" + "".join(f"{e},0.1\n" for e in range(8)))
bad_moe = os.path.join(td, "bad-moe.model")
write(bad_moe, "model bad-moe\nsource test\ninput_len fixed:8\noutput_len fixed:4\n"
      "llm layers=2 hidden=64 heads=4 kv_heads=2 head_dim=16 ffn=128 vocab=256 context=512 dtype=bf16\n"
      "moe experts=4 top_k=2 expert_ffn=64 router=topk_softmax layers=0-5\n")
for args, needle in ((["--ep=3"], "--ep=3 with --tp=2"), (["--tp=4", "--ep=4"], None),
                     (["--routing=" + skew], "sum to 0.8, not 1"),
                     (["--routing=" + os.path.join(td, "none.csv")], "none.csv"),
                     (["--model=llama2-70b", "--ep=2"], "model llama2-70b has none"),
                     (["--model=llama2-70b", "--routing=uniform"], "--routing applies to a mixture of experts"),
                     (["--model=" + bad_moe], "bad-moe.model:6: moe layers: layer 5 is past the model's 2 layers"),
                     (["--hw=gpu-h100-roofline", "--tp=1"], "does not price a mixture of experts")):
    extra = [] if any(a.startswith("--model") for a in args) else ["--model=mixtral-8x7b"]
    tp = [] if any(a.startswith("--tp") for a in args) else ["--tp=2"]
    hw = [] if any(a.startswith("--hw") for a in args) else ["--hw=gpu-h100"]
    r = sb(*extra, *hw, *tp, *args, "--requests=20", f"--db={mdb}")
    ok = r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(mdb)
    if needle is None:   # Mixtral's 8 experts over 4 GPUs is allowed: a run, stored
        ok = r.returncode == 0 and run_count(mdb) == 1
        os.unlink(mdb)
    else:
        ok = ok and needle in r.stderr
    check(f"MoE input {' '.join(args)}: " + ("runs" if needle is None else "one line naming it, exit 2, nothing stored"),
          ok, f"exit {r.returncode}: {r.stderr}")
# the same seed routes the same: two runs bit for bit; another seed routes otherwise
m1 = sb("--model=mixtral-8x7b", "--hw=gpu-h100", "--tp=2", "--rate=3", "--requests=100", "--no-db", "--json")
m2 = sb("--model=mixtral-8x7b", "--hw=gpu-h100", "--tp=2", "--rate=3", "--requests=100", "--no-db", "--json")
m3 = sb("--model=mixtral-8x7b", "--hw=gpu-h100", "--tp=2", "--rate=3", "--requests=100", "--no-db", "--json",
        "--seed=2")
check("a MoE run is reproducible, its routing figures reported", m1.returncode == 0 and strip(m1.stdout) == strip(m2.stdout)
      and "moe.experts_reached.mean" in json.loads(m1.stdout)["policy_stats"] and strip(m1.stdout) != strip(m3.stdout),
      m1.stderr)

# search takes --ep as an axis of a MoE model, and a configuration's cost counts every GPU of it
spec = os.path.join(td, "moe.search")
write(spec, "fixed --model=qwen3-235b-a22b --hw=gpu-h100 --tp=8 --ttft-slo=2000 --tpot-slo=200 --policy=chunked\n"
      "axis ep = 1 8\ncost gpu-h100 = 4.0\ntarget 10\n")
r = sb("search", spec, "--list", "--no-db")
check("search lists a MoE model's --ep axis, 8 GPUs each ($32)", r.returncode == 0 and "8 GPUs  ep=8" in r.stdout and
      "$32" in r.stdout and "ep=1" in r.stdout, r.stdout + r.stderr)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
