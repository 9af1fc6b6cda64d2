#include "tools/scenario_flags.hpp"

#include <cctype>
#include <fstream>

#include <CLI/CLI.hpp>
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include "sim/workload_keys.hpp"
#include "tools/command.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"

namespace overlap::tools {

void add_scenario_flags(CLI::App* cmd, ScenarioFlags& flags, bool with_hardware) {
  if (with_hardware)
    cmd->add_option("--hardware", flags.hardware,
                    "Hardware profile: a built-in name ('overlap-sim profile list') or a profile YAML; "
                    "the same as --set hardware=VALUE")
        ->check(non_empty_value())
        ->type_name("NAME|FILE");
  cmd->add_option("--tp", flags.tp, "Tensor-parallel ranks: the same as --set workload.tp=N")
      ->transform(decimal_integer())
      ->type_name("N");
  cmd->add_option("--tokens", flags.tokens,
                  "Tokens (batch x seq) of the workload: --set workload.tokens=N (mlp_tpsp), workload.batch=1 "
                  "and workload.seq=N (attention, transformer), workload.m=N (gemm_collective)")
      ->transform(decimal_integer())
      ->type_name("N");
  cmd->add_option("--model", flags.model,
                  "Model: a built-in name (llama3-70b, qwen2.5-72b, ...), a Hugging Face config.json or a checkpoint "
                  "directory holding one; the same as --set workload.model=VALUE")
      ->check(non_empty_value())
      ->type_name("NAME|FILE|DIR");
}

namespace {

// The workload's kind and which token keys it writes, as the scenario (after --set) gives them.
struct WorkloadKeys {
  std::string kind;
  bool batch_seq = false;
};

WorkloadKeys workload_keys(const std::string& path, const std::vector<std::string>& user_sets) {
  WorkloadKeys k;
  try {
    const YAML::Node root = YAML::LoadFile(path);
    if (root.IsMap() && root["workload"] && root["workload"].IsMap()) {
      const YAML::Node w = root["workload"];
      if (w["kind"] && w["kind"].IsScalar()) k.kind = w["kind"].Scalar();
      k.batch_seq = !w["tokens"] && (w["batch"] || w["seq"]);
    }
  } catch (const YAML::Exception&) {
    // The loader reports a file it cannot read, with its line; the flags add nothing to that.
  }
  for (const std::string& s : user_sets) {
    if (s.rfind("workload.kind=", 0) == 0) k.kind = s.substr(14);
    if (s.rfind("workload.tokens=", 0) == 0) k.batch_seq = false;
  }
  return k;
}

}  // namespace

std::vector<FlagAssignment> scenario_flag_sets(const ScenarioFlags& flags, const std::string& scenario_path,
                                               const std::vector<std::string>& user_sets) {
  std::vector<FlagAssignment> out;
  if (!flags.hardware.empty())
    out.push_back({"hardware=" + resolve_hardware_path(flags.hardware, scenario_path), "hardware=" + flags.hardware,
                   "--hardware " + flags.hardware});
  if (!flags.model.empty())
    out.push_back({"workload.model=" + resolve_model_path(flags.model, scenario_path), "workload.model=" + flags.model,
                   "--model " + flags.model});
  if (flags.tp) {
    const std::string set = fmt::format("workload.tp={}", *flags.tp);
    out.push_back({set, set, fmt::format("--tp {}", *flags.tp)});
  }
  if (flags.tokens) {
    const std::int64_t n = *flags.tokens;
    const std::string flag = fmt::format("--tokens {}", n);
    const WorkloadKeys k = workload_keys(scenario_path, user_sets);
    auto add = [&](const std::string& key) {
      const std::string set = fmt::format("workload.{}={}", key, n);
      out.push_back({set, set, flag});
    };
    // No readable kind: the loader reports the scenario's own mistake, which comes first.
    if (k.kind.empty()) return out;
    const std::optional<sim::WorkloadKind> kind = sim::parse_workload_kind(k.kind);
    switch (kind ? sim::token_keys_of(*kind) : sim::TokenKeys::none) {
      case sim::TokenKeys::tokens_or_batch_seq:
        if (!k.batch_seq) {
          add("tokens");
          break;
        }
        [[fallthrough]];
      case sim::TokenKeys::batch_seq:
        out.push_back({"workload.batch=1", "workload.batch=1", flag});
        add("seq");
        break;
      case sim::TokenKeys::gemm_rows: add("m"); break;
      case sim::TokenKeys::one_per_step:
        throw UsageError(fmt::format("{}: a decode_stack workload decodes one token per step; it has no token count", flag));
      case sim::TokenKeys::none:
        throw UsageError(fmt::format("{}: the scenario's workload.kind ('{}') has no token count", flag, k.kind));
    }
  }
  return out;
}

std::vector<std::string> shown_overrides(const std::vector<std::string>& user_sets,
                                         const std::vector<FlagAssignment>& flags) {
  std::vector<std::string> out = user_sets;
  for (const FlagAssignment& f : flags) out.push_back(f.shown);
  return out;
}

std::string placeholder_note(const std::string& profile_name, const std::string& profile_file) {
  if (profile_file.empty()) return {};
  std::ifstream in(profile_file);
  int marked = 0;
  for (std::string line; std::getline(in, line);) {
    for (char& c : line) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // In a comment: the `placeholders:` section's own lines are data, not marks.
    const auto comment = line.find('#');
    marked += comment != std::string::npos && line.find("placeholder", comment) != std::string::npos ? 1 : 0;
  }
  if (marked == 0) return {};
  return fmt::format("note: hardware {}: {} line{} of its profile mark placeholder defaults, neither published nor "
                     "calibrated ('placeholder' in {}); calibrate/ measures them",
                     profile_name, marked, marked == 1 ? "" : "s", profile_file);
}

void rethrow_naming_flags(const InputError& e, const std::vector<FlagAssignment>& flags) {
  std::string file = e.file();
  std::string message = e.message();
  for (const FlagAssignment& f : flags) {
    const std::string as_set = "--set " + f.set;
    if (file == as_set) file = f.flag;
    for (std::size_t pos; (pos = message.find(as_set)) != std::string::npos;) message.replace(pos, as_set.size(), f.flag);
  }
  if (file == e.file() && message == e.message()) throw e;
  throw InputError(file, e.line(), e.key_path(), message);
}

}  // namespace overlap::tools
