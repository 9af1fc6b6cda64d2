#!/usr/bin/env python3
"""Speedup and exposed communication per scheme over a sweep, from `overlap-sim sweep` output.

One swept key: two line charts (speedup vs the baseline, exposed communication in us) with one line
per scheme; an axis whose values are all powers of two is drawn in log2 steps. Two swept keys:
heatmaps, one column per scheme but the baseline (1.0x everywhere by definition), the speedup row on
a diverging scale split at 1.0x (red: slower than the baseline, blue: faster) above the exposed
communication row, and a last panel naming the best scheme of each cell (what to use there); cells
are annotated when the grid is small. Axis labels carry the swept key and its unit (from the key's
suffix: _gbps is GB/s, _us is us); every figure has a legend or colour bar.

Usage: plot_sweep.py RESULTS.{csv,json} --output OUT.png [--title T] [--dpi N]
The PNG is written atomically (a temporary file renamed over the target). Exit status 2 on bad
input, more than two swept keys, or a missing matplotlib.
"""
import argparse
import csv
import json
import sys

from plot_common import pyplot, save_png

UNITS = {"_gbps": "GB/s", "_us": "us", "_ms": "ms", "_bytes": "bytes", "_mhz": "MHz", "_tflops": "TFLOP/s"}


def fail(message):
    print(f"plot_sweep.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def axis_label(key):
    """The key's last two segments (the full path is in the title) and its unit."""
    short = ".".join(key.split(".")[-2:])
    for suffix, unit in UNITS.items():
        if key.endswith(suffix):
            return f"{short} ({unit})"
    return short


def as_value(text):
    """A swept value as a number when it is one (so axes sort numerically), else as written."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return text
    try:
        return int(text)
    except (TypeError, ValueError):
        pass
    try:
        return float(text)
    except (TypeError, ValueError):
        return str(text) if not isinstance(text, str) else text


def load(path):
    """(swept keys, baseline, rows, best); each row: point values (tuple), scheme, speedup, exposed us,
    params; best: point -> the point's best schemes as overlap-sim names them, ties joined by " = "
    (its `best` column: equal latency in integer picoseconds), empty when the output has no such column."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    rows = []
    best = {}
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
            keys = doc["swept"]
            for r in doc["rows"]:
                rows.append((tuple(as_value(r["point"][k]) for k in keys), r["scheme"],
                             float(r["speedup_vs_no_overlap"]), float(r["exposed_comm_us"]),
                             json.dumps(r.get("params", {}), sort_keys=True)))
                if isinstance(r.get("best"), list) and r["best"]:
                    best[rows[-1][0]] = " = ".join(str(b) for b in r["best"])
            baseline = doc["rows"][0].get("baseline", "no_overlap") if doc["rows"] else "no_overlap"
        except (ValueError, KeyError, TypeError) as e:
            fail(f"{path} is not the JSON output of overlap-sim sweep ({e})")
        return keys, baseline, rows, best
    reader = csv.reader(text.splitlines())
    try:
        header = next(reader)
        n = header.index("scenario")
        i_scheme = header.index("scheme")
        i_speedup = header.index("speedup_vs_no_overlap")
        i_exposed = header.index("exposed_comm_us")
        i_params = header.index("params")
    except (StopIteration, ValueError):
        fail(f"{path} is not the CSV output of overlap-sim sweep (no scenario/scheme/speedup columns)")
    # overlap-sim heads a swept key that is also a report column `swept:KEY` (sweeping hardware).
    keys = [k[len("swept:"):] if k.startswith("swept:") else k for k in header[:n]]
    i_best = header.index("best") if "best" in header[n:] else None
    for line, r in enumerate(reader, start=2):
        if len(r) != len(header):
            fail(f"{path}:{line}: {len(r)} fields, the header has {len(header)}")
        params = json.dumps(json.loads(r[i_params]), sort_keys=True) if r[i_params] else "{}"
        rows.append((tuple(as_value(v) for v in r[:n]), r[i_scheme], float(r[i_speedup]), float(r[i_exposed]), params))
        if i_best is not None and r[i_best]:
            best[rows[-1][0]] = r[i_best]
    # The CSV does not name the baseline: no_overlap, or tp_baseline for decode stacks (which run
    # no no_overlap row), as overlap-sim picks it.
    schemes = {r[1] for r in rows}
    baseline = "no_overlap" if "no_overlap" in schemes or "tp_baseline" not in schemes else "tp_baseline"
    return keys, baseline, rows, best


def labelled(rows):
    """Rows as (point, label, speedup, exposed): a scheme that runs with several settings at one
    point (e.g. pt_transformer t_d 2 and 4) gets one label per setting, naming the knobs that differ."""
    settings = {}
    for point, scheme, _, _, params in rows:
        settings.setdefault(scheme, {}).setdefault(point, set()).add(params)
    several = {s for s, per_point in settings.items() if any(len(v) > 1 for v in per_point.values())}
    out = []
    for point, scheme, speedup, exposed, params in rows:
        label = scheme
        if scheme in several:
            p = json.loads(params)
            label += " (" + " ".join(f"{k}={v}" for k, v in sorted(p.items())) + ")"
        out.append((point, label, speedup, exposed))
    return out


def powers_of_two(values):
    """All positive whole numbers that are powers of two (and more than two of them): a log2 axis."""
    return len(values) > 2 and all(isinstance(v, int) and v > 0 and v & (v - 1) == 0 for v in values)


def ordered(values):
    vals = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float)) for v in vals):
        return sorted(vals)
    return vals


