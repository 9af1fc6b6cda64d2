// Where the commands look for the files a user names (tools/input_paths.hpp).
#include "tools/input_paths.hpp"

#include <filesystem>
#include <system_error>

#include "cost_model/source_paths.hpp"

namespace overlap::tools {

namespace fs = std::filesystem;

std::string source_dir() { return source_tree_dir(); }

std::string hardware_dir() { return default_hardware_dir(); }

std::string resolve_input_path(const std::string& path) {
  // error_code overloads: a path the OS refuses (too long, bad bytes) is "not there", and the input
  // reader then says why, never a filesystem exception.
  const auto exists = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  if (path.empty() || fs::path(path).is_absolute() || exists(path)) return path;
  const fs::path root(source_dir());
  if (exists(root / path)) return (root / path).string();
  const bool bare = path.find('/') == std::string::npos && fs::path(path).extension() != ".yaml";
  if (bare) {
    for (const char* sub : {"scenarios", "scenarios/papers"}) {
      const fs::path candidate = root / sub / (path + ".yaml");
      if (exists(candidate)) return candidate.string();
    }
  }
  return path;
}

namespace {

// A relative file named on the command line: the working directory's, else the scenario folder's,
// else the source tree's; absolute, so the scenario loader does not read it against the scenario.
std::string resolve_flag_path(const std::string& value, const std::string& scenario_path, const char* extension) {
  const auto exists = [](const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
  };
  const fs::path v(value);
  const bool path_like = value.find('/') != std::string::npos || v.extension() == extension;
  if (!path_like || v.is_absolute()) return value;  // a built-in name, or already absolute
  fs::path chosen = v;
  for (const fs::path& candidate : {v, fs::path(scenario_path).parent_path() / v, fs::path(source_dir()) / v}) {
    if (exists(candidate)) {
      chosen = candidate;
      break;
    }
  }
  std::error_code ec;
  const fs::path abs = fs::absolute(chosen, ec);
  return ec ? value : abs.lexically_normal().string();
}

}  // namespace

std::string resolve_hardware_path(const std::string& value, const std::string& scenario_path) {
  return resolve_flag_path(value, scenario_path, ".yaml");
}

std::string resolve_model_path(const std::string& value, const std::string& scenario_path) {
  return resolve_flag_path(value, scenario_path, ".json");
}

std::vector<std::string> resolve_set_paths(const std::vector<std::string>& sets, const std::string& scenario_path) {
  const std::string hardware = "hardware=";
  const std::string model = "workload.model=";
  std::vector<std::string> out = sets;
  for (std::string& s : out) {
    if (s.rfind(hardware, 0) == 0) s = hardware + resolve_hardware_path(s.substr(hardware.size()), scenario_path);
    if (s.rfind(model, 0) == 0) s = model + resolve_model_path(s.substr(model.size()), scenario_path);
  }
  return out;
}

}  // namespace overlap::tools
