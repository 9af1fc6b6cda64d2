#include "cost_model/profile_loader.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/collective_primitive.hpp"
#include "cost_model/nccl_constants.hpp"
#include "cost_model/nccl_tests_import.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/profile_schema.hpp"
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

namespace ps = profile_schema;

// Reads one schema row into its member with the row's check; a row without a member (monostate) or
// a map is read by its section's own code.
template <class S>
void read_key(const YamlReader& r, const ps::Key<S>& k, S& s) {
  const std::string key = k.name_str();
  std::visit(
      [&](auto m) {
        using M = decltype(m);
        if constexpr (std::is_same_v<M, std::string S::*>) {
          s.*m = k.required ? r.get_string(key) : r.get_string(key, s.*m);
        } else if constexpr (std::is_same_v<M, bool S::*>) {
          s.*m = r.get_bool(key, s.*m);
        } else if constexpr (std::is_same_v<M, int S::*> || std::is_same_v<M, std::int64_t S::*>) {
          using T = std::remove_reference_t<decltype(s.*m)>;
          s.*m = static_cast<T>(k.required ? r.get_int_in(key, *k.range) : r.get_int_in(key, *k.range, s.*m));
        } else if constexpr (std::is_same_v<M, double S::*>) {
          if (k.check == ps::Check::fraction) s.*m = r.get_fraction(key, s.*m);
          else if (k.check == ps::Check::zero_or_range) s.*m = zero_or_in(r, key, *k.range, s.*m);
          else s.*m = k.required ? r.get_double_in(key, *k.range) : r.get_double_in(key, *k.range, s.*m);
        }
      },
      k.member);
}

