#!/usr/bin/env python3
"""Writes the hand-laid-out Kineto traces of tests/trace/test_trace_layouts.cpp (deterministic).

    python3 tests/data/trace/make_fixtures.py    # rewrites the files next to this script

Each trace is written event by event below, times in microseconds; the tests work out every figure
from these intervals in their comments.
  old_layout.json      an older profiler's layout: every kernel's "External id" is its correlation
                       id, so kernels reach their ops only through the launching thread
  deepep_rank0.json    expert-parallel communication that is not NCCL's: DeepEP's notify_dispatch,
                       dispatch and combine, a peer copy and a TE userbuffers kernel
  late_rank0.json,     two ranks of one job, rank 1's clock 1000 us ahead, each arriving late at
  late_rank1.json      one of two all-reduces
  replay_rank0.json,   two ranks for the replay (tests/trace/test_trace_replay.cpp): launches,
  replay_rank1.json    a recorded stream wait (cuda_sync), a collective joined across ranks and a
                       cross-stream wait the trace does not record
  sm_share.json        compute kernels beside NCCL kernels whose grids (their channels) Kineto
                       recorded, one beside a NCCL kernel without a grid, for the replay's SM sharing
                       (tests/trace/test_trace_sm_share.cpp)
  swap.json            all-gathers and the GEMMs after them, for the replay's scheme swap
                       (tests/trace/test_trace_swap.cpp): one whose next GEMM reads [8192, 4096] =
                       its 33554432 gathered elements, one whose next GEMM is of another size
  cpu_sync.json        a step the CPU holds: a cudaStreamSynchronize (with its cuda_sync record) and a
                       cudaDeviceSynchronize, each followed by measured CPU work before the next launch
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def op(name, ts, dur, ext, tid=100, **args):
    a = {"External id": ext} if ext is not None else {}
    a.update(args)
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 100, "tid": tid, "ts": ts, "dur": dur, "args": a}


def launch(ts, corr, ext, tid=100):
    a = {"correlation": corr}
    if ext is not None:
        a["External id"] = ext
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": tid, "ts": ts, "dur": 1,
            "args": a}


def kernel(name, ts, dur, corr, ext, stream=7, device=0, cat="kernel", **args):
    a = {"device": device, "stream": stream, "correlation": corr}
    if ext is not None:
        a["External id"] = ext
    a.update(args)
    return {"ph": "X", "cat": cat, "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur, "args": a}


def write(name, events, dist=None):
    doc = {"schemaVersion": 1}
    if dist:
        doc["distributedInfo"] = dist
    doc["traceEvents"] = events
    with open(os.path.join(HERE, name), "w") as f:
        f.write("{\n")
        for k in [k for k in doc if k != "traceEvents"]:
            f.write(f'  "{k}": {json.dumps(doc[k])},\n')
        f.write('  "traceEvents": [\n')
        f.write(",\n".join("    " + json.dumps(e) for e in events))
        f.write("\n  ]\n}\n")


BF16 = "c10::BFloat16"


def old_layout():
    # CPU ops carry their own External ids (1..8); kernels and launches carry the correlation id
    # (1001..) as theirs, as older profilers wrote it: no kernel's External id names its op.
    sm90 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
    copy = ("void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)"
            "::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(c10::BFloat16)#1}, "
            "at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)")
    splitk = ("void splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>"
              "(cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*)")
    gelu = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
            "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::"
            "{lambda(c10::BFloat16)#1}, at::detail::Array<char*, 2> >(int, at::detail::Array<char*, 2>)")
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0, "dur": 400,
         "args": {}},
        # aten::linear > aten::t, aten::addmm > aten::copy_ (the bias copy) and the GEMM's launch.
        op("aten::linear", 10, 50, 1, **{"Input Dims": [[512, 1024], [4096, 1024], [4096]], "Input type": [BF16] * 3}),
        op("aten::t", 11, 1, 2, **{"Input Dims": [[4096, 1024]], "Input type": [BF16]}),
        op("aten::addmm", 13, 37, 3, **{"Input Dims": [[4096], [512, 1024], [1024, 4096], [], []],
                                        "Input type": [BF16, BF16, BF16, "Scalar", "Scalar"]}),
        op("aten::copy_", 14, 6, 4, **{"Input Dims": [[512, 4096], [4096]], "Input type": [BF16, BF16]}),
        launch(15, 1001, 1001),
        kernel(copy, 100, 4, 1001, 1001),
        launch(30, 1002, 1002),
        kernel(sm90, 104, 100, 1002, 1002),
        # aten::mm: a split-K GEMM and cuBLAS' reduction of its partial sums, both launched by the op.
        op("aten::mm", 70, 30, 5, **{"Input Dims": [[256, 8192], [8192, 1024]], "Input type": [BF16, BF16]}),
        launch(72, 1003, 1003),
        kernel("nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT", 210, 40, 1003, 1003),
        launch(80, 1004, 1004),
        kernel(splitk, 250, 10, 1004, 1004),
        # A launch on another thread while aten::mm is open on this one: not aten::mm's kernel.
        launch(75, 1007, 1007, tid=200),
        kernel("ampere_sgemm_32x32_sliced1x4_tn", 300, 10, 1007, 1007),
        op("aten::gelu", 110, 10, 6, **{"Input Dims": [[512, 4096]], "Input type": [BF16]}),
        launch(111, 1005, 1005),
        kernel(gelu, 260, 20, 1005, 1005),
        op("aten::bmm", 130, 30, 7, **{"Input Dims": [[8, 128, 64], [8, 64, 256]], "Input type": ["float", "float"]}),
        launch(131, 1006, 1006),
        kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>"
               "(cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4::Params)", 280, 20, 1006, 1006),
        # A collective whose args are on its op (record_param_comms), reached the same way.
        op("record_param_comms", 170, 10, 8, **{"Collective name": "allreduce", "In msg nelems": 1048576,
                                                "Out msg nelems": 1048576, "Group size": 8, "dtype": "BFloat16",
                                                "Process Group Name": "0"}),
        launch(171, 1008, 1008),
        kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 310, 40, 1008, 1008,
               stream=20),
    ]
    write("old_layout.json", events, {"backend": "nccl", "rank": 0, "world_size": 1})


def deepep():
    # Compute on stream 7, communication on streams 20 (DeepEP), 30 (a peer copy) and 40 (userbuffers).
    grouped = ("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<"
               "cute::tuple<int, int, int> >, cutlass::gemm::collective::CollectiveMma<cutlass::bfloat16_t>, void, void, "
               "void> >(void::Params)")
    flash = ("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
             "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, "
             "false>(flash::Flash_fwd_params)")
    events = [
        kernel("void deep_ep::layout::get_dispatch_layout<256, 32, 8>(long const*, int*, int*, int*, bool*, int, int, int, int)",
               0, 10, 1, 1),
        kernel("void deep_ep::intranode::notify_dispatch<8>(int const*, int*, int, int const*, int*, int, int, int, "
               "bool const*, int*, int*, int, void**, int**, int)", 10, 10, 2, 2, stream=20),
        kernel("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, long*, float*, int*, int*, "
               "int4 const*, float const*, long const*, float const*, bool const*, int const*, int, int, int, int, int, "
               "int, int, void**, int, int, int)", 20, 100, 3, 3, stream=20),
        kernel(grouped, 100, 100, 4, 4),
        kernel("void deep_ep::intranode::combine<__nv_bfloat16, 8, 768, 4096>(__nv_bfloat16*, float*, "
               "__nv_bfloat16 const*, float const*, int const*, int const*, int const*, int*, void**, int, int, int, int, "
               "int, int)", 180, 80, 5, 5, stream=20),
        kernel(flash, 270, 40, 6, 6),
        kernel("Memcpy PtoP (Device -> Device)", 260, 20, 7, 7, stream=30, cat="gpu_memcpy", bytes=1048576),
        kernel("void userbuffers_fp16_sum_inplace_gpu_rr_rs<8>(int, int, int, int, int, int, void**, int, unsigned long)",
               280, 20, 8, 8, stream=40),
    ]
    write("deepep_rank0.json", events)


def late(rank):
    # Rank 1's clock reads 1000 us more than rank 0's. In rank 0's time: the first all-reduce starts at
    # 100 on rank 0 and 160 on rank 1 (rank 1 late by 60), the second at 300 on rank 0 and 280 on
    # rank 1 (rank 0 late by 20); each ends at the same instant on both ranks. An all-gather ran twice
    # on rank 0 and once on rank 1 (the traces cover different windows); a reduce-scatter only on rank 0.
    shift = 1000 * rank
    ar = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    ag = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    rs = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    args = {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 2,
            "dtype": "BFloat16", "Process Group Name": "0"}
    ag_args = dict(args, **{"Collective name": "_allgather_base", "In msg nelems": 4096, "Out msg nelems": 8192})
    rs_args = dict(args, **{"Collective name": "_reduce_scatter_base", "In msg nelems": 8192, "Out msg nelems": 4096})
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    if rank == 0:
        spans = [(gemm, 0, 100, {}), (ar, 100, 120, args), (ar, 300, 60, args), (ag, 400, 30, ag_args),
                 (ag, 440, 30, ag_args), (rs, 480, 10, rs_args)]
    else:
        spans = [(gemm, 0, 160, {}), (ar, 160, 60, args), (ar, 280, 80, args), (ag, 400, 30, ag_args)]
    events = []
    for i, (name, ts, dur, a) in enumerate(spans):
        events.append(kernel(name, ts + shift, dur, 500 + i, 500 + i, stream=7 if not a else 20, device=rank, **a))
    write(f"late_rank{rank}.json", events, {"backend": "nccl", "rank": rank, "world_size": 2})


def stream_wait(ts, corr, stream, wait_on, record_corr, device):
    # Kineto's CUPTI synchronisation record of cudaStreamWaitEvent (PyTorch 2.x): on the GPU's row.
    return {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": device, "tid": stream, "ts": ts,
            "dur": 0, "args": {"device": device, "stream": stream, "correlation": corr, "wait_on_stream": wait_on,
                               "wait_on_cuda_event_record_corr_id": record_corr}}


def runtime(name, ts, corr):
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": 1,
            "args": {"correlation": corr}}


def replay(rank):
    # One clock for both ranks. The CPU launches GEMM A (corr 1, ts 0) on stream 7, records an event
    # after it (corr 2), makes stream 20 wait for it (corr 3), launches the all-reduce on stream 20
    # (corr 4, ts 6), GEMM B (corr 5, ts 8) and an elementwise kernel C (corr 6, ts 10) on stream 7.
    # The launch latency is 5 (A starts at 5). A takes 100 on rank 0 and 120 on rank 1, so rank 0's
    # all-reduce arrives at 105 and waits for rank 1's at 125; the transfer takes 50 (both end at 175).
    # B takes 50 after A. C needs the all-reduce's result: on rank 0 it starts at 175 (after B's end
    # at 155: a wait on stream 20 the trace does not record); on rank 1 B ends at 175 too.
    a = 100 if rank == 0 else 120
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    ar = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    ew = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"
    args = {"Collective name": "allreduce", "In msg nelems": 1048576, "Out msg nelems": 1048576, "Group size": 2,
            "dtype": "BFloat16", "Process Group Name": "0"}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0, "dur": 200,
         "args": {}},
        launch(0, 1, 1), runtime("cudaEventRecord", 2, 2), runtime("cudaStreamWaitEvent", 4, 3),
        launch(6, 4, 4), launch(8, 5, 5), launch(10, 6, 6),
        kernel(gemm, 5, a, 1, 1, device=rank),
        stream_wait(5, 3, 20, 7, 2, rank),
        kernel(ar, 5 + a, 175 - (5 + a), 4, 4, stream=20, device=rank, **args),
        kernel(gemm, 5 + a, 50, 5, 5, device=rank),
        kernel(ew, 175, 20, 6, 6, device=rank),
    ]
    write(f"replay_rank{rank}.json", events, {"backend": "nccl", "rank": rank, "world_size": 2})


def cpu_sync():
    # One thread (tid 100), stream 7, launch latency 5. The CPU launches GEMM G1 (corr 1, ts 0; runs
    # [5, 105]), synchronises the stream (corr 2, call [2, 107]: returns 2 after G1's end), works 50,
    # launches an elementwise E1 (corr 3, ts 157; [162, 172]), GEMM G2 (corr 4, ts 160; [172, 272]
    # after E1), elementwise E2 (corr 5, ts 165; [272, 282]), synchronises the device (corr 6, call
    # [170, 284]), works 30 and launches E3 (corr 7, ts 314), which starts at 325: 6 us later than
    # its launch and latency explain (kept as measured, relative to its launch). Step: [5, 335].
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"
    ew = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)"

    def call(name, ts, dur, corr):
        return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 100, "tid": 100, "ts": ts, "dur": dur,
                "args": {"correlation": corr}}

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0, "dur": 340,
         "args": {}},
        launch(0, 1, 1), call("cudaStreamSynchronize", 2, 105, 2),
        {"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "pid": 0, "tid": 7, "ts": 105, "dur": 0,
         "args": {"device": 0, "stream": 7, "correlation": 2}},
        launch(157, 3, 3), launch(160, 4, 4), launch(165, 5, 5), call("cudaDeviceSynchronize", 170, 114, 6),
        launch(314, 7, 7),
        kernel(gemm, 5, 100, 1, 1), kernel(ew, 162, 10, 3, 3), kernel(gemm, 172, 100, 4, 4),
        kernel(ew, 272, 10, 5, 5), kernel(ew, 325, 10, 7, 7),
    ]
    write("cpu_sync.json", events)


def sm_share():
    # GPU 0, one step. Stream 7: a bf16 aten::mm 4096 x 4096 x 4096 (priced by the model) [100, 300),
    # an nvjet GEMM with no op (kept as measured) [400, 600), an elementwise kernel [700, 800).
    # Stream 20: NCCL all-reduces holding 32 SMs (grid [32, 1, 1]) over [50, 350) and [450, 550), and
    # one with no grid recorded over [700, 800). No launches: each kernel starts where it was measured.
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
    nvjet = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN"
    add = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
    nccl = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0, "dur": 900,
         "args": {}},
        op("aten::mm", 90, 5, 1, **{"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": [BF16, BF16]}),
        kernel(gemm, 100, 200, 11, 1, grid=[264, 1, 1]),
        kernel(nvjet, 400, 200, 12, None, grid=[132, 1, 1]),
        kernel(add, 700, 100, 13, None, grid=[1024, 1, 1]),
        kernel(nccl, 50, 300, 21, None, stream=20, grid=[32, 1, 1]),
        kernel(nccl, 450, 100, 22, None, stream=20, grid=[32, 1, 1]),
        kernel(nccl, 700, 100, 23, None, stream=20),
    ]
    write("sm_share.json", events, {"backend": "nccl", "rank": 0, "world_size": 1})


def swap():
    # GPU 0 of a TP group of 2, one step. Stream 20: all-gathers of 33554432 bf16 elements [0, 100) and
    # [500, 600). Stream 7: aten::mm [8192, 4096] x [4096, 2048] [110, 400) (M x K = 33554432: the
    # gathered tensor), then aten::mm [4096, 4096] x [4096, 2048] [610, 800) (M x K = 16777216: no match).
    gemm = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
    ag = "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"
    comm = {"Collective name": "_allgather_base", "In msg nelems": 16777216, "Out msg nelems": 33554432,
            "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0"}
    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0, "dur": 900,
         "args": {}},
        kernel(ag, 0, 100, 31, None, stream=20, **comm),
        op("aten::mm", 105, 5, 1, **{"Input Dims": [[8192, 4096], [4096, 2048]], "Input type": [BF16, BF16]}),
        kernel(gemm, 110, 290, 32, 1),
        kernel(ag, 500, 100, 33, None, stream=20, **comm),
        op("aten::mm", 605, 5, 2, **{"Input Dims": [[4096, 4096], [4096, 2048]], "Input type": [BF16, BF16]}),
        kernel(gemm, 610, 190, 34, 2),
    ]
    write("swap.json", events, {"backend": "nccl", "rank": 0, "world_size": 2})


if __name__ == "__main__":
    old_layout()
    deepep()
    late(0)
    late(1)
    replay(0)
    replay(1)
    cpu_sync()
    sm_share()
    swap()
