// `overlap-sim profile fit`: a hardware profile fitted to traces of a real job (tools/cmd_profile_fit.hpp).
#include "tools/cmd_profile_fit.hpp"

#include <filesystem>
#include <memory>
#include <sstream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "calibrate/traces/profile_fit.hpp"
#include "cost_model/atomic_file.hpp"
#include "cost_model/input_error.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/profile_yaml.hpp"
#include "cost_model/units.hpp"
#include "cost_model/yaml_reader.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "tools/cmd_trace.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"

namespace overlap::tools {

Command add_profile_fit_command(CLI::App& profile_cmd) {
  const auto options = std::make_shared<ProfileFitOptions>();
  ProfileFitOptions& o = *options;
  CLI::App* cmd = profile_cmd.add_subcommand(
      "fit", "Write a hardware profile fitted to the GEMM and NCCL kernels measured in traces of a real job "
             "(the files `overlap-sim trace` reads), starting from a base profile");
  cmd->add_option("files", o.files, "Trace files, one per rank (Kineto JSON, plain or .gz; nsys SQLite exports)")->required();
  cmd->add_option("--hardware", o.hardware, "The base profile (built-in name or YAML path): what the traces do not measure")
      ->required();
  cmd->add_option("-o,--output", o.output, "Write the fitted profile's YAML to FILE (atomically)")->required();
  cmd->add_option("--report", o.report, "Write the report to FILE (atomically) instead of stdout");
  cmd->add_option("--name", o.name, "The fitted profile's name (default: the base's name + -fit)");
  cmd->add_option("--min-samples", o.min_samples, "Kernels a GEMM shape or a message size needs to be fitted")
      ->transform(decimal_integer())
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--format", o.format, "Report format")->check(CLI::IsMember({"table", "json"}));
  cmd->add_flag("--strict", o.strict,
               "Refuse a trace with an event that cannot be read as written instead of skipping and counting it");
  cmd->footer("\nExamples:\n"
              "  overlap-sim profile fit traces/*.pt.trace.json.gz --hardware h100-sxm-8x-nvswitch -o my-cluster.yaml\n"
              "  overlap-sim run --hardware my-cluster.yaml\n");
  return {cmd, [options, cmd](std::ostream& out, std::ostream& err) {
            check_output_flags({{"-o", &options->output, cmd->get_option("--output")},
                                {"--report", &options->report, cmd->get_option("--report")}});
            cmd_profile_fit(*options, out, err);
            return kExitOk;
          }};
}

namespace {

std::string opt_us(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "-"; }

std::string opt_error(const std::optional<double>& predicted, double measured) {
  if (!predicted || !(measured > 0)) return "-";
  return fmt::format("{:+.2f}", 100.0 * (*predicted - measured) / measured);
}

nlohmann::json opt_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

void write_table(const traces::FitResult& r, const std::string& base, const std::string& output, std::ostream& out) {
  out << fmt::format("# overlap-sim profile fit: {} fitted to the traces -> {} ('{}')\n", base, output, r.profile.name);
  out << "# measured: median kernel time over the ranks; base / fitted: the cost model on each profile (idle GPU); "
         "rate only: the fitted GEMM rate without the trace's GEMM entries; errors (predicted - measured) / measured\n\n";
  out << fmt::format("{:<10}  {:<40}  {:>7}  {:>12}  {:>12}  {:>8}  {:>12}  {:>8}  {:>12}  {:>8}  {}\n", "class", "what",
                     "samples", "measured_us", "base_us", "base_%", "fitted_us", "fit_%", "rate_only_us", "rate_%", "status");
  for (const traces::FitRow& row : r.rows)
    out << fmt::format("{:<10}  {:<40}  {:>7}  {:>12}  {:>12}  {:>8}  {:>12}  {:>8}  {:>12}  {:>8}  {}\n", row.cls, row.what,
                       row.samples, row.measured_us > 0 ? fmt::format("{:.3f}", row.measured_us) : "-", opt_us(row.base_us),
                       opt_error(row.base_us, row.measured_us), opt_us(row.fitted_us),
                       opt_error(row.fitted_us, row.measured_us), opt_us(row.fitted_rate_us),
                       opt_error(row.fitted_rate_us, row.measured_us), row.status);
  out << "\nProfile keys\n";
  for (const traces::FitNote& n : r.notes)
    out << fmt::format("  {:<28} {:<6} {}\n", n.key, n.fitted ? "fitted" : "kept", n.text);
  out << fmt::format("\nGEMM kernels: {} ({} shape unknown, {} batched: not fitted); NCCL kernels: {} ({} size unknown: not "
                     "fitted)\n",
                     r.gemm_kernels, r.gemm_shape_unknown, r.gemm_batched, r.comm_kernels, r.comm_size_unknown);
}

void write_json(const traces::FitResult& r, const std::string& base, const std::string& output, std::ostream& out) {
  nlohmann::json j;
  j["tool"] = "overlap-sim profile fit";
  j["base"] = base;
  j["output"] = output;
  j["name"] = r.profile.name;
  j["rows"] = nlohmann::json::array();
  for (const traces::FitRow& row : r.rows)
    j["rows"].push_back({{"class", row.cls}, {"what", row.what}, {"samples", row.samples}, {"measured_us", row.measured_us},
                         {"base_us", opt_json(row.base_us)}, {"fitted_us", opt_json(row.fitted_us)},
                         {"fitted_rate_us", opt_json(row.fitted_rate_us)}, {"status", row.status}});
  j["keys"] = nlohmann::json::array();
  for (const traces::FitNote& n : r.notes) j["keys"].push_back({{"key", n.key}, {"fitted", n.fitted}, {"text", n.text}});
  j["gemm_kernels"] = r.gemm_kernels;
  j["gemm_shape_unknown"] = r.gemm_shape_unknown;
  j["gemm_batched"] = r.gemm_batched;
  j["comm_kernels"] = r.comm_kernels;
  j["comm_size_unknown"] = r.comm_size_unknown;
  // Paths are bytes, not necessarily UTF-8: invalid bytes as U+FFFD (RFC 8259 section 8.1).
  out << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

// The fitted profile's YAML: `profile show --format yaml`'s writer (every key written out, loads
// back), under a header saying where each fitted value came from.
std::string profile_text(const traces::FitResult& r, const std::string& base, const std::vector<std::string>& files) {
  std::string yaml = profile_yaml(r.profile);
  // Drop the writer's own header comment; ours says more.
  std::size_t body = 0;
  while (body < yaml.size() && yaml[body] == '#') body = yaml.find('\n', body) + 1;
  std::string head = fmt::format("# overlap-sim profile fit: the base profile {} fitted to {} trace file(s):\n", base, files.size());
  for (const std::string& f : files) head += "#   " + utf8_or_replaced(f) + "\n";
  for (const traces::FitNote& n : r.notes) head += fmt::format("# {}: {}: {}\n", n.key, n.fitted ? "fitted" : "kept", n.text);
  head += "# Load it: --hardware this-file.yaml (or hardware: this-file.yaml in a scenario)\n";
  return head + yaml.substr(body);
}

// The fitted profile as its own loader reads it: a fit past the schema's ranges (a measured
// duration, a shape or a curve the loader refuses) or a name that is not valid text is refused
// here, before anything is written, naming the key as the loader does.
void check_loads(const std::string& yaml, const std::string& output) {
  const auto refuse = [&](const std::string& key, const std::string& why) {
    throw InputError(output, 0, key,
                     "the fitted profile would not load (" + why + "): nothing written; the traces measure a value past "
                     "the profile schema's ranges (docs/reference/inputs.md)");
  };
  try {
    // parse_yaml: the loader's own parse (valid UTF-8, the node cap), as a profile file is read.
    YAML::Node node = parse_yaml(yaml, output);
    (void)profile_from_yaml(YamlReader(node, "", output), std::filesystem::path(output).parent_path().string());
  } catch (const InputError& e) {
    refuse(e.key_path(), e.message());
  } catch (const RangeError& e) {
    refuse("", e.what());
  } catch (const YAML::Exception& e) {
    refuse("", e.what());
  }
}

}  // namespace

void cmd_profile_fit(const ProfileFitOptions& o, std::ostream& out, std::ostream& err) {
  // The base first: a misspelt profile is reported before any trace is read.
  const bool path = std::filesystem::path(o.hardware).extension() == ".yaml" || o.hardware.find('/') != std::string::npos;
  const HardwareProfile base = load_profile(path ? resolve_input_path(o.hardware) : o.hardware, default_hardware_dir());
  TraceReports loaded = load_trace_reports(o.files, "", err, {}, o.strict);
  check_outputs_not_inputs({{"-o", o.output}, {"--report", o.report}});  // the base and the traces are read
  traces::FitOptions fit;
  fit.min_samples = o.min_samples;
  fit.link_class = [](const HardwareProfile& hw, int n) { return sim::collective_link_class(hw, n); };
  traces::FitResult r = traces::fit_profile(loaded.ranks, base, fit);
  if (utf8_or_replaced(o.name) != o.name) throw InputError("", 0, "--name", "is not valid UTF-8: a profile's name is text");
  r.profile.name = o.name.empty() ? base.name + "-fit" : o.name;
  r.profile.description = fmt::format("{}, fitted to {} trace file(s) by overlap-sim profile fit", base.name, o.files.size());
  r.profile.source_file.clear();
  const std::string yaml = profile_text(r, base.name, o.files);
  check_loads(yaml, o.output);
  std::ostringstream report;
  if (o.format == "json") write_json(r, base.name, o.output, report);
  else write_table(r, base.name, o.output, report);
  StagedOutputs outputs;
  outputs.stage(o.output, yaml);
  if (!o.report.empty()) outputs.stage(o.report, report.str());
  outputs.commit();
  if (o.report.empty()) out << report.str();
  err << "wrote " << o.output << (o.report.empty() ? "" : " and " + o.report) << "\n";
}

}  // namespace overlap::tools
