#!/usr/bin/env python3
"""Checks that two simbatch binaries give the same results: the --json of 36
runs (every policy on two to four models at two rates, plus Gamma arrivals and
three workers), compared field by field without the wall-clock fields. For a
refactor or a speed-up, which must change no result (CONTRIBUTING's rule);
the CI CDF baseline (scripts/ci-compare) checks the same on fewer points.

With --broad, 456 shorter runs instead: the six node-level policies on six models at three
rates, alone, on three workers, with a small max batch (and graph's window), and on two workers of
the calibrated CPU; and the four LLM policies on two models at three rates (some
configurations are refused by their policy, which both binaries must then do alike). A few
seconds on the 2-core VM.

With --prefix, 66 LLM runs where the prefix cache works hard instead: the Azure conversation
trace 2023's pairs on an A40 and an A100 (KV caches that fill: preemptions, evictions, a preempted
request's blocks found again), make-trace's shared prefixes and multi-turn conversations, the
Mooncake conversation trace's hash ids (slowed, at its own pace with three block sizes, and on a
prefix-affinity fleet), three workers on one queue, fleets behind prefix-affinity,
least-outstanding and least-kv (instant and scraped) and round-robin, a heterogeneous one, the
roofline GPU and a disaggregated one (needs ../shared/data; under a minute).

With --node-by-node, OLD runs each case with --node-by-node (runs of nodes and decode runs off): give
one binary twice to check that its shortcuts change no result.

Usage: bench/same_results.py OLD_SIMBATCH NEW_SIMBATCH [--broad | --prefix] [--node-by-node]   (exit 1 when any run differs)"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/same_results.py"
args = tc.hand_args(PROG, __doc__, sys.argv[1:], ["OLD_SIMBATCH", "NEW_SIMBATCH"],
                    flags=("broad", "prefix", "node-by-node"))
old, new = args["OLD_SIMBATCH"], args["NEW_SIMBATCH"]
for b in (old, new):
    if not (os.path.isfile(b) and os.access(b, os.X_OK)):
        tc.die(PROG, tc.BadInput(f"{b}: not a program"))
if "broad" in args and "prefix" in args:
    tc.usage_error(PROG, "give --broad or --prefix, not both")
broad = "broad" in args
by_node = "node-by-node" in args   # OLD runs every node and iteration as its own task
cases = []
for pol, models in [("serial", ["resnet50", "gnmt", "transformer", "treelstm"]), ("graph", ["resnet50", "gnmt", "seq2seq"]),
                    ("lazy", ["gnmt", "transformer", "resnet50"]), ("oracle", ["gnmt", "transformer"]),
                    ("cellular", ["lstm", "seq2seq", "treelstm"]), ("topup", ["seq2seq", "gnmt"])]:
    for m in models:
        for rate in ("50", "500"):
            cases.append(["--policy=" + pol, "--model=" + m, "--rate=" + rate, "--requests=3000", "--seed=7"])
cases.append(["--policy=lazy", "--model=gnmt", "--arrival-cv=3", "--requests=2000"])
cases.append(["--policy=graph", "--model=gnmt", "--window=5", "--workers=3", "--requests=2000"])
if broad:
    cases = []
    for pol in ("serial", "graph", "cellular", "topup", "lazy", "oracle"):
        for m in ("gnmt", "transformer", "las", "resnet50", "lstm", "seq2seq"):
            for rate in ("100", "1000", "5000"):
                # a window only where the policy takes one (another policy refuses the knob)
                window = ["--window=2"] if pol == "graph" else []
                for extra in ([], ["--workers=3"], ["--max-batch=8", *window], ["--hw=cpu", "--workers=2"]):
                    cases.append(["--policy=" + pol, "--model=" + m, "--rate=" + rate, "--requests=2000",
                                  "--seed=5", *extra])
    for pol in ("static", "continuous", "chunked", "slo"):
        for m in ("llama2-7b", "llama3-8b"):
            for rate in ("2", "10", "40"):
                cases.append(["--policy=" + pol, "--model=" + m, "--rate=" + rate, "--requests=500", "--seed=5"])
if "prefix" in args:
    data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data")
    azure = os.path.join(data, "azure-llm-2023", "AzureLLMInferenceTrace_conv.csv")
    mooncake = os.path.join(data, "mooncake-fast25", "conversation_trace.jsonl")
    tmp = tempfile.mkdtemp()
    make_trace = os.path.join(os.path.dirname(new), "make-trace")
    traces = {}
    for name, shape in (("system", "4:512:16"), ("turns", "2:256:8:4")):
        traces[name] = os.path.join(tmp, name + ".csv")
        subprocess.run([make_trace, "--rate=4", "--requests=3000", "--shared-prefix=" + shape,
                        "--input-len=lognormal:5.5:0.8:2000", "--output-len=lognormal:5:0.8:1000",
                        "-o", traces[name]], check=True)
    pairs = ["--trace=" + azure, "--trace-pairs", "--over-context=drop", "--requests=3000", "--seed=3"]
    cases = []
    for pol in ("continuous", "chunked", "slo"):
        for hw in ("gpu-a40", "gpu-a100"):
            for rate in ("2", "8"):
                cases.append(["--policy=" + pol, "--model=llama2-7b", "--hw=" + hw, "--rate=" + rate, *pairs])
            for name in traces:
                cases.append(["--policy=" + pol, "--model=llama2-7b", "--hw=" + hw, "--trace=" + traces[name],
                              "--over-context=drop"])
                cases.append(["--policy=" + pol, "--model=llama2-7b", "--hw=" + hw, "--trace=" + traces[name],
                              "--over-context=drop", "--trace-speedup=3"])
        cases.append(["--policy=" + pol, "--model=llama2-7b", "--hw=gpu-a40", "--trace=" + mooncake,
                      "--requests=1500", "--over-context=drop", "--trace-speedup=0.05"])
    # the Mooncake trace at its own pace on an A40: evictions and preemptions of hashed blocks, whose
    # 512 tokens are one chunk of 32 blocks, two of 8-token blocks, and 10.7 48-token blocks
    for bs in ("8", "16", "48"):
        cases.append(["--policy=chunked", "--model=llama2-7b", "--hw=gpu-a40", "--trace=" + mooncake,
                      "--requests=1500", "--over-context=drop", "--block-size=" + bs])
    # and on four replicas behind prefix-affinity, which routes by the prompts' hash ids
    cases.append(["--model=llama2-7b", "--hw=gpu-a40", "--replicas=4", "--router=prefix-affinity", "--trace=" + mooncake,
                  "--requests=3000", "--over-context=drop", "--trace-speedup=3"])
    for hw in ("gpu-a40", "gpu-h100"):
        cases.append(["--model=llama2-7b", "--hw=" + hw, "--workers=3", "--rate=15", *pairs])
        cases.append(["--model=llama2-7b", "--hw=" + hw, "--replicas=4", "--router=prefix-affinity",
                      "--router-refresh=20", "--trace=" + traces["turns"], "--over-context=drop", "--trace-speedup=6"])
        for transfer in ("after", "layerwise"):
            cases.append(["--model=llama2-7b", "--prefill-replicas=2:" + hw, "--decode-replicas=2:" + hw, "--rate=12",
                          "--kv-transfer=" + transfer, *pairs])
        # fleets whose replicas run decode runs (their routers read no KV state)
        for router, refresh in (("least-outstanding", "0"), ("least-outstanding", "50"), ("round-robin", "0"),
                                ("least-kv", "0"), ("least-kv", "20"), ("least-kv", "200")):
            cases.append(["--model=llama2-7b", "--hw=" + hw, "--replicas=8", "--router=" + router,
                          "--router-refresh=" + refresh, "--rate=30", *pairs])
    cases.append(["--model=llama2-7b", "--replicas=2:gpu-h100,2:gpu-a100", "--router=least-outstanding", "--rate=15",
                  *pairs])
    # the roofline prices each member's attention (no price from the members' sum): one device and a fleet
    cases.append(["--model=llama2-7b", "--hw=gpu-h100-roofline", "--rate=4", *pairs])
    cases.append(["--model=llama2-7b", "--hw=gpu-h100-roofline", "--replicas=4", "--router=least-outstanding",
                  "--rate=12", *pairs])
bad = 0
added = set()
for c in cases:
    outs = []
    for b, extra in ((old, ["--node-by-node"] if by_node else []), (new, [])):
        r = subprocess.run([b, *c, *extra, "--no-db", "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            # the same message, whichever source tree each binary reads its tables and models from
            outs.append(("exit", r.returncode, re.sub(r"\S*/(calib/tables|models)/", r"\1/", r.stderr.strip())))
            continue
        j = json.loads(r.stdout)
        for k in ("wall_s", "run_id"):
            j.pop(k, None)
        outs.append(j)
    if all(isinstance(o, dict) for o in outs):
        # a member one side lacks is a new or dropped field, not a changed result
        added |= set(outs[0]) ^ set(outs[1])
        shared = set(outs[0]) & set(outs[1])
        # (a source path in a description, e.g. a KV link's table, is each binary's own tree)
        outs = [re.sub(r"[^\s(\"]*/(calib/tables|models)/", r"\1/", json.dumps({k: o[k] for k in shared}, sort_keys=True))
                for o in outs]
    if outs[0] != outs[1]:
        bad += 1
        print("DIFF", " ".join(c), str(outs[0])[:200], str(outs[1])[:200])
print(f"{len(cases)} runs, {bad} differ" + (f" (members in one only: {', '.join(sorted(added))})" if added else ""))
sys.exit(1 if bad else 0)
