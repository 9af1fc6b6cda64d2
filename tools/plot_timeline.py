#!/usr/bin/env python3
"""Timeline PNG of one simulated run, from the Chrome trace `overlap-sim run --trace` writes.

The title names the scheme and the parameters it ran with (from the trace's otherData), and a legend
says what each colour is. One rank by default (the first in the trace; --ranks picks others, "all"
every one). Lanes, per rank: exposed communication (red: communication running while no compute
runs on that rank), SM occupancy (how many SMs are busy, from the trace's "SMs busy" counter), one
lane per stream (kernels as bars: compute blue, communication orange), one per copy engine, and the
fabric links touching that rank's GPU (number of transfers in flight). Links that touch no GPU
(switch to switch, host, NIC) come last under "fabric". Every kernel is named: on its bar when the
name fits, else by the number of its family (its name without the trailing step number, e.g.
fc1.pull*) when that fits, and every family is listed under the figure.

Usage: plot_timeline.py TRACE.json --output OUT.png [--title T] [--ranks 0,1|all] [--dpi N]
The PNG is written atomically (a temporary file renamed over the target). Exit status 2 on bad
input or a missing matplotlib.
"""
import argparse
import json
import os
import re
import sys

from plot_common import pyplot, save_png

# Track ids of sim/chrome_trace.cpp: streams below COPY_ENGINE_TID, copy engines from it, SMs from SM_TID.
COPY_ENGINE_TID = 100000
SM_TID = 200000
GPU_IN_LINK = re.compile(r"(?:^|->)gpu(\d+)(?![\d])")
COLORS = {"compute": "#4c72b0", "comm": "#dd8452", "copy_engine": "#55a868"}
OTHER_COLOR = "#8172b2"
SM_COLOR = "#c44e52"
LINK_COLOR = "#937860"
EXPOSED_COLOR = "#d62728"
LEGEND_LABELS = {"compute": "compute kernel", "comm": "communication kernel", "copy_engine": "copy-engine transfer"}


def scheme_caption(trace):
    """'scheme k=v k=v  |  scenario on hardware' from the trace's otherData (empty when absent)."""
    other = trace.get("otherData", {}) if isinstance(trace, dict) else {}
    scheme = other.get("scheme", "")
    params = other.get("params", {})
    if isinstance(params, dict) and params:
        scheme += " (" + " ".join(f"{k}={v}" for k, v in sorted(params.items())) + ")"
    where = " on ".join(x for x in (other.get("scenario", ""), other.get("hardware", "")) if x)
    return "  |  ".join(x for x in (scheme, where) if x)


def fail(message):
    print(f"plot_timeline.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load_trace(path):
    try:
        with open(path, encoding="utf-8") as f:
            trace = json.load(f)
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{path} is not JSON: {e}")
    events = trace.get("traceEvents") if isinstance(trace, dict) else trace
    if not isinstance(events, list):
        fail(f"{path} has no traceEvents list")
    return trace, events


def link_rank(link_name):
    """The rank a link belongs to: its source GPU, else its destination GPU; None for neither."""
    found = GPU_IN_LINK.findall(link_name.split(" (")[0])
    return int(found[0]) if found else None


def collect(events):
    process = {}
    thread = {}
    for e in events:
        if e.get("ph") != "M":
            continue
        name = e.get("args", {}).get("name", "")
        if e.get("name") == "process_name":
            process[e["pid"]] = name
        elif e.get("name") == "thread_name":
            thread[(e["pid"], e["tid"])] = name
    ranks = sorted(pid for pid, name in process.items() if name.startswith("rank"))
    fabric = [pid for pid, name in process.items() if name == "fabric"]

    slices = {}      # (pid, tid) -> [(start, dur, name, cat)]
    sm_counter = {}  # pid -> [(ts, level)]
    link_open = {}   # (tid, id) -> (ts, cat)
    link_steps = {}  # link name -> [(ts, +1/-1)]
    link_counter = {}  # link name -> [(ts, level)]
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            tid = e.get("tid", 0)
            if tid >= SM_TID:
                continue  # per-SM tracks: summarised by the occupancy lane
            slices.setdefault((e["pid"], tid), []).append((e["ts"], e.get("dur", 0), e.get("name", ""), e.get("cat", "")))
        elif ph == "C" and e.get("name") == "SMs busy":
            sm_counter.setdefault(e["pid"], []).append((e["ts"], e.get("args", {}).get("sms", 0)))
        elif ph == "C" and e.get("pid") in fabric and e.get("name", "").startswith("link "):
            # Kernel-level traces carry links as counters only (transfers in flight).
            link_counter.setdefault(e["name"][len("link "):], []).append((e["ts"], e.get("args", {}).get("transfers", 0)))
        elif ph == "b" and e.get("pid") in fabric:
            link_open[(e["tid"], e["id"])] = (e["ts"], e.get("cat", f"link {e['tid']}"))
        elif ph == "e" and e.get("pid") in fabric:
            start = link_open.pop((e["tid"], e["id"]), None)
            if start is not None:
                steps = link_steps.setdefault(start[1], [])
                steps.append((start[0], 1))
                steps.append((e["ts"], -1))
    if not link_steps:
        for name, samples in link_counter.items():
            level = 0
            for ts, value in sorted(samples):
                if value != level:
                    link_steps.setdefault(name, []).append((ts, value - level))
                    level = value
    return ranks, process, thread, slices, sm_counter, link_steps


def family(name):
    """A kernel's family: its name without the trailing step number (fc1.pull3 -> fc1.pull*)."""
    base = re.sub(r"\d+$", "", name)
    return base + "*" if base != name else name


def union(intervals):
    out = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1][1] = max(out[-1][1], end)
        elif end > start:
            out.append([start, end])
    return out


