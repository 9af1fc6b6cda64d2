#include "cost_model/profile_loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/nccl_constants.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/source_paths.hpp"


namespace overlap {
namespace fs = std::filesystem;
namespace {

int to_int(const YamlReader& r, const std::string& key, std::int64_t v) {
  if (v > 1'000'000'000) r.fail_at(key, "value too large (got " + std::to_string(v) + ")");
  return static_cast<int>(v);
}

// A quantity where 0 means "not given" (the model then leaves it out) and anything else must lie
// in `range`.
double zero_or_in(const YamlReader& r, const std::string& key, const InputRange& range, double fallback) {
  const auto c = r.optional_child(key);
  if (!c) return fallback;
  const double v = c->as_double();
  if (v == 0) return 0;
  if (const auto why = range_violation(range, v, c->node().Scalar())) c->fail("must be 0 (not given) or " + why->substr(5));
  return v;
}

// gemm_tile_us: the time of one 128x128x1024 tile; below 0.1 ns per tile the rate is > 4e5 TFLOP/s
// per SM, above 1 s it is slower than a CPU.
constexpr InputRange kGemmTileUs{"GEMM tile time", "gpu.gemm_tile_us", 1e-4, 1e6, "us",
                                 "0 = derive from peak_tflops; else one 128x128x1024 tile on one SM"};

GpuSpec read_gpu(const YamlReader& r) {
  r.allow_keys({"name", "sm_count", "gemm_ctas_per_sm", "clock_mhz", "peak_tflops", "gemm_efficiency",
                "hbm_bandwidth_gbps", "hbm_efficiency", "hbm_latency_us", "hbm_sm_gbps", "copy_engines", "min_sm_partition", "gemm_tile_us",
                "gemm_sm_load_gbps", "gemm_cta_overhead_us", "l2_bytes", "gemm_comm_interference", "gemm_l2_reuse",
                "gemm_full_rate_sms"});
  GpuSpec g;
  g.name = r.get_string("name", g.name);
  // The engine addresses SMs in 12 bits (sim/engine.cpp); the largest GPUs today have a few hundred.
  g.sm_count = static_cast<int>(r.get_int_in("sm_count", ranges::sm_count));
  g.gemm_ctas_per_sm = static_cast<int>(r.get_int_in("gemm_ctas_per_sm", ranges::ctas_per_sm, g.gemm_ctas_per_sm));
  g.clock_mhz = r.get_double_in("clock_mhz", ranges::clock_mhz, g.clock_mhz);
  if (g.clock_mhz != 0 && g.clock_mhz < 1) r.fail_at("clock_mhz", "must be 0 (not given) or at least 1 MHz");
  if (auto p = r.optional_child("peak_tflops")) {
    p->expect_map();
    for (const auto& key : p->keys()) {
      if (!parse_dtype(key)) p->fail_at(key, "unknown dtype (allowed: fp8, fp16, bf16, fp32)");
      g.peak_tflops[key] = p->get_double_in(key, ranges::peak_tflops);
    }
  }
  g.gemm_efficiency = r.get_fraction("gemm_efficiency", g.gemm_efficiency);
  g.hbm_bandwidth_gbps = zero_or_in(r, "hbm_bandwidth_gbps", ranges::bandwidth_gbps, g.hbm_bandwidth_gbps);
  g.hbm_efficiency = r.get_fraction("hbm_efficiency", g.hbm_efficiency);
  g.hbm_latency_us = r.get_double_in("hbm_latency_us", ranges::latency_us, g.hbm_latency_us);
  g.hbm_sm_gbps = zero_or_in(r, "hbm_sm_gbps", ranges::bandwidth_gbps, g.hbm_sm_gbps);
  g.copy_engines = static_cast<int>(r.get_int_in("copy_engines", ranges::copy_engines, g.copy_engines));
  g.min_sm_partition = static_cast<int>(r.get_int_in("min_sm_partition", ranges::sm_count, g.min_sm_partition));
  g.gemm_tile_us = zero_or_in(r, "gemm_tile_us", kGemmTileUs, g.gemm_tile_us);
  g.gemm_sm_load_gbps = zero_or_in(r, "gemm_sm_load_gbps", ranges::bandwidth_gbps, g.gemm_sm_load_gbps);
  g.gemm_cta_overhead_us = r.get_double_in("gemm_cta_overhead_us", ranges::latency_us, g.gemm_cta_overhead_us);
  g.l2_bytes = r.get_int_in("l2_bytes", ranges::l2_bytes, g.l2_bytes);
  g.gemm_comm_interference = r.get_double_in("gemm_comm_interference", ranges::factor, g.gemm_comm_interference);
  g.gemm_l2_reuse = r.get_double_in("gemm_l2_reuse", ranges::l2_reuse, g.gemm_l2_reuse);
  g.gemm_full_rate_sms = r.get_double_in("gemm_full_rate_sms", ranges::full_rate_sms, g.gemm_full_rate_sms);
  if (g.peak_tflops.empty() && g.gemm_tile_us <= 0) {
    throw InputError(r.file(), r.line(), r.path().empty() ? "peak_tflops" : r.path() + ".peak_tflops",
                     "missing required field (or give gemm_tile_us)");
  }
  if (g.min_sm_partition > g.sm_count) r.fail_at("min_sm_partition", "must not exceed sm_count");
  return g;
}

std::optional<FabricNodeKind> parse_node_kind(const std::string& s) {
  for (auto k : {FabricNodeKind::gpu, FabricNodeKind::nvswitch, FabricNodeKind::pcie_switch, FabricNodeKind::host,
                 FabricNodeKind::nic, FabricNodeKind::network_switch, FabricNodeKind::gpu_memory}) {
    if (s == fabric_node_kind_name(k)) return k;
  }
  return std::nullopt;
}

// The one check of an explicit fabric graph, for every command that loads a profile (profile show,
// run, sweep, tune, collective): each GPU index 0..num_gpus-1 on exactly one GPU node, no edge from
// a node to itself, every edge matched by one back (links are full duplex: a one-way edge would let
// data flow one way only, and the collectives send both ways), and every GPU connected to every
// other. Errors name the profile file, the line and the key of the node or edge at fault.
void check_explicit_graph(const YamlReader& r, const YamlReader& nodes, const YamlReader& edges, const FabricSpec& f,
                          const std::vector<std::size_t>& edge_entry) {
  std::vector<int> node_of_gpu(static_cast<std::size_t>(f.num_gpus), -1);
  int gpu_nodes = 0;
  for (std::size_t i = 0; i < f.nodes.size(); ++i) {
    const FabricNode& n = f.nodes[i];
    if (n.kind != FabricNodeKind::gpu) continue;
    ++gpu_nodes;
    int& slot = node_of_gpu[static_cast<std::size_t>(n.gpu)];
    if (slot >= 0)
      nodes.element(i).fail_at("gpu", fmt::format("GPU index {} is already node '{}'", n.gpu,
                                                  f.nodes[static_cast<std::size_t>(slot)].name));
    slot = static_cast<int>(i);
  }
  if (gpu_nodes != f.num_gpus)
    r.fail_at("num_gpus", fmt::format("is {} but fabric.nodes has {} GPU node{} (one per GPU index 0..{})", f.num_gpus,
                                      gpu_nodes, gpu_nodes == 1 ? "" : "s", f.num_gpus - 1));
  std::set<std::pair<int, int>> directed;
  for (const FabricEdge& e : f.edges) directed.emplace(e.from, e.to);
  for (std::size_t k = 0; k < f.edges.size(); ++k) {
    const FabricEdge& e = f.edges[k];
    if (!directed.count({e.to, e.from}))
      edges.element(edge_entry[k]).fail(fmt::format(
          "a one-way edge from '{}' to '{}': links are full duplex, give the edge back too (or leave "
          "bidirectional: true)", f.nodes[static_cast<std::size_t>(e.from)].name,
          f.nodes[static_cast<std::size_t>(e.to)].name));
  }
  // Every edge has its reverse, so connectivity is undirected: one search from GPU 0.
  std::vector<std::vector<int>> adjacent(f.nodes.size());
  for (const FabricEdge& e : f.edges) adjacent[static_cast<std::size_t>(e.from)].push_back(e.to);
  std::vector<char> reached(f.nodes.size(), 0);
  std::vector<int> todo = {node_of_gpu[0]};
  reached[static_cast<std::size_t>(node_of_gpu[0])] = 1;
  while (!todo.empty()) {
    const int n = todo.back();
    todo.pop_back();
    for (int m : adjacent[static_cast<std::size_t>(n)])
      if (!reached[static_cast<std::size_t>(m)]) {
        reached[static_cast<std::size_t>(m)] = 1;
        todo.push_back(m);
      }
  }
  for (int g = 1; g < f.num_gpus; ++g) {
    const auto i = static_cast<std::size_t>(node_of_gpu[static_cast<std::size_t>(g)]);
    if (!reached[i])
      nodes.element(i).fail(fmt::format("GPU node '{}' has no path of edges to GPU node '{}'", f.nodes[i].name,
                                        f.nodes[static_cast<std::size_t>(node_of_gpu[0])].name));
  }
}

void read_explicit_graph(const YamlReader& r, FabricSpec& f) {
  const YamlReader nodes = r.child("nodes");
  nodes.expect_sequence();
  if (const auto why = range_violation(ranges::fabric_nodes, static_cast<double>(nodes.size()))) nodes.fail(*why);
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YamlReader n = nodes.element(i);
    n.allow_keys({"name", "kind", "gpu"});
    FabricNode node;
    node.name = n.get_string("name");
    const auto kind = parse_node_kind(n.get_string("kind"));
    if (!kind) n.fail_at("kind", "unknown node kind (allowed: gpu, nvswitch, pcie_switch, host, nic, network_switch, "
                             "gpu_memory)");
    node.kind = *kind;
    if (node.kind == FabricNodeKind::gpu) {
      node.gpu = to_int(n, "gpu", n.get_nonnegative_int("gpu", -1));
      if (node.gpu < 0 || node.gpu >= f.num_gpus) n.fail_at("gpu", "must be a GPU index below fabric.num_gpus");
    }
    if (!index.emplace(node.name, static_cast<int>(f.nodes.size())).second) n.fail_at("name", "duplicate node name");
    f.nodes.push_back(node);
  }
  const YamlReader edges = r.child("edges");
  std::vector<std::size_t> edge_entry;  // the fabric.edges entry of each directed edge
  edges.expect_sequence();
  if (const auto why = range_violation(ranges::fabric_nodes, static_cast<double>(edges.size()))) edges.fail(*why);
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const YamlReader e = edges.element(i);
    e.allow_keys({"from", "to", "link_class", "bandwidth_gbps", "latency_us", "bidirectional"});
    auto node_of = [&](const char* key) {
      const auto it = index.find(e.get_string(key));
      if (it == index.end()) e.fail_at(key, "unknown node");
      return it->second;
    };
    FabricEdge edge;
    edge.from = node_of("from");
    edge.to = node_of("to");
    edge.link_class = e.get_string("link_class");
    const auto lc = f.links.find(edge.link_class);
    if (lc == f.links.end()) e.fail_at("link_class", "unknown link class (not under fabric.links)");
    edge.bandwidth_gbps = e.get_double_in("bandwidth_gbps", ranges::bandwidth_gbps, lc->second.bandwidth_gbps);
    edge.latency_us = e.get_double_in("latency_us", ranges::latency_us, lc->second.latency_us);
    if (edge.from == edge.to) e.fail_at("to", "an edge from node '" + f.nodes[edge.from].name + "' to itself");
    f.edges.push_back(edge);
    edge_entry.push_back(i);
    if (e.get_bool("bidirectional", true)) {
      std::swap(edge.from, edge.to);
      f.edges.push_back(edge);
      edge_entry.push_back(i);
    }
  }
  check_explicit_graph(r, nodes, edges, f, edge_entry);
}

FabricSpec read_fabric(const YamlReader& r) {
  r.allow_keys({"topology", "num_gpus", "gpus_per_node", "gpus_per_numa", "virtual_link", "rails", "links", "nodes",
                "edges"});
  FabricSpec f;
  f.topology = r.get_string("topology", f.topology);
  static const std::vector<std::string> topologies = {"nvswitch", "full_mesh", "pcie", "multi_node", "virtual",
                                                      "explicit"};
  if (std::find(topologies.begin(), topologies.end(), f.topology) == topologies.end()) {
    r.fail_at("topology", "unknown topology '" + f.topology +
                              "' (allowed: nvswitch, full_mesh, pcie, multi_node, virtual, explicit)");
  }
  if (r.has("virtual_link")) {
    if (f.topology != "virtual") r.fail_at("virtual_link", "only allowed with topology: virtual");
    f.virtual_link = r.get_string("virtual_link");
    if (f.virtual_link != "d2d" && f.virtual_link != "host")
      r.fail_at("virtual_link", "must be d2d or host (got '" + f.virtual_link + "')");
  }
  if (r.has("rails")) {
    if (f.topology != "multi_node") r.fail_at("rails", "only allowed with topology: multi_node");
    f.rails = r.get_bool("rails", false);
  }
  f.num_gpus = static_cast<int>(r.get_int_in("num_gpus", ranges::num_gpus));
  f.gpus_per_node = static_cast<int>(r.get_int_in("gpus_per_node", ranges::gpus_per_group, 0));
  f.gpus_per_numa = static_cast<int>(r.get_int_in("gpus_per_numa", ranges::gpus_per_group, 0));
  if (f.gpus_per_node > 0 && f.num_gpus % f.gpus_per_node != 0) {
    r.fail_at("gpus_per_node", "must divide fabric.num_gpus (" + std::to_string(f.num_gpus) + ")");
  }
  if (f.gpus_per_numa > 0 && f.num_gpus % f.gpus_per_numa != 0) {
    r.fail_at("gpus_per_numa", "must divide fabric.num_gpus (" + std::to_string(f.num_gpus) + ")");
  }
  const YamlReader links = r.child("links");
  links.expect_map();
  if (links.size() == 0) links.fail("needs at least one link class");
  for (const auto& name : links.keys()) {
    const YamlReader l = links.child(name);
    l.allow_keys({"bandwidth_gbps", "latency_us"});
    LinkClass lc;
    lc.name = name;
    lc.bandwidth_gbps = l.get_double_in("bandwidth_gbps", ranges::bandwidth_gbps);
    lc.latency_us = l.get_double_in("latency_us", ranges::latency_us, 0);
    f.links[name] = lc;
  }
  // The link classes each preset needs (fabric_topology.cpp).
  std::vector<std::string> need;
  if (f.topology == "nvswitch" || f.topology == "full_mesh") need = {"nvlink"};
  if (f.topology == "pcie") {
    need = {"pcie"};
    const int per_numa = f.gpus_per_numa > 0 ? f.gpus_per_numa : f.num_gpus;
    if (f.num_gpus > per_numa) need.push_back("host");
  }
  if (f.topology == "multi_node") need = {"nvlink", "network"};
  if (f.topology == "virtual") need = {f.virtual_link == "host" ? "pcie" : "d2d"};
  for (const auto& n : need) {
    if (!f.links.count(n)) links.fail("missing link class '" + n + "' (topology " + f.topology + " needs it)");
  }
  // A link class that no link of the topology uses is a misspelling or a leftover; silently ignoring
  // it would let `--set hardware.fabric.links.nvlnk.bandwidth_gbps=5` change nothing.
  const auto refuse_unused = [&](const std::vector<std::string>& usable) {
    for (const auto& name : links.keys()) {
      if (std::find(usable.begin(), usable.end(), name) != usable.end()) continue;
      std::string list;
      for (const auto& u : usable) list += (list.empty() ? "" : ", ") + u;
      links.fail_at(name, "unknown link class: topology " + f.topology + " uses " +
                              (list.empty() ? std::string("none") : list) + " (nothing reads '" + name + "')");
    }
  };
  if (f.topology == "explicit") {
    read_explicit_graph(r, f);
    std::vector<std::string> used;
    for (const auto& e : f.edges)
      if (std::find(used.begin(), used.end(), e.link_class) == used.end()) used.push_back(e.link_class);
    refuse_unused(used);
  } else {
    // The classes each preset can use (fabric_topology.cpp); pcie's "host" only with several NUMA
    // nodes and virtual's two only one at a time, but either is a known name.
    std::vector<std::string> usable = need;
    if (f.topology == "pcie") usable = {"pcie", "host"};
    if (f.topology == "virtual") usable = {"d2d", "pcie"};
    refuse_unused(usable);
    if (r.has("nodes")) r.fail_at("nodes", "only allowed with topology: explicit");
    if (r.has("edges")) r.fail_at("edges", "only allowed with topology: explicit");
    expand_topology(f);
  }
  return f;
}

// comm.latency_us: {<Algorithm>: {<Protocol>: {base, nvlink, pci, net}}} overrides NCCL's latencies.
void read_latency_overrides(const YamlReader& r, NcclTunerConstants& tuner) {
  r.expect_map();
  for (const auto& algo_name : r.keys()) {
    const auto algo = parse_nccl_algorithm(algo_name);
    if (!algo) r.fail_at(algo_name, "unknown algorithm (NCCL's names: Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT)");
    const YamlReader a = r.child(algo_name);
    a.expect_map();
    for (const auto& proto_name : a.keys()) {
      const auto proto = parse_nccl_protocol(proto_name);
      if (!proto) a.fail_at(proto_name, "unknown protocol (NCCL's names: LL, LL128, Simple)");
      const YamlReader l = a.child(proto_name);
      l.allow_keys({"base", "nvlink", "pci", "net"});
      NcclLatency& lat = tuner.at(*algo, *proto);
      lat.base_us = l.get_double_in("base", ranges::latency_us, lat.base_us);
      for (auto h : {NcclHw::nvlink, NcclHw::pci, NcclHw::net}) {
        auto& v = lat.hw_us[static_cast<std::size_t>(index_of(h))];
        v = l.get_double_in(nccl_hw_name(h), ranges::latency_us, v);
      }
    }
  }
}

CommSpec read_comm(const YamlReader& r) {
  if (r.has("protocol_efficiency")) {
    r.fail_at("protocol_efficiency", "replaced by NCCL's per-protocol model: pick a protocol with comm.protocol "
                                     "(LL, LL128, Simple) or leave it to the size (auto)");
  }
  r.allow_keys({"library", "algorithm", "protocol", "arch", "nvlink_sharp", "collnet", "channels", "nvls_channels",
                "p2p_channels", "bandwidth_efficiency", "latency_us", "ll_max_bw_gbps", "ring_ll128_channel_gbps",
                "tree_channel_gbps", "tree_ll128_channel_gbps", "nvls_tree_channel_gbps", "nvls_efficiency",
                "link_kinds", "base_latency_us", "step_latency_us"});
  CommSpec c;
  c.library = r.get_string("library", c.library);
  // Only NCCL's tuning model is implemented (RCCL follows it, facts.md); another name is a typo.
  if (c.library != "nccl" && c.library != "rccl") r.fail_at("library", "unknown library '" + c.library + "' (nccl, rccl)");
  const std::string algo = r.get_string("algorithm", "auto");
  if (algo != "auto") {
    c.algorithm = parse_nccl_algorithm(algo);
    if (!c.algorithm) {
      r.fail_at("algorithm", "unknown algorithm '" + algo +
                                 "' (auto, or NCCL's names: Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT)");
    }
  }
  const std::string proto = r.get_string("protocol", "auto");
  if (proto != "auto") {
    c.protocol = parse_nccl_protocol(proto);
    if (!c.protocol) r.fail_at("protocol", "unknown protocol '" + proto + "' (auto, or NCCL's names: LL, LL128, Simple)");
  }
  const std::string arch = r.get_string("arch", nccl_arch_name(c.arch));
  const auto parsed_arch = parse_nccl_arch(arch);
  if (!parsed_arch) r.fail_at("arch", "unknown GPU generation '" + arch + "' (volta, ampere, hopper, blackwell)");
  c.arch = *parsed_arch;
  c.tuner = NcclTunerConstants::defaults(c.arch);
  c.nvlink_sharp = r.get_bool("nvlink_sharp", c.nvlink_sharp);
  c.collnet = r.get_bool("collnet", c.collnet);
  c.channels = static_cast<int>(r.get_int_in("channels", ranges::channels, c.channels));
  c.nvls_channels = static_cast<int>(r.get_int_in("nvls_channels", ranges::channels, c.nvls_channels));
  c.p2p_channels = static_cast<int>(r.get_int_in("p2p_channels", ranges::channels, c.p2p_channels));
  c.bandwidth_efficiency = r.get_fraction("bandwidth_efficiency", c.bandwidth_efficiency);
  // Before issue 13 a profile gave one latency pair: NCCL's Ring/Simple base and per-step latency.
  // They still set exactly that (on every link kind).
  if (r.has("base_latency_us")) c.tuner.at(NcclAlgorithm::Ring, NcclProtocol::Simple).base_us = r.get_double_in("base_latency_us", ranges::latency_us);
  if (r.has("step_latency_us")) {
    const double step = r.get_double_in("step_latency_us", ranges::latency_us);
    for (auto& v : c.tuner.at(NcclAlgorithm::Ring, NcclProtocol::Simple).hw_us) v = step;
  }
  if (auto l = r.optional_child("latency_us")) read_latency_overrides(*l, c.tuner);
  const auto cap = [&](const char* key, std::array<double, 3>& v) {
    if (r.has(key)) v.fill(r.get_double_in(key, ranges::bandwidth_gbps));
  };
  cap("ll_max_bw_gbps", c.tuner.ll_max_bw_gbps);
  cap("ring_ll128_channel_gbps", c.tuner.ring_ll128_channel_gbps);
  cap("tree_channel_gbps", c.tuner.tree_channel_gbps);
  cap("tree_ll128_channel_gbps", c.tuner.tree_ll128_channel_gbps);
  if (r.has("nvls_tree_channel_gbps")) c.tuner.nvls_tree_channel_gbps.fill(zero_or_in(r, "nvls_tree_channel_gbps", ranges::bandwidth_gbps, 0));
  c.tuner.nvls_efficiency = r.get_double_in("nvls_efficiency", ranges::factor, c.tuner.nvls_efficiency);
  if (auto k = r.optional_child("link_kinds")) {
    k->expect_map();
    for (const auto& cls : k->keys()) {
      const auto kind = parse_nccl_hw(k->get_string(cls));
      if (!kind) k->fail_at(cls, "unknown link kind (nvlink, pci, net)");
      c.link_kinds[cls] = *kind;
    }
  }
  return c;
}

LaunchSpec read_launch(const YamlReader& r) {
  r.allow_keys({"host_us", "gap_us", "graph_gap_us", "cuda_graphs", "collective_host_us", "collective_host_us_by_primitive",
                "shared_host", "sync_host_us"});
  LaunchSpec l;
  l.host_us = r.get_double_in("host_us", ranges::latency_us, l.host_us);
  l.gap_us = r.get_double_in("gap_us", ranges::latency_us, l.gap_us);
  l.graph_gap_us = r.get_double_in("graph_gap_us", ranges::latency_us, l.graph_gap_us);
  l.cuda_graphs = r.get_bool("cuda_graphs", l.cuda_graphs);
  l.collective_host_us = r.get_double_in("collective_host_us", ranges::latency_us, l.collective_host_us);
  if (const auto by = r.optional_child("collective_host_us_by_primitive")) {
    by->expect_map();
    for (const auto& name : by->keys()) {
      const auto prim = parse_collective_primitive(name);
      if (!prim) by->fail_at(name, "unknown collective primitive (all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce)");
      l.collective_host_us_by_primitive[*prim] = by->get_double_in(name, ranges::latency_us);
    }
  }
  l.shared_host = r.get_bool("shared_host", l.shared_host);
  l.sync_host_us = r.get_double_in("sync_host_us", ranges::latency_us, l.sync_host_us);
  return l;
}

TransportsSpec read_transports(const YamlReader& r) {
  std::vector<std::string> names;
  for (Transport t : kAllTransports) names.push_back(transport_name(t));
  r.allow_keys(names);
  TransportsSpec out;
  for (Transport t : kAllTransports) {
    const auto c = r.optional_child(transport_name(t));
    if (!c) continue;
    TransportSpec& spec = out.of(t);
    if (t == Transport::sm_copy) c->allow_keys({"latency_us", "efficiency", "cta_gbps"});
    else c->allow_keys({"latency_us", "efficiency"});
    spec.latency_us = c->get_double_in("latency_us", ranges::latency_us, spec.latency_us);
    spec.efficiency = c->get_fraction("efficiency", spec.efficiency);
    if (t == Transport::sm_copy) spec.cta_gbps = zero_or_in(*c, "cta_gbps", ranges::bandwidth_gbps, spec.cta_gbps);
  }
  return out;
}

bool valid_curve_key(const std::string& key) {
  std::vector<std::string> prefixes = {"p2p."};
  for (Transport t : kAllTransports) prefixes.push_back(std::string(transport_name(t)) + ".");
  for (const std::string& prefix : prefixes) {
    if (key.rfind(prefix, 0) == 0 && key.size() > prefix.size()) return true;
  }
  // "<primitive>", optionally ".n<ranks>", optionally ".<PROTO>" (NCCL's protocol name).
  std::vector<std::string> parts;
  std::size_t at = 0;
  while (true) {
    const auto dot = key.find('.', at);
    parts.push_back(key.substr(at, dot == std::string::npos ? std::string::npos : dot - at));
    if (dot == std::string::npos) break;
    at = dot + 1;
  }
  if (parts.empty() || parts.size() > 3 || !parse_collective_primitive(parts[0])) return false;
  std::size_t i = 1;
  const auto is_ranks = [](const std::string& s) {
    return s.size() > 1 && s[0] == 'n' && std::all_of(s.begin() + 1, s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  };
  if (i < parts.size() && is_ranks(parts[i])) ++i;
  if (i < parts.size() && parse_nccl_protocol(parts[i]) && parts[i] == nccl_protocol_name(*parse_nccl_protocol(parts[i]))) ++i;
  return i == parts.size();
}

// A curve and, for an imported nccl-tests run, the protocol it was forced to (NCCL_PROTO), if any.
struct ReadCurve {
  BandwidthCurve curve;
  std::optional<NcclProtocol> protocol;
};

ReadCurve read_curve(const YamlReader& r, const std::string& base_dir) {
  r.allow_keys({"points", "alpha_us", "beta_gbps", "nccl_tests", "in_place"});
  const int forms = int(r.has("points")) + int(r.has("alpha_us") || r.has("beta_gbps")) + int(r.has("nccl_tests"));
  if (forms != 1) r.fail("give exactly one of: points, alpha_us + beta_gbps, nccl_tests");
  if (r.has("points")) {
    const YamlReader pts = r.child("points");
    pts.expect_sequence();
    if (const auto why = range_violation(ranges::curve_points, static_cast<double>(pts.size()))) pts.fail(*why);
    std::vector<CurvePoint> points;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const YamlReader p = pts.element(i);
      if (!p.is_sequence() || p.size() != 2) p.fail("must be [bytes, time_us]");
      const std::int64_t bytes = p.element(0).as_int_in(ranges::curve_bytes);
      const double us = p.element(1).as_double_in(ranges::curve_us);
      if (!(us > 0)) p.element(1).fail("must be a positive number (got " + p.element(1).node().Scalar() + ")");
      points.push_back(CurvePoint{bytes, ps_from_us(us)});
    }
    try {
      return ReadCurve{BandwidthCurve(std::move(points)), std::nullopt};
    } catch (const std::invalid_argument& e) {
      pts.fail(e.what());
    }
  }
  if (r.has("nccl_tests")) {
    const std::string file = r.get_string("nccl_tests");
    const fs::path path = fs::path(file).is_absolute() ? fs::path(file) : fs::path(base_dir) / file;
    const NcclTestsResult result = load_nccl_tests_file(path.string());
    return ReadCurve{result.curve(r.get_bool("in_place", false)), result.protocol};
  }
  return ReadCurve{BandwidthCurve::from_alpha_beta(r.get_double_in("alpha_us", ranges::curve_us, 0),
                                                   r.get_double_in("beta_gbps", ranges::bandwidth_gbps)),
                   std::nullopt};
}

GemmProfileEntry read_gemm_entry(const YamlReader& r) {
  r.allow_keys({"m", "n", "k", "dtype", "tile_m", "tile_n", "duration_us", "wave_end_us"});
  GemmProfileEntry e;
  e.m = r.get_int_in("m", ranges::gemm_dim);
  e.n = r.get_int_in("n", ranges::gemm_dim);
  e.k = r.get_int_in("k", ranges::gemm_dim);
  const auto dt = parse_dtype(r.get_string("dtype", "bf16"));
  if (!dt) r.fail_at("dtype", "unknown dtype (allowed: fp8, fp16, bf16, fp32)");
  e.dtype = *dt;
  e.tile_m = static_cast<int>(r.get_int_in("tile_m", ranges::tile, e.tile_m));
  e.tile_n = static_cast<int>(r.get_int_in("tile_n", ranges::tile, e.tile_n));
  e.duration_us = r.get_double_in("duration_us", ranges::latency_us);
  if (!(e.duration_us > 0)) r.fail_at("duration_us", "must be a positive number (got 0)");
  if (auto w = r.optional_child("wave_end_us")) {
    w->expect_sequence();
    if (const auto why = range_violation(ranges::curve_points, static_cast<double>(w->size()))) w->fail(*why);
    for (std::size_t i = 0; i < w->size(); ++i) e.wave_end_us.push_back(w->element(i).as_double_in(ranges::latency_us));
  }
  return e;
}

std::string strip_hardware_prefix(const std::string& set) {
  const std::string prefix = "hardware.";
  return set.rfind(prefix, 0) == 0 ? set.substr(prefix.size()) : set;
}

}  // namespace

