// Scenario loader (sim/scenario.hpp): every kind of bad input is an InputError naming the file, the
// line and the key; --set overrides apply before validation; every shipped scenario loads.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "sim/scenario.hpp"
#include "sim/workload_keys.hpp"
#include "sim/workload_shapes.hpp"

namespace fs = std::filesystem;
using overlap::InputError;
using overlap::sim::GemmCollective;
using overlap::sim::load_scenario_text;
using overlap::sim::MlpTpSp;
using overlap::sim::Scenario;
using overlap::sim::ScenarioOptions;

namespace {

const std::string kSource = OVERLAP_SOURCE_DIR;

ScenarioOptions options(std::vector<std::string> sets = {}) {
  ScenarioOptions o;
  o.sets = std::move(sets);
  o.hardware_dir = kSource + "/scenarios/hardware";
  return o;
}

Scenario load(const std::string& text, std::vector<std::string> sets = {}) {
  return load_scenario_text(text, "test.yaml", options(std::move(sets)));
}

// Loads `text`, expects an InputError, and returns it.
InputError load_error(const std::string& text, std::vector<std::string> sets = {}) {
  try {
    (void)load(text, std::move(sets));
  } catch (const InputError& e) {
    return e;
  }
  FAIL("expected an InputError");
  return InputError("", 0, "", "");
}

// Line 1..: a valid GEMM + reduce-scatter scenario; tests edit single lines of it.
const std::string kGemm =
    "# comment line\n"                     // 1
    "hardware: h100-sxm-8x-nvswitch\n"     // 2
    "workload:\n"                          // 3
    "  kind: gemm_collective\n"            // 4
    "  tp: 4\n"                            // 5
    "  m: 4096\n"                          // 6
    "  n: 8192\n"                          // 7
    "  k: 4096\n"                          // 8
    "  primitive: reduce_scatter\n"        // 9
    "schemes:\n"                           // 10
    "  - no_overlap\n"                     // 11
    "  - {name: data_slicing, params: {chunks: 8}}\n";  // 12

std::string replace_line(const std::string& text, int line, const std::string& with) {
  std::istringstream in(text);
  std::string out, l;
  for (int i = 1; std::getline(in, l); ++i) out += (i == line ? with : l) + "\n";
  return out;
}

void check_located(const InputError& e, int line, const std::string& key) {
  INFO(e.what());
  CHECK(e.file() == "test.yaml");
  CHECK(e.line() == line);
  CHECK(e.key_path() == key);
  // The message itself names the place, so a user sees it without the fields.
  CHECK_THAT(std::string(e.what()), Catch::Contains("test.yaml:" + std::to_string(line)));
  CHECK_THAT(std::string(e.what()), Catch::Contains(key));
}

}  // namespace

TEST_CASE("a valid scenario loads with its workload, hardware and schemes", "[scenario]") {
  const Scenario sc = load(kGemm);
  CHECK(sc.name == "test");
  CHECK(sc.hardware_name == "h100-sxm-8x-nvswitch");
  CHECK(sc.hardware.gpu.sm_count > 0);
  CHECK(sc.workload.kind == overlap::sim::WorkloadKind::gemm_collective);
  CHECK(sc.workload.tp == 4);
  const auto& g = std::get<GemmCollective>(sc.workload.shape);
  CHECK(g.m == 4096);
  CHECK(g.n == 8192);
  CHECK(g.k == 4096);
  CHECK(g.primitive == overlap::sim::Primitive::reduce_scatter);
  CHECK(g.dtype == overlap::DType::bf16);  // default
  REQUIRE(sc.schemes.size() == 2);
  CHECK(sc.schemes[0].name == "no_overlap");
  CHECK(sc.schemes[0].line == 11);
  CHECK(sc.schemes[1].name == "data_slicing");
  CHECK(sc.schemes[1].params == nlohmann::json{{"chunks", 8}});
  CHECK(sc.fidelity == overlap::sim::Fidelity::curve);
  CHECK(sc.sweep.empty());
}

