#!/usr/bin/env python3
"""End-to-end tests of --scenario (MLPerf's scenarios, sim/study/scenario.h), `sweep --rates=auto`
(sim/cli/sweep_auto.c) and the token front's Pareto set (scripts/plot_csv.py), each against numbers
derived by hand: a one-node model whose every batch takes L = 2 ms under the serial policy serves
one request every L, so single-stream's throughput is 1/L and its p90 L; a multi-stream query of 8
samples takes 8 L; offline sends every request at 0 s and serves 1/L; the auto sweep's saturation
rate is that 1/L, within capacity's bracket, and its rates lie below it; search --front's figures
recomputed from the rows of the same run. Bad input: one line, exit 2, nothing stored.
Usage: test_scenarios.py PATH/TO/simbatch"""
import csv
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import plot_csv  # noqa: E402

failures = []
L = 0.002


def sb(*args):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=300)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def close(a, b, rel=1e-6):
    return abs(a - b) <= rel * abs(b)


def refused(name, args, want, td):
    db = os.path.join(td, name + ".db")
    r = sb(*args, f"--db={db}")
    lines = r.stderr.strip().splitlines()
    check(name, r.returncode == 2 and len(lines) == 1 and want in r.stderr and not os.path.exists(db),
          f"rc {r.returncode}: {r.stderr!r}")


