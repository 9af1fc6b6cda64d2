// Parameter sweeps (sim/sweep.hpp).
#include "sim/sweep.hpp"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/json_lines.hpp"
#include "sim/metrics.hpp"
#include "sim/report.hpp"
#include "sim/sweep_parallel.hpp"

namespace overlap::sim {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.erase(0, 1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// Splits at commas that are not inside [], {} or quotes.
std::vector<std::string> split_top_level(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  int depth = 0;
  char quote = 0;
  for (char c : s) {
    if (quote) {
      if (c == quote) quote = 0;
    } else if (c == '"' || c == '\'') {
      quote = c;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    } else if (c == ',' && depth == 0) {
      out.push_back(trim(cur));
      cur.clear();
      continue;
    }
    cur += c;
  }
  out.push_back(trim(cur));
  return out;
}

std::string join_sets(const std::vector<std::string>& sets) {
  std::string out;
  for (const auto& s : sets) out += (out.empty() ? "" : ", ") + s;
  return out;
}

// What a point changes in the hardware profile: points with the same hardware assignments load the
// same profile, so one copy serves them all.
std::string hardware_key(const SweepPoint& p) {
  std::string key;
  for (const auto& s : p.sets)
    if (s.rfind("hardware=", 0) == 0 || s.rfind("hardware.", 0) == 0) key += s + '\n';
  return key;
}

// One CSV record (fields unquoted) and its raw text; `pos` moves past it and its line end.
bool next_csv_record(const std::string& text, std::size_t& pos, std::vector<std::string>& fields, std::string& raw) {
  if (pos >= text.size()) return false;
  fields.clear();
  const std::size_t start = pos;
  std::string cur;
  bool quoted = false;
  for (; pos < text.size(); ++pos) {
    const char c = text[pos];
    if (quoted) {
      if (c == '"') {
        if (pos + 1 < text.size() && text[pos + 1] == '"') {
          cur += '"';
          ++pos;
        } else {
          quoted = false;
        }
      } else {
        cur += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.push_back(std::move(cur));
      cur.clear();
    } else if (c == '\n') {
      break;
    } else {
      cur += c;
    }
  }
  fields.push_back(std::move(cur));
  raw = text.substr(start, pos - start) + "\n";
  if (pos < text.size()) ++pos;  // the '\n'
  return true;
}

const char* format_name(SweepFormat f) { return f == SweepFormat::csv ? "csv" : "json"; }

// A sweep's own output may be far larger than a hand-written input (one row per point and scheme).
constexpr std::int64_t kMaxSweepOutputBytes = 1024LL * 1024 * 1024;

// An output a --resume run reads back: absent is fine (nothing done yet), anything but a regular
// file of at most 16 MiB is refused (cost_model/input_file.hpp).
std::string read_file(const std::string& path, bool& exists) {
  const auto text = read_input_file_if_exists(path, "sweep output", kMaxSweepOutputBytes);
  exists = text.has_value();
  return text.value_or(std::string());
}

}  // namespace

SweepAxis parse_sweep_flag(const std::string& flag) {
  const auto eq = flag.find('=');
  if (eq == std::string::npos)
    throw InputError("", 0, "--sweep", "expected KEY=V1,V2,... (e.g. --sweep workload.k=2048,4096; got '" + flag + "')");
  SweepAxis axis;
  const std::string key = trim(flag.substr(0, eq));
  if (key.empty()) throw InputError("", 0, "--sweep", "empty key in '" + flag + "'");
  if (key == "sweep" || key.rfind("sweep.", 0) == 0) throw InputError("", 0, "--sweep " + key, "a sweep cannot vary the sweep");
  axis.keys = {key};
  for (const std::string& v : split_top_level(flag.substr(eq + 1))) {
    if (v.empty()) throw InputError("", 0, "--sweep " + key, "empty value in '" + flag + "'");
    for (std::string& x : expand_sweep_range(v, key)) axis.values.push_back({std::move(x)});
  }
  return axis;
}

namespace {

std::optional<std::int64_t> whole_number(const std::string& s) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  std::size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return std::nullopt;
  for (std::size_t j = i; j < s.size(); ++j)
    if (s[j] < '0' || s[j] > '9') return std::nullopt;
  return std::stoll(s);
}

}  // namespace

std::vector<std::string> expand_sweep_range(const std::string& value, const std::string& key) {
  const auto dots = value.find("..");
  // Only A..B with a whole number A is a range: "../hardware/x.yaml" is a value.
  if (dots == std::string::npos || !whole_number(trim(value.substr(0, dots)))) return {value};
  const std::string where = "--sweep " + key;
  const auto fail = [&](const std::string& why) {
    throw InputError(where, 0, "",
                     fmt::format("range '{}': {} (write A..BxF for A, A*F, ... up to B, or A..B+S for A, A+S, ...; "
                                 "A..B is A..Bx2)", value, why));
  };
  const std::string from_text = trim(value.substr(0, dots));
  std::string rest = value.substr(dots + 2);
  char op = 'x';
  std::string step_text = "2";
  const auto step_at = rest.find_first_of("x+");
  if (step_at != std::string::npos) {
    op = rest[step_at];
    step_text = trim(rest.substr(step_at + 1));
    rest = rest.substr(0, step_at);
  }
  const auto from = whole_number(from_text), to = whole_number(trim(rest)), step = whole_number(step_text);
  if (!from || !to) fail("the ends must be whole numbers");
  if (!step) fail("the step must be a whole number");
  if (*to < *from) fail(fmt::format("it ends ({}) before it starts ({})", *to, *from));
  if (op == 'x' && (*step < 2 || *from < 1)) fail("a geometric range needs a factor of at least 2 and a start of at least 1");
  if (op == '+' && *step < 1) fail("an arithmetic step must be at least 1");
  std::vector<std::string> out;
  for (std::int64_t v = *from; v <= *to;) {
    if (out.size() == kMaxRangeValues) fail(fmt::format("more than {} values", kMaxRangeValues));
    out.push_back(std::to_string(v));
    if (op == 'x' ? v > *to / *step : v > *to - *step) break;  // the next value is past B (no overflow)
    v = op == 'x' ? v * *step : v + *step;
  }
  return out;
}

std::string sweep_axes_text(const std::vector<SweepAxis>& axes) {
  std::string out;
  for (const SweepAxis& a : axes)
    for (const std::string& k : a.keys) out += (out.empty() ? "" : ", ") + k;
  return out.empty() ? "none" : out;
}

std::vector<SweepAxis> drop_sweep_axes(std::vector<SweepAxis> axes, const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    const auto it = std::find_if(axes.begin(), axes.end(), [&](const SweepAxis& a) {
      return std::find(a.keys.begin(), a.keys.end(), key) != a.keys.end();
    });
    if (it == axes.end())
      throw InputError("--no-axis " + key, 0, "",
                       fmt::format("the scenario does not sweep this key (its axes: {})", sweep_axes_text(axes)));
    axes.erase(it);
  }
  return axes;
}

