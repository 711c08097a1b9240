#!/usr/bin/env python3
"""Tests of scripts/plot: every figure command writes a non-empty PNG (and a
PDF) whose data file holds the expected points, checked against numbers this
script reads from the database (or from `simbatch model-info`, or the
timeline JSON) itself; a selection with no data exits 2 with one line on
stderr and draws nothing.
Usage: test_plot.py PATH/TO/simbatch PATH/TO/scripts/plot"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SB, PLOT = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def sb(*args):
    r = subprocess.run([SB, *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit(f"setup failed: simbatch {' '.join(args)}: {r.stderr}")
    return r.stdout


def plot(*args):
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True, text=True, timeout=120)


def read_dat(path):
    """[(label, [row, ...])] from a figure's data file."""
    blocks = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("# series "):
                blocks.append((line.split(": ", 1)[1], []))
            elif line and not line.startswith("#"):
                blocks[-1][1].append([float(x) if x[0].isdigit() or x[0] == "-" else x for x in line.split()])
    return blocks


def png_ok(prefix):
    try:
        with open(prefix + ".png", "rb") as f:
            head = f.read(8)
        return head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(prefix + ".png") > 2000 \
            and os.path.getsize(prefix + ".pdf") > 1000
    except OSError:
        return False


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(b))


td = tempfile.mkdtemp(prefix="simbatch-plot-")
db = os.path.join(td, "r.db")
RATES = [200, 1200]
# serial (one seed), graph --window=0 (two seeds) and graph --window=2 (one seed):
# three series; --sla=5 so the stored violation rate is a number to check the SLA figure against
for rate in RATES:
    common = ["--model=resnet50", "--hw=npu", f"--rate={rate}", "--requests=600", "--sla=5", f"--db={db}", "--quiet"]
    sb("--policy=serial", *common)
    sb("--policy=graph", "--window=0", "--seed=1", *common)
    sb("--policy=graph", "--window=0", "--seed=2", *common)
    sb("--policy=graph", "--window=2", *common)
# another model, which the figures below select away
sb("--policy=serial", "--model=lstm", "--rate=100", "--requests=200", f"--db={db}", "--quiet")

con = sqlite3.connect(db)
runs = con.execute("select r.run_id, r.policy, c.value, r.rate_rps, r.seed, r.throughput_rps, m.mean_ms, m.p50_ms,"
                   " m.p90_ms, m.p99_ms, m.sla_violation_rate from runs r join run_metrics m using (run_id)"
                   " join run_config c on c.run_id = r.run_id and c.key = 'window' where r.model = 'resnet50'").fetchall()


def series_of(policy, window):
    return "serial" if policy == "serial" else f"graph window={window}"


expect = {}   # (series, rate) -> list of runs
for row in runs:
    expect.setdefault((series_of(row[1], row[2]), row[3]), []).append(row)
SERIES = ["serial", "graph window=0", "graph window=2"]


def mean(v):
    return sum(v) / len(v)


sel = [f"--db={db}", "--model=resnet50"]

# ---- latency-vs-rate and throughput-vs-rate ----
for fig, col in (("latency-vs-rate", 6), ("throughput-vs-rate", 5)):
    out = os.path.join(td, fig)
    r = plot(fig, *sel, f"--out={out}")
    check(f"{fig}: exit 0", r.returncode == 0, r.stderr)
    check(f"{fig}: PNG and PDF", png_ok(out))
    blocks = read_dat(out + ".dat")
    check(f"{fig}: series", [b[0] for b in blocks] == SERIES, [b[0] for b in blocks])
    check(f"{fig}: rates x series points", sum(len(b[1]) for b in blocks) == len(RATES) * len(SERIES))
    ok = all(len(rows) == len(RATES) and all(
        close(row[1], mean([x[col] for x in expect[(label, row[0])]])) and row[4] == len(expect[(label, row[0])])
        for row in rows) for label, rows in blocks)
    check(f"{fig}: values are the mean over seeds", ok, blocks)
    two = [row for label, rows in blocks if label == "graph window=0" for row in rows]
    check(f"{fig}: p25 <= mean <= p75 across seeds", all(row[2] <= row[1] <= row[3] for row in two), two)

# ---- cdf at one rate ----
out = os.path.join(td, "cdf")
r = plot("cdf", *sel, "--rate=1200", f"--out={out}")
check("cdf: exit 0", r.returncode == 0, r.stderr)
check("cdf: PNG and PDF", png_ok(out))
blocks = read_dat(out + ".dat")
check("cdf: 1000 points per series", [len(b[1]) for b in blocks] == [1000] * 3, [len(b[1]) for b in blocks])
serial_id = expect[("serial", 1200)][0][0]
stored = [x[0] for x in con.execute("select latency_ms from run_cdf where run_id = ? order by quantile", (serial_id,))]
check("cdf: serial points are the stored CDF",
      all(close(a[0], b) and close(a[1], (i + 1) / 1000) for i, (a, b) in enumerate(zip(blocks[0][1], stored))))

