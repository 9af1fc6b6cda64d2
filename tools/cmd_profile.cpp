// `overlap-sim profile show`: the resolved HardwareProfile as JSON, YAML or a readable table.
#include "tools/cmd_profile.hpp"

#include <algorithm>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/profile_schema.hpp"
#include "cost_model/profile_yaml.hpp"
#include "sim/report.hpp"
#include "tools/cmd_profile_fit.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"

namespace overlap {
namespace {

namespace ps = profile_schema;

// The readable summary: the keys a reader looks for, with their units; some rows join related keys
// (host / gap / graph gap). Labels are the schema's key names.
void print_table(const HardwareProfile& p, std::ostream& out) {
  namespace gk = ps::gpu_keys;
  namespace fk = ps::fabric_keys;
  namespace ck = ps::comm_keys;
  namespace lk = ps::launch_keys;
  auto row = [&](std::string_view k, const std::string& v) { out << fmt::format("  {:<28} {}\n", k, v); };
  auto label = [](const auto& key) { return key.name_str(); };
  auto unit = [](const auto& key) { return std::string(key.range->unit); };
  out << "profile " << p.name << (p.description.empty() ? "" : " - " + p.description) << "\n";
  out << ps::gpu.name() << "\n";
  const GpuSpec& g = p.gpu;
  row(gk::name.name(), g.name);
  row(gk::sm_count.name(), std::to_string(g.sm_count));
  for (const auto& [dt, tf] : g.peak_tflops) row(label(gk::peak_tflops) + "." + dt, fmt::format("{:g} {}", tf, unit(gk::peak_tflops)));
  row(gk::gemm_efficiency.name(), fmt::format("{:g}", g.gemm_efficiency));
  if (g.compute_clock_ratio() != 1.0)
    row(gk::sustained_clock_mhz.name(), fmt::format("{:g} of {:g} {}: compute x{:.4g}", g.sustained_clock_mhz,
                                                    g.peak_clock_mhz, unit(gk::sustained_clock_mhz), g.compute_clock_ratio()));
  if (g.gemm_tile_us > 0) row(gk::gemm_tile_us.name(), fmt::format("{:g} {}", g.gemm_tile_us, unit(gk::gemm_tile_us)));
  row(gk::gemm_comm_interference.name(), fmt::format("{:g}", g.gemm_comm_interference));
  row(gk::hbm_bandwidth_gbps.name(), fmt::format("{:g} {} (x{:g})", g.hbm_bandwidth_gbps, unit(gk::hbm_bandwidth_gbps), g.hbm_efficiency));
  if (g.hbm_latency_us > 0)
    row(gk::hbm_latency_us.name(), fmt::format("{:g} {} per memory-bound kernel", g.hbm_latency_us, unit(gk::hbm_latency_us)));
  if (g.hbm_sm_gbps > 0) row(gk::hbm_sm_gbps.name(), fmt::format("{:g} {} per SM streaming", g.hbm_sm_gbps, unit(gk::hbm_sm_gbps)));
  row(gk::copy_engines.name(), std::to_string(g.copy_engines));
  row(gk::gemm_l2_reuse.name(), fmt::format("{:g}", g.gemm_l2_reuse));
  row(gk::gemm_full_rate_sms.name(),
      g.gemm_full_rate_sms > 0 ? fmt::format("{:g}", g.gemm_full_rate_sms) : std::string("not modelled"));
  row(gk::min_sm_partition.name(), std::to_string(g.min_sm_partition));
  out << ps::fabric.name() << "\n";
  const FabricSpec& f = p.fabric;
  row(fk::topology.name(), f.topology);
  row(fk::num_gpus.name(), std::to_string(f.num_gpus));
  if (f.gpus_per_node > 0) row(fk::gpus_per_node.name(), std::to_string(f.gpus_per_node));
  if (f.gpus_per_numa > 0) row(fk::gpus_per_numa.name(), std::to_string(f.gpus_per_numa));
  for (const auto& [name, lc] : f.links) {
    row(label(fk::links) + "." + name, fmt::format("{:g} {}, {:g} {}", lc.bandwidth_gbps, unit(ps::link_keys::bandwidth_gbps),
                                                   lc.latency_us, unit(ps::link_keys::latency_us)));
  }
  row("graph", fmt::format("{} nodes, {} directed edges", f.nodes.size(), f.edges.size()));
  out << ps::comm.name() << "\n";
  const CommSpec& c = p.comm;
  row(ck::library.name(), c.library);
  row(ck::channels.name(), std::to_string(c.channels));
  row(ck::p2p_channels.name(), std::to_string(c.p2p_channels));
  row(label(ck::algorithm) + "/" + label(ck::protocol),
      fmt::format("{} / {}", c.algorithm ? nccl_algorithm_name(*c.algorithm) : "auto", c.protocol ? nccl_protocol_name(*c.protocol) : "auto"));
  row("bandwidth eff. / NVLS", fmt::format("{:g} / {}", c.bandwidth_efficiency, c.nvlink_sharp ? fmt::format("{} channels", c.nvls_channels) : std::string("no")));
  out << ps::launch.name() << "\n";
  row("host / gap / graph gap", fmt::format("{:g} / {:g} / {:g} {}", p.launch.host_us, p.launch.gap_us,
                                             p.launch.graph_gap_us, unit(lk::host_us)));
  row(lk::cuda_graphs.name(), p.launch.cuda_graphs ? "true" : "false");
  out << ps::transports.name() << "\n";
  for (Transport t : kAllTransports) {
    const TransportSpec& ts = p.transports.of(t);
    row(transport_name(t), fmt::format("{:g} us + S / (link x {:g}){}", ts.latency_us, ts.efficiency,
                                       t == Transport::sm_copy && ts.cta_gbps > 0
                                           ? fmt::format(", at most {:g} GB/s per CTA", ts.cta_gbps)
                                           : std::string()));
  }
  if (!p.curves.empty()) {
    out << ps::curves.name() << "\n";
    for (const auto& [key, curve] : p.curves) {
      row(key, fmt::format("{} points, fit {:g} us + S / {:g} GB/s", curve.points().size(), curve.fit().alpha_us,
                           curve.fit().beta_gbps));
    }
  }
  if (!p.gemm_profiles.empty()) row(ps::gemm_profiles.name(), std::to_string(p.gemm_profiles.size()) + " entries");
  if (!p.placeholders.empty()) {
    out << ps::placeholders.name() << " (guessed values; `run` names one whose range changes the ranking)\n";
    for (const PlaceholderRange& ph : p.placeholders) {
      row(ph.key, fmt::format("{:g}, plausible {:g} .. {:g}", ph.value, ph.low, ph.high));
      out << sim::wrap_text(ph.source, 120 - 4, "    ").insert(0, "    ");
    }
  }
}

}  // namespace

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
}

