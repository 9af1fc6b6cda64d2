// overlap-sim validate on the FIXTURE results directory (tests/data/calibrate/fixture-h100: made-up
// numbers in the real format), and the CI check that every committed results directory stays within
// the error recorded beside it.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "calibrate/core/measurement.hpp"
#include "calibrate/core/scheme_config.hpp"
#include "calibrate/validate/validate.hpp"
#include "cost_model/gemm_model.hpp"
#include "cost_model/profile_loader.hpp"
#include "tools/cli.hpp"
#include "sim/engine.hpp"
#include "sim/node_builder.hpp"
#include "sim/task_graph.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kFixture = std::string(OVERLAP_SOURCE_DIR) + "/tests/data/calibrate/fixture-h100";

const overlap::calibrate::ValidationGroup* group(const overlap::calibrate::ValidationReport& r, const std::string& name) {
  for (const auto& g : r.groups) {
    if (g.benchmark == name) return &g;
  }
  return nullptr;
}

int cli(const std::vector<std::string>& args, std::string* out_text = nullptr) {
  std::vector<const char*> argv = {"overlap-sim"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int rc = overlap::tools::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
  if (out_text) *out_text = out.str() + err.str();
  return rc;
}

// The margin by which a results directory's median error may exceed the figure recorded beside it
// (numerical noise from a changed interpolation, not a worse model).
constexpr double kMarginPct = 0.5;

void check_against_record(const std::string& dir) {
  const fs::path rec = fs::path(dir) / "validation.json";
  REQUIRE(fs::exists(rec));
  std::ifstream in(rec);
  const json recorded = json::parse(in);
  const overlap::calibrate::ValidationReport rep = overlap::calibrate::validate_dir(dir);
  const json now = overlap::calibrate::recorded_figures(rep);
  for (const auto& [bench, figure] : recorded["median_abs_error_pct"].items()) {
    INFO(dir << ": " << bench << " median |error| now " << now["median_abs_error_pct"].value(bench, -1.0) << " %, recorded "
             << figure.get<double>() << " %");
    REQUIRE(now["median_abs_error_pct"].contains(bench));
    CHECK(now["median_abs_error_pct"][bench].get<double>() <= figure.get<double>() + kMarginPct);
  }
}

// validate_dir on a copy of the fixture whose measurements document `patch` edits.
overlap::calibrate::ValidationReport validate_patched_document(const std::string& name, const std::function<void(json&)>& patch) {
  const fs::path tmp = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixture, tmp, fs::copy_options::recursive);
  std::ifstream in(tmp / "measurements.json");
  json doc = json::parse(in);
  in.close();
  patch(doc);
  std::ofstream(tmp / "measurements.json") << doc.dump(2);
  auto rep = overlap::calibrate::validate_dir(tmp.string());
  fs::remove_all(tmp);
  return rep;
}

// The same, `patch` called once per measurement.
overlap::calibrate::ValidationReport validate_patched_fixture(const std::string& name, const std::function<void(json&)>& patch) {
  return validate_patched_document(name, [&](json& doc) {
    for (auto& m : doc["measurements"]) patch(m);
  });
}

}  // namespace

TEST_CASE("validate: GEMMs on k SMs are the engine's waves of the calibrated CTA time", "[calibrate][validate]") {
  const auto rep = overlap::calibrate::validate_dir(kFixture);
  CHECK(rep.fixture);
  const auto* g = group(rep, "gemm_sm");
  REQUIRE(g != nullptr);
  const overlap::HardwareProfile p = overlap::load_profile_file(kFixture + "/profile.yaml");
  const overlap::GemmShape s{8192, 8192, 4096, overlap::DType::bf16};
  const overlap::GemmPlan plan = overlap::plan_gemm(p, s);
  REQUIRE(plan.calibrated);
  for (const auto& r : g->rows) {
    if (r.config.rfind("8192x8192x4096 bf16 on ", 0) != 0) continue;
    const int k = std::stoi(r.config.substr(23));
    INFO(r.config);
    // Independent closed form: ceil(tiles / k) waves of one CTA each.
    CHECK(r.predicted_us == Approx(overlap::us_from_ps(plan.waves(k) * plan.cta_ps)));
    CHECK(r.fitted == (k == p.gpu.sm_count));
  }
}