# ---- SLA violation rate read off each run's CDF: at the runs' own --sla=5 it is their stored rate ----
out = os.path.join(td, "sla")
r = plot("sla-from-cdf", *sel, "--rate=1200", "--deadlines=1:10:1", f"--out={out}")
check("sla-from-cdf: exit 0", r.returncode == 0, r.stderr)
check("sla-from-cdf: PNG and PDF", png_ok(out))
blocks = read_dat(out + ".dat")
check("sla-from-cdf: 10 deadlines per series", [len(b[1]) for b in blocks] == [10] * 3)
at5 = {label: [row for row in rows if row[0] == 5][0][1] for label, rows in blocks}
# The figure counts the 1000 stored quantiles above the deadline; the run
# counted its n = 600 samples. Quantile i sits at position (n-1)*i/1000 among
# the order statistics (interpolated), so the two fractions differ by at most
# 1/n (the n-1 vs n scale) + 2/1000 (the quantile grid and interpolation).
SLA_TOL_PCT = 100 * (1 / 600 + 2 / 1000)
check("sla-from-cdf: at 5 ms equals the stored violation rate within 1/n + 2/1000",
      all(abs(at5[s] - 100 * mean([x[10] for x in expect[(s, 1200)]])) <= SLA_TOL_PCT + 1e-9 for s in SERIES),
      (at5, {s: [x[10] for x in expect[(s, 1200)]] for s in SERIES}))
check("sla-from-cdf: non-increasing in the deadline",
      all(all(a[1] >= b[1] for a, b in zip(rows, rows[1:])) for _, rows in blocks))

# ---- p90 vs throughput with p50/p99 bars ----
out = os.path.join(td, "p90")
r = plot("p90-vs-throughput", *sel, f"--out={out}")
check("p90-vs-throughput: exit 0", r.returncode == 0, r.stderr)
check("p90-vs-throughput: PNG and PDF", png_ok(out))
blocks = read_dat(out + ".dat")
check("p90-vs-throughput: rates x series points", sum(len(b[1]) for b in blocks) == len(RATES) * len(SERIES))
ok = all(close(row[0], mean([x[5] for x in expect[(label, row[4])]]))
         and close(row[1], mean([x[8] for x in expect[(label, row[4])]]))
         and close(row[2], mean([x[7] for x in expect[(label, row[4])]]))
         and close(row[3], mean([x[9] for x in expect[(label, row[4])]]))
         for label, rows in blocks for row in rows)
check("p90-vs-throughput: throughput, p90, p50, p99 from the database", ok, blocks)

# ---- batch size on the hardware model ----
out = os.path.join(td, "hw")
r = plot("batch-size-hw", "--model=resnet50", "--hw=npu", "--batches=1,4,16", f"--simbatch={SB}", f"--out={out}")
check("batch-size-hw: exit 0", r.returncode == 0, r.stderr)
check("batch-size-hw: PNG and PDF", png_ok(out))
rows = read_dat(out + ".dat")[0][1]
want = []
for b in (1, 4, 16):
    total = json.loads(sb("model-info", "--model=resnet50", "--hw=npu", f"--batch={b}", "--json"))["total_ms"]
    want.append((b, total, total / b, b * 1000 / total))
check("batch-size-hw: one point per batch size", len(rows) == 3)
check("batch-size-hw: latency and throughput = B / latency",
      all(all(close(x, y) for x, y in zip(row, w)) for row, w in zip(rows, want)), (rows, want))

# ---- batch size over time from a timeline ----
tl = os.path.join(td, "tl.json")
sb("--policy=graph", "--model=seq2seq", "--rate=200", "--requests=150", f"--timeline-out={tl}", "--no-db", "--quiet")
with open(tl) as f:
    events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
out = os.path.join(td, "timeline")
r = plot("batch-timeline", f"--timeline={tl}", f"--out={out}")
check("batch-timeline: exit 0", r.returncode == 0, r.stderr)
check("batch-timeline: PNG and PDF", png_ok(out))
rows = read_dat(out + ".dat")[0][1]
check("batch-timeline: one point per task", len(rows) == len(events) > 0, (len(rows), len(events)))
by_start = sorted((e["ts"] / 1e3, len(e["args"]["requests"]), (e["ts"] + e["dur"]) / 1e3) for e in events)
check("batch-timeline: step, start, batch = requests of the task, end",
      all(row[0] == k + 1 and close(row[1], s) and row[2] == n and close(row[3], end)
          for k, (row, (s, n, end)) in enumerate(zip(rows, by_start))))
check("batch-timeline: requests served = 150", sum(row[2] for row in rows) == 150)
# LLM runs (DESIGN.md 3b): goodput vs rate from the database; TTFT and TPOT CDFs from --requests-out and the database
tpu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hwmodels", "tpu_v1_like.npu")
llm_db = os.path.join(td, "llm.db")
rq = {}
for pol in ("continuous", "chunked"):
    for rate in (200, 400):
        rq[pol, rate] = os.path.join(td, f"rq_{pol}_{rate}.csv")
        sb(f"--policy={pol}", "--model=llm-tiny", f"--hw={tpu}", f"--rate={rate}", "--requests=300", "--ttft-slo=0.2",
           "--tpot-slo=0.05", f"--db={llm_db}", "--quiet", f"--requests-out={rq[pol, rate]}")
