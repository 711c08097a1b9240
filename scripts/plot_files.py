"""plot_files: what scripts/plot reads besides the runs of a results database: a
--timeline-out file, an LLM run's --requests-out file, and a configuration
search (its results file, or the search a results database stored), each read
bounded and refused with one line (PlotError) when it is not what it should be.
scripts/plot's docstring is the user's guide."""
import csv
import io
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tool_contract as tc  # noqa: E402  (the bounded reader)
from plot_runs import PlotError, distinct, open_db  # noqa: E402


# What the readers here take at most, as the C readers do (util/lines.h): a timeline or a
# per-request file grows with the run, so 1 GiB, like a trace; the bytes are read in chunks and
# refused past it, so /dev/zero or a pipe that never ends is an error, not memory exhausted.
READ_LIMIT = 1 << 30


def read_bounded(path, what, limit=READ_LIMIT):
    """The whole file as text, at most limit bytes, no NUL byte: tool_contract's reader (BadInput, or
    MachineFailure for the machine's errors), a large file announced first."""
    size = os.path.getsize(path) if os.path.isfile(path) else 0
    if size > 20e6:
        print(f"plot: reading {size / 1e6:.0f} MB of {what} (about {size / 6e6:.0f} s)...", file=sys.stderr)
    return tc.read_text(path, limit, what)


def load_timeline(path):
    """Tasks from a Chrome trace-event file: (start_ms, end_ms, device, node, batch)."""
    try:
        doc = json.loads(read_bounded(path, "timeline"))
    except json.JSONDecodeError as e:
        raise PlotError(f"{path}: not JSON ({e.msg} at line {e.lineno})")
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise PlotError(f"{path}: no traceEvents array (expected --timeline-out output)")
    tasks = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        a = e.get("args") or {}
        batch = a.get("batch")
        if batch is None and isinstance(a.get("requests"), list):
            batch = len(a["requests"])
        if batch is None:
            raise PlotError(f"{path}: a task event has neither args.batch nor args.requests")
        start_ms = float(e["ts"]) / 1e3        # trace-event times are microseconds
        tasks.append((start_ms, start_ms + float(e.get("dur", 0)) / 1e3, e.get("tid", 0), e.get("name", ""), int(batch)))
    return sorted(tasks)


def load_token_rows(path):
    """TTFT and TPOT of every request of an LLM run's --requests-out file, ms."""
    rows = list(csv.DictReader(io.StringIO(read_bounded(path, "requests file"), newline="")))
    if not rows or "first_token_s" not in rows[0]:
        raise PlotError(f"{path}: not the --requests-out file of an LLM run (no first_token_s column)")
    ttft, tpot = [], []
    for r in rows:
        arrival, first, finish, out = float(r["arrival_s"]), float(r["first_token_s"]), float(r["finish_s"]), int(r["output_len"])
        ttft.append((first - arrival) * 1e3)
        if out > 1:
            tpot.append((finish - first) / (out - 1) * 1e3)   # DESIGN.md 3b: requests of one token have none
    return ttft, tpot


class Config:
    """One simulated configuration of a search: its cost, capacity, capacity search bracket, the hardware
    band (the capacity itself where the hardware has none) and its key, its options sorted by name."""

    def __init__(self, key, cost, cap, bracket_lo, bracket_hi, band_lo, band_hi):
        self.key, self.cost, self.cap, self.bracket = key, cost, cap, (bracket_lo, bracket_hi)
        self.band = (cap if band_lo is None or math.isnan(band_lo) else band_lo,
                     cap if band_hi is None or math.isnan(band_hi) else band_hi)
        self.options = dict(w.partition("=")[::2] for w in key.split())    # sim/SEARCH.md: name=value words


def load_search(path):
    """The simulated configurations of a search results file."""
    rows = list(csv.DictReader(io.StringIO(read_bounded(path, "search results file"), newline="")))
    if rows and "capacity_rps" not in rows[0]:
        raise PlotError(f"{path}: not a simbatch search results file (no capacity_rps column)")
    out = [Config(r["key"], *(float(r[k]) for k in ("cost_per_hour", "capacity_rps", "bracket_lo_rps",
                                                  "bracket_hi_rps", "band_lo_rps", "band_hi_rps")))
           for r in rows if r["status"] == "ok"]
    if not out:
        raise PlotError(f"{path}: no configuration with a capacity")
    return out, os.path.basename(path)


def load_search_db(path, search_id):
    """The simulated configurations of a search stored in a results database (the newest unless
    search_id names one), and where they came from."""
    con = open_db(path)
    if not con.execute("select 1 from sqlite_master where name = 'search_configs'").fetchone():
        raise PlotError(f"{path}: no search stored (a database from before simbatch stored searches)")
    ids = [row[0] for row in con.execute("select search_id from searches order by search_id")]
    if not ids:
        raise PlotError(f"no search stored in {path} (simbatch search stores one with --db)")
    sid = ids[-1] if search_id is None else search_id
    if sid not in ids:
        raise PlotError(f"--search={search_id}: no such search in {path} (stored: {', '.join(map(str, ids))})")
    file = con.execute("select file from searches where search_id = ?", (sid,)).fetchone()[0]
    out = [Config(*row) for row in con.execute(
        "select key, cost_per_hour, capacity_rps, bracket_lo_rps, bracket_hi_rps, band_lo_rps, band_hi_rps"
        " from search_configs where search_id = ? and status = 'ok' and key is not null", (sid,))]
    if not out:
        raise PlotError(f"search {sid} in {path}: no configuration with a capacity")
    return out, f"search {sid} ({os.path.basename(file or '?')}) in {os.path.basename(path)}"


def search_context(configs):
    """The search's model, hardware, engine and SLOs, from its configurations' stored options."""
    def values(key):
        vals = distinct(c.options.get(key) for c in configs)
        return "/".join(vals) + (" (some: the default)" if vals and any(key not in c.options for c in configs)
                                 else "")
    hw = values("hw") or "the model's default hardware"
    words = [f"{values('model') or 'the default model'} on {hw}"]
    for key, name in (("tp", "TP"), ("ep", "EP"), ("engine", "engine")):
        if values(key) and len({c.options.get(key) for c in configs}) == 1:     # an axis: the labels say it
            words.append(f"{name} {values(key)}")
    slos = [f"{name} {values(key)}{unit}" for key, name, unit in
            (("ttft-slo", "TTFT", " ms"), ("tpot-slo", "TPOT", " ms"), ("sla", "SLA", " ms"),
             ("percentile", "at percentile", ""), ("attainment", "attainment", ""), ("preset", "preset", ""))
            if values(key)]
    return ", ".join(words) + ("; SLOs " + ", ".join(slos) if slos else "; no SLO option stored")


def pareto_front(configs):
    """Cheapest first, each configuration that out-serves every cheaper one (of equal costs the larger)."""
    front, most = [], -1.0
    for c in sorted(configs, key=lambda c: (c.cost, c.cap)):
        if c.cap > most:
            if front and front[-1].cost == c.cost:
                front.pop()
            front.append(c)
            most = c.cap
    return front
