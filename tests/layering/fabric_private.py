#!/usr/bin/env python3
"""The fabric is the network side's: no file under sim/schemes/ may include sim/fabric.hpp, directly or
through other headers (schemes price a transfer through sim/transfer_price.hpp). Follows every
`#include "..."` (resolved against the repository root, then the including file's folder) and prints
the chain of includes that reaches the fabric. To show the walk can find one, it must also find the
fabric from sim/network_side.cpp, which uses it."""
import argparse
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
FABRIC = "sim/fabric.hpp"


def chain_to(root, start, target):
    """The include chain from `start` to `target` (repository-relative paths), or None."""
    parent = {start: None}
    todo = [start]
    while todo:
        path = todo.pop()
        if path == target:
            chain = []
            while path is not None:
                chain.append(path)
                path = parent[path]
            return chain[::-1]
        text = (root / path).read_text(encoding="utf-8", errors="replace")
        for name in INCLUDE.findall(text):
            for candidate in (pathlib.PurePosixPath(name), pathlib.PurePosixPath(path).parent / name):
                rel = str(candidate)
                if (root / rel).is_file():
                    if rel not in parent:
                        parent[rel] = path
                        todo.append(rel)
                    break
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", default=str(pathlib.Path(__file__).resolve().parents[2]))
    root = pathlib.Path(parser.parse_args().root)
    failures = []
    schemes = sorted(p.relative_to(root).as_posix() for p in (root / "sim" / "schemes").glob("*.[ch]pp"))
    if not schemes:
        failures.append("no file found under sim/schemes/")
    for path in schemes:
        chain = chain_to(root, path, FABRIC)
        if chain:
            failures.append(f"{path} reaches {FABRIC}: " + " -> ".join(chain))
    if not chain_to(root, "sim/network_side.cpp", FABRIC):
        failures.append(f"the walk did not find {FABRIC} from sim/network_side.cpp, which uses it")
    for line in failures:
        print(line)
    print(f"{len(schemes)} files under sim/schemes/ checked, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
