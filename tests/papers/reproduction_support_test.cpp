// What the paper reproductions added to the simulator: the per-collective figures of a
// result (nccl-tests' view), mlp_tpsp / attention_tpsp with the input already whole
// (gather_input: false), data slicing in layer order, and the hardware named by its profile name.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/input_error.hpp"
#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "sim/scenario.hpp"
#include "sim/workload_shapes.hpp"
#include "tools/cli.hpp"

using namespace overlap;
using namespace overlap::sim;
namespace fs = std::filesystem;

namespace {

const std::string kSource = OVERLAP_SOURCE_DIR;

ScenarioOptions options() {
  ScenarioOptions o;
  o.hardware_dir = kSource + "/scenarios/hardware";
  return o;
}

Scenario load(const std::string& rel, std::vector<std::string> sets = {}) {
  ScenarioOptions o = options();
  o.sets = std::move(sets);
  o.validate_sweep = false;
  return load_scenario_file(kSource + "/" + rel, o);
}

SchemeResult run_one(const Scenario& sc, const std::string& scheme, const nlohmann::json& params = nlohmann::json::object()) {
  const auto r = evaluate_all({SchemeRequest{scheme, params}}, sc.workload, sc.hardware, sc.fidelity);
  REQUIRE(r.size() == 1);
  return r.front();
}

}  // namespace

TEST_CASE("per-collective figures follow nccl-tests' definitions", "[papers][collectives]") {
  const Scenario sc = load("scenarios/llama3-70b-tp8-mlp.yaml");
  const SchemeResult r = run_one(sc, "no_overlap");
  // The MLP block: one all-gather, one reduce-scatter, of the 8192 x 8192 bf16 activation.
  REQUIRE(r.collectives.size() == 2);
  const Bytes s = 8192LL * 8192 * 2;
  CHECK(r.collectives[0].primitive == "all_gather");
  CHECK(r.collectives[1].primitive == "reduce_scatter");
  for (const CollectiveFigure& c : r.collectives) {
    INFO(c.name);
    CHECK(c.bytes == s);
    CHECK(c.ranks == 8);
    CHECK(c.time_ps == c.end_ps - c.start_ps);
    CHECK(c.time_ps > 0);
    CHECK(c.algbw_gbps == Approx(static_cast<double>(s) * 1000.0 / static_cast<double>(c.time_ps)));
    CHECK(c.busbw_gbps == Approx(c.algbw_gbps * 7.0 / 8.0));  // (n-1)/n for AG and RS
    CHECK(!c.algorithm.empty());
    CHECK(c.channels > 0);
  }
  // Alone on an idle node (no overlap), a collective takes what the collective model says it takes.
  CHECK(r.collectives[1].time_ps <= r.comm_ps);
  const nlohmann::json j = to_json(r);
  REQUIRE(j["collectives"].size() == 2);
  for (const char* key : {"name", "primitive", "bytes", "ranks", "time_us", "algbw_gbps", "busbw_gbps", "algorithm",
                          "protocol", "channels"})
    CHECK(j["collectives"][0].contains(key));
  // The table shows them grouped per scheme and size.
  const std::string table = format_table(report_context(sc), {r});
  CHECK_THAT(table, Catch::Contains("collectives (as nccl-tests reports them") && Catch::Contains("reduce_scatter"));
  // All-reduce: busbw = algbw x 2(n-1)/n.
  const Scenario ar = load("scenarios/papers/flashoverlap-a800-allreduce.yaml");
  const SchemeResult a = run_one(ar, "no_overlap");
  REQUIRE(a.collectives.size() == 1);
  CHECK(a.collectives[0].busbw_gbps == Approx(a.collectives[0].algbw_gbps * 2.0 * 3.0 / 4.0));
}