GpuSpec read_gpu(const YamlReader& r) {
  r.allow_keys(ps::names_of(ps::kGpu));
  GpuSpec g;
  for (const auto* k : ps::kGpu) {
    if (k != &ps::gpu_keys::peak_tflops) {
      read_key(r, *k, g);
      continue;
    }
    if (auto p = r.optional_child(k->name_str())) {
      p->expect_map();
      for (const auto& key : p->keys()) {
        if (!parse_dtype(key)) p->fail_at(key, "unknown dtype (allowed: fp8, fp16, bf16, fp32)");
        g.peak_tflops[key] = p->get_double_in(key, *k->range);
      }
    }
  }
  if (g.clock_mhz != 0 && g.clock_mhz < 1)
    r.fail_at(ps::gpu_keys::clock_mhz.name_str(), "must be 0 (not given) or at least 1 MHz");
  for (const auto& [key, mhz] : {std::pair{&ps::gpu_keys::peak_clock_mhz, g.peak_clock_mhz},
                                 std::pair{&ps::gpu_keys::sustained_clock_mhz, g.sustained_clock_mhz}}) {
    if (mhz != 0 && mhz < 1) r.fail_at(key->name_str(), "must be 0 (not given) or at least 1 MHz");
  }
  if (g.sustained_clock_mhz > 0 && g.peak_clock_mhz <= 0)
    r.fail_at(ps::gpu_keys::sustained_clock_mhz.name_str(),
              "needs " + ps::gpu_keys::peak_clock_mhz.name_str() + ", the clock the compute rates hold at");
  if (g.sustained_clock_mhz > 0 && g.clock_mhz > 0 && g.sustained_clock_mhz > g.clock_mhz)
    r.fail_at(ps::gpu_keys::sustained_clock_mhz.name_str(),
              fmt::format("{:g} MHz is above the GPU's maximum {} ({:g} MHz)", g.sustained_clock_mhz,
                          ps::gpu_keys::clock_mhz.name_str(), g.clock_mhz));
  const std::string peak = ps::gpu_keys::peak_tflops.name_str();
  if (g.peak_tflops.empty() && g.gemm_tile_us <= 0) {
    throw InputError(r.file(), r.line(), r.path().empty() ? peak : r.path() + "." + peak,
                     "missing required field (or give " + ps::gpu_keys::gemm_tile_us.name_str() + ")");
  }
  if (g.min_sm_partition > g.sm_count)
    r.fail_at(ps::gpu_keys::min_sm_partition.name_str(), "must not exceed " + ps::gpu_keys::sm_count.name_str());
  return g;
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
  namespace nk = ps::node_keys;
  namespace ek = ps::edge_keys;
  const YamlReader nodes = r.child(ps::fabric_keys::nodes.name_str());
  nodes.expect_sequence();
  if (const auto why = range_violation(*ps::fabric_keys::nodes.range, static_cast<double>(nodes.size())))
    nodes.fail(*why);
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YamlReader n = nodes.element(i);
    n.allow_keys(ps::names_of(ps::kNode));
    FabricNode node;
    read_key(n, nk::name, node);
    const auto kind = parse_fabric_node_kind(n.get_string(nk::kind.name_str()));
    if (!kind) n.fail_at(nk::kind.name_str(), "unknown node kind (allowed: gpu, nvswitch, pcie_switch, host, nic, network_switch, "
                             "gpu_memory)");
    node.kind = *kind;
    if (node.kind == FabricNodeKind::gpu) {
      const std::string gpu = nk::gpu.name_str();
      node.gpu = to_int(n, gpu, n.get_nonnegative_int(gpu, -1));
      if (node.gpu < 0 || node.gpu >= f.num_gpus)
        n.fail_at(gpu, "must be a GPU index below " + std::string(ps::fabric_keys::num_gpus.path));
    }
    if (!index.emplace(node.name, static_cast<int>(f.nodes.size())).second)
      n.fail_at(nk::name.name_str(), "duplicate node name");
    f.nodes.push_back(node);
  }
  const YamlReader edges = r.child(ps::fabric_keys::edges.name_str());
  std::vector<std::size_t> edge_entry;  // the fabric.edges entry of each directed edge
  edges.expect_sequence();
  if (const auto why = range_violation(*ps::fabric_keys::edges.range, static_cast<double>(edges.size())))
    edges.fail(*why);
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const YamlReader e = edges.element(i);
    e.allow_keys(ps::names_of(ps::kEdge));
    auto node_of = [&](const std::string& key) {
      const auto it = index.find(e.get_string(key));
      if (it == index.end()) e.fail_at(key, "unknown node");
      return it->second;
    };
    FabricEdge edge;
    edge.from = node_of(ek::from.name_str());
    edge.to = node_of(ek::to.name_str());
    read_key(e, ek::link_class, edge);
    const auto lc = f.links.find(edge.link_class);
    if (lc == f.links.end())
      e.fail_at(ek::link_class.name_str(),
                "unknown link class (not under " + std::string(ps::fabric_keys::links.path) + ")");
    // An edge's figures default to its class's.
    edge.bandwidth_gbps = lc->second.bandwidth_gbps;
    edge.latency_us = lc->second.latency_us;
    read_key(e, ek::bandwidth_gbps, edge);
    read_key(e, ek::latency_us, edge);
    if (edge.from == edge.to)
      e.fail_at(ek::to.name_str(), "an edge from node '" + f.nodes[edge.from].name + "' to itself");
    f.edges.push_back(edge);
    edge_entry.push_back(i);
    if (e.get_bool(ek::bidirectional.name_str(), true)) {
      std::swap(edge.from, edge.to);
      f.edges.push_back(edge);
      edge_entry.push_back(i);
    }
  }
  check_explicit_graph(r, nodes, edges, f, edge_entry);
}

