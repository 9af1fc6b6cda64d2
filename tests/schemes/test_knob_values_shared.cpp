// One default and one range per scheme knob, whoever reads it: the schemes' tables (the registry), the
// calibration harness (calibrate/core: a run's parameters checked and filled in, then the run the
// reference kernels execute) and the TransformerEngine export (te_gemm_setting, te_userbuffers_yaml).
// Each check compares a reader's value with the registry's row, so a default written again anywhere
// and then changed on one side fails here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibrate/core/run_spec.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "sim/scenario.hpp"
#include "sim/schemes/decode_plan.hpp"
#include "sim/schemes/knob_values.hpp"
#include "sim/schemes/scheme.hpp"
#include "sim/schemes/te_userbuffers.hpp"
#include "tools/export_production.hpp"

namespace {

using nlohmann::json;
namespace knobs = overlap::sim::knobs;

const overlap::sim::SchemeParam& table_row(const std::string& scheme, const std::string& name) {
  const overlap::sim::SchemeInfo* s = overlap::sim::find_scheme(scheme);
  REQUIRE(s);
  for (const overlap::sim::SchemeParam& p : s->params)
    if (p.name == name) return p;
  FAIL("no parameter " << name << " in " << scheme);
  throw std::logic_error("unreachable");
}

template <typename T>
T table_default(const std::string& scheme, const std::string& name) {
  return table_row(scheme, name).default_value.get<T>();
}

// One run of the harness's configuration list, parsed as the runner parses it.
overlap::calibrate::SchemeRunConfig harness_run(const std::string& scheme, const json& workload, const json& params) {
  const json run{{"id", "r"}, {"scheme", scheme}, {"params", params}, {"workload", workload}};
  const json doc{{"schema", overlap::calibrate::kSchemeConfigsSchema}, {"runs", json::array({run})}};
  return overlap::calibrate::parse_scheme_config_list(doc, "cfg.json").runs.at(0);
}

const json kReduceScatter{{"kind", "gemm_collective"}, {"tp", 4},  {"m", 4096}, {"n", 4096},
                          {"k", 2048},                 {"dtype", "bf16"}, {"primitive", "reduce_scatter"}};
const json kDecode{{"kind", "decode_stack"}, {"tp", 4},  {"layers", 8},  {"d_model", 4096},
                   {"d_ffn", 14336},         {"heads", 32}, {"kv_heads", 8}};

}  // namespace

TEST_CASE("the knob values the harness shares are the schemes' table rows", "[params][schemes][calibrate]") {
  // Each (scheme, knob) the harness reads: the registry's row has the same default and range.
  const std::vector<std::pair<std::string, knobs::IntKnob>> ints = {
      {"data_slicing", knobs::kDataSlicingChunks}, {"async_tp", knobs::kAsyncTpStreams},
      {"commfuse", knobs::kCommFuseM},             {"pt_transformer", knobs::kPtTransformerTd},
      {"dtp", knobs::kDtpDelta}};
  for (const auto& [scheme, k] : ints) {
    INFO(scheme << "." << k.name);
    const overlap::sim::SchemeParam& row = table_row(scheme, k.name);
    CHECK(row.default_value == json(k.default_value));
    CHECK(row.min == static_cast<double>(k.min));
    CHECK(row.max == static_cast<double>(k.max));
  }
  auto same_choices = [](const std::string& scheme, const auto& k) {
    INFO(scheme << "." << k.name);
    const overlap::sim::SchemeParam& row = table_row(scheme, k.name);
    REQUIRE(row.allowed.size() == k.values.size());
    for (std::size_t i = 0; i < k.values.size(); ++i) CHECK(row.allowed[i] == json(k.values[i]));
    CHECK(row.default_value == json(k.default_value()));
  };
  same_choices("async_tp", knobs::kAsyncTpTransport);
  same_choices("commfuse", knobs::kCommFuseSchedule);
  same_choices("commfuse", knobs::kCommFuseTransport);
}

