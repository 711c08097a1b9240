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

sb = os.path.abspath(sys.argv[1])
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
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
