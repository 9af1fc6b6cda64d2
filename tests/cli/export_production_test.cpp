// The configuration files production stacks load (tools/export_production.hpp), checked against their
// upstream schemas as documented:
//   - TransformerEngine ub_cfgs (transformer_engine/pytorch/module/base.py initialize_ub): top-level
//     keys are GEMM names of layers_all_gather_overlap / layers_reduce_scatter_overlap (qkv_fprop,
//     qkv_dgrad, qkv_wgrad, proj_fprop, proj_dgrad, fc1_fprop, fc1_dgrad, fc1_wgrad, fc2_fprop,
//     fc2_dgrad); each entry's keys are get_default_config's (method, num_sm, cga_size, set_sm_margin,
//     num_splits, atomic_gemm, use_ce, ...); method is ring_exchange, pipeline or bulk; add_ub refuses
//     pipeline for an all-gather name; a non-bulk qkv_dgrad / fc1_dgrad must come without its wgrad
//     entry (initialize_ub asserts wgrad_name not in ub_cfgs); an atomic_gemm ring_exchange all-gather
//     name and its reduce-scatter pair (qkv_fprop / proj_fprop, fc1_fprop / fc2_fprop: ag_rs_pairs)
//     both or neither (add_ub raises otherwise);
//   - NCCL's example tuner CSV (NVIDIA/nccl plugins/tuner/example/README.md "Configuration File Format"):
//     collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps,regBuff],
//     collective types broadcast | reduce | allgather | reducescatter | allreduce, algorithms tree |
//     ring | collnet_direct | collnet_chain | nvls | nvls_tree | pat, protocols ll | ll128 | simple,
//     channels a positive count or -1, `#` comments.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "sim/workload.hpp"
#include "tests/support/cli_run.hpp"
#include "tests/support/temp_file.hpp"
#include "tools/export_production.hpp"

namespace fs = std::filesystem;
using overlap::test::cli;
using overlap::test::CliResult;

namespace {

using overlap::test::TempFile;
std::string read(const std::string& path) { return overlap::test::read_text(path); }

using Entries = std::map<std::string, std::map<std::string, std::string>>;

// The ub_cfgs YAML as written (two levels: "name:" then "  key: value"; # comments).
Entries parse_ub_cfgs(const std::string& text) {
  Entries out;
  std::istringstream in(text);
  std::string line, current;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] != ' ') {
      REQUIRE(line.back() == ':');
      current = line.substr(0, line.size() - 1);
      REQUIRE(out.count(current) == 0);
      out[current];
      continue;
    }
    REQUIRE(line.rfind("  ", 0) == 0);
    const std::size_t colon = line.find(": ");
    REQUIRE(colon != std::string::npos);
    REQUIRE(!current.empty());
    out[current][line.substr(2, colon - 2)] = line.substr(colon + 2);
  }
  return out;
}

