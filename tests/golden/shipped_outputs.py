#!/usr/bin/env python3
"""Every shipped scenario's output and the papers table, compared with the committed ones.

A refactor must leave what users read unchanged; a change of the model must say which outputs moved.
For every scenario under scenarios/ and scenarios/papers/ this runs `overlap-sim run FILE` (the table a
user reads, committed as tests/data/golden/<stem>.txt) and `overlap-sim run FILE --format json` (every
figure at full precision, committed as its SHA-256 in tests/data/golden/SHA256SUMS: 11 MB of JSON is
too much to keep, and a hash still tells a byte apart); the same for `validate --papers`. The README's
first code block must be the start of the default scenario's table. Each scenario's two outputs are also
checked for what a user relies on: every line of the table within the report's width (kTableWidth in
sim/report.hpp), every number of the JSON finite and every scheme's latency positive. These two checks
are the release pass's only run of the whole corpus for them (tests/CMakeLists.txt, [sampled]). The source
directory is written as {src} so the outputs do not depend on where the clone lives; since a note that
names a path is wrapped at the path's real length, two tables whose words and order agree are the same
table (a longer clone path moves a line break, not a figure).

  tests/golden/shipped_outputs.py --binary build/tools/overlap-sim            compare (exit 1 on a change)
  tests/golden/shipped_outputs.py --binary build/tools/overlap-sim --update   rewrite, list what moved
"""
import argparse
import concurrent.futures
import difflib
import hashlib
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "data", "golden")


def shipped_runs():
    """(name, argv) for every output compared: each shipped scenario, and the papers table."""
    runs = []
    for sub in ("scenarios", os.path.join("scenarios", "papers")):
        folder = os.path.join(ROOT, sub)
        for f in sorted(os.listdir(folder)):
            if f.endswith(".yaml"):
                runs.append((os.path.splitext(f)[0], ["run", os.path.join(folder, f)]))
    runs.append(("validate-papers", ["validate", "--papers"]))
    return runs


def table_width():
    """The width `run`'s table keeps to: sim/report.hpp's kTableWidth, read where it is defined."""
    with open(os.path.join(ROOT, "sim", "report.hpp")) as f:
        return int(re.search(r"kTableWidth = (\d+);", f.read()).group(1))


def raw_output_of(binary, argv):
    proc = subprocess.run([binary] + argv, cwd=ROOT, capture_output=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"overlap-sim {' '.join(argv)} exited {proc.returncode}: "
                           f"{proc.stderr.decode(errors='replace')[:2000]}")
    return proc.stdout.decode()


def not_finite(value, where):
    """The first number of a parsed JSON document that is NaN or infinite, as 'where: value'."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{where}: {value}"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, v in items:
        found = not_finite(v, f"{where}.{key}" if isinstance(key, str) else f"{where}[{key}]")
        if found:
            return found
    return None


def run_problems(table, report, width):
    """What a user relies on in a scenario's outputs: the table within its width, the JSON's numbers finite, a
    positive latency for every scheme (the raw outputs, before the clone's path is written as {src})."""
    problems = [f"table line {i + 1} is {len(line)} columns, more than {width}: {line}"
                for i, line in enumerate(table.splitlines()) if len(line) > width]
    parsed = json.loads(report)
    if not parsed.get("results"):
        problems.append("the JSON report has no results")
    found = not_finite(parsed, "report")
    if found:
        problems.append(f"a number is not finite: {found}")
    problems += [f"{r.get('scheme')}: latency_us {r.get('latency_us')} is not positive"
                 for r in parsed.get("results", []) if not r.get("latency_us", 0) > 0]
    return problems


def both_outputs(binary, name, argv, width):
    """(name, table, SHA-256 of the JSON, problems) for one compared output."""
    table = raw_output_of(binary, argv)
    report = raw_output_of(binary, argv + ["--format", "json"])
    problems = run_problems(table, report, width) if argv[0] == "run" else []
    return name, table.replace(ROOT, "{src}"), hashlib.sha256(report.replace(ROOT, "{src}").encode()).hexdigest(), problems


def same_words(a, b):
    """Equal but for where whitespace falls: a wrapped note breaks where the clone's path length puts it."""
    return a is not None and b is not None and a.split() == b.split()


def readme_block_differs(results):
    """The README's first code block is the default scenario's output as `run` prints it: its first lines."""
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    start = readme.index("```\n") + 4
    block = readme[start:readme.index("```", start)]
    default = dict((name, text) for name, text, _ in results).get("llama3-70b-tp8-mlp", "")
    if default.startswith(block):
        return None
    diff = difflib.unified_diff(block.splitlines(), default.splitlines()[:len(block.splitlines())], "README.md",
                                "run", lineterm="", n=1)
    return "README.md: its first code block is not what `overlap-sim run` prints now\n" + "\n".join(list(diff)[:40])


def read_sums():
    sums = {}
    path = os.path.join(GOLDEN, "SHA256SUMS")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                digest, name = line.split()
                sums[name] = digest
    return sums


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--binary", required=True)
    ap.add_argument("--update", action="store_true", help="rewrite the committed outputs")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    runs = shipped_runs()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        width = table_width()
        checked = list(pool.map(lambda r: both_outputs(args.binary, *r, width), runs))
    problems = [f"{name}: {p}" for name, _, _, found in checked for p in found]
    if problems:
        print("\n".join(problems))
        print(f"{len(problems)} problems in the shipped scenarios' outputs (nothing written)")
        return 1
    results = [(name, text, digest) for name, text, digest, _ in checked]

    sums = read_sums()
    moved = []
    for name, text, digest in results:
        path = os.path.join(GOLDEN, name + ".txt")
        old_text = open(path).read() if os.path.exists(path) else None
        if (old_text == text or same_words(old_text, text)) and sums.get(name) == digest:
            continue
        moved.append(name)
        if args.update:
            continue
        if old_text is None:
            print(f"{name}: no committed output ({os.path.relpath(path, ROOT)})")
        elif not same_words(old_text, text):
            diff = list(difflib.unified_diff(old_text.splitlines(), text.splitlines(), "committed", "now",
                                             lineterm="", n=1))
            print(f"{name}: the table differs\n" + "\n".join(diff[:80]))
        else:
            print(f"{name}: the table is the same, the JSON (full precision) differs")
    stale = sorted(set(sums) - {name for name, _, _ in results})

    if args.update:
        os.makedirs(GOLDEN, exist_ok=True)
        for name, text, _ in results:
            with open(os.path.join(GOLDEN, name + ".txt"), "w") as f:
                f.write(text)
        for name in stale:
            old = os.path.join(GOLDEN, name + ".txt")
            if os.path.exists(old):
                os.remove(old)
        with open(os.path.join(GOLDEN, "SHA256SUMS"), "w") as f:
            for name, _, digest in sorted(results):
                f.write(f"{digest}  {name}\n")
        print(f"{len(results)} outputs written; changed: {', '.join(moved) or 'none'}"
              + (f"; removed: {', '.join(stale)}" if stale else ""))
        return 0
    for name in stale:
        print(f"{name}: committed but no longer shipped (run with --update)")
    readme = readme_block_differs(results)
    if readme:
        print(readme + "\n(edit README.md by hand: --update does not rewrite it)")
        return 1
    if moved or stale:
        print(f"{len(moved) + len(stale)} of {len(results)} outputs differ from tests/data/golden/. If the "
              "change is meant, rewrite them with --update and say in the commit which moved and why.")
        return 1
    print(f"{len(results)} outputs identical to tests/data/golden/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
