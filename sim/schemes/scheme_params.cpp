// Scheme parameter tables (sim/schemes/scheme.hpp SchemeParam): the row constructors, the one check
// of a knob's value, and the typed reads builders make through BuildContext.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cost_model/input_error.hpp"
#include "cost_model/input_ranges.hpp"
#include "sim/schemes/param_rows.hpp"
#include "sim/schemes/scheme.hpp"

namespace overlap::sim {

namespace {

// A value as a complaint shows it: text unquoted, a map or list by its kind.
std::string got_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return "a map";
  if (v.is_array()) return "a list";
  if (v.is_null()) return "nothing";
  return v.dump();
}

std::string value_text(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "a, b or c"
std::string or_list(const std::vector<nlohmann::json>& values) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out += (i == 0 ? "" : i + 1 == values.size() ? " or " : ", ") + value_text(values[i]);
  return out;
}

std::string bound_text(double v, bool integer) {
  return integer ? fmt::format("{}", static_cast<std::int64_t>(v)) : fmt::format("{}", v);
}

double max_on(const SchemeParam& p, const HardwareProfile& hw) { return p.hardware_max ? p.hardware_max(hw) : p.max; }

std::optional<std::string> check_integer(const SchemeParam& p, const nlohmann::json& v, const HardwareProfile& hw) {
  const double max = max_on(p, hw);
  const std::string range = fmt::format("[{}, {}]", bound_text(p.min, true), bound_text(max, true));
  const std::string expected =
      p.sentinel ? fmt::format("{} ({}) or an integer in {}", *p.sentinel, p.sentinel_meaning, range)
                 : "an integer in " + range;
  if (!v.is_number_integer()) return fmt::format("must be {} (got {})", expected, got_text(v));
  const std::int64_t x = v.get<std::int64_t>();
  if (p.sentinel && x == *p.sentinel) return std::nullopt;
  if (!p.allowed.empty()) {
    for (const auto& a : p.allowed)
      if (a == v) return std::nullopt;
    return fmt::format("must be {} (got {})", or_list(p.allowed), x);
  }
  if (static_cast<double>(x) < p.min || static_cast<double>(x) > max) return fmt::format("must be {} (got {})", expected, x);
  return std::nullopt;
}

std::optional<std::string> check_number(const SchemeParam& p, const nlohmann::json& v, const HardwareProfile& hw) {
  const double max = max_on(p, hw);
  const std::string expected = fmt::format("a number in [{}, {}]", bound_text(p.min, false), bound_text(max, false));
  if (!v.is_number() || !std::isfinite(v.get<double>())) return fmt::format("must be {} (got {})", expected, got_text(v));
  const double x = v.get<double>();
  if (!(x >= p.min && x <= max)) return fmt::format("must be {} (got {})", expected, x);
  return std::nullopt;
}

std::optional<std::string> check_text(const SchemeParam& p, const nlohmann::json& v) {
  if (!v.is_string()) return fmt::format("must be a string (got {})", got_text(v));
  if (p.allowed.empty()) return std::nullopt;
  for (const auto& a : p.allowed)
    if (a == v) return std::nullopt;
  return fmt::format("must be {} (got '{}')", or_list(p.allowed), v.get<std::string>());
}

}  // namespace

SchemeParam SchemeParam::tune(std::vector<nlohmann::json> values, std::string when) const {
  SchemeParam p = *this;
  p.tune_values = std::move(values);
  p.tune_when = std::move(when);
  return p;
}

SchemeParam SchemeParam::production(std::string text) const {
  SchemeParam p = *this;
  p.equivalent = std::move(text);
  return p;
}

SchemeParam SchemeParam::training() const {
  SchemeParam p = *this;
  p.training_only = true;
  return p;
}

namespace {

// A moe layer's GEMMs are the router and the experts' grouped GEMMs: no tensor-parallel linear.
bool has_column_parallel_linears(const Workload& workload) { return workload.kind != WorkloadKind::moe; }

}  // namespace

bool param_applies(const SchemeParam& p, const Workload& workload) {
  return !p.training_only || (has_backward(workload) && has_column_parallel_linears(workload));
}

std::optional<ParamRefusal> check_params_apply(const std::vector<SchemeParam>& table, const nlohmann::json& params,
                                               const Workload& workload) {
  if (!params.is_object()) return std::nullopt;
  for (const SchemeParam& p : table) {
    if (!params.contains(p.name) || param_applies(p, workload)) continue;
    // "Nothing silently ignored": a knob of the backward given to a forward pass has no effect.
    if (!has_column_parallel_linears(workload))
      return ParamRefusal{p.name, fmt::format("shapes a column-parallel linear's backward; a {} layer has none (its "
                                              "GEMMs are the router and the experts' grouped GEMMs): remove it",
                                              workload_kind_name(workload.kind))};
    return ParamRefusal{p.name, fmt::format("shapes the training backward only; this workload has none (workload.pass "
                                            "{}): remove it, or set workload.pass: backward or step",
                                            pass_name(workload.training.pass))};
  }
  return std::nullopt;
}

namespace {

SchemeParam row(std::string name, ParamType type, nlohmann::json default_value, std::string help, double min = 0,
                double max = 0) {
  SchemeParam p;
  p.name = std::move(name);
  p.type = type;
  p.default_value = std::move(default_value);
  p.help = std::move(help);
  p.min = min;
  p.max = max;
  return p;
}

}  // namespace

