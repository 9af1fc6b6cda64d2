#pragma once
// `overlap-sim schemes [--format table|json]`: every registered scheme with its source, summary and
// parameters (name, type, default, help), in registry order.
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "tools/command.hpp"

namespace overlap::tools {

nlohmann::json schemes_json();
void cmd_schemes(const std::string& format, std::ostream& out);

// Registers `schemes` and its flag on `app` (tools/command.hpp).
Command add_schemes_command(CLI::App& app);

}  // namespace overlap::tools
