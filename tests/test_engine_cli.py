#!/usr/bin/env python3
"""End-to-end tests of --engine (hwmodels/engine_profile.h, engines/FORMAT.md): a run with it says what it
set and prices in its header, its JSON and its database row; the run's own options override the version's
defaults; without it nothing of it appears; capacity and search print the launch command; and each kind of bad input
(an unknown version, a profile with an unknown key, a missing value, a NaN, a negative time, an all-reduce
curve out of order or with a non-positive time, --engine-off without --engine or with an unknown term, a
model or hardware it cannot price) exits 2 with one line naming the file, line and key or the option, and
stores nothing.
Usage: test_engine_cli.py PATH/TO/simbatch"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
failures = []
LLM = ["--model=llama2-70b", "--hw=gpu-h100", "--tp=4", "--rate=2", "--requests=60"]


def sb(*args, env=None):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=300, env=env)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + detail))
    if not cond:
        failures.append(name)


def config(db):
    con = sqlite3.connect(db)
    try:
        return dict(con.execute("select key, value from run_config").fetchall())
    finally:
        con.close()


def refused(name, args, want, td, env=None):
    db = os.path.join(td, name + ".db")
    r = sb(*args, f"--db={db}", env=env)
    lines = r.stderr.strip().splitlines()
    check(name, r.returncode == 2 and len(lines) == 1 and want in r.stderr and not os.path.exists(db),
          f"rc {r.returncode}: {r.stderr!r}")


with tempfile.TemporaryDirectory() as td:
    # a run with the engine: header, JSON and database say what it set and prices; the run's own budget and
    # sequences override the version's 8192 and 1024
    db = os.path.join(td, "e.db")
    r = sb(*LLM, "--engine=vllm-0.15", "--max-batched-tokens=2048", "--max-seqs=128", f"--db={db}")
    check("engine run", r.returncode == 0, r.stderr)
    head = [ln for ln in r.stdout.splitlines() if ln.startswith("  engine")]
    check("engine header", len(head) == 1 and "vllm-0.15" in head[0] and "chunked 2048 tokens, 128 sequences" in
          head[0] and "async scheduling on" in head[0] and "CUDA graphs to 256 tokens" in head[0], r.stdout)
    cfg = config(db)
    check("engine stored", cfg.get("engine") == "vllm-0.15" and "CUDA graphs to 256" in cfg.get("effective.engine", ""),
          str(cfg))
    j = json.loads(sb(*LLM, "--engine=vllm-0.15", "--no-db", "--json").stdout)
    check("engine json: the version's defaults", "chunked 8192 tokens, 1024 sequences" in j.get("engine", "") and
          j.get("policy") == "chunked", str(j.get("engine")))
    # the policy given overrides the version's; its async scheduling applies to continuous too
    j = json.loads(sb(*LLM, "--engine=vllm-0.15", "--policy=continuous", "--no-db", "--json").stdout)
    check("engine under --policy", j.get("policy") == "continuous" and "continuous" in j.get("engine", ""),
          str(j.get("engine")))
    # without it: no line, no key
    db2 = os.path.join(td, "plain.db")
    r = sb(*LLM, f"--db={db2}")
    check("no engine, nothing of it", r.returncode == 0 and "engine" not in r.stdout and
          not any(k.startswith("engine") or k == "effective.engine" for k in config(db2)), r.stdout)
    # every pricing term off: the GPU alone, the same figures
    a = json.loads(sb(*LLM, "--policy=chunked", "--no-db", "--json").stdout)
    b = json.loads(sb(*LLM, "--engine=vllm-0.15", "--engine-off=allreduce,padding,launch,async",
                      "--max-batched-tokens=512", "--max-seqs=256", "--no-db", "--json").stdout)
    check("terms off: the GPU alone", a["latency_ms"] == b["latency_ms"] and a["ttft_ms"] == b["ttft_ms"],
          f"{a['latency_ms']} vs {b['latency_ms']}")
    # capacity prints the launch command
    r = sb("capacity", "--no-db", "--model=llama2-70b", "--tp=4", "--engine=vllm-0.15", "--max-batched-tokens=2048",
           "--ttft-slo=2000", "--tpot-slo=200", "--requests=400", "--jobs=1")
    launch = [ln for ln in r.stdout.splitlines() if ln.startswith("  launch")]
    check("capacity launch command", r.returncode == 0 and len(launch) == 1 and
          "vllm serve MODEL --tensor-parallel-size 4 --max-num-batched-tokens 2048 --max-num-seqs 1024" in launch[0],
          r.stdout + r.stderr)

    # search prints it for its answer
    spec = os.path.join(td, "e.search")
    with open(spec, "w") as f:
        f.write("fixed  --model=llama2-70b --hw=gpu-h100 --engine=vllm-0.15 --input-len=fixed:512 "
                "--output-len=fixed:128 --ttft-slo=2000 --tpot-slo=200 --requests=1500\n"
                "axis   max-seqs = 64\ncost   gpu-h100 = 4.0\ntarget 3\naxis   tp = 4\n")
    r = sb("search", spec, "--no-db", "--jobs=1", f"--out={os.path.join(td, 'e.csv')}")
    launch = [ln for ln in r.stdout.splitlines() if ln.startswith("  launch")]
    check("search launch command", r.returncode == 0 and len(launch) == 1 and
          "--tensor-parallel-size 4 --max-num-batched-tokens 8192 --max-num-seqs 64 --async-scheduling" in launch[0],
          r.stdout + r.stderr)

    # bad input
    refused("unknown version", [*LLM, "--engine=vllm-9.9"], "--engine=vllm-9.9: no such engine profile", td)
    r = sb(*LLM, "--engine=vllm-9.9", "--no-db")
    check("unknown version lists the ones there", "vllm-0.15" in r.stderr, r.stderr)
    good = open(os.path.join(ROOT, "engines", "vllm-0.15.engine")).read()
    lines = good.split("\n")
    at = next(i for i, ln in enumerate(lines) if ln.startswith("launch_us"))
    for name, new, say in [("unknown key", "launch_ms = 9.8", f":{at + 1}:launch_ms: unknown key"),
                           ("missing value", "launch_us =", f":{at + 1}:launch_us: missing value"),
                           ("NaN", "launch_us = nan", f":{at + 1}:launch_us: must be a time"),
                           ("negative time", "launch_us = -9.8", f":{at + 1}:launch_us: must be a time")]:
        path = os.path.join(td, name.replace(" ", "-") + ".engine")
        with open(path, "w") as f:
            f.write("\n".join(lines[:at] + [new] + lines[at + 1:]))
        refused("engine profile: " + name, [*LLM, f"--engine={path}"], path + say, td)
    # the all-reduce curves: a copy of the tables with one row out of order, one time not positive
    for name, old, new, say in [("curve out of order", "4,1048576,0.018", "4,100,0.018", ":2 (bytes): rows must be"),
                                ("curve time not positive", "4,1048576,0.018", "4,1048576,0", ":3 (ms): must be a")]:
        tables = os.path.join(td, "tables-" + name.replace(" ", "-"))
        shutil.copytree(os.path.join(ROOT, "calib", "tables"), tables)
        p = os.path.join(tables, "allreduce-custom-h100.csv")
        text = open(p).read()
        with open(p, "w") as f:
            f.write(text.replace(old, new))
        line = text.split("\n").index(old) + 1
        env = dict(os.environ, SIMBATCH_CALIB_TABLES=tables)
        refused(name, [*LLM, "--engine=vllm-0.15"], f"{p}:{line}{say}", td, env)
    refused("--engine-off without --engine", [*LLM, "--engine-off=padding"], "--engine-off", td)
    refused("--engine-off unknown term", [*LLM, "--engine=vllm-0.15", "--engine-off=warp"], "unknown term 'warp'", td)
    refused("node-level model", ["--model=resnet50", "--engine=vllm-0.15", "--rate=10", "--requests=10"],
            "--engine applies to an LLM", td)
    refused("roofline", ["--model=llama2-7b", "--hw=gpu-h100-roofline", "--engine=vllm-0.15", "--requests=10"],
            "hw gpu-h100-roofline is not one", td)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
