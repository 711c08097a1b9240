#!/usr/bin/env python3
"""scripts/vidur-import on an excerpt of a real Vidur profile
(tests/data/vidur-excerpt/, its README names the source lines): every row of
the table it writes equals the excerpt's medians, read here with the csv
module (Vidur's repeated rows averaged), sorted by TP and tokens; its
leave-one-row-out errors are worked out here from the same medians; the
all-reduce table holds rank 0's medians; the table loads as --hw=FILE and
prices an iteration; and bad profiles exit 2 with one line naming file, line
and column, writing nothing.
Usage: test_vidur_import.py SIMBATCH SCRIPT DATA_DIR"""
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

SB, SCRIPT, DATA = sys.argv[1], sys.argv[2], sys.argv[3]
EXCERPT = os.path.join(DATA, "vidur-excerpt")
MLP = os.path.join("compute", "h100", "meta-llama", "Llama-2-7b-hf", "mlp.csv")
OPS = ["emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj", "post_attention_layernorm",
       "mlp_up_proj", "mlp_act", "mlp_down_proj", "add"]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)))
    if not cond:
        failures.append(name)


def convert(root, out, *extra):
    return subprocess.run([sys.executable, SCRIPT, root, "h100", out, "--mem-gb=80", "--date=2000-01-01", *extra],
                          capture_output=True, text=True)


def table(path):
    lines = [l for l in open(path) if not l.startswith("#")]
    return list(csv.DictReader(lines)), [l for l in open(path) if l.startswith("#")]


out = tempfile.mkdtemp(prefix="simbatch-vidur-")
r = convert(EXCERPT, out, "--network=h100_dgx")
check("converts the excerpt", r.returncode == 0, r.stderr)

# ---- the operator table: the excerpt's medians, duplicates averaged, sorted ----
expect = {}
for row in csv.DictReader(open(os.path.join(EXCERPT, MLP))):
    key = (int(row["num_tensor_parallel_workers"]), int(row["num_tokens"]))
    expect.setdefault(key, []).append([float(row[f"time_stats.{op}.median"]) for op in OPS])
expect = {k: [statistics.fmean(v[i] for v in vs) for i in range(len(OPS))] for k, vs in expect.items()}
rows, head = table(os.path.join(out, "ops-h100.csv"))
got = [(int(r["tp"]), int(r["tokens"])) for r in rows]
check("rows sorted by tp then tokens, one per point", got == sorted(expect), got)
check("every median carried over",
      all(abs(float(r[op]) / expect[(int(r["tp"]), int(r["tokens"]))][i] - 1) < 1e-5
          for r in rows for i, op in enumerate(OPS)))
check("the shape columns", all((r["hidden"], r["heads"], r["kv_heads"], r["ffn"], r["vocab"], r["gated"]) ==
                               ("4096", "32", "32", "11008", "32768", "1") for r in rows), rows[0])
check("provenance in the header", any("microsoft/vidur" in l and "MIT" in l and "2000-01-01" in l for l in head), head)

# leave one row out: each interior row from its two neighbours, per operator
errs = {op: [] for op in OPS}
for tp in (1, 2):
    pts = sorted((t, v) for (p, t), v in expect.items() if p == tp)
    for (t0, a), (t, b), (t1, c) in zip(pts, pts[1:], pts[2:]):
        for i, op in enumerate(OPS):
            errs[op].append(abs((a[i] + (c[i] - a[i]) * (t - t0) / (t1 - t0)) / b[i] - 1))
for op in ("attn_pre_proj", "mlp_up_proj", "mlp_down_proj"):
    line = next(l for l in head if l.startswith(f"# leave_out {op} ="))
    pct = float(line.split("=")[1].split("%")[0])
    check(f"leave-out median of {op}", abs(pct - 100 * statistics.median(errs[op])) < 0.006, (line, errs[op]))

# ---- the all-reduce table: rank 0's medians within one node ----
ar, _ = table(os.path.join(out, "allreduce-h100.csv"))
want = sorted((int(r["num_workers"]), int(r["size"]), float(r["time_stats.all_reduce.median"]))
              for r in csv.DictReader(open(os.path.join(EXCERPT, "network", "h100_dgx", "all_reduce.csv"))))
