"""plot_runs: which runs a figure of scripts/plot shows and how they make series.

Reads a simbatch results database (without changing it or leaving anything
beside it), selects runs by model, hardware, sweep, stored options and
policies, names each run's series by the stored options that tell its
configuration apart, and groups runs by series and rate, seeds averaged.
scripts/plot draws the figures from these; its docstring is the user's guide."""
import math
import os
import sqlite3
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from simbatch_results import connect_to_read, machine_failed, sweep_name   # noqa: E402  (pandas not needed for these)


# Options that do not make a run a different configuration: the load and
# the seed (figures average seeds and put the rate on an axis) and
# bookkeeping (where outputs went, the sweep's point key, live's files).
NOT_SERIES_KEYS = {"rate", "seed", "db", "no-db", "json", "quiet", "requests-out", "db-requests",
                   "timeline-out", "help", "requests", "duration", "warmup", "sweep-point", "sweep-name",
                   "sweep-variant", "dry-run",
                   "outputs-out", "issue-out", "profile-out", "profile-reps"}
# Stable order: a policy keeps its place (and so its colour) in every figure.
POLICY_ORDER = ["serial", "graph", "cellular", "lazy", "oracle", "topup", "static", "continuous", "chunked", "slo"]
# Colours that read on white and apart in grey print (dark to mid tones,
# no yellow), each series also with its own dash and point type.
COLOURS = ["#1f4e9c", "#c0392b", "#2e8b57", "#6a3d9a", "#8c510a", "#000000", "#d95f02", "#008b8b",
           "#b03060", "#555555"]


class PlotError(Exception):
    """Bad input: printed as one line, exit status 2."""


# ---------------------------------------------------------------- database

class Run:
    def __init__(self, row, config):
        (self.run_id, self.policy, self.model, self.hw, self.rate, self.seed, self.throughput,
         self.mean_batch, self.completed, self.mean_ms, self.p50_ms, self.p90_ms, self.p99_ms,
         self.p999_ms, self.sla_violation_rate, self.live, self.saturated, self.sla_ms) = row
        self.config = config
        self.series = None


def open_db(path):
    if not os.path.isfile(path):        # a device or FIFO is no database (and is never read)
        raise PlotError(f"results database '{path}' " + ("is not a regular file" if os.path.exists(path)
                                                         else "does not exist"))
    try:
        con = connect_to_read(path)
        app = con.execute("select value from simbatch_meta where key = 'application'").fetchone()
    except sqlite3.DatabaseError as e:
        if machine_failed(e):               # scripts/plot: one line, exit 1
            raise RuntimeError(f"cannot read '{path}': {e}")
        app = None
    if not app or app[0] != "simbatch":
        raise PlotError(f"'{path}' is not a simbatch results database")
    return con


def value_matches(stored, want):
    if stored == want:
        return True
    try:
        return float(stored) == float(want)
    except (TypeError, ValueError):
        return False


def load_runs(args):
    con = open_db(args.db)
    # schema 1 files (before runs.saturated) read as they are: saturation unknown
    has_sat = any(c[1] == "saturated" for c in con.execute("pragma table_info(runs)"))
    rows = con.execute(
        "select r.run_id, r.policy, r.model, r.hw, r.rate_rps, r.seed, r.throughput_rps, r.mean_batch,"
        " r.completed, m.mean_ms, m.p50_ms, m.p90_ms, m.p99_ms, m.p999_ms, m.sla_violation_rate, r.live, "
        + ("r.saturated" if has_sat else "null") + ", r.sla_ms"
        " from runs r join run_metrics m using (run_id) order by r.run_id").fetchall()
    config = {}
    for run_id, key, value in con.execute("select run_id, key, value from run_config"):
        config.setdefault(run_id, {})[key] = value
    goodput = dict(con.execute("select run_id, value from run_stats where key = 'goodput_rps'").fetchall())
    runs = [Run(row, config.get(row[0], {})) for row in rows]
    for r in runs:
        r.goodput = goodput.get(r.run_id)     # LLM runs only (DESIGN.md 3b)
    terms = []
    if args.model:
        terms.append(("model", args.model))
    if args.hw:
        terms.append(("hw", args.hw))
    if getattr(args, "sweep", None):
        terms.append(("sweep-name", sweep_name(args.sweep)))
    for w in args.where or []:
        key, eq, value = w.partition("=")
        if not eq or not key or not value:
            raise PlotError(f"--where={w}: expected KEY=VALUE (a stored option, e.g. window=5)")
        terms.append((key, value))
    policies = set(args.policy.split(",")) if args.policy else None
    selected = []
    for r in runs:
        if policies and r.policy not in policies:
            continue
        ok = True
        for key, value in terms:
            # model and hw also match the name the run resolved them to; live
            # and saturated are columns of the run (0 or 1)
            direct = {"model": r.model, "hw": r.hw, "live": r.live,
                      "saturated": r.saturated}.get(key)
            if not (value_matches(r.config.get(key), value) or (direct is not None and value_matches(direct, value))):
                ok = False
                break
        if ok:
            selected.append(r)
    if not selected:
        raise PlotError(f"no run in {args.db} matches the selection ({describe_selection(args)})")
    return con, selected