FabricSpec read_fabric(const YamlReader& r) {
  namespace fk = ps::fabric_keys;
  r.allow_keys(ps::names_of(ps::kFabric));
  FabricSpec f;
  const std::string topology = fk::topology.name_str();
  read_key(r, fk::topology, f);
  static const std::vector<std::string> topologies = {"nvswitch", "full_mesh", "pcie", "multi_node", "virtual",
                                                      "explicit"};
  if (std::find(topologies.begin(), topologies.end(), f.topology) == topologies.end()) {
    r.fail_at(topology, "unknown topology '" + f.topology +
                              "' (allowed: nvswitch, full_mesh, pcie, multi_node, virtual, explicit)");
  }
  const std::string virtual_link = fk::virtual_link.name_str(), rails = fk::rails.name_str();
  if (r.has(virtual_link)) {
    if (f.topology != "virtual") r.fail_at(virtual_link, "only allowed with " + topology + ": virtual");
    f.virtual_link = r.get_string(virtual_link);
    if (f.virtual_link != "d2d" && f.virtual_link != "host")
      r.fail_at(virtual_link, "must be d2d or host (got '" + f.virtual_link + "')");
  }
  if (r.has(rails)) {
    if (f.topology != "multi_node") r.fail_at(rails, "only allowed with " + topology + ": multi_node");
    read_key(r, fk::rails, f);
  }
  for (const auto* k : {&fk::nics_per_node, &fk::nic_efficiency, &fk::nodes_per_leaf, &fk::switch_latency_us}) {
    if (!r.has(k->name_str())) continue;
    if (f.topology != "multi_node") r.fail_at(k->name_str(), "only allowed with " + topology + ": multi_node");
    read_key(r, *k, f);
  }
  for (const auto* k : {&fk::num_gpus, &fk::gpus_per_node, &fk::gpus_per_numa}) read_key(r, *k, f);
  if (f.nics_per_node > 0) {
    // GPUs share NICs evenly (hardware_profile.hpp): the NIC count divides the node's GPUs.
    const int per_node = f.gpus_per_node > 0 ? f.gpus_per_node : f.num_gpus;
    if (f.nics_per_node > per_node || per_node % f.nics_per_node != 0)
      r.fail_at(fk::nics_per_node.name_str(), "must divide the GPUs of a node (" + std::to_string(per_node) + ")");
  }
  for (const auto* k : {&fk::gpus_per_node, &fk::gpus_per_numa}) {
    const int per = f.*std::get<int FabricSpec::*>(k->member);
    if (per > 0 && f.num_gpus % per != 0)
      r.fail_at(k->name_str(), "must divide " + std::string(fk::num_gpus.path) + " (" + std::to_string(f.num_gpus) + ")");
  }
  const YamlReader links = r.child(fk::links.name_str());
  links.expect_map();
  if (links.size() == 0) links.fail("needs at least one link class");
  for (const auto& name : links.keys()) {
    const YamlReader l = links.child(name);
    l.allow_keys(ps::names_of(ps::kLink));
    LinkClass lc;
    lc.name = name;
    for (const auto* k : ps::kLink) read_key(l, *k, lc);
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
    for (const auto* k : {&fk::nodes, &fk::edges})
      if (r.has(k->name_str())) r.fail_at(k->name_str(), "only allowed with " + topology + ": explicit");
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
      const InputRange& range = *ps::comm_keys::latency_us.range;
      lat.base_us = l.get_double_in("base", range, lat.base_us);
      for (auto h : {NcclHw::nvlink, NcclHw::pci, NcclHw::net}) {
        auto& v = lat.hw_us[static_cast<std::size_t>(index_of(h))];
        v = l.get_double_in(nccl_hw_name(h), range, v);
      }
    }
  }
}

