#!/usr/bin/env python3
"""Executes every notebook under notebooks/ headless (nbclient) and fails on any error output.

Usage: run_notebooks.py [--binary PATH] [--timeout S] [NOTEBOOK...]
The notebooks call the built overlap-sim (PATH, default build/tools/overlap-sim) through
notebooks/_overlap.py. A notebook fails when a cell raises, or when a cell writes to stderr a line
that names an error or a warning (a notebook that "runs" but prints a traceback or a deprecation is
not passing). The notebooks on disk are not modified. Prints each notebook's time; exit 1 on a failure,
2 when nbclient / nbformat / ipykernel are missing (tools/setup.sh installs them).
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BAD_STDERR = ("Error", "Traceback", "Warning", "error:")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: notebooks/*.ipynb)")
    parser.add_argument("--binary", default=os.path.join(ROOT, "build", "tools", "overlap-sim"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = parser.parse_args()
    try:
        import nbformat
        from nbclient import NotebookClient
        from nbclient.exceptions import CellExecutionError
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
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
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
        took = time.monotonic() - start
        total += took
        name = os.path.relpath(path, ROOT)
        if problems:
            failed.append(name)
            print(f"FAIL {name} ({took:.1f} s)")
            for p in dict.fromkeys(problems):
                print(f"     {p}")
        else:
            print(f"ok   {name} ({took:.1f} s)")
    print(f"{len(paths) - len(failed)} of {len(paths)} notebooks ran without errors in {total:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
