#!/usr/bin/env python3
"""Seeds for fuzz_cli (tools/fuzz.sh): the bad-input corpus's command lines (tests/data/bad_inputs/
manifest.json) and a few that succeed, one argument a line, with the paths fuzz_cli allows: a
scenario under the source tree by its bare name, an output in the scratch directory by its file name
(fuzz_cli refuses any argument with a '/').

Usage: make_cli_seeds.py ROOT OUT_DIR
"""
import hashlib
import json
import os
import re
import sys


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(root, "tests", "data", "bad_inputs", "manifest.json")) as f:
        entries = json.load(f)["entries"]
    lines = []
    for e in entries:
        if "file" in e:
            continue
        argv = []
        for a in e["argv"]:
            a = re.sub(r"\{src\}/scenarios/(?:papers/)?([^/]+)\.yaml", r"\1", a)
            a = re.sub(r"\{tmp\}/(?:\./)?", "", a)
            argv.append(a)
        if any("/" in a or a == "-" or a.startswith("--plot") for a in argv):
            continue
        lines.append(argv)
    mlp = "llama3-70b-tp8-mlp"
    lines += [
        ["run", mlp, "--scheme", "no_overlap", "-o", "link.json", "--format", "json"],
        ["run", mlp, "--scheme", "no_overlap", "-o", "r.csv", "--trace", "t.json", "--graphviz", "g.dot"],
        ["run", mlp, "--scheme", "data_slicing", "--param", "chunks=4", "-o", "fifolink"],
        ["tune", "--hardware", "a800-8x-nvlink", "--gemm", "4096x4096x4096", "--primitive", "all_reduce", "--ranks",
         "4", "--search", "flashoverlap", "-o", "keep.txt", "--export-flashoverlap", "x.json", "--algo", "3"],
        ["sweep", mlp, "--sweep", "workload.tokens=1024,2048", "-o", "s.csv", "-j", "1"],
        ["profile", "show", "a800-8x-nvlink", "--set", "gpu.sm_count=0108", "--format", "json"],
    ]
    for argv in lines:
        text = "\n".join(argv) + "\n"
        name = hashlib.sha1(text.encode()).hexdigest()[:16]
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    print(f"{len(lines)} seeds in {out}")


if __name__ == "__main__":
    sys.exit(main())