sb("--policy=lazy", "--model=seq2seq", "--rate=300", "--requests=200", f"--db={llm_db}", "--quiet")  # no goodput: left out
out = os.path.join(td, "goodput")
r = plot("goodput-vs-rate", f"--db={llm_db}", f"--out={out}")
check("goodput-vs-rate: exit 0", r.returncode == 0, r.stderr)
check("goodput-vs-rate: PNG and PDF", png_ok(out))
blocks = read_dat(out + ".dat")
con = sqlite3.connect(llm_db)
stored = {(p, rate): v for p, rate, v in con.execute(
    "select r.policy, r.rate_rps, s.value from runs r join run_stats s using (run_id) where s.key = 'goodput_rps'")}
check("goodput-vs-rate: the LLM policies only, a point per rate, the stored goodput",
      sorted(b[0].split()[0] for b in blocks) == ["chunked", "continuous"] and
      all(len(b[1]) == 2 and all(close(row[1], stored[b[0].split()[0], row[0]]) for row in b[1]) for b in blocks), blocks)
out = os.path.join(td, "tpot-cdf")
r = plot("token-cdf", f"--requests={rq['continuous', 400]},{rq['chunked', 400]}", "--labels=continuous,chunked",
         "--metric=tpot", f"--out={out}")
check("token-cdf: exit 0", r.returncode == 0, r.stderr)
check("token-cdf: PNG and PDF", png_ok(out))
blocks = read_dat(out + ".dat")
with open(rq["continuous", 400]) as f:
    reqs = [line.strip().split(",") for line in f][1:]
# TPOT per DESIGN.md 3b: (finish - first token) / (tokens - 1), requests of one token left out
tpot = sorted((float(x[3]) - float(x[6])) / (int(x[5]) - 1) * 1e3 for x in reqs if int(x[5]) > 1)
check("token-cdf: the continuous series is every request's TPOT, sorted, with its cumulative fraction",
      blocks[0][0] == "continuous" and len(blocks[0][1]) == len(tpot) and
      all(close(row[0], v, 1e-6) and close(row[1], (i + 1) / len(tpot)) for i, (row, v) in enumerate(zip(blocks[0][1], tpot))))
# the same figure from the database: each policy's stored CDF at the chosen rate, the seeds' mean
# (one seed here), equal to the run's own --requests-out file's TPOTs at the stored quantiles
out = os.path.join(td, "tpot-cdf-db")
r = plot("token-cdf", f"--db={llm_db}", "--model=llm-tiny", "--metric=tpot", "--rate=400", f"--out={out}")
check("token-cdf from the database: exit 0, PNG and PDF", r.returncode == 0 and png_ok(out), r.stderr)
blocks = read_dat(out + ".dat") if r.returncode == 0 else []


def interp(v, q):
    h = (len(v) - 1) * q
    lo = int(h)
    return v[lo] + (h - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])


check("token-cdf from the database: continuous and chunked (the seq2seq run has none), 1000 stored quantiles",
      [b[0] for b in blocks] == ["continuous", "chunked"] and len(blocks[0][1]) == 1000 and
      all(close(row[0], interp(tpot, (i + 1) / 1000), 1e-5) and close(row[1], (i + 1) / 1000)
          for i, row in enumerate(blocks[0][1])), str(blocks)[:400])
with open(out + ".dat") as f:
    title = f.readline()
check("token-cdf from the database: the title gives the arrival rate", "at 400 requests/s" in title, title)
# a replayed trace is named by its file, not by the mean rate it happens to give (issue 38)
trace_csv = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "azure-llm-2023-conv-head.csv")
trace_db = os.path.join(td, "trace.db")
sb("--policy=continuous", "--model=llm-tiny", f"--hw={tpu}", f"--trace={trace_csv}", "--over-context=drop",
   f"--db={trace_db}", "--quiet")
r = plot("token-cdf", f"--db={trace_db}", "--metric=ttft", f"--out={out}-trace")
with open(out + "-trace.dat") if r.returncode == 0 else open(os.devnull) as f:
    title = f.readline()
check("token-cdf of a replayed trace: the title names the trace's file",
      "replaying azure-llm-2023-conv-head.csv (mean " in title, r.stderr + title)
r = plot("token-cdf", f"--db={llm_db}", "--metric=itl", "--policy=lazy", f"--out={out}-none")
check("token-cdf from the database: a selection without LLM runs -> exit 2", r.returncode == 2 and
      "itl CDF" in r.stderr and not os.path.exists(out + "-none.png"), r.stderr)
r = plot("token-cdf", f"--requests={tl}", f"--out={out}-bad")
check("token-cdf: a file that is not an LLM run's requests -> exit 2", r.returncode == 2 and
      len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(out + "-bad.png"), r.stderr)

