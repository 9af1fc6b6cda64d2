#!/usr/bin/env python3
"""Writes the FIXTURE results directory tests/data/calibrate/fixture-h100/ (made-up numbers).

Nothing here was measured. The numbers come from a simple synthetic GPU (132 SMs, 0.62 us per
128x128x1024 tile, an alpha-beta copy engine, ...) with a deterministic +-3 % perturbation, so
that `overlap-sim validate` and the CI regression test have a directory of the real format to run
on before any GPU session has committed calibrate/results/. Every file says "fixture": true.

Run from the repository root after changing the format:
  python3 tests/data/calibrate/make_fixture.py
  build/calibrate/overlap-calibrate-profile tests/data/calibrate/fixture-h100
  build/tools/overlap-sim validate tests/data/calibrate/fixture-h100 --record
"""
import json
import math
import os
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "fixture-h100")
SMS = 132
TILE_US = 0.62  # synthetic: one 128x128 tile over K = 1024 on one SM


def wobble(key, amount=0.03):
    """Deterministic factor in [1 - amount, 1 + amount] from a configuration string."""
    h = zlib.crc32(key.encode()) / 0xFFFFFFFF
    return 1.0 + amount * (2.0 * h - 1.0)


def stats(median, key):
    lo, hi = median * (1 - 0.004 * wobble(key + "lo", 0.5)), median * (1 + 0.01 * wobble(key + "hi", 0.5))
    return {"count": 20, "median": median, "min": lo, "max": hi, "mean": median, "spread": hi / lo}


def tile_of(m, n):
    return (128, 256) if m >= 256 and n >= 256 else (128, 128)


def gemm_us(m, n, k, sms, dtype="bf16"):
    tm, tn = tile_of(m, n)
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    waves = math.ceil(tiles / sms)
    rate = 0.5 if dtype == "fp8" else 1.0
    compute = waves * TILE_US * rate * (tm * tn * k) / (128 * 128 * 1024)
    # Every operand crosses HBM at least once (synthetic 3000 GB/s): no GEMM beats its bytes.
    memory = (m * k + k * n + m * n) * (1 if dtype == "fp8" else 2) / 3000e3
    return max(compute, memory)


meas = []


def add(bench, config, median, derived=None):
    key = bench + json.dumps(config, sort_keys=True)
    meas.append({"benchmark": bench, "config": config, "time_us": stats(median, key), "derived": derived or {}})


dims = [1024, 4096, 8192]
grid = [(m, n, k, "bf16") for m in dims for n in dims for k in dims] + [(d, d, d, "fp16") for d in dims]
for m, n, k, dt in grid:
    t = gemm_us(m, n, k, SMS, dt) * wobble(f"g{m}{n}{k}{dt}")
    tm, tn = tile_of(m, n)
    add("gemm", {"m": m, "n": n, "k": k, "dtype": dt}, t,
        {"tflops": 2 * m * n * k / t / 1e6, "tile_m": tm, "tile_n": tn, "swizzle": 1, "split_k": 1})
for m, n, k in [(8192, 8192, 4096), (4096, 4096, 4096)]:
    for sms in list(range(8, SMS, 8)) + [SMS]:
        add("gemm_sm", {"m": m, "n": n, "k": k, "dtype": "bf16", "sms": sms},
            gemm_us(m, n, k, sms) * wobble(f"s{m}{n}{k}{sms}"), {"sms_granted": sms})
for j in range(1, 26):
    m = 128 * j
    add("gemm_waves", {"m": m, "n": 2048, "k": 4096, "dtype": "bf16"}, gemm_us(m, 2048, 4096, SMS) * wobble(f"w{j}"))
for k in (4096, 8192):
    add("gemm_tile", {"m": 2816, "n": 3072, "k": k, "dtype": "bf16"}, gemm_us(2816, 3072, k, SMS) * wobble(f"t{k}", 0.01))
alone = gemm_us(8192, 8192, 4096, SMS)
for c in (2, 4, 8, 16, 24, 32):
    t = gemm_us(8192, 8192, 4096, SMS - c) * (1 + 0.3 * c / SMS) * wobble(f"i{c}")
    add("interference_sm_copy", {"m": 8192, "n": 8192, "k": 4096, "dtype": "bf16", "copy_ctas": c},
        t, {"alone_us": alone, "slowdown": t / alone, "tile_m": 128, "tile_n": 256})
