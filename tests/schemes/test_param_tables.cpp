// The scheme parameter tables (sim/schemes/scheme.hpp SchemeParam): every row's typed default lies
// inside its own valid values, the one check (check_param_value) serves the builders' typed reads,
// and a hardware-dependent default resolves on the profile it runs on.
#include <catch2/catch.hpp>

#include <set>
#include <string>

#include "ideal_profile.hpp"

#include "cost_model/input_error.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/flashoverlap.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/schemes/wave_groups.hpp"

using namespace overlap;
using namespace overlap::sim;
using namespace overlap::sim::test;

namespace {

const SchemeParam& row(const std::string& scheme, const std::string& name) {
  const SchemeInfo* s = find_scheme(scheme);
  REQUIRE(s);
  for (const SchemeParam& p : s->params)
    if (p.name == name) return p;
  FAIL("no parameter " << name << " in " << scheme);
  throw std::logic_error("unreachable");
}

HardwareProfile with_sms(int sms) {
  HardwareProfile hw = ideal_profile(8);
  hw.gpu.sm_count = sms;
  return hw;
}

}  // namespace

TEST_CASE("every scheme parameter has a typed default inside its valid values", "[params][schemes]") {
  for (const int sms : {16, 108, 132, 304}) {
    const HardwareProfile hw = with_sms(sms);
    for (const SchemeInfo& s : scheme_registry()) {
      std::set<std::string> names;
      for (const SchemeParam& p : s.params) {
        INFO(s.name << "." << p.name << " on " << sms << " SMs");
        CHECK(names.insert(p.name).second);
        CHECK_FALSE(p.help.empty());
        CHECK_FALSE(default_text(p).empty());
        CHECK_FALSE(valid_values_text(p).empty());
        const nlohmann::json d = default_for(p, &hw);
        // A limit set by the SM count may exclude a fixed default on a small GPU (copy_sms 16 needs
        // 17 SMs); the builder then refuses it with the same message.
        if (!p.hardware_max || sms >= 108) CHECK(check_param_value(p, d, hw) == std::nullopt);
        switch (p.type) {
          case ParamType::integer:
            CHECK(d.is_number_integer());
            // BuildContext::integer returns an int.
            CHECK(p.min >= -(1 << 30));
            CHECK(p.max <= (1 << 30));
            CHECK(p.min <= p.max);
            break;
          case ParamType::number: CHECK(d.is_number_float()); break;
          case ParamType::boolean: CHECK(d.is_boolean()); break;
          case ParamType::text:
            CHECK(d.is_string());
            CHECK_FALSE(p.allowed.empty());
            break;
          case ParamType::wave_groups: CHECK(static_cast<bool>(p.check)); break;
        }
        // A hardware-dependent default is documented by its formula, not a number.
        CHECK(static_cast<bool>(p.hardware_default) == !p.default_formula.empty());
        CHECK(static_cast<bool>(p.hardware_max) == !p.max_formula.empty());
        // tune's grid only holds values the check accepts on a full-size GPU.
        if (sms >= 132)
          for (const nlohmann::json& v : p.tune_values) CHECK(check_param_value(p, v, hw) == std::nullopt);
      }
    }
  }
}

TEST_CASE("check_param_value: ranges, choices, sentinels and types", "[params][schemes]") {
  const HardwareProfile hw = with_sms(132);
  const SchemeParam& chunks = row("data_slicing", "chunks");
  CHECK(check_param_value(chunks, 1, hw) == std::nullopt);
  CHECK(check_param_value(chunks, 4096, hw) == std::nullopt);
  CHECK(check_param_value(chunks, 0, hw) == "must be an integer in [1, 4096] (got 0)");
  CHECK(check_param_value(chunks, 4097, hw) == "must be an integer in [1, 4096] (got 4097)");
  CHECK(check_param_value(chunks, "abc", hw) == "must be an integer in [1, 4096] (got abc)");
  CHECK(check_param_value(chunks, 2.5, hw) == "must be an integer in [1, 4096] (got 2.5)");
  CHECK(check_param_value(chunks, nlohmann::json::object(), hw) == "must be an integer in [1, 4096] (got a map)");

  const SchemeParam& streams = row("async_tp", "streams");
  CHECK(check_param_value(streams, 3, hw) == "must be 1 or 2 (got 3)");
  const SchemeParam& schedule = row("commfuse", "schedule");
  CHECK(check_param_value(schedule, "pairwise", hw) == std::nullopt);
  CHECK(check_param_value(schedule, "star", hw) == "must be ring, pairwise or circular (got 'star')");
  CHECK(check_param_value(schedule, 3, hw) == "must be a string (got 3)");

  // commfuse channels: -1 = the profile's p2p_channels, else 1 .. sm_count - 1 on this profile.
  const SchemeParam& channels = row("commfuse", "channels");
  CHECK(check_param_value(channels, -1, hw) == std::nullopt);
  CHECK(check_param_value(channels, 131, hw) == std::nullopt);
  CHECK(check_param_value(channels, 132, hw) ==
        "must be -1 (profile comm.p2p_channels) or an integer in [1, 131] (got 132)");
  CHECK(check_param_value(channels, 0, with_sms(16)) ==
        "must be -1 (profile comm.p2p_channels) or an integer in [1, 15] (got 0)");
  CHECK(valid_values_text(channels) == "-1 or 1..sm_count - 1");

  const SchemeParam& epilogue = row("flashoverlap", "epilogue_overhead");
  CHECK(check_param_value(epilogue, 0.5, hw) == std::nullopt);
  CHECK(check_param_value(epilogue, 1.5, hw) == "must be a number in [0, 1] (got 1.5)");
  CHECK(check_param_value(row("flashoverlap", "sm_margin"), 1, hw) == "must be true or false (got 1)");

  const SchemeParam& groups = row("flashoverlap", "groups");
  CHECK(check_param_value(groups, "optimal", hw) == std::nullopt);
  CHECK(check_param_value(groups, nlohmann::json::array({1, 2, 3}), hw) == std::nullopt);
  CHECK(check_param_value(groups, 0, hw) == "group size must be >= 1 wave (got 0)");
  CHECK(check_param_value(groups, nlohmann::json::array({1, 0}), hw) ==
        "every group must be a positive whole number of waves");
  CHECK(check_param_value(groups, ".nan", hw) ==
        "must be \"auto\", \"optimal\", a wave count or a list of wave counts (got '.nan')");
}