# a node-level policy: one task per cell step; the decoder cell's tasks per decoding step
tl2 = os.path.join(td, "tl2.json")
sb("--policy=cellular", "--model=seq2seq", "--rate=200", "--requests=60", f"--timeline-out={tl2}", "--no-db", "--quiet")
with open(tl2) as f:
    dec = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X" and e["name"] == "dec_cell"]
out = os.path.join(td, "timeline-dec")
r = plot("batch-timeline", f"--timeline={tl2}", "--node=dec_cell", "--per-step", f"--out={out}")
check("batch-timeline per decoding step: exit 0", r.returncode == 0, r.stderr)
check("batch-timeline per decoding step: PNG and PDF", png_ok(out))
rows = read_dat(out + ".dat")[0][1]
check("batch-timeline per decoding step: one point per decoder-cell task",
      len(rows) == len(dec) > 0 and all(row[4] == "dec_cell" for row in rows), (len(rows), len(dec)))
check("batch-timeline per decoding step: the batches of those tasks",
      [row[2] for row in rows] == [len(e["args"]["requests"]) for e in sorted(dec, key=lambda e: e["ts"])])

# ---- a sweep with seeds and a bookkeeping option (sweep-point): one series per configuration ----
sdb = os.path.join(td, "sweep.db")
spec = os.path.join(td, "s.sweep")
with open(spec, "w") as f:
    f.write("fixed --model=gnmt --requests=300\naxis policy = serial lazy\naxis rate = 40 120\nseeds 1..3\n")
r = subprocess.run([SB, "sweep", spec, f"--db={sdb}", "--quiet"], capture_output=True, text=True, timeout=300)
check("sweep for the figure ran", r.returncode == 0, r.stderr)
out = os.path.join(td, "sweep-lat")
r = plot("latency-vs-rate", f"--db={sdb}", f"--out={out}")
check("sweep figure: exit 0", r.returncode == 0, r.stderr)
blocks = read_dat(out + ".dat")
check("sweep figure: one series per configuration (not per run)", [b[0] for b in blocks] == ["serial", "lazy"],
      [b[0] for b in blocks])
blocks_before_second = blocks
scon = sqlite3.connect(sdb)
ok = True
for label, rows in blocks:
    for row in rows:
        vals = sorted(v for (v,) in scon.execute(
            "select m.mean_ms from runs r join run_metrics m using (run_id) where r.policy = ? and r.rate_rps = ?",
            (label, row[0])))
        # the mean and the 25th/75th percentiles of three seeds, by hand:
        # p25 = v0 + 0.5 (v1 - v0), p75 = v1 + 0.5 (v2 - v1) (linear between order statistics)
        want = (sum(vals) / 3, vals[0] + 0.5 * (vals[1] - vals[0]), vals[1] + 0.5 * (vals[2] - vals[1]))
        ok = ok and len(vals) == 3 and row[4] == 3 and all(close(a, b) for a, b in zip(row[1:4], want))
check("sweep figure: seed mean and quartiles computed here agree", ok, blocks)
r = plot("latency-vs-rate", f"--db={sdb}", f"--out={out}-ci", "--bars=ci95")
blocks = read_dat(out + "-ci.dat")
ok = True
for label, rows in blocks:
    for row in rows:
        vals = [v for (v,) in scon.execute("select m.mean_ms from runs r join run_metrics m using (run_id) "
                                          "where r.policy = ? and r.rate_rps = ?", (label, row[0]))]
        m = sum(vals) / 3
        half = 4.303 * (sum((v - m) ** 2 for v in vals) / 2) ** 0.5 / 3 ** 0.5   # t(0.975, 2 df) = 4.303
        ok = ok and close(row[2], m - half) and close(row[3], m + half)
check("--bars=ci95: the 95% interval of the mean over three seeds", r.returncode == 0 and ok, blocks)
# saturation: serial at 120 req/s on GNMT (6.9 ms a request: 83% busy) is not; the marks match the database
sat = {(p, rate): n for p, rate, n in scon.execute(
    "select policy, rate_rps, sum(saturated) from runs group by policy, rate_rps")}
check("saturated_seeds column is the database's count",
      all(row[5] == sat[(label, row[0])] for label, rows in blocks for row in rows), (blocks, sat))
# a second sweep in the same database (another SLA) splits the figure; --sweep picks one (issue 38)
spec2 = os.path.join(td, "tight.sweep")
with open(spec2, "w") as f:
    f.write("fixed --model=gnmt --requests=300 --sla=50\naxis policy = serial\naxis rate = 40 120\nseeds 1..2\n")
r = subprocess.run([SB, "sweep", spec2, f"--db={sdb}", "--quiet"], capture_output=True, text=True, timeout=300)
names = {v for (v,) in scon.execute("select value from run_config where key = 'sweep-name'")}
check("each sweep stores its name with its runs", r.returncode == 0 and names == {"s", "tight"}, (names, r.stderr))
r = plot("latency-vs-rate", f"--db={sdb}", f"--out={out}-both")
both = [b[0] for b in read_dat(out + "-both.dat")] if r.returncode == 0 else []
r = plot("latency-vs-rate", f"--db={sdb}", f"--sweep={spec}", f"--out={out}-one")
one = read_dat(out + "-one.dat") if r.returncode == 0 else []
check("--sweep=FILE: only that sweep's series, with the data drawn before the second sweep",
      len(both) == 3 and one == blocks_before_second, (both, one))