// Every entry against initialize_ub's schema.
void check_ub_schema(const Entries& e) {
  const std::set<std::string> names = {"qkv_fprop", "qkv_dgrad", "qkv_wgrad", "proj_fprop", "proj_dgrad",
                                       "fc1_fprop", "fc1_dgrad", "fc1_wgrad", "fc2_fprop",  "fc2_dgrad"};
  const std::set<std::string> all_gather = {"qkv_fprop", "fc1_fprop", "proj_dgrad", "fc2_dgrad"};
  const std::set<std::string> keys = {"method",     "num_sm",      "cga_size", "set_sm_margin",
                                      "num_splits", "atomic_gemm", "use_ce"};
  for (const auto& [name, kv] : e) {
    INFO(name);
    CHECK(names.count(name) == 1);
    for (const auto& [k, v] : kv) {
      INFO(k);
      CHECK(keys.count(k) == 1);
      if (k != "method") CHECK(v.find_first_not_of("0123456789") == std::string::npos);
    }
    REQUIRE(kv.count("method") == 1);
    const std::string m = kv.at("method");
    CHECK((m == "ring_exchange" || m == "pipeline" || m == "bulk"));
    if (all_gather.count(name)) CHECK(m != "pipeline");
    CHECK((kv.count("num_splits") == 1) == (m == "pipeline"));
    if (m == "bulk") CHECK(kv.count("atomic_gemm") == 0);
    for (const char* k : {"num_sm", "cga_size", "set_sm_margin"}) CHECK(kv.count(k) == 1);
  }
  for (const char* dgrad : {"qkv_dgrad", "fc1_dgrad"}) {
    const std::string wgrad = std::string(dgrad).replace(4, 5, "wgrad");
    if (e.count(dgrad) && e.at(dgrad).at("method") != "bulk") CHECK(e.count(wgrad) == 0);
  }
  // add_ub (ag_rs_pairs): an atomic ring_exchange all-gather and its reduce-scatter pair, both or neither.
  auto atomic_ring = [&](const std::string& name) {
    const auto it = e.find(name);
    return it != e.end() && it->second.at("method") == "ring_exchange" && it->second.count("atomic_gemm") &&
           it->second.at("atomic_gemm") == "1";
  };
  for (const auto& [ag, rs] : {std::pair<std::string, std::string>{"qkv_fprop", "proj_fprop"}, {"fc1_fprop", "fc2_fprop"}})
    if (e.count(ag) && e.count(rs)) CHECK(atomic_ring(ag) == atomic_ring(rs));
}

overlap::sim::Workload transformer_step() {
  overlap::sim::Workload w;
  w.kind = overlap::sim::WorkloadKind::transformer;
  w.tp = 8;
  w.training.pass = overlap::sim::Pass::step;
  return w;
}

}  // namespace

TEST_CASE("te-userbuffers YAML: TE's names, keys and the methods TE allows per name", "[te][export]") {
  const overlap::sim::Workload step = transformer_step();
  CHECK(overlap::tools::te_gemm_names(step).size() == 10);
  {
    const Entries e = parse_ub_cfgs(overlap::tools::te_userbuffers_yaml(
        step, {{"method", "pipeline"}, {"num_splits", 8}, {"num_sm", 24}, {"set_sm_margin", true}}, {"test"}));
    check_ub_schema(e);
    CHECK(e.at("qkv_fprop").at("method") == "ring_exchange");  // pipeline is refused for an all-gather
    CHECK(e.at("proj_fprop").at("method") == "pipeline");
    CHECK(e.at("proj_fprop").at("num_splits") == "8");
    CHECK(e.at("proj_fprop").at("num_sm") == "24");
    CHECK(e.at("proj_fprop").at("set_sm_margin") == "1");
    CHECK(e.at("fc1_dgrad").at("method") == "pipeline");  // dgrad's reduce-scatter overlapped in the GEMM
    CHECK(e.count("fc1_wgrad") == 0);
  }
  {
    const Entries e = parse_ub_cfgs(overlap::tools::te_userbuffers_yaml(
        step, {{"method", "ring_exchange"}, {"column_backward", "bulk"}}, {}));
    check_ub_schema(e);
    CHECK(e.size() == 10);
    for (const char* n : {"qkv_dgrad", "qkv_wgrad", "fc1_dgrad", "fc1_wgrad"}) CHECK(e.at(n).at("method") == "bulk");
    CHECK(e.at("fc2_fprop").at("method") == "ring_exchange");
    CHECK(e.at("fc2_fprop").at("use_ce") == "1");
  }
  overlap::sim::Workload forward = step;
  forward.training.pass = overlap::sim::Pass::forward;
  CHECK(overlap::tools::te_gemm_names(forward) ==
        std::vector<std::string>{"qkv_fprop", "proj_fprop", "fc1_fprop", "fc2_fprop"});
  overlap::sim::Workload gc;
  gc.kind = overlap::sim::WorkloadKind::gemm_collective;
  CHECK_THROWS(overlap::tools::te_userbuffers_yaml(gc, nlohmann::json::object(), {}));
}

