#!/usr/bin/env python3
"""Tests of scripts/fidelity (the simulation-vs-live report):
 - its table arithmetic: the mean of a calibration table and the same table
   with every time tripled prices every node at exactly twice the original
   (the calibrated model is linear in the table's times: interpolation and
   a least-squares line), and a table scaled by s prices nodes at s times;
   tables with different rows are refused;
 - a tiny end-to-end report (serial, one load, a few requests, one live
   run): it exits 0, and its CSV's errors are (simulated - live) / live of
   its own columns, the drift and speed columns are finite.
Usage: test_fidelity.py PATH/TO/simbatch PATH/TO/scripts/fidelity"""
import csv
import importlib.machinery
import importlib.util
import json
import math
import os
import subprocess
import sys
import tempfile

SB, FIDELITY = sys.argv[1], sys.argv[2]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(FIDELITY)))
TABLE = os.path.join(ROOT, "calib", "tables", "cpu.csv")
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:400]))
    if not cond:
        failures.append(name)


def load_script(path):
    loader = importlib.machinery.SourceFileLoader("fidelity", path)
    spec = importlib.util.spec_from_loader("fidelity", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def node_ms(hw, batch):
    r = subprocess.run([SB, "model-info", "--model=lstm", f"--hw={hw}", f"--batch={batch}", "--json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return float("nan")
    return json.loads(r.stdout)["nodes"][0]["ms"]


fid = load_script(FIDELITY)
td = tempfile.mkdtemp(prefix="simbatch-fidelity-")

# ---- table arithmetic ----
comments, header, rows = fid.read_table(TABLE)
lat = header.index("latency_s")
tripled = os.path.join(td, "tripled.csv")
fid.write_table(tripled, comments, header,
                [[("%.9e" % (3 * float(v)) if h in fid.TABLE_TIMES else v) for h, v in zip(header, r)] for r in rows],
                "every time tripled (test)")
mean = os.path.join(td, "mean.csv")
fid.combine_tables([TABLE, tripled], mean, "mean (test)")
scaled = os.path.join(td, "scaled.csv")
fid.combine_tables([TABLE], scaled, "scaled (test)", scale=0.8)
for b in (1, 3, 64, 200):
    base = node_ms(TABLE, b)
    check(f"mean of x1 and x3 tables prices the LSTM step at 2x, batch {b}",
          abs(node_ms(mean, b) / base - 2) < 1e-5, (node_ms(mean, b), base))
    check(f"a table scaled by 0.8 prices it at 0.8x, batch {b}", abs(node_ms(scaled, b) / base - 0.8) < 1e-5,
          (node_ms(scaled, b), base))
check("drift of the x3 table over the x1 one is +200%", abs(fid.table_drift(TABLE, tripled) - 2) < 1e-6,
      fid.table_drift(TABLE, tripled))
short = os.path.join(td, "short.csv")
fid.write_table(short, comments, header, rows[:-1], "one row fewer (test)")
try:
    fid.combine_tables([TABLE, short], os.path.join(td, "bad.csv"), "bad")
    check("tables with different rows are refused", False, "combined")
except RuntimeError as e:
    check("tables with different rows are refused", "not the same rows" in str(e), e)
check("a calibration table is recognized", fid.is_calibration_table(TABLE))
cold1, cold3 = os.path.join(td, "cold1.csv"), os.path.join(td, "cold3.csv")
plain = [c for c in comments if not c.startswith(fid.COLD)]
fid.write_table(cold1, plain + [fid.COLD + " 1:0 10:2e-11 100:4e-11; test"], header, rows, "cold x1 (test)")
fid.write_table(cold3, plain + [fid.COLD + " 1:0 10:6e-11 100:1.2e-10; test"], header, rows, "cold x3 (test)")
fid.combine_tables([cold1, cold3], mean, "mean (test)")
check("cold-start fields are averaged", fid.cold_curve(fid.read_table(mean)[0]) == [(1, 0), (10, 4e-11), (100, 8e-11)],
      fid.cold_curve(fid.read_table(mean)[0]))
r = subprocess.run([SB, "run", "--model=lstm", f"--hw={mean}", "--policy=serial", "--rate=5", "--requests=20",
                    "--max-batch=8", "--no-db", "--json"], capture_output=True, text=True, timeout=60)
check("the averaged table loads and pays cold starts", r.returncode == 0 and json.loads(r.stdout)["cold_starts"] > 0,
      r.stderr)
# a measured field with a flat stretch, which once tripped the non-decreasing check by an ulp
flat = os.path.join(td, "flat.csv")
fid.write_table(flat, plain + [fid.COLD + " 0.5:0.0000e+00 1:1.5054e-12 2:6.2077e-12 5:6.2077e-12 10:2.8035e-11 "
                "20:8.0934e-11 50:1.0225e-10 100:1.0986e-10 200:1.0986e-10; measured"], header, rows, "flat (test)")
r = subprocess.run([SB, "run", "--model=lstm", f"--hw={flat}", "--policy=serial", "--rate=5", "--requests=20",
                    "--max-batch=8", "--no-db", "--json"], capture_output=True, text=True, timeout=60)
check("a cold-start field with a flat stretch loads", r.returncode == 0, r.stderr)

# ---- a tiny end-to-end report ----
out_csv = os.path.join(td, "fid.csv")
r = subprocess.run([sys.executable, FIDELITY, f"--simbatch={SB}", "--model=lstm", "--policies=serial,nosuch",
                    "--loads=0.5", "--requests=12", "--warmup-frac=0", "--live-repeats=1", "--max-batch=4",
                    f"--work={td}/work", f"--csv={out_csv}"], capture_output=True, text=True, timeout=300)
check("fidelity exits 0", r.returncode == 0, r.stderr[-400:])
check("fidelity names the policy it skipped", "skipped: nosuch" in r.stdout, r.stdout[-400:])
partial = os.path.join(td, "work", "points.csv")
check("progress: the point count and time left, and the row kept in WORK/points.csv as it finished (issue 38)",
      "point 1 of 1, about" in r.stderr and os.path.exists(partial) and
      [row["policy"] for row in csv.DictReader(open(partial))] == ["serial"], r.stderr[-400:])
rows = list(csv.DictReader(open(out_csv))) if os.path.exists(out_csv) else []
check("one row, serial at 50%", len(rows) == 1 and rows[0]["policy"] == "serial" and float(rows[0]["load"]) == 0.5,
      rows)
for row in rows:
    for q in ("p50", "p90", "p99"):
        sim, live = float(row[f"sim_{q}"]), float(row[f"live_{q}"])
        check(f"{q} error is (sim - live) / live", abs(float(row[f"{q}_err"]) - (sim - live) / live) < 1e-9, row)
    check("rate is the load times the device capacity",
          abs(float(row["rate_rps"]) - 0.5 * float(row["capacity_rps"])) < 1e-9, row)
    check("drift and live/table speed are finite",
          math.isfinite(float(row["drift"])) and float(row["live_vs_table"]) > 0, row)
    check("the live runs served every request", float(row["live_tput"]) > 0 and int(row["dropped"]) == 0, row)
    check("the live runtime's own time a task is kept", float(row["live_overhead_us"]) > 0 and
          float(row["live_device_ms_per_task"]) > 0, row)
    wait = float(row["runq_wait_vs_cpu"])       # this machine's figure: its form and the verdict it implies
    check("the live workers' wait for a core is kept, and VOID follows it against 10%",
          (math.isnan(wait) or wait >= 0) and row["void"] == str(not math.isnan(wait) and wait > 0.10), row)
    check("the report prints the wait and the void count", "wait/cpu" in r.stdout and "void (the live" in r.stdout,
          r.stdout[-600:])
r = subprocess.run([sys.executable, FIDELITY, "--capacity=half"], capture_output=True, text=True, timeout=60)
check("a bad --capacity exits non-zero with one line", r.returncode != 0 and len(r.stderr.strip().split("\n")) == 1,
      r.stderr)
for bad in (["--device=tpu"], ["--device=gpu", "--hw=cpu"]):   # the CPU's calibration cannot price a GPU
    r = subprocess.run([sys.executable, FIDELITY, *bad], capture_output=True, text=True, timeout=60)
    check(f"{' '.join(bad)}: exit 2 with one line", r.returncode == 2 and len(r.stderr.strip().split("\n")) == 1,
          r.stderr)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