std::vector<SweepAxis> merge_sweep_axes(std::vector<SweepAxis> axes, const std::vector<SweepAxis>& flags) {
  for (const SweepAxis& f : flags) {
    bool replaced = false;
    for (SweepAxis& a : axes) {
      if (a.keys == f.keys) {
        a = f;
        replaced = true;
      }
    }
    if (!replaced) axes.push_back(f);
  }
  return axes;
}

std::int64_t sweep_grid_size(const std::vector<SweepAxis>& axes) {
  if (axes.empty()) return 0;
  std::int64_t n = 1;
  for (const SweepAxis& a : axes) {
    const auto len = static_cast<std::int64_t>(a.values.size());
    if (len == 0) return 0;
    n = n > (kMaxSweepPoints + 1) / len ? kMaxSweepPoints + 1 : std::min(n * len, kMaxSweepPoints + 1);
  }
  return n;
}

void check_sweep_keys(const Scenario& scenario, const std::vector<SweepAxis>& axes, const ScenarioOptions& load) {
  for (const SweepAxis& axis : axes) {
    if (axis.values.empty()) continue;
    ScenarioOptions o = load;
    o.validate_sweep = false;
    o.check_ignored_sweep = false;
    for (std::size_t k = 0; k < axis.keys.size() && k < axis.values.front().size(); ++k)
      o.sets.push_back(axis.keys[k] + "=" + axis.values.front()[k]);
    try {
      (void)load_scenario_text(scenario.text, scenario.file, o);
    } catch (const InputError& e) {
      if (e.message().rfind("unknown key", 0) == 0 || e.message().rfind("unknown parameter", 0) == 0) {
        std::string keys;
        for (const auto& k : axis.keys) keys += (keys.empty() ? "" : ",") + k;
        throw InputError(scenario.file, axis.line, "sweep." + keys,
                         fmt::format("a swept key is not a key of the scenario (nothing was run): {}", e.what()));
      }
    }
  }
}

