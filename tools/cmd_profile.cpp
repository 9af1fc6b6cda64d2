// `overlap-sim profile show`: the resolved HardwareProfile as JSON, YAML or a readable table.
#include "tools/cmd_profile.hpp"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"

namespace overlap {
namespace {

void emit_yaml(YAML::Emitter& em, const nlohmann::json& j) {
  if (j.is_object()) {
    em << YAML::BeginMap;
    for (const auto& [k, v] : j.items()) {
      em << YAML::Key << k << YAML::Value;
      emit_yaml(em, v);
    }
    em << YAML::EndMap;
  } else if (j.is_array()) {
    const bool flat = std::all_of(j.begin(), j.end(), [](const nlohmann::json& e) { return e.is_primitive(); });
    em << (flat ? YAML::Flow : YAML::Block) << YAML::BeginSeq;
    for (const auto& v : j) emit_yaml(em, v);
    em << YAML::EndSeq;
  } else if (j.is_string()) {
    em << j.get<std::string>();
  } else if (j.is_boolean()) {
    em << j.get<bool>();
  } else if (j.is_number_integer()) {
    em << j.get<std::int64_t>();
  } else if (j.is_number()) {
    em << j.get<double>();
  } else {
    em << YAML::Null;
  }
}

void print_table(const HardwareProfile& p, std::ostream& out) {
  auto row = [&](const std::string& k, const std::string& v) { out << fmt::format("  {:<28} {}\n", k, v); };
  out << "profile " << p.name << (p.description.empty() ? "" : " - " + p.description) << "\n";
  out << "gpu\n";
  const GpuSpec& g = p.gpu;
  row("name", g.name);
  row("sm_count", std::to_string(g.sm_count));
  for (const auto& [dt, tf] : g.peak_tflops) row("peak_tflops." + dt, fmt::format("{:g} TFLOP/s", tf));
  row("gemm_efficiency", fmt::format("{:g}", g.gemm_efficiency));
  if (g.gemm_tile_us > 0) row("gemm_tile_us", fmt::format("{:g} us", g.gemm_tile_us));
  row("gemm_comm_interference", fmt::format("{:g}", g.gemm_comm_interference));
  row("hbm_bandwidth_gbps", fmt::format("{:g} GB/s (x{:g})", g.hbm_bandwidth_gbps, g.hbm_efficiency));
  if (g.hbm_latency_us > 0) row("hbm_latency_us", fmt::format("{:g} us per memory-bound kernel", g.hbm_latency_us));
  if (g.hbm_sm_gbps > 0) row("hbm_sm_gbps", fmt::format("{:g} GB/s per SM streaming", g.hbm_sm_gbps));
  row("copy_engines", std::to_string(g.copy_engines));
  row("gemm_l2_reuse", fmt::format("{:g}", g.gemm_l2_reuse));
  row("gemm_full_rate_sms", g.gemm_full_rate_sms > 0 ? fmt::format("{:g}", g.gemm_full_rate_sms) : std::string("not modelled"));
  row("min_sm_partition", std::to_string(g.min_sm_partition));
  out << "fabric\n";
  const FabricSpec& f = p.fabric;
  row("topology", f.topology);
  row("num_gpus", std::to_string(f.num_gpus));
  if (f.gpus_per_node > 0) row("gpus_per_node", std::to_string(f.gpus_per_node));
  if (f.gpus_per_numa > 0) row("gpus_per_numa", std::to_string(f.gpus_per_numa));
  for (const auto& [name, lc] : f.links) {
    row("links." + name, fmt::format("{:g} GB/s, {:g} us", lc.bandwidth_gbps, lc.latency_us));
  }
  row("graph", fmt::format("{} nodes, {} directed edges", f.nodes.size(), f.edges.size()));
  out << "comm\n";
  const CommSpec& c = p.comm;
  row("library", c.library);
  row("channels", std::to_string(c.channels));
  row("p2p_channels", std::to_string(c.p2p_channels));
  row("algorithm/protocol", fmt::format("{} / {}", c.algorithm ? nccl_algorithm_name(*c.algorithm) : "auto", c.protocol ? nccl_protocol_name(*c.protocol) : "auto"));
  row("bandwidth eff. / NVLS", fmt::format("{:g} / {}", c.bandwidth_efficiency, c.nvlink_sharp ? fmt::format("{} channels", c.nvls_channels) : std::string("no")));
  out << "launch\n";
  row("host / gap / graph gap", fmt::format("{:g} / {:g} / {:g} us", p.launch.host_us, p.launch.gap_us,
                                             p.launch.graph_gap_us));
  row("cuda_graphs", p.launch.cuda_graphs ? "true" : "false");
  out << "transports\n";
  for (Transport t : kAllTransports) {
    const TransportSpec& ts = p.transports.of(t);
    row(transport_name(t), fmt::format("{:g} us + S / (link x {:g}){}", ts.latency_us, ts.efficiency,
                                       t == Transport::sm_copy && ts.cta_gbps > 0
                                           ? fmt::format(", at most {:g} GB/s per CTA", ts.cta_gbps)
                                           : std::string()));
  }
  if (!p.curves.empty()) {
    out << "curves\n";
    for (const auto& [key, curve] : p.curves) {
      row(key, fmt::format("{} points, fit {:g} us + S / {:g} GB/s", curve.points().size(), curve.fit().alpha_us,
                           curve.fit().beta_gbps));
    }
  }
  if (!p.gemm_profiles.empty()) row("gemm_profiles", std::to_string(p.gemm_profiles.size()) + " entries");
}

// The resolved profile as a profile file the loader reads back: where it came from goes into a
// comment, and the fabric graph the loader builds from the topology is left to it (only an
// `explicit` topology writes its nodes and edges).
nlohmann::json loadable_profile_json(const HardwareProfile& p) {
  nlohmann::json j = profile_to_json(p);
  j.erase("source_file");
  if (j.contains("fabric") && j["fabric"].value("topology", std::string()) != "explicit") {
    j["fabric"].erase("nodes");
    j["fabric"].erase("edges");
  }
  return j;
}

}  // namespace

std::string profile_yaml(const HardwareProfile& p) {
  YAML::Emitter em;
  em.SetDoublePrecision(15);
  emit_yaml(em, loadable_profile_json(p));
  std::string out = "# overlap-sim profile show --format yaml: the resolved profile, every default written out";
  out += p.source_file.empty() ? std::string("\n") : "; from " + p.source_file + "\n";
  out += "# Load it back as a profile: hardware: this-file.yaml, or --hardware this-file.yaml\n";
  return out + em.c_str() + "\n";
}

void cmd_profile_list(const std::string& format, std::ostream& out) {
  if (format != "table" && format != "json")
    throw InputError("", 0, "--format", "must be table or json (got " + format + ")");
  const std::string dir = default_hardware_dir();
  nlohmann::json list = nlohmann::json::array();
  std::vector<std::vector<std::string>> rows;
  for (const std::string& name : builtin_profile_names(dir)) {
    const HardwareProfile p = load_profile(name, dir);
    list.push_back({{"name", name},
                    {"gpu", p.gpu.name},
                    {"sm_count", p.gpu.sm_count},
                    {"num_gpus", p.fabric.num_gpus},
                    {"topology", p.fabric.topology},
                    {"description", p.description}});
    rows.push_back({name, fmt::format("{} x{}", p.gpu.name, p.fabric.num_gpus), p.fabric.topology, p.description});
  }
  if (format == "json") {
    out << nlohmann::json{{"hardware_dir", dir}, {"profiles", list}}.dump(2) << "\n";
    return;
  }
  std::size_t w0 = 4, w1 = 4, w2 = 8;
  for (const auto& r : rows) {
    w0 = std::max(w0, r[0].size());
    w1 = std::max(w1, r[1].size());
    w2 = std::max(w2, r[2].size());
  }
  out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", "name", w0, "gpus", w1, "topology", w2, "description");
  for (const auto& r : rows) out << fmt::format("{:<{}}  {:<{}}  {:<{}}  {}\n", r[0], w0, r[1], w1, r[2], w2, r[3]);
  out << fmt::format("({} built-in profiles under {}; use one as `hardware: NAME` or 'overlap-sim profile show NAME')\n",
                     rows.size(), dir);
}

int cmd_profile_show(const std::string& name_or_path, const std::string& format,
                     const std::vector<std::string>& sets, std::ostream& out) {
  try {
    if (format != "json" && format != "yaml" && format != "table") {
      throw InputError("", 0, "--format", "must be json, yaml or table (got " + format + ")");
    }
    const HardwareProfile p = load_profile(name_or_path, default_hardware_dir(), sets);
    if (format == "json") {
      out << profile_to_json(p).dump(2) << "\n";
    } else if (format == "yaml") {
      out << profile_yaml(p);
    } else {
      print_table(p, out);
    }
    return 0;
  } catch (const InputError& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace overlap
