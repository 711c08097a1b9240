#!/usr/bin/env python3
"""End-to-end tests of calibration: `simbatch calibrate --device=cpu` at
small sizes yields a table that loads as --hw=FILE, whose node latencies
equal the table's rows plus the element-wise line (recomputed here by
weighted least squares), with the same rows in SQLite; --hw=cpu runs from
the committed table; --hw=gpu-NAME without a measured table, malformed
calibration files and bad options exit 2 with one line naming the problem;
without a GPU, the CUDA calibration (when built) fails clearly.
Usage: test_calibrate.py PATH/TO/simbatch"""
import csv
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
BUILD = os.path.dirname(os.path.abspath(SB))
failures = []


def sb(*args, timeout=300, env=None):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=timeout, env=env)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def one_line_error(r, *needles):
    lines = r.stderr.strip().split("\n")
    return r.returncode == 2 and len(lines) == 1 and all(n in lines[0] for n in needles) and r.stdout == ""


td = tempfile.mkdtemp(prefix="simbatch-calib-")
model = os.path.join(td, "tiny.model")
with open(model, "w") as f:
    f.write("model tiny\nsource test\ninput_len fixed:3\n"
            "node cell encoder gemm=1,64,128 elementwise=260\n"
            "node att  encoder gemm=1,32,32,x2 attn=1,16,8\n")
out = os.path.join(td, "t.csv")
db = os.path.join(td, "t.db")

# ---- a small calibration completes and yields a valid table ----
r = sb("calibrate", "--device=cpu", f"--model={model}", "--batches=1,2,4,8", "--hidden=20", "--reps=2",
       "--max-reps=3", "--min-time=0", "--warmup=1", f"--out={out}", f"--db={db}", "--quiet")
check("calibrate exits 0", r.returncode == 0, r.stderr)
header, rows = {}, []
if os.path.exists(out):
    with open(out) as f:
        lines = f.read().split("\n")
    check("magic first line", lines[0] == "# simbatch calibration table", lines[0])
    for ln in lines[1:]:
        if ln.startswith("# ") and ":" in ln:
            k, v = ln[2:].split(":", 1)
            header[k.strip()] = v.strip()
    rows = list(csv.DictReader(ln for ln in lines if ln and not ln.startswith("#")))
check("header names device, date, library, kernels, threads",
      header.get("device", "").startswith("cpu (") and header.get("date") and "OpenBLAS" in header.get("library", "")
      and "openblas_get_corename" in header.get("kernels", "") and header.get("threads", "").startswith("1 "),
      str(header))
shapes = {(x["op"], x["m_per_sample"], x["k"], x["n"]) for x in rows}
check("every shape measured", shapes == {("gemm", "1", "64", "128"), ("gemm", "1", "32", "32"), ("attn", "1", "16", "8"),
                                         ("elementwise", "260", "0", "0")}, str(shapes))
check("four batches per shape", len(rows) == 16, str(len(rows)))
lat = {(x["op"], x["m_per_sample"], x["k"], x["n"], int(x["batch"])): float(x["latency_s"]) for x in rows}
check("latencies positive and monotone", all(v > 0 for v in lat.values()) and all(
    lat[s + (b,)] <= lat[s + (2 * b,)] for s in shapes for b in (1, 2, 4)))
check("reps recorded", all(2 <= int(x["reps"]) <= 3 for x in rows))

# the element-wise line, fitted here by weighted least squares (w = 1/y^2)
ew = [(260.0 * b, lat[("elementwise", "260", "0", "0", b)]) for b in (1, 2, 4, 8)]
W = sum(1 / y ** 2 for x, y in ew)
Wx = sum(x / y ** 2 for x, y in ew)
Wy = sum(1 / y for x, y in ew)
Wxx = sum(x * x / y ** 2 for x, y in ew)
Wxy = sum(x / y for x, y in ew)
slope = (W * Wxy - Wx * Wy) / (W * Wxx - Wx * Wx)
launch = (Wy - slope * Wx) / W
if launch < 0:
    launch, slope = 0.0, Wxy / Wxx


