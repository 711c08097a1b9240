"""simbatch_results: a simbatch results database as tidy pandas DataFrames.

Needs only Debian's python3 and python3-pandas (the database is SQLite; the
schema is docs/RESULTS.md). Nothing here writes to the database.

    import sys; sys.path.insert(0, "scripts")      # from the project root
    import simbatch_results as sr
    db = "results/simbatch.db"
    runs = sr.runs(db)              # a row per run: its metrics, options and counters as columns
    m = sr.metrics(db)              # every run's metrics by their one name, long: run_id, metric, value
    ttft = sr.cdfs(db, "ttft")      # every run's TTFT CDF, long: run_id, metric, quantile, value_ms
    c = sr.cdf(db, 12)              # run 12's latency CDF: quantile, latency_ms
    q = sr.requests(db, 12)         # its per-request rows (stored with --db-requests)
    s = sr.stats(db)                # the counters again, long: run_id, key, value
    f = sr.replicas(db)             # a fleet's runs: a row per run and replica, its share
    h, c = sr.searches(db)          # configuration searches: a row each, and a row per configuration
    k, p = sr.capacities(db)        # capacity answers: a row each (configuration, target, bracket), and their probes
    # one series per policy and rate, joined on run_id:
    ttft.merge(runs[["run_id", "policy", "rate_rps"]], on="run_id")
    # from a notebook, through the binary (build/simbatch unless simbatch= is given):
    row = sr.simulate("study.db", model="gnmt", policy="graph", window=5, rate=500)
    grid = sr.sweep("bench/lazybatching.sweep", "study.db")   # its runs, resumed if stopped
    knobs = sr.policies()           # the registry: each policy's knobs, type, default, bounds

A metric's column is its one name (docs/METRICS.md, `simbatch list metrics`):
ttft_ms.p99, output_tokens_per_s, latency_ms.p99, as in the JSON and sweep
--metrics. Other column names have no dashes: an option --max-batch is the
column max_batch, a policy counter kv_blocks.x the column kv_blocks_x. Run as a program it prints the
runs table:  python3 scripts/simbatch_results.py DB  (a database it cannot
read: one line and exit 2).
"""
import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse

try:
    import pandas as pd
except ImportError:          # said when a function is called, in one line
    pd = None

DEFAULT_SIMBATCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "simbatch")
NO_PANDAS = ("pandas is missing: apt-get install python3-pandas (Debian's /usr/bin/python3 has it "
             "then), or pip install pandas for this python3")


def _need_pandas():
    if pd is None:
        raise ImportError(NO_PANDAS)


def connect_to_read(path):
    """A connection that reads path and leaves nothing beside it: a read-only
    connection to a WAL database makes PATH-wal and PATH-shm and, unable to
    checkpoint, leaves them. Where the file and its directory are writable it
    is opened read-write (never created) with query_only, under SQLite's locks,
    and the last connection to close removes them; otherwise read-only
    (util/sqlite_read.h does the same in C). Anything but a regular file is
    refused (sqlite3.DatabaseError)."""
    if not os.path.isfile(path):        # a device or FIFO is no database, and one that never ends is not read
        raise sqlite3.DatabaseError("no such file" if not os.path.exists(path) else "not a regular file")
    folder = os.path.dirname(os.path.abspath(path))
    writable = os.access(path, os.W_OK) and os.access(folder, os.W_OK)
    con = sqlite3.connect("file://" + urllib.parse.quote(os.path.abspath(path)) +
                          ("?mode=rw" if writable else "?mode=ro"), uri=True)
    if writable:
        con.execute("pragma query_only = 1")
    return con


def machine_failed(e):
    """Whether a sqlite3 error is the machine's (I/O, a full disk, memory, a file it cannot open), not the
    database's: the caller exits 1 for it, 2 for a damaged or foreign database (util/errkind.h likewise)."""
    return getattr(e, "sqlite_errorname", "").startswith(("SQLITE_IOERR", "SQLITE_FULL", "SQLITE_NOMEM",
                                                           "SQLITE_CANTOPEN"))


def _connect(path):
    """Read-only: a mistyped path is an error, never a new empty file."""
    _need_pandas()
    try:
        con = connect_to_read(path)
        app = con.execute("select value from simbatch_meta where key = 'application'").fetchone()
    except sqlite3.DatabaseError as e:
        if machine_failed(e):
            raise
        raise ValueError(f"{path}: not a readable simbatch results database ({e})")
    if not app or app[0] != "simbatch":
        raise ValueError(f"{path}: not a simbatch results database")
    return con