// The source tree, or OVERLAP_HOME when the program runs from elsewhere (README, tools/cli.cpp).
std::string default_hardware_dir() { return builtin_hardware_dir(); }

std::vector<std::string> builtin_profile_names(const std::string& hardware_dir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(hardware_dir, ec)) {
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

HardwareProfile profile_from_yaml(const YamlReader& r, const std::string& base_dir) {
  r.allow_keys({"name", "description", "gpu", "fabric", "comm", "launch", "transports", "curves", "gemm_profiles"});
  HardwareProfile p;
  p.name = r.get_string("name", "");
  p.description = r.get_string("description", "");
  p.gpu = read_gpu(r.child("gpu"));
  p.fabric = read_fabric(r.child("fabric"));
  if (auto c = r.optional_child("comm")) p.comm = read_comm(*c);
  if (auto l = r.optional_child("launch")) p.launch = read_launch(*l);
  if (auto t = r.optional_child("transports")) p.transports = read_transports(*t);
  // A collective kernel holds its channels' SMs at once: more than the GPU has could never run. An
  // explicit value that large is an error; a default that large (a small GPU) is cut to sm_count.
  const auto comm_node = r.optional_child("comm");
  for (auto [key, value] : {std::pair<const char*, int*>{"channels", &p.comm.channels},
                            std::pair<const char*, int*>{"nvls_channels", &p.comm.nvls_channels},
                            std::pair<const char*, int*>{"p2p_channels", &p.comm.p2p_channels}}) {
    if (*value <= p.gpu.sm_count) continue;
    if (!comm_node || !comm_node->has(key)) {
      *value = p.gpu.sm_count;
      continue;
    }
    comm_node->fail_at(key, "must not exceed gpu.sm_count = " + std::to_string(p.gpu.sm_count) + " (got " +
                                std::to_string(*value) + ")");
  }
  if (auto curves = r.optional_child("curves")) {
    curves->expect_map();
    for (const auto& key : curves->keys()) {
      if (!valid_curve_key(key)) {
        curves->fail_at(key, "unknown curve (allowed: all_reduce, reduce_scatter, all_gather, all_to_all, "
                             "broadcast, reduce, optionally .n<ranks>, optionally .LL / .LL128 / .Simple; "
                             "<transport>.<link_class> with transport nccl_p2p, sm_copy, copy_engine, one_sided "
                             "or p2p)");
      }
      ReadCurve c = read_curve(curves->child(key), base_dir);
      // "p2p.<class>" is the older name of an SM-driven copy's curve.
      std::string stored = key.rfind("p2p.", 0) == 0 ? "sm_copy." + key.substr(4) : key;
      if (p.curves.count(stored)) curves->fail_at(key, "given twice (p2p.<class> is sm_copy.<class>)");
      // An nccl-tests run forced to one protocol (NCCL_PROTO in its output) measured that protocol
      // only: it is that protocol's curve (collective_model.hpp).
      if (c.protocol) {
        const std::string proto = nccl_protocol_name(*c.protocol);
        const auto dot = key.rfind('.');
        const std::string last = dot == std::string::npos ? "" : key.substr(dot + 1);
        if (parse_nccl_protocol(last) && last != proto) {
          curves->fail_at(key, "the key names protocol " + last + " but the nccl-tests file ran NCCL_PROTO=" + proto);
        }
        if (last != proto) stored = key + "." + proto;
      }
      if (p.curves.count(stored)) curves->fail_at(key, "a curve for " + stored + " is given twice");
      p.curves[stored] = std::move(c.curve);
    }
  }
  if (auto g = r.optional_child("gemm_profiles")) {
    g->expect_sequence();
    for (std::size_t i = 0; i < g->size(); ++i) p.gemm_profiles.push_back(read_gemm_entry(g->element(i)));
  }
  p.source_file = utf8_or_replaced(r.file());  // a path is bytes; JSON outputs carry it as text
  return p;
}

YAML::Node load_profile_yaml(const std::string& name_or_path, const std::string& hardware_dir,
                             std::string* file_out) {
  std::string file = name_or_path;
  if (!looks_like_path(name_or_path)) {
    file = (fs::path(hardware_dir) / (name_or_path + ".yaml")).string();
    std::error_code ec;  // (a name too long for a path is "unknown", not a filesystem exception)
    if (!fs::exists(file, ec)) {
      std::string known;
      for (const auto& n : builtin_profile_names(hardware_dir)) known += (known.empty() ? "" : ", ") + n;
      throw InputError("", 0, "hardware",
                       "unknown hardware profile '" + name_or_path + "' (" +
                           (known.empty() ? "no profiles under " + hardware_dir + "; is OVERLAP_HOME right?"
                                          : "built-in: " + known) +
                           ")");
    }
  }
  if (file_out) *file_out = file;
  return load_yaml_file(file);
}

HardwareProfile load_profile_file(const std::string& path, const std::vector<std::string>& sets) {
  YAML::Node root = load_yaml_file(path);
  std::vector<std::string> stripped;
  for (const auto& s : sets) stripped.push_back(strip_hardware_prefix(s));
  apply_overrides(root, stripped);
  const std::string base_dir = fs::path(path).parent_path().string();
  try {
    return profile_from_yaml(YamlReader(root, "", path), base_dir.empty() ? "." : base_dir);
  } catch (const InputError& e) {
    rethrow_with_source(e, sets, "hardware.");
  }
}

HardwareProfile load_profile(const std::string& name_or_path, const std::string& hardware_dir,
                             const std::vector<std::string>& sets) {
  std::string file;
  load_profile_yaml(name_or_path, hardware_dir, &file);  // resolves the name, checks it exists
  return load_profile_file(file, sets);
}

HardwareProfile load_hardware_node(const YamlReader& reader, const std::string& hardware_dir) {
  if (reader.is_scalar()) {
    try {
      return load_profile(reader.as_string(), hardware_dir);
    } catch (const InputError& e) {
      if (e.file().empty()) reader.fail(e.message());  // unknown name: point at the scenario's line
      throw;
    }
  }
  reader.expect_map();
  const std::string base_dir = reader.file().empty() ? "." : fs::path(reader.file()).parent_path().string();
  return profile_from_yaml(reader, base_dir.empty() ? "." : base_dir);
}

}  // namespace overlap