TEST_CASE("gather_input: false leaves only the reduce-scatter to communicate", "[papers][workload]") {
  const Scenario with = load("scenarios/papers/commfuse-table1-mlp.yaml", {"workload.gather_input=true"});
  const Scenario without = load("scenarios/papers/commfuse-table1-mlp.yaml");
  const auto& m = std::get<MlpTpSp>(without.workload.shape);
  CHECK_FALSE(m.gather_input);
  CHECK(mlp_shapes(m, 4).all_gather_bytes == 0);
  CHECK(mlp_shapes(std::get<MlpTpSp>(with.workload.shape), 4).all_gather_bytes > 0);
  // The workload's communication is the reduce-scatter alone: half of what it is with the gather.
  const Ps comm_without = workload_comm_ps(without.workload, without.hardware, without.fidelity);
  const Ps comm_with = workload_comm_ps(with.workload, with.hardware, with.fidelity);
  CHECK(comm_without < comm_with);
  for (const char* scheme : {"no_overlap", "data_slicing", "commfuse", "async_tp"}) {
    INFO(scheme);
    const SchemeResult r = run_one(without, scheme);  // byte accounting checked inside evaluate
    for (const CollectiveFigure& c : r.collectives) CHECK(c.primitive != "all_gather");
  }
  // The attention workload takes the key too, and the report names it when it is off.
  const Scenario att = load("scenarios/papers/commfuse-table4-attention.yaml");
  CHECK_FALSE(std::get<AttentionTpSp>(att.workload.shape).gather_input);
  CHECK(attention_shapes(std::get<AttentionTpSp>(att.workload.shape), 4).all_gather_bytes == 0);
  CHECK_THAT(describe_workload(att.workload), Catch::Contains("gather_input=false"));
  // A wrong type is an input error naming the key.
  CHECK_THROWS_AS(load("scenarios/papers/commfuse-table1-mlp.yaml", {"workload.gather_input=maybe"}), InputError);
}

TEST_CASE("CommFuse Table 1: FuseRS over the whole MLP hides the reduce-scatter, slicing leaves its last slice",
          "[papers][commfuse]") {
  const Scenario sc = load("scenarios/papers/commfuse-table1-mlp.yaml");
  const SchemeResult base = run_one(sc, "no_overlap");
  const SchemeResult fuse = run_one(sc, "commfuse", {{"m", 1}, {"schedule", "ring"}});
  const SchemeResult layer = run_one(sc, "data_slicing", {{"chunks", 8}, {"order", "layer"}});
  const SchemeResult linear = run_one(sc, "data_slicing", {{"chunks", 8}, {"order", "linear"}});
  // The testbed is fitted on the baseline row: compute 78.5 ms and 43.8 ms of communication.
  CHECK(static_cast<double>(base.compute_only_ps) / 1e9 == Approx(78.5).epsilon(0.005));
  CHECK(static_cast<double>(base.comm_ps) / 1e9 == Approx(43.8).epsilon(0.005));
  // CommFuse: each step computes the whole MLP on a slice (~19.6 ms) against a ~14.6 ms transfer, so
  // almost nothing is exposed (the paper: 0.1 ms).
  CHECK(fuse.exposed_comm_ps < base.exposed_comm_ps / 100);
  // Slicing in layer order leaves the last slice's reduce-scatter (43.8 / 8 = 5.5 ms); per linear layer
  // the reduce-scatter slices overlap only the down-projection, which is shorter than them.
  CHECK(static_cast<double>(layer.exposed_comm_ps) / 1e9 == Approx(43.8 / 8).epsilon(0.05));
  CHECK(linear.exposed_comm_ps > layer.exposed_comm_ps);
}

TEST_CASE("data_slicing order is checked", "[papers][workload]") {
  const Scenario sc = load("scenarios/papers/commfuse-table1-mlp.yaml");
  const auto* info = find_scheme("data_slicing");
  REQUIRE(info);
  const nlohmann::json bad = {{"order", "diagonal"}};
  const BuildContext ctx{sc.workload, sc.hardware, bad, sc.fidelity};
  CHECK_THROWS_WITH(info->build(ctx), Catch::Contains("params.order"));
}

TEST_CASE("the report names the hardware by its profile name, not the path", "[papers][report]") {
  const Scenario sc = load("scenarios/papers/commfuse-table1-mlp.yaml");
  CHECK(sc.hardware_name == "hardware/commfuse-testbed-fit.yaml");  // how the scenario reached it
  CHECK(report_context(sc).hardware == "commfuse-testbed-fit");
  CHECK(hardware_display_name(sc) == "commfuse-testbed-fit");
}

TEST_CASE("the trace records the scheme's parameters with their defaults", "[papers][cli]") {
  const fs::path trace = fs::temp_directory_path() / ("overlap-papers-trace-" + std::to_string(::getpid()) + ".json");
  std::vector<std::string> args = {"overlap-sim", "run", "scenarios/papers/flashoverlap-rtx4090-sec412-shape.yaml",
                                   "--scheme", "flashoverlap", "--trace", trace.string()};
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  REQUIRE(overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err) == 0);
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  fs::remove(trace);
  const auto& other = j["otherData"];
  CHECK(other["scheme"] == "flashoverlap");
  CHECK(other["hardware"] == "rtx4090-4x-pcie");
  // Given: groups auto; defaults filled in: wave_sms, epilogue_overhead, sm_margin, ...
  CHECK(other["params"]["groups"] == "auto");
  for (const char* key : {"wave_sms", "epilogue_overhead", "rmsnorm_overhead", "sm_margin"}) CHECK(other["params"].contains(key));
}