TEST_CASE("without `schemes` every scheme that applies is run", "[scenario]") {
  const std::string text = kGemm.substr(0, kGemm.find("schemes:"));
  const Scenario sc = load(text);
  std::vector<std::string> expected;
  for (const auto& s : overlap::sim::scheme_registry())
    if (!s.applies || s.applies(sc.workload)) expected.push_back(s.name);
  std::vector<std::string> got;
  for (const auto& s : sc.schemes) got.push_back(s.name);
  CHECK(got == expected);
  CHECK(std::find(got.begin(), got.end(), "no_overlap") != got.end());
  // Decode-only schemes do not apply to a GEMM + collective.
  CHECK(std::find(got.begin(), got.end(), "dtp") == got.end());
}

TEST_CASE("unknown keys are errors naming the key and its line", "[scenario][errors]") {
  check_located(load_error(replace_line(kGemm, 2, "hardwear: h100-sxm-8x-nvswitch")), 2, "hardwear");
  const InputError e = load_error(replace_line(kGemm, 7, "  nn: 8192"));
  check_located(e, 7, "workload.nn");
  CHECK_THAT(std::string(e.what()), Catch::Contains("unknown key"));
  check_located(load_error(replace_line(kGemm, 12, "  - {name: data_slicing, chunks: 8}")), 12, "schemes.1.chunks");
}

TEST_CASE("an unknown workload kind is an error naming the key and its line, listing every kind", "[scenario][errors]") {
  const InputError e = load_error(replace_line(kGemm, 4, "  kind: gemm_colective"));
  check_located(e, 4, "workload.kind");
  // The list is the kind table's (sim/workload_kind.hpp), in its order.
  CHECK_THAT(std::string(e.what()), Catch::Contains("unknown workload kind 'gemm_colective' (known: gemm_collective, "
                                                    "mlp_tpsp, attention_tpsp, attention_ulysses, decode_stack, "
                                                    "transformer, moe)"));
  // Spelt exactly: no case folding, no empty kind.
  check_located(load_error(replace_line(kGemm, 4, "  kind: GEMM_COLLECTIVE")), 4, "workload.kind");
  check_located(load_error(replace_line(kGemm, 4, "  kind: ''")), 4, "workload.kind");
}

TEST_CASE("each kind's row of the key table loads as that kind and allows exactly its keys", "[scenario][errors]") {
  using overlap::sim::WorkloadKind;
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames) {
    INFO(name);
    const overlap::sim::WorkloadKindKeys& row = overlap::sim::workload_kind_keys(kind);
    CHECK(row.kind == kind);
    const std::string head = "hardware: h100-sxm-8x-nvswitch\nworkload: ";
    const Scenario sc = load(head + row.example + "\n");
    CHECK(sc.workload.kind == kind);
    // Workload::shape lists its alternatives in WorkloadKind's order: the kind is the shape's index.
    CHECK(sc.workload.shape.index() == static_cast<std::size_t>(kind));
    // An unknown key is refused at the workload's line, listing the table's keys in the table's order.
    std::string unknown = row.example;
    unknown.insert(unknown.size() - 1, ", no_such_key: 1");
    const InputError e = load_error(head + unknown + "\n");
    CHECK(e.line() == 2);
    CHECK(e.key_path() == "workload.no_such_key");
    std::string allowed;
    for (const std::string& key : overlap::sim::workload_keys(kind)) allowed += (allowed.empty() ? "" : ", ") + key;
    CHECK_THAT(std::string(e.what()), Catch::Contains("(allowed: " + allowed + ")"));
  }
  // What the kinds differ in (sim/scenario.cpp reads each of these keys).
  const auto takes = [](WorkloadKind k, const std::string& key) {
    const auto keys = overlap::sim::workload_keys(k);
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  };
  CHECK(takes(WorkloadKind::gemm_collective, "primitive"));
  CHECK_FALSE(takes(WorkloadKind::gemm_collective, "model"));
  CHECK(takes(WorkloadKind::decode_stack, "allreduce_us"));
  CHECK_FALSE(takes(WorkloadKind::moe, "model"));
  CHECK(takes(WorkloadKind::transformer, "dense_layers"));
  CHECK_FALSE(takes(WorkloadKind::attention_ulysses, "kv_heads"));
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames) CHECK(takes(kind, "dropout"));
}

