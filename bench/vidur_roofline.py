#!/usr/bin/env python3
"""The GPU roofline (gpu-h100-roofline, a model from the datasheet) against
the H100 GEMM times the Vidur project measured for Llama-2-7B
(../shared/data/vidur-h100/llama-2-7b-mlp.csv, MIT licence; its README gives
the provenance): for each layer GEMM and token count at tensor parallelism 1,
the roofline's time, Vidur's median, and the error (roofline / measured - 1).

Usage: bench/vidur_roofline.py SIMBATCH [CSV]"""
import csv
import json
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

# Llama-2-7B's layer GEMMs (K, N) at M = tokens, as Vidur names them
OPS = {
    "attn_pre_proj": (4096, 3 * 4096),      # the fused QKV projection
    "attn_post_proj": (4096, 4096),
    "mlp_up_proj": (4096, 2 * 11008),       # gate and up, fused
    "mlp_down_proj": (11008, 4096),
}
TOKENS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]


def roofline_ms(binary, m, k, n):
    out = subprocess.run([binary, "hw-info", "--hw=gpu-h100-roofline", f"--gemm={m},{k},{n}", "--json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["ms"]


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], ["CSV"])
    binary = a["SIMBATCH"]
    path = a["CSV"] if "CSV" in a else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                                              "vidur-h100", "llama-2-7b-mlp.csv")
    try:
        rows = {int(r["num_tokens"]): r for r in csv.DictReader(tc.read_text(path, tc.SMALL_FILE, "CSV").splitlines())
                if r["num_tensor_parallel_workers"] == "1"}
    except (KeyError, ValueError, csv.Error) as e:
        raise tc.BadInput(f"{path}: not a Vidur mlp.csv ({type(e).__name__}: {e})")
    print("| op (M x K x N) | tokens | roofline ms | Vidur median ms | error |")
    print("| --- | ---: | ---: | ---: | ---: |")
    errors = {op: [] for op in OPS}
    for op, (k, n) in OPS.items():
        for t in TOKENS:
            if t not in rows:
                continue
            measured = float(rows[t][f"time_stats.{op}.median"])
            model = roofline_ms(binary, t, k, n)
            errors[op].append(model / measured - 1)
            print(f"| {op} ({t} x {k} x {n}) | {t} | {model:.4f} | {measured:.4f} | {100 * (model / measured - 1):+.0f}% |")
    for op, e in errors.items():
        print(f"{op}: median error {100 * statistics.median(e):+.0f}% over {len(e)} token counts "
              f"(from {100 * min(e):+.0f}% to {100 * max(e):+.0f}%)")


PROG = "bench/vidur_roofline.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
