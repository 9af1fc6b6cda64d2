// Hardware profile loading: built-ins, inline YAML, one test per kind of bad input, --set overrides.
#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "tests/support/profile_fixtures.hpp"

using namespace overlap;

namespace {

using test::inline_profile_error;
using test::load_inline_profile;

const std::string kHardwareDir = std::string(OVERLAP_SOURCE_DIR) + "/scenarios/hardware";

const char* kMinimal =
    "gpu:\n"                                       // 1
    "  sm_count: 100\n"                            // 2
    "  peak_tflops: {bf16: 500}\n"                 // 3
    "fabric:\n"                                    // 4
    "  num_gpus: 4\n"                              // 5
    "  links: {nvlink: {bandwidth_gbps: 300}}\n";  // 6

}  // namespace

TEST_CASE("a profile written with a handful of numbers gets the documented defaults", "[profile]") {
  const HardwareProfile p = load_inline_profile(kMinimal);
  CHECK(p.gpu.sm_count == 100);
  CHECK(p.gpu.gemm_efficiency == 0.8);
  CHECK(p.gpu.copy_engines == 2);
  CHECK(p.fabric.topology == "nvswitch");
  CHECK(p.comm.channels == 24);
  CHECK(p.fabric.nodes.size() == 5);   // 4 GPUs + the switch
  CHECK(p.fabric.edges.size() == 8);   // both directions
}

TEST_CASE("every built-in profile loads and expands", "[profile]") {
  const auto names = builtin_profile_names(kHardwareDir);
  CHECK(names.size() >= 6);
  for (const auto& name : names) {
    INFO(name);
    const HardwareProfile p = load_profile(name, kHardwareDir);
    CHECK(p.name == name);
    CHECK(p.gpu.sm_count > 0);
    CHECK_FALSE(p.fabric.edges.empty());
    int gpus = 0;
    for (const auto& n : p.fabric.nodes) gpus += n.kind == FabricNodeKind::gpu;
    CHECK(gpus == p.fabric.num_gpus);
    const auto j = profile_to_json(p);
    CHECK(j["fabric"]["edges"].size() == p.fabric.edges.size());
  }
  const HardwareProfile pcie = load_profile("rtx4090-4x-pcie", kHardwareDir);
  CHECK(pcie.fabric.nodes.size() == 8);   // 4 GPUs, 2 PCIe switches, 2 hosts
  CHECK(pcie.fabric.edges.size() == 14);  // 8 GPU-switch, 4 switch-host, 2 host-host
  const HardwareProfile two = load_profile("h100-2node-ib400", kHardwareDir);
  CHECK(two.fabric.nodes.size() == 16 + 16 + 2 + 1);
  CHECK(two.fabric.links.at("network").bandwidth_gbps == 50);
}

TEST_CASE("loader error: unknown key names key and line", "[profile][errors]") {
  const std::string msg = inline_profile_error(std::string(kMinimal) + "comm:\n  chanels: 8\n");
  CHECK(msg.rfind("scenarios/x.yaml:8: hardware.comm.chanels: unknown key", 0) == 0);
}

TEST_CASE("loader error: wrong type", "[profile][errors]") {
  const std::string msg = inline_profile_error(
      "gpu:\n  sm_count: many\n  peak_tflops: {bf16: 500}\nfabric:\n  num_gpus: 4\n  links: {nvlink: {bandwidth_gbps: 300}}\n");
  CHECK(msg == "scenarios/x.yaml:2: hardware.gpu.sm_count: must be an integer in [1, 4096] SMs (got many)");
  const std::string msg2 = inline_profile_error(
      "gpu:\n  sm_count: 10\n  peak_tflops: {bf16: fast}\nfabric:\n  num_gpus: 4\n  links: {nvlink: {bandwidth_gbps: 300}}\n");
  CHECK(msg2 == "scenarios/x.yaml:3: hardware.gpu.peak_tflops.bf16: must be a number (got fast)");
}

