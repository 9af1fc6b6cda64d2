#include "tools/cmd_schemes.hpp"

#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "sim/schemes/scheme.hpp"
#include "tools/command_errors.hpp"

namespace overlap::tools {

nlohmann::json schemes_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const sim::SchemeInfo& s : sim::scheme_registry()) {
    nlohmann::json params = nlohmann::json::array();
    for (const sim::SchemeParam& p : s.params)
      params.push_back({{"name", p.name},
                        {"type", sim::param_type_name(p.type)},
                        {"default", sim::default_text(p)},
                        {"help", p.help},
                        {"tune_values", p.tune_values},
                        {"tune_when", p.tune_when},
                        {"equivalent", p.equivalent},
                        {"training_only", p.training_only}});
    // "" = no backward form: refused for pass backward / step and data parallelism.
    list.push_back(
        {{"name", s.name}, {"source", s.source}, {"summary", s.summary}, {"backward", s.backward}, {"params", params}});
  }
  return list;
}

void cmd_schemes(const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << nlohmann::json{{"schemes", schemes_json()}}.dump(2) << "\n";
    return;
  }
  if (format != "table") throw UsageError("--format must be table or json (got '" + format + "')");
  // The knob every scheme shares lives in the hardware profile, not in a scheme's table.
  out << "Every NCCL-style collective holds hardware.comm.channels SMs (NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS,\n"
         "formerly NCCL_NCHANNELS; one CTA per channel): set it with --set hardware.comm.channels=N.\n"
         "Set a scheme's knob without YAML: overlap-sim run --scheme NAME --param KEY=VALUE.\n\n";
  bool first = true;
  for (const sim::SchemeInfo& s : sim::scheme_registry()) {
    if (!first) out << "\n";
    first = false;
    out << fmt::format("{}  [{}]\n", s.name, s.source);
    if (!s.summary.empty()) out << fmt::format("  {}\n", s.summary);
    // A scheme without a backward form is refused for training steps (workload.pass backward | step,
    // or data parallelism): said here so that a refusal is never a surprise.
    out << fmt::format("  backward: {}\n", s.backward.empty() ? "no backward form (forward passes only; refused for "
                                                                 "workload.pass backward / step and data parallelism)"
                                                               : s.backward);
    if (s.params.empty()) {
      out << "  params: none\n";
      continue;
    }
    out << "  params:\n";
    std::size_t width = 0;
    for (const sim::SchemeParam& p : s.params) width = std::max(width, p.name.size());
    for (const sim::SchemeParam& p : s.params) {
      const std::string shown = sim::default_text(p);
      out << fmt::format("    {:<{}}  {:<6}  default {:<8}  {}\n", p.name, width, sim::param_type_name(p.type),
                         shown.empty() ? "-" : shown, p.help);
      const std::string pad(width + 6, ' ');
      if (!p.tune_values.empty()) {
        std::string values;
        for (const auto& v : p.tune_values) values += (values.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
        out << fmt::format("{}tune tries: {}{}\n", pad, values, p.tune_when.empty() ? "" : " (when " + p.tune_when + ")");
      }
      if (!p.equivalent.empty()) out << fmt::format("{}in production: {}\n", pad, p.equivalent);
      if (p.training_only)
        out << fmt::format("{}training steps only (workload.pass backward | step); refused in a forward pass\n", pad);
    }
  }
}

Command add_schemes_command(CLI::App& app) {
  const auto format = std::make_shared<std::string>("table");
  CLI::App* cmd = app.add_subcommand("schemes", "List the schemes with their parameters, sources and the "
                                                "production knobs they correspond to");
  cmd->add_option("--format", *format, "Output format")->check(CLI::IsMember({"table", "json"}));
  cmd->footer(examples({"overlap-sim schemes", "overlap-sim schemes --format json"}));
  return {cmd, [format](std::ostream& out, std::ostream&) {
            cmd_schemes(*format, out);
            return kExitOk;
          }};
}

}  // namespace overlap::tools