CommSpec read_comm(const YamlReader& r) {
  if (r.has("protocol_efficiency")) {
    r.fail_at("protocol_efficiency", "replaced by NCCL's per-protocol model: pick a protocol with comm.protocol "
                                     "(LL, LL128, Simple) or leave it to the size (auto)");
  }
  namespace ck = ps::comm_keys;
  r.allow_keys(ps::names_of(ps::kComm));
  CommSpec c;
  read_key(r, ck::library, c);
  // Only NCCL's tuning model is implemented (RCCL follows it, facts.md); another name is a typo.
  if (c.library != "nccl" && c.library != "rccl")
    r.fail_at(ck::library.name_str(), "unknown library '" + c.library + "' (nccl, rccl)");
  const std::string algo = r.get_string(ck::algorithm.name_str(), "auto");
  if (algo != "auto") {
    c.algorithm = parse_nccl_algorithm(algo);
    if (!c.algorithm) {
      r.fail_at(ck::algorithm.name_str(), "unknown algorithm '" + algo +
                                 "' (auto, or NCCL's names: Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT)");
    }
  }
  const std::string proto = r.get_string(ck::protocol.name_str(), "auto");
  if (proto != "auto") {
    c.protocol = parse_nccl_protocol(proto);
    if (!c.protocol)
      r.fail_at(ck::protocol.name_str(), "unknown protocol '" + proto + "' (auto, or NCCL's names: LL, LL128, Simple)");
  }
  const std::string arch = r.get_string(ck::arch.name_str(), nccl_arch_name(c.arch));
  const auto parsed_arch = parse_nccl_arch(arch);
  if (!parsed_arch)
    r.fail_at(ck::arch.name_str(), "unknown GPU generation '" + arch + "' (volta, ampere, hopper, blackwell)");
  c.arch = *parsed_arch;
  c.tuner = NcclTunerConstants::defaults(c.arch);
  for (const auto* k : {&ck::nvlink_sharp, &ck::collnet, &ck::channels, &ck::nvls_channels, &ck::p2p_channels,
                        &ck::bandwidth_efficiency})
    read_key(r, *k, c);
  // Two shorthands for NCCL's Ring/Simple latencies: the base, and one per-step figure for every
  // link kind.
  NcclLatency& ring_simple = c.tuner.at(NcclAlgorithm::Ring, NcclProtocol::Simple);
  if (r.has(ck::base_latency_us.name_str()))
    ring_simple.base_us = r.get_double_in(ck::base_latency_us.name_str(), *ck::base_latency_us.range);
  if (r.has(ck::step_latency_us.name_str())) {
    const double step = r.get_double_in(ck::step_latency_us.name_str(), *ck::step_latency_us.range);
    for (auto& v : ring_simple.hw_us) v = step;
  }
  if (auto l = r.optional_child(ck::latency_us.name_str())) read_latency_overrides(*l, c.tuner);
  for (const ps::TunerCap& cap : ps::kTunerCaps) {
    const std::string key = cap.key->name_str();
    if (!r.has(key)) continue;
    if (cap.key->check == ps::Check::zero_or_range) (c.tuner.*cap.caps).fill(zero_or_in(r, key, *cap.key->range, 0));
    else (c.tuner.*cap.caps).fill(r.get_double_in(key, *cap.key->range));
  }
  c.tuner.nvls_efficiency = r.get_double_in(ck::nvls_efficiency.name_str(), *ck::nvls_efficiency.range,
                                            c.tuner.nvls_efficiency);
  if (auto k = r.optional_child(ck::link_kinds.name_str())) {
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
  r.allow_keys(ps::names_of(ps::kLaunch));
  LaunchSpec l;
  for (const auto* k : ps::kLaunch) {
    if (k != &ps::launch_keys::collective_host_us_by_primitive) {
      read_key(r, *k, l);
      continue;
    }
    if (const auto by = r.optional_child(k->name_str())) {
      by->expect_map();
      for (const auto& name : by->keys()) {
        const auto prim = parse_collective_primitive(name);
        if (!prim) by->fail_at(name, "unknown collective primitive (all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce)");
        l.collective_host_us_by_primitive[*prim] = by->get_double_in(name, *k->range);
      }
    }
  }
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
    const auto count = static_cast<std::size_t>(ps::transport_key_count(t));
    c->allow_keys(ps::names_of(ps::kTransport, count));
    for (std::size_t i = 0; i < count; ++i) read_key(*c, *ps::kTransport[i], spec);
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
  namespace ck = ps::curve_keys;
  const std::string points_key = ck::points.name_str(), alpha = ck::alpha_us.name_str(),
                    beta = ck::beta_gbps.name_str(), nccl_tests = ck::nccl_tests.name_str();
  r.allow_keys(ps::names_of(ps::kCurve));
  const int forms = int(r.has(points_key)) + int(r.has(alpha) || r.has(beta)) + int(r.has(nccl_tests));
  if (forms != 1) r.fail("give exactly one of: " + points_key + ", " + alpha + " + " + beta + ", " + nccl_tests);
  if (r.has(points_key)) {
    const YamlReader pts = r.child(points_key);
    pts.expect_sequence();
    if (const auto why = range_violation(*ck::points.range, static_cast<double>(pts.size()))) pts.fail(*why);
    std::vector<CurvePoint> points;
    for (std::size_t i = 0; i < pts.size(); ++i) {
      const YamlReader p = pts.element(i);
      if (!p.is_sequence() || p.size() != 2) p.fail("must be [bytes, time_us]");
      const std::int64_t bytes = p.element(0).as_int_in(*ps::curve_keys::point_bytes.range);
      const double us = p.element(1).as_double_in(*ps::curve_keys::point_us.range);
      if (!(us > 0)) p.element(1).fail("must be a positive number (got " + p.element(1).node().Scalar() + ")");
      points.push_back(CurvePoint{bytes, ps_from_us(us)});
    }
    try {
      return ReadCurve{BandwidthCurve(std::move(points)), std::nullopt};
    } catch (const std::invalid_argument& e) {
      pts.fail(e.what());
    }
  }
  if (r.has(nccl_tests)) {
    const std::string file = r.get_string(nccl_tests);
    const fs::path path = fs::path(file).is_absolute() ? fs::path(file) : fs::path(base_dir) / file;
    const NcclTestsResult result = load_nccl_tests_file(path.string());
    return ReadCurve{result.curve(r.get_bool(ck::in_place.name_str(), false)), result.protocol};
  }
  return ReadCurve{BandwidthCurve::from_alpha_beta(r.get_double_in(alpha, *ck::alpha_us.range, 0),
                                                   r.get_double_in(beta, *ck::beta_gbps.range)),
                   std::nullopt};
}

GemmProfileEntry read_gemm_entry(const YamlReader& r) {
  namespace gk = ps::gemm_keys;
  r.allow_keys(ps::names_of(ps::kGemm));
  GemmProfileEntry e;
  for (const auto* k : {&gk::m, &gk::n, &gk::k}) read_key(r, *k, e);
  const auto dt = parse_dtype(r.get_string(gk::dtype.name_str(), dtype_name(e.dtype)));
  if (!dt) r.fail_at(gk::dtype.name_str(), "unknown dtype (allowed: fp8, fp16, bf16, fp32)");
  e.dtype = *dt;
  for (const auto* k : {&gk::tile_m, &gk::tile_n, &gk::duration_us}) read_key(r, *k, e);
  if (!(e.duration_us > 0)) r.fail_at(gk::duration_us.name_str(), "must be a positive number (got 0)");
  if (auto w = r.optional_child(gk::wave_end_us.name_str())) {
    w->expect_sequence();
    // As many waves as a curve has points at most.
    if (const auto why = range_violation(*ps::curve_keys::points.range, static_cast<double>(w->size()))) w->fail(*why);
    for (std::size_t i = 0; i < w->size(); ++i) e.wave_end_us.push_back(w->element(i).as_double_in(*gk::wave_end_us.range));
  }
  return e;
}

// `placeholders:` (profile_schema.hpp placeholder_keys): each entry names a numeric key this profile
// sets, with a range of values that key accepts and its source. The value read is the one the
// profile ends with (after --set), so a run reports what it ran with.
std::vector<PlaceholderRange> read_placeholders(const YamlReader& top, const YamlReader& r) {
  namespace pk = ps::placeholder_keys;
  r.expect_map();
  const std::vector<std::string> keys = r.keys();
  if (keys.size() > ps::kMaxPlaceholders)
    r.fail(fmt::format("at most {} placeholders (each costs `run` two more evaluations of every scheme; got {})",
                       ps::kMaxPlaceholders, keys.size()));
  std::vector<PlaceholderRange> out;
  for (const std::string& key : keys) {
    const ps::KeyInfo* info = ps::find_key(key);
    if (!info || (info->type != "int" && info->type != "number") || key.rfind("placeholders", 0) == 0 ||
        key.rfind("curves.", 0) == 0 || key.rfind("gemm_profiles", 0) == 0)
      r.fail_at(key, "not a numeric profile key (a placeholder names a number the profile sets, e.g. "
                     "transports.sm_copy.cta_gbps)");
    // The value it marks: walk the profile's own map by the path's components.
    std::optional<YamlReader> at = top;
    for (std::size_t begin = 0; at && begin <= key.size();) {
      const auto dot = key.find('.', begin);
      const std::string part = key.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
      // (Re-constructed, never assigned: assigning a YAML::Node writes into the node it refers to.)
      std::optional<YamlReader> next = at->is_map() ? at->optional_child(part) : std::nullopt;
      at.reset();
      if (next) at.emplace(*next);
      begin = dot == std::string::npos ? key.size() + 1 : dot + 1;
    }
    if (!at || !at->is_scalar()) r.fail_at(key, "this profile gives no value for " + key + " to mark as a placeholder");
    const YamlReader entry = r.child(key);
    entry.expect_map();
    entry.allow_keys(ps::names_of(ps::kPlaceholder));
    PlaceholderRange ph;
    ph.key = key;
    ph.value = at->as_double();
    const YamlReader range = entry.child(pk::range.name_str());
    range.expect_sequence();
    if (range.size() != 2) range.fail(fmt::format("must be [low, high] (got {} values)", range.size()));
    ph.low = range.element(0).as_double();
    ph.high = range.element(1).as_double();
    for (std::size_t i = 0; i < 2; ++i) {
      const double v = i == 0 ? ph.low : ph.high;
      if (!ps::loader_accepts(*info, v))
        range.element(i).fail(fmt::format(
            "{} is not a value {} accepts ({})", range.element(i).node().Scalar(), key,
            info->check == ps::Check::fraction ? std::string("a fraction in (0, 1]")
            : info->range ? fmt::format("{} .. {}{}{}", info->range->min, info->range->max,
                                        info->range->unit.empty() ? "" : " ", info->range->unit)
                          : std::string("a number")));
    }
    if (!(ph.low < ph.high))
      range.fail(fmt::format("low must be below high (got [{}, {}])", range.element(0).node().Scalar(),
                             range.element(1).node().Scalar()));
    ph.source = entry.get_string(pk::source.name_str());
    if (ph.source.empty()) entry.fail_at(pk::source.name_str(), "must say where the range comes from");
    out.push_back(std::move(ph));
  }
  return out;
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
  r.allow_keys(ps::names_of(ps::kTop));
  HardwareProfile p;
  read_key(r, ps::name, p);
  read_key(r, ps::description, p);
  p.gpu = read_gpu(r.child(ps::gpu.name_str()));
  p.fabric = read_fabric(r.child(ps::fabric.name_str()));
  if (auto c = r.optional_child(ps::comm.name_str())) p.comm = read_comm(*c);
  if (auto l = r.optional_child(ps::launch.name_str())) p.launch = read_launch(*l);
  if (auto t = r.optional_child(ps::transports.name_str())) p.transports = read_transports(*t);
  // A collective kernel holds its channels' SMs at once: more than the GPU has could never run. An
  // explicit value that large is an error; a default that large (a small GPU) is cut to sm_count.
  const auto comm_node = r.optional_child(ps::comm.name_str());
  for (const auto* k : {&ps::comm_keys::channels, &ps::comm_keys::nvls_channels, &ps::comm_keys::p2p_channels}) {
    int& value = p.comm.*std::get<int CommSpec::*>(k->member);
    if (value <= p.gpu.sm_count) continue;
    if (!comm_node || !comm_node->has(k->name_str())) {
      value = p.gpu.sm_count;
      continue;
    }
    comm_node->fail_at(k->name_str(), "must not exceed " + std::string(ps::gpu_keys::sm_count.path) + " = " +
                                          std::to_string(p.gpu.sm_count) + " (got " + std::to_string(value) + ")");
  }
  if (auto curves = r.optional_child(ps::curves.name_str())) {
    curves->expect_map();
    for (const auto& key : curves->keys()) {
      if (!valid_curve_key(key)) {
        curves->fail_at(key, "unknown curve (allowed: all_reduce, reduce_scatter, all_gather, all_to_all, "
                             "broadcast, reduce, optionally .n<ranks>, optionally .LL / .LL128 / .Simple; "
                             "<transport>.<link_class> with transport nccl_p2p, sm_copy, copy_engine, one_sided "
                             "or p2p)");
      }
      ReadCurve c = read_curve(curves->child(key), base_dir);
      // "p2p.<class>" is an alias of an SM-driven copy's curve, sm_copy.<class> (hardware_profile.hpp).
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
  if (auto g = r.optional_child(ps::gemm_profiles.name_str())) {
    g->expect_sequence();
    for (std::size_t i = 0; i < g->size(); ++i) p.gemm_profiles.push_back(read_gemm_entry(g->element(i)));
  }
  if (auto ph = r.optional_child(ps::placeholders.name_str())) p.placeholders = read_placeholders(r, *ph);
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
