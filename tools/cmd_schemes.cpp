#include "tools/cmd_schemes.hpp"

#include <fmt/format.h>

#include "sim/schemes/scheme.hpp"
#include "tools/cli.hpp"

namespace overlap::tools {

nlohmann::json schemes_json() {
  nlohmann::json list = nlohmann::json::array();
  for (const sim::SchemeInfo& s : sim::scheme_registry()) {
    nlohmann::json params = nlohmann::json::array();
    for (const sim::SchemeParam& p : s.params)
      params.push_back({{"name", p.name}, {"type", p.type}, {"default", p.default_value}, {"help", p.help}});
    list.push_back({{"name", s.name}, {"source", s.source}, {"summary", s.summary}, {"params", params}});
  }
  return list;
}

void cmd_schemes(const std::string& format, std::ostream& out) {
  if (format == "json") {
    out << nlohmann::json{{"schemes", schemes_json()}}.dump(2) << "\n";
    return;
  }
  if (format != "table") throw UsageError("--format must be table or json (got '" + format + "')");
  bool first = true;
  for (const sim::SchemeInfo& s : sim::scheme_registry()) {
    if (!first) out << "\n";
    first = false;
    out << fmt::format("{}  [{}]\n", s.name, s.source);
    if (!s.summary.empty()) out << fmt::format("  {}\n", s.summary);
    if (s.params.empty()) {
      out << "  params: none\n";
      continue;
    }
    out << "  params:\n";
    std::size_t width = 0;
    for (const sim::SchemeParam& p : s.params) width = std::max(width, p.name.size());
    for (const sim::SchemeParam& p : s.params)
      out << fmt::format("    {:<{}}  {:<6}  default {:<8}  {}\n", p.name, width, p.type,
                         p.default_value.empty() ? "-" : p.default_value, p.help);
  }
}

}  // namespace overlap::tools