TEST_CASE("a harness run that names no knob runs the simulator's defaults", "[params][calibrate]") {
  using overlap::calibrate::run_spec_of;
  SECTION("data_slicing, async_tp, commfuse") {
    CHECK(run_spec_of(harness_run("data_slicing", kReduceScatter, json::object())).chunks ==
          table_default<int>("data_slicing", "chunks"));
    CHECK(run_spec_of(harness_run("async_tp", kReduceScatter, json::object())).streams ==
          table_default<int>("async_tp", "streams"));
    const overlap::cuda::RunSpec fuse = run_spec_of(harness_run("commfuse", kReduceScatter, json::object()));
    CHECK(fuse.slices_per_rank == table_default<int>("commfuse", "m"));
    CHECK(fuse.schedule == table_default<std::string>("commfuse", "schedule"));
    CHECK(fuse.transport.empty());  // the node's own: the harness, not the table, decides it
  }
  SECTION("the decode family's plans take the table's t_d and delta") {
    const int layers = kDecode["layers"].get<int>();
    const auto pt = run_spec_of(harness_run("pt_transformer", kDecode, json::object()));
    const auto want_pt = overlap::sim::pt_transformer_plan(layers, table_default<int>("pt_transformer", "t_d"));
    REQUIRE(pt.plan.modules.size() == want_pt.modules.size());
    for (std::size_t i = 0; i < want_pt.modules.size(); ++i) CHECK(pt.plan.modules[i].all_reduce == want_pt.modules[i].all_reduce);
    const auto dtp = run_spec_of(harness_run("dtp", kDecode, json::object()));
    const auto want_dtp = overlap::sim::dtp_plan(layers, table_default<int>("dtp", "delta"));
    REQUIRE(dtp.plan.modules.size() == want_dtp.modules.size());
    for (std::size_t i = 0; i < want_dtp.modules.size(); ++i) {
      CHECK(dtp.plan.modules[i].all_reduce == want_dtp.modules[i].all_reduce);
      CHECK(dtp.plan.modules[i].waits_for == want_dtp.modules[i].waits_for);
    }
  }
  SECTION("the harness refuses a schedule outside the table's choices, naming them") {
    try {
      (void)harness_run("commfuse", kReduceScatter, {{"schedule", "tree"}});
      FAIL("accepted schedule tree");
    } catch (const std::exception& e) {
      CHECK(std::string(e.what()).find("must be ring, pairwise or circular (got 'tree')") != std::string::npos);
    }
  }
}

TEST_CASE("TE userbuffers: every GEMM name's setting and export default to the table's rows", "[params][te][export]") {
  const overlap::sim::SchemeInfo* te = overlap::sim::find_scheme("te_userbuffers");
  REQUIRE(te);
  const json none = json::object();
  overlap::sim::ScenarioOptions o;
  o.hardware_dir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";
  const overlap::sim::Scenario sc =
      overlap::sim::load_scenario_text("hardware: h100-sxm-8x-nvswitch\n"
                                       "workload: {kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 8192}\n"
                                       "schemes: [te_userbuffers]\n",
                                       "t.yaml", o);
  for (const std::string& name : overlap::sim::te_all_gemm_names()) {
    INFO(name);
    const overlap::sim::TeGemmSetting s = overlap::sim::te_gemm_setting(none, name);
    CHECK(s.num_sm == table_default<int>("te_userbuffers", "num_sm"));
    CHECK(s.cga_size == table_default<int>("te_userbuffers", "cga_size"));
    CHECK(s.set_sm_margin == table_default<bool>("te_userbuffers", "set_sm_margin"));
    CHECK(s.num_splits == table_default<int>("te_userbuffers", "num_splits"));
    CHECK(s.use_ce == table_default<bool>("te_userbuffers", "use_ce"));
    CHECK(s.atomic_gemm == table_default<bool>("te_userbuffers", "atomic_gemm"));
    // Each per-name row is its scalar row under the name: same default, range and choices (less
    // pipeline for an all-gather name, which TE refuses).
    for (const overlap::sim::SchemeParam& row : te->params) {
      if (row.name.rfind(name + ".", 0) != 0) continue;
      const overlap::sim::SchemeParam& scalar = table_row("te_userbuffers", row.name.substr(name.size() + 1));
      INFO(row.name);
      CHECK(row.inherits);
      CHECK(row.type == scalar.type);
      CHECK(overlap::sim::default_for(row, &sc.hardware) == scalar.default_value);
      CHECK(row.min == scalar.min);
      CHECK(row.max == scalar.max);
      CHECK(static_cast<bool>(row.hardware_max) == static_cast<bool>(scalar.hardware_max));
      for (const json& v : row.allowed)
        CHECK(std::find(scalar.allowed.begin(), scalar.allowed.end(), v) != scalar.allowed.end());
      if (overlap::sim::te_side(name) != overlap::sim::TeSide::all_gather) CHECK(row.allowed == scalar.allowed);
    }
  }
  // The exported ub_cfgs of a run that sets nothing writes the table's values.
  const std::string yaml = overlap::tools::te_userbuffers_yaml(sc.workload, none, {});
  const std::string entry = "fc2_fprop:\n  method: " + table_default<std::string>("te_userbuffers", "method") +
                            "\n  num_sm: " + std::to_string(table_default<int>("te_userbuffers", "num_sm")) +
                            "\n  cga_size: " + std::to_string(table_default<int>("te_userbuffers", "cga_size")) + "\n";
  CHECK(yaml.find(entry) != std::string::npos);
}
