#!/usr/bin/env python3
"""Executes every notebook under notebooks/ headless (nbclient) and fails on any error output.

Usage: run_notebooks.py [--binary PATH] [--timeout S] [--jobs N] [NOTEBOOK...]
The notebooks call the built overlap-sim (PATH, default build/tools/overlap-sim) through
notebooks/_overlap.py. A notebook fails when a cell raises, or when a cell writes to stderr a line
that names an error or a warning (a notebook that "runs" but prints a traceback or a deprecation is
not passing). The notebooks on disk are not modified. Prints each notebook's time; exit 1 on a failure,
2 when nbclient / nbformat / ipykernel are missing (tools/setup.sh installs them).
--jobs N runs N notebooks at a time, each in a process and a kernel of its own: a notebook is one
kernel running one cell after another, so on two cores one at a time leaves a core idle. The
notebooks share no file they write (each writes under a temporary directory of its own).
"""
import concurrent.futures
import argparse
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BAD_STDERR = ("Error", "Traceback", "Warning", "error:")


def run_notebook(path, timeout):
    """(name, seconds, problems) of one notebook executed in a fresh kernel."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": os.path.dirname(os.path.abspath(path))}})
    start = time.monotonic()
    problems = []
    try:
        # The kernel process's own stderr (its start-up notices) is not the notebook's output.
        client.execute(stderr=subprocess.DEVNULL)
    except CellExecutionError as e:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()  # no terminal colours in the report
        problems.append(text.splitlines()[-1] if text else "cell failed")
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                problems.append(f"cell {i}: {out.get('ename')}: {out.get('evalue')}")
            elif out.get("output_type") == "stream" and out.get("name") == "stderr":
                for line in out.get("text", "").splitlines():
                    if any(b in line for b in BAD_STDERR):
                        problems.append(f"cell {i} stderr: {line.strip()}")
    return os.path.relpath(path, ROOT), time.monotonic() - start, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: notebooks/*.ipynb)")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tools", "overlap-sim"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks run at a time")
    args = parser.parse_args()
    try:
        import nbformat  # noqa: F401  (run_notebook's)
        import nbclient  # noqa: F401
        import ipykernel  # noqa: F401  (the python3 kernel nbclient starts)
    except ImportError as e:
        print(f"run_notebooks.py: {e.name} is not installed (tools/setup.sh installs nbclient, nbformat, ipykernel)",
              file=sys.stderr)
        return 2
    if not os.access(args.binary, os.X_OK):
        print(f"run_notebooks.py: {args.binary} is not an executable overlap-sim (build it first)", file=sys.stderr)
        return 2
    os.environ["OVERLAP_SIM"] = os.path.abspath(args.binary)
    os.environ.setdefault("MPLBACKEND", "Agg")
    paths = args.notebooks or sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))
    if not paths:
        print("run_notebooks.py: no notebooks found", file=sys.stderr)
        return 1
    failed = []
    total = 0.0
    wall_start = time.monotonic()
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        # Reported in the order listed, whatever order they finish in.
        for name, took, problems in pool.map(run_notebook, paths, [args.timeout] * len(paths)):
            total += took
            if problems:
                failed.append(name)
                print(f"FAIL {name} ({took:.1f} s)")
                for p in dict.fromkeys(problems):
                    print(f"     {p}")
            else:
                print(f"ok   {name} ({took:.1f} s)", flush=True)
    print(f"{len(paths) - len(failed)} of {len(paths)} notebooks ran without errors in {total:.1f} s "
          f"({time.monotonic() - wall_start:.1f} s of wall time, {max(1, args.jobs)} at a time)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