r = plot("latency-vs-rate", f"--db={sdb}", "--sweep=tight", f"--out={out}-tight")
check("--sweep=NAME: the other sweep's one series", r.returncode == 0 and
      [b[0] for b in read_dat(out + "-tight.dat")] == ["serial"], r.stderr)

# ---- series that coincide are labelled (lazy and oracle on a static graph), the legend is below ----
cdb = os.path.join(td, "coincide.db")
for pol in ("lazy", "oracle", "serial"):
    for rate in (100, 300):
        sb(f"--policy={pol}", "--model=resnet50", f"--rate={rate}", "--requests=300", f"--db={cdb}", "--quiet")
out = os.path.join(td, "coincide")
r = plot("latency-vs-rate", f"--db={cdb}", f"--out={out}")
blocks = dict(read_dat(out + ".dat")) if r.returncode == 0 else {}
gp = open(out + ".gp").read() if r.returncode == 0 else ""
check("coinciding series: the data are the same, and the second says whose it repeats",
      blocks.get("lazy") == blocks.get("oracle") is not None and "'oracle (= lazy)'" in gp and
      "'serial (=" not in gp, gp[-600:])
check("the legend sits below the plot, not beside it", "set key below" in gp and "outside right" not in gp)

# ---- --best, --series, live runs labelled, selectors on live ----
bdb = os.path.join(td, "best.db")
for w in (0, 5):
    for rate in (100, 400):
        sb("--policy=graph", f"--window={w}", "--model=gnmt", f"--rate={rate}", "--requests=300", f"--db={bdb}",
           "--quiet")
for rate in (100, 400):
    sb("--policy=lazy", "--model=gnmt", f"--rate={rate}", "--requests=300", f"--db={bdb}", "--quiet")
out = os.path.join(td, "best")
r = plot("latency-vs-rate", f"--db={bdb}", "--best=graph", f"--out={out}")
blocks = read_dat(out + ".dat")
bcon = sqlite3.connect(bdb)
want = {}
for rate in (100, 400):
    want[rate] = min(v for (v,) in bcon.execute("select m.mean_ms from runs r join run_metrics m using (run_id) "
                                                "where r.policy = 'graph' and r.rate_rps = ?", (rate,)))
check("--best=graph: one series 'best graph' with the lower mean of the two windows at each rate, lazy kept",
      r.returncode == 0 and [b[0] for b in blocks] == ["best graph", "lazy"]
      and all(close(row[1], want[row[0]]) for row in blocks[0][1]), (r.stderr, blocks, want))
r = plot("latency-vs-rate", f"--db={bdb}", "--series=^graph window=5$", f"--out={out}-s")
check("--series keeps the matching series", r.returncode == 0 and [b[0] for b in read_dat(out + "-s.dat")]
      == ["graph window=5"], r.stderr)
gp = open(out + ".gp").read()
check("colours: none of gnuplot's yellow, each series its own dash", "#ffff00" not in gp.lower()
      and "dt 1" in gp and "dt 2" in gp, gp[-400:])

# live and simulated runs of one configuration are two series, and selectors tell them apart
sb("--policy=lazy", "--model=lstm", "--rate=50", "--requests=40", f"--db={bdb}", "--quiet")
r = subprocess.run([SB, "live", "--policy=lazy", "--model=lstm", "--rate=50", "--requests=40", f"--db={bdb}",
                    "--quiet"], capture_output=True, text=True, timeout=300)
check("a live run for the figure", r.returncode == 0, r.stderr)
out = os.path.join(td, "live")
r = plot("latency-vs-rate", f"--db={bdb}", "--model=lstm", f"--out={out}")
labels = [b[0] for b in read_dat(out + ".dat")] if r.returncode == 0 else []
check("live runs are their own series, labelled live", len(labels) == 2 and sum(l.endswith(" live") for l in labels) == 1,
      (r.stderr, labels))
r = plot("latency-vs-rate", f"--db={bdb}", "--model=lstm", "--where=live=1", f"--out={out}-1")
kept = [b[0] for b in read_dat(out + "-1.dat")] if r.returncode == 0 else []
check("--where=live=1 keeps the live run", len(kept) == 1 and kept[0].endswith(" live"), (r.stderr, kept))

# ---- Fig. 15 from a sweep with an sla axis: the figure's points are the runs' own violation rates ----
ldb = os.path.join(td, "sla.db")
lspec = os.path.join(td, "sla.sweep")
with open(lspec, "w") as f:
    f.write("fixed --model=gnmt --requests=400 --rate=120\naxis policy = serial lazy\naxis sla = 10 20 40\n"
            "seeds 1..2\n")
