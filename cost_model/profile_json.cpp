#include "cost_model/profile_json.hpp"

#include "cost_model/profile_schema.hpp"

namespace overlap {
namespace {

namespace ps = profile_schema;
using nlohmann::json;

// One schema row's member into j (rows without a member are the section's own code's).
template <class S>
void put(json& j, const ps::Key<S>& k, const S& s) {
  std::visit(
      [&](auto m) {
        if constexpr (!std::is_same_v<decltype(m), std::monostate>) j[k.name_str()] = s.*m;
      },
      k.member);
}

template <class S, class Array>
json section(const Array& keys, const S& s) {
  json j = json::object();
  for (const auto* k : keys) put(j, *k, s);
  return j;
}

json fabric_json(const FabricSpec& f) {
  namespace fk = ps::fabric_keys;
  json j = section(ps::kFabric, f);
  // Keys of one topology only.
  if (f.topology != "virtual") j.erase(fk::virtual_link.name_str());
  if (f.topology != "multi_node")
    for (const auto* k : {&fk::rails, &fk::nics_per_node, &fk::nic_efficiency, &fk::nodes_per_leaf, &fk::switch_latency_us})
      j.erase(k->name_str());
  json links = json::object();
  for (const auto& [name, lc] : f.links) links[name] = section(ps::kLink, lc);
  j[fk::links.name_str()] = links;
  json nodes = json::array();
  for (const auto& n : f.nodes) {
    json jn = section(ps::kNode, n);
    jn[ps::node_keys::kind.name_str()] = fabric_node_kind_name(n.kind);
    if (n.kind != FabricNodeKind::gpu) jn.erase(ps::node_keys::gpu.name_str());
    nodes.push_back(jn);
  }
  j[fk::nodes.name_str()] = nodes;
  json edges = json::array();
  for (const auto& e : f.edges) {
    json je = section(ps::kEdge, e);
    je[ps::edge_keys::from.name_str()] = f.nodes.at(static_cast<std::size_t>(e.from)).name;
    je[ps::edge_keys::to.name_str()] = f.nodes.at(static_cast<std::size_t>(e.to)).name;
    edges.push_back(je);
  }
  j[fk::edges.name_str()] = edges;
  return j;
}

json launch_json(const LaunchSpec& l) {
  json j = section(ps::kLaunch, l);
  if (!l.collective_host_us_by_primitive.empty()) {
    json by = json::object();
    for (const auto& [prim, us] : l.collective_host_us_by_primitive) by[collective_primitive_name(prim)] = us;
    j[ps::launch_keys::collective_host_us_by_primitive.name_str()] = by;
  }
  return j;
}

json transports_json(const TransportsSpec& ts) {
  json j = json::object();
  for (Transport t : kAllTransports) {
    json jt = json::object();
    for (int i = 0; i < ps::transport_key_count(t); ++i) put(jt, *ps::kTransport[static_cast<std::size_t>(i)], ts.of(t));
    j[transport_name(t)] = jt;
  }
  return j;
}

// Written so that profile_from_yaml reads it back (profile show --format yaml round-trips).
json comm_json(const CommSpec& c) {
  namespace ck = ps::comm_keys;
  json j = section(ps::kComm, c);
  j[ck::algorithm.name_str()] = c.algorithm ? nccl_algorithm_name(*c.algorithm) : "auto";
  j[ck::protocol.name_str()] = c.protocol ? nccl_protocol_name(*c.protocol) : "auto";
  j[ck::arch.name_str()] = nccl_arch_name(c.arch);
  j[ck::nvls_efficiency.name_str()] = c.tuner.nvls_efficiency;
  json latency = json::object();
  for (int ai = 0; ai < kNcclAlgorithms; ++ai) {
    const auto a = static_cast<NcclAlgorithm>(ai);
    for (auto pr : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      const NcclLatency& l = c.tuner.at(a, pr);
      latency[nccl_algorithm_name(a)][nccl_protocol_name(pr)] = {
          {"base", l.base_us}, {"nvlink", l.hw_us[0]}, {"pci", l.hw_us[1]}, {"net", l.hw_us[2]}};
    }
  }
  j[ck::latency_us.name_str()] = latency;
  json kinds = json::object();
  for (const auto& [cls, kind] : c.link_kinds) kinds[cls] = nccl_hw_name(kind);
  j[ck::link_kinds.name_str()] = kinds;
  // The per-generation caps are per node-count class; a profile overrides them with one value, so
  // they are written only when all three classes agree (else the arch's defaults stand).
  for (const ps::TunerCap& cap : ps::kTunerCaps) {
    const std::array<double, 3>& v = c.tuner.*cap.caps;
    if (v[0] == v[1] && v[1] == v[2] && v[0] > 0) j[cap.key->name_str()] = v[0];
  }
  return j;
}

json curves_json(const std::map<std::string, BandwidthCurve>& curves) {
  namespace ck = ps::curve_keys;
  json j = json::object();
  for (const auto& [key, curve] : curves) {
    json pts = json::array();
    for (const auto& pt : curve.points()) pts.push_back({pt.bytes, us_from_ps(pt.time_ps)});
    // "fit": the curve's alpha-beta fit, output only (the loader reads points).
    j[key] = {{ck::points.name_str(), pts},
              {"fit", {{ck::alpha_us.name_str(), curve.fit().alpha_us}, {ck::beta_gbps.name_str(), curve.fit().beta_gbps}}}};
  }
  return j;
}

json gemm_profiles_json(const std::vector<GemmProfileEntry>& entries) {
  json j = json::array();
  for (const auto& e : entries) {
    json je = section(ps::kGemm, e);
    je[ps::gemm_keys::dtype.name_str()] = dtype_name(e.dtype);
    je[ps::gemm_keys::wave_end_us.name_str()] = e.wave_end_us;
    j.push_back(je);
  }
  return j;
}

}  // namespace

json profile_to_json(const HardwareProfile& p) {
  json j = section(ps::kTop, p);
  j["source_file"] = p.source_file;  // output only: where it was loaded from
  j[ps::gpu.name_str()] = section(ps::kGpu, p.gpu);
  j[ps::fabric.name_str()] = fabric_json(p.fabric);
  j[ps::launch.name_str()] = launch_json(p.launch);
  j[ps::transports.name_str()] = transports_json(p.transports);
  j[ps::comm.name_str()] = comm_json(p.comm);
  j[ps::curves.name_str()] = curves_json(p.curves);
  j[ps::gemm_profiles.name_str()] = gemm_profiles_json(p.gemm_profiles);
  // Written only where the profile has some, so a measured profile's JSON has no empty section.
  if (!p.placeholders.empty()) {
    json& ph = j[ps::placeholders.name_str()] = json::object();
    for (const PlaceholderRange& r : p.placeholders)
      ph[r.key] = {{ps::placeholder_keys::range.name_str(), {r.low, r.high}},
                   {ps::placeholder_keys::source.name_str(), r.source}};
  }
  return j;
}

}  // namespace overlap