TEST_CASE("te-userbuffers YAML: one entry per name with that name's own values", "[te][export][per_name]") {
  const overlap::sim::Workload step = transformer_step();
  const nlohmann::json params = {{"method", "ring_exchange"},       {"num_sm", 2},
                                 {"proj_fprop.method", "pipeline"}, {"proj_fprop.num_splits", 8},
                                 {"proj_fprop.num_sm", 24},         {"fc2_fprop.method", "pipeline"},
                                 {"fc2_fprop.num_splits", 2},       {"qkv_dgrad.method", "bulk"},
                                 {"qkv_wgrad.num_sm", 4},           {"fc1_fprop.use_ce", false}};
  const std::string yaml = overlap::tools::te_userbuffers_yaml(step, params, {});
  const Entries e = parse_ub_cfgs(yaml);
  check_ub_schema(e);
  CHECK(e.at("proj_fprop").at("method") == "pipeline");
  CHECK(e.at("proj_fprop").at("num_splits") == "8");
  CHECK(e.at("proj_fprop").at("num_sm") == "24");
  CHECK(e.at("fc2_fprop").at("num_splits") == "2");
  CHECK(e.at("fc2_fprop").at("num_sm") == "2");  // the scalar, for a name that does not set it
  CHECK(e.at("qkv_fprop").at("use_ce") == "1");
  CHECK(e.at("fc1_fprop").at("use_ce") == "0");
  CHECK(e.at("qkv_dgrad").at("method") == "bulk");
  CHECK(e.at("qkv_wgrad").at("method") == "bulk");
  CHECK(e.at("qkv_wgrad").at("num_sm") == "4");
  CHECK(e.at("fc1_dgrad").at("method") == "ring_exchange");  // the scalar: dgrad -> reduce-scatter overlapped
  CHECK(e.count("fc1_wgrad") == 0);
  // Megatron's switches follow the names: the dgrad reduce-scatter overlap is on (fc1_dgrad).
  const std::string flags = overlap::tools::megatron_flags(step, params, "ub.yaml");
  CHECK_THAT(flags, Catch::Contains("--tp-comm-overlap-rs-dgrad"));
  CHECK_THAT(flags, !Catch::Contains("--disable-tp-comm-overlap"));
}

TEST_CASE("tune SCENARIO --export te-userbuffers writes TE's YAML from the best setting", "[te][export][cli]") {
  TempFile yaml("ub.yaml");
  const CliResult r =
      cli({"tune", "llama3-70b-tp8-mlp", "--set", "workload.tokens=2048", "--export", "te-userbuffers", yaml.path});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.err, Catch::Contains("--tp-comm-overlap --tp-comm-overlap-cfg " + yaml.path));
  const std::string text = read(yaml.path);
  const Entries e = parse_ub_cfgs(text);
  check_ub_schema(e);
  // The MLP's forward: fc1 (all-gather side) and fc2 (reduce-scatter side), unless bulk left them out.
  for (const auto& [name, kv] : e) CHECK((name == "fc1_fprop" || name == "fc2_fprop"));
  CHECK_THAT(text, Catch::Contains("# Megatron-LM: --tp-comm-overlap"));

  // Refused before any tuning: an unknown format, a directory, the operator form.
  CHECK(cli({"tune", "llama3-70b-tp8-mlp", "--export", "te-userbufers", yaml.path}).rc == 2);
  CHECK(cli({"tune", "llama3-70b-tp8-mlp", "--export", "te-userbuffers",
             fs::temp_directory_path().string()})
            .rc == 2);
  CHECK(cli({"tune", "--hardware", "a800-8x-nvlink", "--gemm", "8192x8192x4096", "--primitive", "all_reduce", "--ranks",
             "4", "--export", "te-userbuffers", yaml.path})
            .rc == 2);
}

