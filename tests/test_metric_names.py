#!/usr/bin/env python3
"""The one list of metric names (sim/store/metric_names.c, issue 51) against everything that names a metric:
docs/METRICS.md documents exactly the registry's metrics (both ways, with their units and runs); a run's JSON,
its results database rows (run_metric_values), the pandas reader's columns, sweep --summary --metrics and its
text summary all use the registry's names and agree on each value; and a tiny LLM run's token throughput is
what its trace's lengths and its per-request rows give by hand.
Needs python3-pandas for the reader's part (the system's python3 runs the test when this one lacks it).
Usage: test_metric_names.py PATH/TO/simbatch PATH/TO/docs/METRICS.md PATH/TO/scripts"""
import csv
import io
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

try:
    import pandas  # noqa: F401
except ImportError:
    if sys.executable != "/usr/bin/python3" and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    sys.exit("python3-pandas is missing (bash scripts/install-deps installs it)")

SB, DOC, SCRIPTS = (os.path.abspath(a) for a in sys.argv[1:4])
sys.path.insert(0, SCRIPTS)
import simbatch_results as sr   # noqa: E402

failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:800]))
    if not cond:
        failures.append(name)


def sb(*args):
    return subprocess.run([SB, *args], capture_output=True, text=True)


td = tempfile.mkdtemp(prefix="simbatch-metrics-")
r = sb("list", "metrics", "--json")
registry = json.loads(r.stdout)["metrics"] if r.returncode == 0 else []
names = [m["name"] for m in registry]
check("the registry lists its metrics, each name once, no name another's alias",
      len(names) > 20 and len(set(names)) == len(names) and
      not {m["alias"] for m in registry if m["alias"]} & set(names), r.stderr)

# ---- docs/METRICS.md: a table row per metric, `name` | unit | runs | meaning; exactly the registry's ----
RUNS_TEXT = {"all": "node and LLM", "llm": "LLM", "llm_slo": "LLM with SLOs"}
doc_rows = {}
with open(DOC) as f:
    for line in f:
        m = re.match(r"\|\s*`([a-z0-9_.]+)`\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|", line)
        if m:
            doc_rows[m.group(1)] = (m.group(2), m.group(3))
check("docs/METRICS.md documents every metric of the registry", set(names) <= set(doc_rows),
      sorted(set(names) - set(doc_rows)))
check("docs/METRICS.md documents no metric the registry lacks", set(doc_rows) <= set(names),
      sorted(set(doc_rows) - set(names)))
check("docs/METRICS.md gives each metric the registry's unit and runs",
      all(doc_rows.get(m["name"]) == (m["unit"], RUNS_TEXT[m["runs"]]) for m in registry),
      [(m["name"], doc_rows.get(m["name"])) for m in registry
       if doc_rows.get(m["name"]) != (m["unit"], RUNS_TEXT[m["runs"]])])
help_sweep = os.path.join(td, "help.sweep")
with open(help_sweep, "w") as f:
    f.write("fixed --model=lstm\n")
r = sb("sweep", help_sweep, "--summary", "--metrics=help")
check("sweep --metrics=help lists the registry, in its order",
      [l.split()[0] for l in r.stdout.splitlines()] == names, r.stdout + r.stderr)


# ---- a tiny LLM run computed by hand: 5 requests of known lengths, the first a warm-up ----
def sig3(x):
    """util/text's txt_format_sig(x, 3): 3 significant digits, the integer part whole."""
    d = max(0, 3 - (math.floor(math.log10(abs(x))) + 1)) if x else 2
    return f"{x:.{d}f}"


LENGTHS = [(100, 10), (200, 20), (300, 1), (400, 40), (50, 5)]       # (prompt, output) tokens
trace = os.path.join(td, "tiny.csv")
with open(trace, "w") as f:
    f.write("arrival_s,input_len,output_len\n")
    for i, (inp, out) in enumerate(LENGTHS):
        f.write(f"{0.01 * i:.2f},{inp},{out}\n")
IN_BY_HAND, OUT_BY_HAND = 200 + 300 + 400 + 50, 20 + 1 + 40 + 5      # requests 1..4 (request 0 warms up)
GPUS_BY_HAND = 2 * 2                                                  # 2 replicas of TP 2


def tiny_run(db, *extra):
    r = sb("run", "--model=llama2-7b", f"--trace={trace}", "--warmup=1", "--tp=2", "--replicas=2",
           "--router=round-robin", f"--db={db}", "--db-requests", *extra)
    js = sb("run", "--model=llama2-7b", f"--trace={trace}", "--warmup=1", "--tp=2", "--replicas=2",
            "--router=round-robin", "--no-db", "--json", *extra)
    return r, (json.loads(js.stdout) if js.returncode == 0 else {})


db0 = os.path.join(td, "tiny0.db")
r, js = tiny_run(db0)
check("the tiny LLM run", r.returncode == 0 and js, r.stderr)
con = sqlite3.connect(db0)
rows = con.execute("select id, arrival_s, finish_s, input_len, output_len, first_token_s from run_requests "
                   "where run_id = 1 order by id").fetchall()
