#!/usr/bin/env python3
"""Fails on any #include that runs up the project's layering.

Each layer uses only itself and the layers below it (docs/development.md, "Layout"). The order is
written once, in LAYERS below: a source file (C++ or CUDA, under the folders named there; tests are
not a layer) may include a project header of its own rank or of a lower one, never of a higher one.
Inside tools/ the commands (tools/cmd_*, what they share, the papers runner, the exports) sit below
the dispatcher (tools/cli.*), which sits below the programs: so no command includes tools/cli.hpp.

Usage:
  python3 tests/layering/check_layering.py [--root DIR]   # exit 1 and one line per upward include
  python3 tests/layering/check_layering.py --self-test    # the check finds an upward include it is shown
"""
import argparse
import os
import re
import sys
import tempfile

# Lowest first. A path belongs to the entry whose prefix is the longest that matches it.
LAYERS = [
    ["cost_model/"],
    ["sim/"],
    ["kernels/"],
    ["calibrate/"],
    # the commands and what they share (flags, errors, input paths, the papers runner, the exports)
    ["tools/"],
    # the dispatcher over every command
    ["tools/cli.hpp", "tools/cli.cpp"],
    # the programs and the Python module: nothing includes them
    ["tools/main.cpp", "tools/docgen.cpp", "tools/bench/", "python/"],
]
SOURCE_EXTENSIONS = (".hpp", ".cpp", ".h", ".cc", ".cu", ".cuh")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def rank_of(path):
    """The rank of a path relative to the root, or None when it lies in no layer."""
    best = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if path == prefix or path.startswith(prefix):
                if best is None or len(prefix) > best[0]:
                    best = (len(prefix), rank)
    return None if best is None else best[1]


def layer_name(rank):
    return " ".join(p.rstrip("/") for p in LAYERS[rank])


def upward_includes(root):
    """Every include of a project header from a lower layer to a higher one: (file, line, header)."""
    found = []
    top_folders = sorted({p.split("/")[0] for prefixes in LAYERS for p in prefixes})
    for folder in top_folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_EXTENSIONS):
                    continue
                path = os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/")
                own = rank_of(path)
                if own is None:
                    continue
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        header = m.group(1)
                        # A header written from the root (every project include is); one beside the file
                        # is of the file's own folder, so of its own layer.
                        target = rank_of(header) if os.path.exists(os.path.join(root, header)) else None
                        if target is not None and target > own:
                            found.append((path, number, header, own, target))
    return found


def report(root, out):
    found = upward_includes(root)
    for path, number, header, own, target in found:
        out.write(f"{path}:{number}: includes {header} ({layer_name(target)}), a layer above its own "
                  f"({layer_name(own)})\n")
    return found


def self_test():
    """The check must see an upward include when one is there, and pass the same tree without it."""
    with tempfile.TemporaryDirectory(prefix="layering-") as root:
        def write(rel, text):
            os.makedirs(os.path.dirname(os.path.join(root, rel)), exist_ok=True)
            with open(os.path.join(root, rel), "w") as f:
                f.write(text)
        write("sim/engine.hpp", '#include "cost_model/units.hpp"\n')
        write("cost_model/units.hpp", "\n")
        write("tools/cli.hpp", "\n")
        write("tools/cmd_run.cpp", '#include "sim/engine.hpp"\n')
        if upward_includes(root):
            print("self-test: a tree whose includes all run down was reported")
            return 1
        write("cost_model/units.hpp", '#include "sim/engine.hpp"\n')
        write("tools/cmd_run.cpp", '#include "sim/engine.hpp"\n#include "tools/cli.hpp"\n')
        found = {(p, h) for p, _, h, _, _ in upward_includes(root)}
        expected = {("cost_model/units.hpp", "sim/engine.hpp"), ("tools/cmd_run.cpp", "tools/cli.hpp")}
        if found != expected:
            print(f"self-test: expected {sorted(expected)}, found {sorted(found)}")
            return 1
    print("self-test: both upward includes found, the downward ones passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..")))
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    found = report(args.root, sys.stdout)
    if found:
        print(f"{len(found)} include(s) run up the layering (order: tests/layering/check_layering.py LAYERS)")
        return 1
    print("no include runs up the layering")
    return 0


if __name__ == "__main__":
    sys.exit(main())
