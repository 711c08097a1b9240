#!/usr/bin/env python3
"""Checks that two results databases of the same sweep hold the same results,
point by point (matched by sweep-point key): every column of runs and of its
summary JSON, and every row of run_metrics, run_cdf, run_token_cdf, run_stats,
run_config and run_requests, less what differs between any two runs of one
point (run_id, created_utc, code_version, wall_s, and the option --db, which
names the file). For a change to how sweeps run, which must change no result.

Usage: bench/same_sweep.py A.db B.db   (exit 1 when a point differs or is missing)
  e.g. rm -f /tmp/a.db* /tmp/b.db*
       OLD/simbatch sweep bench/lazybatching.sweep --db=/tmp/a.db --quiet
       build/simbatch sweep bench/lazybatching.sweep --db=/tmp/b.db --quiet
       python3 bench/same_sweep.py /tmp/a.db /tmp/b.db"""
import json
import os
import sqlite3
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)
from simbatch_results import connect_to_read  # noqa: E402  (reads, creates nothing, leaves nothing beside)

PROG = "bench/same_sweep.py"

VARYING = ("run_id", "created_utc", "code_version", "wall_s")
TABLES = ("run_metrics", "run_cdf", "run_token_cdf", "run_stats", "run_config", "run_requests")


def load(path):
    try:
        return load_db(path)
    except (sqlite3.Error, KeyError, ValueError) as e:
        tc.die(PROG, tc.BadInput(f"{path}: not a simbatch sweep's results database ({e})"))


def load_db(path):
    con = connect_to_read(path)
    key = dict(con.execute("select run_id, value from run_config where key = 'sweep-point'"))
    out = {}
    cols = [c[1] for c in con.execute("pragma table_info(runs)")]
    for row in con.execute("select * from runs"):
        d = dict(zip(cols, row))
        summary = json.loads(d.pop("summary_json") or "{}")
        for k in VARYING:
            d.pop(k, None)
            summary.pop(k, None)
        out[key[row[0]]] = [d, summary, []]
    for t in TABLES:
        tcols = [c[1] for c in con.execute(f"pragma table_info({t})")]
        if not tcols:
            continue   # an older schema without the table
        for row in con.execute(f"select * from {t}"):
            d = dict(zip(tcols, row))
            rid = d.pop("run_id")
            d.pop("wall_s", None)
            if t == "run_config" and d.get("key") == "db":
                continue
            out[key[rid]][2].append((t, tuple(sorted(d.items()))))
    con.close()
    for v in out.values():
        v[2].sort(key=repr)
    return out


args = tc.hand_args(PROG, __doc__, sys.argv[1:], ["A.db", "B.db"])
a, b = load(args["A.db"]), load(args["B.db"])
missing = sorted(set(a) ^ set(b))
differ = sorted(k for k in set(a) & set(b) if a[k] != b[k])
print(f"{len(a)} and {len(b)} points; {len(missing)} in one database only; {len(differ)} differ")
for k in (missing + differ)[:5]:
    print("  " + k)
sys.exit(1 if missing or differ else 0)
