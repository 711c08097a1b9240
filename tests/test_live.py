#!/usr/bin/env python3
"""End-to-end tests of `simbatch live` (runtime/, sim/cmd_live.c):
 - a short live run per policy and per live model family (small models of
   the built-in models' structure), on a bursty trace: every request
   completes, and its outputs (emitted tokens, final vector) equal those of
   the same request served alone (serial policy), to 1e-5 relative;
 - the issue schedule is the simulator's (same seed: same arrival times and
   lengths), no request is issued early, and the median lateness is under a
   generous sanity bound (the measured figures are printed, not asserted);
 - the run is stored marked live, its JSON has the contract's keys;
 - bad input exits 2 with one line and no database row; saturation drops
   and counts; SIGINT, SIGTERM and SIGHUP store a partial run and exit 128 + N; --profile-out
   writes a table `simbatch run --hw` accepts, with a task overhead within every row, a pass
   encoder's rows by tokens up to the max batch times the longest input;
 - LLM serving live (runtime/kern_llm.c): continuous, chunked, static and slo
   on two small Llama-layout models give every request's tokens and final
   vector bit for bit as served one at a time, also after preemptions on a
   3-block KV cache; an iteration profile's prices against a hand-computed
   timeline, a static batch's padded prefill included (simulated, and as live's
   estimate of the task); --profile-out fits one that run accepts; bad profiles exit 2.
Usage: test_live.py PATH/TO/simbatch"""
import csv
import glob
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

SB = sys.argv[1]
failures = []


def sb(*args, timeout=300):
    return subprocess.run([SB, *args], capture_output=True, text=True, timeout=timeout)


