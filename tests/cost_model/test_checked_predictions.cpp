// Predictions never wrap: every product of a GEMM's shape (weight bytes, tiles, waves x CTA time) is
// checked (cost_model/gemm_model.cpp), and a JSON input is read strictly (cost_model/strict_json.hpp).
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>

#include "cost_model/gemm_model.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/strict_json.hpp"
#include "cost_model/units.hpp"
#include "tests/support/profile_fixtures.hpp"

using namespace overlap;

TEST_CASE("a GEMM whose time leaves int64 picoseconds is a RangeError naming the GEMM, not a wrapped time", "[cost_model][gemm][errors]") {
  const HardwareProfile h = test::h100_like_profile("h100-like", 8, 0.8);
  // 2^24 on every side (the largest gemm_dim): 256 x 128 tiles, 2^16 x 2^17 = 2^33 of them, in
  // ceil(2^33 / 132) = 65,075,263 waves of one 2 x 256 x 128 x 2^24 FLOP CTA each at 989 x 0.8 / 132
  // FLOP/ps: about 1.8e11 ps a wave, 1.2e19 ps in all, past int64's 9.2e18. The product used to wrap
  // negative and max(it, memory_ps) then answered the weights' streaming time (about 190 s).
  const GemmShape huge{std::int64_t{1} << 24, std::int64_t{1} << 24, std::int64_t{1} << 24, DType::bf16};
  for (int call = 0; call < 2; ++call) {
    try {
      if (call == 0) (void)plan_gemm(h, huge);  // its memory-bound test multiplies waves by the CTA time
      else (void)gemm_time_ps(h, huge);
      FAIL("expected a RangeError");
    } catch (const RangeError& e) {
      CHECK_THAT(std::string(e.what()), Catch::Contains("GEMM 16777216 x 16777216 x 16777216 (bf16)"));
    }
  }
  // Half of it on each side (2^23): 2^15 x 2^16 tiles in ceil(2^31 / 132) waves of a quarter of the
  // CTA time, about 1.5e18 ps in all: inside int64, so a time (past the 1e18 ps a run counts, which
  // the engine refuses on its own), never a wrapped one.
  const GemmShape half{std::int64_t{1} << 23, std::int64_t{1} << 23, std::int64_t{1} << 23, DType::bf16};
  const GemmPlan hp = plan_gemm(h, half);
  CHECK(hp.tiles == (std::int64_t{1} << 31));
  CHECK(hp.waves(132) == 16268816);
  CHECK(gemm_time_ps(h, half) == hp.waves(132) * hp.cta_ps);
  // A GPU at the peak_tflops range's floor (1e-3): one 256 x 128 CTA over K = 2^24 takes about
  // 1.8e17 ps, and 993 waves of them leave int64 inside plan_gemm (its memory-bound test); refused at
  // the plan, naming the GEMM.
  HardwareProfile slow = h;
  slow.gpu.peak_tflops["bf16"] = 1e-3;
  CHECK_THROWS_AS(plan_gemm(slow, GemmShape{65536, 65536, std::int64_t{1} << 24, DType::bf16}), RangeError);
  CHECK_THROWS_WITH(plan_gemm(slow, GemmShape{65536, 65536, std::int64_t{1} << 24, DType::bf16}),
                    Catch::Contains("GEMM 65536 x 65536 x 16777216 (bf16)"));
  // Inside the range the checked products are the plain ones: compute-bound, waves x CTA time.
  const GemmShape big{8192, 8192, 8192, DType::bf16};
  const GemmPlan p = plan_gemm(h, big);
  REQUIRE_FALSE(p.memory_bound);
  CHECK(gemm_time_ps(h, big) == p.waves(132) * p.cta_ps);
  CHECK(p.weight_bytes == 8192LL * 8192 * 2);
}

TEST_CASE("strict JSON: duplicate keys and numbers beyond a double name the key path and line", "[cost_model][json][errors]") {
  const auto error = [](const std::string& text) {
    try {
      (void)parse_strict_json(text, "m.json", "not valid JSON");
    } catch (const InputError& e) {
      return e;
    }
    FAIL("expected an InputError");
    return InputError("", 0, "", "");
  };
  const InputError dup = error("{\n  \"measurements\": [\n    {\"name\": \"a\", \"time_us\": 1, \"time_us\": 2}\n  ]\n}");
  CHECK(dup.file() == "m.json");
  CHECK(dup.key_path() == "measurements[0].time_us");
  CHECK(dup.line() == 3);
  CHECK_THAT(dup.message(), Catch::Contains("duplicate key"));
  const InputError big = error("{\"a\": {\"b\": [0, 1, 2e400]}}");
  CHECK(big.key_path() == "a.b[2]");
  CHECK_THAT(big.message(), Catch::Contains("beyond the range of a double"));
  const InputError late = error("[{\"x\": 1}, {\"y\": [1, {\"z\": 1, \"z\": 1}]}]");
  CHECK(late.key_path() == "[1].y[1].z");
  const InputError syntax = error("{\"a\": 1,\n\"b\": }");
  CHECK(syntax.line() == 2);
  CHECK_THAT(syntax.message(), Catch::Contains("not valid JSON"));
  // The same key in two different objects is no duplicate; the value parses as nlohmann's does.
  const auto ok = parse_strict_json(R"({"a": {"k": 1}, "b": {"k": 2}, "k": [1e308, -1e308]})", "m.json", "not valid JSON");
  CHECK(ok["b"]["k"] == 2);
  CHECK(ok["k"][1].get<double>() == -1e308);
}
