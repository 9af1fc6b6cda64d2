// calibrate/core: statistics, the calibration plan and the scheme configuration lists (host C++,
// no GPU). Closed-form cases: every expected value below follows from the definition in the header.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/core/calibration_plan.hpp"
#include "calibrate/core/measurement.hpp"
#include "calibrate/core/run_spec.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "calibrate/core/statistics.hpp"
#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"
#include "sim/schemes/decode_plan.hpp"

using namespace overlap::calibrate;
using nlohmann::json;

TEST_CASE("summarize: median, min, max, mean and spread of repeated timings", "[calibrate]") {
  const SampleStats odd = summarize({5.0, 1.0, 3.0});
  CHECK(odd.count == 3);
  CHECK(odd.median == 3.0);
  CHECK(odd.min == 1.0);
  CHECK(odd.max == 5.0);
  CHECK(odd.mean == 3.0);
  CHECK(odd.spread == 5.0);
  // Even count: the mean of the two middle samples.
  CHECK(summarize({4.0, 1.0, 2.0, 10.0}).median == 3.0);
  CHECK(summarize({2.5}).spread == 1.0);
}

TEST_CASE("summarize rejects what no timer can produce", "[calibrate]") {
  CHECK_THROWS_AS(summarize({}), std::invalid_argument);
  CHECK_THROWS_AS(summarize({1.0, 0.0}), std::invalid_argument);
  CHECK_THROWS_AS(summarize({1.0, -2.0}), std::invalid_argument);
  CHECK_THROWS_AS(summarize({1.0, std::nan("")}), std::invalid_argument);
}

TEST_CASE("gemm_tile_shape: every big-tile count is a whole number of waves", "[calibrate]") {
  for (int sms : {132, 114, 108, 80, 170}) {
    const GemmConfig g = gemm_tile_shape(sms, 8192);
    for (auto [tm, tn] : {std::pair{128, 128}, std::pair{256, 128}, std::pair{128, 256}, std::pair{256, 256}}) {
      INFO("sms " << sms << " tile " << tm << "x" << tn);
      CHECK(g.m % tm == 0);
      CHECK(g.n % tn == 0);
      CHECK(((g.m / tm) * (g.n / tn)) % sms == 0);
    }
  }
  const GemmConfig h100 = gemm_tile_shape(132, 4096);  // 132 = 11 x 12
  CHECK(h100.m == 256 * 11);
  CHECK(h100.n == 256 * 12);
}

TEST_CASE("gemm_tile_us_from: duration x SMs per 128x128x1024 tile-equivalent", "[calibrate]") {
  // 2816 x 3072 x 8192 has 22 x 24 x 8 = 4224 tile-equivalents; on 132 SMs that is 32 per SM.
  CHECK(gemm_tile_us_from(32.0, 2816, 3072, 8192, 132) == Approx(1.0));
  CHECK_THROWS_AS(gemm_tile_us_from(0.0, 128, 128, 1024, 1), std::invalid_argument);
}

TEST_CASE("calibration plan: SM partitions, transfer sizes, bus-bandwidth factors, names", "[calibrate]") {
  const auto k = sm_partition_counts(132, 8);
  REQUIRE(k.size() == 17);  // 8, 16, ..., 128, then 132
  CHECK(k.front() == 8);
  CHECK(k[15] == 128);
  CHECK(k.back() == 132);
  CHECK(sm_partition_counts(16, 8) == std::vector<int>{8, 16});
  const auto sizes = transfer_sizes();
  CHECK(sizes.size() == 21);
  CHECK(sizes.front() == 1024);
  CHECK(sizes.back() == (1LL << 30));
  CHECK(busbw_factor("all_reduce", 8) == Approx(1.75));
  CHECK(busbw_factor("reduce_scatter", 8) == Approx(0.875));
  CHECK(busbw_factor("all_to_all", 2) == Approx(0.5));
  CHECK_THROWS_AS(busbw_factor("broadcastish", 8), std::invalid_argument);
  CHECK(results_dir_name("NVIDIA H100 80GB HBM3", "node 7") == "nvidia-h100-80gb-hbm3-node-7");
  CHECK(results_dir_name("  ", "") == "unknown");
  const auto waves = gemm_wave_shapes(132);
  CHECK(waves.back().m / 128 * 16 >= 3 * 132);  // the sweep crosses three waves of 128x128 tiles
}