def line_charts(plt, keys, schemes, metrics, rows, data):
    """One swept key: a line chart per metric, one line per scheme."""
    xs = ordered(p[0] for p, *_ in rows)
    numeric = all(isinstance(x, (int, float)) for x in xs)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for ax, (m, label) in zip(axes, metrics):
        for s in schemes:
            pts = [(x, data[(s, (x,))][m]) for x in xs if (s, (x,)) in data]
            if not pts:
                continue
            px = [x for x, _ in pts] if numeric else [xs.index(x) for x, _ in pts]
            ax.plot(px, [y for _, y in pts], marker="o", label=s)
        if not numeric:
            ax.set_xticks(range(len(xs)), [str(x) for x in xs], rotation=30, ha="right")
        elif powers_of_two(xs):
            # Doubling sweeps (tokens, sizes): equal steps per doubling, ticks at the swept values.
            ax.set_xscale("log", base=2)
            ax.set_xticks(xs, [str(x) for x in xs], rotation=30 if len(xs) > 6 else 0)
            ax.minorticks_off()
        ax.set_xlabel(axis_label(keys[0]))
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].axhline(1.0, color="grey", lw=0.8, ls="--")
    axes[1].legend(title="scheme", fontsize=8)
    return fig


def ticks(ax, row, col, xs, ys, keys, cols):
    """The ticks and labels of heatmap panel (row, col) of a grid of `cols` columns."""
    ax.set_xticks(range(len(xs)), [str(x) for x in xs], rotation=45, ha="right", fontsize=7)
    # Row labels once, on the left column: long ones (profile names) would run into the
    # panel beside them.
    ax.set_yticks(range(len(ys)), [str(y) for y in ys] if col == 0 else [], fontsize=7)
    if row == 1 or col == cols - 1:
        ax.set_xlabel(axis_label(keys[1]), fontsize=8)
    if col == 0:
        ax.set_ylabel(axis_label(keys[0]), fontsize=8)


def metric_row(fig, axes, row, m, label, shown, data, xs, ys, keys, cols, small):
    """Row `row` of the heatmaps: metric `m` of every shown scheme, on one colour scale."""
    from matplotlib.colors import TwoSlopeNorm
    grids = {s: [[data.get((s, (y, x)), {}).get(m, float("nan")) for x in xs] for y in ys] for s in shown}
    finite = [v for g in grids.values() for line in g for v in line if v == v]
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    if m == "speedup":
        # Diverging at 1.0x whatever the range: below is worse than the baseline.
        norm = TwoSlopeNorm(vmin=min(lo, 0.999), vcenter=1.0, vmax=max(hi, 1.001))
        cmap = "RdBu"
    else:
        norm = None
        cmap = "magma_r"
    for col, s in enumerate(shown):
        ax = axes[row][col]
        im = ax.imshow(grids[s], origin="lower", aspect="auto", cmap=cmap, norm=norm,
                       vmin=None if norm else lo, vmax=None if norm else hi)
        ticks(ax, row, col, xs, ys, keys, cols)
        if row == 0:
            ax.set_title(s, fontsize=10)
        if small:
            for yi, line in enumerate(grids[s]):
                for xi, v in enumerate(line):
                    if v == v:
                        # White text on the saturated ends of either colour map, dark between.
                        if norm:
                            t = float(norm(v))
                            dark = 0.2 < t < 0.8
                        else:
                            t = (v - lo) / (hi - lo) if hi > lo else 0.5
                            dark = t < 0.4
                        ax.text(xi, yi, f"{v:.2f}" if m == "speedup" else f"{v:.0f}", ha="center",
                                va="center", fontsize=7, color="black" if dark else "white")
    fig.colorbar(im, ax=list(axes[row][:len(shown)]), label=label, shrink=0.9)