SweepGrid make_sweep_grid(const std::vector<SweepAxis>& axes, const std::string& file) {
  SweepGrid g;
  const std::int64_t size = sweep_grid_size(axes);
  if (size > kMaxSweepPoints) {
    std::string lengths;
    double product = 1;
    for (const SweepAxis& a : axes) {
      lengths += (lengths.empty() ? "" : " x ") + std::to_string(a.values.size());
      product *= static_cast<double>(a.values.size());
    }
    throw InputError(file, 0, "sweep",
                     fmt::format("the grid has {} = {:.0f} points; a sweep may have at most {} (split it into "
                                 "several sweeps)", lengths, product, kMaxSweepPoints));
  }
  for (const SweepAxis& a : axes) g.columns.insert(g.columns.end(), a.keys.begin(), a.keys.end());
  if (axes.empty()) return g;
  g.points.push_back({});
  for (const SweepAxis& axis : axes) {
    std::vector<SweepPoint> next;
    next.reserve(g.points.size() * axis.values.size());
    for (const SweepPoint& p : g.points) {
      for (const auto& v : axis.values) {
        SweepPoint q = p;
        for (std::size_t k = 0; k < axis.keys.size(); ++k) {
          q.values.push_back(v[k]);
          q.sets.push_back(axis.keys[k] + "=" + v[k]);
        }
        next.push_back(std::move(q));
      }
    }
    g.points = std::move(next);
  }
  return g;
}

std::vector<PreparedPoint> prepare_sweep(const Scenario& scenario, const SweepGrid& grid, const ScenarioOptions& load,
                                         int jobs, std::size_t max_listed) {
  std::vector<PreparedPoint> out(grid.points.size());
  std::vector<std::string> errors(grid.points.size());
  std::map<std::string, std::shared_ptr<const HardwareProfile>> profiles;
  std::mutex profiles_mutex;
  // A point repeated in the grid (a value listed twice) is loaded once: each load parses the
  // scenario and its profile afresh (~4 ms), which a long list of repeats would multiply.
  std::map<std::string, std::size_t> first_of;
  std::vector<std::size_t> origin(grid.points.size()), unique;
  for (std::size_t i = 0; i < grid.points.size(); ++i) {
    const auto [it, fresh] = first_of.emplace(join_sets(grid.points[i].sets), i);
    origin[i] = it->second;
    if (fresh) unique.push_back(i);
  }
  parallel_for(unique.size(), jobs, [&](std::size_t u) {
    const std::size_t i = unique[u];
    const SweepPoint& p = grid.points[i];
    ScenarioOptions o = load;
    o.validate_sweep = false;  // the point's scenario: the sweep itself is what is being run
    o.check_ignored_sweep = false;
    o.sets.insert(o.sets.end(), p.sets.begin(), p.sets.end());
    try {
      Scenario sc = load_scenario_text(scenario.text, scenario.file, o);
      PreparedPoint& pp = out[i];
      pp.hardware_name = sc.hardware_name;
      pp.workload = std::move(sc.workload);
      pp.schemes = std::move(sc.schemes);
      pp.fidelity = sc.fidelity;
      const std::string key = hardware_key(p);
      std::lock_guard<std::mutex> lock(profiles_mutex);
      auto it = profiles.find(key);
      if (it == profiles.end()) it = profiles.emplace(key, std::make_shared<const HardwareProfile>(std::move(sc.hardware))).first;
      pp.hardware = it->second;
    } catch (const InputError& e) {
      errors[i] = fmt::format("{}: {}", join_sets(p.sets), e.what());
    }
  });
  for (std::size_t i = 0; i < grid.points.size(); ++i) {
    if (origin[i] == i) continue;
    out[i] = out[origin[i]];
    errors[i] = errors[origin[i]];
  }
  std::size_t bad = 0;
  std::string listed;
  for (const std::string& e : errors) {
    if (e.empty()) continue;
    if (bad < max_listed) listed += "\n  " + e;
    ++bad;
  }
  if (bad > 0) {
    if (bad > max_listed) listed += fmt::format("\n  ... and {} more", bad - max_listed);
    throw InputError(scenario.file, 0, "sweep",
                     fmt::format("{} of {} sweep points make an invalid scenario (nothing was run):{}", bad,
                                 grid.points.size(), listed));
  }
  return out;
}