def expect_ms(node, b):
    if node == "cell":
        return 1e3 * (lat[("gemm", "1", "64", "128", b)] + launch + slope * 260 * b)
    return 1e3 * (2 * lat[("gemm", "1", "32", "32", b)] + lat[("attn", "1", "16", "8", b)])


for b in (1, 4, 8):
    r = sb("model-info", f"--model={model}", f"--hw={out}", f"--batch={b}", "--json")
    check(f"model-info on the table, batch {b}", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        nodes = {n["name"]: n["ms"] for n in json.loads(r.stdout)["nodes"]}
        check(f"att at batch {b} = 2 gemm + attn rows, exactly", abs(nodes["att"] - expect_ms("att", b)) <=
              1e-12 * nodes["att"], f"{nodes['att']} vs {expect_ms('att', b)}")
        check(f"cell at batch {b} = gemm row + element-wise line", abs(nodes["cell"] - expect_ms("cell", b)) <=
              1e-9 * nodes["cell"], f"{nodes['cell']} vs {expect_ms('cell', b)}")
r = sb("model-info", f"--model={model}", f"--hw={out}", "--batch=16")
check("batch above the measured ones: exit 2", one_line_error(r, "no latency for batch 16", "measured batches 1 to 8"),
      r.stderr)
r = sb(f"--model={model}", f"--hw={out}", "--policy=graph", "--max-batch=8", "--rate=200", "--requests=200",
       "--no-db", "--json")
check("a run on the calibrated table", r.returncode == 0 and json.loads(r.stdout)["completed"] == 200, r.stderr)

if os.path.exists(db):
    con = sqlite3.connect(db)
    n = con.execute("select count(*) from calib_points").fetchone()[0]
    dev = con.execute("select device from calib_tables").fetchall()
    key = con.execute("select value from calib_fields where key='kernels'").fetchone()
    same = all(abs(con.execute("select latency_s from calib_points where op=? and m_per_sample=? and k=? and n=? and "
                               "batch=?", (s[0], int(s[1]), int(s[2]), int(s[3]), s[4])).fetchone()[0] - v) <=
               1e-6 * v for s, v in lat.items())
    con.close()
    check("sqlite holds the same rows", n == len(rows) and dev == [("cpu",)] and key and same, f"{n} {dev}")
else:
    check("sqlite file written", False)

# ---- kernel selection: what ran is what was asked for, or an error ----
r = sb("calibrate", "--device=cpu", f"--model={model}", "--batches=1", "--hidden=20", "--reps=1", "--max-reps=1",
       "--rounds=1", "--min-time=0", "--coretype=Haswell", f"--out={out}", "--no-db", "--quiet")
with open(out) as f:
    text = f.read()
check("--coretype=Haswell runs and records Haswell", r.returncode == 0 and "# kernels: Haswell (" in text
      and "--coretype=Haswell" in text, r.stderr)
check("the header names the statistic (median by default)", "; median of a point's samples;" in text)
r = sb("calibrate", "--device=cpu", f"--model={model}", "--batches=1", "--hidden=20", "--reps=3", "--max-reps=3",
       "--rounds=1", "--min-time=0", "--statistic=mean", f"--out={out}", "--no-db")
with open(out) as f:
    text = f.read()
check("--statistic=mean records the mean", r.returncode == 0 and "; mean of a point's samples;" in text
      and "(mean of 3," in r.stderr, r.stderr)
r = sb("calibrate", "--device=cpu", f"--model={model}", "--batches=1", "--coretype=NoSuchCore", "--no-db",
       f"--out={os.path.join(td, 'x.csv')}", "--quiet")
check("an unknown core type is refused", r.returncode == 2 and "ignored OPENBLAS_CORETYPE=NoSuchCore" in r.stderr,
      r.stderr)
check("nothing written for a refused run", not os.path.exists(os.path.join(td, "x.csv")))

# ---- bad options ----
for args, needle in [(["calibrate"], "needs --device"), (["calibrate", "--device=tpu"], "expected cpu or gpu"),
                     (["calibrate", "--device=cpu", "--batches=4,2"], "--batches"),
                     (["calibrate", "--device=cpu", "--reps=0"], "--reps=0"),
                     (["calibrate", "--device=cpu", "--reps=1", "--max-reps=2"], "--rounds=3 exceeds --max-reps=2"),
                     (["calibrate", "--device=cpu", "--bogus=1"], "unknown option"),
                     (["calibrate", "--device=cpu", "--statistic=mode"], "--statistic=mode: expected median or mean"),
                     (["calibrate", "--device=cpu", "--model=nosuchmodel"], "unknown model 'nosuchmodel'")]:
    r = sb(*args)
    check("bad option " + " ".join(args[1:]), one_line_error(r, needle), r.stderr)
r = sb("calibrate", "--help")
check("calibrate --help", r.returncode == 0 and "--device=cpu" in r.stdout)
r = sb("calibrate", "--device=cpu", "--help")
check("calibrate --device=cpu --help", r.returncode == 0 and "--coretype" in r.stdout)

# ---- named models ----
r = sb("model-info", "--model=lstm", "--hw=gpu-v100")
check("gpu-v100 has no measured table: exit 2", one_line_error(r, "no measured table for gpu-v100", "does not exist"),
      r.stderr)
# gpu-h100 with an operator profile but no cuBLAS table: its GEMMs are predicted from Vidur's, and it says so
TABLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "calib", "tables")
ops_only = tempfile.mkdtemp(prefix="simbatch-ops-only-")
shutil.copy(os.path.join(TABLES, "ops-h100.csv"), ops_only)
r = sb("model-info", "--model=lstm", "--hw=gpu-h100", "--json", env=dict(os.environ, SIMBATCH_CALIB_TABLES=ops_only))
mi = json.loads(r.stdout) if r.returncode == 0 else {}
check("gpu-h100 without a cuBLAS table predicts an LSTM's GEMMs",
      mi.get("gpu_predicted", {}).get("shapes") == 1 and mi["gpu_predicted"]["leave_one_model_out"]["median_pct"] < 15,
      r.stderr)