def describe_selection(args):
    parts = [f"{k}={getattr(args, k)}" for k in ("model", "hw", "policy") if getattr(args, k, None)]
    if getattr(args, "sweep", None):
        parts.append("sweep=" + sweep_name(args.sweep))
    parts += args.where or []
    if getattr(args, "rate", None) is not None:
        parts.append(f"rate={args.rate:g}")
    return " ".join(parts) if parts else "all runs"


def number_key(v):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def assign_series(runs, ignore=()):
    """Sets r.series to a label; returns the labels in plotting order. A
    label is the policy, then only what varies between the policy's runs
    (model and hardware when the figure holds several, then options), and
    "live" for runs on real kernels, which never share a series with
    simulated ones. Keys in ignore are an axis of the figure, not a series."""
    by_policy = {}
    for r in runs:
        by_policy.setdefault(r.policy, []).append(r)
    # runs of different models or hardware in one figure are told apart too
    multi = [k for k in ("model", "hw") if len({getattr(r, k) for r in runs}) > 1]
    order = []
    for policy, rs in by_policy.items():
        keys = sorted({k for r in rs for k in r.config})
        varying = [k for k in keys if k not in NOT_SERIES_KEYS and k not in ignore
                   and k not in ("policy", "model", "hw")
                   and not k.startswith("effective.") and not k.startswith("live.")
                   and len({r.config.get(k) for r in rs}) > 1]
        for r in rs:
            parts = [policy] + [getattr(r, k) for k in multi] + [f"{k}={r.config.get(k, '-')}" for k in varying]
            if r.live:
                parts.append("live")
            r.series = " ".join(parts)
            sort = (POLICY_ORDER.index(policy) if policy in POLICY_ORDER else len(POLICY_ORDER), policy,
                    [getattr(r, k) for k in multi], [number_key(r.config.get(k)) for k in varying], r.live)
            order.append((sort, r.series))
    seen, labels = set(), []
    for _, label in sorted(order):
        if label not in seen:
            seen.add(label)
            labels.append(label)
    return labels


def newest_per_seed(runs):
    """Of runs with the same seed keep the newest (highest run id)."""
    best = {}
    for r in runs:
        if r.seed not in best or r.run_id > best[r.seed].run_id:
            best[r.seed] = r
    return [best[s] for s in sorted(best)]


def rate_key(rate):
    return float(f"{rate:.9g}")


def group(runs):
    """{series: {rate: [runs, one per seed]}}"""
    out = {}
    for r in runs:
        out.setdefault(r.series, {}).setdefault(rate_key(r.rate), []).append(r)
    return {s: {rate: newest_per_seed(rs) for rate, rs in d.items()} for s, d in out.items()}


def percentile(values, p):
    """Linear interpolation between order statistics (the rule GSL uses)."""
    v = sorted(values)
    if len(v) == 1:
        return v[0]
    x = p * (len(v) - 1)
    i = int(math.floor(x))
    return v[i] if i + 1 >= len(v) else v[i] + (x - i) * (v[i + 1] - v[i])


def mean(values):
    return sum(values) / len(values)


def read_cdf(con, run_id, metric="latency"):
    """A run's 1000 quantiles of latency, or of an LLM run's ttft, tpot or itl
    (empty when it has none: stored before schema 3, or no such values)."""
    if metric == "latency":
        return [row[0] for row in con.execute(
            "select latency_ms from run_cdf where run_id = ? order by quantile", (run_id,))]
    if not con.execute("select 1 from sqlite_master where name = 'run_token_cdf'").fetchone():
        return []
    return [row[0] for row in con.execute(
        "select value_ms from run_token_cdf where run_id = ? and metric = ? order by quantile", (run_id, metric))]


def mean_quantiles(con, runs, metric="latency"):
    """Several seeds' CDFs as one: the mean of their quantile functions, point
    by point, as (value, cumulative fraction); None when a run has none."""
    cdfs = [read_cdf(con, r.run_id, metric) for r in runs]
    if not all(cdfs):
        return None
    n = min(len(c) for c in cdfs)
    return [(mean([c[i] for c in cdfs]), (i + 1) / n) for i in range(n)]


def pick_rate(groups, want):
    rates = sorted({rate for d in groups.values() for rate in d})
    if want is None:
        return rates[-1]     # the papers show CDFs and SLA violations under high load
    if rate_key(want) not in rates:
        raise PlotError(f"no run at rate {want:g} in the selection (rates present: "
                        + ", ".join(f"{r:g}" for r in rates) + ")")
    return rate_key(want)


# ---------------------------------------------------------------- titles