TEST_CASE("loader error: missing required field", "[profile][errors]") {
  const std::string msg = inline_profile_error("gpu:\n  sm_count: 10\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: nvswitch\n  links: {nvlink: {bandwidth_gbps: 300}}\n");
  CHECK(msg == "scenarios/x.yaml:5: hardware.fabric.num_gpus: missing required field");
}

TEST_CASE("loader error: non-positive size", "[profile][errors]") {
  const std::string msg = inline_profile_error(
      "gpu:\n  sm_count: -3\n  peak_tflops: {bf16: 500}\nfabric:\n  num_gpus: 4\n  links: {nvlink: {bandwidth_gbps: 300}}\n");
  CHECK(msg == "scenarios/x.yaml:2: hardware.gpu.sm_count: must be an integer in [1, 4096] SMs (got -3): the engine addresses SMs in 12 bits; the largest GPUs have a few hundred");
  const std::string msg2 = inline_profile_error(
      "gpu:\n  sm_count: 3\n  peak_tflops: {bf16: 500}\nfabric:\n  num_gpus: 4\n  links: {nvlink: {bandwidth_gbps: 0}}\n");
  CHECK(msg2 == "scenarios/x.yaml:6: hardware.fabric.links.nvlink.bandwidth_gbps: must be in [0.001, 1e+06] GB/s (got 0): HBM3e is 8,000 GB/s; below 1 MB/s a transfer of a few GB leaves int64 ps");
}

TEST_CASE("loader error: a node size that must divide the GPU count", "[profile][errors]") {
  const std::string msg = inline_profile_error(
      "gpu:\n  sm_count: 3\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: multi_node\n  num_gpus: 8\n"
      "  gpus_per_node: 3\n  links: {nvlink: {bandwidth_gbps: 300}, network: {bandwidth_gbps: 50}}\n");
  CHECK(msg == "scenarios/x.yaml:7: hardware.fabric.gpus_per_node: must divide fabric.num_gpus (8)");
}

TEST_CASE("loader error: a topology's link class is missing", "[profile][errors]") {
  const std::string msg = inline_profile_error(
      "gpu:\n  sm_count: 3\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: pcie\n  num_gpus: 4\n"
      "  gpus_per_numa: 2\n  links:\n    pcie: {bandwidth_gbps: 25}\n");
  CHECK(msg.find("hardware.fabric.links: missing link class 'host'") != std::string::npos);
}

TEST_CASE("option set: overrides create or replace values before validation", "[profile][overrides]") {
  const HardwareProfile p = load_profile("h100-sxm-8x-nvswitch", kHardwareDir,
                                         {"hardware.fabric.links.nvlink.bandwidth_gbps=900", "gpu.sm_count=120",
                                          "comm.channels=32", "gpu.peak_tflops={bf16: 500}"});
  CHECK(p.fabric.links.at("nvlink").bandwidth_gbps == 900);
  CHECK(p.fabric.edges.front().bandwidth_gbps == 900);
  CHECK(p.gpu.sm_count == 120);
  CHECK(p.comm.channels == 32);
  CHECK(p.gpu.peak_tflops.size() == 1);
  CHECK(p.gpu.peak_tflops.at("bf16") == 500);

  // An unknown path is caught by validation afterwards.
  CHECK_THROWS_WITH(load_profile("h100-sxm-8x-nvswitch", kHardwareDir, {"gpu.bogus=1"}),
                    Catch::Contains("gpu.bogus: unknown key"));
  CHECK_THROWS_AS(parse_override("gpu.sm_count"), InputError);
  CHECK_THROWS_AS(parse_override("gpu..sm_count=1"), InputError);

  YAML::Node root = YAML::Load("a: {b: 1}\nlist: [{x: 1}, {x: 2}]\n");
  apply_overrides(root, {"a.c.d=[1, 2]", "a.b=hello", "list.1.x=5"});
  CHECK(root["a"]["b"].as<std::string>() == "hello");
  CHECK(root["a"]["c"]["d"].size() == 2);
  CHECK(root["list"][1]["x"].as<int>() == 5);
  CHECK(root["list"][0]["x"].as<int>() == 1);
}