con.close()
measured = [q for q in rows if q[0] >= 1]
window = max(q[2] for q in rows) - min(q[1] for q in measured)      # last finish - first measured arrival
tpot_ms = [1e3 * (q[2] - q[5]) / (q[4] - 1) for q in measured if q[4] > 1]
check("token counts: the measured requests' lengths summed by hand",
      js.get("input_tokens") == IN_BY_HAND and js.get("output_tokens") == OUT_BY_HAND and js.get("gpus") == 4,
      {k: js.get(k) for k in ("input_tokens", "output_tokens", "gpus")})


def close(a, b, rel=1e-6):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b), 1e-12)


user = js.get("output_tokens_per_s_per_user", {})
check("the measured span: last finish - first measured arrival, from the per-request rows",
      close(js.get("measured_span_s"), window), (js.get("measured_span_s"), window))
check("input and output tokens/s: the counts over the span",
      close(js.get("input_tokens_per_s"), IN_BY_HAND / window) and
      close(js.get("output_tokens_per_s"), OUT_BY_HAND / window), js)
check("per GPU: tokens/s over 2 replicas x TP 2",
      close(js.get("input_tokens_per_s_per_gpu"), IN_BY_HAND / window / GPUS_BY_HAND) and
      close(js.get("output_tokens_per_s_per_gpu"), OUT_BY_HAND / window / GPUS_BY_HAND), js)
check("per user: the mean of 1000 / TPOT over the 3 measured requests of 2+ tokens, and 1000 / their median TPOT",
      len(tpot_ms) == 3 and close(user.get("mean"), sum(1e3 / t for t in tpot_ms) / 3, 1e-5) and
      close(user.get("p50"), 1e3 / sorted(tpot_ms)[1], 1e-5), (user, tpot_ms))
check("no SLO set: no goodput in tokens (JSON)", "goodput_output_tokens_per_s" not in js, js)
r = sb("run", "--model=llama2-7b", f"--trace={trace}", "--warmup=1", "--tp=2", "--replicas=2", "--no-db")
line = [l for l in r.stdout.splitlines() if l.lstrip().startswith("tokens/s")]
want = (f"  tokens/s   input {sig3(IN_BY_HAND / window)}, output {sig3(OUT_BY_HAND / window)}; per GPU (4 GPUs) "
        f"input {sig3(IN_BY_HAND / window / 4)}, output {sig3(OUT_BY_HAND / window / 4)}; per user mean "
        f"{sig3(sum(1e3 / t for t in tpot_ms) / 3)}, p50 {sig3(1e3 / sorted(tpot_ms)[1])}")
check("the text summary's tokens/s line: the hand-computed figures to 3 significant digits", line == [want],
      (line, want))
check("an LLM run with no --sla shows no SLA line", r.returncode == 0 and
      not any(l.lstrip().startswith("SLA") for l in r.stdout.splitlines()), r.stdout)

# with SLOs between the requests' own TTFTs and TPOTs: goodput counts the output tokens of those meeting both
ttft_ms = {q[0]: 1e3 * (q[5] - q[1]) for q in measured}
tpot_of = {q[0]: 1e3 * (q[2] - q[5]) / (q[4] - 1) if q[4] > 1 else 0.0 for q in measured}
ttft_slo = sorted(ttft_ms.values())[2] + 1e-3            # the 3 quickest first tokens meet it
tpot_slo = max(tpot_of.values()) + 1.0                  # every TPOT meets it
good_out = sum(q[4] for q in measured if ttft_ms[q[0]] <= ttft_slo and tpot_of[q[0]] <= tpot_slo)
db1 = os.path.join(td, "tiny1.db")
r, js1 = tiny_run(db1, f"--ttft-slo={ttft_slo:.6f}", f"--tpot-slo={tpot_slo:.6f}")
check("goodput in tokens: the output tokens of the requests meeting both SLOs, over the span",
      r.returncode == 0 and 0 < good_out < OUT_BY_HAND and
      close(js1.get("goodput_output_tokens_per_s"), good_out / window), (js1.get("goodput_output_tokens_per_s"),
                                                                           good_out, window, r.stderr))
check("SLOs change no other figure of the run (continuous ignores them)",
      js1.get("output_tokens_per_s") == js.get("output_tokens_per_s") and
      js1.get("ttft_ms") == js.get("ttft_ms"), js1)


# ---- one name everywhere: JSON path, run_metric_values, reader column, sweep column, text label ----
def json_at(obj, name):
    """A metric's value in the JSON by its name as a path: ttft_ms.p99 is obj["ttft_ms"]["p99"]."""
    head, _, rest = name.partition(".")
    v = obj.get(head)
    if rest and isinstance(v, dict):
        return v.get(rest)
    return None if rest else v


def has_metric(m, llm, slo, sla):
    if m["name"] == "sla_violation_rate":
        return not llm or sla
    return {"all": True, "llm": llm, "llm_slo": llm and slo}[m["runs"]]


