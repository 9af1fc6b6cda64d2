#!/usr/bin/env python3
"""Benchmark of `overlap-sim trace --replay` on a large synthetic Kineto trace (not a timed test).

Writes the trace tools/bench/trace_bench.py writes (about --mb megabytes; one block every 100 us: a
GEMM [0, 50) on stream 7, an all-reduce [30, 70) on stream 20, a GELU [80, 90) on stream 7, each with
its launch), runs `overlap-sim trace FILE --replay --what-if kind.gemm.speed=2 --format json` under
/usr/bin/time -v, and prints the wall time, the peak resident memory and the events and kernels per
second. Checked, so that a fast but wrong replay fails:
  - the identity: the replayed span within 2 % of the measured one (here exactly equal);
  - the what-if's closed form: the rank's launch latency is 9.5 us (the GEMM's start minus its
    launch, the least of the three), so the all-reduce (37 us after its launch) and the GELU (86 us)
    start later than anything explains and keep their measured distance from their launches; the
    launches come from one thread with no synchronisation, so the replayed CPU keeps their measured
    times; the last kernel is a GELU, so GEMMs twice as fast leave the span exactly as measured, and
    every stream-7 busy time drops by 25 us per block.
The replay holds the graph whole (each kernel and each launch a node, about four edges per kernel),
so its memory grows with the number of kernels, not with the file: the report says how much per kernel.

  python3 tools/bench/replay_bench.py --binary build/tools/overlap-sim [--mb 1024] [--keep] [--trace FILE]
(--trace: replay a trace an earlier --keep left instead of writing one.)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_bench import write_trace  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mb", type=float, default=1024)
    ap.add_argument("--keep", action="store_true", help="keep the generated trace")
    ap.add_argument("--trace", help="a trace an earlier --keep left (not written again, not removed)")
    args = ap.parse_args()
    if args.trace:
        path, gen_s, events = args.trace, 0.0, None
        json_bytes = os.path.getsize(path)
    else:
        path = f"/tmp/overlap_replay_bench_{int(args.mb)}mb.json"
        t0 = time.time()
        events, blocks, json_bytes = write_trace(path, int(args.mb * 1024 * 1024), False)
        gen_s = time.time() - t0
    cmd = ["/usr/bin/time", "-v", args.binary, "trace", path, "--replay", "--what-if", "kind.gemm.speed=2",
           "--format", "json"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if not args.keep and not args.trace:
        os.remove(path)
    if p.returncode != 0:
        sys.exit(f"overlap-sim trace --replay failed ({p.returncode}):\n{p.stderr}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", p.stderr).group(1))
    report = json.loads(p.stdout)
    kernels = report["graph"]["kernels"]
    if args.trace:
        blocks = kernels // 3
        events = 9 * blocks + (blocks + 99) // 100 + 1  # as write_trace counts them
    row = report["ranks"][0]
    if abs(row["replay_error_pct"]) > 2.0:
        sys.exit(f"identity broken: measured {row['measured_span_us']} us, replayed {row['replayed_span_us']} us")
    if row["what_if_span_us"] != row["measured_span_us"]:
        sys.exit(f"what-if span {row['what_if_span_us']} != measured {row['measured_span_us']} (closed form)")
    s7 = [s for s in report["streams"] if s["stream"] == 7][0]
    if abs(s7["measured_busy_us"] - s7["what_if_busy_us"] - 25.0 * blocks) > 1e-6 * blocks:
        sys.exit(f"stream 7 busy {s7['measured_busy_us']} -> {s7['what_if_busy_us']}: expected 25 us less per block")
    if kernels != 3 * blocks:
        sys.exit(f"{kernels} kernels replayed, the trace has {3 * blocks}")
    print(f"trace: {path} ({json_bytes / 1e6:.1f} MB of JSON, {events} events, {kernels} GPU kernels; generated in "
          f"{gen_s:.1f} s)")
    print(f"overlap-sim trace --replay (read, graph, identity and one what-if): wall {wall:.2f} s, user {user:.2f} s, "
          f"peak RSS {rss_kb / 1024:.1f} MiB ({rss_kb * 1024 / kernels:.0f} bytes per kernel), {events / user / 1e6:.2f} M events and {kernels / user / 1e6:.2f} M "
          "kernels per CPU second; identity and closed form hold")


if __name__ == "__main__":
    main()