TEST_CASE("a workload whose kind does not name its shape is refused by the shape check", "[scenario][errors]") {
  overlap::sim::Workload w = load(kGemm).workload;
  CHECK_NOTHROW(overlap::sim::validate_workload(w));
  w.kind = overlap::sim::WorkloadKind::mlp_tpsp;  // a GemmCollective shape
  CHECK_THROWS_WITH(overlap::sim::validate_workload(w),
                    "workload.kind: a mlp_tpsp workload holds a gemm_collective shape");
}

TEST_CASE("a key given twice is an error at its second line, not silently dropped", "[scenario][errors]") {
  // Line 6 is `  m: ...`; writing it again on line 7 (in place of n) must not let one value win.
  const InputError e = load_error(replace_line(kGemm, 7, "  m: 4096"));
  check_located(e, 7, "workload.m");
  CHECK_THAT(std::string(e.what()), Catch::Contains("given twice"));
}

TEST_CASE("wrong types are errors naming the key and its line", "[scenario][errors]") {
  const InputError e = load_error(replace_line(kGemm, 6, "  m: lots"));
  check_located(e, 6, "workload.m");
  CHECK_THAT(std::string(e.what()), Catch::Contains("lots"));
  check_located(load_error(replace_line(kGemm, 5, "  tp: [4]")), 5, "workload.tp");
  check_located(load_error(replace_line(kGemm, 9, "  primitive: broadcast_everything")), 9, "workload.primitive");
  check_located(load_error(replace_line(kGemm, 12, "  - {name: data_slicing, params: {chunks: many}}")), 12,
                "schemes.1.params.chunks");
  check_located(load_error(kGemm + "fidelity: exact\n"), 13, "fidelity");
}

TEST_CASE("missing required fields are errors naming the key", "[scenario][errors]") {
  // The key is absent, so the error points at the map that should hold it.
  const InputError e = load_error(replace_line(kGemm, 8, "  dtype: bf16"));
  check_located(e, 4, "workload.k");
  CHECK_THAT(std::string(e.what()), Catch::Contains("missing"));
  const std::string no_hw = replace_line(kGemm, 2, "# no hardware");
  CHECK(load_error(no_hw).key_path() == "hardware");
}

TEST_CASE("non-positive sizes are errors naming the key and its line", "[scenario][errors]") {
  check_located(load_error(replace_line(kGemm, 7, "  n: 0")), 7, "workload.n");
  check_located(load_error(replace_line(kGemm, 8, "  k: -4096")), 8, "workload.k");
  check_located(load_error(replace_line(kGemm, 5, "  tp: 0")), 5, "workload.tp");
}

TEST_CASE("shapes that do not divide are errors naming the key and its line", "[scenario][errors]") {
  // Reduce-scatter splits the output rows over the ranks: m % tp.
  const InputError rs = load_error(replace_line(kGemm, 6, "  m: 4098"));
  check_located(rs, 6, "workload.m");
  CHECK_THAT(std::string(rs.what()), Catch::Contains("not divisible"));
  // An all-reduce does not split rows: the same m is fine.
  CHECK_NOTHROW(load(replace_line(replace_line(kGemm, 6, "  m: 4098"), 9, "  primitive: all_reduce")));

  const std::string mlp =
      "hardware: h100-sxm-8x-nvswitch\n"  // 1
      "workload:\n"                       // 2
      "  kind: mlp_tpsp\n"                // 3
      "  tp: 8\n"                         // 4
      "  tokens: 8192\n"                  // 5
      "  d_model: 4096\n"                 // 6
      "  d_ffn: 14336\n";                 // 7
  CHECK_NOTHROW(load(mlp));
  check_located(load_error(replace_line(mlp, 7, "  d_ffn: 14340")), 7, "workload.d_ffn");
  check_located(load_error(replace_line(mlp, 5, "  tokens: 8196")), 5, "workload.tokens");

  const std::string att =
      "hardware: h100-sxm-8x-nvswitch\n"  // 1
      "workload:\n"                       // 2
      "  kind: attention_tpsp\n"          // 3
      "  tp: 8\n"                         // 4
      "  batch: 2\n"                      // 5
      "  seq: 4096\n"                     // 6
      "  d_model: 4096\n"                 // 7
      "  heads: 32\n";                    // 8
  CHECK_NOTHROW(load(att));
  check_located(load_error(replace_line(att, 8, "  heads: 12")), 8, "workload.heads");  // 12 % 8
  check_located(load_error(replace_line(att, 8, "  heads: 48")), 8, "workload.heads");  // 4096 % 48
  check_located(load_error(replace_line(replace_line(att, 5, "  batch: 1"), 6, "  seq: 4095")), 6, "workload.seq");
}

