#include "tools/paper_data.hpp"

#include <filesystem>

namespace overlap::tools::papers {

namespace {

const std::vector<std::string> kPaperRowKeys = {"source",        "location",       "figure", "config",
                                                "published",     "published_text", "unit",   "ratio",
                                                "compare",       "tolerance_pct",  "zero_tolerance",
                                                "cause",         "cause_is_ours"};

// <source_dir>/validation/papers/<name>.yaml: the source tree as tools::source_dir() resolves it
// ($OVERLAP_HOME or the tree built from), like the scenarios the rows run.
std::string paper_data_file(const std::string& source_dir, const std::string& name) {
  return (std::filesystem::path(source_dir) / "validation" / "papers" / (name + ".yaml")).string();
}

}  // namespace

PaperData::PaperData(const std::string& source_dir, const std::string& name)
    : file_(paper_data_file(source_dir, name)),
      root_(load_yaml_file(file_, "published figures"), "", file_) {
  root_.expect_map();
  root_.allow_keys({"source", "rows", "tables", "settings"});
  source_ = root_.get_string("source");
}

YamlReader PaperData::section(const std::string& key) const {
  const YamlReader s = root_.child(key);
  s.expect_map();
  return s;
}

RowSpec PaperData::row(const std::string& id) const {
  const YamlReader r = section("rows").child(id);
  read_.insert("rows." + id);
  r.expect_map();
  r.allow_keys(kPaperRowKeys);
  RowSpec s;
  s.source = r.get_string("source", source_);
  s.location = r.get_string("location");
  s.figure = r.get_string("figure", "");
  s.config = r.get_string("config", "");
  if (const auto p = r.optional_child("published")) {
    if (p->is_sequence()) {
      if (p->size() != 2) p->fail("must be a number or a pair [A, B] read as A / B");
      s.published = p->element(0).as_double() / p->element(1).as_double();
    } else {
      s.published = p->as_double();
    }
  }
  s.published_text = r.get_string("published_text", "");
  s.unit = r.get_string("unit", s.unit);
  s.ratio = r.get_bool("ratio", s.ratio);
  if (r.has("compare")) {
    const YamlReader c = r.child("compare");
    const auto v = compare_from_name(c.as_string());
    if (!v) c.fail("must be value, at_least or at_most (got '" + c.as_string() + "')");
    s.compare = *v;
  }
  s.tolerance_pct = r.get_nonnegative_double("tolerance_pct", s.tolerance_pct);
  s.zero_tolerance = r.get_nonnegative_double("zero_tolerance", s.zero_tolerance);
  s.cause = r.get_string("cause", "");
  s.cause_is_ours = r.get_bool("cause_is_ours", false);
  return s;
}

std::vector<YamlReader> PaperData::table(const std::string& id, const std::vector<std::string>& columns) const {
  const YamlReader t = section("tables").child(id);
  read_.insert("tables." + id);
  t.expect_sequence();
  std::vector<YamlReader> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    YamlReader e = t.element(i);
    e.expect_map();
    e.allow_keys(columns);
    for (const std::string& c : columns) e.child(c);  // every column is required
    out.push_back(std::move(e));
  }
  return out;
}

double PaperData::number(const std::string& key) const {
  read_.insert("settings." + key);
  return section("settings").get_double(key);
}

std::string PaperData::text(const std::string& key) const {
  read_.insert("settings." + key);
  return section("settings").get_string(key);
}

void PaperData::check_all_read() const {
  for (const char* key : {"rows", "tables", "settings"}) {
    const auto s = root_.optional_child(key);
    if (!s) continue;
    s->expect_map();
    for (const std::string& k : s->keys()) {
      if (!read_.count(std::string(key) + "." + k))
        s->fail_at(k, "no row of `validate --papers` reads it (a figure the report would silently leave out)");
    }
  }
}

}  // namespace overlap::tools::papers