TEST_CASE("collective --export nccl-tuner writes the example tuner plugin's CSV", "[export][cli][collective]") {
  TempFile csv("tuner.conf");
  const CliResult r = cli({"collective", "all_reduce", "-b", "1K", "-e", "1G", "--export", "nccl-tuner", csv.path});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Catch::Contains("all_reduce_perf"));  // the table still goes to stdout
  const std::set<std::string> algos = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
  const std::set<std::string> protos = {"ll", "ll128", "simple"};
  std::istringstream in(read(csv.path));
  std::string line;
  // Per collective: the next size its rows must start at (the ranges tile 1K .. 1G without gaps).
  std::map<std::string, long long> next_min;
  std::vector<std::string> order;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    INFO(line);
    REQUIRE(f.size() == 10);
    if (!next_min.count(f[0])) {
      next_min[f[0]] = 1024;
      order.push_back(f[0]);
    }
    CHECK(f[0] == order.back());  // one collective's rows together
    const long long lo = std::stoll(f[1]), hi = std::stoll(f[2]);
    CHECK(lo == next_min[f[0]]);  // no gap or overlap between a collective's size buckets
    CHECK(lo <= hi);
    next_min[f[0]] = hi + 1;
    CHECK(algos.count(f[3]) == 1);
    CHECK(protos.count(f[4]) == 1);
    CHECK((std::stoi(f[5]) > 0 || f[5] == "-1"));
    CHECK(f[6] == "1");  // one node
    CHECK(f[7] == "8");  // every GPU of the default profile
    CHECK(f[8] == "-1");
    CHECK(f[9] == "-1");
  }
  // Every collective the plugin tunes (the swept one first), each covering 1K .. 1G whole.
  CHECK(order == std::vector<std::string>{"allreduce", "broadcast", "reduce", "allgather", "reducescatter"});
  for (const auto& [coll, end] : next_min) {
    INFO(coll);
    CHECK(end == 1024LL * 1024 * 1024 + 1);
  }
  // What NCCL and the plugin do outside the rows (plugins/tuner/example/plugin.c: one channel) is
  // written in the file and said on stderr.
  CHECK_THAT(read(csv.path), Catch::Contains("the example plugin runs it on 1 channel"));
  CHECK_THAT(r.err, Catch::Contains("keeps NCCL's own algorithm and protocol"));
  // A forced algorithm is the swept collective's choice only: the others are left out, and said so.
  const CliResult forced = cli({"collective", "all_reduce", "-b", "1K", "-e", "1M", "--algo", "Ring", "--export",
                                "nccl-tuner", csv.path});
  REQUIRE(forced.rc == 0);
  const std::string text = read(csv.path);
  CHECK_THAT(text, Catch::Contains("only allreduce"));
  CHECK(text.find("\nallgather,") == std::string::npos);
  // All-to-all: the plugin tunes no send/recv. A directory: refused.
  CHECK(cli({"collective", "all_to_all", "--export", "nccl-tuner", csv.path}).rc == 2);
  CHECK(cli({"collective", "all_reduce", "--export", "nccl-tuner", fs::temp_directory_path().string()}).rc == 2);
  CHECK(cli({"collective", "all_reduce", "--export", "csv", csv.path}).rc == 2);
}

TEST_CASE("te-userbuffers YAML: atomic_gemm as each name simulated it, never an atomic pair TE refuses",
          "[te][export][atomic]") {
  // (FP8-only is the scheme's check at run time; the export writes what the run simulated.)
  const overlap::sim::Workload step = transformer_step();
  // The scalar atomic pipeline: the reduce-scatter names run it; the all-gather names fall back to
  // ring_exchange, which must then not be written atomic (add_ub's ag/rs pair rule would refuse it).
  const Entries scalar = parse_ub_cfgs(overlap::tools::te_userbuffers_yaml(
      step, {{"method", "pipeline"}, {"num_splits", 4}, {"atomic_gemm", true}}, {}));
  check_ub_schema(scalar);
  CHECK(scalar.at("proj_fprop").at("method") == "pipeline");
  CHECK(scalar.at("proj_fprop").at("atomic_gemm") == "1");
  CHECK(scalar.at("fc2_fprop").at("atomic_gemm") == "1");
  CHECK(scalar.at("fc1_fprop").at("method") == "ring_exchange");
  CHECK(scalar.at("fc1_fprop").at("atomic_gemm") == "0");
  // A per-name atomic setting is written for that name alone.
  const Entries named = parse_ub_cfgs(overlap::tools::te_userbuffers_yaml(
      step, {{"method", "pipeline"}, {"num_splits", 4}, {"fc2_fprop.atomic_gemm", true}}, {}));
  check_ub_schema(named);
  CHECK(named.at("fc2_fprop").at("atomic_gemm") == "1");
  CHECK(named.at("proj_fprop").at("atomic_gemm") == "0");
}

