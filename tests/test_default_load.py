#!/usr/bin/env python3
"""End-to-end tests of what an overloaded run advises, by the run's kind (sim/cli/report_overload.c):
a node-level model's generated load, lower --rate or add --workers; an LLM's, add --replicas (or find
the rate with simbatch capacity); a replayed trace, whose arrivals are its own and where --rate is
refused, --trace-speedup below 1, never --rate. Each SATURATED and OVERLOADED line carries it.
A table of (prompt, output) pairs (traces/README.md): scripts/trace-lengths --pairs writes a trace's,
the committed Azure table opens with the published trace's rows, and a bad one gets one line, exit 2.
An LLM given no load: its rate half the capacity estimate it reports (two digits down), said in the
header and the JSON; not saturated, its queue flat; prompts that differ, their mean the table's, each
request one row's pair; the same numbers as the explicit run it stands for; --rate, lengths and
node-level models as before.
Usage: test_default_load.py PATH/TO/simbatch"""
import json
import os
import subprocess
import sys
import tempfile

SB = sys.argv[1]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
AZURE_HEAD = os.path.join(ROOT, "tests", "data", "azure-llm-2023-conv-head.csv")
failures = []


def sb(*args):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=300)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def advice_lines(text):
    """The SATURATED and OVERLOADED lines' advice, the last parenthesis of each."""
    return [line[line.rindex("(") + 1:line.rindex(")")] for line in text.splitlines()
            if line.lstrip().startswith(("SATURATED", "OVERLOADED"))]


NODE_LEVER = "lower --rate or add --workers"
LLM_LEVER = "add --replicas, or find the rate one holds with simbatch capacity"
LLM_REPLAY = "add --replicas, or replay the trace slower with --trace-speedup below 1"
NODE_REPLAY = "add --workers, or replay the trace slower with --trace-speedup below 1"

with tempfile.TemporaryDirectory() as tmp:
    # node-level, generated arrivals: unbatched ResNet-50 on the NPU serves about 950 req/s
    out = sb("--policy=serial", "--model=resnet50", "--rate=2000", "--requests=8000", "--no-db").stdout
    got = advice_lines(out)
    check("node-level overload: both lines advise a lower --rate or more --workers",
          len(got) == 2 and all(a == NODE_LEVER for a in got), out)
    # an LLM at 1,000 req/s saturates one H100 (tens of req/s)
    out = sb("--model=llama2-7b", "--rate=1000", "--requests=5000", "--no-db").stdout
    got = advice_lines(out)
    check("LLM overload: both lines advise --replicas or capacity, not --workers or --rate",
          len(got) == 2 and all(a == LLM_LEVER for a in got) and "--workers" not in " ".join(got), out)
    # a replayed trace 50 times faster: its own arrivals, --rate refused there
    out = sb("--model=llama2-7b", f"--trace={AZURE_HEAD}", "--trace-speedup=50", "--no-db").stdout
    got = advice_lines(out)
    check("LLM trace replay: the advice is --replicas or --trace-speedup, never --rate",
          got and all(a == LLM_REPLAY for a in got) and "--rate" not in " ".join(got), out)
    refused = sb("--model=llama2-7b", f"--trace={AZURE_HEAD}", "--rate=1", "--no-db")
    check("... where --rate is indeed refused", refused.returncode == 2, refused.stderr)
    trace = os.path.join(tmp, "node.csv")
    with open(trace, "w") as f:       # 2,000 req/s for 8,000 requests: twice what ResNet-50 unbatched serves
        f.write("arrival_s,input_len,output_len\n" + "".join(f"{i / 2000:.6f},0,0\n" for i in range(8000)))
    out = sb("--policy=serial", "--model=resnet50", f"--trace={trace}", "--no-db").stdout
    got = advice_lines(out)
    check("node-level trace replay: --workers or --trace-speedup, never --rate",
          len(got) == 2 and all(a == NODE_REPLAY for a in got), out)
    d = json.loads(sb("--policy=serial", "--model=resnet50", "--rate=300", "--requests=2000", "--no-db",
                      "--json").stdout)
    out = sb("--policy=serial", "--model=resnet50", "--rate=300", "--requests=2000", "--no-db").stdout
    check("a run that serves its load advises nothing", not d["saturated"] and advice_lines(out) == [], out)

# the (prompt, output) pairs table: how it is made, and how it reads
TABLE = os.path.join(ROOT, "traces", "tables", "azure-llm-2023-conv-pairs.csv")
TRACE_LENGTHS = os.path.join(ROOT, "scripts", "trace-lengths")


def head_pairs():
    """The Azure excerpt's pairs, read here from its own format (CRLF, TIMESTAMP first)."""
    with open(AZURE_HEAD, newline="") as f:
        rows = [line.rstrip("\r\n").split(",") for line in f if line.strip()]
    assert rows[0] == ["TIMESTAMP", "ContextTokens", "GeneratedTokens"], rows[0]
    return [(int(r[1]), int(r[2])) for r in rows[1:]]