r = subprocess.run([SB, "sweep", lspec, f"--db={ldb}", "--quiet"], capture_output=True, text=True, timeout=300)
check("sla sweep ran", r.returncode == 0, r.stderr)
out = os.path.join(td, "sla-sweep")
r = plot("sla", f"--db={ldb}", f"--out={out}")
check("sla: exit 0", r.returncode == 0 and png_ok(out), r.stderr)
blocks = read_dat(out + ".dat")
lcon = sqlite3.connect(ldb)
ok = [b[0] for b in blocks] == ["serial", "lazy"]
for label, rows in blocks:
    ok = ok and [row[0] for row in rows] == [10, 20, 40]
    for row in rows:
        vals = [v for (v,) in lcon.execute("select m.sla_violation_rate from runs r join run_metrics m "
                                          "using (run_id) where r.policy = ? and r.sla_ms = ?", (label, row[0]))]
        ok = ok and len(vals) == 2 and close(row[1], 100 * sum(vals) / 2)
check("sla: each deadline's point is the mean of its own runs' violation rates", ok, blocks)
empty_sla = plot("sla", *sel, "--rate=1200", f"--out={out}-one")
check("sla on runs of one SLA says to sweep one (exit 2)", empty_sla.returncode == 2
      and "sla-from-cdf" in empty_sla.stderr, empty_sla.stderr)

# ---- no data: exit 2, one line, no figure ----
def empty(name, args, needle):
    out = os.path.join(td, "empty-" + name)
    r = plot(*args, f"--out={out}")
    lines = r.stderr.strip().splitlines()
    check(name, r.returncode == 2 and len(lines) == 1 and needle in lines[0]
          and not any(os.path.exists(out + ext) for ext in (".png", ".pdf", ".dat")), (r.returncode, r.stderr))


empty("empty selection (model)", ["latency-vs-rate", f"--db={db}", "--model=gnmt"], "no run")
empty("empty selection (where)", ["p90-vs-throughput", f"--db={db}", "--where=window=77"], "no run")
empty("rate with no run", ["cdf", *sel, "--rate=333"], "no run at rate 333")
empty("timeline with no task of a node", ["batch-timeline", f"--timeline={tl}", "--node=nosuch"], "no task")
empty("missing database", ["cdf", f"--db={os.path.join(td, 'none.db')}"], "does not exist")
notdb = os.path.join(td, "notdb.db")
with open(notdb, "w") as f:
    f.write("not a database\n")
empty("not a simbatch database", ["sla", f"--db={notdb}"], "not a simbatch results database")

# ---- the script keeps the contract (issue 37): usage errors and bad files are one line, exit 2;
#      its readers are bounded (a never-ending input, a NUL byte) ----
fifo = os.path.join(td, "zeros.fifo")
os.mkfifo(fifo)
import threading


def feed_zeros():      # a pipe that never ends, as /dev/zero would be, made in td
    try:
        with open(fifo, "wb") as f:
            while True:
                f.write(b"\0" * (1 << 20))
    except (BrokenPipeError, OSError):
        pass


threading.Thread(target=feed_zeros, daemon=True).start()
nul = os.path.join(td, "nul.json")
with open(nul, "wb") as f:
    f.write(b'{"traceEvents": [\0]}')
for name, args, needle in (("an unknown figure", ["nosuch"], "invalid choice"),
                           ("no figure", [], "name a figure"),
                           ("an unknown option", ["cdf", "--bogus"], "--bogus"),
                           ("a missing required option", ["batch-timeline"], "--timeline"),
                           ("a timeline that never ends (NUL bytes)", ["batch-timeline", f"--timeline={fifo}"], "NUL"),
                           ("a NUL byte in a timeline", ["batch-timeline", f"--timeline={nul}"], "NUL")):
    r = plot(*args)
    lines = r.stderr.strip().splitlines()
    check(f"scripts/plot, {name}: one line, exit 2", r.returncode == 2 and len(lines) == 1 and needle in lines[0],
          (r.returncode, r.stderr[-300:]))
# ---- a configuration search's capacity against cost: the front worked out by hand ----
# (cost, capacity): (1, 2), (2, 1.5), (2, 3), (4, 5), and one infeasible: the front is (1, 2), (2, 3) (at
# $2 the larger capacity), (4, 5)
sres = os.path.join(td, "search.csv")
with open(sres, "w") as f:
    f.write("key,gpus,cost_per_hour,status,capacity_rps,bracket_lo_rps,bracket_hi_rps,band_lo_rps,band_hi_rps,reason\n"
            '"a=1",1,1,ok,2,2,2.1,1.9,2.2,""\n"a=2",2,2,ok,1.5,1.5,1.6,nan,nan,""\n"a=3",2,2,ok,3,3,3.1,2.8,3.2,""\n'
            '"a=4",4,4,ok,5,5,5.2,4.5,5.5,""\n"a=5",8,8,infeasible,0,0,0,nan,nan,"no rate meets the targets"\n')
