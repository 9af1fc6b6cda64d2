#include "cost_model/nccl_tests_import.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "cost_model/input_error.hpp"
#include "cost_model/input_file.hpp"
#include "cost_model/json_lines.hpp"
#include "cost_model/text.hpp"

namespace overlap {
namespace {

std::vector<std::string> split_ws(const std::string& line) {
  std::istringstream ss(line);
  std::vector<std::string> out;
  std::string tok;
  while (ss >> tok) out.push_back(tok);
  return out;
}

bool parse_double(const std::string& s, double& out) {
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end != s.c_str() && *end == '\0';
}

bool parse_int64(const std::string& s, std::int64_t& out) {
  char* end = nullptr;
  out = std::strtoll(s.c_str(), &end, 10);
  return end != s.c_str() && *end == '\0';
}

// The value of NCCL_PROTO / NCCL_ALGO in a line: "NCCL_X set by environment to V" (NCCL_DEBUG=INFO)
// or "NCCL_X=V". Empty when the line has none.
std::string env_setting(const std::string& line, const std::string& var) {
  const std::string by_env = var + " set by environment to ";
  auto at = line.find(by_env);
  std::size_t from = std::string::npos;
  if (at != std::string::npos) from = at + by_env.size();
  else if ((at = line.find(var + "=")) != std::string::npos) from = at + var.size() + 1;
  if (from == std::string::npos) return "";
  std::string v;
  for (std::size_t i = from; i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])); ++i) {
    if (line[i] != '"' && line[i] != '\'') v += line[i];
  }
  return v;
}

// Records a forced protocol / algorithm when the setting names exactly one.
void note_settings(const std::string& line, NcclTestsResult& r) {
  if (const std::string v = env_setting(line, "NCCL_PROTO"); !v.empty()) r.protocol = parse_nccl_protocol(v);
  if (const std::string v = env_setting(line, "NCCL_ALGO"); !v.empty()) r.algorithm = parse_nccl_algorithm(v);
}

}  // namespace

std::optional<CollectivePrimitive> primitive_from_nccl_tests_program(const std::string& program) {
  std::string p = program;
  const auto slash = p.find_last_of('/');
  if (slash != std::string::npos) p = p.substr(slash + 1);
  if (p.size() > 5 && p.compare(p.size() - 5, 5, "_perf") == 0) p = p.substr(0, p.size() - 5);
  if (p == "all_reduce") return CollectivePrimitive::all_reduce;
  if (p == "reduce_scatter") return CollectivePrimitive::reduce_scatter;
  if (p == "all_gather") return CollectivePrimitive::all_gather;
  if (p == "alltoall") return CollectivePrimitive::all_to_all;
  if (p == "broadcast") return CollectivePrimitive::broadcast;
  if (p == "reduce") return CollectivePrimitive::reduce;
  return std::nullopt;
}

namespace {

// nccl-tests prints one row per size, sizes increasing; a curve needs distinct sizes and finite,
// non-negative times (found by tools/fuzz.sh: a repeated size was an internal error further on).
void check_row(const NcclTestsResult& result, const NcclTestsRow& row, const std::string& source_name, int line,
               const std::string& key) {
  if (row.size_bytes < 0) throw InputError(source_name, line, key, "a size cannot be negative");
  if (!result.rows.empty() && row.size_bytes <= result.rows.back().size_bytes) {
    throw InputError(source_name, line, key,
                     "sizes must increase row by row (" + std::to_string(row.size_bytes) + " after " +
                         std::to_string(result.rows.back().size_bytes) + ")");
  }
  for (const auto* m : {&row.out_of_place, &row.in_place}) {
    if (*m && (!std::isfinite((*m)->time_us) || (*m)->time_us < 0 || (*m)->time_us > 1e12))
      throw InputError(source_name, line, key, "a time must be a finite number of us in [0, 1e12]");
  }
}

}  // namespace