std::string sweep_point_key(const std::vector<std::string>& values) {
  nlohmann::json arr = nlohmann::json::array();
  for (const std::string& v : values) arr.push_back(yaml_text_to_json(v));
  return arr.dump();
}

std::vector<std::string> sweep_csv_columns(const SweepGrid& grid) {
  // A swept key that is also a report column (sweeping `hardware` over profile files, beside the
  // report's profile name) would give two columns of one name; readers that look columns up by
  // name (pandas, csv.DictReader) then lose one. The swept one is headed `swept:KEY`.
  const std::vector<std::string>& report = csv_columns();
  std::vector<std::string> cols;
  for (const std::string& key : grid.columns)
    cols.push_back(std::find(report.begin(), report.end(), key) == report.end() ? key : "swept:" + key);
  const std::vector<std::string> rest = csv_columns(grid.step_columns);
  cols.insert(cols.end(), rest.begin(), rest.end());
  cols.push_back(kSweepBestColumn);
  return cols;
}

bool sweep_runs_steps(const Scenario& scenario, const std::vector<SweepAxis>& axes) {
  if (is_training_step(scenario.workload)) return true;
  for (const SweepAxis& axis : axes)
    for (const std::string& key : axis.keys)
      for (const char* training_key : {"workload.pass", "workload.parallel", "workload.recompute"})
        if (key.rfind(training_key, 0) == 0) return true;
  return false;
}

std::string evaluate_sweep_point(const Scenario& scenario, const SweepGrid& grid, std::size_t index,
                                 const PreparedPoint& p, SweepFormat format, bool verify_bytes) {
  const SweepPoint& point = grid.points.at(index);
  std::vector<SchemeRequest> requests;
  for (const SchemeSpec& s : p.schemes) requests.push_back(SchemeRequest{s.name, s.params});
  EvaluateOptions o;
  o.verify_bytes = verify_bytes;
  std::vector<SchemeResult> results;
  try {
    results = evaluate_all(requests, p.workload, *p.hardware, p.fidelity, o);
  } catch (const InputError& e) {
    throw InputError(scenario.file, 0, "sweep", fmt::format("at {}: {}", join_sets(point.sets), e.what()));
  } catch (const std::invalid_argument& e) {
    throw InputError(scenario.file, 0, "sweep", fmt::format("at {}: {}", join_sets(point.sets), e.what()));
  }
  ReportContext ctx;
  ctx.scenario = scenario.name;
  ctx.hardware = p.hardware_name;
  ctx.workload = p.workload;
  ctx.fidelity = p.fidelity;
  ctx.baseline = baseline_scheme_for(p.workload);
  // The point's best schemes, ties named (report.hpp best_results: equal latency in picoseconds),
  // on each of its rows.
  const std::vector<std::string> best = best_names(results);
  if (format == SweepFormat::csv) {
    std::string out;
    const std::string best_text = best_label(results);
    for (const SchemeResult& r : results) {
      std::vector<std::string> fields = point.values;
      const std::vector<std::string> rest = csv_row(ctx, r, grid.step_columns);
      fields.insert(fields.end(), rest.begin(), rest.end());
      fields.push_back(best_text);
      out += csv_line(fields) + "\n";
    }
    return out;
  }
  nlohmann::json values = nlohmann::json::object();
  for (std::size_t k = 0; k < grid.columns.size(); ++k) values[grid.columns[k]] = yaml_text_to_json(point.values[k]);
  nlohmann::json rows = nlohmann::json::array();
  for (const SchemeResult& r : results) {
    nlohmann::json row = report_row_json(r);
    row["point"] = values;
    row["scenario"] = ctx.scenario;
    row["hardware"] = ctx.hardware;
    row["workload"] = workload_json(ctx.workload);
    row["fidelity"] = fidelity_name(ctx.fidelity);
    row["baseline"] = ctx.baseline;
    row[kSweepBestColumn] = best;
    rows.push_back(std::move(row));
  }
  return rows.dump();
}