out = os.path.join(td, "pareto")
r = plot("search-pareto", f"--results={sres}", f"--out={out}")
blocks = dict(read_dat(out + ".dat")) if r.returncode == 0 else {}
check("search-pareto: every configuration with a capacity, and the front by hand",
      r.returncode == 0 and png_ok(out) and len(blocks.get("configurations", [])) == 4 and
      [row[:2] for row in blocks.get("Pareto front", [])] == [[1, 2], [2, 3], [4, 5]], (r.stderr, blocks))
check("search-pareto: a band missing (nan) is drawn as no bar",
      [row[2:4] for row in blocks.get("configurations", []) if row[1] == 1.5] == [[1.5, 1.5]], blocks)
import shlex  # noqa: E402  (the labels are quoted words)
labels = [shlex.split(x)[5] for x in (open(out + ".dat").read().split("# series 1: Pareto front\n")[1].splitlines()
                                      if r.returncode == 0 else []) if x and not x.startswith("#")]
check("search-pareto: each front point labelled with its configuration, its capacity to its bracket's place (0.1, 0.2)",
      labels == ["a=1: 2.0 req/s", "a=3: 3.0 req/s", "a=4: 5.0 req/s"], labels)

# ---- titles name what the database stores for the runs (issue 51), from a database made by hand ----
sys.path.insert(0, os.path.dirname(PLOT))
from plot_runs import band_decimals  # noqa: E402
# util/text's txt_band_decimals: the place of the band's leading digit (0.87: 1, 390: 0), 6 without a band
check("band_decimals: the band's leading digit's place",
      [band_decimals(b) for b in (0.87, 390, 0.099, 1, 9.99, 0, float("nan"))] == [1, 0, 2, 0, 0, 6, 6])


def hand_db(path, runs, searches=()):
    """A results database written here, not by simbatch: runs are (policy, model, hw, rate, sla_ms,
    goodput or None, summary_json, {option: value}); searches are (file, [(key, cost, capacity,
    bracket_lo, bracket_hi, pareto)])."""
    c = sqlite3.connect(path)
    c.executescript(
        "create table simbatch_meta(key text primary key, value text not null);"
        "insert into simbatch_meta values ('application', 'simbatch'), ('schema_version', '5');"
        "create table runs(run_id integer primary key, created_utc text, live integer, policy text, model text,"
        " hw text, rate_rps real, seed integer, sla_ms real, completed integer, throughput_rps real,"
        " mean_batch real, summary_json text, saturated integer);"
        "create table run_config(run_id integer, key text, value text);"
        "create table run_metrics(run_id integer primary key, mean_ms real, p50_ms real, p90_ms real,"
        " p99_ms real, p999_ms real, sla_violation_rate real);"
        "create table run_stats(run_id integer, key text, value real);"
        "create table searches(search_id integer primary key, file text);"
        "create table search_configs(search_id integer, config text, key text, status text, cost_per_hour real,"
        " capacity_rps real, bracket_lo_rps real, bracket_hi_rps real, band_lo_rps real, band_hi_rps real,"
        " pareto integer)")
    for i, (policy, model, hw, rate, sla, goodput, summary, opts) in enumerate(runs, 1):
        c.execute("insert into runs values (?, '2026-01-01', 0, ?, ?, ?, ?, 1, ?, 100, ?, 1, ?, 0)",
                  (i, policy, model, hw, rate, sla, rate, summary))
        c.execute("insert into run_metrics values (?, 10, 9, 12, 15, 16, 0.1)", (i,))
        for k, v in opts.items():
            c.execute("insert into run_config values (?, ?, ?)", (i, k, v))
        if goodput is not None:
            c.execute("insert into run_stats values (?, 'goodput_rps', ?)", (i, goodput))
    for sid, (file, configs) in enumerate(searches, 1):
        c.execute("insert into searches values (?, ?)", (sid, file))
        for key, cost, cap, blo, bhi, pareto in configs:
            c.execute("insert into search_configs values (?, ?, ?, 'ok', ?, ?, ?, ?, ?, ?, ?)",
                      (sid, key, key, cost, cap, blo, bhi, cap * 0.9, cap * 1.1, pareto))
    c.commit()
    c.close()


def title_of(prefix):
    """The gnuplot title's two lines, and the data file's context line."""
    gp = open(prefix + ".gp").read()
    line = next(x for x in gp.splitlines() if x.startswith("set title "))
    dat = open(prefix + ".dat").read()
    context = next(x for x in dat.splitlines() if x.startswith("# context: "))[len("# context: "):]
    return line[len('set title "'):line.rindex('"')].split("\\n"), context