TEST_CASE("te_undeployable: what TE runs as the simulator ran it, and why not", "[te][export][deployable]") {
  using overlap::tools::te_undeployable;
  const overlap::sim::Workload step = transformer_step();
  // Every default (ring_exchange for every name, the column dgrads' reduce-scatter overlapped): TE runs it.
  CHECK(te_undeployable(step, nlohmann::json::object()).empty());
  // proj_dgrad alone unoverlapped: Megatron-LM's one ub_overlap_ag would still overlap it (TE's default
  // ring_exchange), so the export could not deploy what was simulated.
  const std::string alone = te_undeployable(step, {{"proj_dgrad.method", "bulk"}});
  CHECK_THAT(alone, Catch::Contains("proj_dgrad unoverlapped") && Catch::Contains("--disable-tp-comm-overlap-ag"));
  // Every all-gather name unoverlapped: --disable-tp-comm-overlap-ag deploys it.
  CHECK(te_undeployable(step, {{"qkv_fprop.method", "bulk"},
                               {"fc1_fprop.method", "bulk"},
                               {"proj_dgrad.method", "bulk"},
                               {"fc2_dgrad.method", "bulk"}})
            .empty());
  // One reduce-scatter name, and one column dgrad, apart from the others.
  CHECK_THAT(te_undeployable(step, {{"fc2_fprop.method", "bulk"}}), Catch::Contains("--disable-tp-comm-overlap-rs"));
  CHECK_THAT(te_undeployable(step, {{"qkv_dgrad.method", "bulk"}}), Catch::Contains("column-parallel dgrad"));
  // The scalar pipeline chunks the all-gathers, which TE runs as ring_exchange; naming them deploys it.
  CHECK_THAT(te_undeployable(step, {{"method", "pipeline"}}), Catch::Contains("set qkv_fprop.method"));
  CHECK(te_undeployable(step, {{"method", "pipeline"},
                               {"qkv_fprop.method", "ring_exchange"},
                               {"fc1_fprop.method", "ring_exchange"},
                               {"proj_dgrad.method", "ring_exchange"},
                               {"fc2_dgrad.method", "ring_exchange"}})
            .empty());
  // The scalar bulk leaves every side unoverlapped together: deployable with both disable flags.
  CHECK(te_undeployable(step, {{"method", "bulk"}}).empty());
}

TEST_CASE("tune --export te-userbuffers searches only what TE deploys, and says so", "[te][export][cli][deployable]") {
  TempFile yaml("ub.yaml");
  // An MLP training step: fc1_fprop and fc2_dgrad share Megatron-LM's one all-gather switch.
  const CliResult r = cli({"tune", "llama3-70b-tp8-mlp", "--set", "workload.tokens=2048", "--set", "workload.pass=step",
                           "--format", "json", "--export", "te-userbuffers", yaml.path});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  const auto doc = nlohmann::json::parse(r.out);
  REQUIRE(doc.contains("left_out"));
  CHECK(doc["left_out"].size() >= 1);
  CHECK_THAT(r.err, Catch::Contains("searched only over settings TransformerEngine runs as simulated"));
  nlohmann::json te;
  for (const auto& s : doc["schemes"])
    if (s["scheme"] == "te_userbuffers") te = s["best"];
  REQUIRE(te.is_object());
  overlap::sim::Workload w;
  w.kind = overlap::sim::WorkloadKind::mlp_tpsp;
  w.tp = 8;
  w.training.pass = overlap::sim::Pass::step;
  CHECK(overlap::tools::te_undeployable(w, te["params"]).empty());
  // The YAML deploys both all-gather names or neither.
  const Entries e = parse_ub_cfgs(read(yaml.path));
  check_ub_schema(e);
  CHECK(e.count("fc1_fprop") == e.count("fc2_dgrad"));
}