check("all-reduce medians", [(int(r["gpus"]), int(r["bytes"])) for r in ar] == [w[:2] for w in want] and
      all(abs(float(r["ms"]) / w[2] - 1) < 1e-5 for r, w in zip(ar, want)), ar)

# ---- the table prices iterations: a 4,000-token prefill at tp 2 is the row plus two all-reduces a layer ----
r = subprocess.run([SB, "model-info", "--model=llama2-7b", f"--hw={out}/ops-h100.csv", "--tp=2", "--batch=1",
                    "--input-len=4000", "--output-len=2", "--json"], capture_output=True, text=True)
check("model-info on the converted table", r.returncode == 0, r.stderr)
if r.returncode == 0:
    parts = json.loads(r.stdout)["gpu_profile"]["prefill_parts_ms"]
    # the excerpt's first tp 2 row is 4,032 tokens: 4,000 lies below it, where the first row holds
    first = expect[min(k for k in expect if k[0] == 2)]
    check("layers at 32 x the first row's operators", abs(parts["layers"] / (32 * sum(first[1:])) - 1) < 1e-5, parts)
    check("two all-reduces a layer priced", parts["allreduce"] > 0, parts)

# ---- bad input: one line naming file, line and column; nothing written ----
def damaged(edit):
    root = tempfile.mkdtemp(prefix="simbatch-vidur-bad-")
    shutil.copytree(EXCERPT, root, dirs_exist_ok=True)
    path = os.path.join(root, MLP)
    lines = open(path).read().split("\n")
    edit(lines)
    open(path, "w").write("\n".join(lines))
    return root


def col_of(name):
    return open(os.path.join(EXCERPT, MLP)).readline().strip().split(",").index(name) + 1


def replace_field(lines, line_no, name, value):
    f = lines[line_no - 1].split(",")
    f[col_of(name) - 1] = value
    lines[line_no - 1] = ",".join(f)


cases = [
    ("a missing column", lambda ls: [ls.__setitem__(i, ",".join(
        x for j, x in enumerate(ls[i].split(",")) if j != col_of("time_stats.mlp_act.median") - 1))
        for i in range(len(ls)) if ls[i]], "mlp.csv:1: missing column 'time_stats.mlp_act.median'"),
    ("a NaN", lambda ls: replace_field(ls, 3, "time_stats.attn_rope.median", "nan"),
     f"mlp.csv:3:{col_of('time_stats.attn_rope.median')} (time_stats.attn_rope.median): time nan"),
    ("a zero time", lambda ls: replace_field(ls, 4, "time_stats.add.median", "0"),
     f"mlp.csv:4:{col_of('time_stats.add.median')} (time_stats.add.median)"),
    ("a negative time", lambda ls: replace_field(ls, 5, "time_stats.emb.median", "-0.1"),
     f"mlp.csv:5:{col_of('time_stats.emb.median')} (time_stats.emb.median)"),
    ("tokens not a whole number", lambda ls: replace_field(ls, 6, "num_tokens", "40.5"),
     f"mlp.csv:6:{col_of('num_tokens')} (num_tokens): '40.5' is not a whole number"),
    ("a shape that changes", lambda ls: replace_field(ls, 7, "n_expanded_embd", "11009"),
     f"mlp.csv:7:{col_of('n_expanded_embd')} (n_expanded_embd): shape changes"),
]
for name, edit, needle in cases:
    root = damaged(edit)
    dest = tempfile.mkdtemp(prefix="simbatch-vidur-out-")
    r = convert(root, dest, "--network=h100_dgx")
    lines = r.stderr.strip().split("\n")
    check(f"bad input, {name}: exit 2, one line", r.returncode == 2 and len(lines) == 1 and needle in lines[0],
          (r.returncode, r.stderr))
    check(f"bad input, {name}: nothing written", os.listdir(dest) == [], os.listdir(dest))
r = convert(EXCERPT, out, "--mem-gb=0")
check("--mem-gb must be positive", r.returncode == 2 and "--mem-gb=0" in r.stderr, r.stderr)

print(f"{len(failures)} failed")
sys.exit(1 if failures else 0)