def table_pairs(path):
    with open(path) as f:
        rows = [line.strip() for line in f if line.strip() and not line.startswith("#")]
    assert rows[0] == "input_len,output_len", rows[0]
    return [tuple(int(x) for x in r.split(",")) for r in rows[1:]]


with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([TRACE_LENGTHS, AZURE_HEAD, os.path.join(tmp, "head"), "--pairs", "--about=test"],
                       capture_output=True, text=True)
    made = os.path.join(tmp, "head-pairs.csv")
    check("trace-lengths --pairs writes the trace's pairs in its order",
          r.returncode == 0 and table_pairs(made) == head_pairs(), (r.stderr, os.listdir(tmp)))
    with open(made) as f:
        comments = [line for line in f if line.startswith("#")]
    check("... with the command that made it and the --about line",
          any("scripts/trace-lengths" in c and "--pairs" in c for c in comments) and "# test\n" in comments,
          comments)
    committed = table_pairs(TABLE)
    check("the committed table opens with the published trace's first 12 requests, has all 19,366",
          committed[:12] == head_pairs() and len(committed) == 19366, (committed[:12], len(committed)))
    r = sb("--model=llama2-7b", f"--trace={TABLE}", "--no-db")
    check("a pairs table alone is refused (no arrivals to replay): one line, exit 2, names --trace-pairs",
          r.returncode == 2 and r.stderr.count("\n") == 1 and "--trace-pairs" in r.stderr and not r.stdout, r)
    for name, text, want in (("a bad length", "input_len,output_len\n300,x\n", "bad.csv:2: output_len"),
                             ("a missing field", "input_len,output_len\n300\n", "bad.csv:2: expected 2 fields"),
                             ("an LLM's zero output", "input_len,output_len\n300,0\n", "has 300 prompt and 0")):
        bad = os.path.join(tmp, "bad.csv")
        with open(bad, "w") as f:
            f.write(text)
        r = sb("--model=llama2-7b", f"--trace={bad}", "--trace-pairs", "--rate=2", "--no-db")
        check(f"a pairs table with {name}: one line naming it, exit 2", r.returncode == 2 and
              r.stderr.count("\n") == 1 and want in r.stderr and not r.stdout, r)

# an LLM's default load (sim/study/default_load.h, docs/WORKLOAD.md)
import csv  # noqa: E402
import math  # noqa: E402
from decimal import Decimal, ROUND_FLOOR  # noqa: E402

kept_pairs = [p for p in table_pairs(TABLE) if p[0] + p[1] <= 4096]     # models/llama2-7b.model's context
n_kept = len(kept_pairs)
mean_in = sum(p[0] for p in kept_pairs) / n_kept
sd_in = math.sqrt(sum((p[0] - mean_in) ** 2 for p in kept_pairs) / n_kept)
mean_out = sum(p[1] for p in kept_pairs) / n_kept
sd_out = math.sqrt(sum((p[1] - mean_out) ** 2 for p in kept_pairs) / n_kept)


