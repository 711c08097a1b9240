#!/usr/bin/env python3
"""End-to-end tests of overload within a run (util/overload.h, docs/OVERLOAD.md):
a burst in the middle of a light run whose whole-run throughput meets the
offered rate is flagged, its window found again by this script's own
implementation of the criterion from the run's --requests-out and lying on the
burst, and named in the text summary, the JSON and the database; a long stable
Poisson run at rho 0.9 (an M/D/1 queue, and an LLM) is not flagged; `capacity`
fails a rate whose probe is overloaded within a window, so a loose SLA no
longer lets it climb past the service rate.
Usage: test_overload_cli.py PATH/TO/simbatch"""
import bisect
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

SB = sys.argv[1]
MAKE_TRACE = os.path.join(os.path.dirname(SB), "make-trace")
SERIAL = ["--policy=serial", "--model=resnet50"]
LLM = ["--model=llama2-7b", "--hw=gpu-h100", "--policy=chunked", "--max-batched-tokens=2048", "--max-seqs=128",
       "--input-len=566", "--output-len=247"]
failures = []

# the criterion's constants, as util/overload.h states them
WINDOW, SPAN, PAIRS, GROWTH_DIVISOR = 128, 24, 207, 8


def sb(*args):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=300)


def run_json(*args):
    r = sb("run", "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def overload_window(rows, devices=1):
    """The criterion computed afresh from a run's requests: (start_s, end_s, flagged_s) or None."""
    arrivals = sorted((float(r[1]), int(r[0])) for r in rows)
    finishes = sorted(float(r[3]) for r in rows)
    k = WINDOW * devices
    floors, starts, ends = [], [], []
    for w in range(len(arrivals) // k):
        part = arrivals[w * k:(w + 1) * k]
        # requests in the system at an arrival: those arrived before it, less those finished before it
        floors.append(min(w * k + i - bisect.bisect_left(finishes, t) for i, (t, _) in enumerate(part)))
        starts.append(part[0][0])
        ends.append(part[-1][0])
    found = None
    for j in range(SPAN - 1, len(floors)):
        f = floors[j - SPAN + 1:j + 1]
        s = sum((f[b] > f[a]) - (f[b] < f[a]) for a in range(SPAN) for b in range(a + 1, SPAN))
        if found:
            if s >= PAIRS and f[-1] > max(f[:SPAN // 2]):
                found[1] = ends[j]
                continue
            break
        if s >= PAIRS and f[-1] - f[0] >= max(f[0], k / GROWTH_DIVISOR):
            near = min(f) + (f[-1] - min(f)) // 8
            begin = max(i for i in range(SPAN) if f[i] <= near)
            found = [starts[j - SPAN + 1 + begin], ends[j], ends[j]]
    return found


def stage_trace(path, stages, td):
    """A trace of Poisson stages (rate, seconds), each from its own make-trace, joined in time."""
    out, t0 = [], 0.0
    for i, (rate, seconds) in enumerate(stages):
        part = os.path.join(td, f"stage{i}.csv")
        subprocess.run([MAKE_TRACE, f"--rate={rate}", f"--requests={int(rate * seconds * 1.2) + 10}",
                        "--input-len=1", "--output-len=1", f"--seed={i + 1}", "-o", part], check=True)
        for line in open(part):
            if line[0].isdigit() and float(line.split(",")[0]) < seconds:
                t, rest = line.split(",", 1)
                out.append(f"{float(t) + t0:.9f},{rest}")
        t0 += seconds
    with open(path, "w") as f:
        f.write("arrival_s,input_len,output_len\n" + "".join(out))
    return len(out)


with tempfile.TemporaryDirectory() as td:
    # ResNet-50 served one at a time: its service rate is the reciprocal of a lone request's latency
    service_s = run_json("--no-db", *SERIAL, "--rate=1", "--requests=50")["latency_ms"]["min"] * 1e-3
    mu = 1 / service_s

    # 20 s at 0.66 mu, 4 s at 1.33 mu (the queue grows by about 0.33 mu a second), 40 s at 0.4 mu
    trace = os.path.join(td, "burst.csv")
    burst_from, burst_to = 20.0, 24.0
    n = stage_trace(trace, [(0.66 * mu, 20), (1.33 * mu, 4), (0.4 * mu, 40)], td)
    rows_path = os.path.join(td, "requests.csv")
    db = os.path.join(td, "r.db")
    d = run_json(f"--db={db}", *SERIAL, f"--trace={trace}", f"--requests={n}", f"--requests-out={rows_path}")
    check("the burst's run keeps up over the whole run (throughput >= 95% of offered, not saturated)",
          d["throughput_rps"] >= 0.95 * d["rate_rps"] and d["saturated"] is False, (d["throughput_rps"], d["rate_rps"]))
    w = d["overload_window"]
    check("the burst is flagged", w is not None, d)
    rows = [line.strip().split(",") for line in open(rows_path)][1:]
    mine = overload_window(rows)
    # the JSON prints 10 significant digits; the requests' times are whole nanoseconds
    check("the window is the criterion's, computed again from the requests",
          w is not None and mine is not None and
          all(abs(a - b) <= 1e-9 * b for a, b in zip((w["start_s"], w["end_s"], w["flagged_s"]), mine)), (w, mine))
    # a window of 128 arrivals lasts 0.1 s at the light rate, 0.05 s in the burst
    check("the window lies on the burst", w is not None and burst_from - 0.2 <= w["start_s"] <= burst_from + 1 and
          burst_from < w["flagged_s"] < burst_to and burst_to - 0.5 <= w["end_s"] <= burst_to + 0.5, w)
    con = sqlite3.connect(db)
    stored = con.execute("SELECT saturated, overloaded, overload_start_s, overload_end_s FROM runs").fetchall()
    con.close()
    check("the database row holds the window", mine is not None and len(stored) == 1 and stored[0][:2] == (0, 1) and
          all(abs(a - b) <= 1e-12 * b for a, b in zip(stored[0][2:], mine[:2])), (stored, mine))
    text = sb("run", "--no-db", *SERIAL, f"--trace={trace}", f"--requests={n}").stdout
    check("the text names the window in one line", w is not None and
          sum(line.startswith(f"  OVERLOADED from {w['start_s']:.1f} s to {w['end_s']:.1f} s") for line in
              text.splitlines()) == 1, text)

    # long stable Poisson runs at rho 0.9 of the service rate (one seed each; bench/overload.py counts many)
    d = run_json("--no-db", *SERIAL, f"--rate={0.9 * mu:.4f}", "--requests=200000", "--seed=1")
    check("an M/D/1 run at rho 0.9, 200,000 requests, is not flagged", d["overload_window"] is None,
          d["overload_window"])
    llm_mu = run_json("--no-db", *LLM, "--rate=40", "--requests=4000")["throughput_rps"]
    d = run_json("--no-db", *LLM, f"--rate={0.9 * llm_mu:.4f}", "--requests=60000", "--seed=1")
    check("an LLM run at rho 0.9 of its saturated throughput, an hour simulated, is not flagged",
          d["overload_window"] is None, d["overload_window"])
    text = sb("run", "--no-db", *SERIAL, f"--rate={0.9 * mu:.4f}", "--requests=20000").stdout
    check("a run without overload prints no OVERLOADED line", "OVERLOADED" not in text and text, text)

    # capacity: with an SLA no finite run misses, only the overload test stops the search
    r = sb("capacity", "--no-db", *SERIAL, "--sla=100000", "--seeds=1", "--json")
    c = json.loads(r.stdout) if r.returncode == 0 else {}
    check("capacity under a loose SLA stops below the service rate", r.returncode == 0 and
          0.9 * mu < c["capacity_rps"] < mu, (r.stderr, c.get("capacity_rps"), mu))
    check("capacity fails every probe overloaded within a window, and names it",
          c and any(p["overloaded"] for p in c["points"]) and
          all(not p["pass"] for p in c["points"] if p["overloaded"]), c.get("points"))

if failures:
    print(f"{len(failures)} failed: {', '.join(failures)}")
    sys.exit(1)
print("all passed")
