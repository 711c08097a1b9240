#!/usr/bin/env python3
"""scripts/simbatch_results.py against the database it reads: the runs
DataFrame matches the runs, run_metrics and run_config tables row for row,
the CDF and per-request readers return the stored rows, and the example in
docs/RESULTS.md reproduces scripts/plot's latency-vs-rate data file.
Needs python3-pandas (scripts/install-deps installs it); when this
interpreter lacks pandas, the system's python3 runs the test instead.
Usage: test_results_reader.py PATH/TO/simbatch PATH/TO/scripts"""
import contextlib
import io
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

try:
    import pandas as pd
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("python3-pandas is missing (bash scripts/install-deps installs it)")

SB, SCRIPTS = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
sys.path.insert(0, SCRIPTS)
import simbatch_results as sr   # noqa: E402

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:600]))
    if not cond:
        failures.append(name)


td = tempfile.mkdtemp(prefix="simbatch-reader-")
db = os.path.join(td, "r.db")
for policy, extra in (("serial", []), ("graph", ["--window=5"]), ("graph", ["--window=0"])):
    for rate in (100, 300):
        for seed in (1, 2):
            r = subprocess.run([SB, "--model=gnmt", f"--policy={policy}", f"--rate={rate}", f"--seed={seed}",
                                "--requests=300", f"--db={db}", "--quiet", "--db-requests", *extra],
                               capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit("setup failed: " + r.stderr)

df = sr.runs(db)
con = sqlite3.connect(db)
rows = con.execute("select r.run_id, r.policy, r.model, r.rate_rps, r.seed, r.live, r.saturated, r.completed,"
                   " m.mean_ms, m.p99_ms, m.sla_violation_rate from runs r join run_metrics m using (run_id)"
                   " order by r.run_id").fetchall()
check("one DataFrame row per run, in run order; run_id a column, not also the index",
      list(df.run_id) == [r[0] for r in rows] and list(df.index) == list(range(len(rows))), list(df.run_id))
by_id = df.set_index("run_id")
ok = True
for r in rows:
    d = by_id.loc[r[0]]
    ok = ok and (d.policy, d.model, d.rate_rps, d.seed, d.live, d.saturated, d.completed, d.mean_ms, d.p99_ms,
                 d.sla_violation_rate) == r[1:]
check("runs and run_metrics columns equal the database's, row for row", ok)
RUNS_COLUMNS = {r[1] for r in con.execute("pragma table_info(runs)")}


def same_text(cell, text):
    """A cell read from an option's text: the text itself, or the number it spells."""
    try:
        return cell == text or float(cell) == float(text)
    except (TypeError, ValueError):
        return False


cfg = con.execute("select run_id, key, value from run_config").fetchall()
ok, filled = True, 0
for rid, key, value in cfg:
    col = key.replace("-", "_").replace(".", "_")
    if col in RUNS_COLUMNS:              # --policy, --seed...: the runs column holds it, or COL_option
        col = col + "_option" if col + "_option" in by_id.columns else col
    else:
        filled += 1
    ok = ok and "--" + key not in by_id.columns and same_text(by_id.loc[rid, col], value)
values = con.execute("select run_id, metric, value from run_metric_values").fetchall()
metric_cols = {m for _, m, _ in values}
opt_cols = [c for c in df.columns if c not in RUNS_COLUMNS and c not in metric_cols and c not in
            {"count", "mean_ms", "p50_ms", "p90_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "min_ms",
             "queue_mean_ms", "queue_p99_ms", "sla_violation_rate"}]
stats = [(rid, k, v) for rid, k, v in con.execute("select run_id, key, value from run_stats") if k not in metric_cols]
stat_cols = {k.replace(".", "_") for _, k, _ in stats}
n_cells = df[[c for c in opt_cols if c not in stat_cols]].notna().sum().sum()
check("every stored option is a column named without dashes holding its value, and only those are filled",
      ok and n_cells == filled, (n_cells, filled))
check("window is a number column (every run's value is one)", str(df.window.dtype).startswith(("int", "float")),
      df.window.dtype)
check("every counter (run_stats) is a column, dots made underscores, with its value",
      all(by_id.loc[rid, k.replace(".", "_")] == v for rid, k, v in stats) and len(stats) > 0, len(stats))
check("every metric (run_metric_values) is a column by its one name, with its value; metrics() the same rows",
      all(by_id.loc[rid, m] == v for rid, m, v in values) and len(values) == 13 * len(rows) and
      sorted(map(tuple, sr.metrics(db).itertuples(index=False))) == sorted(values), len(values))
rid = rows[0][0]
stored = con.execute("select quantile, latency_ms from run_cdf where run_id = ? order by quantile", (rid,)).fetchall()
c = sr.cdf(db, rid)
check("cdf: the 1000 stored rows", len(c) == 1000 and list(zip(c["quantile"], c["latency_ms"])) == stored)
every = sr.cdfs(db)
check("cdfs: every run's latency CDF, 1000 rows each, run 1's the stored rows",
      len(every) == 1000 * len(rows) and list(zip(every[every.run_id == rid]["quantile"],
                                                  every[every.run_id == rid]["value_ms"])) == stored)
q = sr.requests(db, rid)
stored = con.execute("select id, arrival_s, finish_s from run_requests where run_id = ? order by id", (rid,)).fetchall()
check("requests: the stored per-request rows", list(zip(q.id, q.arrival_s, q.finish_s)) == stored and len(q) == 300)
check("requests: first_token_s is NA for a run that is not an LLM's", q.first_token_s.isna().all())
check("cdf: a run that is not an LLM's has no TTFT CDF", len(sr.cdf(db, rid, "ttft")) == 0)
llm_db = os.path.join(td, "llm.db")
r = subprocess.run([SB, "--model=llm-tiny", "--policy=continuous", "--hw=gpu-h100-roofline", "--rate=200", "--requests=200",
                    f"--db={llm_db}", "--quiet", "--db-requests"], capture_output=True, text=True)
check("an LLM run stored", r.returncode == 0, r.stderr)
if r.returncode == 0:
    lcon = sqlite3.connect(llm_db)
    for metric in ("ttft", "tpot", "itl"):
        stored = lcon.execute("select quantile, value_ms from run_token_cdf where run_id = 1 and metric = ?"
                              " order by quantile", (metric,)).fetchall()
        c = sr.cdf(llm_db, 1, metric)
        check(f"cdf {metric}: the 1000 stored rows", len(c) == 1000 and list(zip(c["quantile"], c["value_ms"])) == stored)
        long = sr.cdfs(llm_db, metric)
        check(f"cdfs {metric}: long form, run_id and metric beside the stored rows",
              list(long.columns) == ["run_id", "metric", "quantile", "value_ms"] and
              list(zip(long["quantile"], long["value_ms"])) == stored and set(long.run_id) == {1} and
              set(long.metric) == {metric})
    # RESULTS.md's join: every run's TTFT CDF with its policy and rate, the median read off it
    llm = sr.runs(llm_db)
    ttft = sr.cdfs(llm_db, "ttft").merge(llm[["run_id", "policy", "rate_rps"]], on="run_id")
    med = ttft[ttft["quantile"] == 0.5].groupby(["policy", "rate_rps"]).value_ms.mean()
    stored_med = lcon.execute("select value_ms from run_token_cdf where run_id = 1 and metric = 'ttft' "
                              "and quantile = 0.5").fetchone()[0]
    check("the documented join: the median TTFT per policy and rate is the stored 0.5 quantile",
          len(med) == 1 and med[("continuous", 200.0)] == stored_med, med)
    ttft = lcon.execute("select value from run_stats where run_id = 1 and key = 'ttft_ms.p99'").fetchone()[0]
    check("an LLM run's TTFT p99 is a column of runs() by its one name, the counter's value, not also ttft_ms_p99",
          llm.loc[0, "ttft_ms.p99"] == ttft and "ttft_ms_p99" not in llm.columns)
    out = lcon.execute("select value from run_metric_values where run_id = 1 and metric = 'output_tokens_per_s'")
    check("an LLM run's output tokens/s is a column of runs()", llm.loc[0, "output_tokens_per_s"] == out.fetchone()[0])
    q = sr.requests(llm_db, 1)
    stored = lcon.execute("select id, first_token_s from run_requests where run_id = 1 order by id").fetchall()
    check("requests: an LLM run's first_token_s", list(zip(q.id, q.first_token_s)) == stored and len(q) == 200)
    lcon.close()
# a sweep's name and each point's variant label are columns (issue 38)
sweep_db, spec = os.path.join(td, "sweep.db"), os.path.join(td, "lazy-study.sweep")
with open(spec, "w") as f:
    f.write("fixed --model=gnmt --requests=100 --rate=100\nvariant graph5 = --policy=graph --window=5\n"
            "variant lazy = --policy=lazy\n")
r = subprocess.run([SB, "sweep", spec, f"--db={sweep_db}", "--quiet"], capture_output=True, text=True)
sw = sr.runs(sweep_db) if r.returncode == 0 else None
check("a sweep's runs: sweep_name from its file, sweep_variant the point's label",
      sw is not None and set(sw.sweep_name) == {"lazy-study"} and
      dict(zip(sw.policy, sw.sweep_variant)) == {"graph": "graph5", "lazy": "lazy"}, r.stderr)
# a notebook's entry point: simulate() and sweep() through the binary return runs()' rows (issue 38)
nb_db = os.path.join(td, "notebook.db")
row = sr.simulate(nb_db, simbatch=SB, model="gnmt", policy="graph", window=5, rate=100, requests=200, seed=3)
direct = subprocess.run([SB, "--model=gnmt", "--policy=graph", "--window=5", "--rate=100", "--requests=200",
                         "--seed=3", "--no-db", "--json"], capture_output=True, text=True)
want = json.loads(direct.stdout)
check("simulate(): one row, its options as columns, the metrics of the same run made directly",
      len(row) == 1 and row.loc[0, "window"] == 5 and row.loc[0, "seed"] == 3 and
      all(abs(row.loc[0, col] - want["latency_ms"][key]) <= 1e-9 * want["latency_ms"][key]   # JSON: 10 digits
          for col, key in (("mean_ms", "mean"), ("p99_ms", "p99"))),
      (row.to_dict("records"), want.get("latency_ms")))
try:
    sr.simulate(nb_db, simbatch=SB, model="gnmt", policy="nosuch")
    check("simulate() with a bad option raises", False)
except ValueError as e:
    check("simulate() with a bad option raises ValueError with simbatch's line", "unknown policy" in str(e), e)
grid = sr.sweep(spec, nb_db, simbatch=SB)
check("sweep(): the sweep's runs (two variants), beside the simulate() run in the same database",
      sorted(grid.sweep_variant) == ["graph5", "lazy"] and len(sr.runs(nb_db)) == 3, grid.to_dict("records"))
try:
    sr.runs(os.path.join(td, "absent.db"))
    check("a missing database is an error", False)
except ValueError:
    check("a missing database is an error, and none is created", not os.path.exists(os.path.join(td, "absent.db")))

# docs/RESULTS.md's example against scripts/plot's data file
out = os.path.join(td, "fig12")
r = subprocess.run([sys.executable, os.path.join(SCRIPTS, "plot"), "latency-vs-rate", f"--db={db}", "--model=gnmt",
                    f"--out={out}"], capture_output=True, text=True)
check("plot latency-vs-rate ran", r.returncode == 0, r.stderr)
d = df[(df.model == "gnmt") & (df.live == 0)]
fig12 = (d.groupby(["policy", "window", "rate_rps"], dropna=False).mean_ms
          .agg(mean="mean", p25=lambda v: v.quantile(0.25), p75=lambda v: v.quantile(0.75), seeds="count"))
series = {}
label = None
for line in open(out + ".dat"):
    if line.startswith("# series "):
        label = line.split(": ", 1)[1].strip()
        series[label] = []
    elif line.strip() and not line.startswith("#"):
        series[label].append([float(x) for x in line.split()])
ok = len(series) == 3
for label, pts in series.items():
    policy, _, rest = label.partition(" ")
    window = float(rest.split("=")[1]) if rest else 0
    for p in pts:
        want = fig12.loc[(policy, window, p[0])]
        ok = ok and all(abs(a - b) <= 1e-9 * max(1, abs(b)) for a, b in zip(p[1:5], [want["mean"], want.p25,
                                                                              want.p75, want.seeds]))
check("the RESULTS.md example reproduces the figure's data", ok, (series, fig12))

# ---- the registry as the reader sees it (issue 33): each policy's knobs, stored with every run ----
knobs = sr.policies(simbatch=SB)
listed = subprocess.run([SB, "list", "policies"], capture_output=True, text=True).stdout
for line in listed.splitlines():
    name = line.split()[0]
    want = [k.lstrip("-") for k in line.split("(knobs: ")[1].rstrip(")").split()] if "(knobs: " in line else []
    got = [k for k in knobs[knobs.policy == name].knob if k is not None]
    check(f"policies(): {name}'s knobs as simbatch list policies names them", got == want, (got, want))
frame = sr.runs(db)
stored = set(frame.columns)
every = {k.replace("-", "_") for k in knobs.knob if k is not None}
with_default = {k.replace("-", "_") for k, d in zip(knobs.knob, knobs["default"]) if k is not None and d is not None}
check("every knob with a default is a column of every run", with_default <= stored, sorted(with_default - stored))
check("the knobs are options runs can store", every - stored <= {"profile_len", "no_preemption", "no_slack_check"},
      sorted(every - stored))

# ---- a fleet's per-replica shares (issue 34): one row per run and replica ----
fdb = os.path.join(td, "fleet.db")
out = subprocess.run([SB, "--model=llama2-7b", "--replicas=3", "--router=least-kv", "--rate=6", "--requests=240",
                      f"--db={fdb}", "--json"], capture_output=True, text=True)
fleet = json.loads(out.stdout)["fleet"]["replicas"] if out.returncode == 0 else []
reps = sr.replicas(fdb)
check("replicas(): a row per replica, as the run's JSON gives each", len(reps) == 3 and list(reps.replica) == [0, 1, 2]
      and all(int(reps.routed[k]) == fleet[k]["routed"] and abs(reps.busy_fraction[k] - fleet[k]["busy_fraction"]) < 1e-9
              for k in range(3)), (reps, out.stderr))
check("runs(): a fleet's run is one row, its per-replica shares not columns",
      len(sr.runs(fdb)) == 1 and not any(c.startswith("replica_") for c in sr.runs(fdb).columns))
check("replicas() of a database without fleets: no rows, the columns", sr.replicas(db).empty and
      "busy_fraction" in sr.replicas(db).columns)
out = subprocess.run([SB, "--model=llama2-7b", "--prefill-replicas=1", "--decode-replicas=2", "--rate=6",
                      "--requests=240", f"--db={fdb}", "--json"], capture_output=True, text=True)
dis = json.loads(out.stdout)["fleet"] if out.returncode == 0 else {}
reps = sr.replicas(fdb)
reps = reps[reps.run_id == reps.run_id.max()].reset_index(drop=True)
check("replicas() of a disaggregated fleet: each replica's pool and KV moves, as its JSON gives them",
      len(reps) == 3 and list(reps.pool) == ["prefill", "decode", "decode"] and
      int(reps.kv_moves[0]) == dis.get("disaggregation", {}).get("kv_moves") and
      all(abs(reps.kv_moved_bytes[k] - dis["replicas"][k]["kv_moved_bytes"]) < 1e-3 for k in range(3)),
      (reps, out.stderr))

# ---- searches(): a configuration search as stored, against its own --json report ----
sdb = os.path.join(td, "search.db")
spec = os.path.join(td, "t.search")
with open(spec, "w") as f:
    f.write("fixed --policy=serial --model=resnet50 --sla=5\naxis workers = 1 2\ncost npu = 1\ntarget 2000\n")
out = subprocess.run([SB, "search", spec, f"--db={sdb}", f"--out={os.path.join(td, 't.csv')}", "--exhaustive",
                      "--json", "--quiet"], capture_output=True, text=True)
rep = json.loads(out.stdout) if out.returncode == 0 else {}
head, configs = sr.searches(sdb)
got = sorted((r.config, r.status, r.cost_per_hour, r.capacity_rps, bool(r.answer)) for r in configs.itertuples())
want = sorted((x["config"], x["status"], x["cost_per_hour"], x["capacity_rps"],
               x["config"] == (rep.get("answer") or {}).get("config")) for x in rep.get("results", []))
check("searches(): the search and a row a configuration, as its report gives them",
      len(head) == 1 and head.search_id[0] == rep.get("search_id") and head.target_rps[0] == 2000 and
      bool(head.exhaustive[0]) and head.answer[0] == (rep.get("answer") or {}).get("config") and got == want and
      len(got) == 2, (out.stderr[-300:], head, configs))
k0, p0 = sr.capacities(sdb)
check("a search's capacity children store nothing of their own", k0.empty and p0.empty, k0)
h0, c0 = sr.searches(db)
check("searches() of a database without searches: both empty, the columns", h0.empty and c0.empty and
      "capacity_rps" in c0.columns, (h0, c0))

# ---- capacities(): capacity answers as stored, against their --json; docs/RESULTS.md's example run ----
cdb = os.path.join(td, "capacity.db")
reps = []
for opts in (["--tp=2"], ["--replicas=2"]):
    out = subprocess.run([SB, "capacity", "--model=llama2-7b", *opts, "--ttft-slo=500", "--tpot-slo=50",
                          f"--db={cdb}", "--jobs=2", "--json"], capture_output=True, text=True)
    reps.append(json.loads(out.stdout) if out.returncode == 0 else {})
caps, probes = sr.capacities(cdb)
check("capacities(): a row an answer, as its JSON gives it",
      list(caps.capacity_id) == [x.get("capacity_id") for x in reps] and
      list(caps.capacity_rps) == [x.get("capacity_rps") for x in reps] and
      list(caps.gpus) == [x.get("serving", {}).get("gpus") for x in reps] and list(caps.tp) == [2, 1], caps)
check("capacities(): a probe row a rate each simulated",
      [len(probes[probes.capacity_id == x.get("capacity_id")]) for x in reps] ==
      [len(x.get("points", [])) for x in reps] and probes["pass"].dtype == bool, probes)
text = open(os.path.join(os.path.dirname(SCRIPTS), "docs", "RESULTS.md")).read()
example = next((b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "sr.capacities(db)" in b
                and "rps_per_gpu" in b), None)
printed = io.StringIO()
try:
    with contextlib.redirect_stdout(printed):
        exec(example or "raise ValueError('no example')", {"sr": sr, "db": cdb})
    shown = printed.getvalue()
except Exception as e:       # noqa: BLE001 -- any failure of the example is the check's
    shown = repr(e)
per_gpu = [x.get("capacity_rps", 0) / max(1, x.get("serving", {}).get("gpus", 1)) for x in reps]
check("RESULTS.md's capacities example runs, printing each answer per GPU",
      all(f"{v:.6g}"[:5] in shown for v in per_gpu) and "rates_simulated" in shown, shown)
k0, p0 = sr.capacities(db)
check("capacities() of a database without capacities: both empty, the columns", k0.empty and p0.empty and
      "capacity_rps" in k0.columns and "rate_rps" in p0.columns, (k0, p0))

# ---- as a program: one line and exit 2 for anything it cannot read; --help ----
reader_py = os.path.join(SCRIPTS, "simbatch_results.py")
empty_db, bad_db, dir_db = (os.path.join(td, n) for n in ("empty.db", "bad.db", "dir.db"))
open(empty_db, "w").close()
with open(bad_db, "w") as f:
    f.write("not a database\n")
os.mkdir(dir_db)
for name, args in (("no argument", []), ("a missing database", [os.path.join(td, "none.db")]),
                   ("an empty file", [empty_db]), ("a text file", [bad_db]), ("a directory", [dir_db]),
                   ("an option as the path", ["--bogus"])):
    r = subprocess.run([sys.executable, reader_py, *args], capture_output=True, text=True)
    check(f"simbatch_results.py, {name}: one line, exit 2", r.returncode == 2 and r.stdout == "" and
          len(r.stderr.strip().splitlines()) == 1, (r.returncode, r.stderr[-300:]))
r = subprocess.run([sys.executable, reader_py, "--help"], capture_output=True, text=True)
check("simbatch_results.py --help: the usage, exit 0", r.returncode == 0 and "simbatch_results" in r.stdout, r.stderr)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