def two_digits_down(x):
    """x rounded down to two significant digits, in decimal."""
    d = Decimal(repr(x))
    q = Decimal(1).scaleb(d.adjusted() - 1)
    return float(d.quantize(q, rounding=ROUND_FLOOR)) if q < 1 else float((d // q) * q)


with tempfile.TemporaryDirectory() as tmp:
    rows_path = os.path.join(tmp, "requests.csv")
    r = sb("--model=llama2-7b", "--no-db", "--json", f"--requests-out={rows_path}")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    load = d.get("default_load", {})
    check("the default LLM run says how its load was chosen (JSON default_load)",
          load.get("rate_share") == 0.5 and load.get("pairs") == "azure-llm-2023-conv" and
          load.get("pairs_kept") == n_kept and load.get("pairs_total") == 19366, (r.stderr, load))
    est = load.get("capacity_estimate_rps", 0)
    check("its rate is half the capacity estimate, two digits down", est > 0 and
          d["rate_rps"] == two_digits_down(0.5 * est), (d.get("rate_rps"), est))
    off = sb("--model=llama2-7b", "--scenario=offline", "--requests=200", "--no-db", "--json")
    od = json.loads(off.stdout) if off.returncode == 0 else {}
    off_text = sb("--model=llama2-7b", "--scenario=offline", "--requests=200", "--no-db").stdout
    check("offline (every request at 0 s) takes the mix's lengths and no default rate",
          od.get("default_load", {}).get("pairs_kept") == n_kept and "rate_share" not in od.get("default_load", {})
          and "  rate       " not in off_text and " 200 closed-loop clients" in off_text, (off.stderr, od, off_text))
    text = sb("--model=llama2-7b", "--no-db").stdout
    want_rate = (f"  rate       {d.get('rate_rps', 0):g} req/s: half the estimated capacity {est:.3g} req/s of "
                 "llama2-7b on gpu-h100 (an LLM's default; set --rate to choose)")
    check("the text header states the rate's derivation", want_rate in text.splitlines(), (want_rate, text))
    check("... and where the lengths come from", f": {n_kept} of its 19366 pairs, those within llama2-7b's "
          "4096-token context (traces/tables/azure-llm-2023-conv-pairs.csv" in text, text)
    check("the default LLM run is not saturated and no window overloaded",
          d.get("saturated") is False and d.get("overload_window") is None and
          d["throughput_rps"] > 0.95 * d["rate_rps"], d)
    with open(rows_path) as f:
        rows = list(csv.DictReader(f))
    # the requests in the system at each arrival, from the rows: their trend over the run is flat
    arrivals = sorted(float(x["arrival_s"]) for x in rows)
    finishes = sorted(float(x["finish_s"]) for x in rows)
    import bisect  # noqa: E402
    in_system = [i - bisect.bisect_right(finishes, t) for i, t in enumerate(arrivals)]
    quarter = len(in_system) // 4
    first, last = (sum(in_system[quarter:2 * quarter]) / quarter, sum(in_system[3 * quarter:]) / quarter)
    check("the queue does not grow: requests in the system in the last quarter within 1.5x the second's",
          last < 1.5 * first + 1, (first, last))
    ins = [int(x["input_len"]) for x in rows]
    outs = [int(x["output_len"]) for x in rows]
    n = len(ins)
    check("prompt lengths differ across requests", len(set(ins)) > 1000, len(set(ins)))
    check("their mean matches the table's within 4 standard errors",
          abs(sum(ins) / n - mean_in) < 4 * sd_in / math.sqrt(n), (sum(ins) / n, mean_in, sd_in))
    check("and the outputs' too", abs(sum(outs) / n - mean_out) < 4 * sd_out / math.sqrt(n),
          (sum(outs) / n, mean_out))
    pairs = set(kept_pairs)
    check("each request's (prompt, output) is one row's: drawn together, not apart",
          all((a, b) in pairs for a, b in zip(ins, outs)), [(a, b) for a, b in zip(ins, outs) if (a, b) not in pairs][:5])
    same = json.loads(sb("--model=llama2-7b", "--no-db", "--json", f"--trace={TABLE}", "--trace-pairs",
                         "--over-context=drop", f"--rate={d.get('rate_rps')}").stdout)
    for k in ("wall_s", "run_id", "default_load"):
        d.pop(k, None)
        same.pop(k, None)
    check("it is the run --trace=TABLE --trace-pairs --over-context=drop --rate=RATE, number for number", d == same,
          [k for k in d if d[k] != same.get(k)])
    r = sb("--model=llama2-7b", "--rate=5", "--requests=300", "--no-db", "--json", f"--requests-out={rows_path}")
    with open(rows_path) as f:
        fixed = {(x["input_len"], x["output_len"]) for x in csv.DictReader(f)}
    check("an explicit --rate keeps the model's lengths (1020, 129) and no default_load",
          fixed == {("1020", "129")} and "default_load" not in json.loads(r.stdout), (fixed, r.stdout[:200]))
    r = sb("--model=llama2-7b", "--replicas=2", "--no-db", "--json", "--requests=300")
    two = json.loads(r.stdout) if r.returncode == 0 else {}
    check("two replicas: the rate follows their estimate (about twice one's)",
          two.get("default_load", {}).get("capacity_estimate_rps", 0) > 1.9 * est and
          two["rate_rps"] == two_digits_down(0.5 * two["default_load"]["capacity_estimate_rps"]), (r.stderr, two))
    r = sb("--model=resnet50", "--no-db", "--json", "--requests=300")
    check("a node-level model keeps run's 1000 req/s", json.loads(r.stdout)["rate_rps"] == 1000, r.stdout[:200])

# capacity: an LLM given no lengths is judged on the same mix, the same answer as the table given by hand
TARGETS = ("--ttft-slo=1000", "--tpot-slo=100", "--no-db", "--json", "--quiet")
caps = {}
for name, extra in (("default", ()), ("table", ("--trace=" + TABLE, "--trace-pairs", "--over-context=drop")),
                    ("lengths", ("--input-len=1020", "--output-len=129"))):
    r = sb("capacity", "--model=llama2-7b", *TARGETS, *extra)
    caps[name] = json.loads(r.stdout) if r.returncode == 0 else {"err": r.stderr}
check("capacity of an LLM given no lengths: the mix's, the same answer as --trace=TABLE --trace-pairs",
      caps["default"].get("capacity_rps") == caps["table"].get("capacity_rps") and
      caps["default"].get("llm", {}).get("default_lengths") is True and
      caps["table"].get("llm", {}).get("default_lengths") is False, caps)
check("... and given lengths, its own (another answer)", caps["lengths"].get("llm", {}).get("default_lengths") is False
      and caps["lengths"].get("capacity_rps") != caps["default"].get("capacity_rps"), caps)

if failures:
    print(f"{len(failures)} failed: {', '.join(failures)}")
    sys.exit(1)
print("all passed")