TEST_CASE("unknown scheme names and scheme params are errors naming the key and its line", "[scenario][errors]") {
  const InputError name = load_error(replace_line(kGemm, 11, "  - warp_drive"));
  check_located(name, 11, "schemes.0");
  CHECK_THAT(std::string(name.what()), Catch::Contains("unknown scheme 'warp_drive'"));
  CHECK_THAT(std::string(name.what()), Catch::Contains("no_overlap"));  // lists the known ones

  const InputError param = load_error(replace_line(kGemm, 12, "  - {name: data_slicing, params: {chunkz: 8}}"));
  check_located(param, 12, "schemes.1.params.chunkz");
  CHECK_THAT(std::string(param.what()), Catch::Contains("chunks"));  // names the parameter it has

  // A scheme that exists but does not apply to this workload (delayed-tp-blog's decode schemes).
  check_located(load_error(replace_line(kGemm, 11, "  - dtp")), 11, "schemes.0");
  // An empty list is not "every scheme".
  const std::string empty = replace_line(replace_line(replace_line(kGemm, 10, "schemes: []"), 11, ""), 12, "");
  check_located(load_error(empty), 10, "schemes");
}

TEST_CASE("tp larger than the node is an error at workload.tp", "[scenario][errors]") {
  const InputError e = load_error(replace_line(kGemm, 5, "  tp: 16"));
  check_located(e, 5, "workload.tp");
  CHECK_THAT(std::string(e.what()), Catch::Contains("16 ranks, but the hardware has 8 GPUs"));
  // A one-GPU profile (a calibrated host's profile.yaml) says where its multi-rank machines are.
  const InputError one =
      load_error(kGemm, {"hardware=" + kSource + "/calibrate/results/nvidia-h100-80gb-hbm3-vm/profile.yaml"});
  INFO(one.what());
  CHECK_THAT(std::string(one.what()), Catch::Contains("has 1 GPU ("));
  CHECK_THAT(std::string(one.what()), Catch::Contains("profile_virtual_t"));
}

TEST_CASE("an unknown hardware profile is an error at the hardware line", "[scenario][errors]") {
  const InputError e = load_error(replace_line(kGemm, 2, "hardware: h100-imaginary"));
  check_located(e, 2, "hardware");
  CHECK_THAT(std::string(e.what()), Catch::Contains("h100-sxm-8x-nvswitch"));  // lists built-ins
}

TEST_CASE("a YAML syntax error names the file and line", "[scenario][errors]") {
  const InputError e = load_error(kGemm + "schemes: [unclosed\n");
  CHECK(e.file() == "test.yaml");
  CHECK(e.line() >= 13);
}

