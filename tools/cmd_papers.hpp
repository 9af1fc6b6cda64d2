#pragma once
// `overlap-sim validate --papers [--format table|json] [--strict] [--source NAME]... [--output FILE]`:
// every published figure of the sources against the simulator's prediction (tools/papers.hpp).
// A report, so it exits 0 whatever the verdicts; with --strict it exits 1 when a row is `off`.
#include <ostream>
#include <string>
#include <vector>

namespace overlap::tools {

struct PapersOptions {
  bool papers = false;               // --papers (validate's other mode, a results DIR, is another command's)
  std::string format = "table";      // table | json
  bool strict = false;               // exit 1 when a row is off
  std::vector<std::string> sources;  // commfuse | flashoverlap | async_tp | dtp (empty: all)
  std::string output;                // "" = stdout; else written atomically
};

// The exit status of --strict when a row is off.
inline constexpr int kExitPapersOff = 1;

// Writes the report; returns 0, or kExitPapersOff under --strict when a row is off. Bad options throw
// UsageError (exit 2).
int cmd_validate_papers(const PapersOptions& options, std::ostream& out);

}  // namespace overlap::tools
