#!/usr/bin/env python3
"""Writes pricing_rank0.json, the Kineto trace of tests/trace/test_trace_pricing.cpp (deterministic).

    python3 tests/data/trace/make_pricing_fixture.py

One rank, each kernel linked to its op by External id (today's layout), times in microseconds
(made up: the test checks the predictions against closed forms, not against these times):
  an fp32 aten::mm 4096^3 on a TF32 kernel, a bmm of 32 x (512 x 512 x 64) bf16, a 256 x 256 x 16384
  bf16 aten::mm on a split-K kernel followed by cuBLAS' split-K reduction (kind memory_bound, the
  GEMM op's: not priced as a GEMM), SDPA's flash attention forward (causal, from Concrete Inputs)
  and its backward, an aten::add of two [8, 4096] bf16 tensors, and an attention op traced without
  Concrete Inputs (causal unknown: its kernel is counted, not priced).
"""
from make_fixtures import BF16, kernel, launch, op, write

FA_FWD = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t> >(Flash_fwd_params)"
FA_BWD = "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, 128, 8> >(Flash_bwd_params)"
ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, at::detail::Array<char*, 3>)")
QKV = [2, 16, 4096, 128]


def main():
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 100, "tid": 100, "ts": 0,
           "dur": 5000, "args": {}}]
    t = 10
    corr = 1

    def add(name, dims, types, kernels, concrete=None):
        nonlocal t, corr
        ext = 1000 + corr  # External ids apart from correlation ids: today's layout
        args = {"Input Dims": dims, "Input type": types}
        if concrete is not None:
            args["Concrete Inputs"] = concrete
        ev.append(op(name, t, 2 + len(kernels), ext, **args))
        for kname, dur in kernels:
            ev.append(launch(t + 1, corr, ext))
            ev.append(kernel(kname, t + 5, dur, corr, ext))
            corr += 1
            t += dur + 10
        t += 10

    add("aten::mm", [[4096, 4096], [4096, 4096]], ["float", "float"],
        [("sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1_tensor16x8x8_kernel", 400)])
    add("aten::bmm", [[32, 512, 64], [32, 64, 512]], [BF16, BF16],
        [("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off", 2)])
    add("aten::mm", [[256, 16384], [16384, 256]], [BF16, BF16],
        [("nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT", 6),
         ("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16, float, __nv_bfloat16, true, false, false>"
          "(cublasLt::cublasSplitKParams<float>, float const*, __nv_bfloat16 const*, __nv_bfloat16*, float const*, float const*)", 3)])
    add("aten::_scaled_dot_product_flash_attention", [QKV, QKV, QKV, [], [], [], []],
        [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", ""], [(FA_FWD, 300)],
        ["", "", "", "0.", "True", "False", ""])
    add("aten::_scaled_dot_product_flash_attention_backward",
        [QKV, QKV, QKV, QKV, QKV, [2, 16, 4096], [], [], [], [], [], [], [], [], []],
        [BF16] * 5 + ["float"] + [""] * 9, [(FA_BWD, 900)],
        ["", "", "", "", "", "", "", "", "4096", "4096", "0.", "True", "", "", ""])
    add("aten::add", [[8, 4096], [8, 4096], []], [BF16, BF16, "Scalar"], [(ADD, 4)], ["", "", "1"])
    add("aten::_scaled_dot_product_flash_attention", [QKV, QKV, QKV, [], [], [], []],
        [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", ""], [(FA_FWD, 310)])
    write("pricing_rank0.json", ev, {"backend": "nccl", "rank": 0, "world_size": 1})


if __name__ == "__main__":
    main()
