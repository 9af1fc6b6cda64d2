#!/usr/bin/env python3
"""Timeline PNG of one simulated run, from the Chrome trace `overlap-sim run --trace` writes.

Lanes, per rank: SM occupancy (how many SMs are busy, from the trace's "SMs busy" counter), one lane
per stream (kernels as bars: compute blue, communication orange), one per copy engine, and the
fabric links touching that rank's GPU (number of transfers in flight). Links that touch no GPU
(switch to switch, host, NIC) come last under "fabric".

Usage: plot_timeline.py TRACE.json --output OUT.png [--title T] [--ranks 0,1] [--dpi N]
The PNG is written atomically (a temporary file renamed over the target). Exit status 2 on bad
input or a missing matplotlib.
"""
import argparse
import json
import os
import re
import sys
import tempfile

# Track ids of sim/chrome_trace.cpp: streams below COPY_ENGINE_TID, copy engines from it, SMs from SM_TID.
COPY_ENGINE_TID = 100000
SM_TID = 200000
GPU_IN_LINK = re.compile(r"(?:^|->)gpu(\d+)(?![\d])")
COLORS = {"compute": "#4c72b0", "comm": "#dd8452", "copy_engine": "#55a868"}


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
    for e in events:
        ph = e.get("ph")
        if ph == "X":
            tid = e.get("tid", 0)
            if tid >= SM_TID:
                continue  # per-SM tracks: summarised by the occupancy lane
            slices.setdefault((e["pid"], tid), []).append((e["ts"], e.get("dur", 0), e.get("name", ""), e.get("cat", "")))
        elif ph == "C" and e.get("name") == "SMs busy":
            sm_counter.setdefault(e["pid"], []).append((e["ts"], e.get("args", {}).get("sms", 0)))
        elif ph == "b" and e.get("pid") in fabric:
            link_open[(e["tid"], e["id"])] = (e["ts"], e.get("cat", f"link {e['tid']}"))
        elif ph == "e" and e.get("pid") in fabric:
            start = link_open.pop((e["tid"], e["id"]), None)
            if start is not None:
                steps = link_steps.setdefault(start[1], [])
                steps.append((start[0], 1))
                steps.append((e["ts"], -1))
    return ranks, process, thread, slices, sm_counter, link_steps


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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", help="Chrome trace JSON from overlap-sim run --trace")
    parser.add_argument("--output", "-o", required=True, help="PNG to write")
    parser.add_argument("--title", default="", help="figure title")
    parser.add_argument("--ranks", default="", help="comma-separated ranks to show (default: all)")
    parser.add_argument("--dpi", type=int, default=120)
    args = parser.parse_args()

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is not installed (python3 -m pip install matplotlib, or tools/setup.sh)")

    trace, events = load_trace(args.trace)
    ranks, _process, thread, slices, sm_counter, link_steps = collect(events)
    if args.ranks:
        try:
            wanted = {int(r) for r in args.ranks.split(",") if r.strip()}
        except ValueError:
            fail(f"--ranks must be a comma-separated list of integers (got {args.ranks!r})")
        ranks = [r for r in ranks if r in wanted]
    if not ranks:
        fail("the trace has no rank processes to plot")

    # Lanes: (label, kind, payload)
    lanes = []
    links_by_rank = {}
    other_links = []
    for name in sorted(link_steps):
        r = link_rank(name.replace("link ", "", 1))
        if ".hbm" in name:
            continue  # every kernel touches HBM; the lane would only repeat the SM lane
        (links_by_rank.setdefault(r, []) if r is not None else other_links).append(name)
    for r in ranks:
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

    end_us = max([s + d for v in slices.values() for (s, d, _n, _c) in v] + [0.0])
    end_us = max(end_us, trace.get("otherData", {}).get("makespan_us", 0.0) if isinstance(trace, dict) else 0.0)
    if end_us <= 0:
        end_us = 1.0

    height = max(2.5, 0.32 * len(lanes) + 1.2)
    fig, ax = plt.subplots(figsize=(14, height))
    yticks, ylabels = [], []
    for i, (label, kind, payload) in enumerate(lanes):
        y = len(lanes) - 1 - i
        yticks.append(y)
        ylabels.append(label)
        if kind == "slices":
            for start, dur, name, cat in payload:
                color = COLORS.get(cat, "#8172b2")
                ax.broken_barh([(start, max(dur, end_us * 1e-4))], (y - 0.4, 0.8), facecolors=color,
                               edgecolors="white", linewidth=0.3)
                if dur > end_us * 0.06:
                    ax.text(start + dur / 2, y, name, ha="center", va="center", fontsize=6, color="white", clip_on=True)
        else:
            if kind == "counter":
                xs = [ts for ts, _ in sorted(payload)]
                ys = [lvl for _, lvl in sorted(payload)]
            else:
                xs, ys = step_series(payload)
            peak = max(ys + [1])
            scaled = [y - 0.4 + 0.8 * v / peak for v in ys]
            color = "#c44e52" if kind == "counter" else "#937860"
            ax.fill_between(xs, [y - 0.4] * len(xs), scaled, step="post", color=color, alpha=0.6, linewidth=0)
            ax.text(end_us, y, f" max {peak:g}", va="center", fontsize=6)
    ax.set_yticks(yticks)
    ax.set_yticklabels(ylabels, fontsize=7)
    ax.set_ylim(-0.8, len(lanes) - 0.2)
    ax.set_xlim(0, end_us * 1.06)
    ax.set_xlabel("time (us)")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(args.title or os.path.basename(args.trace), fontsize=10)
    fig.tight_layout()

    out_dir = os.path.dirname(os.path.abspath(args.output))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".plot_timeline.", suffix=".png", dir=out_dir)
    except OSError as e:
        fail(f"cannot write {args.output}: {e.strerror}")
    os.close(fd)
    try:
        fig.savefig(tmp, dpi=args.dpi, format="png")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the PNG ordinary permissions
        os.replace(tmp, args.output)
    except OSError as e:
        fail(f"cannot write {args.output}: {e.strerror}")
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