TEST_CASE("validate: fitted rows are shown but not scored, errors are signed percentages", "[calibrate][validate]") {
  const auto rep = overlap::calibrate::validate_dir(kFixture);
  const auto* whole = group(rep, "gemm");
  REQUIRE(whole != nullptr);
  CHECK(whole->scored == 0);  // every whole-GPU GEMM is in the profile's gemm_profiles
  // Agree by construction, up to the per-CTA time divided into whole picoseconds.
  for (const auto& r : whole->rows) CHECK(std::fabs(r.error_pct) < 1e-3);
  const auto* tr = group(rep, "transfer");
  REQUIRE(tr != nullptr);
  int fitted = 0;
  for (const auto& r : tr->rows) {
    fitted += r.fitted;
    CHECK(r.error_pct == Approx(100.0 * (r.predicted_us - r.measured_us) / r.measured_us));
  }
  CHECK(fitted == 36);          // 11 curve sizes x 3 copy-engine paths + the SM copy's 3 sizes
  CHECK(tr->scored == 30);      // the 10 sizes between them, per path
  int all = 0;
  for (const auto& gr : rep.groups) all += gr.scored;
  CHECK(rep.scored == all);
  CHECK(rep.median_abs_error_pct > 0);
  CHECK(rep.max_abs_error_pct >= rep.median_abs_error_pct);
}

TEST_CASE("validate: scheme runs and the FlashOverlap partition check", "[calibrate][validate]") {
  const auto rep = overlap::calibrate::validate_dir(kFixture);
  const auto* s = group(rep, "schemes");
  REQUIRE(s != nullptr);
  CHECK(s->rows.size() == 7);
  CHECK(rep.skipped.empty());
  // Exposed communication per run: measured = latency - compute-only of the run (the fixture's
  // schemes.json), predicted = the simulator's; the group's median |error| over those runs.
  const auto runs = overlap::calibrate::load_scheme_runs(kFixture + "/schemes/schemes.json");
  std::vector<double> abs_us;
  for (const auto& row : s->rows) {
    REQUIRE(row.exposed_measured_us.has_value());
    REQUIRE(row.exposed_predicted_us.has_value());
    const auto run = std::find_if(runs.runs.begin(), runs.runs.end(),
                                  [&](const auto& r) { return row.config.rfind(r.config.id + " ", 0) == 0; });
    REQUIRE(run != runs.runs.end());
    CHECK(*row.exposed_measured_us == Approx(run->latency_us.median - run->compute_only_us.median));
    CHECK(*row.exposed_predicted_us >= 0);
    abs_us.push_back(std::fabs(*row.exposed_predicted_us - *row.exposed_measured_us));
  }
  CHECK(s->exposed_rows == 7);
  std::sort(abs_us.begin(), abs_us.end());
  CHECK(s->exposed_median_abs_error_us == Approx(abs_us[3]));
  const auto j = overlap::calibrate::to_json(rep);
  for (const auto& g : j["groups"]) {
    if (g["benchmark"] != "schemes") {
      CHECK_FALSE(g.contains("exposed_comm"));  // the benchmarks have no exposed communication
      continue;
    }
    CHECK(g["exposed_comm"]["rows"] == 7);
    CHECK(g["rows"][0]["exposed_comm_error_us"].get<double>() ==
          Approx(g["rows"][0]["exposed_comm_predicted_us"].get<double>() - g["rows"][0]["exposed_comm_measured_us"].get<double>()));
  }
  REQUIRE(rep.partitions.size() == 1);
  const auto& pc = rep.partitions[0];
  CHECK(pc.measured_best == "[8,16,40]");   // the fixture's fastest candidate
  CHECK(pc.measured_best_us == Approx(520.0));
  CHECK(pc.regret_pct == Approx(100.0 * (pc.simulated_pick_measured_us / 520.0 - 1.0)));
  // FlashOverlap's own predictor ranks the same candidates (the fixture profile has an all_reduce.n4
  // curve); its pick is one of them, with that candidate's measured latency.
  REQUIRE_FALSE(pc.predictor_best.empty());
  const std::vector<std::string> candidates = {"[8,16,40]", "[32,32]", "[64]"};
  CHECK(std::find(candidates.begin(), candidates.end(), pc.predictor_best) != candidates.end());
  CHECK(pc.predictor_pick_measured_us >= pc.measured_best_us);
  // tune's own search over every partition: whole tiles that add up to the GEMM's, its latency the
  // engine's; measured only when a run had exactly that partition (in tiles: waves x 32 SMs).
  CHECK(pc.profile == "profile_virtual.yaml");
  REQUIRE_FALSE(pc.tune_best_tiles.empty());
  std::int64_t tiles = 0;
  for (auto t : pc.tune_best_tiles) tiles += t;
  CHECK(tiles == 64 * 32);
  CHECK(pc.tune_simulated_us > 0);
  const std::vector<std::vector<std::int64_t>> run_tiles = {{8 * 32, 16 * 32, 40 * 32}, {32 * 32, 32 * 32}, {64 * 32}};
  const bool was_run = std::find(run_tiles.begin(), run_tiles.end(), pc.tune_best_tiles) != run_tiles.end();
  CHECK((pc.tune_pick_measured_us > 0) == was_run);
}