with tempfile.TemporaryDirectory() as td:
    model, table = os.path.join(td, "one.model"), os.path.join(td, "fixed.csv")
    with open(model, "w") as f:
        f.write("model one\nsource test: one static node\nnode a static gemm=1,16,16\n")
    with open(table, "w") as f:
        f.write(f"node,batch,latency_s\n*,1,{L}\n*,8,{L}\n")
    M = [f"--model={model}", f"--hw={table}", "--policy=serial", "--max-batch=8"]

    r = sb(*M, "--scenario=single-stream", "--requests=500", "--no-db", "--json")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    sc = d.get("scenario", {})
    check("single-stream: throughput 1/L", close(sc.get("throughput_rps", 0), 1 / L), d)
    check("single-stream: p90 = L", close(sc.get("p90_latency_ms", 0), 1e3 * L), sc)

    r = sb(*M, "--scenario=multi-stream", "--requests=800", "--no-db", "--json")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    check("multi-stream: a query of 8 samples takes 8 L, served one by one",
          close(d.get("scenario", {}).get("p99_query_latency_ms", 0), 8e3 * L), r.stdout + r.stderr)

    out = os.path.join(td, "offline.csv")
    r = sb(*M, "--scenario=offline", "--requests=300", "--no-db", "--json", f"--requests-out={out}")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    with open(out) as f:
        rows = list(csv.DictReader(f)) if r.returncode == 0 else []
    check("offline: every request arrives at 0 s", len(rows) == 300 and all(float(x["arrival_s"]) == 0 for x in rows),
          r.stderr)
    check("offline: throughput 1/L", close(d.get("scenario", {}).get("throughput_rps", 0), 1 / L), d.get("scenario"))

    # an LLM's offline: output tokens a second over the measured span, by hand from its rows
    out = os.path.join(td, "llm.csv")
    r = sb("--model=llama2-7b", "--scenario=offline", "--requests=60", "--no-db", "--json", f"--requests-out={out}")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    with open(out) as f:
        rows = list(csv.DictReader(f)) if r.returncode == 0 else []
    tok = sum(int(x["output_len"]) for x in rows) / max(float(x["finish_s"]) for x in rows) if rows else -1
    check("LLM offline: output tokens/s", close(d.get("scenario", {}).get("output_tokens_per_s", 0), tok, 1e-6),
          (d.get("scenario"), tok))
    r = sb("--model=llama2-7b", "--scenario=interactive", "--rate=2", "--requests=60", "--no-db", "--json")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    sc = d.get("scenario", {})
    check("LLM interactive: MLPerf's 450 ms / 40 ms at p99",
          sc.get("ttft_limit_ms") == 450 and sc.get("tpot_limit_ms") == 40 and
          sc.get("met") == (d["ttft_ms"]["p99"] <= 450 and d["tpot_ms"]["p99"] <= 40), sc)

    # the automatic rate sweep: saturation 1/L; its rates below it; every run stored
    db, csvf = os.path.join(td, "sweep.db"), os.path.join(td, "sweep.csv")
    r = sb("sweep", "--rates=auto", "--points=4", *M, "--requests=2000", f"--db={db}", f"--out={csvf}", "--json",
           "--jobs=2")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    sat = d.get("saturation_rps", 0)
    rates = [p["rate_rps"] for p in d.get("points", [])]
    check("auto sweep: saturation 1/L", close(sat, 1 / L), r.stderr)
    check("auto sweep: 4 rates, rising, all below saturation",
          len(rates) == 4 and rates == sorted(rates) and all(x < sat for x in rates), rates)
    with sqlite3.connect(db) as con:
        n = con.execute("select count(*) from runs").fetchone()[0] if os.path.exists(db) else 0
    check("auto sweep: every run stored (2 ends + 4 rates)", n == 6, n)
    with open(csvf) as f:
        check("auto sweep: CSV rows", len(list(csv.DictReader(f))) == 4)
    # capacity's bisection at a loose SLA brackets the same rate (its default requests: a shorter run at a rate
    # above 1/L may still pass; the study layer's estimate, 8 / L for a max batch of 8, is no saturation rate here)
    r = sb("capacity", *M, "--sla=1000", "--json", "--jobs=2", "--no-db")
    cap = json.loads(r.stdout) if r.returncode == 0 else {}
    lo, hi = cap.get("bracket_rps", [0, 0])
    check("auto sweep: saturation within capacity's bracket", 0 < lo <= sat <= hi * (1 + 1e-9),
          (lo, hi, sat, r.stderr))

    # an LLM's sweep: its saturation rate is the throughput of the same options under --scenario=offline (same
    # seed, same run), its synchronous rate that of one client; TTFT and TPOT reported at every rate
    L7 = ["--model=llama2-7b", "--requests=200", "--no-db"]
    r = sb("sweep", "--rates=auto", "--points=3", *L7, "--json", "--jobs=2")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    off = json.loads(sb(*L7, "--scenario=offline", "--json").stdout)
    one = json.loads(sb(*L7, "--concurrency=1", "--json").stdout)
    check("LLM auto sweep: saturation = offline's throughput, synchronous = one client's",
          d.get("saturation_rps") == off["throughput_rps"] and d.get("synchronous_rps") == one["throughput_rps"],
          (r.stderr, d.get("saturation_rps"), off["throughput_rps"]))
    pts = d.get("points", [])
    check("LLM auto sweep: rates below saturation, TTFT and TPOT at each",
          len(pts) == 3 and all(p["rate_rps"] < d["saturation_rps"] and p["ttft_ms"]["p99"] > 0 and
                                p["tpot_ms"]["p99"] > 0 for p in pts) and
          pts[0]["rate_rps"] == float(f"{one['throughput_rps']:.6g}"), pts)

    # the Pareto front of a hand-made point set: (x, y), more is better in both
    pts = [(1, 10, "a"), (2, 9, "b"), (2, 5, "c"), (3, 3, "d"), (1.5, 9, "e"), (4, 1, "f"), (0.5, 11, "g")]
    check("pareto front by hand", [q[2] for q in plot_csv.pareto_front(pts)] == ["g", "a", "b", "d", "f"],
          plot_csv.pareto_front(pts))

    # search --front: each configuration at its capacity; tokens/s/user 1000 / mean TPOT, tokens/s/GPU the
    # measured requests' output tokens over their span / GPUs, recomputed here from the same run's rows; the
    # front marked as a second implementation (plot_csv.pareto_front) finds it
    spec = os.path.join(td, "f.search")
    with open(spec, "w") as f:
        f.write("fixed --model=llama2-7b --preset=mlperf-llama2-70b --requests=2000\naxis tp = 1 2\n"
                "axis policy = continuous chunked\ncost gpu-h100 = 4\nbudget 100\n")
    front = os.path.join(td, "front.csv")
    r = sb("search", spec, "--no-db", f"--out={os.path.join(td, 'f-res.csv')}", f"--front={front}",
           "--front-requests=1000", "--exhaustive", "--jobs=2")
    rows = list(csv.DictReader(open(front))) if r.returncode == 0 else []
    check("search --front: a point a configuration", len(rows) == 4, r.stderr[-500:])
    for row in rows[:2]:
        opts = dict(kv.split("=") for kv in row["config"].split())
        out = os.path.join(td, "front-rows.csv")
        rr = sb("--model=llama2-7b", "--ttft-slo=2000", "--tpot-slo=200", f"--tp={opts['tp']}",
                f"--policy={opts['policy']}", f"--rate={row['rate_rps']}", "--requests=1000", "--warmup=100",
                "--no-db", "--json", f"--requests-out={out}")
        d = json.loads(rr.stdout) if rr.returncode == 0 else {}
        reqs = [x for x in csv.DictReader(open(out)) if int(x["id"]) >= 100] if rr.returncode == 0 else []
        span = max(float(x["finish_s"]) for x in reqs) - min(float(x["arrival_s"]) for x in reqs) if reqs else 1
        tok = sum(int(x["output_len"]) for x in reqs) / span
        gpus = int(opts["tp"])
        check(f"search --front {row['config']}: per GPU and per user by hand",
              int(row["gpus"]) == gpus and close(float(row["tokens_per_s_per_gpu"]), tok / gpus, 1e-6) and
              close(float(row["tokens_per_s_per_user"]), 1000 / d.get("tpot_ms", {}).get("mean", 1), 1e-6),
              (row, tok / gpus, d.get("tpot_ms")))
    pts = [(float(x["tokens_per_s_per_user"]), float(x["tokens_per_s_per_gpu"]), x["config"]) for x in rows]
    check("search --front: the marked front is the Pareto set",
          sorted(x["config"] for x in rows if x["pareto"] == "1") == sorted(q[2] for q in plot_csv.pareto_front(pts)),
          rows)
    nspec = os.path.join(td, "n.search")
    with open(nspec, "w") as f:
        f.write("fixed --model=resnet50 --sla=100\naxis workers = 1 2\ncost npu = 1\nbudget 10\n")
    refused("front of a node-level search", ["search", nspec, f"--front={front}x"],
            "--front draws output tokens a second against TPOT; model resnet50 is node-level", td)
    refused("front of a part", ["search", spec, "--part=1/2", f"--front={front}x"], "not with --part", td)

    refused("unknown scenario", [*M, "--scenario=batch"], "--scenario=batch: unknown (MLPerf's: offline, server,", td)
    refused("scenario of the other kind", [*M, "--scenario=interactive"], "is MLPerf's for LLM models", td)
    refused("LLM single-stream", ["--model=llama2-7b", "--scenario=single-stream"], "for node-level models", td)
    refused("offline with a rate", [*M, "--scenario=offline", "--rate=5"], "--rate contradicts --scenario=offline", td)
    refused("server with a TTFT SLO", ["--model=llama2-7b", "--scenario=server", "--ttft-slo=9"],
            "--ttft-slo contradicts --scenario=server", td)
    refused("multi-stream with clients", [*M, "--scenario=multi-stream", "--concurrency=2"],
            "--concurrency contradicts", td)
    refused("auto sweep with a rate", ["sweep", "--rates=auto", *M, "--rate=3"],
            "--rate cannot be given to sweep --rates=auto", td)
    refused("rates other than auto", ["sweep", "--rates=1,2", *M], "--rates=1,2: only auto", td)
    refused("one point", ["sweep", "--rates=auto", "--points=1", *M], "--points", td)
    refused("auto sweep, bad run option", ["sweep", "--rates=auto", *M, "--max-batch=0"], "--max-batch", td)

sys.exit(1 if failures else 0)
