// data_slicing (commfuse-paper Sec. 1-2) on an idealised node: with k equal chunks and a GEMM chunk
// longer than a chunk's collective, everything hides except the last chunk's collective; when the
// collective is longer, the first GEMM chunk and k collectives are on the critical path; and slicing a
// one-wave GEMM into two half-wave chunks costs two waves (wave quantization per chunk).
#include <catch2/catch.hpp>

#include "ideal_profile.hpp"

#include "cost_model/input_error.hpp"

#include "cost_model/collective_model.hpp"
#include "cost_model/gemm_model.hpp"
#include "sim/metrics.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/schemes/scheme.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

SchemeResult run_slicing(const Workload& w, const HardwareProfile& hw, int chunks) {
  const SchemeInfo* s = find_scheme("data_slicing");
  REQUIRE(s != nullptr);
  const nlohmann::json params = {{"chunks", chunks}};
  return evaluate(*s, BuildContext{w, hw, params, Fidelity::curve});
}

}  // namespace

TEST_CASE("data slicing with k chunks exposes exactly the last chunk's collective", "[data_slicing][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 1000);
  // m = 4096 in k chunks of 4096/k rows x 512 columns: 128x128 tiles, (32/k) x 4 <= 124 tiles, so a
  // chunk is one wave even beside the collective's 8 SMs. K = 8192: 8 us per chunk.
  for (Primitive p : {Primitive::all_reduce, Primitive::reduce_scatter}) {
    for (int k : {2, 4, 8}) {
      INFO("primitive " << primitive_name(p) << " chunks " << k);
      const Workload w = gemm_workload(4, p, 4096, 512, 8192);
      const SchemeResult r = run_slicing(w, hw, k);
      const Ps chunk_gemm = gemm_time_ps(hw, GemmShape{4096 / k, 512, 8192, DType::bf16});
      const Ps chunk_comm = collective_time_ps(hw, to_collective_primitive(p), (4096 / k) * 512 * 2, 4, "nvlink",
                                               default_algorithm(hw, p));
      REQUIRE(chunk_gemm == 8 * kPsPerUs);
      REQUIRE(chunk_comm < chunk_gemm);
      CHECK(r.compute_only_ps == k * chunk_gemm);
      CHECK(r.exposed_comm_ps == chunk_comm);
      CHECK(r.latency_ps == k * chunk_gemm + chunk_comm);
      CHECK(r.exposed_comm_ps < r.comm_ps);
    }
  }
}

TEST_CASE("data slicing before a GEMM exposes the first chunk's all-gather", "[data_slicing][closed_form]") {
  const HardwareProfile hw = ideal_profile(4, 5000);
  const int k = 4;
  const Workload w = gemm_workload(4, Primitive::all_gather, 4096, 1024, 8192);
  const SchemeResult r = run_slicing(w, hw, k);
  const Ps chunk_gemm = gemm_time_ps(hw, GemmShape{1024, 1024, 8192, DType::bf16});
  const Ps chunk_ag = collective_time_ps(hw, CollectivePrimitive::all_gather, 1024 * 8192 * 2, 4, "nvlink");
  REQUIRE(chunk_ag < chunk_gemm);
  CHECK(r.latency_ps == chunk_ag + k * chunk_gemm);
}

TEST_CASE("communication-bound slicing: first GEMM chunk then every collective", "[data_slicing][closed_form]") {
  // A slow link: each chunk's all-reduce outlasts the next chunk's GEMM.
  const HardwareProfile hw = ideal_profile(4, 50);
  const int k = 4;
  const Workload w = gemm_workload(4, Primitive::all_reduce, 4096, 1024, 1024);
  const SchemeResult r = run_slicing(w, hw, k);
  const Ps chunk_gemm = gemm_time_ps(hw, GemmShape{1024, 1024, 1024, DType::bf16});
  const Ps chunk_comm = collective_time_ps(hw, CollectivePrimitive::all_reduce, 1024 * 1024 * 2, 4, "nvlink");
  REQUIRE(chunk_comm > chunk_gemm);
  CHECK(r.latency_ps == chunk_gemm + k * chunk_comm);
  CHECK(r.exposed_comm_ps == r.latency_ps - k * chunk_gemm);
}

TEST_CASE("one chunk is no overlap, half-wave chunks pay a full wave each", "[data_slicing]") {
  const HardwareProfile hw = ideal_profile(4, 1000);
  const nlohmann::json none = nlohmann::json::object();
  // 1536 x 1408 = 12 x 11 = 132 tiles of 128x128: exactly one wave on 132 SMs.
  const Workload w = gemm_workload(4, Primitive::all_reduce, 1536, 1408, 1024);
  const SchemeResult one = run_slicing(w, hw, 1);
  const SchemeResult base = evaluate(*find_scheme("no_overlap"), BuildContext{w, hw, none, Fidelity::curve});
  CHECK(one.latency_ps == base.latency_ps);
  CHECK(one.compute_only_ps == kPsPerUs);
  const SchemeResult two = run_slicing(w, hw, 2);  // 66 tiles per chunk: two half-empty waves
  CHECK(two.compute_only_ps == 2 * kPsPerUs);
}

TEST_CASE("data slicing rejects a chunk count below 1 naming the key", "[data_slicing][errors]") {
  const HardwareProfile hw = ideal_profile(4, 1000);
  const Workload w = gemm_workload(4, Primitive::all_reduce, 1024, 1024, 1024);
  const nlohmann::json bad = {{"chunks", 0}};
  try {
    evaluate(*find_scheme("data_slicing"), BuildContext{w, hw, bad, Fidelity::curve});
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(e.key_path() == "params.chunks");
    CHECK(e.message() == "must be an integer in [1, 4096] (got 0)");
  }
}