NcclTestsResult parse_nccl_tests_text(std::istream& in, const std::string& source_name) {
  NcclTestsResult result;
  result.source = source_name;
  std::string line;
  int line_no = 0;
  // Column layout from the "#  size  count  type  redop  root  time ..." header; older nccl-tests
  // versions print no root column, so the prefix length is taken from the header when present.
  std::size_t prefix_cols = 5;
  bool has_root = true;
  while (std::getline(in, line)) {
    ++line_no;
    const std::string t = trim(line);
    if (t.empty()) continue;
    note_settings(t, result);
    if (t[0] == '#') {
      const std::string body = trim(t.substr(1));
      const std::string starting = "Collective test starting:";
      if (body.rfind(starting, 0) == 0) {
        result.primitive = primitive_from_nccl_tests_program(trim(body.substr(starting.size())));
      } else if (body.rfind("Rank", 0) == 0) {
        ++result.n_ranks;
      } else {
        const auto cols = split_ws(body);
        if (cols.size() >= 4 && cols[0] == "size" && cols[1] == "count") {
          prefix_cols = 0;
          while (prefix_cols < cols.size() && cols[prefix_cols] != "time" && cols[prefix_cols] != "cputime") {
            ++prefix_cols;
          }
          has_root = prefix_cols >= 5;
        }
      }
      continue;
    }
    const auto cols = split_ws(t);
    std::int64_t size = 0;
    if (cols.empty() || !parse_int64(cols[0], size)) continue;  // stray output (NCCL INFO lines...)
    if (cols.size() < prefix_cols + 4) {
      throw InputError(source_name, line_no, "", "nccl-tests row has " + std::to_string(cols.size()) +
                                                     " columns, expected at least " +
                                                     std::to_string(prefix_cols + 4));
    }
    NcclTestsRow row;
    row.size_bytes = size;
    if (!parse_int64(cols[1], row.count)) throw InputError(source_name, line_no, "count", "not an integer: " + cols[1]);
    row.type = cols[2];
    row.redop = prefix_cols >= 4 ? cols[3] : "";
    if (has_root) {
      std::int64_t root = -1;
      if (parse_int64(cols[4], root)) row.root = static_cast<int>(root);
    }
    auto read_group = [&](std::size_t at, const char* what) -> std::optional<NcclTestsMeasurement> {
      if (cols.size() < at + 3) return std::nullopt;
      NcclTestsMeasurement m;
      if (!parse_double(cols[at], m.time_us) || !parse_double(cols[at + 1], m.algbw_gbps) ||
          !parse_double(cols[at + 2], m.busbw_gbps)) {
        throw InputError(source_name, line_no, what, "expected time algbw busbw numbers");
      }
      return m;
    };
    row.out_of_place = read_group(prefix_cols, "out-of-place");
    row.in_place = read_group(prefix_cols + 4, "in-place");
    check_row(result, row, source_name, line_no, "size");
    result.rows.push_back(std::move(row));
  }
  if (result.rows.empty()) throw InputError(source_name, 0, "", "no nccl-tests result rows found");
  return result;
}

