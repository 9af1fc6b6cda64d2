#!/usr/bin/env python3
"""Benchmark of `overlap-sim trace` on a large synthetic Kineto trace (not a timed test).

Writes a PyTorch-profiler-shaped trace of about --mb megabytes (default 1024) to /tmp, runs
`overlap-sim trace FILE --format json` under /usr/bin/time -v, and prints the wall time, the peak
resident memory and the events per second. The trace repeats one block (a GEMM with its aten::mm
op and launch, an all-reduce with its record_param_comms op and launch, a GELU kernel) laid out so
that each block exposes exactly 20 us of its 40 us all-reduce; the script checks the tool's figures
against that closed form, so a fast but wrong reader fails the benchmark.

  python3 tools/bench/trace_bench.py --binary build/tools/overlap-sim [--mb 1024] [--gzip] [--keep]
"""
import argparse
import gzip
import json
import os
import re
import subprocess
import sys
import time

BLOCK_US = 100  # one block every 100 us; GEMM [0, 50), all-reduce [30, 70), GELU [80, 90)


def block(i, pid):
    t = 1_000_000 + i * BLOCK_US
    c = 3 * i + 1_000_000_000  # CUPTI's correlation ids: a counter apart from the ops' External ids
    e = 3 * i
    return (
        f'{{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": {pid}, "tid": {pid}, "ts": {t - 10}.125, "dur": 3.5, '
        f'"args": {{"External id": {e}, "Sequence number": {i}, "Input Dims": [[4096, 8192], [8192, 2048]], '
        f'"Input type": ["c10::BFloat16", "c10::BFloat16"]}}}},\n'
        f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": {pid}, "ts": {t - 9}.5, '
        f'"dur": 1.25, "args": {{"External id": {e}, "cbid": 211, "correlation": {c}}}}},\n'
        f'{{"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "pid": 0, '
        f'"tid": 7, "ts": {t}.000, "dur": 50.000, "args": {{"External id": {e}, "device": 0, "stream": 7, '
        f'"correlation": {c}, "grid": [16, 32, 1], "block": [384, 1, 1], "registers per thread": 168}}}},\n'
        f'{{"ph": "f", "id": {c}, "pid": 0, "tid": 7, "ts": {t}.000, "cat": "ac2g", "name": "ac2g", "bp": "e"}},\n'
        f'{{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": {pid}, "tid": {pid}, "ts": {t - 8}.0, '
        f'"dur": 2.0, "args": {{"External id": {e + 1}, "Collective name": "allreduce", "In msg nelems": 1048576, '
        f'"Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16", "Process Group Name": "0"}}}},\n'
        f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": {pid}, "tid": {pid}, "ts": {t - 7}.0, '
        f'"dur": 1.0, "args": {{"External id": {e + 1}, "correlation": {c + 1}}}}},\n'
        f'{{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", '
        f'"pid": 0, "tid": 20, "ts": {t + 30}.000, "dur": 40.000, "args": {{"External id": {e + 1}, "device": 0, '
        f'"stream": 20, "correlation": {c + 1}}}}},\n'
        f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": {pid}, "ts": {t - 6}.0, '
        f'"dur": 1.0, "args": {{"External id": {e + 2}, "correlation": {c + 2}}}}},\n'
        f'{{"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", '
        f'"pid": 0, "tid": 7, "ts": {t + 80}.000, "dur": 10.000, "args": {{"External id": {e + 2}, "device": 0, '
        f'"stream": 7, "correlation": {c + 2}}}}},\n'
    )


def write_trace(path, target_bytes, use_gzip):
    opener = (lambda p: gzip.open(p, "wt", compresslevel=1)) if use_gzip else (lambda p: open(p, "w"))
    events = 0
    blocks = 0
    written = 0
    with opener(path) as f:
        head = '{\n"schemaVersion": 1,\n"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n"traceEvents": [\n'
        f.write(head)
        written += len(head)
        chunk = []
        while written < target_bytes:
            if blocks % 100 == 0:
                s = (f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{blocks // 100}", "pid": 1, "tid": 1, '
                     f'"ts": {1_000_000 + blocks * BLOCK_US - 20}.0, "dur": {100 * BLOCK_US}.0, "args": {{}}}},\n')
                chunk.append(s)
                written += len(s)
                events += 1
            s = block(blocks, 1)
            chunk.append(s)
            written += len(s)
            events += 9
            blocks += 1
            if len(chunk) >= 2000:
                f.write("".join(chunk))
                chunk = []
        chunk.append('{"ph": "i", "cat": "cpu_instant_event", "name": "end", "pid": 1, "tid": 1, "ts": 0, "s": "t"}\n]}\n')
        events += 1
        f.write("".join(chunk))
    return events, blocks, written


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", required=True)
    ap.add_argument("--mb", type=float, default=1024)
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the generated trace")
    args = ap.parse_args()
    path = f"/tmp/overlap_trace_bench_{int(args.mb)}mb.json" + (".gz" if args.gzip else "")
    t0 = time.time()
    events, blocks, json_bytes = write_trace(path, int(args.mb * 1024 * 1024), args.gzip)
    gen_s = time.time() - t0
    size = os.path.getsize(path)
    cmd = ["/usr/bin/time", "-v", args.binary, "trace", path, "--format", "json"]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    if p.returncode != 0:
        sys.exit(f"overlap-sim trace failed ({p.returncode}):\n{p.stderr}")
    rss_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr).group(1))
    user = float(re.search(r"User time \(seconds\): ([\d.]+)", p.stderr).group(1))
    report = json.loads(p.stdout)
    f = report["overall"]
    # Closed form per block: compute 50 + 10 us, communication 40 us, 20 us of it under the GEMM.
    expect = {"compute_ns": 60_000 * blocks, "communication_ns": 40_000 * blocks, "exposed_communication_ns": 20_000 * blocks}
    for k, v in expect.items():
        if f[k] != v:
            sys.exit(f"wrong figure {k}: {f[k]} != {v}")
    if report["ranks"][0]["gemms"][0]["count"] != blocks or report["ranks"][0]["gemm_shape_unknown"] != 0:
        sys.exit("wrong GEMM listing")
    print(f"trace: {path} ({json_bytes / 1e6:.1f} MB of JSON, {size / 1e6:.1f} MB on disk, {events} events, "
          f"{3 * blocks} GPU kernels, {blocks // 100 + 1} steps; generated in {gen_s:.1f} s)")
    print(f"overlap-sim trace: wall {wall:.2f} s, user {user:.2f} s, peak RSS {rss_kb / 1024:.1f} MiB, "
          f"{events / user / 1e6:.2f} M events and {json_bytes / user / 1e6:.1f} MB of JSON per CPU second; "
          "figures match the closed form")
    if not args.keep:
        os.remove(path)


if __name__ == "__main__":
    main()
