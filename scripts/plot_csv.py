"""scripts/plot_csv.py: scripts/plot's figures drawn from a file a simbatch command wrote, not from the
results database: rate-sweep (`simbatch sweep --rates=auto --out=CSV`) and token-front (`simbatch search --front=CSV`). Each takes the plot module
as `p` for its Figure, styles and bounded reader."""
import csv
import io
import math

from plot_files import read_bounded


def add_parsers(sub):
    s = sub.add_parser("rate-sweep", help="latency vs rate of an automatic rate sweep, the saturation rate marked")
    s.add_argument("--data", required=True, help="the CSV of `simbatch sweep --rates=auto --out=FILE.csv`")
    s.add_argument("--title", default="", help="what the runs were (model, hardware, policy), put in the title")
    s.add_argument("--out")
    s = sub.add_parser("token-front", help="tokens/s/user vs tokens/s/GPU of a search's configurations")
    s.add_argument("--data", required=True, help="the CSV of `simbatch search FILE --front=FILE.csv`")
    s.add_argument("--title", default="", help="what was searched, put in the title")
    s.add_argument("--out")


def read_rows(p, path, what, need):
    rows = list(csv.DictReader(io.StringIO(read_bounded(path, what), newline="")))
    if not rows or any(c not in rows[0] for c in need):
        raise p.PlotError(f"{path}: not a {what} (no rows, or a column of {', '.join(need)} missing)")
    return rows


def num(p, path, row, col):
    try:
        v = float(row[col])
    except (TypeError, ValueError):
        raise p.PlotError(f"{path}: {col}={row[col]!r} is not a number")
    if not math.isfinite(v):
        raise p.PlotError(f"{path}: {col}={row[col]!r} is not a finite number")
    return v


def fig_rate_sweep(args, p):
    rows = read_rows(p, args.data, "rate sweep CSV", ["rate_rps", "latency_p50_ms", "latency_p99_ms",
                                                      "saturation_rps"])
    llm = rows[0].get("ttft_p99_ms", "") != ""
    sat = num(p, args.data, rows[0], "saturation_rps")
    cols = ["rate_rps", "latency_p50_ms", "latency_p99_ms"] + (["ttft_p99_ms", "tpot_p99_ms"] if llm else [])
    src = p.os.path.basename(args.data)
    fig = p.Figure("rate-sweep", f"Latency against rate{': ' + args.title if args.title else ''} (saturation "
                   f"{sat:.4g} req/s)", cols, src)
    fig.add("latency p50", [(num(p, args.data, r, "rate_rps"), num(p, args.data, r, "latency_p50_ms")) for r in rows])
    fig.add("latency p99", [(num(p, args.data, r, "rate_rps"), num(p, args.data, r, "latency_p99_ms")) for r in rows])
    if llm:
        fig.add("TTFT p99", [(num(p, args.data, r, "rate_rps"), num(p, args.data, r, "ttft_p99_ms")) for r in rows])
        fig.add("TPOT p99", [(num(p, args.data, r, "rate_rps"), num(p, args.data, r, "tpot_p99_ms")) for r in rows])
    fig.settings += ["set xlabel 'offered rate (req/s, Poisson)'", "set ylabel 'ms'", "set logscale y",
                     f"set arrow from {sat},graph 0 to {sat},graph 1 nohead dt 2 lw 2 lc rgb '#000000'",
                     f"set label 'saturation {sat:.4g} req/s' at {sat},graph 0.95 right offset -0.5,0",
                     f"set xrange [0:{sat * 1.05}]"]
    dat = p.gp_quote(args.out + ".dat")
    fig.write(args.out, lambda i, label: f"{dat} index {i} using 1:2 with linespoints {p.style(i)} title "
              f"{p.gp_quote(label)}")


def pareto_front(points):
    """The points (x, y, ...) no other point beats in both x and y (more is better in both), by x ascending."""
    front = []
    for q in sorted(points, key=lambda q: (-q[1], -q[0])):    # the best y first; keep each that adds x
        if not front or q[0] > front[-1][0]:
            front.append(q)
    return sorted(front)


def fig_token_front(args, p):
    rows = read_rows(p, args.data, "token front CSV", ["config", "tokens_per_s_per_user", "tokens_per_s_per_gpu"])
    pts = [(num(p, args.data, r, "tokens_per_s_per_user"), num(p, args.data, r, "tokens_per_s_per_gpu"),
            '"' + r["config"].replace('"', "'") + '"') for r in rows]
    src = p.os.path.basename(args.data)
    fig = p.Figure("token-front", "Tokens/s/GPU against tokens/s/user" + (f": {args.title}" if args.title else ""),
                   ["tokens_per_s_per_user", "tokens_per_s_per_gpu", "config"], src)
    fig.add("configurations", pts)
    fig.add("Pareto front", pareto_front(pts))
    fig.settings += ["set xlabel 'tokens/s/user (1000 / TPOT ms)'", "set ylabel 'output tokens/s/GPU'",
                     "set key top right", "set offsets 0, graph 0.35, graph 0.05, graph 0.05"]   # room for labels
    dat = p.gp_quote(args.out + ".dat")
    fig.write(args.out, lambda i, label: (f"{dat} index 0 using 1:2 with points {p.style(0)} title "
                                          f"{p.gp_quote(label)}, {dat} index 0 using 1:2:3 with labels font ',8' "
                                          "offset 0.5,0.5 left notitle") if i == 0 else
              f"{dat} index {i} using 1:2 with lines {p.style(i)} title {p.gp_quote(label)}")


FIGURES = {"rate-sweep": fig_rate_sweep, "token-front": fig_token_front}
