#!/usr/bin/env python3
"""Where lazy's GNMT latency goes (docs/VALIDATION.md section 4): per policy variant, the mean
latency split into the wait before a request's first node (queue) and the time after it, and the
device's BatchTable seen from the requests: a table lives from the first node of a request that
starts on an empty device until the last of the requests it then holds, or that join it while it
runs, finishes (the requests' start and finish times, --requests-out; one device). Printed per
variant: mean over the seeds and its 95% interval (Student's t), for

  queue ms, after-start ms  the mean latency's two parts;
  table ms, table requests  how long a table lives and how many requests it serves;
  founders, joined          requests a table starts with (on the empty device, together) and
                            requests that joined it while it ran (preempting it), per table;
  after founders ms         how long a table lives on after the last of its founders finished;
  members at a join         the requests on the table when a joiner joined it (mean over joiners);
  preemptions, slack_rejections, lazy_admissions  the policy's own counters (policy_stats).

Usage: bench/lazy_tables.py SIMBATCH [RATE] [SEEDS] [REQUESTS]
(defaults 1000 req/s, seeds 1..10, 20000 requests; GNMT on the default NPU, SLA 100 ms)"""
import csv
import io
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

VARIANTS = [("lazy", ["--policy=lazy"]), ("lazy --no-preemption", ["--policy=lazy", "--no-preemption"]),
            ("lazy --no-slack-check", ["--policy=lazy", "--no-slack-check"]),
            ("lazy --coverage=0.5", ["--policy=lazy", "--coverage=0.5"]),
            ("lazy --coverage=0.99", ["--policy=lazy", "--coverage=0.99"]), ("oracle", ["--policy=oracle"])]
# Student's t, two-sided 95%, by degrees of freedom 1..30 (beyond: 1.96)
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def tables(text):
    """(tables, mean life ms, requests, founders and joiners a table, ms a table lives after its
    founders' last finish, members on the table when a joiner joined, mean over joiners: nan without one)
    from a --requests-out CSV's text.
    Start and finish are printed to the nanosecond, so a request starting where the table's last
    one finished (a new table on a drained device) compares equal, not overlapping."""
    spans = []
    for row in csv.DictReader(io.StringIO(text)):
        if row["start_s"] and row["finish_s"]:
            spans.append((float(row["start_s"]), float(row["finish_s"])))
    spans.sort()
    out = []       # [start, end, requests, joiners, founders' last finish]
    present, members = [], []        # members of the table being built: (start, finish)
    for start, finish in spans:
        if out and start < out[-1][1] - 5e-10:
            t = out[-1]
            t[1] = max(t[1], finish)
            t[2] += 1
            if start > t[0] + 5e-10:
                t[3] += 1
                present.append(sum(1 for s, f in members if s <= start < f))
            else:
                t[4] = max(t[4], finish)
        else:
            out.append([start, finish, 1, 0, finish])
            members = []
        members.append((start, finish))
    if not out:
        raise tc.BadInput("the run completed no request")
    n = len(out)
    return (n, sum(t[1] - t[0] for t in out) / n * 1e3, sum(t[2] for t in out) / n,
            sum(t[2] - t[3] for t in out) / n, sum(t[3] for t in out) / n, sum(t[1] - t[4] for t in out) / n * 1e3,
            statistics.fmean(present) if present else float("nan"))


def interval(values):
    if any(math.isnan(v) for v in values):
        return "-"                       # a figure some seed does not have (no joiner)
    m = statistics.fmean(values)
    if len(values) < 2:
        return f"{m:.4g}"
    half = (T975[len(values) - 2] if len(values) - 1 <= len(T975) else 1.96) * statistics.stdev(values) / \
        math.sqrt(len(values))
    return f"{m:.4g} +-{half:.2g}"


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], ["RATE", "SEEDS", "REQUESTS"])
    rate = tc.number(a.get("RATE", "1000"), "RATE", float, 1e-9)
    seeds = tc.number(a.get("SEEDS", "10"), "SEEDS", int, 1)
    requests = tc.number(a.get("REQUESTS", "20000"), "REQUESTS", int, 1)
    cols = ["queue ms", "after-start ms", "table ms", "table requests", "founders", "joined", "after founders ms",
            "members at a join", "preemptions",
            "slack_rejections", "lazy_admissions"]
    print(f"GNMT at {rate:g} req/s, {requests} requests, seeds 1..{seeds}: mean +-95% interval over the seeds")
    print("| variant | " + " | ".join(cols) + " |")
    print("| --- |" + " ---: |" * len(cols))
    with tempfile.TemporaryDirectory(prefix="lazy-tables-") as td:
        path = os.path.join(td, "requests.csv")
        for label, opts in VARIANTS:
            got = {c: [] for c in cols}
            for seed in range(1, seeds + 1):
                r = subprocess.run([a["SIMBATCH"], *opts, "--model=gnmt", f"--rate={rate}", f"--requests={requests}",
                                    f"--seed={seed}", "--sla=100", "--no-db", "--json", f"--requests-out={path}"],
                                   capture_output=True, text=True, check=True)
                j = json.loads(r.stdout)
                n, life, per, founders, joined, after, at_join = tables(tc.read_text(path, tc.WORKLOAD_FILE,
                                                                           "--requests-out file"))
                stats = j.get("policy_stats", {})
                vals = [j["queue_ms"]["mean"], j["latency_ms"]["mean"] - j["queue_ms"]["mean"], life, per, founders,
                        joined, after, at_join] + [stats.get(k, 0)
                                           for k in ("preemptions", "slack_rejections", "lazy_admissions")]
                for c, v in zip(cols, vals):
                    got[c].append(v)
            print(f"| {label} | " + " | ".join(interval(got[c]) for c in cols) + " |", flush=True)


PROG = "bench/lazy_tables.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