namespace tools {

namespace fs = std::filesystem;

namespace {

// `profile list` and `profile show`: their flags' values.
struct ProfileOptions {
  std::string name;                  // show: a built-in name or a YAML path
  std::string format = "table";      // show: json | yaml | table
  std::string list_format = "table"; // list: table | json
  std::vector<std::string> sets;     // show: --set
};

}  // namespace

Command add_profile_command(CLI::App& app) {
  const auto profile = std::make_shared<ProfileOptions>();
  CLI::App* profile_cmd = app.add_subcommand("profile", "Hardware profiles");
  profile_cmd->require_subcommand(1);
  profile_cmd->footer(examples({"overlap-sim profile list", "overlap-sim profile show h100-sxm-8x-nvswitch",
                                "overlap-sim profile fit traces/*.json.gz --hardware h100-sxm-8x-nvswitch -o my-cluster.yaml"}));
  CLI::App* list_cmd = profile_cmd->add_subcommand("list", "List the built-in hardware profiles");
  list_cmd->add_option("--format", profile->list_format, "Output format")->check(CLI::IsMember({"table", "json"}));
  list_cmd->footer(examples({"overlap-sim profile list", "overlap-sim profile list --format json"}));
  CLI::App* show_cmd = profile_cmd->add_subcommand("show", "Print a resolved hardware profile");
  show_cmd->add_option("name", profile->name, "Built-in profile name or a profile YAML path")->required();
  show_cmd->add_option("--format", profile->format, "Output format")->check(CLI::IsMember({"json", "yaml", "table"}));
  show_cmd->add_option("--set", profile->sets, "Override a profile key: a.b=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
  show_cmd->footer(examples({"overlap-sim profile show h100-sxm-8x-nvswitch",
                             "overlap-sim profile show h100-sxm-8x-nvswitch --format yaml > my-node.yaml   # loads back: --hardware my-node.yaml",
                             "overlap-sim profile show a800-8x-nvlink --format yaml --set gpu.sm_count=100"}));
  const Command fit = add_profile_fit_command(*profile_cmd);
  return {profile_cmd, [profile, list_cmd, fit](std::ostream& out, std::ostream& err) {
            if (fit.app->parsed()) return fit.run(out, err);
            if (list_cmd->parsed()) {
              cmd_profile_list(profile->list_format, out);
              return kExitOk;
            }
            const std::string& name = profile->name;
            const std::string path = fs::path(name).extension() == ".yaml" || name.find('/') != std::string::npos
                                         ? resolve_input_path(name)
                                         : name;
            return cmd_profile_show(path, profile->format, profile->sets, out);
          }};
}

}  // namespace tools
}  // namespace overlap