# Policies whose decisions read the SLOs they were run with, so that a figure of them depends on
# those SLOs even where it plots no SLO metric: lazy and oracle check each batch's slack against
# --sla (policies/lazy.c, policies/slack.c); slo orders prompts by TTFT slack and holds its chunks
# to --tpot-slo (policies/llm/slo.c).
SLA_POLICIES = {"lazy", "oracle"}
TOKEN_SLO_POLICIES = {"slo"}
# Stored options a title's phrases already say (the --where keys it names besides are the others).
CONTEXT_KEYS = {"model", "hw", "tp", "ep", "replicas", "workers", "engine", "sla", "ttft-slo", "tpot-slo", "live",
                "saturated"}


def band_decimals(band):
    """The decimals that show a figure to the place of its error band's leading digit (band 0.87: 1,
    band 390: 0; 0 to 9); a band of 0 or not finite: 6. util/text's txt_band_decimals, which the text
    summaries use, so a figure prints no digit the summary would not."""
    if not (band > 0) or not math.isfinite(band):
        return 6
    return max(0, min(9, -math.floor(math.log10(band))))


def distinct(values):
    """The values in first-seen order, each once, None left out."""
    out = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out


def measured_hw(con, runs):
    """The run ids whose hardware is measured: their stored summary carries the measured tables'
    layer error (hw_layer_error_pct, the measured GPUs' own), which a roofline or an NPU model lacks."""
    ids = [r.run_id for r in runs]
    out = set()
    for i in range(0, len(ids), 500):
        chunk = ids[i:i + 500]
        rows = con.execute(f"select run_id, summary_json from runs where run_id in ({','.join('?' * len(chunk))})",
                           chunk).fetchall()
        for run_id, text in rows:
            if text and '"hw_layer_error_pct"' in text:
                out.add(run_id)
    return out


def deployment(r, measured):
    """One run's hardware as stored: the --hw name ("measured" where it is), then tensor and expert
    parallelism, replicas and workers where above one."""
    c = r.config
    words = [str(r.hw) + (" (measured)" if r.run_id in measured else "")]
    for key, name in (("tp", "TP"), ("ep", "EP")):
        if c.get(key, "1") != "1":
            words.append(f"{name} {c[key]}")
    replicas = c.get("replicas", "1")
    if replicas != "1":
        words.append(f"{replicas} replicas" if replicas.isdigit() else f"replicas {replicas}")
    if c.get("workers", "1") != "1":
        words.append(f"{c['workers']} workers")
    return ", ".join(words)


def stored(runs, key, unit=""):
    """The values the runs stored for an option, joined by "/", "(some runs none)" where some have
    none; "" where none has one."""
    vals = distinct(r.config.get(key) for r in runs)
    if not vals:
        return ""
    return "/".join(vals) + unit + (" (some runs none)" if any(key not in r.config for r in runs) else "")


def slo_phrase(runs, slos):
    """The SLOs the runs were made with, where the figure depends on them: slos is "metric" (what is
    plotted is defined by them: goodput, SLA violations), "decisions" (only where a policy of the
    figure decides by them) or "axis" (the SLA is the x axis: the LLM SLOs alone)."""
    llm = [r for r in runs if r.goodput is not None]       # an LLM run stores a goodput; a node-level one none
    node = [r for r in runs if r.goodput is None]
    parts = []
    if llm and (slos == "metric" or any(r.policy in TOKEN_SLO_POLICIES for r in llm)):
        targets = [f"{name} {stored(llm, key, ' ms')}" for name, key in (("TTFT", "ttft-slo"), ("TPOT", "tpot-slo"))
                   if stored(llm, key)]
        parts.append("SLOs " + ", ".join(targets) if targets
                     else "no TTFT or TPOT SLO set (goodput counts every request)")
    if node and slos != "axis" and (slos == "metric" or any(r.policy in SLA_POLICIES for r in node)):
        slas = distinct(r.sla_ms for r in node)
        if slas:
            parts.append("SLA " + "/".join(f"{v:g}" for v in sorted(slas)) + " ms")
    return "; ".join(parts)


def figure_context(con, runs, slos="decisions", where=()):
    """What a figure's runs were made on, from what the database stores for them (never from the
    plotting command's own arguments): the model, the hardware, the engine profile when one was set,
    the SLOs where the figure depends on them (slo_phrase) and the stored values of the --where keys
    the other phrases do not say. One line for the title's second line."""
    measured = measured_hw(con, runs)
    line = "/".join(str(m) for m in distinct(r.model for r in runs)) + " on " + \
        " / ".join(distinct(deployment(r, measured) for r in runs))
    if stored(runs, "engine"):
        line += ", engine " + stored(runs, "engine")
    extra = [slo_phrase(runs, slos)]
    for key in distinct(w.partition("=")[0] for w in where):
        if key not in CONTEXT_KEYS and stored(runs, key):
            extra.append(f"{key} {stored(runs, key)}")
    return "; ".join([line] + [e for e in extra if e])


# ---------------------------------------------------------------- output

def fmt(v):
    return repr(float(v)) if isinstance(v, float) else str(v)