def best_panel(plt, ax, schemes, data, named, xs, ys, keys, cols, small):
    """The best scheme per cell: the highest speedup (the baseline where nothing beats it), every
    scheme tied with it named ("async_tp = te_userbuffers"). `named`: overlap-sim's own `best` column
    per point (ties are equal latency in integer picoseconds); without it, ties are equal speedups."""
    from matplotlib.colors import ListedColormap
    best = [[None for _ in xs] for _ in ys]
    for yi, y in enumerate(ys):
        for xi, x in enumerate(xs):
            cands = [(data[(s, (y, x))]["speedup"], s) for s in schemes if (s, (y, x)) in data]
            if cands:
                top = max(c[0] for c in cands)
                label = named.get((y, x)) or " = ".join(s for v, s in cands if v == top)
                best[yi][xi] = (top, label)
    labels = [b[1] for line in best for b in line if b]
    winners = list(dict.fromkeys(labels))
    palette = plt.get_cmap("tab10")
    # A scheme's own colour where it wins alone; a tie gets the next colour no scheme uses.
    def colour(label):
        alone = label if label in schemes or " = " in label else label.split(" (")[0]
        if alone in schemes:
            return palette(schemes.index(alone) % 10)
        return palette((len(schemes) + winners.index(label)) % 10)
    colours = [colour(s) for s in winners] or [(0.8, 0.8, 0.8, 1.0)]
    index = [[winners.index(b[1]) if b else float("nan") for b in line] for line in best]
    ax.imshow(index, origin="lower", aspect="auto", cmap=ListedColormap(colours), vmin=-0.5,
              vmax=len(colours) - 0.5)
    ticks(ax, 0, cols - 1, xs, ys, keys, cols)
    ax.set_title("best scheme", fontsize=10)
    if small:
        for yi, line in enumerate(best):
            for xi, b in enumerate(line):
                if b:
                    names = b[1].replace(" = ", " =\n")
                    ax.text(xi, yi, f"{names}\n{b[0]:.2f}x", ha="center", va="center", fontsize=6, color="white")
    from matplotlib.patches import Patch
    ax.legend(handles=[Patch(color=c, label=s) for c, s in zip(colours, winners)], fontsize=7,
              loc="upper left", bbox_to_anchor=(0, -0.25), title="best (highest speedup; = names a tie)", title_fontsize=7)


def heatmaps(plt, keys, baseline, schemes, metrics, rows, data, named):
    """Two swept keys: a heatmap per scheme and metric, and a panel naming the best scheme per cell."""
    ys = ordered(p[0] for p, *_ in rows)
    xs = ordered(p[1] for p, *_ in rows)
    # The baseline's column says 1.0x everywhere: the best-scheme panel carries it instead.
    shown = [s for s in schemes if s != baseline] or schemes
    cols = len(shown) + 1
    # constrained layout leaves the left column room for its row labels, whatever their length.
    fig, axes = plt.subplots(2, cols, figsize=(3.2 * cols + 1.5, 7.0), squeeze=False, constrained_layout=True)
    small = len(xs) * len(ys) <= 36
    for row, (m, label) in enumerate(metrics):
        metric_row(fig, axes, row, m, label, shown, data, xs, ys, keys, cols, small)
    best_panel(plt, axes[0][cols - 1], schemes, data, named, xs, ys, keys, cols, small)
    axes[1][cols - 1].axis("off")
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("--output", required=True)
    ap.add_argument("--title", default="")
    ap.add_argument("--dpi", type=int, default=90)
    args = ap.parse_args()
    plt = pyplot(fail)

    keys, baseline, rows, named = load(args.results)
    rows = labelled(rows)
    if not rows:
        fail(f"{args.results} has no rows")
    if len(keys) not in (1, 2):
        fail(f"the sweep varies {len(keys)} keys ({', '.join(keys)}); a plot shows one (line chart) or two (heatmap)")
    schemes = list(dict.fromkeys(r[1] for r in rows))
    metrics = [("speedup", f"speedup vs {baseline} (x)"), ("exposed", "exposed communication (us)")]
    data = {}
    for point, scheme, speedup, exposed in rows:
        data[(scheme, point)] = {"speedup": speedup, "exposed": exposed}

    if len(keys) == 1:
        fig = line_charts(plt, keys, schemes, metrics, rows, data)
    else:
        fig = heatmaps(plt, keys, baseline, schemes, metrics, rows, data, named)
    title = args.title + ": " if args.title else ""
    fig.suptitle(f"{title}sweep over {' x '.join(keys)}", fontsize=10)

    save_png(fig, args.output, args.dpi, ".plot_sweep.", fail)


if __name__ == "__main__":
    main()