sweep = os.path.join(td, "one.sweep")
cases = (("node", ["--model=lstm", "--policy=serial", "--rate=200", "--requests=300"], False, False, True),
         ("LLM, SLOs, no SLA", ["--model=llama2-7b", "--rate=2", "--requests=120", "--ttft-slo=60",
                                "--tpot-slo=8"], True, True, False),
         ("LLM, no SLO", ["--model=llama2-7b", "--rate=2", "--requests=120"], True, False, False))
for label, opts, llm, slo, sla in cases:
    db = os.path.join(td, label.replace(" ", "").replace(",", "") + ".db")
    with open(sweep, "w") as f:
        f.write("fixed " + " ".join(opts) + "\nseeds 1\n")
    r = sb("sweep", sweep, f"--db={db}", "--quiet")
    js_run = sb("run", *opts, "--no-db", "--json")
    txt = sb("run", *opts, "--no-db")
    if r.returncode or js_run.returncode or txt.returncode:
        check(f"{label}: the runs", False, r.stderr + js_run.stderr + txt.stderr)
        continue
    js = json.loads(js_run.stdout)
    con = sqlite3.connect(db)
    stored = dict(con.execute("select metric, value from run_metric_values where run_id = 1"))
    listed = con.execute("select name, unit, runs from metric_names").fetchall()
    con.close()
    check(f"{label}: the database lists the registry's names, units and runs (metric_names)",
          sorted(listed) == sorted((m["name"], m["unit"], m["runs"]) for m in registry), listed)
    want = [m for m in registry if has_metric(m, llm, slo, sla)]
    check(f"{label}: the database holds exactly the metrics such a run has, by their names",
          set(stored) == {m["name"] for m in want}, sorted(set(stored) ^ {m["name"] for m in want}))

    def same(a, b):
        return a is not None and b is not None and (a == b or close(float(a), float(b), 1e-9))
    json_ok = [m["name"] for m in want if m["name"] != "saturated" and not same(json_at(js, m["name"]),
                                                                              stored.get(m["name"]))]
    check(f"{label}: each metric's JSON value, found by its name as a path, is the database's", not json_ok,
          [(n, json_at(js, n), stored.get(n)) for n in json_ok])
    check(f"{label}: saturated is the JSON's flag", stored.get("saturated") == (1.0 if js["saturated"] else 0.0))
    new = {"input_tokens_per_s", "output_tokens_per_s", "input_tokens_per_s_per_gpu",
           "output_tokens_per_s_per_gpu", "output_tokens_per_s_per_user.mean", "output_tokens_per_s_per_user.p50",
           "goodput_output_tokens_per_s"}
    absent = [n for n in new if n not in {m["name"] for m in want} and json_at(js, n) is not None]
    check(f"{label}: the JSON has none of the token metrics such a run lacks", not absent, absent)
    runs = sr.runs(db)
    reader_bad = [n for n, v in stored.items() if n not in runs.columns or not same(runs.loc[0, n], v)]
    check(f"{label}: the reader's column of each metric is its name, with the stored value", not reader_bad,
          reader_bad)
    lacking = [n for n in names if n not in stored and n in runs.columns and not pandas.isna(runs.loc[0, n])]
    check(f"{label}: the reader has no value for a metric the run has not (an LLM run's SLA rate without --sla)",
          not lacking, lacking)
    got = {}
    for i in range(0, len(want), 16):          # --metrics takes 16 at a time
        part = [m["name"] for m in want[i:i + 16]]
        s = sb("sweep", sweep, f"--db={db}", "--summary", "--csv", "--metrics=" + ",".join(part))
        row = next(csv.DictReader(io.StringIO(s.stdout)), {}) if s.returncode == 0 else {}
        got.update({n: row.get(n + "_mean") for n in part})
    sweep_bad = [n for n in got if not same(got[n], stored.get(n))]
    check(f"{label}: sweep --summary --metrics takes each name and shows the stored value", not sweep_bad,
          [(n, got[n], stored.get(n)) for n in sweep_bad])
    lines = txt.stdout.splitlines()
    text_bad = []
    for m in want:
        if not m["text"] or m["name"] == "saturated":
            continue
        head, item = m["text"].split(": ", 1)      # "LINE: words", in that order on the line; "(an LLM run: X)": X
        alt = re.search(r"\(an LLM run: ([^)]+)\)", item)
        item = alt.group(1) if alt and llm else item.split(" (")[0]
        pattern = ".*".join(re.escape(w) for w in item.split())
        if not any(l.lstrip().startswith(head) and re.search(pattern, l) for l in lines):
            text_bad.append(m["name"])
    check(f"{label}: the text summary shows each metric where the registry says", not text_bad, (text_bad, lines))
    sla_line = any(l.lstrip().startswith("SLA ") for l in lines)
    check(f"{label}: the SLA line only where the run has sla_violation_rate", sla_line == sla, lines)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
