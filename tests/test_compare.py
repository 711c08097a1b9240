#!/usr/bin/env python3
"""End-to-end tests of `simbatch compare`: identical runs pass with KS 0; a
shifted distribution (the same configuration at a higher rate) fails with
exit 1 and the KS distance this script computes independently, both from the
stored 1000-point CDFs (exactly) and from the full per-request samples written
with --requests-out (within the resolution bound stated in
sim/cdf_compare.h); a text baseline (--baseline-cdf) gives the same answer as
the run it was exported from; bad input exits 2 with one line on stderr.
Usage: test_compare.py PATH/TO/simbatch"""
import bisect
import csv
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
failures = []


def sb(*args):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=120)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def ks_distance(a, b):
    """Two-sample KS distance of two samples: sup |F_a - F_b| over every value."""
    a, b = sorted(a), sorted(b)
    return max(abs(bisect.bisect_right(a, x) / len(a) - bisect.bisect_right(b, x) / len(b))
               for x in set(a) | set(b))


def stored_cdf(db, run_id):
    con = sqlite3.connect(db)
    try:
        return [r[0] for r in con.execute(
            "select latency_ms from run_cdf where run_id = ? order by quantile", (run_id,))]
    finally:
        con.close()


def sample_ms(path):
    with open(path) as f:
        return [(float(r["finish_s"]) - float(r["arrival_s"])) * 1e3 for r in csv.DictReader(f)]


def run(db, rate, out=None, seed=1):
    args = ["--policy=graph", "--model=lstm", f"--rate={rate}", "--requests=3000", f"--seed={seed}",
            f"--db={db}", "--json"]
    if out:
        args.append(f"--requests-out={out}")
    r = sb(*args)
    if r.returncode != 0:
        sys.exit(f"setup run failed: {r.stderr}")
    return json.loads(r.stdout)["run_id"]


def write_cdf_csv(path, cdf, header="quantile,latency_ms", rows=None):
    with open(path, "w") as f:
        f.write("# exported for the test\n" + header + "\n")
        for i, v in enumerate(cdf[:rows] if rows else cdf):
            f.write(f"{(i + 1) / 1000!r},{v!r}\n")


td = tempfile.mkdtemp(prefix="simbatch-compare-")
db = os.path.join(td, "r.db")
r500a = run(db, 500, os.path.join(td, "a.csv"))
r500b = run(db, 500)
r700 = run(db, 700, os.path.join(td, "b.csv"))

# ---- identical runs ----
r = sb("compare", f"--db={db}", str(r500a), str(r500b), "--json")
check("identical: exit 0", r.returncode == 0, r.stderr)
j = json.loads(r.stdout) if r.returncode == 0 else {}
check("identical: KS 0", j.get("ks") == 0 and j.get("ks_worse") == 0, j)
check("identical: ratios 1", all(q["ratio"] == 1 for q in j.get("quantiles", [])), j)
r = sb("compare", f"--db={db}", str(r500a), str(r500b), "--exact")
check("identical: --exact exit 0", r.returncode == 0, r.stdout + r.stderr)
check("text report names the runs and quantiles",
      "run 1 in" in r.stdout and "p99.9" in r.stdout and "KS distance 0.000" in r.stdout, r.stdout)

# ---- a shifted distribution: the same configuration at a higher rate ----
r = sb("compare", f"--db={db}", str(r500a), str(r700), "--json")
check("shifted: exit 1", r.returncode == 1, r.stdout + r.stderr)
j = json.loads(r.stdout) if r.stdout else {}
check("shifted: regression flagged", j.get("regression") is True, j)
base_cdf, cand_cdf = stored_cdf(db, r500a), stored_cdf(db, r700)
ks_cdf = ks_distance(base_cdf, cand_cdf)
check("shifted: KS equals the independent value on the stored CDFs",
      abs(j.get("ks", -1) - ks_cdf) < 1e-12, (j.get("ks"), ks_cdf))
ks_full = ks_distance(sample_ms(os.path.join(td, "a.csv")), sample_ms(os.path.join(td, "b.csv")))
# the bound of sim/cdf_compare.h: 2/1000 + 1/n_a + 1/n_b, with 3000 requests a run
check("shifted: KS within 2/1000 + 2/3000 of the full-sample KS",
      abs(j.get("ks", -1) - ks_full) <= 2e-3 + 2 / 3000 + 1e-12, (j.get("ks"), ks_full))
check("shifted: KS is well above the resolution", ks_full > 0.05, ks_full)
want_ratio = {0.5: 499, 0.9: 899, 0.99: 989, 0.999: 998}
check("shifted: ratios are cand/base at the stored quantiles",
      all(abs(q["ratio"] - cand_cdf[want_ratio[q["q"]]] / base_cdf[want_ratio[q["q"]]]) < 1e-12
          for q in j.get("quantiles", [])), j.get("quantiles"))
