#!/usr/bin/env python3
"""Tests of scripts/ops-merge (one operator profile from several of one GPU):
 - two hand-written profiles merge into one whose rows are both files' rows,
   sorted by model, TP degree and tokens, and whose leave-one-row-out errors
   are recomputed over the merged rows: one interior row, its error worked
   out by hand;
 - simbatch prices from the merged profile (model-info runs on it);
 - bad input (GPUs that differ, the same row twice, a file that is not a
   profile, a time that is not positive): exit 2, one line naming the file,
   and no output file.
Usage: test_ops_merge.py PATH/TO/simbatch PATH/TO/scripts/ops-merge"""
import os
import subprocess
import sys
import tempfile

SB, MERGE = sys.argv[1], sys.argv[2]
failures = []


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:400]))
    if not cond:
        failures.append(name)


HEADER = ("profiled_as,hidden,heads,kv_heads,ffn,vocab,gated,tp,tokens,emb,input_layernorm,attn_pre_proj,attn_rope,"
          "attn_post_proj,post_attention_layernorm,mlp_up_proj,mlp_act,mlp_down_proj,add")
SHAPE = "llama2-7b,4096,32,32,11008,32000,1,1"   # models/llama2-7b.model's shape, tensor parallelism 1


def profile(path, gpu, rows, source="hand-written"):
    with open(path, "w") as f:
        f.write(f"# simbatch llm operator profile\n# gpu = {gpu}\n# mem_gb = 80\n# source = {source}\n"
                "# leave_out layer = 9.99% 9.99% 1\n" + HEADER + "\n" + "".join(r + "\n" for r in rows))


def row(tokens, ms):
    """A row whose every operator takes ms."""
    return f"{SHAPE},{tokens}," + ",".join([f"{ms:g}"] * 10)


td = tempfile.mkdtemp(prefix="simbatch-ops-merge-")
a, b, out = (os.path.join(td, n) for n in ("a.csv", "b.csv", "merged.csv"))
# rows at 1 and 4 tokens in one file, 2 in the other: merged, the row at 2 is the only interior one
profile(a, "h100", [row(4, 3.0), row(1, 1.0)], "run A")
profile(b, "h100", [row(2, 3.0)], "run B")
r = subprocess.run([MERGE, out, a, b], capture_output=True, text=True)
check("merge exits 0", r.returncode == 0, r.stderr)
text = open(out).read() if os.path.exists(out) else ""
data = [l for l in text.splitlines() if l and not l.startswith("#")]
check("rows sorted by tokens under one header", data == [HEADER, row(1, 1.0), row(2, 3.0), row(4, 3.0)], data)
check("both sources kept", "# source = run A + run B" in text, text[:300])
# the row at 2 tokens predicted from its neighbours: 1 + (3 - 1) x (2 - 1) / (4 - 1) = 5/3 against 3, so
# |5/9 - 1| = 44.44% for each operator; the layer (nine operators, every one but the embedding) likewise
check("leave-out recomputed over the merged rows", "# leave_out mlp_up_proj = 44.44% 44.44% 1" in text and
      "# leave_out layer = 44.44% 44.44% 1" in text and "9.99%" not in text, text[:900])
r = subprocess.run([SB, "model-info", "--model=llama2-7b", "--hw=" + out], capture_output=True, text=True)
check("simbatch prices from the merged profile", r.returncode == 0 and "measured GPU h100" in r.stdout, r.stderr)

os.remove(out)
other, dup, junk, zero = (os.path.join(td, n) for n in ("other.csv", "dup.csv", "junk.csv", "zero.csv"))
profile(other, "a100", [row(8, 1.0)])
profile(dup, "h100", [row(2, 5.0)])
with open(junk, "w") as f:
    f.write("op,batch,latency_s\n")
profile(zero, "h100", [row(8, 0.0)])
for files, needle in (([a, other], "other.csv: gpu a100, but"), ([a, b, dup], "dup.csv:7: llama2-7b at tp 1 and 2"),
                      ([a, junk], "junk.csv:1: not an operator profile"), ([a, zero], "zero.csv:7: column emb")):
    r = subprocess.run([MERGE, out, *files], capture_output=True, text=True)
    check(f"bad input ({needle.split(':')[0]}): exit 2, one line naming it, no output",
          r.returncode == 2 and r.stderr.count("\n") == 1 and needle in r.stderr and not os.path.exists(out),
          (r.returncode, r.stderr))

print(f"{len(failures)} failed" if failures else "all passed")
sys.exit(1 if failures else 0)
