#!/usr/bin/env python3
"""What storing a run costs a sweep: one worker (`simbatch run-worker`, as a
sweep runs its points) stores N one-request runs (whose simulation costs
almost nothing) into a database shaped as a sweep's: the sweep-point index
present and another connection holding it open, as the sweep itself does.
Prints the worker's CPU time per run (user + system), median of REPS.

Usage: bench/store_cost.py SIMBATCH [N=1500] [REPS=3]"""
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import tool_contract as tc  # noqa: E402  (one line and exit 2 or 1, docs/CONTRACT.md)

PROG = "bench/store_cost.py"
args = tc.hand_args(PROG, __doc__, sys.argv[1:], ["SIMBATCH"], ["N", "REPS"])
try:
    sb = os.path.abspath(args["SIMBATCH"])
    n = tc.number(args.get("N", "1500"), "N", int, 1)
    reps = tc.number(args.get("REPS", "3"), "REPS", int, 1)
    if not os.access(sb, os.X_OK):
        raise tc.BadInput(f"{args['SIMBATCH']}: no such program")
except tc.BadInput as e:
    tc.die(PROG, e)
td = tempfile.mkdtemp(prefix="simbatch-store-")
db = os.path.join(td, "store.db")


def job(args):
    return f"{len(args)}\n".encode() + b"".join(a.encode() + b"\0" for a in args)


frames = b"".join(job(["simbatch", "run", "--model=resnet50", "--policy=serial", "--rate=16", "--requests=1",
                       "--quiet", f"--db={db}", f"--sweep-point=p{i}"]) for i in range(n))
per_run = []
for rep in range(reps):
    for side in ("", "-wal", "-shm"):
        if os.path.exists(db + side):
            os.remove(db + side)
    subprocess.run([sb, "run", "--requests=1", "--quiet", f"--db={db}", "--sweep-point=init"], check=True)
    holder = sqlite3.connect(db)
    holder.execute("CREATE INDEX IF NOT EXISTS run_config_key_value ON run_config(key, value)")
    holder.commit()
    holder.execute("SELECT count(*) FROM runs").fetchall()
    t0 = os.times()
    subprocess.run([sb, "run-worker"], input=frames, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)   # the worker ends each job on stderr
    t1 = os.times()
    stored = holder.execute("SELECT count(*) FROM runs").fetchone()[0]
    holder.close()
    if stored != n + 1:
        sys.exit(f"only {stored - 1} of {n} runs were stored")
    cpu = (t1.children_user - t0.children_user) + (t1.children_system - t0.children_system)
    per_run.append(cpu / n * 1e3)
print(f"{n} runs stored by one worker: {statistics.median(per_run):.3f} ms CPU a run (median of {reps}: "
      + ", ".join(f"{x:.3f}" for x in per_run) + ")")
for side in ("", "-wal", "-shm"):
    if os.path.exists(db + side):
        os.remove(db + side)
os.rmdir(td)