TEST_CASE("validate: FlashOverlap candidates on two nodes are two partition checks", "[calibrate][validate]") {
  // The same workload over a second node (another profile) is not a candidate of the first.
  const fs::path tmp = fs::temp_directory_path() / ("overlap-validate-two-nodes-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixture, tmp, fs::copy_options::recursive);
  fs::copy_file(tmp / "schemes" / "profile_virtual.yaml", tmp / "schemes" / "profile_other.yaml");
  std::ifstream in(tmp / "schemes" / "schemes.json");
  json runs = json::parse(in);
  in.close();
  json extra = json::array();
  for (const auto& r : runs["runs"]) {
    if (r["scheme"] != "flashoverlap") continue;
    json copy = r;
    copy["id"] = r["id"].get<std::string>() + "-other";
    copy["profile"] = "profile_other.yaml";
    copy["latency_us"]["median"] = r["latency_us"]["median"].get<double>() * 3;
    copy["latency_us"]["min"] = r["latency_us"]["min"].get<double>() * 3;
    copy["latency_us"]["max"] = r["latency_us"]["max"].get<double>() * 3;
    extra.push_back(copy);
  }
  for (auto& e : extra) runs["runs"].push_back(e);
  std::ofstream(tmp / "schemes" / "schemes.json") << runs.dump(2);
  const auto rep = overlap::calibrate::validate_dir(tmp.string());
  REQUIRE(rep.partitions.size() == 2);
  for (const auto& pc : rep.partitions) {
    INFO(pc.profile);
    // Each check's best is its own node's fastest run: 520 us, or three times that on the other.
    CHECK(pc.measured_best_us == Approx(pc.profile == "profile_other.yaml" ? 1560.0 : 520.0));
  }
  fs::remove_all(tmp);
}

TEST_CASE("validate CLI: table and JSON, exit 2 on a directory that is not results", "[calibrate][validate][cli]") {
  std::string out;
  REQUIRE(cli({"validate", kFixture, "--format", "json"}, &out) == overlap::tools::kExitOk);
  const json j = json::parse(out);
  CHECK(j["fixture"] == true);
  CHECK(j.contains("median_abs_error_pct"));
  CHECK(j["groups"].size() >= 8);
  REQUIRE(cli({"validate", kFixture}, &out) == overlap::tools::kExitOk);
  CHECK(out.find("FIXTURE") != std::string::npos);
  CHECK(out.find("overall: median |error|") != std::string::npos);
  const fs::path empty = fs::temp_directory_path() / ("overlap-validate-empty-" + std::to_string(::getpid()));
  fs::create_directories(empty);
  CHECK(cli({"validate", empty.string()}, &out) == overlap::tools::kExitUsage);
  CHECK(out.find("not a results directory") != std::string::npos);
}

TEST_CASE("validate --record writes the figures the CI check holds later runs to", "[calibrate][validate]") {
  const fs::path tmp = fs::temp_directory_path() / ("overlap-validate-record-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixture, tmp, fs::copy_options::recursive);
  fs::remove(tmp / "validation.json");
  REQUIRE(cli({"validate", tmp.string(), "--record"}) == overlap::tools::kExitOk);
  check_against_record(tmp.string());
  // A worse model than recorded fails the check: record an impossibly good figure and compare.
  std::ifstream in(tmp / "validation.json");
  json rec = json::parse(in);
  in.close();
  const double all = rec["median_abs_error_pct"]["all"].get<double>();
  CHECK(all > kMarginPct);
  rec["median_abs_error_pct"]["all"] = all - 2 * kMarginPct - 0.1;
  std::ofstream(tmp / "validation.json") << rec.dump(2);
  const json now = overlap::calibrate::recorded_figures(overlap::calibrate::validate_dir(tmp.string()));
  CHECK(now["median_abs_error_pct"]["all"].get<double>() > rec["median_abs_error_pct"]["all"].get<double>() + kMarginPct);
  fs::remove_all(tmp);
}

TEST_CASE("committed results directories stay within their recorded validation error", "[calibrate][validate]") {
  // The mechanism runs on the fixture always, so it is exercised before any GPU run is committed.
  check_against_record(kFixture);
  const fs::path results = fs::path(OVERLAP_SOURCE_DIR) / "calibrate" / "results";
  int dirs = 0;
  if (fs::exists(results)) {
    for (const auto& e : fs::directory_iterator(results)) {
      if (!e.is_directory()) continue;
      ++dirs;
      INFO("results directory " << e.path());
      const bool has_measurements = fs::exists(e.path() / "measurements.json") || fs::exists(e.path() / "schemes" / "schemes.json");
      CHECK(has_measurements);
      // Fixtures never live under calibrate/results.
      if (fs::exists(e.path() / "measurements.json")) CHECK_FALSE(overlap::calibrate::load_measurement_dir(e.path().string()).fixture);
      check_against_record(e.path().string());
    }
  }
  INFO("results directories checked: " << dirs);
  SUCCEED();
}

TEST_CASE("validate: a GEMM beside a D2D copy shares HBM with it in the engine", "[calibrate][validate]") {
  // The fixture's rows predate copy_bytes: give the D2D row a copy of `bytes` and validate.
  auto predicted = [&](double bytes, double* alone) {
    const auto rep = validate_patched_fixture("overlap-validate-ce", [bytes](json& m) {
      if (m["benchmark"] != "interference_copy_engine" || m["config"]["direction"] != "d2d") return;
      if (bytes > 0) m["config"]["copy_bytes"] = bytes;
      else m["config"].erase("copy_bytes");  // as the fixture's rows: no copy size recorded
    });
    for (const auto& r : group(rep, "gemm")->rows) {
      if (r.config == "8192x8192x4096 bf16") *alone = r.predicted_us;
    }
    double d2d = -1;
    for (const auto& r : group(rep, "interference_copy_engine")->rows) {
      if (r.config.find("d2d") != std::string::npos) d2d = r.predicted_us;
      else CHECK(r.predicted_us == Approx(*alone));  // host traffic: the GEMM alone
    }
    return d2d;
  };
  double alone = 0;
  const double none = predicted(0, &alone);
  REQUIRE(alone > 0);
  CHECK(none == Approx(alone));  // no copy size recorded: the GEMM alone
  const double small = predicted(64.0 * (1 << 20), &alone), large = predicted(512.0 * (1 << 20), &alone);
  CHECK(small > alone * 1.01);  // the copy takes HBM the GEMM's tiles need
  CHECK(large > small);         // and longer, the longer it runs beside it
}

TEST_CASE("validate: the D2D interference rows replay the benchmark's loop, GEMM timed or copy timed", "[calibrate][validate]") {
  // A copy-timed row beside the GEMM-timed one (as bench_interference writes it), 512 MiB copies.
  const double bytes = 512.0 * (1 << 20);
  auto report = [&](int warmup, int gemms_beside) {
    return validate_patched_document("overlap-validate-ce-copy", [&](json& doc) {
      json copy_row;
      for (auto& m : doc["measurements"]) {
        if (m["benchmark"] != "interference_copy_engine" || m["config"]["direction"] != "d2d") continue;
        m["config"]["copy_bytes"] = bytes;
        m["derived"]["warmup"] = warmup;
        copy_row = m;
      }
      REQUIRE(copy_row.is_object());
      copy_row["config"]["timed"] = "copy";
      copy_row["config"]["gemms_beside"] = gemms_beside;
      doc["measurements"].push_back(copy_row);
    });
  };
  auto rows = [](const overlap::calibrate::ValidationReport& rep, double* gemm_beside, double* copy_beside) {
    for (const auto& r : group(rep, "interference_copy_engine")->rows) {
      if (r.config == "8192x8192x4096 bf16 beside copy-engine d2d") *gemm_beside = r.predicted_us;
      if (r.config == "copy-engine d2d 536870912 B beside 8192x8192x4096 bf16 GEMMs") *copy_beside = r.predicted_us;
    }
  };
  // The copy alone, in the fixture profile's engine.
  const auto p = overlap::load_profile_file(kFixture + "/profile.yaml");
  overlap::sim::TaskGraph g(1);
  overlap::sim::Op copy;
  copy.name = "copy";
  copy.kind = overlap::sim::OpKind::copy;
  copy.stream = g.add_stream(0, "copy");
  copy.src_gpu = copy.dst_gpu = 0;
  copy.bytes = static_cast<overlap::Bytes>(bytes);
  copy.comm = true;
  const auto id = g.add(copy);
  overlap::sim::NodeConfig node = overlap::sim::make_node(p, 1);
  node.launch_gap_ps = 0;
  node.launch_host_ps = 0;
  const auto tl = overlap::sim::run(g, node);
  const double copy_alone = overlap::us_from_ps(tl.ops[static_cast<std::size_t>(id)].end_ps - tl.ops[static_cast<std::size_t>(id)].start_ps);

  double gemm_beside = -1, copy_beside = -1;
  rows(report(5, 3), &gemm_beside, &copy_beside);
  REQUIRE(copy_beside > 0);
  REQUIRE(gemm_beside > 0);
  CHECK(copy_beside > copy_alone * 1.05);  // the GEMMs beside it take HBM it needs
  // Deterministic, and the warm-up matters only through the queue it leaves: GEMMs outlast copies
  // here, so the timed copies always have GEMMs beside them.
  double gemm_again = -1, copy_again = -1;
  rows(report(0, 3), &gemm_again, &copy_again);
  CHECK(copy_again == Approx(copy_beside).epsilon(1e-9));
  double g1 = -1, c1 = -1;
  rows(report(5, 1), &g1, &c1);
  CHECK(c1 <= copy_beside);  // one GEMM per repetition may leave the last timed copies alone
  CHECK(c1 >= copy_alone);
}

TEST_CASE("validate: a real node's scheme runs take the host's profile and the runs' transports", "[calibrate][validate]") {
  // A results directory as `mpirun -np 8 overlap-bench-schemes --config schemes_nodes.json` leaves
  // it: schemes/schemes.json (host nodes) simulated with ../profile.yaml, here the built-in 8x H100.
  const fs::path tmp = fs::temp_directory_path() / ("overlap-validate-nodes-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::copy(kFixture, tmp, fs::copy_options::recursive);
  fs::copy_file(fs::path(OVERLAP_SOURCE_DIR) / "scenarios/hardware/h100-sxm-8x-nvswitch.yaml", tmp / "profile.yaml",
                fs::copy_options::overwrite_existing);
  std::ifstream in(kFixture + "/schemes/schemes.json");
  json doc = json::parse(in);
  json base = doc["runs"][0];
  base["workload"] = {{"kind", "gemm_collective"}, {"tp", 8}, {"m", 8192}, {"n", 8192}, {"k", 4096}, {"dtype", "bf16"},
                      {"primitive", "reduce_scatter"}};
  base.erase("link");
  json runs = json::array();
  auto add = [&](const std::string& id, const std::string& scheme, json params) {
    json r = base;
    r["id"] = id;
    r["scheme"] = scheme;
    r["params"] = std::move(params);
    runs.push_back(r);
  };
  add("ring-default", "commfuse", {{"m", 1}, {"schedule", "ring"}});
  add("ring-nccl", "commfuse", {{"m", 1}, {"schedule", "ring"}, {"transport", "nccl"}});
  add("ring-ce", "commfuse", {{"m", 1}, {"schedule", "ring"}, {"transport", "copy_engine"}});
  add("async_tp", "async_tp", {{"streams", 2}});
  doc["host"] = "nodes";
  doc["profile"] = "../profile.yaml";
  doc.erase("virtual_nodes");
  doc["runs"] = runs;
  std::ofstream(tmp / "schemes" / "schemes.json") << doc.dump(1);
  const auto rep = overlap::calibrate::validate_dir(tmp.string());
  fs::remove_all(tmp);
  const auto* g = group(rep, "schemes");
  REQUIRE(g != nullptr);
  std::map<std::string, double> predicted;
  for (const auto& r : g->rows) {
    CHECK(std::isfinite(r.predicted_us));
    CHECK(r.predicted_us > 0);
    predicted[r.config.substr(0, r.config.find(' '))] = r.predicted_us;
  }
  REQUIRE(predicted.size() == 4);
  // A CommFuse run that names no transport exchanged by NCCL on a real node (the runner's default).
  CHECK(predicted["ring-default"] == predicted["ring-nccl"]);
  CHECK(predicted["ring-ce"] != predicted["ring-nccl"]);
}

TEST_CASE("validate: a partition that hosts the GEMM's clusters on fewer SMs is predicted on those", "[calibrate][validate]") {
  // The 8192x8192x4096 GEMM on 104 SMs: its clusters reached only 92 of them.
  const auto rep = validate_patched_fixture("overlap-validate-clusters", [](json& m) {
    if (m["benchmark"] != "gemm_sm" || m["config"]["m"] != 8192) return;
    if (m["config"]["sms"] == 104) m["derived"]["cluster_sms_reached"] = 92;
    if (m["config"]["sms"] == 96) m["derived"]["cluster_sms_reached"] = 120;
  });
  const overlap::HardwareProfile p = overlap::load_profile_file(kFixture + "/profile.yaml");
  const overlap::GemmPlan plan = overlap::plan_gemm(p, {8192, 8192, 4096, overlap::DType::bf16});
  int seen = 0;
  for (const auto& r : group(rep, "gemm_sm")->rows) {
    if (r.config.rfind("8192x8192x4096 bf16 on 104 SMs", 0) == 0) {
      CHECK(r.config == "8192x8192x4096 bf16 on 104 SMs (92 reached by its clusters)");
      CHECK(r.predicted_us == Approx(overlap::us_from_ps(plan.waves(92) * plan.cta_ps)));
      ++seen;
    }
    if (r.config.rfind("8192x8192x4096 bf16 on 96 SMs", 0) == 0) {
      CHECK(r.config == "8192x8192x4096 bf16 on 96 SMs");  // more reached than granted: the partition's
      CHECK(r.predicted_us == Approx(overlap::us_from_ps(plan.waves(96) * plan.cta_ps)));
      ++seen;
    }
  }
  CHECK(seen == 2);
}
