#include "tools/cmd_papers.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "cost_model/atomic_file.hpp"
#include "tools/command_errors.hpp"
#include "tools/input_paths.hpp"
#include "tools/papers.hpp"

namespace overlap::tools {

int cmd_validate_papers(const PapersOptions& options, std::ostream& out) {
  if (!options.papers)
    throw UsageError("validate: give --papers (compare with the sources' published figures); a measured-results "
                     "directory is validated by `overlap-sim validate DIR`");
  if (options.format != "table" && options.format != "json")
    throw UsageError("--format must be table or json (got '" + options.format + "')");
  for (const std::string& s : options.sources) {
    const auto& known = papers::paper_sources();
    if (std::find(known.begin(), known.end(), s) == known.end()) {
      std::string names;
      for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
      throw UsageError(fmt::format("--source: unknown source '{}' (known: {})", s, names));
    }
  }
  papers::ScenarioRunner runner(source_dir(), hardware_dir());
  const papers::PapersReport report = papers::papers_report(runner, options.sources);
  const std::string text =
      options.format == "json" ? papers::to_json(report).dump(2) + "\n" : papers::format_table(report);
  if (options.output.empty()) {
    out << text;
  } else {
    try {
      check_outputs_not_inputs({{"-o", options.output}});  // a papers scenario the report read
      write_file_atomically(options.output, text);
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
  }
  return options.strict && report.off > 0 ? kExitPapersOff : kExitOk;
}

}  // namespace overlap::tools