def _column_name(key):
    """A stored option or counter key as a column name: no dashes or dots."""
    return key.replace("-", "_").replace(".", "_")


def _numbers_where_all_are(col):
    """A column of text as numbers when every value present is one (options are stored as text)."""
    num = pd.to_numeric(col, errors="coerce")
    return num if num.notna().sum() == col.notna().sum() else col


def _has_table(con, name):
    return con.execute("select 1 from sqlite_master where type = 'table' and name = ?", (name,)).fetchone() is not None


def runs(path):
    """Every run, one row each, run_id a column (the index is 0..n-1): the
    columns of runs and run_metrics (schema in docs/RESULTS.md; a version-1
    file has no saturated column, read as NA; where a metric has the name of one of
    these columns, such as sla_violation_rate, the column holds the metric: NA for an
    LLM run without --sla); then each metric the runs have
    under its one name (docs/METRICS.md: latency_ms.p99, ttft_ms.p99,
    output_tokens_per_s, ...; NA where a run has none; a file of schema 6 or
    later, older files have the counters below instead); then every stored option as a
    column named without dashes (--max-batch: max_batch; numbers where every
    run's value is one, else the text; NA where a run did not have it; an
    option that repeats a runs column, such as --policy or --seed, is that
    column, or KEY_option where its text differs, as --hw=FILE's path does); then the run's other counters
    (run_stats: a policy's counters; in a file older than schema 6 also an LLM run's TTFT, TPOT and ITL
    statistics, goodput, SLO attainment, KV occupancy) as columns, dots made underscores
    (ttft_ms.p99: ttft_ms_p99). A fleet's per-replica shares are replicas()'s."""
    con = _connect(path)
    try:
        df = pd.read_sql_query(
            "select r.*, m.count, m.mean_ms, m.p50_ms, m.p90_ms, m.p95_ms, m.p99_ms, m.p999_ms, m.max_ms,"
            " m.min_ms, m.queue_mean_ms, m.queue_p99_ms, m.sla_violation_rate"
            " from runs r left join run_metrics m using (run_id) order by r.run_id", con)
        if "saturated" not in df.columns:
            df["saturated"] = pd.NA
        cfg = pd.read_sql_query("select run_id, key, value from run_config", con)
        named = _has_table(con, "metric_names")       # schema 6: the metrics by name, and the names
        mv = pd.read_sql_query("select run_id, metric, value from run_metric_values", con) if named else None
        names = [n for (n,) in con.execute("select name from metric_names")] if named else []
        # a fleet's per-replica rows are replicas()'s, one row a replica, not a column each here; a counter that
        # is a metric (ttft_ms.p99) is its column by its name, once
        st = pd.read_sql_query("select run_id, key, value from run_stats where key not like 'replica.%'" +
                               (" and key not in (select name from metric_names)" if named else ""), con)
    finally:
        con.close()
    df = df.drop(columns=["summary_json"])
    if named:
        wide = mv.pivot(index="run_id", columns="metric", values="value") if len(mv) else pd.DataFrame()
        wide.columns = list(wide.columns)
        for c in [c for c in names if c in df.columns]:            # throughput_rps, sla_violation_rate, ...:
            df[c] = df.run_id.map(wide.pop(c)) if c in wide.columns else pd.NA   # NA where the run has none
        df = df.merge(wide, how="left", left_on="run_id", right_index=True)
    for table, convert, suffix in ((cfg, _numbers_where_all_are, "_option"), (st, None, "_stat")):
        if not len(table):
            continue
        wide = table.pivot(index="run_id", columns="key", values="value")
        wide.columns = [_column_name(k) for k in wide.columns]
        if convert:
            wide = wide.apply(convert)
        for c in [c for c in wide.columns if c in df.columns]:     # --policy, --seed, --hw, ...
            both = df.set_index("run_id")[c].reindex(wide.index)
            if (wide[c].astype(str) == both.astype(str)).all():
                wide = wide.drop(columns=[c])                       # the same values: that column
            else:
                wide = wide.rename(columns={c: c + suffix})         # as given, e.g. --hw's file path
        df = df.merge(wide, how="left", left_on="run_id", right_index=True)
    return df.reset_index(drop=True)