def check(name, cond, detail=""):
    print(("ok   " if cond else "FAIL ") + name + ("" if cond else ": " + str(detail)[:400]))
    if not cond:
        failures.append(name)


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def runs(db, where=""):
    if not os.path.exists(db):
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("select run_id, live, completed, requests from runs " + where).fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def outputs(path):
    """id -> (tokens, values) from --outputs-out."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            head, toks, vals = line.split("|")
            out[int(head.split()[0])] = ([int(t) for t in toks.split()], [float(v) for v in vals.split()])
    return out


td = tempfile.mkdtemp(prefix="simbatch-live-")


def tf_model(name, pass_encoder):
    """A small Transformer: its encoder token by token, or one pass over the input
    (models/transformer.model)."""
    enc, attn = ("pass", "attn=1,8,L,x4 attn=1,L,8,x4 elementwise_len=20") if pass_encoder else \
                ("encoder", "attn=1,8,5,x4 attn=1,5,8,x4")
    return (f"model {name}\nsource test\ninput_len uniform:1:7\noutput_len uniform:1:7\n"
            + "".join(f"node enc_l{i} {enc} gemm=1,32,96 gemm=1,32,32 gemm=1,32,80 gemm=1,80,32 {attn}\n"
                      for i in (1, 2))
            + f"node cross_kv {enc} gemm=1,32,64,x2\n"
            + "".join(f"node dec_l{i} decoder gemm=1,32,96 gemm=1,32,32,x3 gemm=1,32,80 gemm=1,80,32 "
                      "attn=1,8,3,x4 attn=1,3,8,x4 attn=1,8,5,x4 attn=1,5,8,x4\n" for i in (1, 2))
            + "node proj decoder gemm=1,32,70\n")


MODELS = {
    "t_lstm": "model t_lstm\nsource test\ninput_len uniform:1:12\nnode lstm_cell encoder gemm=1,96,128\n",
    "t_gru": "model t_gru\nsource test\ninput_len uniform:1:12\nnode gru_cell encoder gemm=1,24,96 gemm=1,32,96\n",
    "t_s2s": "model t_s2s\nsource test\ninput_len uniform:1:9\noutput_len uniform:1:9\n"
             "node enc_cell encoder gemm=1,80,192\nnode dec_cell decoder gemm=1,64,192\n"
             "node dec_proj decoder gemm=1,48,301\n",
    "t_tf": tf_model("t_tf", False),
    "t_mlp": "model t_mlp\nsource test\nnode fc1 static gemm=1,40,72\nnode fc2 static gemm=1,72,72\n"
             "node fc3 static gemm=1,72,11\n",
    "t_tfp": tf_model("t_tfp", True),
}
paths = {}
for name, text in MODELS.items():
    paths[name] = os.path.join(td, name + ".model")
    write(paths[name], text)
hw = os.path.join(td, "est.csv")   # the policy's estimates: 50 us + 5 us a batch row, any node
write(hw, "node,batch,latency_s\n*,1,0.000055\n*,64,0.00037\n")
# t_tfp's pass nodes count tokens (up to 8 requests of 9): the same line further
hw_tfp = os.path.join(td, "est-tfp.csv")
write(hw_tfp, "node,batch,latency_s\n*,1,0.000055\n*,64,0.00037\n" +
      "".join(f"{n},1,0.000055\n{n},100,0.00055\n" for n in ("enc_l1", "enc_l2", "cross_kv")))

rnd = random.Random(5)


def bursty_trace(path, gap_s, max_in, max_out):
    """40 requests in bursts (a new burst with chance 0.4, gap_s after the last), lengths
    uniform from 1; returns the rows written."""
    t, rows = 0.0, []
    for i in range(40):
        if rnd.random() > 0.6:
            t += gap_s
        rows.append(f"{t:.6f},{rnd.randint(1, max_in)},{rnd.randint(1, max_out)}")
    write(path, "arrival_s,input_len,output_len\n" + "\n".join(rows) + "\n")
    return rows


# A bursty trace: groups of 1..6 requests together, 1 ms apart.
trace = os.path.join(td, "trace.csv")
bursty_trace(trace, 0.001, 9, 9)

policies = [line.split()[0] for line in sb("list", "policies").stdout.splitlines() if line.strip()]
check("policies listed", "serial" in policies and "graph" in policies, policies)
COMMON = ["--trace=" + trace, "--max-batch=8", "--no-db", "--json", "--seed=3"]


def knobs(pol):
    """--window=0.5 for a policy that takes a batching window (its --help lists it), nothing for another."""
    return ["--window=0.5"] if "--window=V" in sb("--policy=" + pol, "--help").stdout else []

# ---- every model family x every policy: completes, outputs equal served alone ----
for name in MODELS:
    est = ["--hw=" + (hw_tfp if name == "t_tfp" else hw)]
    ref_path = os.path.join(td, f"{name}-serial.out")
    r = sb("live", "--model=" + paths[name], "--policy=serial", "--outputs-out=" + ref_path, *est, *COMMON)
    check(f"{name} serial runs", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        continue
    ref = outputs(ref_path)
    check(f"{name} serial: 40 outputs", len(ref) == 40, len(ref))
    for pol in policies:
        if pol == "serial":
            continue
        out_path = os.path.join(td, f"{name}-{pol}.out")
        r = sb("live", "--model=" + paths[name], "--policy=" + pol, "--outputs-out=" + out_path, *est, *COMMON,
               *knobs(pol))
        if r.returncode == 2 and pol in r.stderr and "model" in r.stderr:
            print(f"ok   {name} {pol}: refused by the policy ({r.stderr.strip()[:100]})")
            continue
        check(f"{name} {pol} runs", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        j = json.loads(r.stdout)
        check(f"{name} {pol} all completed", j["completed"] == 40 == j["requests"], (j["completed"], j["requests"]))
        got = outputs(out_path)
        same = len(got) == len(ref)
        for rid, (toks, vals) in ref.items():
            g = got.get(rid)
            scale = max((abs(v) for v in vals), default=0.0)   # 1e-5 relative, in the max norm
            if g is None or g[0] != toks or len(g[1]) != len(vals) or \
               any(abs(a - b) > 1e-5 * scale for a, b in zip(g[1], vals)):
                same = False
                break
        check(f"{name} {pol} outputs equal served alone (mean batch {j['mean_batch']:.2f})", same)

# ---- the issue schedule: the simulator's, never early ----
sim_csv, live_csv, issue_csv = (os.path.join(td, f) for f in ("sim.csv", "live.csv", "issue.csv"))
args = ["--model=" + paths["t_s2s"], "--hw=" + hw, "--policy=cellular", "--rate=400", "--requests=200",
        "--seed=4", "--max-batch=8", "--no-db"]
r1 = sb("run", *args, "--requests-out=" + sim_csv, "--quiet")
r2 = sb("live", *args, "--requests-out=" + live_csv, "--issue-out=" + issue_csv, "--json")
check("sim and live run", r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr)
if r1.returncode == 0 and r2.returncode == 0:
    key = lambda p: sorted((row["id"], row["arrival_s"], row["input_len"], row["output_len"])
                           for row in csv.DictReader(open(p)))
    check("live requests = simulated requests (arrivals, lengths)", key(sim_csv) == key(live_csv))
    late = sorted(float(row["late_us"]) for row in csv.DictReader(open(issue_csv)))
    check("issue log has every request", len(late) == 200, len(late))
    check("no request issued early", late and late[0] >= 0, late[:3])
    p50, p99 = late[len(late) // 2], late[int(0.99 * len(late)) - 1]
    print(f"     issue lateness measured: p50 {p50:.1f} us, p99 {p99:.1f} us, max {late[-1]:.1f} us")
    check("median issue lateness under 2 ms (sanity bound)", p50 < 2000, p50)
    j = json.loads(r2.stdout)
    for k in ["policy", "model", "hw", "rate_rps", "seed", "requests", "completed", "throughput_rps", "latency_ms",
              "queue_ms", "sla_ms", "sla_violation_rate", "mean_batch", "events", "wall_s", "run_id", "live",
              "partial", "dropped", "issue_late_us", "overhead_us", "device", "kernels"]:
        check(f"live json has {k}", k in j)
    check("live json: live true, not partial", j.get("live") is True and j.get("partial") is False)
    lat = j.get("latency_ms", {})
    check("percentiles ordered", lat and lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"])
    # the machine's contention during the run: numbers this machine decides, so only their form
    cont = j.get("cpu_contention", {})
    nonneg = lambda v: v is None or (isinstance(v, (int, float)) and v >= 0)
    check("live json: cpu_contention, every figure a non-negative number or null",
          set(cont) == {"workers_cpu_ms", "workers_runq_wait_ms", "runq_wait_vs_cpu", "scheduler_runq_wait_ms",
                        "psi_cpu_some_share", "void_above", "sim_comparison_void"} and
          all(nonneg(cont[k]) for k in cont if k != "sim_comparison_void") and cont["void_above"] == 0.1, cont)
    if cont.get("workers_cpu_ms") is not None:
        check("cpu_contention: the verdict is the share against void_above",
              cont["sim_comparison_void"] == (cont["runq_wait_vs_cpu"] > cont["void_above"]) and
              abs(cont["runq_wait_vs_cpu"] - cont["workers_runq_wait_ms"] / cont["workers_cpu_ms"]) <=
              1e-5 * max(1.0, cont["runq_wait_vs_cpu"]), cont)

# ---- stored as live ----
db = os.path.join(td, "r.db")
r = sb("live", "--model=" + paths["t_lstm"], "--hw=" + hw, "--rate=300", "--requests=60", "--db=" + db,
       "--max-batch=8", "--quiet")
check("stored live run exits 0", r.returncode == 0 and r.stdout == "", r.stderr)
check("one run, marked live", [x[1] for x in runs(db)] == [1], runs(db))
if runs(db):
    con = sqlite3.connect(db)
    cfg = dict(con.execute("select key, value from run_config"))
    con.close()
    check("run_config: live.partial = 0, device recorded", cfg.get("live.partial") == "0" and
          cfg.get("live.device", "").startswith("cpu"), cfg.get("live.partial"))

# ---- bad input: exit 2, one line, nothing stored ----
bad_db = os.path.join(td, "bad.db")
for label, extra in [("unknown device", ["--device=tpu"]), ("model without kernels", ["--model=resnet50"]),
                     ("unknown gemm", ["--gemm=fast"]), ("zero queue", ["--max-queue=0"]),
                     ("unwritable outputs", ["--outputs-out=" + os.path.join(td, "no", "such", "dir")]),
                     ("unknown policy", ["--policy=nope"])]:
    a = ["live", "--model=" + paths["t_lstm"], "--hw=" + hw, "--requests=10", "--db=" + bad_db, *extra]
    if extra[0].startswith("--model="):
        a = ["live", *extra, "--hw=" + hw, "--requests=10", "--db=" + bad_db]
    r = sb(*a)
    check(f"bad input ({label}): exit 2, one line", r.returncode == 2 and r.stderr.count("\n") == 1 and
          r.stdout == "", (r.returncode, r.stderr))
check("bad input: no run stored", runs(bad_db) == [])
r = sb("live", "--model=resnet50", "--hw=" + hw, "--requests=10", "--no-db")
check("no-kernel error lists the live models", "lstm" in r.stderr and "seq2seq" in r.stderr, r.stderr)
r = sb("live", "--model=" + paths["t_lstm"], "--hw=" + hw, "--requests=10", "--no-db", "--device=gpu", "--json")
if r.returncode == 0:   # a GPU and the CUDA backend: the run must complete
    check("--device=gpu runs on the GPU", json.loads(r.stdout)["completed"] == 10, r.stdout[:200])
else:                   # no GPU, or no CUDA backend built: one clear line
    check("--device=gpu without a usable GPU: one line", r.stderr.count("\n") == 1, r.stderr)

# ---- saturation: a rate nothing sustains ends, drops counted ----
r = sb("live", "--model=" + paths["t_s2s"], "--hw=" + hw, "--policy=serial", "--rate=1000000", "--requests=300",
       "--max-queue=4", "--no-db", "--json", timeout=120)
check("saturated run exits 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    j = json.loads(r.stdout)
    check("drops counted", j["dropped"] > 0 and j["completed"] + j["dropped"] == j["requests"] == 300,
          (j["dropped"], j["completed"]))
    check("queue bound held", j["max_outstanding"] <= 4, j["max_outstanding"])

# ---- SIGINT: partial run stored, exit 130 ----
sig_db = os.path.join(td, "sig.db")
p = subprocess.Popen([SB, "live", "--model=" + paths["t_s2s"], "--hw=" + hw, "--rate=20", "--requests=2000",
                      "--db=" + sig_db, "--json", "--max-batch=8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                     text=True)
time.sleep(1.5)
p.send_signal(signal.SIGINT)
out, errs = p.communicate(timeout=60)
check("SIGINT: exit 130", p.returncode == 130, (p.returncode, errs))
if out.strip():
    j = json.loads(out)
    check("SIGINT: JSON partial", j.get("partial") is True and j["completed"] < 2000, j.get("partial"))
stored = runs(sig_db)
check("SIGINT: the partial run is stored", len(stored) == 1 and stored[0][1] == 1, stored)
if stored:
    con = sqlite3.connect(sig_db)
    part = con.execute("select value from run_config where key = 'live.partial'").fetchone()
    con.close()
    check("SIGINT: live.partial = 1", part == ("1",), part)

# timeout(1) delivers its signal twice (to the command and to its process
# group): still one clean stop, the partial run stored
tdb = os.path.join(td, "timeout.db")
r = subprocess.run(["timeout", "--preserve-status", "-s", "INT", "2", SB, "live", "--model=" + paths["t_s2s"],
                    "--hw=" + hw, "--rate=20", "--requests=2000", "--db=" + tdb, "--max-batch=8"],
                   capture_output=True, text=True, timeout=60)
check("timeout -s INT: exit 130", r.returncode == 130, (r.returncode, r.stderr))
stored = runs(tdb)
check("timeout -s INT: the partial run is stored", len(stored) == 1 and stored[0][1] == 1, stored)
# a signal in the first moments (set-up, or the first requests): exit 128 + N,
# and either nothing stored ("stopped ... before any request completed") or
# the partial run
edb = os.path.join(td, "early.db")
r = subprocess.run(["timeout", "--preserve-status", "-s", "TERM", "0.05", SB, "live", "--model=" + paths["t_s2s"],
                    "--hw=" + hw, "--rate=20", "--requests=2000", "--db=" + edb, "--max-batch=8"],
                   capture_output=True, text=True, timeout=60)
early = runs(edb)
check("a signal at once: exit 143, nothing or a partial run stored",
      r.returncode == 143 and (not early or (len(early) == 1 and early[0][2] < 2000)), (r.returncode, r.stderr, early))

# SIGTERM and SIGHUP stop a run the same way, each with its own exit status
for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")):
    sdb = os.path.join(td, name + ".db")
    p = subprocess.Popen([SB, "live", "--model=" + paths["t_s2s"], "--hw=" + hw, "--rate=20", "--requests=2000",
                          "--db=" + sdb, "--json", "--max-batch=8"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    p.send_signal(sig)
    out, errs = p.communicate(timeout=60)
    check(f"{name}: exit {128 + sig}", p.returncode == 128 + sig, (p.returncode, errs))
    stored = runs(sdb)
    check(f"{name}: the partial run is stored", len(stored) == 1 and stored[0][1] == 1, stored)

# ---- the kernels' own latency table calibrates the simulator ----
prof = os.path.join(td, "prof.csv")
profiled = sb("live", "--model=" + paths["t_s2s"], "--profile-out=" + prof, "--max-batch=8", "--profile-reps=3")
check("--profile-out exits 0", profiled.returncode == 0, profiled.stderr)
r = sb("live", "--model=" + paths["t_s2s"], "--profile-out=" + prof + "-with-load", "--rate=100", "--requests=20")
check("--profile-out with a load (--rate): refused with one line naming it, no table written (issue 38)",
      r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "--rate" in r.stderr and
      not os.path.exists(prof + "-with-load"), r.stderr)
if profiled.returncode == 0:
    rows = [l for l in open(prof) if l.strip() and not l.startswith("#")]
    check("profile: header + 3 nodes x 4 batches", rows[0].strip() == "node,batch,latency_s" and len(rows) == 13,
          len(rows))
    r = sb("run", "--model=" + paths["t_s2s"], "--hw=" + prof, "--max-batch=8", "--rate=200", "--requests=100",
           "--no-db", "--quiet")
    check("simbatch run accepts the profile as --hw", r.returncode == 0, r.stderr)
    # what a task pays once (the first node alone and 8 times in one task): a time within every row
    text = open(prof).read()
    over = [float(l.split(":", 1)[1]) for l in text.splitlines() if l.startswith("# task_overhead_s:")]
    times = [float(l.split(",")[2]) for l in rows[1:]]
    check("profile: one task overhead, >= 0 and within every row", len(over) == 1 and 0 <= over[0] <= min(times),
          (over, min(times)))

# Cold weights: on the CPU a node whose weights a live run would not find cached is timed with the
# last-level cache evicted, and the profile names it. In this seq2seq the projection's weights,
# 48 x 180000 floats = 34.6 MB, run between two runs of the decoder cell, so the cell is cold
# exactly when they fill the last-level cache (Linux sysfs); the projection is never cold (only the
# small cell runs between two of its runs), nor the encoder cell (it repeats alone).
def llc_bytes():
    best, best_level = 0, 0
    for d in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*"):
        try:
            level = int(open(os.path.join(d, "level")).read())
            size = open(os.path.join(d, "size")).read().strip()
        except (OSError, ValueError):
            continue
        if size.endswith("K") and level > best_level:
            best, best_level = int(size[:-1]) * 1024, level
    return best


big = os.path.join(td, "t_s2s_big.model")
write(big, "model t_s2s_big\nsource test\ninput_len uniform:1:5\noutput_len uniform:1:5\n"
           "node enc_cell encoder gemm=1,80,192\nnode dec_cell decoder gemm=1,64,192\n"
           "node dec_proj decoder gemm=1,48,180000\n")
r = sb("live", "--model=" + big, "--profile-out=" + prof, "--max-batch=2", "--profile-reps=2")
check("--profile-out of the large-vocabulary seq2seq exits 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    named = [l for l in open(prof) if l.startswith("# each call after evicting")]
    llc = llc_bytes()
    want = ["dec_cell"] if llc and 48 * 180000 * 4 >= llc else []
    got = named[0].split(":")[1].split() if named else []
    check(f"evicted before timing: {want} (last-level cache {llc >> 10} KiB)", got == want, named)

# A pass encoder's rows count tokens: 1, 2, 4, ... up to 8 requests of the longest input (7): 56.
r = sb("live", "--model=" + paths["t_tfp"], "--profile-out=" + prof, "--max-batch=8", "--profile-reps=3")
check("--profile-out of a pass model exits 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    rows = [l.strip().split(",") for l in open(prof) if l.strip() and not l.startswith("#")][1:]
    by_node = {}
    for node, batch, _ in rows:
        by_node.setdefault(node, []).append(int(batch))
    pass_rows = [1, 2, 4, 8, 16, 32, 56]
    check("pass nodes by tokens, the others by requests",
          all(by_node[n] == pass_rows for n in ("enc_l1", "enc_l2", "cross_kv")) and
          all(by_node[n] == [1, 2, 4, 8] for n in ("dec_l1", "dec_l2", "proj")), by_node)
    r = sb("run", "--model=" + paths["t_tfp"], "--hw=" + prof, "--max-batch=8", "--rate=200", "--requests=100",
           "--no-db", "--quiet")
    check("simbatch run accepts the pass model's profile", r.returncode == 0, r.stderr)
    r = sb("run", "--model=" + paths["t_tfp"], "--hw=" + prof, "--max-batch=8", "--input-len=fixed:8",
           "--requests=10", "--no-db", "--quiet")
    check("past the profiled tokens: exit 2, named", r.returncode == 2 and "no latency for tokens 64" in r.stderr,
          (r.returncode, r.stderr))
    r = sb("live", "--model=" + paths["t_tfp"], "--policy=lazy", "--rate=200", "--requests=30", "--max-batch=8",
           "--profile-reps=3", "--no-db", "--quiet")
    check("live pass model on the default --hw=profile", r.returncode == 0, r.stderr)

# ---- LLM serving live (runtime/kern_llm.c): iteration-level batching on real kernels ----
# A small Llama-layout model; estimates from a hand-written iteration profile.
llm = os.path.join(td, "t_llm.model")
write(llm, "model t_llm\nsource test\ninput_len uniform:1:20\noutput_len uniform:1:12\n"
           "llm layers=2 hidden=32 heads=4 kv_heads=2 head_dim=8 ffn=48 vocab=50 context=64 bytes=4 mlp=gated\n")
llm_plain = os.path.join(td, "t_llm_plain.model")
write(llm_plain, "model t_llm_plain\nsource test\ninput_len uniform:1:20\noutput_len uniform:1:12\n"
                 "llm layers=1 hidden=32 heads=2 kv_heads=2 head_dim=16 ffn=40 vocab=50 context=64 bytes=4 mlp=plain\n")


def iter_profile(path, model, mem_gb):
    write(path, f"kind = llm_iter\nmodel = {model}\nfixed_us = 20\ntoken_us = 2\nemit_us = 1\npair_ns = 10\n"
                f"mem_capacity_gb = {mem_gb}\n")


llm_trace = os.path.join(td, "llm_trace.csv")
rows = bursty_trace(llm_trace, 0.0005, 20, 12)
lengths = [(int(r.split(",")[1]), int(r.split(",")[2])) for r in rows]
for model, name in ((llm, "t_llm"), (llm_plain, "t_llm_plain")):
    est = os.path.join(td, name + ".iter")
    iter_profile(est, name, 1)
    LC = ["--model=" + model, "--hw=" + est, "--trace=" + llm_trace, "--no-db", "--json", "--seed=3"]
    ref_path = os.path.join(td, name + "-alone.out")
    r = sb("live", *LC, "--policy=continuous", "--max-seqs=1", "--outputs-out=" + ref_path)
    check(f"{name} served one at a time", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        continue
    ref = outputs(ref_path)
    check(f"{name}: every request yields its output length in tokens",
          len(ref) == 40 and all(len(ref[i][0]) == lengths[i][1] for i in range(40)), len(ref))
    for pol, extra in (("continuous", []), ("chunked", ["--max-batched-tokens=8"]), ("static", ["--window=1"]),
                       ("slo", ["--ttft-slo=50", "--tpot-slo=10"])):
        out_path = os.path.join(td, f"{name}-{pol}.out")
        r = sb("live", *LC, "--policy=" + pol, *extra, "--outputs-out=" + out_path)
        check(f"{name} {pol} runs", r.returncode == 0, r.stderr)
        if r.returncode != 0:
            continue
        j = json.loads(r.stdout)
        check(f"{name} {pol} all completed", j["completed"] == 40, j["completed"])
        check(f"{name} {pol}: tokens and final vectors equal served alone (bit for bit; mean batch "
              f"{j['mean_batch']:.2f})", outputs(out_path) == ref)
    # A KV cache of 3 blocks of 16 tokens (the longest request takes 2): requests wait and are
    # preempted, their caches recomputed, and still yield the same tokens. Bytes by the Llama layout:
    # weights per layer d(q + 2kv) + q d + (3 or 2) d ffn, plus embedding and head 2 V d, at 4 bytes;
    # a token's keys and values layers x KV heads x head size x 2 x 4 bytes.
    r = sb("run", *LC, "--policy=continuous")
    check(f"{name} simulated on the same profile", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        if name == "t_llm":
            weights = (2 * (32 * (32 + 2 * 16) + 32 * 32 + 3 * 32 * 48) + 2 * 50 * 32) * 4
            block_bytes = 16 * 2 * 2 * 8 * 2 * 4
        else:
            weights = (1 * (32 * (32 + 2 * 32) + 32 * 32 + 2 * 32 * 40) + 2 * 50 * 32) * 4
            block_bytes = 16 * 1 * 2 * 16 * 2 * 4
        small = os.path.join(td, name + "-small.iter")
        iter_profile(small, name, (weights + 3.5 * block_bytes) / 1e9)
        out_path = os.path.join(td, f"{name}-small.out")
        r = sb("live", *[a for a in LC if not a.startswith("--hw=")], "--hw=" + small, "--policy=continuous",
               "--outputs-out=" + out_path)
        check(f"{name} on a 3-block cache runs", r.returncode == 0, r.stderr)
        if r.returncode == 0:
            j = json.loads(r.stdout)
            ps = j["policy_stats"]
            check(f"{name} on a 3-block cache: 3 blocks, preempted ({ps['preemptions']:.0f}), all completed",
                  ps["kv_blocks"] == 3 and ps["preemptions"] > 0 and j["completed"] == 40, ps)
            check(f"{name} after preemptions: outputs equal served alone", outputs(out_path) == ref)
# The iteration profile's prices, by hand: one request of 10 prompt and 4 output tokens alone on
# t_llm (fixed 20 us, 2 us a token, 1 us an emitting row, 10 ns a query-key pair): the prefill runs
# 10 tokens over 55 pairs, then 3 decode steps of 1 token on caches of 10, 11, 12 (11, 12, 13 pairs).
one = os.path.join(td, "one.csv")
write(one, "arrival_s,input_len,output_len\n0,10,4\n")
rq = os.path.join(td, "one-req.csv")
r = sb("run", "--model=" + llm, "--hw=" + os.path.join(td, "t_llm.iter"), "--trace=" + one, "--policy=continuous",
       "--no-db", "--requests-out=" + rq, "--quiet")
check("one request on the iteration profile runs", r.returncode == 0, r.stderr)
if r.returncode == 0:
    row = next(csv.DictReader(open(rq)))
    prefill = 20 + 2 * 10 + 1 + 0.010 * 55
    decodes = sum(20 + 2 + 1 + 0.010 * p for p in (11, 12, 13))
    check("first token after the prefill's price", abs(float(row["first_token_s"]) * 1e6 - prefill) < 0.01,
          (row["first_token_s"], prefill))
    check("finish after the prefill and three decode steps",
          abs(float(row["finish_s"]) * 1e6 - (prefill + decodes)) < 0.01, (row["finish_s"], prefill + decodes))

# Static batching pads the shorter prompt to the longer: requests of 10 and 4 prompt tokens, one
# output token each, arriving together are one prefill of 14 tokens and 6 padding rows, both
# emitting, over 55 + 10 query-key pairs: 20 + 2 x 20 + 1 x 2 + 0.010 x 65 = 62.65 us. The
# simulation finishes both then, and live's estimate of the task it ran is that price.
two = os.path.join(td, "two.csv")
write(two, "arrival_s,input_len,output_len\n0,10,1\n0,4,1\n")
SC = ["--model=" + llm, "--hw=" + os.path.join(td, "t_llm.iter"), "--trace=" + two, "--policy=static", "--window=1",
      "--no-db"]
r = sb("run", *SC, "--requests-out=" + rq, "--quiet")
check("static: the padded prefill's price, simulated",
      r.returncode == 0 and all(abs(float(row["finish_s"]) * 1e6 - (62.65 + 1000)) < 0.01
                                for row in csv.DictReader(open(rq))), r.stderr)
r = sb("live", *SC, "--json")
check("static: live prices the task it ran with its padding",
      r.returncode == 0 and abs(json.loads(r.stdout)["hw_estimate"]["estimate_ms"] - 0.06265) < 1e-9, r.stdout[-300:])

# --profile-out for an LLM: timed iterations fitted into a file of kind llm_iter, which run accepts
prof = os.path.join(td, "t_llm.prof")
r = sb("live", "--model=" + llm, "--profile-out=" + prof, "--max-batch=8", "--profile-reps=3")
check("LLM --profile-out exits 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    kv = dict(l.split("#")[0].split("=", 1) for l in open(prof) if "=" in l.split("#")[0])
    kv = {k.strip(): v.strip() for k, v in kv.items()}
    check("LLM profile: kind llm_iter for t_llm, coefficients not negative",
          kv.get("kind") == "llm_iter" and kv.get("model") == "t_llm" and
          all(float(kv[k]) >= 0 for k in ("fixed_us", "token_us", "emit_us", "pair_ns")), kv)
    r = sb("run", "--model=" + llm, "--hw=" + prof, "--policy=chunked", "--rate=500", "--requests=50", "--no-db",
           "--quiet")
    check("simbatch run accepts the LLM profile as --hw", r.returncode == 0, r.stderr)
    r = sb("live", "--model=" + llm, "--policy=continuous", "--rate=500", "--requests=30", "--no-db", "--quiet")
    check("live LLM with the default --hw=profile", r.returncode == 0, r.stderr)

# bad iteration profiles: file, line and key named, exit 2
good = "kind = llm_iter\nmodel = t_llm\nfixed_us = 20\ntoken_us = 2\nemit_us = 1\npair_ns = 10\nmem_capacity_gb = 1\n"
for label, text, want in [
        ("negative", good.replace("token_us = 2", "token_us = -2"), ":4: key 'token_us'"),
        ("unknown key", good + "speed = 3\n", ":8: unknown key 'speed'"),
        ("missing key", good.replace("pair_ns = 10\n", ""), "key 'pair_ns' is missing"),
        ("zero memory", good.replace("mem_capacity_gb = 1", "mem_capacity_gb = 0"), ":7: key 'mem_capacity_gb'"),
        ("twice", good + "emit_us = 2\n", ":8: key 'emit_us' given twice"),
        ("another model", good.replace("model = t_llm", "model = llm-tiny"), "measured for model llm-tiny")]:
    bad = os.path.join(td, "bad.iter")
    write(bad, text)
    r = sb("run", "--model=" + llm, "--hw=" + bad, "--requests=5", "--no-db")
    check(f"bad iteration profile ({label}): exit 2, one line naming it",
          r.returncode == 2 and r.stderr.count("\n") == 1 and want in r.stderr, (r.returncode, r.stderr))

# ---- timeline ----
tl = os.path.join(td, "tl.json")
r = sb("live", "--model=" + paths["t_tf"], "--hw=" + hw, "--policy=cellular", "--rate=500", "--requests=30",
       "--max-batch=8", "--no-db", "--quiet", "--timeline-out=" + tl)
check("live --timeline-out exits 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    ev = json.load(open(tl))
    ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
    check("timeline has tasks", len([e for e in ev if e.get("ph") == "X"]) > 0)

print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
