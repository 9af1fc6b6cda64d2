// Pricing traced kernels from their shapes (calibrate/traces/gemm_pricing.hpp, attention_pricing.hpp,
// memory_pricing.hpp; cost_model/gemm_launch.hpp plan_gemm_launch), against closed forms on the
// shipped H100 profile: 132 SMs, bf16 989 TFLOP/s at gemm_efficiency 0.8, one CTA per SM, HBM
// 3350 GB/s at 0.9, no CTA roofline and no gemm_profiles, so a CTA's time is exactly
// ceil(2 tile_m tile_n K / (peak x 0.8 / 132)) ps (gemm_model.cpp, the per-SM tensor rate).
#include <cmath>
#include <map>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/traces/attention_pricing.hpp"
#include "calibrate/traces/gemm_pricing.hpp"
#include "calibrate/traces/memory_pricing.hpp"
#include "cost_model/gemm_launch.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/cli_run.hpp"

using namespace overlap;
using namespace overlap::traces;
using overlap::test::cli;
using overlap::test::CliResult;

namespace {

const HardwareProfile& h100() {
  static const HardwareProfile hw = load_profile("h100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  return hw;
}

// One CTA of tile_m x tile_n over K at `tflops` (the profile's per-SM rate, as gemm_model.cpp forms it).
Ps cta_ps(double tflops, int tile_m, int tile_n, std::int64_t k) {
  return static_cast<Ps>(std::ceil(2.0 * tile_m * tile_n * static_cast<double>(k) * 1 / (tflops * 0.8 / 132)));
}
// Bytes over HBM at 3350 GB/s x 0.9, rounded up to a picosecond (units.hpp transfer_ps).
Ps hbm_ps(std::int64_t bytes) { return transfer_ps(bytes, 3350 * 0.9); }

}  // namespace

TEST_CASE("TF32: an fp32 op on a TF32 kernel is priced at half the 16-bit tensor rate", "[trace][pricing]") {
  const HardwareProfile& hw = h100();
  REQUIRE(tf32_peak_tflops(hw.gpu) == Approx(494.5));  // 989 / 2 (H100 SXM datasheet: 494.7 dense TF32)
  // 4096^3 fp32: 256 x 128 tiles (both sides >= 256 and 512 tiles fill the 132 SMs), 4 waves,
  // compute-bound (64 MiB of weights stream in 22 us, the 4 waves take 358 us): 4 CTAs in a row.
  const traces::GemmShape s{1, 4096, 4096, 4096, "float"};
  const GemmPrice p = price_gemm(hw, s, "sm80_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x16_stage4_warpsize2x2x1");
  REQUIRE(p.ns);
  CHECK(p.math == GemmMath::tf32);
  CHECK(p.launch.split_k == 1);
  CHECK(p.launch.waves == 4);
  CHECK(*p.ns == static_cast<double>(4 * cta_ps(989.0 / 2, 256, 128, 4096)) / 1000.0);
  // The name decides first: a TF32 MMA shape (s1688gemm) is TF32, `sgemm` is SIMT fp32, and a name
  // that says neither keeps PyTorch's default (allow_tf32 off for matmul): fp32, which H100's profile
  // has no rate for.
  CHECK(gemm_math("cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4", DType::fp32) == GemmMath::tf32);
  CHECK(gemm_math("ampere_sgemm_128x64_tn", DType::fp32) == GemmMath::as_dtype);
  CHECK(gemm_math("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NTN", DType::fp32) == GemmMath::as_dtype);
  CHECK(gemm_math("sm90_xmma_gemm_tf32_whatever", DType::bf16) == GemmMath::as_dtype);  // only fp32 ops run as TF32
  const GemmPrice simt = price_gemm(hw, s, "ampere_sgemm_128x64_tn");
  CHECK_FALSE(simt.ns);
  CHECK(simt.why == "dtype fp32 not in the profile");
  // A100's profile has an fp32 rate (19.5 TFLOP/s): the SIMT kernel is priced at it, 16x slower than TF32.
  const HardwareProfile a100 = load_profile("a100-sxm-8x-nvswitch", std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware");
  const GemmPrice a_simt = price_gemm(a100, s, "ampere_sgemm_128x64_tn");
  const GemmPrice a_tf32 = price_gemm(a100, s, "ampere_tf32_s1688gemm_tf32_128x128_16x4_tn");
  REQUIRE(a_simt.ns);
  REQUIRE(a_tf32.ns);
  CHECK(*a_simt.ns / *a_tf32.ns == Approx((312.0 / 2) / 19.5).epsilon(0.01));
}

TEST_CASE("A batched GEMM is one launch of batch x tiles in waves", "[trace][pricing]") {
  const HardwareProfile& hw = h100();
  // bmm of 32 x (512 x 512 x 64) bf16: 256 x 128 tiles would give 8 (< 132 SMs), so 128 x 128: 16
  // tiles a problem, 512 CTAs in ceil(512 / 132) = 4 waves. Memory (32 x 64 x 512 x 2 B, 0.7 us) is
  // below the waves' compute (1.4 us); the grid fills the SMs, so no split-K.
  const traces::GemmShape s{32, 512, 512, 64, "c10::BFloat16"};
  const GemmPrice p = price_gemm(hw, s, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_batched");
  REQUIRE(p.ns);
  CHECK(p.launch.ctas == 512);
  CHECK(p.launch.waves == 4);
  CHECK(p.launch.split_k == 1);
  const Ps cta = cta_ps(989, 128, 128, 64);
  CHECK(*p.ns == static_cast<double>(4 * cta) / 1000.0);
  // `batch` GEMMs one after another would take 32 one-wave launches: 8x the one launch.
  CHECK(static_cast<double>(32 * gemm_time_ps(hw, overlap::GemmShape{512, 512, 64, DType::bf16})) / 1000.0 == Approx(8 * *p.ns));
}

TEST_CASE("Split-K for a small-MN, large-K GEMM: the split that finishes first, its time in closed form", "[trace][pricing]") {
  const HardwareProfile& hw = h100();
  // 256 x 256 x 16384 bf16: four 128 x 128 tiles leave 128 of 132 SMs idle. A split s (up to
  // min(132 / 4, 16384 / 256) = 33) runs 4s CTAs in one wave, each over ceil(16384 / s) of K, and
  // writes s fp32 partial 256 x 256 tiles; the weights (8 MiB, 2.78 us) stream whatever s is. Time
  // max(cta(K / s), weights) + partials(s): 5.6103 us at s = 29, 5.5988 at 30, 5.5873 at 31, 5.5813 at
  // 32 (CTAs of 512 K, 2.80 us, just above the weights), 5.6515 at 33 (the weights bound, more partials).
  const overlap::GemmShape shape{256, 256, 16384, DType::bf16};
  GemmLaunchOptions o;
  o.split_k = true;
  const GemmLaunch l = plan_gemm_launch(hw, shape, o);
  CHECK(l.split_k == 32);
  CHECK(l.ctas == 4 * 32);
  CHECK(l.waves == 1);
  const Ps expected = std::max(cta_ps(989, 128, 128, 512), hbm_ps(16384LL * 256 * 2)) + hbm_ps(256LL * 256 * 4 * 32);
  CHECK(l.time_ps == expected);
  // Without the option, and for run's path, nothing changes: one split, gemm_time_ps exactly.
  const GemmLaunch one = plan_gemm_launch(hw, shape, GemmLaunchOptions{});
  CHECK(one.split_k == 1);
  CHECK(one.time_ps == gemm_time_ps(hw, shape));
  CHECK(one.time_ps == cta_ps(989, 128, 128, 16384));
  CHECK(l.time_ps * 15 < one.time_ps);  // 89.6 us as one wave of 4 CTAs
  // A grid that fills the SMs is never split.
  CHECK(plan_gemm_launch(hw, overlap::GemmShape{4096, 4096, 16384, DType::bf16}, o).split_k == 1);
  // The trace's pricing takes the option.
  const GemmPrice p = price_gemm(hw, traces::GemmShape{1, 256, 256, 16384, "c10::BFloat16"}, "nvjet_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  REQUIRE(p.ns);
  CHECK(*p.ns == static_cast<double>(expected) / 1000.0);
  // Bad options are refused, not priced.
  GemmLaunchOptions bad;
  bad.batch = 0;
  CHECK_THROWS_AS(plan_gemm_launch(hw, shape, bad), std::invalid_argument);
  bad = GemmLaunchOptions{};
  bad.tf32 = true;
  CHECK_THROWS_AS(plan_gemm_launch(hw, shape, bad), std::invalid_argument);  // TF32 on bf16 operands
}

TEST_CASE("Attention forward and backward FLOPs and time from the op's Input Dims", "[trace][pricing]") {
  // SDPA's flash op: query, key, value [b, h, s, d], then dropout_p, is_causal, ... (no dims).
  OpInfo op;
  op.name = "aten::_scaled_dot_product_flash_attention";
  op.input_dims = {{2, 16, 4096, 128}, {2, 16, 4096, 128}, {2, 16, 4096, 128}, {}, {}, {}, {}};
  op.input_types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16", "Scalar", "Scalar", "Scalar", ""};
  CHECK_FALSE(attention_shape(op, std::nullopt));  // causal unknown: not guessed
  const auto fwd = attention_shape(op, true);
  REQUIRE(fwd);
  CHECK(fwd->pass == AttentionPass::forward);
  // 4 b h s_q s_kv d, halved for causal.
  const double fwd_flop = 4.0 * 2 * 16 * 4096 * 4096 * 128 / 2;
  CHECK(attention_flop(*fwd) == fwd_flop);
  CHECK(attention_flop(*attention_shape(op, false)) == 2 * fwd_flop);
  // Its backward: grad_out first, then query, key, value; 2.5 x the forward.
  OpInfo bwd = op;
  bwd.name = "aten::_scaled_dot_product_flash_attention_backward";
  bwd.input_dims.insert(bwd.input_dims.begin(), {2, 16, 4096, 128});
  bwd.input_types.insert(bwd.input_types.begin(), "c10::BFloat16");
  const auto b = attention_shape(bwd, true);
  REQUIRE(b);
  CHECK(b->pass == AttentionPass::backward);
  CHECK(attention_flop(*b) == 2.5 * fwd_flop);
  // flash-attn's own op: [b, s, h, d], with a shorter key (cross attention, 1024 keys).
  OpInfo fa;
  fa.name = "flash_attn::_flash_attn_forward";
  fa.input_dims = {{2, 4096, 16, 128}, {2, 1024, 16, 128}, {2, 1024, 16, 128}};
  fa.input_types = {"c10::BFloat16", "c10::BFloat16", "c10::BFloat16"};
  const auto c = attention_shape(fa, false);
  REQUIRE(c);
  CHECK(c->heads == 16);
  CHECK(c->seq_q == 4096);
  CHECK(c->seq_kv == 1024);
  CHECK(attention_flop(*c) == 4.0 * 2 * 16 * 4096 * 1024 * 128);
  // Time: FLOPs over 989 TFLOP/s at FlashAttention-2's published 73 % forward / 63 % backward, and
  // FlashAttention-3's 740 of 989 for its Hopper forward kernels.
  const HardwareProfile& hw = h100();
  const std::string fa2 = "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>>(Flash_fwd_params)";
  CHECK(attention_time_ps(hw, *fwd, fa2) == static_cast<Ps>(std::ceil(fwd_flop / (989 * 0.73))));
  CHECK(attention_time_ps(hw, *b, "flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") ==
        static_cast<Ps>(std::ceil(2.5 * fwd_flop / (989 * 0.63))));
  CHECK(attention_time_ps(hw, *fwd, "void cutlass::device_kernel<flash::FlashAttnFwdSm90<...>>") ==
        static_cast<Ps>(std::ceil(fwd_flop / (989 * (740.0 / 989.0)))));
  // Wrong dims: not an attention shape.
  op.input_dims[1] = {2, 16, 4096, 64};
  CHECK_FALSE(attention_shape(op, true));
}

TEST_CASE("A memory-bound kernel's bytes from its op's shapes and dtypes", "[trace][pricing]") {
  OpInfo add;
  add.name = "aten::add";
  add.input_dims = {{8, 4096}, {8, 4096}, {}};  // two tensors and the alpha scalar
  add.input_types = {"c10::BFloat16", "c10::BFloat16", "Scalar"};
  CHECK(memory_bound_bytes(add) == 3 * 8 * 4096 * 2);  // reads two, writes one
  OpInfo cast;
  cast.name = "aten::copy_";  // bf16 destination from an fp32 source
  cast.input_dims = {{1024, 1024}, {1024, 1024}, {}};
  cast.input_types = {"c10::BFloat16", "float", "Scalar"};
  CHECK(memory_bound_bytes(cast) == 1024 * 1024 * (2 + 4));
  OpInfo sum;
  sum.name = "aten::sum";
  sum.input_dims = {{1024, 1024}, {}, {}};
  sum.input_types = {"float", "", ""};
  CHECK(memory_bound_bytes(sum) == 1024 * 1024 * 4);  // reads the tensor; the reduced output is left out
  OpInfo norm;
  norm.name = "aten::native_layer_norm";
  norm.input_dims = {{4, 2048, 4096}, {}, {4096}, {4096}, {}};
  norm.input_types = {"c10::BFloat16", "", "c10::BFloat16", "c10::BFloat16", "Scalar"};
  CHECK(memory_bound_bytes(norm) == 2 * (4LL * 2048 * 4096 * 2) + 2 * 4096 * 2);
  OpInfo odd = add;
  odd.input_types[0] = "SomeOpaqueType";
  CHECK_FALSE(memory_bound_bytes(odd));
  // Priced as the engine prices a step's memory-bound kernel: HBM latency + bytes over the streaming rate.
  const HardwareProfile& hw = h100();
  CHECK(streaming_kernel_ps(hw, *memory_bound_bytes(add)) ==
        ps_from_us(hw.gpu.hbm_latency_us) + transfer_ps(3 * 8 * 4096 * 2, streaming_kernel_gbps(hw)));
}

TEST_CASE("trace --hardware prices each kind from its op's shapes, per kind", "[trace][pricing]") {
  // tests/data/trace/pricing_rank0.json (make_pricing_fixture.py): the shapes of the cases above, traced.
  const std::string file = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/trace/pricing_rank0.json";
  const CliResult r = cli({"trace", file, "--hardware", "h100-sxm-8x-nvswitch", "--format", "json"});
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const auto& rows = j["predictions"]["rows"];
  const auto row = [&](const std::string& cls, const std::string& what) -> const nlohmann::json& {
    for (const auto& x : rows)
      if (x["class"] == cls && x["what"].get<std::string>().find(what) != std::string::npos) return x;
    FAIL("no " << cls << " row with " << what);
    return rows[0];
  };
  CHECK(row("gemm", "4096x4096x4096")["predicted_ns"].get<double>() == static_cast<double>(4 * cta_ps(989.0 / 2, 256, 128, 4096)) / 1000.0);
  CHECK(row("gemm", "4096x4096x4096")["what"].get<std::string>().find("tf32") != std::string::npos);
  CHECK(row("gemm", "32x(512x512x64)")["predicted_ns"].get<double>() == static_cast<double>(4 * cta_ps(989, 128, 128, 64)) / 1000.0);
  const Ps split = std::max(cta_ps(989, 128, 128, 512), hbm_ps(16384LL * 256 * 2)) + hbm_ps(256LL * 256 * 4 * 32);
  CHECK(row("gemm", "split-K 32")["predicted_ns"].get<double>() == static_cast<double>(split) / 1000.0);
  const double fwd_flop = 4.0 * 2 * 16 * 4096 * 4096 * 128 / 2;
  CHECK(row("attention", "fwd 2x16x4096x4096x128 causal")["predicted_ns"].get<double>() ==
        static_cast<double>(static_cast<Ps>(std::ceil(fwd_flop / (989 * 0.73)))) / 1000.0);
  CHECK(row("attention", "bwd 2x16x4096x4096x128 causal")["predicted_ns"].get<double>() ==
        static_cast<double>(static_cast<Ps>(std::ceil(2.5 * fwd_flop / (989 * 0.63)))) / 1000.0);
  const HardwareProfile& hw = h100();
  CHECK(row("memory_bound", "memory 196608 B")["predicted_ns"].get<double>() ==
        static_cast<double>(streaming_kernel_ps(hw, 3 * 8 * 4096 * 2)) / 1000.0);
  // Per kind: every GEMM priced; attention: 2 of 2 shaped groups, the forward traced without Concrete
  // Inputs counted as not priced; memory-bound: the add, and cuBLAS' split-K reduction (its op is the
  // GEMM's, whose shapes are not its own) counted as not priced.
  std::map<std::string, nlohmann::json> by_kind;
  for (const auto& s : j["predictions"]["summary"]) by_kind[s["class"]] = s;
  CHECK(by_kind["gemm"]["predicted"] == 3);
  CHECK(by_kind["attention"]["predicted"] == 2);
  CHECK(by_kind["attention"]["kernels_without_shapes"] == 1);
  CHECK(by_kind["memory_bound"]["predicted"] == 1);
  CHECK(by_kind["memory_bound"]["kernels_without_shapes"] == 1);
  // The text report says the same per kind.
  const CliResult t = cli({"trace", file, "--hardware", "h100-sxm-8x-nvswitch"});
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("attention: 2 of 2 kernel groups predicted") != std::string::npos);
  CHECK(t.out.find("memory_bound: 1 of 1 kernel groups predicted") != std::string::npos);
}