def metrics(path):
    """Every run's metrics by their one name (docs/METRICS.md), long: run_id,
    metric, value; a metric a run has not (goodput without SLOs, a node-level
    run's token figures) has no row. Empty for a file older than schema 6 that
    no simbatch has written to since (writing upgrades it)."""
    con = _connect(path)
    try:
        if not _has_table(con, "run_metric_values"):
            return pd.DataFrame({"run_id": pd.Series(dtype="int64"), "metric": pd.Series(dtype=str),
                                 "value": pd.Series(dtype=float)})
        return pd.read_sql_query("select run_id, metric, value from run_metric_values order by run_id, metric", con)
    finally:
        con.close()


def cdf(path, run_id, metric="latency"):
    """Run run_id's CDF of metric: 1000 rows, quantile i/1000 and its value in
    ms (latency_ms for latency; value_ms for an LLM run's ttft, tpot and itl,
    empty where the run has none: not an LLM run, or stored before schema 3)."""
    con = _connect(path)
    try:
        if metric == "latency":
            return pd.read_sql_query("select quantile, latency_ms from run_cdf where run_id = ? order by quantile",
                                     con, params=(run_id,))
        if metric not in ("ttft", "tpot", "itl"):
            raise ValueError(f"unknown metric '{metric}' (latency, ttft, tpot or itl)")
        if not con.execute("select 1 from sqlite_master where name = 'run_token_cdf'").fetchone():
            return pd.DataFrame({"quantile": pd.Series(dtype=float), "value_ms": pd.Series(dtype=float)})
        return pd.read_sql_query("select quantile, value_ms from run_token_cdf where run_id = ? and metric = ?"
                                 " order by quantile", con, params=(run_id, metric))
    finally:
        con.close()


def cdfs(path, metric="latency"):
    """Every run's CDF of metric in long form: run_id, metric, quantile, value_ms
    (1000 rows a run that has it; latency, or an LLM run's ttft, tpot or itl),
    to join with runs() on run_id."""
    if metric not in ("latency", "ttft", "tpot", "itl"):
        raise ValueError(f"unknown metric '{metric}' (latency, ttft, tpot or itl)")
    con = _connect(path)
    try:
        if metric == "latency":
            q = "select run_id, 'latency' as metric, quantile, latency_ms as value_ms from run_cdf"
        elif con.execute("select 1 from sqlite_master where name = 'run_token_cdf'").fetchone():
            q = "select run_id, metric, quantile, value_ms from run_token_cdf where metric = ?"
        else:
            q = "select run_id, metric, quantile, value_ms from run_cdf where 0"   # stored before schema 3: none
        return pd.read_sql_query(q + " order by run_id, quantile", con,
                                 params=(metric,) if "?" in q else ())
    finally:
        con.close()


def requests(path, run_id):
    """Run run_id's per-request rows (only runs stored with --db-requests have
    them); first_token_s for an LLM run's requests, NA otherwise."""
    con = _connect(path)
    try:
        df = pd.read_sql_query("select * from run_requests where run_id = ? order by id", con, params=(run_id,))
        if "first_token_s" not in df.columns:    # stored before schema 3
            df["first_token_s"] = pd.NA
        return df.drop(columns=["run_id"])
    finally:
        con.close()


def stats(path):
    """The runs' counters (run_stats): one row per run and key."""
    con = _connect(path)
    try:
        return pd.read_sql_query("select run_id, key, value from run_stats order by run_id, key", con)
    finally:
        con.close()


