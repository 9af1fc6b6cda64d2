#!/usr/bin/env python3
"""Seeds for fuzz_results_dir (tools/fuzz.sh results_dir): measurements.json documents, compact, one
per benchmark of the H100 fixture and of the committed H100 calibration, plus the fixture's whole
document followed by its scheme runs ("#--schemes"), each under libFuzzer's -max_len of 64 KiB.
Usage: make_results_seeds.py ROOT OUT_DIR"""
import json
import os
import sys

LIMIT = 65536


def main():
    root, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sources = {
        "fixture": os.path.join(root, "tests/data/calibrate/fixture-h100"),
        "h100": os.path.join(root, "calibrate/results/nvidia-h100-80gb-hbm3-vm"),
    }
    written = 0
    for name, d in sources.items():
        with open(os.path.join(d, "measurements.json")) as f:
            doc = json.load(f)
        by_bench = {}
        for m in doc["measurements"]:
            by_bench.setdefault(m["benchmark"], []).append(m)
        for bench, ms in sorted(by_bench.items()):
            text = json.dumps({"schema": doc["schema"], "measurements": ms}, separators=(",", ":"))
            if len(text) <= LIMIT:
                with open(os.path.join(out, f"{name}-{bench}.json"), "w") as f:
                    f.write(text)
                written += 1
    fixture = sources["fixture"]
    with open(os.path.join(fixture, "measurements.json")) as f:
        doc = json.load(f)
    with open(os.path.join(fixture, "schemes/schemes.json")) as f:
        runs = json.load(f)
    # Enough for the profile writer to write a profile (a GEMM rate, D2D transfers), without the
    # SM-partition and wave sweeps.
    core = {"schema": doc["schema"],
            "measurements": [m for m in doc["measurements"] if m["benchmark"] not in ("gemm_sm", "gemm_waves")]}
    text = json.dumps(core, separators=(",", ":"))
    if len(text) <= LIMIT:
        with open(os.path.join(out, "fixture-profile.json"), "w") as f:
            f.write(text)
        written += 1
    small = {"schema": doc["schema"], "measurements": [m for m in doc["measurements"] if m["benchmark"] != "transfer"]}
    text = json.dumps(small, separators=(",", ":")) + "\n#--schemes\n" + json.dumps(runs, separators=(",", ":"))
    if len(text) <= LIMIT:
        with open(os.path.join(out, "fixture-with-schemes.json"), "w") as f:
            f.write(text)
        written += 1
    print(f"make_results_seeds.py: {written} seeds in {out}")


if __name__ == "__main__":
    main()