NcclTestsResult parse_nccl_tests_json(const nlohmann::json& report, const std::string& source_name,
                                      const std::string* text) {
  auto line_of = [&](const std::string& key) { return text ? json_line_of(*text, key) : 0; };
  NcclTestsResult result;
  result.source = source_name;
  if (!report.is_object() || !report.contains("results") || !report["results"].is_array()) {
    throw InputError(source_name, line_of("results"), "results", "nccl-tests JSON report has no results list");
  }
  if (report.contains("devices") && report["devices"].is_array()) {
    result.n_ranks = static_cast<int>(report["devices"].size());
  } else if (report.contains("config") && report["config"].contains("devices")) {
    result.n_ranks = static_cast<int>(report["config"]["devices"].size());
  }
  for (const nlohmann::json* where : {&report, report.contains("config") ? &report["config"] : nullptr,
                                      report.contains("config") && report["config"].contains("env")
                                          ? &report["config"]["env"]
                                          : nullptr}) {
    if (!where || !where->is_object()) continue;
    if (where->contains("NCCL_PROTO") && (*where)["NCCL_PROTO"].is_string())
      result.protocol = parse_nccl_protocol((*where)["NCCL_PROTO"].get<std::string>());
    if (where->contains("NCCL_ALGO") && (*where)["NCCL_ALGO"].is_string())
      result.algorithm = parse_nccl_algorithm((*where)["NCCL_ALGO"].get<std::string>());
  }
  std::size_t i = 0;
  for (const auto& r : report["results"]) {
    const std::string key = "results[" + std::to_string(i++) + "]";
    try {
      NcclTestsRow row;
      row.size_bytes = r.at("size").get<Bytes>();
      row.count = r.value("count", std::int64_t{0});
      row.type = r.value("type", std::string());
      row.redop = r.value("redop", std::string());
      if (r.contains("root")) {
        const auto& root = r["root"];
        row.root = root.is_number() ? root.get<int>() : std::atoi(root.get<std::string>().c_str());
      }
      auto read = [&](const char* name) -> std::optional<NcclTestsMeasurement> {
        if (!r.contains(name) || r[name].is_null()) return std::nullopt;
        const auto& m = r[name];
        NcclTestsMeasurement out;
        out.time_us = m.contains("time") ? m["time"].get<double>() : m.at("cpu_time").get<double>();
        out.algbw_gbps = m.at("alg_bw").get<double>();
        out.busbw_gbps = m.at("bus_bw").get<double>();
        return out;
      };
      row.out_of_place = read("out_of_place");
      row.in_place = read("in_place");
      check_row(result, row, source_name, line_of(key + ".size"), key + ".size");
      result.rows.push_back(std::move(row));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(source_name, line_of(key), key, std::string("malformed result: ") + e.what());
    }
  }
  if (result.rows.empty()) throw InputError(source_name, line_of("results"), "results", "no nccl-tests result rows found");
  return result;
}

NcclTestsResult load_nccl_tests_file(const std::string& path) {
  const std::string text = read_input_file(path, "nccl-tests output");
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    try {
      return parse_nccl_tests_json(nlohmann::json::parse(text), path, &text);
    } catch (const nlohmann::json::parse_error& e) {
      throw InputError(path, line_of_byte(text, e.byte), "", std::string("JSON syntax error: ") + e.what());
    } catch (const nlohmann::json::out_of_range& e) {  // a number beyond a double (1e999)
      throw InputError(path, 0, "", std::string("JSON syntax error: ") + e.what());
    }
  }
  std::istringstream lines(text);
  return parse_nccl_tests_text(lines, path);
}

BandwidthCurve NcclTestsResult::curve(bool in_place) const {
  std::vector<CurvePoint> pts;
  for (const auto& r : rows) {
    const auto& m = in_place ? r.in_place : r.out_of_place;
    if (r.size_bytes <= 0 || !m || !(m->time_us > 0)) continue;
    pts.push_back(CurvePoint{r.size_bytes, ps_from_us(m->time_us)});
  }
  // (Found by tools/fuzz.sh: rows of size 0 or without a time left no point, an internal error.)
  if (pts.empty()) {
    throw InputError(source, 0, "", std::string("no row with a size > 0 and a time > 0 in the ") +
                                        (in_place ? "in-place" : "out-of-place") + " columns: no curve to build");
  }
  return BandwidthCurve(std::move(pts));
}

double NcclTestsResult::observed_busbw_factor(bool in_place) const {
  // The largest row has the most significant digits in the printed algbw/busbw.
  const NcclTestsMeasurement* best = nullptr;
  Bytes best_size = 0;
  for (const auto& r : rows) {
    const auto& m = in_place ? r.in_place : r.out_of_place;
    if (m && m->algbw_gbps > 0 && r.size_bytes > best_size) {
      best = &*m;
      best_size = r.size_bytes;
    }
  }
  return best ? best->busbw_gbps / best->algbw_gbps : 0.0;
}

}  // namespace overlap