def replicas(path):
    """A fleet's runs (--replicas=N), one row per run and replica: run_id,
    replica, and its share as the run stored it (routed, completed,
    busy_fraction, mean_outstanding, max_outstanding, kv_peak_fraction,
    kv_mean_fraction, preemptions, prefix_queried_blocks, prefix_hit_blocks,
    prefix_evictions; a disaggregated fleet's also pool, "prefill" or "decode",
    and its KV moves: kv_moves, kv_moved_bytes, kv_move_ms_mean; NaN for the
    replicas of other fleets). Runs of one server have no rows."""
    _need_pandas()
    con = _connect(path)
    try:
        df = pd.read_sql_query("SELECT run_id, key, value FROM run_stats WHERE key LIKE 'replica.%'", con)
    finally:
        con.close()
    cols = ["run_id", "replica", "routed", "completed", "busy_fraction", "mean_outstanding", "max_outstanding",
            "kv_peak_fraction", "kv_mean_fraction", "preemptions", "prefix_queried_blocks", "prefix_hit_blocks",
            "prefix_evictions", "pool", "kv_moves", "kv_moved_bytes", "kv_move_ms_mean"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    parts = df.key.str.split(".", n=2, expand=True)
    df = df.assign(replica=parts[1].astype(int), name=parts[2])
    wide = df.pivot_table(index=["run_id", "replica"], columns="name", values="value", aggfunc="first").reset_index()
    wide.columns.name = None
    for c in ("routed", "completed", "max_outstanding"):
        if c in wide:
            wide[c] = wide[c].astype("int64")
    if "pool" in wide:
        wide["pool"] = wide["pool"].map({1.0: "prefill", 2.0: "decode"})
    return wide[[c for c in cols if c in wide.columns]].sort_values(["run_id", "replica"]).reset_index(drop=True)


def _option_args(options):
    """Keyword arguments as simbatch options: max_batch=64 -> --max-batch=64, a True flag -> --flag."""
    args = []
    for key, value in options.items():
        name = "--" + key.replace("_", "-")
        if value is True:
            args.append(name)
        elif value is not False and value is not None:
            args.append(f"{name}={value}")
    return args


def _simbatch(simbatch, args):
    """Runs the binary; its one-line error (exit 2 bad input, 1 failure) as a ValueError/RuntimeError."""
    r = subprocess.run([simbatch, *args], capture_output=True, text=True)
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        message = lines[-1] if lines else f"exit status {r.returncode}"
        raise (ValueError if r.returncode == 2 else RuntimeError)(message)
    return r.stdout


def simulate(db, simbatch=DEFAULT_SIMBATCH, **options):
    """Runs one simulation through the binary, stores it in db, and returns its
    row as runs() gives it (a one-row frame). Options are keyword arguments:
    simulate(db, model="gnmt", policy="graph", window=5, rate=500). Bad
    options raise ValueError with simbatch's one line."""
    out = _simbatch(simbatch, ["run", f"--db={db}", "--json", *_option_args(options)])
    run_id = json.loads(out)["run_id"]
    df = runs(db)
    return df[df.run_id == run_id].reset_index(drop=True)


def policies(simbatch=DEFAULT_SIMBATCH):
    """The policy registry as the binary has it (simbatch list policies --json):
    one row per policy and knob (policy, llm, default_max_batch, knob, type,
    default, min, max, help; a policy without knobs has one row, knob None).
    With runs(): which stored options are a run's policy's own, e.g.
    knobs = sr.policies(); own = knobs[knobs.policy == "graph"].knob  ->  window, bucket-width
    (as columns: window, bucket_width)."""
    _need_pandas()
    rows = []
    for p in json.loads(_simbatch(simbatch, ["list", "policies", "--json"]))["policies"]:
        base = {"policy": p["name"], "llm": p["llm"], "default_max_batch": p["default_max_batch"]}
        for k in p["knobs"] or [None]:
            rows.append({**base, "knob": k and k["name"], "type": k and k["type"], "default": k and k["default"],
                         "min": k and k.get("min"), "max": k and k.get("max"), "help": k and k["help"]})
    return pd.DataFrame(rows)


def sweep_name(path):
    """The name a sweep stores with its runs (--sweep-name): its file's, without the directory
    and .sweep; a bare name is itself."""
    name = os.path.basename(path)
    return name[:-len(".sweep")] if name.endswith(".sweep") and len(name) > len(".sweep") else name


def sweep(path, db, simbatch=DEFAULT_SIMBATCH, jobs=None):
    """Runs (or resumes) the sweep file at path into db through the binary and
    returns its runs as runs() gives them (those whose sweep_name is the file's)."""
    _simbatch(simbatch, ["sweep", path, f"--db={db}", "--quiet", *([f"--jobs={jobs}"] if jobs else [])])
    df = runs(db)
    if "sweep_name" not in df.columns:
        return df.iloc[0:0]
    return df[df.sweep_name == sweep_name(path)].reset_index(drop=True)


def searches(path):
    """The configuration searches stored (simbatch search): (searches,
    configs). searches has a row a search: search_id, created_utc,
    code_version, file, spec_text (the search file's text), target_rps or
    budget_per_hour (the goal; the other NaN), exhaustive, answer (the chosen
    configuration, None: none), report_json. configs has a row per search and
    configuration: search_id, config (its axis values), key (its options),
    status (ok, infeasible, pruned, skipped), gpus, cost_per_hour,
    capacity_rps, bracket_lo_rps, bracket_hi_rps, band_lo_rps, band_hi_rps
    (NaN where not simulated or no band), pareto and answer (booleans),
    reason. A database stored before schema 4 has none: both empty."""
    _need_pandas()
    con = _connect(path)
    try:
        has = con.execute("select count(*) from sqlite_master where type = 'table' and name = 'searches'").fetchone()[0]
        if not has:
            return (pd.DataFrame(columns=["search_id", "created_utc", "code_version", "file", "spec_text", "target_rps",
                                          "budget_per_hour", "exhaustive", "answer", "report_json"]),
                    pd.DataFrame(columns=["search_id", "config", "key", "status", "gpus", "cost_per_hour",
                                          "capacity_rps", "bracket_lo_rps", "bracket_hi_rps", "band_lo_rps",
                                          "band_hi_rps", "pareto", "answer", "reason"]))
        head = pd.read_sql_query("select * from searches order by search_id", con)
        configs = pd.read_sql_query("select * from search_configs order by search_id, cost_per_hour, config", con)
    finally:
        con.close()
    head["exhaustive"] = head["exhaustive"].astype(bool)
    for c in ("pareto", "answer"):
        configs[c] = configs[c].astype(bool)
    return head, configs


CAPACITY_COLUMNS = ["capacity_id", "created_utc", "code_version", "policy", "model", "hw", "serving", "tp", "ep",
                    "replicas", "prefill_replicas", "decode_replicas", "router", "engine", "gpus", "workers",
                    "max_batch", "run_options", "sla_ms", "quantile", "ttft_slo_ms", "tpot_slo_ms",
                    "allowed_miss_fraction", "confidence", "capacity_rps", "bracket_lo_rps", "bracket_hi_rps",
                    "band_lo_rps", "band_hi_rps", "estimate_rps", "tolerance", "requests", "warmup", "seeds",
                    "first_seed", "report_json"]
CAPACITY_PROBE_COLUMNS = ["capacity_id", "probe", "rate_rps", "p99_ms", "miss_fraction", "miss_bound", "saturated",
                          "overloaded", "pass"]


def capacities(path):
    """The capacity answers stored (simbatch capacity): (capacities, probes).
    capacities has a row an answer: capacity_id, created_utc, code_version,
    policy, model, hw, serving (the header's text of the configuration), tp,
    ep, replicas, prefill_replicas, decode_replicas, router, engine, gpus
    (an LLM's; NaN / None for a node-level model), workers, max_batch,
    run_options (the probes' options as given), the target (sla_ms and
    quantile for a node-level model; ttft_slo_ms, tpot_slo_ms,
    allowed_miss_fraction and confidence for an LLM; NaN where not its kind),
    capacity_rps, bracket_lo_rps, bracket_hi_rps, band_lo_rps, band_hi_rps
    (the hardware model's band; NaN: none), estimate_rps, tolerance,
    requests and warmup (per probe), seeds, first_seed, report_json. probes
    has a row per answer and rate simulated, in order: capacity_id, probe,
    rate_rps, p99_ms, miss_fraction, miss_bound (an LLM's), saturated,
    overloaded and pass (booleans). A database stored before schema 7 has
    none: both empty."""
    _need_pandas()
    con = _connect(path)
    try:
        has = con.execute("select count(*) from sqlite_master where type = 'table' and name = 'capacities'").fetchone()[0]
        if not has:
            return pd.DataFrame(columns=CAPACITY_COLUMNS), pd.DataFrame(columns=CAPACITY_PROBE_COLUMNS)
        head = pd.read_sql_query("select * from capacities order by capacity_id", con)
        probes = pd.read_sql_query("select * from capacity_probes order by capacity_id, probe", con)
    finally:
        con.close()
    for c in ("saturated", "overloaded", "pass"):
        probes[c] = probes[c].astype(bool)
    return head, probes


def main(argv):
    if argv in (["--help"], ["-h"]):
        print(__doc__)
        return 0
    if len(argv) != 1 or argv[0].startswith("-"):
        bad = next((a for a in argv if a.startswith("-")), None)
        print(f"simbatch_results: {f'unknown option {bad}' if bad else 'expected one DB'} "
              "(see simbatch_results.py --help)", file=sys.stderr)
        return 2
    try:
        table = runs(argv[0])
    except (ImportError, ValueError) as e:
        print(f"simbatch_results: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:               # the machine's (machine_failed): one line, exit 1
        print(f"simbatch_results: {argv[0]}: {e}", file=sys.stderr)
        return 1
    with pd.option_context("display.max_columns", 30, "display.width", 200):
        try:
            print(table)
            sys.stdout.flush()
        except BrokenPipeError:          # `| head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