TEST_CASE("unknown built-in name lists the known ones", "[profile][errors]") {
  CHECK_THROWS_WITH(load_profile("h200-nonexistent", kHardwareDir), Catch::Contains("h100-sxm-8x-nvswitch"));
}

TEST_CASE("launch, transports and GEMM HBM traffic load with their defaults and overrides", "[profile][launch]") {
  const HardwareProfile d = load_inline_profile(kMinimal);
  CHECK(d.launch.host_us == 4.0);
  CHECK(d.launch.gap_us == 0.9);
  CHECK_FALSE(d.launch.cuda_graphs);
  CHECK(d.transports.copy_engine.efficiency == 0.83);
  CHECK(d.gpu.gemm_l2_reuse == 8.0);
  const HardwareProfile p = load_inline_profile(std::string(kMinimal) +
                                        "launch: {host_us: 2, gap_us: 0.5, graph_gap_us: 0.2, cuda_graphs: true}\n"
                                        "transports:\n"
                                        "  sm_copy: {latency_us: 1, efficiency: 0.5, cta_gbps: 10}\n"
                                        "  nccl_p2p: {latency_us: 6}\n"
                                        "curves:\n"
                                        "  p2p.nvlink: {alpha_us: 1, beta_gbps: 300}\n"
                                        "  copy_engine.d2d: {alpha_us: 2, beta_gbps: 1300}\n");
  CHECK(p.launch.gap_ps() == 200'000);
  CHECK(p.launch.host_ps() == 0);
  CHECK(p.transports.sm_copy.cta_gbps == 10);
  CHECK(p.transports.nccl_p2p.latency_us == 6);
  CHECK(p.transports.nccl_p2p.efficiency == 0.82);  // default kept
  CHECK(p.curves.count("sm_copy.nvlink") == 1);    // the older p2p. name
  CHECK(p.curves.count("copy_engine.d2d") == 1);
}

TEST_CASE("loader error: bad launch, transport and topology fields name file, line and key", "[profile][errors][launch]") {
  const std::string base(kMinimal);  // 6 lines
  CHECK(inline_profile_error(base + "launch: {gap_us: -1}\n") ==
        "scenarios/x.yaml:7: hardware.launch.gap_us: must be in [0, 1e+06] us (got -1): one second per step is far beyond any real kernel or link");
  CHECK(inline_profile_error(base + "transports:\n  sm_copy: {efficiency: 1.5}\n") ==
        "scenarios/x.yaml:8: hardware.transports.sm_copy.efficiency: must be a fraction in (0, 1] (got 1.5)");
  CHECK(inline_profile_error(base + "transports:\n  nvlink: {latency_us: 1}\n").find("hardware.transports.nvlink: unknown key") !=
        std::string::npos);
  CHECK(inline_profile_error(base + "transports:\n  copy_engine: {cta_gbps: 3}\n")
            .find("hardware.transports.copy_engine.cta_gbps: unknown key") != std::string::npos);
  CHECK(inline_profile_error("gpu:\n  sm_count: 10\n  peak_tflops: {bf16: 500}\n  gemm_l2_reuse: 0.5\nfabric:\n  num_gpus: 4\n"
                 "  links: {nvlink: {bandwidth_gbps: 300}}\n") ==
        "scenarios/x.yaml:4: hardware.gpu.gemm_l2_reuse: must be in [1, 10000] (got 0.5): every operand byte is read at least once");
  CHECK(inline_profile_error("gpu:\n  sm_count: 10\n  peak_tflops: {bf16: 500}\nfabric:\n  num_gpus: 4\n  virtual_link: d2d\n"
                 "  links: {nvlink: {bandwidth_gbps: 300}}\n") ==
        "scenarios/x.yaml:6: hardware.fabric.virtual_link: only allowed with topology: virtual");
  CHECK(inline_profile_error("gpu:\n  sm_count: 10\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: virtual\n  num_gpus: 4\n"
                 "  links: {nvlink: {bandwidth_gbps: 300}}\n")
            .find("missing link class 'd2d'") != std::string::npos);
  CHECK(inline_profile_error(base + "curves:\n  p2p.nvlink: {alpha_us: 1, beta_gbps: 3}\n  sm_copy.nvlink: {alpha_us: 1, beta_gbps: 3}\n")
            .find("given twice") != std::string::npos);
}

TEST_CASE("virtual and rail-optimised topologies expand to the graphs they describe", "[profile][topology]") {
  const HardwareProfile v = load_inline_profile(
      "gpu:\n  sm_count: 32\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: virtual\n  num_gpus: 4\n"
      "  links: {d2d: {bandwidth_gbps: 1300}}\n");
  CHECK(v.fabric.nodes.size() == 5);  // 4 ranks + the GPU's memory system
  const HardwareProfile h = load_inline_profile(
      "gpu:\n  sm_count: 32\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: virtual\n  num_gpus: 2\n"
      "  virtual_link: host\n  links: {pcie: {bandwidth_gbps: 25}}\n");
  CHECK(h.fabric.nodes.size() == 5);  // 2 ranks, out, in, host
  const HardwareProfile r = load_inline_profile(
      "gpu:\n  sm_count: 32\n  peak_tflops: {bf16: 500}\nfabric:\n  topology: multi_node\n  num_gpus: 16\n"
      "  gpus_per_node: 8\n  rails: true\n  links: {nvlink: {bandwidth_gbps: 450}, network: {bandwidth_gbps: 50}}\n");
  int rails = 0;
  for (const auto& n : r.fabric.nodes) rails += n.name.rfind("rail", 0) == 0;
  CHECK(rails == 8);
}

TEST_CASE("launch: a collective's host cost per primitive, the scalar for the others", "[profile][launch]") {
  const HardwareProfile p = load_inline_profile(std::string(kMinimal) +
                                        "launch: {collective_host_us: 10, collective_host_us_by_primitive: {all_reduce: 30, "
                                        "all_gather: 12.5}}\n");
  CHECK(p.launch.collective_host_ps(CollectivePrimitive::all_reduce) == 30'000'000);
  CHECK(p.launch.collective_host_ps(CollectivePrimitive::all_gather) == 12'500'000);
  CHECK(p.launch.collective_host_ps(CollectivePrimitive::reduce_scatter) == 10'000'000);
  // Under CUDA Graphs the host pays once per graph: nothing per collective.
  const HardwareProfile g = load_inline_profile(std::string(kMinimal) +
                                        "launch: {cuda_graphs: true, collective_host_us_by_primitive: {all_reduce: 30}}\n");
  CHECK(g.launch.collective_host_ps(CollectivePrimitive::all_reduce) == 0);
  // The JSON form carries the map.
  CHECK(profile_to_json(p)["launch"]["collective_host_us_by_primitive"]["all_reduce"] == 30.0);
  CHECK_FALSE(profile_to_json(load_inline_profile(kMinimal))["launch"].contains("collective_host_us_by_primitive"));
  // Bad input names the file, line and key.
  CHECK(inline_profile_error(std::string(kMinimal) + "launch:\n  collective_host_us_by_primitive: {allreduce: 3}\n") ==
        "scenarios/x.yaml:8: hardware.launch.collective_host_us_by_primitive.allreduce: unknown collective primitive "
        "(all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce)");
  CHECK(inline_profile_error(std::string(kMinimal) + "launch:\n  collective_host_us_by_primitive: {all_reduce: -2}\n").find(
            "scenarios/x.yaml:8: hardware.launch.collective_host_us_by_primitive.all_reduce: must be in") == 0);
  CHECK(inline_profile_error(std::string(kMinimal) + "launch:\n  collective_host_us_by_primitive: 3\n").find("scenarios/x.yaml:8") == 0);
}
