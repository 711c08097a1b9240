#!/usr/bin/env python3
"""Splitwise's design study beside ours (docs/VALIDATION.md section 7): runs
bench/splitwise-{conv,code}.search exhaustively and prints, per trace, each
design's capacity per dollar at every size simulated, and each design's best
against Baseline-H100's best.

Usage: bench/splitwise_study.py SIMBATCH [OUT_DIR]   (results CSVs into OUT_DIR, default results/)"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

HERE = os.path.dirname(os.path.abspath(__file__))


def design(config):
    """Baseline-H100/-A100, Splitwise-HH/-AA/-HA from a configuration's axis values."""
    hw = config.split()[0].split("=")[1]
    reps = config.split()[1].split("=")[1]
    kind = "H100" if hw == "gpu-h100" else "A100"
    if ":" in reps:
        return "Splitwise-HA", reps.replace(":gpu-h100", "").replace(":gpu-a100", "")
    if "+" in reps:
        return f"Splitwise-{kind[0]}{kind[0]}", reps
    return f"Baseline-{kind}", reps


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], ["OUT_DIR"])
    sb, out = a["SIMBATCH"], a.get("OUT_DIR", "results")
    os.makedirs(out, exist_ok=True)
    for trace in ("conv", "code"):
        spec = os.path.join(HERE, f"splitwise-{trace}.search")
        r = subprocess.run([sb, "search", spec, "--exhaustive", "--json", "--quiet", f"--db={os.path.join(out, 'simbatch.db')}",
                            f"--out={os.path.join(out, f'splitwise-{trace}.csv')}"], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"splitwise_study: {trace}: {r.stderr.strip()}")
        best, seen = {}, set()
        print(f"\n{trace}: design, size (replicas or P+D), $/h, capacity req/s, requests per dollar")
        for row in sorted(json.loads(r.stdout)["results"], key=lambda x: x["cost_per_hour"]):
            name, size = design(row["config"])
            if row["status"] != "ok" or (name, size) in seen:
                continue                      # Splitwise-HA appears under both hw values, identical
            seen.add((name, size))
            rpd = row["requests_per_dollar"]
            print(f"  {name:14s} {size:6s} {row['cost_per_hour']:8.2f} {row['capacity_rps']:8.2f} {rpd:8.0f}")
            if rpd > best.get(name, (0,))[0]:
                best[name] = (rpd, size)
        base = best["Baseline-H100"][0]
        print(f"{trace}: each design's best requests per dollar against Baseline-H100's best ({base:.0f})")
        for name, (rpd, size) in sorted(best.items()):
            print(f"  {name:14s} {size:6s} {rpd / base:6.2f}x")


PROG = "bench/splitwise_study.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