TEST_CASE("option set: overrides any key before validation", "[scenario][set]") {
  SECTION("a workload field") {
    const Scenario sc = load(kGemm, {"workload.m=1024", "workload.dtype=fp16"});
    CHECK(std::get<GemmCollective>(sc.workload.shape).m == 1024);
    CHECK(std::get<GemmCollective>(sc.workload.shape).dtype == overlap::DType::fp16);
  }
  SECTION("a field of a named hardware profile") {
    const Scenario base = load(kGemm);
    REQUIRE(base.hardware.fabric.links.count("nvlink") == 1);
    const Scenario sc = load(kGemm, {"hardware.fabric.links.nvlink.bandwidth_gbps=900"});
    CHECK(sc.hardware.fabric.links.at("nvlink").bandwidth_gbps == 900);
    CHECK(sc.hardware_name == "h100-sxm-8x-nvswitch");
    CHECK(sc.hardware.gpu.sm_count == base.hardware.gpu.sm_count);
  }
  SECTION("the fidelity and the schemes") {
    const Scenario sc = load(kGemm, {"fidelity=steps", "schemes=[no_overlap]"});
    CHECK(sc.fidelity == overlap::sim::Fidelity::steps);
    REQUIRE(sc.schemes.size() == 1);
    CHECK(sc.schemes[0].name == "no_overlap");
  }
  SECTION("overridden values are validated like written ones") {
    CHECK(load_error(kGemm, {"workload.m=0"}).key_path() == "workload.m");
    CHECK(load_error(kGemm, {"workload.m=4098"}).key_path() == "workload.m");
    const InputError unknown = load_error(kGemm, {"workload.bogus=1"});
    CHECK(unknown.key_path() == "workload.bogus");
    CHECK_THAT(std::string(unknown.what()), Catch::Contains("unknown key"));
    CHECK(load_error(kGemm, {"hardware.gpu.sm_count=-3"}).key_path() == "hardware.gpu.sm_count");
    CHECK(load_error(kGemm, {"workload.m"}).key_path() == "--set");  // no '='
  }
}

TEST_CASE("model shortcut fills the transformer-derived fields", "[scenario]") {
  const std::string mlp =
      "hardware: h100-sxm-8x-nvswitch\n"
      "workload: {kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 8192}\n";
  const Scenario sc = load(mlp);
  const auto& m = std::get<MlpTpSp>(sc.workload.shape);
  CHECK(m.d_model == 8192);  // Llama 3 70B
  CHECK(m.d_ffn == 28672);
  CHECK(m.tokens == 8192);
  // A written field wins over the model's.
  CHECK(std::get<MlpTpSp>(load(mlp, {"workload.d_ffn=16384"}).workload.shape).d_ffn == 16384);
  // batch x seq is accepted for tokens, but not both.
  const std::string bs =
      "hardware: h100-sxm-8x-nvswitch\n"
      "workload: {kind: mlp_tpsp, tp: 8, model: llama3-70b, batch: 4, seq: 1024}\n";
  CHECK(std::get<MlpTpSp>(load(bs).workload.shape).tokens == 4096);
  CHECK(load_error(bs, {"workload.tokens=4096"}).key_path() == "workload.tokens");
  CHECK(load_error(mlp, {"workload.model=llama9-1t"}).key_path() == "workload.model");
}

TEST_CASE("sweep axes are parsed and every value validated", "[scenario][sweep]") {
  const std::string text = kGemm +
                           "sweep:\n"                                   // 13
                           "  workload.k: [2048, 4096, 8192]\n"         // 14
                           "  \"workload.m,workload.n\": [[1024, 2048], [2048, 1024]]\n";  // 15
  const Scenario sc = load(text);
  REQUIRE(sc.sweep.size() == 2);
  CHECK(sc.sweep[0].keys == std::vector<std::string>{"workload.k"});
  CHECK(sc.sweep[0].values.size() == 3);
  CHECK(sc.sweep[1].keys == std::vector<std::string>{"workload.m", "workload.n"});
  const auto points = overlap::sim::sweep_points(sc);
  REQUIRE(points.size() == 6);
  CHECK(points.front() == std::vector<std::string>{"workload.k=2048", "workload.m=1024", "workload.n=2048"});
  CHECK(points.back() == std::vector<std::string>{"workload.k=8192", "workload.m=2048", "workload.n=1024"});

  // A value that makes an invalid scenario: reported at that value.
  const InputError bad = load_error(kGemm + "sweep:\n  workload.m: [1024, 1025]\n");
  CHECK(bad.line() == 14);
  CHECK(bad.key_path() == "sweep.workload.m.1");
  CHECK_THAT(std::string(bad.what()), Catch::Contains("not divisible"));
  // A key the scenario does not have.
  CHECK(load_error(kGemm + "sweep:\n  workload.mm: [1]\n").key_path() == "sweep.workload.mm.0");
  // Zipped values must match the key count.
  CHECK(load_error(kGemm + "sweep:\n  \"workload.m,workload.n\": [[1024]]\n").line() == 14);
}

