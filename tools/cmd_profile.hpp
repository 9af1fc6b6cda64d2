#pragma once
// `overlap-sim profile show NAME|PATH [--format json|yaml|table] [--set a.b=v ...]`: prints the
// resolved hardware profile (defaults filled in, fabric expanded). Returns 0, or 2 after printing an
// input error to stderr.
// `overlap-sim profile list`: the built-in profiles.
#include <ostream>
#include <string>
#include <vector>

#include "cost_model/hardware_profile.hpp"
#include "tools/command.hpp"

namespace overlap {

// `profile show NAME|PATH`: the resolved profile as a table, JSON or YAML. A bad name, file or --set
// throws InputError; the CLI prints it on its error stream with file, line and key (exit 2).
int cmd_profile_show(const std::string& name_or_path, const std::string& format,
                     const std::vector<std::string>& sets, std::ostream& out);

// `overlap-sim profile list [--format table|json]`: every built-in profile (scenarios/hardware) with
// its GPU, GPU count, fabric and description. Throws InputError when a built-in profile is broken.
void cmd_profile_list(const std::string& format, std::ostream& out);

namespace tools {

// Registers `profile` with `list`, `show` and `fit` (tools/cmd_profile_fit.hpp) and their flags on
// `app` (tools/command.hpp); the Command runs whichever of the three was named.
Command add_profile_command(CLI::App& app);

}  // namespace tools

}  // namespace overlap
