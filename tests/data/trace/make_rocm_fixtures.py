#!/usr/bin/env python3
"""Writes the ROCm traces of tests/trace/test_trace_rocm.cpp (deterministic).

    python3 tests/data/trace/make_rocm_fixtures.py

A PyTorch profiler trace taken on AMD GPUs is Kineto JSON like a CUDA one: cpu_op events with their
shapes, runtime calls under cat "cuda_runtime" (PyTorch's name for the GPU on ROCm too) but named for
HIP, kernels under cat "kernel". Kineto has had two ROCm back ends, and they write kernels apart
(pytorch/kineto libkineto/src):
  rocm_roctracer.json  RoctracerActivity_inl.h: a kernel's args are its op's "External id" alone
                       (no correlation id, device or stream: pid is the device, tid the queue); the
                       runtime call carries "kernel", "correlation", "stream" as a pointer's text,
                       "grid" and "block"
  rocm_rocprof.json    RocprofActivity_inl.h (rocprofiler-sdk): a kernel's args are "External id",
                       "device", "stream" (the queue), "correlation", "kind": "Dispatch Kernel",
                       "grid" and "block"
  rocm_no_kernels.json the CPU side of a ROCm trace without its GPU side (recorded without
                       ProfilerActivity.CUDA): refused
Both traces hold one step of the same ops, times in microseconds: a bf16 aten::mm 8192 x 4096 x 4096
on a hipBLASLt kernel (a Tensile name, as ROCm/hipBLASLt spells it) launched by hipExtModuleLaunchKernel, SDPA's flash attention forward
(causal, from Concrete Inputs) on Composable Kernel's FmhaFwdKernel, an aten::copy_ of [8, 4096] bf16
on the runtime's blit kernel __amd_rocclr_copyBuffer, and an RCCL all-reduce of 1 Mi bf16 over 8 GPUs
(ncclDevKernel_Generic_1, its args on record_param_comms) on its own stream.
"""
from make_fixtures import BF16, op, write

GEMM = "Custom_Cijk_Alik_Bljk_BBS_BH_Bias_AS_SAV_UserArgs_MT256x256x64_MI16x16x1_SN_K1_MIWT4_16_WSGRB2_DTVA"
FMHA = ("void ck_tile::kentry<256, 2, ck_tile::FmhaFwdKernel<ck_tile::BlockFmhaPipelineQRKSVS<"
        "ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t> >, ck_tile::Default2DEpilogue<"
        "ck_tile::Default2DEpilogueProblem<float, ck_tile::bf16_t, true, true> > > >(ck_tile::FmhaFwdKernel<"
        "ck_tile::BlockFmhaPipelineQRKSVS<ck_tile::BlockFmhaPipelineProblem<ck_tile::bf16_t> > >::Kargs)")
COPY = "__amd_rocclr_copyBuffer"
RCCL = "ncclDevKernel_Generic_1(ncclDevKernelArgsStorage<4096ul>)"
QKV = [2, 16, 4096, 128]
DEVICE = 2  # GPU 2 of the node: the kernels' pid


def runtime(name, ts, corr, ext, kname, grid, block):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 300, "tid": 300, "ts": ts, "dur": 4,
            "args": {"External id": ext, "kernel": kname, "correlation": corr, "stream": "0x5a1c2e0",
                     "grid": grid, "block": block, "shared memory": 0}}


def kernel(kname, ts, dur, corr, ext, queue, grid, block, layout):
    if layout == "roctracer":
        args = {"External id": ext}
    else:
        args = {"External id": ext, "device": DEVICE, "stream": queue, "correlation": corr,
                "kind": "Dispatch Kernel", "grid": grid, "block": block}
    return {"ph": "X", "cat": "kernel", "name": kname, "pid": DEVICE, "tid": queue, "ts": ts, "dur": dur,
            "args": args}


def trace(layout):
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 300, "tid": 300, "ts": 0,
           "dur": 3000, "args": {}}]
    ops = [
        # (op, args, launch call, kernel, kernel start, dur, queue, grid, block)
        ("aten::mm", {"Input Dims": [[8192, 4096], [4096, 4096]], "Input type": [BF16, BF16]},
         "hipExtModuleLaunchKernel", GEMM, 100, 700, 1, [131072, 1, 1], [256, 1, 1]),
        ("aten::_scaled_dot_product_flash_attention",
         {"Input Dims": [QKV, QKV, QKV, [], [], [], []], "Input type": [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", ""],
          "Concrete Inputs": ["", "", "", "0.", "True", "False", ""]},
         "hipModuleLaunchKernel", FMHA, 900, 800, 1, [32, 16, 2], [256, 1, 1]),
        ("aten::copy_", {"Input Dims": [[8, 4096], [8, 4096], []], "Input type": [BF16, BF16, "Scalar"],
                         "Concrete Inputs": ["", "", "False"]},
         "hipLaunchKernel", COPY, 1800, 6, 1, [64, 1, 1], [512, 1, 1]),
        ("record_param_comms", {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576,
                                "Group size": 8, "dtype": "BFloat16", "Process Group Name": "0"},
         "hipExtLaunchKernel", RCCL, 1900, 90, 2, [16, 1, 1], [256, 1, 1]),
    ]
    t = 10
    for i, (name, args, call, kname, start, dur, queue, grid, block) in enumerate(ops):
        ext, corr = 10 + i, 500 + i  # External ids apart from correlation ids
        ev.append(op(name, t, 20, ext, tid=300, **args))
        ev[-1]["pid"] = 300
        ev.append(runtime(call, t + 5, corr, ext, kname, grid, block))
        ev.append(kernel(kname, start, dur, corr, ext, queue, grid, block, layout))
        t += 30
    return ev


def main():
    dist = {"backend": "nccl", "rank": 0, "world_size": 8}
    write("rocm_roctracer.json", trace("roctracer"), dist)
    write("rocm_rocprof.json", trace("rocprof"), dist)
    cpu_only = [e for e in trace("rocprof") if e["cat"] != "kernel"]
    write("rocm_no_kernels.json", cpu_only, dist)


if __name__ == "__main__":
    main()