llm_opts = {"tp": "2", "engine": "vllm-9.9", "ttft-slo": "321", "tpot-slo": "45", "replicas": "1"}
measured = json.dumps({"hw": "gpu-x9", "hw_layer_error_pct": {"median": 1, "p90": 4}})
hdb = os.path.join(td, "hand.db")
SHARED = "model=llm-test-13b hw=gpu-x9 ttft-slo=321 tpot-slo=45"      # the search's options every configuration has
hand_db(hdb, [("slo", "llm-test-13b", "gpu-x9", 3, 100, 2.5, measured, llm_opts),
              ("continuous", "llm-test-13b", "gpu-x9", 3, 100, 2.0, measured, llm_opts),
              ("serial", "node-net", "npu-y", 50, 7, None, "{}", {}),
              ("lazy", "node-net", "npu-y", 50, 7, None, "{}", {})],
        [("bench/x.search", [(SHARED + " tp=1", 2, 10, 10, 10.6, 1), (SHARED + " tp=2", 4, 9, 9, 9.3, 0),
                             (SHARED + " tp=4", 8, 33.33, 33.3, 33.38, 1)])])
out = os.path.join(td, "hand-goodput")
r = plot("goodput-vs-rate", f"--db={hdb}", f"--out={out}")       # no selection: the title is the database's
lines, context = title_of(out) if r.returncode == 0 else ([], "")
want = "llm-test-13b on gpu-x9 (measured), TP 2, engine vllm-9.9; SLOs TTFT 321 ms, TPOT 45 ms"
check("goodput-vs-rate's title names the model, hardware, TP, engine and SLOs stored for its runs",
      r.returncode == 0 and len(lines) == 2 and lines[1] == want and context == want, (r.stderr, lines, context))
out = os.path.join(td, "hand-latency")
r = plot("latency-vs-rate", f"--db={hdb}", "--policy=serial", f"--out={out}")
lines, _ = title_of(out) if r.returncode == 0 else ([], "")
check("a figure of serial runs names no SLA (nothing in it depends on one)",
      r.returncode == 0 and lines[1:] == ["node-net on npu-y"], (r.stderr, lines))
r = plot("latency-vs-rate", f"--db={hdb}", "--model=node-net", f"--out={out}")
lines, _ = title_of(out) if r.returncode == 0 else ([], "")
check("... with lazy, which decides by the SLA, the stored SLA is named",
      r.returncode == 0 and lines[1:] == ["node-net on npu-y; SLA 7 ms"], (r.stderr, lines))

# search-pareto from the stored search: the front by hand ($2: 10, $8: 33.33; $4's 9 is below $2's 10),
# each front point labelled with the option that tells the configurations apart and its capacity to the
# place of its bracket's width (0.6: 1 decimal; 0.08: 2)
out = os.path.join(td, "hand-pareto")
r = plot("search-pareto", f"--db={hdb}", f"--out={out}")
front = []
if r.returncode == 0:
    dat = open(out + ".dat").read().split("# series 1: Pareto front\n")[1]
    front = [shlex.split(x)[5] for x in dat.splitlines() if x and not x.startswith("#")]
lines, _ = title_of(out) if r.returncode == 0 else ([], "")
check("search-pareto --db: the stored front, labelled with its configuration and capacity",
      front == ["tp=1: 10.0 req/s", "tp=4: 33.33 req/s"], (r.stderr, front))
check("search-pareto --db: the title names the search's model, hardware and SLOs",
      len(lines) == 2 and lines[1].startswith("llm-test-13b on gpu-x9; SLOs TTFT 321 ms, TPOT 45 ms"), lines)

# ---- scripts/figures --from-db: draws the set's figures a database holds; refuses a database that is not one ----
FIGURES = os.path.join(os.path.dirname(PLOT), "figures")


def figures(*args):
    return subprocess.run(["bash", FIGURES, *args], capture_output=True, text=True, timeout=300)


for name, path, needle in (("a missing database", os.path.join(td, "none.db"), "does not exist"),
                           ("a file that is no database", notdb, "not a simbatch results database"),
                           ("a simbatch database without a run of the set", hdb, "no run of the figure set")):
    fout = os.path.join(td, "figs-" + name.replace(" ", "-"))
    r = figures(f"--from-db={path}", f"--out={fout}")
    lines = r.stderr.strip().splitlines()
    check(f"figures --from-db, {name}: exit 2, its line, nothing written", r.returncode == 2 and needle in lines[-1]
          and not os.path.exists(fout), (r.returncode, r.stderr[-400:]))
    if name != "a simbatch database without a run of the set":     # that one also names each figure left out
        check(f"... one line", len(lines) == 1, lines)
ldb = os.path.join(td, "llm70.db")
hand_db(ldb, [("chunked", "llama2-70b", "gpu-h100", rate, 100, rate * 0.9, measured, llm_opts) for rate in (2, 4)])
fout = os.path.join(td, "figs-llm")
r = figures(f"--from-db={ldb}", f"--out={fout}")
made = sorted(f for f in os.listdir(fout) if f.endswith(".png")) if os.path.isdir(fout) else []
check("figures --from-db: the figure its runs make, the others left out by name", r.returncode == 0 and
      made == ["goodput-vs-rate-llm.png"] and "left out: plot cdf" in r.stderr, (r.stderr[-500:], made))

r = plot("--help")
check("scripts/plot --help: exit 0", r.returncode == 0 and "FIGURE" in r.stdout, r.stderr)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