std::string assemble_sweep_output(const Scenario& scenario, const SweepGrid& grid, SweepFormat format,
                                  const std::vector<std::string>& point_rows) {
  if (format == SweepFormat::csv) {
    std::string out = csv_line(sweep_csv_columns(grid)) + "\n";
    for (const std::string& r : point_rows) out += r;
    return out;
  }
  nlohmann::json j;
  j["scenario"] = scenario.name;
  j["swept"] = grid.columns;
  j["points"] = grid.points.size();
  j["exposed_comm_definition"] = kExposedCommDefinition;
  nlohmann::json rows = nlohmann::json::array();
  for (const std::string& r : point_rows)
    for (auto& row : nlohmann::json::parse(r)) rows.push_back(std::move(row));
  j["rows"] = std::move(rows);
  return j.dump(2) + "\n";
}

std::map<std::string, std::string> read_sweep_output(const std::string& path, const SweepGrid& grid,
                                                     SweepFormat format) {
  std::map<std::string, std::string> done;
  bool exists = false;
  const std::string text = read_file(path, exists);
  if (!exists || text.empty()) return done;
  const std::size_t n = grid.columns.size();
  if (format == SweepFormat::csv) {
    std::size_t pos = 0;
    std::vector<std::string> fields;
    std::string raw;
    next_csv_record(text, pos, fields, raw);
    if (fields != sweep_csv_columns(grid))
      throw InputError(path, 1, "", "--resume: this file's columns are not this sweep's (swept keys and report "
                                    "columns must match); write to another file or drop --resume");
    int line = 1;
    while (next_csv_record(text, pos, fields, raw)) {
      ++line;
      if (fields.size() != sweep_csv_columns(grid).size())
        throw InputError(path, line, "", fmt::format("--resume: a row with {} fields (expected {})", fields.size(),
                                                     sweep_csv_columns(grid).size()));
      const std::string key = sweep_point_key(std::vector<std::string>(fields.begin(), fields.begin() + static_cast<std::ptrdiff_t>(n)));
      done[key] += raw;
    }
    return done;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw InputError(path, line_of_byte(text, e.byte), "", std::string("--resume: not a sweep's JSON output: ") + e.what());
  } catch (const nlohmann::json::exception& e) {  // a number beyond a double (1e999)
    throw InputError(path, 0, "", std::string("--resume: not a sweep's JSON output: ") + e.what());
  }
  if (!j.is_object() || !j.contains("swept") || j["swept"] != nlohmann::json(grid.columns) || !j.contains("rows") ||
      !j["rows"].is_array())
    throw InputError(path, 0, "swept", "--resume: this file is not the output of this sweep (its swept keys differ)");
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : j["rows"]) {
    nlohmann::json values = nlohmann::json::array();
    for (const std::string& c : grid.columns) values.push_back(row.at("point").at(c));
    auto& list = rows[values.dump()];
    if (list.is_null()) list = nlohmann::json::array();
    list.push_back(row);
  }
  for (auto& [k, v] : rows) done[k] = v.dump();
  return done;
}

std::size_t sweep_row_count(SweepFormat format, const std::string& rows) {
  if (format == SweepFormat::json) {
    try {
      const nlohmann::json j = nlohmann::json::parse(rows);
      return j.is_array() ? j.size() : 0;
    } catch (const nlohmann::json::exception&) {
      return 0;
    }
  }
  std::size_t pos = 0, n = 0;
  std::vector<std::string> fields;
  std::string raw;
  while (next_csv_record(rows, pos, fields, raw)) ++n;
  return n;
}

std::size_t sweep_expected_rows(const PreparedPoint& point) {
  std::size_t n = 0;
  for (const SchemeSpec& s : point.schemes) {
    const SchemeInfo* info = find_scheme(s.name);
    if (info && (!info->applies || info->applies(point.workload))) ++n;
  }
  return n;
}

std::string sweep_checkpoint_line(SweepFormat format, const std::string& key, const std::string& rows) {
  return nlohmann::json{{"format", format_name(format)}, {"key", key}, {"rows", rows}}.dump() + "\n";
}

void read_sweep_checkpoint(const std::string& path, SweepFormat format, std::map<std::string, std::string>& done) {
  const auto text = read_input_file_if_exists(path, "sweep checkpoint", kMaxSweepOutputBytes);
  if (!text) return;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      if (j.at("format") != format_name(format)) continue;
      done[j.at("key").get<std::string>()] = j.at("rows").get<std::string>();
    } catch (const nlohmann::json::exception&) {
      // A line cut short when the process stopped: that point runs again.
    }
  }
}

}  // namespace overlap::sim