TEST_CASE("a hardware-dependent default resolves to sm_count - 2 on each profile", "[params][schemes][flashoverlap]") {
  const SchemeParam& wave_sms = row("flashoverlap", "wave_sms");
  CHECK(default_text(wave_sms) == "sm_count - 2");
  const Workload w = gemm_workload(8, Primitive::all_reduce, 8192, 8192, 8192);
  const nlohmann::json none = nlohmann::json::object();
  for (const int sms : {108, 132}) {
    const HardwareProfile hw = with_sms(sms);
    const BuildContext ctx{w, hw, none, Fidelity::curve};
    CHECK(ctx.integer(wave_sms) == sms - 2);
    // The builder's problem is cut into waves of that many SMs.
    const WaveGroupProblem prob = flashoverlap_problem(ctx);
    CHECK(prob.tiles_per_wave == static_cast<std::int64_t>(sms - 2) * hw.gpu.gemm_ctas_per_sm);
    // The same knob given: the given value, checked against this profile's SM count.
    const nlohmann::json given = {{"wave_sms", sms}};
    CHECK(BuildContext{w, hw, given, Fidelity::curve}.integer(wave_sms) == sms);
    const nlohmann::json over = {{"wave_sms", sms + 1}};
    try {
      (void)BuildContext{w, hw, over, Fidelity::curve}.integer(wave_sms);
      FAIL("expected an InputError");
    } catch (const InputError& e) {
      CHECK(e.key_path() == "params.wave_sms");
      CHECK(e.message() == "must be an integer in [1, " + std::to_string(sms) + "] (got " + std::to_string(sms + 1) + ")");
    }
  }
  // Reported without a profile: as the formula `overlap-sim schemes` shows.
  CHECK(default_for(wave_sms, nullptr) == "sm_count - 2");
}

TEST_CASE("run --param goes through the same check as a scenario value", "[params][scenario]") {
  const SchemeInfo& ds = *find_scheme("data_slicing");
  const HardwareProfile hw = with_sms(132);
  CHECK(apply_scheme_params(ds, nlohmann::json::object(), {"chunks=8", "order=layer"}, hw) ==
        nlohmann::json{{"chunks", 8}, {"order", "layer"}});
  auto error_of = [&](const SchemeInfo& s, const std::string& a, const HardwareProfile& h) {
    try {
      (void)apply_scheme_params(s, nlohmann::json::object(), {a}, h);
    } catch (const InputError& e) {
      return std::make_pair(e.key_path(), e.message());
    }
    return std::make_pair(std::string(), std::string());
  };
  const SchemeParam& chunks = row("data_slicing", "chunks");
  CHECK(error_of(ds, "chunks=5000", hw) == std::make_pair(std::string("--param chunks"), *check_param_value(chunks, 5000, hw)));
  CHECK(error_of(ds, "order=diagonal", hw).second == *check_param_value(row("data_slicing", "order"), "diagonal", hw));
  // A hardware-dependent limit: 140 SMs per wave fit a 148-SM GPU, not a 132-SM one.
  const SchemeInfo& fo = *find_scheme("flashoverlap");
  CHECK(error_of(fo, "wave_sms=140", with_sms(148)).first.empty());
  CHECK(error_of(fo, "wave_sms=140", hw) ==
        std::make_pair(std::string("--param wave_sms"), std::string("must be an integer in [1, 132] (got 140)")));
}
