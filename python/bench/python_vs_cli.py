#!/usr/bin/env python3
"""What a call from Python costs against the same run through the CLI (README "Performance": within
5 %). Times N runs of one scenario both ways in this one process, interleaved (a Python call, then
the CLI, N times) so a machine's changing load falls on both alike, and prints the ratio of the
medians (Python / CLI; below 1: Python is cheaper, it starts no process) and of the minima (the
less load-sensitive figure on a shared machine).

Python: overlap_sim.run(SCENARIO), the JSON report parsed into dicts. CLI: `overlap-sim run SCENARIO
--format json` as a subprocess, its output read whole.

    PYTHONPATH=build/python python3 python/bench/python_vs_cli.py [-n 20] [--cli build/tools/overlap-sim]
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=20, help="runs each way (default 20)")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "tools", "overlap-sim"), help="the overlap-sim binary")
    ap.add_argument("--scenario", default="scenarios/llama3-70b-tp8-mlp.yaml", help="scenario (default: the default one)")
    args = ap.parse_args()
    import overlap_sim

    os.chdir(ROOT)
    cmd = [args.cli, "run", args.scenario, "--format", "json"]
    # One of each first: page cache, the module's first import of its profiles.
    overlap_sim.run(args.scenario)
    subprocess.run(cmd, check=True, capture_output=True)
    py_s, cli_s = [], []
    for _ in range(args.n):
        t = time.perf_counter()
        overlap_sim.run(args.scenario)
        py_s.append(time.perf_counter() - t)
        t = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        cli_s.append(time.perf_counter() - t)
    py, cli = statistics.median(py_s), statistics.median(cli_s)
    print(f"scenario {args.scenario}, {args.n} runs each way (medians; min in brackets)")
    print(f"  python overlap_sim.run  {py * 1e3:9.2f} ms  [{min(py_s) * 1e3:.2f}]")
    print(f"  cli    overlap-sim run  {cli * 1e3:9.2f} ms  [{min(cli_s) * 1e3:.2f}]")
    print(f"  ratio python / cli      {py / cli:9.3f}  (target: <= 1.05; of the minima {min(py_s) / min(cli_s):.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