def exposed_intervals(rank_slices):
    """Where communication (kernels or copies) runs while no compute kernel does."""
    compute = union([(s, s + d) for (s, d, _n, c) in rank_slices if c == "compute"])
    comm = union([(s, s + d) for (s, d, _n, c) in rank_slices if c in ("comm", "copy_engine")])
    out = []
    for start, end in comm:
        cur = start
        for cs, ce in compute:
            if ce <= cur or cs >= end:
                continue
            if cs > cur:
                out.append((cur, cs))
            cur = max(cur, ce)
        if cur < end:
            out.append((cur, end))
    return out


def step_series(deltas):
    xs, ys, level = [], [], 0
    for ts, d in sorted(deltas):
        level += d
        if xs and xs[-1] == ts:
            ys[-1] = level
        else:
            xs.append(ts)
            ys.append(level)
    return xs, ys


def chosen_ranks(arg, ranks):
    """The ranks --ranks asks for: all, a comma-separated list, or (empty) the first."""
    if arg == "all":
        return ranks
    if not arg:
        return ranks[:1]  # one rank reads at a glance; the others are alike in a symmetric run
    try:
        wanted = {int(r) for r in arg.split(",") if r.strip()}
    except ValueError:
        fail(f"--ranks must be a comma-separated list of integers (got {arg!r})")
    return [r for r in ranks if r in wanted]


def build_lanes(ranks, thread, slices, sm_counter, link_steps):
    """The figure's lanes, top to bottom, as (label, kind, payload): per rank its exposed
    communication, SM counter, stream tracks and links; then the links of no rank."""
    lanes = []
    links_by_rank = {}
    other_links = []
    for name in sorted(link_steps):
        r = link_rank(name.replace("link ", "", 1))
        if ".hbm" in name:
            continue  # every kernel touches HBM; the lane would only repeat the SM lane
        (links_by_rank.setdefault(r, []) if r is not None else other_links).append(name)
    for r in ranks:
        mine = [x for (pid, _tid), v in slices.items() if pid == r for x in v]
        lanes.append((f"rank {r} exposed comm", "exposed", exposed_intervals(mine)))
        if r in sm_counter:
            lanes.append((f"rank {r} SMs busy", "counter", sm_counter[r]))
        tids = sorted(tid for (pid, tid) in slices if pid == r)
        for tid in tids:
            label = thread.get((r, tid), f"track {tid}")
            lanes.append((f"rank {r} {label}", "slices", slices[(r, tid)]))
        for name in links_by_rank.get(r, []):
            lanes.append((f"rank {r} {name}", "link", link_steps[name]))
    for name in other_links:
        lanes.append((f"fabric {name}", "link", link_steps[name]))
    return lanes


def draw_lanes(ax, lanes, end_us, number):
    """Draws every lane on `ax`; returns the kinds of content drawn (for the legend)."""
    # A 6-point character's width in microseconds on this axis (about 12 of the 14 inches hold the
    # time axis, 1.06 x end_us).
    char_us = (3.2 / 72.0) / 12.0 * end_us * 1.06
    yticks, ylabels = [], []
    used = set()
    for i, (label, kind, payload) in enumerate(lanes):
        y = len(lanes) - 1 - i
        yticks.append(y)
        ylabels.append(label)
        if kind == "exposed":
            used.add("exposed")
            for start, end in payload:
                ax.broken_barh([(start, max(end - start, end_us * 1e-4))], (y - 0.4, 0.8), facecolors=EXPOSED_COLOR,
                               edgecolors="none")
            total = sum(end - start for start, end in payload)
            ax.text(end_us, y, f" {total:.1f} us", va="center", fontsize=6, color=EXPOSED_COLOR)
        elif kind == "slices":
            for start, dur, name, cat in payload:
                color = COLORS.get(cat, OTHER_COLOR)
                used.add(cat if cat in COLORS else "other")
                # A training step's backward ops (named bwd.*) are hatched: same colours, other pass.
                backward = name.startswith("bwd.")
                if backward:
                    used.add("backward")
                ax.broken_barh([(start, max(dur, end_us * 1e-4))], (y - 0.4, 0.8), facecolors=color,
                               edgecolors="white", linewidth=0.3, hatch="////" if backward else None)
                tag = f"[{number[family(name)]}]"
                text = name if dur > char_us * (len(name) + 1) else tag if dur > char_us * (len(tag) + 0.5) else ""
                if text:
                    ax.text(start + dur / 2, y, text, ha="center", va="center", fontsize=6, color="white", clip_on=True)
        else:
            if kind == "counter":
                xs = [ts for ts, _ in sorted(payload)]
                ys = [lvl for _, lvl in sorted(payload)]
            else:
                xs, ys = step_series(payload)
            peak = max(ys + [1])
            scaled = [y - 0.4 + 0.8 * v / peak for v in ys]
            color = SM_COLOR if kind == "counter" else LINK_COLOR
            used.add(kind)
            ax.fill_between(xs, [y - 0.4] * len(xs), scaled, step="post", color=color, alpha=0.6, linewidth=0)
            ax.text(end_us, y, f" max {peak:g}", va="center", fontsize=6)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=7)
    return used