SchemeParam int_param(std::string name, std::int64_t default_value, std::int64_t min, std::int64_t max,
                      std::string help) {
  return row(std::move(name), ParamType::integer, default_value, std::move(help), static_cast<double>(min),
             static_cast<double>(max));
}

SchemeParam int_param(const knobs::IntKnob& knob, std::string help) {
  return int_param(knob.name, knob.default_value, knob.min, knob.max, std::move(help));
}

SchemeParam comm_sms_param(std::string name, std::int64_t default_value, std::int64_t min, std::string help) {
  const auto largest = static_cast<std::int64_t>(overlap::ranges::sm_count.max);
  SchemeParam p = int_param(std::move(name), default_value, min, largest - 1, std::move(help));
  p.hardware_max = [](const HardwareProfile& hw) { return hw.gpu.sm_count - 1.0; };
  p.max_formula = "sm_count - 1";
  return p;
}

SchemeParam number_param(std::string name, double default_value, double min, double max, std::string help) {
  return row(std::move(name), ParamType::number, default_value, std::move(help), min, max);
}

SchemeParam bool_param(std::string name, bool default_value, std::string help) {
  return row(std::move(name), ParamType::boolean, default_value, std::move(help));
}

SchemeParam choice_param(std::string name, std::vector<std::string> allowed, std::string help) {
  SchemeParam p = row(std::move(name), ParamType::text, allowed.front(), std::move(help));
  for (auto& a : allowed) p.allowed.emplace_back(std::move(a));
  return p;
}

std::string param_type_name(ParamType type) {
  switch (type) {
    case ParamType::integer: return "int";
    case ParamType::number: return "number";
    case ParamType::boolean: return "bool";
    case ParamType::text: return "string";
    case ParamType::wave_groups: return "list";
  }
  return "?";
}

std::string default_text(const SchemeParam& p) {
  if (p.hardware_default) return p.default_formula;
  return p.default_value.is_null() ? std::string() : value_text(p.default_value);
}

std::string valid_values_text(const SchemeParam& p) {
  switch (p.type) {
    case ParamType::boolean: return "true, false";
    case ParamType::wave_groups: return "see meaning";
    case ParamType::text: {
      std::string out;
      for (const auto& a : p.allowed) out += (out.empty() ? "" : ", ") + value_text(a);
      return out.empty() ? "any text" : out;
    }
    case ParamType::integer:
    case ParamType::number: {
      if (!p.allowed.empty()) {
        std::string out;
        for (const auto& a : p.allowed) out += (out.empty() ? "" : ", ") + value_text(a);
        return out;
      }
      const bool integer = p.type == ParamType::integer;
      std::string out = fmt::format("{}..{}", bound_text(p.min, integer),
                                    p.hardware_max ? p.max_formula : bound_text(p.max, integer));
      if (p.sentinel) out = fmt::format("{} or {}", *p.sentinel, out);
      return out;
    }
  }
  return {};
}

nlohmann::json default_for(const SchemeParam& p, const HardwareProfile* hardware) {
  if (!p.hardware_default) return p.default_value;
  return hardware ? p.hardware_default(*hardware) : nlohmann::json(p.default_formula);
}

std::optional<std::string> check_param_value(const SchemeParam& p, const nlohmann::json& value,
                                             const HardwareProfile& hardware) {
  switch (p.type) {
    case ParamType::integer: return check_integer(p, value, hardware);
    case ParamType::number: return check_number(p, value, hardware);
    case ParamType::boolean:
      if (value.is_boolean()) return std::nullopt;
      return fmt::format("must be true or false (got {})", got_text(value));
    case ParamType::text: return check_text(p, value);
    case ParamType::wave_groups:
      if (!p.check) throw std::logic_error("scheme parameter '" + p.name + "' of type list has no check");
      return p.check(value);
  }
  return std::nullopt;
}

nlohmann::json BuildContext::param(const SchemeParam& p) const {
  if (params.is_object()) {
    const auto it = params.find(p.name);
    if (it != params.end() && !it->is_null()) {
      if (const auto why = check_param_value(p, *it, hardware)) throw InputError("", 0, "params." + p.name, *why);
      return *it;
    }
  }
  return default_for(p, &hardware);
}

int BuildContext::integer(const SchemeParam& p) const {
  if (p.type != ParamType::integer) throw std::logic_error("scheme parameter '" + p.name + "' is not an int");
  // Every integer row's range fits an int (tests/schemes/test_param_tables.cpp).
  return static_cast<int>(param(p).get<std::int64_t>());
}

double BuildContext::number(const SchemeParam& p) const {
  if (p.type != ParamType::number) throw std::logic_error("scheme parameter '" + p.name + "' is not a number");
  return param(p).get<double>();
}

bool BuildContext::boolean(const SchemeParam& p) const {
  if (p.type != ParamType::boolean) throw std::logic_error("scheme parameter '" + p.name + "' is not a bool");
  return param(p).get<bool>();
}

std::string BuildContext::text(const SchemeParam& p) const {
  if (p.type != ParamType::text) throw std::logic_error("scheme parameter '" + p.name + "' is not a string");
  return param(p).get<std::string>();
}

}  // namespace overlap::sim