# with the committed cuBLAS table (calib/tables/gpu-h100.csv, measured on an H100) its curves price them: no
# prediction, and the cell costs at least its one GEMM's measured point (1 x 2048 x 4096 at batch 1)
gemm_s = [float(x[5]) for x in csv.reader(open(os.path.join(TABLES, "gpu-h100.csv")))
          if x[:5] == ["gemm", "1", "2048", "4096", "1"]]
r = sb("model-info", "--model=lstm", "--hw=gpu-h100", "--json")
mi = json.loads(r.stdout) if r.returncode == 0 else {}
check("gpu-h100's committed cuBLAS table prices an LSTM's GEMMs",
      len(gemm_s) == 1 and "gpu_predicted" not in mi and mi["nodes"][0]["ms"] >= 1e3 * gemm_s[0], r.stderr)
empty = tempfile.mkdtemp(prefix="simbatch-no-tables-")
r = sb("model-info", "--model=lstm", "--hw=gpu-h100", env=dict(os.environ, SIMBATCH_CALIB_TABLES=empty))
check("gpu-h100 with neither table: exit 2", one_line_error(r, "no measured table for gpu-h100", "does not exist",
                                                            "ops-h100.csv"), r.stderr)
r = sb("model-info", "--model=lstm", "--hw=cpu", "--batch=64", "--json")
check("--hw=cpu from the committed table", r.returncode == 0 and json.loads(r.stdout)["hw"] == "cpu", r.stderr)
r = sb("list", "hw")
check("list hw names cpu and gpu-NAME", r.returncode == 0 and "\ncpu " in r.stdout and "gpu-NAME" in r.stdout)