def add_legend(ax, used, height):
    """Colour legend: one entry per kind of lane content the figure shows."""
    from matplotlib.patches import Patch
    handles = [Patch(facecolor=COLORS[c], label=LEGEND_LABELS[c]) for c in COLORS if c in used]
    if "other" in used:
        handles.append(Patch(facecolor=OTHER_COLOR, label="other op"))
    if "counter" in used:
        handles.append(Patch(facecolor=SM_COLOR, alpha=0.6, label="SMs busy (scaled to its max)"))
    if "link" in used:
        handles.append(Patch(facecolor=LINK_COLOR, alpha=0.6, label="transfers in flight on a link"))
    if "backward" in used:
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="////", label="backward pass (hatched)"))
    if "exposed" in used:
        handles.insert(0, Patch(facecolor=EXPOSED_COLOR, label="exposed communication (no compute running)"))
    if handles:
        # Below the x-axis label: about 0.45 inch under the axes, whatever the figure's height.
        below = 0.45 / max(1.0, height - 1.2)
        ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -below), ncol=min(len(handles), 5),
                  fontsize=7, frameon=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="Chrome trace JSON from overlap-sim run --trace")
    parser.add_argument("--output", "-o", required=True, help="PNG to write")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("--ranks", default="", help="comma-separated ranks to show, or all (default: the first rank)")
    parser.add_argument("--dpi", type=int, default=120)
    args = parser.parse_args()

    plt = pyplot(fail)

    trace, events = load_trace(args.trace)
    ranks, _process, thread, slices, sm_counter, link_steps = collect(events)
    ranks = chosen_ranks(args.ranks, ranks)
    if not ranks:
        fail("the trace has no rank processes to plot")

    lanes = build_lanes(ranks, thread, slices, sm_counter, link_steps)
    end_us = max([s + d for v in slices.values() for (s, d, _n, _c) in v] + [0.0])
    end_us = max(end_us, trace.get("otherData", {}).get("makespan_us", 0.0) if isinstance(trace, dict) else 0.0)
    if end_us <= 0:
        end_us = 1.0

    # Kernel families in order of first appearance: the key under the figure.
    families = {}
    for label, kind, payload in lanes:
        if kind == "slices":
            for start, _dur, name, cat in sorted(payload):
                families.setdefault(family(name), cat)
    number = {f: i + 1 for i, f in enumerate(families)}

    height = max(2.5, 0.32 * len(lanes) + 1.5 + 0.18 * (len(families) // 6 + 1))
    fig, ax = plt.subplots(figsize=(14, height))
    used = draw_lanes(ax, lanes, end_us, number)
    # A training step: where the forward ends (the trace's otherData says).
    forward_end = trace.get("otherData", {}).get("forward_end_us") if isinstance(trace, dict) else None
    if isinstance(forward_end, (int, float)) and 0 < forward_end < end_us:
        ax.axvline(forward_end, color="black", linewidth=0.8, linestyle="--")
        ax.text(forward_end, len(lanes) - 0.3, " forward | backward", fontsize=6, va="bottom")
    ax.set_ylim(-0.8, len(lanes) - 0.2)
    ax.set_xlim(0, end_us * 1.06)
    ax.set_xlabel("time (us)")
    ax.grid(axis="x", alpha=0.3)
    caption = scheme_caption(trace)
    title = args.title or os.path.basename(args.trace)
    ax.set_title(title + ("\n" + caption if caption and caption not in title else ""), fontsize=9)
    add_legend(ax, used, height)
    if families:
        # Every kernel by family: the numbers on the bars too narrow for a name.
        entries = [f"[{number[f]}] {f}" for f in families]
        lines = ["   ".join(entries[i:i + 8]) for i in range(0, len(entries), 8)]
        fig.text(0.01, 0.005, "kernels: " + "\n         ".join(lines), fontsize=6, family="monospace", va="bottom")
    fig.tight_layout(rect=(0, 0.03 + 0.12 * (len(families) // 8 + 1) / height, 1, 1))

    save_png(fig, args.output, args.dpi, ".plot_timeline.", fail)
    return 0


if __name__ == "__main__":
    sys.exit(main())