r = sb("compare", f"--db={db}", str(r500a), str(r700), "--tolerance=10", "--ks-tolerance=1")
check("shifted but within loose tolerances: exit 0", r.returncode == 0, r.stdout + r.stderr)
r = sb("compare", f"--db={db}", str(r700), str(r500a))
check("improvement: exit 0", r.returncode == 0, r.stdout + r.stderr)
r = sb("compare", f"--db={db}", str(r700), str(r500a), "--exact")
check("improvement with --exact: exit 1", r.returncode == 1 and "CHANGED" in r.stdout, r.stdout + r.stderr)
r = sb("compare", f"--db={db}", str(r700), str(r500a), "--json")
j = json.loads(r.stdout) if r.returncode == 0 else {}
check("improvement: JSON changed is true (the CDF moved) without --exact, and not a regression",
      j.get("changed") is True and j.get("regression") is False, j.get("changed"))
r = sb("compare", f"--db={db}", str(r500a), str(r500b), "--json")
check("identical: JSON changed false, no differing option",
      json.loads(r.stdout).get("changed") is False and json.loads(r.stdout).get("differing_options") == [], r.stdout)

# ---- the header names the options in which the two runs differ (issue 38) ----
r = sb("compare", f"--db={db}", str(r500a), str(r700))
check("text: 'differ in: rate 500 -> 700' and nothing else (not --db, --requests-out, effective.*)",
      "\ndiffer in: rate 500 -> 700\n" in r.stdout, r.stdout[:400])
r = sb("compare", f"--db={db}", str(r500a), str(r500b))
check("text: the same options said so", "differ in: no option (the same configuration)" in r.stdout, r.stdout[:400])
r = sb("compare", f"--db={db}", str(r500a), str(r700), "--json")
check("JSON: differing_options lists rate with both values",
      json.loads(r.stdout).get("differing_options") == [{"option": "rate", "base": "500", "cand": "700"}],
      r.stdout[:300])

# ---- --by-seed: two configurations, the seed as the unit, against a hand computation (issue 38) ----
sdb = os.path.join(td, "seeds.db")
for rate in (500, 600):
    for seed in (1, 2, 3):
        run(sdb, rate, seed=seed)
r = sb("compare", f"--db={sdb}", "--by-seed", "rate=500", "rate=600", "--json")
j = json.loads(r.stdout) if r.stdout else {}
T975_4 = 2.7764451051977987          # Student t, 97.5% quantile, 4 degrees of freedom (tables)
ok = r.returncode in (0, 1) and j.get("baseline", {}).get("seeds") == [1, 2, 3] and j["candidate"]["runs"] == 3
con = sqlite3.connect(sdb)
for k, (name, q) in enumerate((("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99.9", 0.999))):
    per = {}
    for rate in (500, 600):
        ids = [i for (i,) in con.execute("select run_id from runs where rate_rps = ?", (rate,))]
        per[rate] = [stored_cdf(sdb, i)[round(q * 1000) - 1] for i in ids]
    mb, mc = sum(per[500]) / 3, sum(per[600]) / 3
    vb = sum((x - mb) ** 2 for x in per[500]) / 2
    vc = sum((x - mc) ** 2 for x in per[600]) / 2
    half = T975_4 * ((2 * vb + 2 * vc) / 4 * (1 / 3 + 1 / 3)) ** 0.5
    got = j["quantiles"][k] if ok else {}
    ok = ok and got.get("name") == name and abs(got["diff_ms"] - (mc - mb)) <= 1e-9 * abs(mb) and \
        abs(got["low_ms"] - (mc - mb - half)) <= 1e-9 * abs(mb) and abs(got["high_ms"] - (mc - mb + half)) <= 1e-9 * abs(mb) \
        and got["worse"] == (mc - mb - half > 0.05 * mb)
con.close()
check("--by-seed: each side's per-run quantiles, their means and the pooled t-interval as computed by hand",
      ok, r.stdout[:600] + r.stderr)
check("--by-seed: exit 1 exactly when a quantile is worse", r.returncode == (1 if j.get("regression") else 0),
      r.returncode)
run(sdb, 500, seed=1)                  # the same seed again: one simulation twice
r = sb("compare", f"--db={sdb}", "--by-seed", "rate=500", "rate=600")
check("--by-seed: a repeated seed is refused (exit 2, one line)", r.returncode == 2 and "same seed" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1, r.stderr)
r = sb("compare", f"--db={sdb}", "--by-seed", "rate=600,seed=1", "rate=600")
check("--by-seed: a side of one run is refused", r.returncode == 2 and "at least two seeds" in r.stderr, r.stderr)
r = sb("compare", f"--db={sdb}", "--by-seed", "--exact", "rate=600", "rate=600")
check("--by-seed with --exact is refused", r.returncode == 2, r.stderr)

