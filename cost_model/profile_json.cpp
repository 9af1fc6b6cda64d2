#include "cost_model/profile_json.hpp"

namespace overlap {

nlohmann::json profile_to_json(const HardwareProfile& p) {
  using nlohmann::json;
  json j;
  j["name"] = p.name;
  j["description"] = p.description;
  j["source_file"] = p.source_file;
  const GpuSpec& g = p.gpu;
  j["gpu"] = {{"name", g.name},
              {"sm_count", g.sm_count},
              {"gemm_ctas_per_sm", g.gemm_ctas_per_sm},
              {"clock_mhz", g.clock_mhz},
              {"peak_tflops", g.peak_tflops},
              {"gemm_efficiency", g.gemm_efficiency},
              {"hbm_bandwidth_gbps", g.hbm_bandwidth_gbps},
              {"hbm_efficiency", g.hbm_efficiency},
              {"hbm_latency_us", g.hbm_latency_us},
              {"hbm_sm_gbps", g.hbm_sm_gbps},
              {"copy_engines", g.copy_engines},
              {"min_sm_partition", g.min_sm_partition},
              {"gemm_tile_us", g.gemm_tile_us},
              {"gemm_sm_load_gbps", g.gemm_sm_load_gbps},
              {"gemm_cta_overhead_us", g.gemm_cta_overhead_us},
              {"l2_bytes", g.l2_bytes},
              {"gemm_comm_interference", g.gemm_comm_interference},
              {"gemm_l2_reuse", g.gemm_l2_reuse},
              {"gemm_full_rate_sms", g.gemm_full_rate_sms}};
  const FabricSpec& f = p.fabric;
  json links = json::object();
  for (const auto& [name, lc] : f.links) {
    links[name] = {{"bandwidth_gbps", lc.bandwidth_gbps}, {"latency_us", lc.latency_us}};
  }
  json nodes = json::array();
  for (const auto& n : f.nodes) {
    json jn = {{"name", n.name}, {"kind", fabric_node_kind_name(n.kind)}};
    if (n.kind == FabricNodeKind::gpu) jn["gpu"] = n.gpu;
    nodes.push_back(jn);
  }
  json edges = json::array();
  for (const auto& e : f.edges) {
    edges.push_back({{"from", f.nodes.at(static_cast<std::size_t>(e.from)).name},
                     {"to", f.nodes.at(static_cast<std::size_t>(e.to)).name},
                     {"link_class", e.link_class},
                     {"bandwidth_gbps", e.bandwidth_gbps},
                     {"latency_us", e.latency_us}});
  }
  j["fabric"] = {{"topology", f.topology},         {"num_gpus", f.num_gpus}, {"gpus_per_node", f.gpus_per_node},
                 {"gpus_per_numa", f.gpus_per_numa},   {"links", links},      {"nodes", nodes},
                 {"edges", edges}};
  if (f.topology == "virtual") j["fabric"]["virtual_link"] = f.virtual_link;
  if (f.topology == "multi_node") j["fabric"]["rails"] = f.rails;
  const LaunchSpec& l = p.launch;
  j["launch"] = {{"host_us", l.host_us}, {"gap_us", l.gap_us}, {"graph_gap_us", l.graph_gap_us},
                 {"cuda_graphs", l.cuda_graphs}, {"collective_host_us", l.collective_host_us}, {"shared_host", l.shared_host},
                 {"sync_host_us", l.sync_host_us}};
  if (!l.collective_host_us_by_primitive.empty()) {
    json by = json::object();
    for (const auto& [prim, us] : l.collective_host_us_by_primitive) by[collective_primitive_name(prim)] = us;
    j["launch"]["collective_host_us_by_primitive"] = by;
  }
  json transports = json::object();
  for (Transport t : kAllTransports) {
    const TransportSpec& ts = p.transports.of(t);
    json jt = {{"latency_us", ts.latency_us}, {"efficiency", ts.efficiency}};
    if (t == Transport::sm_copy) jt["cta_gbps"] = ts.cta_gbps;
    transports[transport_name(t)] = jt;
  }
  j["transports"] = transports;
  const CommSpec& c = p.comm;
  // Written so that profile_from_yaml reads it back (profile show --format yaml round-trips).
  json latency = json::object();
  for (int ai = 0; ai < kNcclAlgorithms; ++ai) {
    const auto a = static_cast<NcclAlgorithm>(ai);
    for (auto pr : {NcclProtocol::LL, NcclProtocol::LL128, NcclProtocol::Simple}) {
      const NcclLatency& l = c.tuner.at(a, pr);
      latency[nccl_algorithm_name(a)][nccl_protocol_name(pr)] = {
          {"base", l.base_us}, {"nvlink", l.hw_us[0]}, {"pci", l.hw_us[1]}, {"net", l.hw_us[2]}};
    }
  }
  json kinds = json::object();
  for (const auto& [cls, kind] : c.link_kinds) kinds[cls] = nccl_hw_name(kind);
  j["comm"] = {{"library", c.library},
               {"algorithm", c.algorithm ? nccl_algorithm_name(*c.algorithm) : "auto"},
               {"protocol", c.protocol ? nccl_protocol_name(*c.protocol) : "auto"},
               {"arch", nccl_arch_name(c.arch)},
               {"nvlink_sharp", c.nvlink_sharp},
               {"collnet", c.collnet},
               {"channels", c.channels},
               {"nvls_channels", c.nvls_channels},
               {"p2p_channels", c.p2p_channels},
               {"bandwidth_efficiency", c.bandwidth_efficiency},
               {"nvls_efficiency", c.tuner.nvls_efficiency},
               {"latency_us", latency},
               {"link_kinds", kinds}};
  // The per-generation caps are per node-count class; a profile overrides them with one value, so
  // they are written only when all three classes agree (else the arch's defaults stand).
  const auto cap = [&](const char* key, const std::array<double, 3>& v) {
    if (v[0] == v[1] && v[1] == v[2] && v[0] > 0) j["comm"][key] = v[0];
  };
  cap("ll_max_bw_gbps", c.tuner.ll_max_bw_gbps);
  cap("ring_ll128_channel_gbps", c.tuner.ring_ll128_channel_gbps);
  cap("tree_channel_gbps", c.tuner.tree_channel_gbps);
  cap("tree_ll128_channel_gbps", c.tuner.tree_ll128_channel_gbps);
  cap("nvls_tree_channel_gbps", c.tuner.nvls_tree_channel_gbps);
  json curves = json::object();
  for (const auto& [key, curve] : p.curves) {
    json pts = json::array();
    for (const auto& pt : curve.points()) pts.push_back({pt.bytes, us_from_ps(pt.time_ps)});
    curves[key] = {{"points", pts}, {"fit", {{"alpha_us", curve.fit().alpha_us}, {"beta_gbps", curve.fit().beta_gbps}}}};
  }
  j["curves"] = curves;
  json gemms = json::array();
  for (const auto& e : p.gemm_profiles) {
    gemms.push_back({{"m", e.m},
                     {"n", e.n},
                     {"k", e.k},
                     {"dtype", dtype_name(e.dtype)},
                     {"tile_m", e.tile_m},
                     {"tile_n", e.tile_n},
                     {"duration_us", e.duration_us},
                     {"wave_end_us", e.wave_end_us}});
  }
  j["gemm_profiles"] = gemms;
  return j;
}

}  // namespace overlap
