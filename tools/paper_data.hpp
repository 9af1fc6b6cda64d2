#pragma once
// One source's published figures as data: validation/papers/<name>.yaml (name: a `--source` of
// `validate --papers`). The file holds what the source prints (each figure's value and text as
// printed, where it is printed, the tables of settings and measurements) and how a prediction is held
// against it (unit, ratio or absolute, comparison, tolerance, a cause found for a miss); the
// computation of each prediction stays in the source's papers_<name>.cpp. Layout of a file:
//
//   source: flux-report            # the id rows cite (source_titles()); a row may name another
//   rows:                          # one map per figure, by the id its code asks for
//     ag-gemm: {location: ..., figure: ..., config: ..., published: 1.255, published_text: ..., unit: x, ...}
//   tables:                        # a source's tables: a list of maps, one per printed row
//     a800: [{file: ..., torch_total_ms: 3.099, ...}]
//   settings: {seq: 2048}          # single numbers or texts the source states
//
// `published` is a number or a pair [A, B] read as A / B (a ratio of two printed numbers). Every key
// the code does not read is an error (InputError naming file, line and key), checked when the report
// is complete: a figure in the file that no row compares is never silently dropped.
#include <set>
#include <string>
#include <vector>

#include "cost_model/yaml_reader.hpp"
#include "tools/papers.hpp"

namespace overlap::tools::papers {

class PaperData {
 public:
  // Reads <source_dir>/validation/papers/<name>.yaml; InputError for a missing file or bad input.
  PaperData(const std::string& source_dir, const std::string& name);

  const std::string& file() const { return file_; }
  // The row `id`: every RowSpec field but `variant`, the file's values or RowSpec's defaults for the
  // keys it leaves out. `config` is the file's where the setting is fixed text; where it carries
  // figures the run computes, the caller writes it.
  RowSpec row(const std::string& id) const;
  // The table `id`: one reader per printed row, each a map of exactly `columns` (all required).
  std::vector<YamlReader> table(const std::string& id, const std::vector<std::string>& columns) const;
  // A setting the source states.
  double number(const std::string& key) const;
  std::string text(const std::string& key) const;

  // InputError at the first row, table or setting no code read.
  void check_all_read() const;

 private:
  YamlReader section(const std::string& key) const;

  std::string file_;
  YamlReader root_;
  std::string source_;
  mutable std::set<std::string> read_;  // "rows.ID", "tables.ID", "settings.KEY"
};

}  // namespace overlap::tools::papers