# ---- selectors and a second database ----
db2 = os.path.join(td, "other.db")
run(db2, 700)
r = sb("compare", f"--db={db2}", f"--baseline-db={db}", "policy=graph,rate=500.0", "rate=700", "--json")
check("selectors across two databases: exit 1", r.returncode == 1, r.stderr)
j = json.loads(r.stdout) if r.stdout else {}
check("selector picks the newest match", j.get("baseline", {}).get("run_id") == r500b
      and j["baseline"]["matched"] == 2, j.get("baseline"))
check("same runs, same KS", abs(j.get("ks", -1) - ks_cdf) < 1e-12, j.get("ks"))

# ---- a text baseline ----
csv_path = os.path.join(td, "base.csv")
write_cdf_csv(csv_path, base_cdf)
r = sb("compare", f"--db={db}", f"--baseline-cdf={csv_path}", str(r700), "--json")
check("text baseline: exit 1", r.returncode == 1, r.stderr)
j = json.loads(r.stdout) if r.stdout else {}
check("text baseline: same KS", abs(j.get("ks", -1) - ks_cdf) < 1e-12, j.get("ks"))
r = sb("compare", f"--db={db}", f"--baseline-cdf={csv_path}", str(r500b), "--exact")
check("text baseline of an identical run: --exact exit 0", r.returncode == 0, r.stdout + r.stderr)

# ---- bad input: exit 2, one line on stderr ----
def bad(name, args, needle):
    r = sb("compare", *args)
    lines = r.stderr.strip().splitlines()
    check(name, r.returncode == 2 and len(lines) == 1 and needle in lines[0] and r.stdout == "",
          (r.returncode, r.stderr, r.stdout))


missing = os.path.join(td, "missing.db")
bad("missing database", [f"--db={missing}", "1", "2"], "missing.db")
check("missing database is not created", not os.path.exists(missing))
foreign = os.path.join(td, "foreign.db")
con = sqlite3.connect(foreign)
con.execute("create table t(x)")
con.commit()
con.close()
bad("not a simbatch database", [f"--db={foreign}", "1", "2"], "not a simbatch results database")
text = os.path.join(td, "text.db")
with open(text, "w") as f:
    f.write("hello\n")
bad("a text file as database", [f"--db={text}", "1", "2"], "not a simbatch results database")
bad("no such run", [f"--db={db}", str(r500a), "999"], "no run 999")
bad("no run matches the selector", [f"--db={db}", str(r500a), "policy=serial"], "no run in")
bad("malformed selector", [f"--db={db}", str(r500a), "graph"], "run selector 'graph'")
bad("one run only", [f"--db={db}", str(r500a)], "two runs")
bad("negative tolerance", [f"--db={db}", "1", "2", "--tolerance=-1"], "--tolerance")
bad("baseline db and csv together", [f"--db={db}", f"--baseline-db={db}", f"--baseline-cdf={csv_path}", "1"],
    "not both")
short = os.path.join(td, "short.csv")
write_cdf_csv(short, base_cdf, rows=999)
bad("text baseline with 999 rows", [f"--db={db}", f"--baseline-cdf={short}", "1"], "999 CDF rows")
hdr = os.path.join(td, "hdr.csv")
write_cdf_csv(hdr, base_cdf, header="q,ms")
bad("text baseline without its header", [f"--db={db}", f"--baseline-cdf={hdr}", "1"], "hdr.csv:2:")
skip = os.path.join(td, "skip.csv")
with open(skip, "w") as f:
    f.write("quantile,latency_ms\n0.001,1.0\n0.003,2.0\n")
bad("text baseline skipping a quantile", [f"--db={db}", f"--baseline-cdf={skip}", "1"], "skip.csv:3:")
dec = os.path.join(td, "dec.csv")
write_cdf_csv(dec, list(reversed(base_cdf)))
bad("text baseline that decreases", [f"--db={db}", f"--baseline-cdf={dec}", "1"], "decreases")

# LLM runs: their token figures shown beside the CDF, read from each run's stored statistics
tpu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hwmodels", "tpu_v1_like.npu")
llm_db = os.path.join(td, "llm.db")
for pol in ("continuous", "static"):
    sb(f"--policy={pol}", "--model=llm-tiny", f"--hw={tpu}", "--rate=300", "--requests=300", f"--db={llm_db}", "--quiet")
r = subprocess.run([SB, "compare", f"--db={llm_db}", "1", "2", "--json"], capture_output=True, text=True)
j = json.loads(r.stdout) if r.stdout else {}
con = sqlite3.connect(llm_db)
stat = {(rid, k): v for rid, k, v in con.execute("select run_id, key, value from run_stats")}
tok = j.get("tokens", [])
check("compare of LLM runs: the token figures of both, as stored",
      len(tok) == 9 and all(t["base"] == stat[1, t["name"]] and t["cand"] == stat[2, t["name"]] for t in tok), r.stdout + r.stderr)
r = subprocess.run([SB, "compare", f"--db={db}", "1", "2", "--json"], capture_output=True, text=True)
check("compare of node-level runs: no token figures", "tokens" not in json.loads(r.stdout), r.stdout)

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