TEST_CASE("a command that does not run the sweep still refuses a broken one", "[scenario][sweep][errors]") {
  // run and tune load without running the sweep, but a sweep block that is not a map of lists, or a
  // value that makes an invalid scenario, is a broken file, never ignored.
  ScenarioOptions o = options();
  o.validate_sweep = false;
  const std::string broken = kGemm + "sweep:\n  workload.m: [1024]\n  workload {\n";  // line 15
  try {
    (void)load_scenario_text(broken, "test.yaml", o);
    FAIL("a sweep key with no values loaded");
  } catch (const InputError& e) {
    CHECK(e.line() == 15);
    CHECK_THAT(e.key_path(), Catch::StartsWith("sweep.workload {"));
  }
  // Its values are checked there too, each alone, as `sweep` checks them: 1025 does not divide.
  try {
    (void)load_scenario_text(kGemm + "sweep:\n  workload.m: [1025]\n", "test.yaml", o);
    FAIL("a sweep value that makes an invalid scenario loaded");
  } catch (const InputError& e) {
    CHECK(e.line() == 14);
    CHECK(e.key_path() == "sweep.workload.m.0");
    CHECK_THAT(e.message(), Catch::Contains("1025 is not divisible by tp = 4"));
  }
  CHECK(load_scenario_text(kGemm + "sweep:\n  workload.m: [1024]\n", "test.yaml", o).sweep.empty());
  // The points of a sweep being run skip the block altogether.
  o.check_ignored_sweep = false;
  CHECK_NOTHROW(load_scenario_text(broken, "test.yaml", o));
}

TEST_CASE("every shipped scenario loads", "[scenario][shipped]") {
  std::vector<fs::path> files;
  for (const char* dir : {"/scenarios", "/scenarios/papers"})
    for (const auto& e : fs::directory_iterator(kSource + dir))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  // The default scenario, FlashOverlap (4), CommFuse (2), async TP, DTP (2) at least.
  CHECK(files.size() >= 11);
  bool has_default = false;
  for (const auto& f : files) {
    INFO(f.string());
    Scenario sc;
    REQUIRE_NOTHROW(sc = overlap::sim::load_scenario_file(f.string(), options()));
    CHECK(!sc.schemes.empty());
    CHECK(sc.name == f.stem().string());  // `name:` matches the file, so reports are traceable
    // Every shipped scenario says where its numbers come from.
    std::ifstream in(f);
    std::string first;
    std::getline(in, first);
    CHECK(first.rfind("#", 0) == 0);
    if (f.filename() == "llama3-70b-tp8-mlp.yaml") {
      has_default = true;
      CHECK(sc.workload.tp == 8);
      CHECK(std::get<MlpTpSp>(sc.workload.shape).d_ffn == 28672);
    }
  }
  CHECK(has_default);
}

TEST_CASE("an inline hardware profile loads, and its errors point into the scenario", "[scenario]") {
  std::ifstream in(kSource + "/scenarios/hardware/h100-sxm-8x-nvswitch.yaml");
  std::string text = "hardware:\n", l;
  int sm_line = 0;
  for (int line = 2; std::getline(in, l); ++line) {
    if (sm_line == 0 && l.find("sm_count:") != std::string::npos) sm_line = line;
    text += "  " + l + "\n";
  }
  REQUIRE(sm_line > 0);
  text += "workload: {kind: gemm_collective, tp: 2, m: 1024, n: 1024, k: 1024, primitive: all_reduce}\n";
  const Scenario inline_sc = load(text);
  const Scenario named = load(kGemm);
  CHECK(inline_sc.hardware_name == "h100-sxm-8x-nvswitch");  // the inline profile's `name`
  CHECK(inline_sc.hardware.gpu.sm_count == named.hardware.gpu.sm_count);
  CHECK(inline_sc.hardware.fabric.num_gpus == named.hardware.fabric.num_gpus);

  const InputError e = load_error(replace_line(text, sm_line, "    sm_count: -3"));
  check_located(e, sm_line, "hardware.gpu.sm_count");
}