namespace {

json config_list(json run) {
  return json{{"schema", "overlap-scheme-configs/1"}, {"runs", json::array({run})}};
}

json ar_run() {
  return json{{"id", "a"},
              {"scheme", "flashoverlap"},
              {"params", {{"groups", {16, 48}}, {"wave_sms", 32}}},
              {"workload",
               {{"kind", "gemm_collective"}, {"tp", 4}, {"m", 4096}, {"n", 8192}, {"k", 2048}, {"primitive", "all_reduce"}}}};
}

std::string error_key(const json& doc) {
  try {
    parse_scheme_config_list(doc, "cfg.json");
  } catch (const overlap::InputError& e) {
    CHECK(e.file() == "cfg.json");
    return e.key_path();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("calibration plan: the training step's GEMMs are each linear's forward, dgrad and wgrad", "[calibrate]") {
  using overlap::calibrate::training_gemms;
  const auto gemms = training_gemms();
  REQUIRE(gemms.size() == 20);  // 4 linears x (forward, dgrad nt + nn, wgrad tn + nn)
  for (std::size_t i = 0; i < gemms.size(); i += 5) {
    const auto& f = gemms[i].shape;
    CHECK(gemms[i].layout == "nn");
    CHECK(f.m == 8192);  // the gathered tokens
    // dgrad M x K x N of the forward's M x N x K, in the step's nt and again in nn.
    for (std::size_t j : {i + 1, i + 2}) {
      const auto& d = gemms[j].shape;
      CHECK((d.m == f.m && d.n == f.k && d.k == f.n));
    }
    CHECK(gemms[i + 1].layout == "nt");
    CHECK(gemms[i + 2].layout == "nn");
    // wgrad K x N x M: the tokens become the reduction dimension, in tn and again in nn.
    for (std::size_t j : {i + 3, i + 4}) {
      const auto& w = gemms[j].shape;
      CHECK((w.m == f.k && w.n == f.n && w.k == f.m));
    }
    CHECK(gemms[i + 3].layout == "tn");
    CHECK(gemms[i + 4].layout == "nn");
    // Together dgrad and wgrad are twice the forward's FLOPs (Narayanan et al. Sec. 5.1).
    CHECK(gemms[i + 1].shape.m * gemms[i + 1].shape.n * gemms[i + 1].shape.k + gemms[i + 3].shape.m * gemms[i + 3].shape.n * gemms[i + 3].shape.k ==
          2 * f.m * f.n * f.k);
  }
  // Llama-3-70B at TP 8: qkv (64 + 2 x 8) x 128 / 8 wide, fc1 the gate and up halves of 28672 / 8.
  CHECK(gemms[0].shape.n == 1280);
  CHECK(gemms[10].shape.n == 7168);
  CHECK(gemms[15].shape.k == 3584);
}

TEST_CASE("zipf_rows: Zipf proportions rounded to whole rows that sum to the total", "[calibrate]") {
  using overlap::calibrate::zipf_rows;
  CHECK(zipf_rows(64, 4, 0.0) == std::vector<std::int64_t>{16, 16, 16, 16});
  CHECK(zipf_rows(10, 4, 0.0) == std::vector<std::int64_t>{3, 3, 2, 2});  // remainders to the lower experts
  // s = 1: shares 1, 1/2, 1/3 of 11/6: 600, 300, 200 of 1100 exactly.
  CHECK(zipf_rows(1100, 3, 1.0) == std::vector<std::int64_t>{600, 300, 200});
  for (double s : {0.0, 0.5, 1.0, 1.5, 3.0}) {
    for (std::int64_t total : {0LL, 1LL, 7LL, 2048LL, 65536LL}) {
      const auto rows = zipf_rows(total, 16, s);
      REQUIRE(rows.size() == 16);
      CHECK(std::accumulate(rows.begin(), rows.end(), std::int64_t{0}) == total);
      CHECK(std::is_sorted(rows.rbegin(), rows.rend()));  // never increasing with the expert
      CHECK(rows.back() >= 0);
    }
  }
  CHECK_THROWS_AS(zipf_rows(-1, 4, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(zipf_rows(8, 0, 1.0), std::invalid_argument);
  CHECK_THROWS_AS(zipf_rows(8, 4, -0.5), std::invalid_argument);
  CHECK_THROWS_AS(zipf_rows(8, 4, std::nan("")), std::invalid_argument);
}

TEST_CASE("calibration plan: the expert GEMM cases are the MoE scenarios' per-rank GEMMs", "[calibrate]") {
  const auto cases = overlap::calibrate::grouped_gemm_cases();
  REQUIRE(!cases.empty());
  for (const auto& c : cases) {
    INFO(c.name);
    CHECK(c.n > 0);
    CHECK(c.k > 0);
    REQUIRE(!c.rows.empty());
    // Uniform: tokens x top_k x ep / experts on every local expert.
    if (c.name.find("uniform") != std::string::npos)
      CHECK(std::adjacent_find(c.rows.begin(), c.rows.end(), std::not_equal_to<>()) == c.rows.end());
  }
  // Qwen3-235B EP 8: 16 local experts of 8192 x 8 x 8 / 128 = 4096 rows; DeepSeek-V3 EP 64: 4 of
  // 4096 x 8 x 64 / 256 = 8192.
  CHECK(cases[0].rows == std::vector<std::int64_t>(16, 4096));
  CHECK(cases[2].rows == std::vector<std::int64_t>(4, 8192));
  // The skewed case routes the same rows as the uniform one.
  CHECK(std::accumulate(cases[4].rows.begin(), cases[4].rows.end(), std::int64_t{0}) == 16 * 4096);
}

TEST_CASE("scheme configuration list: a valid run parses into the runner's shape", "[calibrate]") {
  const SchemeConfigList list = parse_scheme_config_list(config_list(ar_run()), "cfg.json");
  REQUIRE(list.runs.size() == 1);
  const SchemeRunConfig& c = list.runs[0];
  CHECK(c.ranks == 4);
  CHECK(c.m == 4096);
  CHECK(c.primitive == "all_reduce");
  CHECK(c.link == "d2d");
  CHECK(c.workload["tp"] == 4);  // kept verbatim for the simulator
  CHECK(list.repetitions == 20);
}

TEST_CASE("scheme configuration list: bad input names the file and key", "[calibrate]") {
  json r = ar_run();
  r["scheme"] = "magic";
  CHECK(error_key(config_list(r)) == "runs[0].scheme");
  r = ar_run();
  r["params"]["groups"] = {16, 16};  // 32 waves, the GEMM has 2048 tiles / 32 = 64
  CHECK(error_key(config_list(r)) == "runs[0].params.groups");
  r = ar_run();
  r["workload"]["n"] = 8000;
  CHECK(error_key(config_list(r)) == "runs[0].workload.n");
  r = ar_run();
  r["scheme"] = "async_tp";  // all_reduce is not decomposed by async TP
  r["params"] = json::object();
  CHECK(error_key(config_list(r)) == "runs[0].scheme");
  r = ar_run();
  r["scheme"] = "data_slicing";
  r["params"] = {{"chunks", 64}};  // 4096 rows do not make 64 chunks of 128-row multiples
  CHECK(error_key(config_list(r)) == "runs[0].params.chunks");
  r = ar_run();
  r["scheme"] = "commfuse";
  r["workload"]["primitive"] = "reduce_scatter";
  r["params"] = {{"m", 1}, {"schedule", "pairwise"}, {"transport", "copy_engine"}};
  CHECK(error_key(config_list(r)) == "(no error)");
  r["params"]["transport"] = "nccl";  // a real node's (the runner checks it against the node)
  CHECK(error_key(config_list(r)) == "(no error)");
  r["params"]["transport"] = "sm";
  CHECK(error_key(config_list(r)) == "runs[0].params.transport");
  r = ar_run();
  r["colour"] = "blue";
  CHECK(error_key(config_list(r)) == "runs[0].colour");
  json two = config_list(ar_run());
  two["runs"].push_back(ar_run());
  CHECK(error_key(two) == "runs[1].id");
  r = ar_run();
  r["scheme"] = "dtp";
  CHECK(error_key(config_list(r)) == "runs[0].scheme");  // decode schemes need decode_stack
}

TEST_CASE("scheme configuration list: an error names the line of its key in the file's text", "[calibrate]") {
  json r = ar_run();
  r["params"]["wave_sms"] = -32;
  const json doc = config_list(r);
  const std::string text = doc.dump(2);  // one member a line
  const auto at = text.find("\"wave_sms\": -32");
  REQUIRE(at != std::string::npos);
  const int line = 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  try {
    parse_scheme_config_list(doc, "cfg.json", std::make_shared<const std::string>(text));
    FAIL("wave_sms -32 should be refused");
  } catch (const overlap::InputError& e) {
    CHECK(e.key_path() == "runs[0].params.wave_sms");
    CHECK(e.line() == line);
    CHECK(line > 5);
  }
  // A missing key: the line of the object that should hold it.
  r = ar_run();
  r.erase("workload");
  const std::string no_workload = config_list(r).dump(2);
  try {
    parse_scheme_config_list(config_list(r), "cfg.json", std::make_shared<const std::string>(no_workload));
    FAIL("a run without a workload should be refused");
  } catch (const overlap::InputError& e) {
    CHECK(e.key_path() == "runs[0].workload");
    const auto open = no_workload.find("\"runs\": [") ;
    REQUIRE(open != std::string::npos);
    // runs[0] opens on the line after "runs": [.
    CHECK(e.line() == 2 + static_cast<int>(std::count(no_workload.begin(), no_workload.begin() + static_cast<std::ptrdiff_t>(open), '\n')));
  }
}

TEST_CASE("scheme configuration list: FlashOverlap waves are wave_sms x ctas_per_sm tiles", "[calibrate]") {
  // 2048 tiles of 128x128; 32 SMs x 2 CTAs = 64 tiles a wave, so 32 waves.
  json r = ar_run();
  r["params"] = {{"groups", {8, 24}}, {"wave_sms", 32}, {"ctas_per_sm", 2}};
  CHECK(parse_scheme_config_list(config_list(r), "cfg.json").runs[0].params["ctas_per_sm"] == 2);
  r["params"]["groups"] = {16, 48};  // 64 waves: right for one CTA per SM, not for two
  CHECK(error_key(config_list(r)) == "runs[0].params.groups");
  r["params"]["ctas_per_sm"] = 3;
  CHECK(error_key(config_list(r)) == "runs[0].params.ctas_per_sm");
  r = ar_run();  // no ctas_per_sm: one per SM, as results written before it existed
  CHECK(parse_scheme_config_list(config_list(r), "cfg.json").runs.size() == 1);
}

TEST_CASE("the committed scheme sweep list is valid", "[calibrate]") {
  const std::string root = OVERLAP_SOURCE_DIR;
  for (const char* f : {"/calibrate/configs/schemes_virtual.json", "/calibrate/configs/schemes_nodes.json"}) {
    INFO(f);
    const SchemeConfigList list = load_scheme_config_list(root + f);
    CHECK(!list.runs.empty());
    for (const auto& s : runnable_schemes()) {
      if (std::string(f).find("virtual") == std::string::npos) break;
      INFO("scheme " << s);
      CHECK(std::any_of(list.runs.begin(), list.runs.end(), [&](const SchemeRunConfig& c) { return c.scheme == s; }));
    }
  }
}

namespace {

void same_plan(const overlap::sim::DecodePlan& a, const overlap::sim::DecodePlan& b) {
  REQUIRE(a.modules.size() == b.modules.size());
  for (std::size_t i = 0; i < a.modules.size(); ++i) {
    INFO("module " << i);
    CHECK(a.modules[i].kind == b.modules[i].kind);
    CHECK(a.modules[i].all_reduce == b.modules[i].all_reduce);
    CHECK(a.modules[i].waits_for == b.modules[i].waits_for);
  }
  CHECK(a.final_waits == b.final_waits);
  CHECK(a.comm_streams == b.comm_streams);
}

}  // namespace

TEST_CASE("the kernels run the simulator's decode plan of each scheme", "[calibrate]") {
  namespace sim = overlap::sim;
  for (int layers : {1, 2, 3, 8}) {
    INFO("layers " << layers);
    same_plan(decode_plan_of("tp_baseline", layers, 0), sim::tp_baseline_plan(layers));
    same_plan(decode_plan_of("no_overlap", layers, 0), sim::tp_baseline_plan(layers));
    same_plan(decode_plan_of("gptj_parallel", layers, 0), sim::gptj_parallel_plan(layers));
    same_plan(decode_plan_of("ladder_residual", layers, 0), sim::ladder_residual_plan(layers));
    same_plan(decode_plan_of("no_comm", layers, 0), sim::no_comm_plan(layers));
    for (int t = 1; t <= layers; ++t) same_plan(decode_plan_of("pt_transformer", layers, t), sim::pt_transformer_plan(layers, t));
    for (int d = 1; d <= 2 * layers; ++d) same_plan(decode_plan_of("dtp", layers, d), sim::dtp_plan(layers, d));
  }
  // dtp with delta 2 on one layer: two modules, neither all-reduces, three streams.
  const sim::DecodePlan p = decode_plan_of("dtp", 1, 2);
  CHECK(p.modules.size() == 2);
  CHECK(!p.modules[0].all_reduce);
  CHECK(p.comm_streams == 3);
  CHECK_THROWS_AS(decode_plan_of("dtp", 2, 5), std::invalid_argument);
  CHECK_THROWS_AS(decode_plan_of("flashoverlap", 2, 0), std::invalid_argument);
}

TEST_CASE("a configuration becomes the run the kernels execute", "[calibrate]") {
  using overlap::cuda::RunKind;
  SECTION("gemm_collective: the parameters given, the simulator's defaults for the rest") {
    const auto spec = run_spec_of(parse_scheme_config_list(config_list(ar_run()), "cfg.json").runs[0]);
    CHECK(spec.kind == RunKind::gemm_collective);
    CHECK(spec.scheme == "flashoverlap");
    CHECK(spec.ranks == 4);
    CHECK((spec.m == 4096 && spec.n == 8192 && spec.k == 2048));
    CHECK(spec.primitive == "all_reduce");
    CHECK(spec.groups == std::vector<int>{16, 48});
    CHECK(spec.wave_sms == 32);
    CHECK(spec.ctas_per_sm == 1);
    CHECK(spec.chunks == 4);
    CHECK(spec.schedule == "ring");
    CHECK(spec.transport.empty());  // the node's own
    CHECK(spec.plan.modules.empty());
  }
  SECTION("decode_stack: the shapes and the plan with its parameter") {
    json r{{"id", "d"},
           {"scheme", "dtp"},
           {"params", {{"delta", 3}}},
           {"workload",
            {{"kind", "decode_stack"}, {"tp", 4}, {"layers", 2}, {"d_model", 4096}, {"d_ffn", 14336},
             {"heads", 32}, {"kv_heads", 8}}}};
    const auto spec = run_spec_of(parse_scheme_config_list(config_list(r), "cfg.json").runs[0]);
    CHECK(spec.kind == RunKind::decode_stack);
    CHECK(spec.layers == 2);
    CHECK((spec.d_model == 4096 && spec.d_ffn == 14336 && spec.heads == 32 && spec.kv_heads == 8));
    same_plan(spec.plan, overlap::sim::dtp_plan(2, 3));
  }
}

TEST_CASE("scheme run results round-trip, the host enqueue time optional", "[calibrate]") {
  SchemeRunSet set;
  SchemeRunResult r;
  r.config = parse_scheme_config_list(config_list(ar_run()), "cfg.json").runs[0];
  r.rel_error = 0.002;
  r.tolerance = 0.02;
  r.passed = true;
  r.latency_us = overlap::calibrate::summarize({100.0, 101.0, 102.0});
  r.compute_only_us = overlap::calibrate::summarize({80.0, 81.0, 82.0});
  r.host_enqueue_us = 42.5;
  set.runs.push_back(r);
  r.host_enqueue_us = 0;  // not recorded
  r.config.id = "b";
  set.runs.push_back(r);
  const json doc = scheme_runs_document(set);
  CHECK(doc["runs"][0]["host_enqueue_us"] == 42.5);
  CHECK_FALSE(doc["runs"][1].contains("host_enqueue_us"));
  const SchemeRunSet back = parse_scheme_runs(doc, "runs.json");
  REQUIRE(back.runs.size() == 2);
  CHECK(back.runs[0].host_enqueue_us == 42.5);
  CHECK(back.runs[1].host_enqueue_us == 0);
  CHECK(back.runs[0].latency_us.median == 101.0);
  json bad = doc;
  bad["runs"][0]["host_enqueue_us"] = -1;
  try {
    parse_scheme_runs(bad, "runs.json");
    FAIL("a negative host time was accepted");
  } catch (const overlap::InputError& e) {
    CHECK(e.key_path() == "runs[0].host_enqueue_us");
  }
}

TEST_CASE("a measurement directory is written by the one atomic writer", "[calibrate]") {
  namespace fs = std::filesystem;
  const fs::path tmp = fs::temp_directory_path() / ("overlap-calibrate-writer-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  MeasurementSet set;
  set.environment = {{"gpu_name", "test"}, {"sm_count", 132}};
  Measurement m;
  m.benchmark = bench::gemm;
  m.config = {{"m", 1024}, {"n", 1024}, {"k", 1024}, {"dtype", "bf16"}};
  m.time_us = summarize({10.0, 11.0, 12.0});
  set.measurements.push_back(m);
  auto read = [](const fs::path& f) {
    std::ifstream in(f);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  SECTION("a directory that does not exist yet is created") {
    write_measurement_dir((tmp / "new" / "sub").string(), set);
    const MeasurementSet back = load_measurement_dir((tmp / "new" / "sub").string());
    REQUIRE(back.measurements.size() == 1);
    CHECK(back.measurements[0].time_us.median == 11.0);
    CHECK(back.environment["sm_count"] == 132);
  }
  SECTION("a symbolic link is followed and stays a link") {
    fs::create_directories(tmp / "linked");
    std::ofstream(tmp / "real.json") << "old\n";
    fs::create_symlink(tmp / "real.json", tmp / "linked" / "measurements.json");
    write_measurement_dir((tmp / "linked").string(), set);
    CHECK(fs::is_symlink(tmp / "linked" / "measurements.json"));
    CHECK(read(tmp / "real.json") == measurements_document(set).dump(2) + "\n");
  }
  SECTION("a directory where the file goes is refused, naming it") {
    fs::create_directories(tmp / "blocked" / "measurements.json");
    try {
      write_measurement_dir((tmp / "blocked").string(), set);
      FAIL("no OutputError");
    } catch (const overlap::OutputError& e) {
      CHECK(std::string(e.what()).find((tmp / "blocked" / "measurements.json").string()) != std::string::npos);
    }
  }
  fs::remove_all(tmp);
}
