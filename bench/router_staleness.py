#!/usr/bin/env python3
"""What stale router state costs (the fleet issue's study): a fleet of
llama2-7b replicas on H100s behind a load-aware router, the router seeing
the replicas' state scraped every --router-refresh ms, on requests whose
prompt and output are rows of the Azure conversation trace 2023 drawn
jointly (--trace-pairs) at a fixed Poisson rate. Prints, per router and
refresh interval, TTFT p50 and p99, the end-to-end p99, and how unevenly the
replicas were loaded (requests routed, least and most; the most outstanding
on any replica): between scrapes every arrival sees the same state, so the
same replica looks least loaded to all of them (herding).

Usage: bench/router_staleness.py SIMBATCH [REPLICAS] [RATE] [REQUESTS]
(defaults 8 replicas, 50 req/s, 20000 requests; one run a cell, seed 1)"""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

TRACE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data", "azure-llm-2023",
                     "AzureLLMInferenceTrace_conv.csv")


def main(argv):
    a = tc.hand_args(PROG, __doc__, argv, ["SIMBATCH"], ["REPLICAS", "RATE", "REQUESTS"])
    sb = a["SIMBATCH"]
    replicas = tc.number(a.get("REPLICAS", "8"), "REPLICAS", int, 1)
    rate = tc.number(a.get("RATE", "50"), "RATE", float, 1e-9)
    requests = tc.number(a.get("REQUESTS", "20000"), "REQUESTS", int, 1)
    print("| router | refresh ms | TTFT p50 ms | TTFT p99 ms | E2E p99 ms | routed min-max | most outstanding |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for router in ("least-outstanding", "least-kv"):
        for refresh in (0, 10, 50, 200, 1000):
            r = subprocess.run([sb, "--model=llama2-7b", f"--replicas={replicas}", f"--router={router}",
                                f"--router-refresh={refresh}", f"--trace={TRACE}", "--trace-pairs", "--over-context=drop",
                                f"--rate={rate}", f"--requests={requests}", "--no-db", "--json"],
                               capture_output=True, text=True, check=True)
            j = json.loads(r.stdout)
            reps = j["fleet"]["replicas"]
            print(f"| {router} | {refresh} | {j['ttft_ms']['p50']:.1f} | {j['ttft_ms']['p99']:.1f} | "
                  f"{j['latency_ms']['p99']:.0f} | {min(p['routed'] for p in reps)}-{max(p['routed'] for p in reps)} | "
                  f"{max(p['max_outstanding'] for p in reps)} |", flush=True)


PROG = "bench/router_staleness.py"
if __name__ == "__main__":
    sys.exit(tc.main_guard(PROG, lambda argv: main(argv) or 0, sys.argv[1:]))