# ---- malformed files: one line, file:line: field ----
bad = os.path.join(td, "bad.csv")
head = "# simbatch calibration table\n# device: cpu\n# date: d\n"
for text, needle in [
        (head + "op,m_per_sample,k,n,batch\ngemm,1,64,128,1\n", "bad.csv:4: missing column 'latency_s'"),
        (head + "op,m_per_sample,k,n,batch,latency_s\ngemm,1,64,128,1,2e-5\ngemm,1,64,128,2,1e-5\n",
         "bad.csv:6: field latency_s: non-monotone"),
        (head + "op,m_per_sample,k,n,batch,latency_s\ngemm,1,64,128,1,-2e-5\n",
         "bad.csv:5: field latency_s: '-2e-5' is not a finite number > 0"),
        ("# device: fpga\n# date: d\nop,m_per_sample,k,n,batch,latency_s\ngemm,1,64,128,1,2e-5\n",
         "bad.csv:1: field device: unknown device 'fpga'"),
        (head + "op,m_per_sample,k,n,batch,latency_s\ngemm,1,64,128,1,2e-5\nelementwise,260,0,0,1,1e-6\n"
         "elementwise,260,0,0,2,2e-6\n", "no rows for gemm 1x32x32 (m_per_sample x k x n), needed by node att of model tiny")]:
    with open(bad, "w") as f:
        f.write(text)
    r = sb("model-info", f"--model={model}", f"--hw={bad}")
    check("malformed: " + needle.split(": ", 1)[-1][:40], one_line_error(r, needle), r.stderr)

# ---- the CUDA calibration, where built: compiles here, fails clearly without a GPU ----
if os.path.exists(os.path.join(BUILD, "calib-cuda")):
    r = sb("calibrate", "--device=gpu", f"--model={model}", "--no-db", f"--out={os.path.join(td, 'g.csv')}",
           env=dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("SIMBATCH_TEST_CUDA_DEVICES", "")))
    check("calib-cuda without a GPU: exit 1, one clear line",
          r.returncode == 1 and "no CUDA GPU to calibrate" in r.stderr and len(r.stderr.strip().split("\n")) == 1,
          r.stderr)
    r = sb("calibrate", "--device=gpu", "--precision=fp8")
    check("calib-cuda bad option: exit 2", one_line_error(r, "--precision=fp8"), r.stderr)
    r = sb("calibrate", "--device=gpu", "--ops", "--model=llama2-7b", f"--out={os.path.join(td, 'ops.csv')}",
           env=dict(os.environ, CUDA_VISIBLE_DEVICES=os.environ.get("SIMBATCH_TEST_CUDA_DEVICES", "")))
    check("calib-cuda-ops without a GPU: exit 1, one clear line, no file",
          r.returncode == 1 and "no CUDA GPU to calibrate" in r.stderr and len(r.stderr.strip().split("\n")) == 1
          and not os.path.exists(os.path.join(td, "ops.csv")), r.stderr)
    r = sb("calibrate", "--device=gpu", "--ops", "--model=lstm")
    check("calib-cuda-ops refuses a node-level model: exit 2", one_line_error(r, "model lstm"), r.stderr)
    r = sb("calibrate", "--device=gpu", "--ops", "--tokens=8,4")
    check("calib-cuda-ops refuses tokens out of order: exit 2", one_line_error(r, "--tokens=8,4"), r.stderr)
else:
    print("skip calib-cuda checks: not built (no nvcc/cuBLAS)")
text_db = os.path.join(td, "notes.txt")
with open(text_db, "w") as f:
    f.write("not a database\n")
r = sb("calibrate", "--device=cpu", f"--model={model}", "--batches=1,2", f"--db={text_db}",
       f"--out={os.path.join(td, 'never.csv')}", timeout=20)
check("calibrate --db=TEXTFILE is refused before any benchmark, writing nothing",
      one_line_error(r, "not a database") and not os.path.exists(os.path.join(td, "never.csv")) and
      open(text_db).read() == "not a database\n", r.stderr)
r = sb("calibrate", "--device=cpu", "--ops")
check("--ops needs --device=gpu: exit 2", one_line_error(r, "--ops"), r.stderr)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