for d in ("d2d", "h2d"):
    t = alone * (1.08 if d == "d2d" else 1.02) * wobble("ce" + d)
    add("interference_copy_engine", {"m": 8192, "n": 8192, "k": 4096, "dtype": "bf16", "direction": d},
        t, {"alone_us": alone, "slowdown": t / alone, "tile_m": 128, "tile_n": 256})
paths = {"copy_engine.d2d": (2.2, 1400.0), "copy_engine.h2d": (3.5, 52.0), "copy_engine.d2h": (3.3, 53.0)}
for path, (alpha, beta) in paths.items():
    s = 1024
    while s <= (1 << 30):
        t = (alpha + s / (beta * 1e3)) * wobble(f"{path}{s}", 0.02)
        add("transfer", {"path": path, "bytes": s}, t, {"gbps": s / t / 1e3})
        s *= 2
for c in (1, 2, 4, 8, 16, 32, 64, 132):
    for s in (1 << 20, 16 << 20, 256 << 20):
        t = (2.0 + s / (min(c * 24.0, 1350.0) * 1e3)) * wobble(f"sm{c}{s}", 0.02)
        add("transfer", {"path": "sm_copy.d2d", "bytes": s, "ctas": c}, t, {"gbps": s / t / 1e3})
for s in (64 << 20, 256 << 20, 1 << 30, 2 << 30):
    t = (3.0 + s / 3.0e6) * wobble(f"h{s}", 0.01)
    add("hbm_stream", {"bytes": s}, t, {"gbps": s / t / 1e3})
for what, t in (("host_launch", 2.4), ("dependent_gap", 1.3), ("graph_gap", 0.7)):
    add("launch", {"what": what}, t)

env = {"fixture": True, "note": "FIXTURE: synthetic numbers written by tests/data/calibrate/make_fixture.py",
       "gpu_name": "FIXTURE H100 (synthetic)", "sm_count": SMS, "clock_mhz": 1980, "async_engine_count": 3,
       "min_sm_partition": 8, "results_dir": "fixture-h100", "world_size": 1, "driver_version": "fixture",
       "cuda_runtime_version": "fixture", "cublaslt_version": "fixture", "nccl_version": "fixture",
       "date_utc": "fixture", "host": "fixture"}
os.makedirs(os.path.join(OUT, "schemes"), exist_ok=True)
with open(os.path.join(OUT, "measurements.json"), "w") as f:
    json.dump({"schema": "overlap-calibrate/1", "fixture": True, "measurements": meas}, f, indent=1)
    f.write("\n")
with open(os.path.join(OUT, "environment.json"), "w") as f:
    json.dump(env, f, indent=1)
    f.write("\n")

# Scheme runs on 4 virtual ranks: synthetic latencies near what a simple additive model gives.
runs = []


def run(rid, scheme, params, workload, latency, compute_only):
    runs.append({"id": rid, "scheme": scheme, "params": params, "workload": workload, "link": "d2d",
                 "check": {"rel_error": 0.004, "tolerance": 0.02, "passed": True},
                 "latency_us": stats(latency, rid), "compute_only_us": stats(compute_only, rid + "c")})


ar = {"kind": "gemm_collective", "tp": 4, "m": 4096, "n": 8192, "k": 2048, "dtype": "bf16", "primitive": "all_reduce"}
rs = dict(ar, primitive="reduce_scatter")
run("ar-no_overlap", "no_overlap", {}, ar, 640.0, 330.0)
run("ar-slicing4", "data_slicing", {"chunks": 4}, ar, 560.0, 345.0)
for i, groups in enumerate(([8, 16, 40], [32, 32], [64])):
    run(f"ar-fo-{i}", "flashoverlap", {"groups": groups, "wave_sms": 32}, ar, 520.0 + 30 * i, 335.0)
run("rs-async_tp", "async_tp", {"streams": 2}, rs, 420.0, 350.0)
run("rs-commfuse", "commfuse", {"m": 1, "schedule": "ring"}, rs, 440.0, 352.0)
doc = {"schema": "overlap-scheme-runs/1", "fixture": True, "host": "virtual", "profile": "profile_virtual.yaml",
       "environment": env, "runs": runs}
with open(os.path.join(OUT, "schemes", "schemes.json"), "w") as f:
    json.dump(doc, f, indent=1)
    f.write("\n")
print("wrote", OUT)
