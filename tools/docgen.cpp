// overlap-docgen: writes docs/reference/inputs.md, the reference of every hardware-profile key, every
// input range and every scheme parameter, from the code that checks them, so the page cannot drift
// from what the loaders accept:
//   - the keys and their defaults are the resolved profile (profile_to_json) of the smallest profile
//     the loader accepts; a key is "required" when that profile without it is refused; its type,
//     unit, meaning and source are its row of the profile schema (cost_model/profile_schema.hpp);
//   - a key's valid values are what the loader itself says when given an impossible value
//     (the message of its InputError), so the range printed is the range enforced;
//   - the scenario's top-level keys are the list the scenario loader prints for an unknown key; the
//     workload kinds, each kind's keys and a workload of each kind are the table the loader allows
//     them from (sim/workload_keys.hpp); every workload key's type, range, default and kinds, and the
//     rules between keys, are the rows of the key table (sim/workload_key_table.hpp), which
//     `--keys-json FILE` also writes as JSON for the bad-input generator (tools/make_bad_inputs.py);
//   - the range table is cost_model/input_ranges.hpp's ranges::kAll;
//   - scheme parameters are sim::scheme_registry(), as `overlap-sim schemes` prints them.
// `--check FILE` regenerates the page and exits 1 when FILE differs (the ctest docgen_reference);
// `--check-keys-json FILE` does the same for the JSON of the key table (ctest docgen_workload_keys).
#include <yaml-cpp/yaml.h>

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/input_error.hpp"
#include "cost_model/input_ranges.hpp"
#include "cost_model/overrides.hpp"
#include "cost_model/profile_json.hpp"
#include "cost_model/profile_loader.hpp"
#include "cost_model/profile_schema.hpp"
#include "cost_model/yaml_reader.hpp"
#include "cost_model/atomic_file.hpp"
#include "sim/scenario.hpp"
#include "sim/workload_key_table.hpp"
#include "sim/workload_keys.hpp"
#include "sim/schemes/scheme.hpp"

namespace {

using nlohmann::json;

constexpr const char* kRegenerate = "build/tools/overlap-docgen -o docs/reference/inputs.md";
constexpr const char* kRegenerateKeys = "build/tools/overlap-docgen --keys-json tests/data/bad_inputs/workload_keys.json";

// The smallest profile the loader accepts (scenarios/hardware/README.md "The smallest valid
// profile"); its resolved form lists every key with its default.
constexpr const char* kMinimalProfile =
    "gpu: {sm_count: 132, peak_tflops: {bf16: 989}}\n"
    "fabric: {num_gpus: 8, links: {nvlink: {bandwidth_gbps: 450, latency_us: 1}}}\n";

// A markdown table cell: one line, pipes escaped.
std::string cell(std::string s) {
  for (char& c : s)
    if (c == '\n') c = ' ';
  std::string r;
  for (char c : s) r += c == '|' ? std::string("\\|") : std::string(1, c);
  return r;
}

// nullopt when the profile loads, else the loader's message (without the file prefix).
std::optional<std::string> load_error(const YAML::Node& root) {
  try {
    overlap::YamlReader reader(root, "", "profile.yaml");
    (void)overlap::profile_from_yaml(reader, ".");
    return std::nullopt;
  } catch (const overlap::InputError& e) {
    return e.message();
  }
}

std::optional<std::string> load_error_with(const std::string& assignment) {
  YAML::Node root = YAML::Load(kMinimalProfile);
  overlap::apply_overrides(root, {assignment});
  return load_error(root);
}

// The scenario loader's message for `text`, or "" when it loads.
std::string scenario_error(const std::string& text) {
  try {
    (void)overlap::sim::load_scenario_text(text, "scenario.yaml");
    return "";
  } catch (const overlap::InputError& e) {
    return e.message();
  }
}

// The list inside "(allowed: a, b)" / "(known: a, b)" of a loader message.
std::vector<std::string> listed_in(const std::string& message, const std::string& marker) {
  std::vector<std::string> out;
  const auto at = message.find("(" + marker + ": ");
  if (at == std::string::npos) return out;
  const auto begin = at + marker.size() + 3;
  const auto end = message.find(')', begin);
  std::stringstream items(message.substr(begin, end - begin));
  for (std::string item; std::getline(items, item, ',');) {
    item.erase(0, item.find_first_not_of(' '));
    out.push_back(item);
  }
  return out;
}

std::string scenario_text(const std::string& workload, const std::string& extra = "") {
  return "hardware: h100-sxm-8x-nvswitch\nworkload: " + workload + "\n" + extra;
}

// A loader message without the echo of the probe value ("(got 1e300)", "'no_such_value'"): what the
// key accepts, not what it was given.
std::string clean_probe_message(std::string m, const std::string& probe) {
  const auto got = m.find(" (got");
  if (got != std::string::npos) {
    const auto rest = m.find(')', got);
    m = m.substr(0, got) + (rest == std::string::npos ? "" : m.substr(rest + 1));
  }
  const std::string echo = " '" + probe + "'";
  if (const auto at = m.find(echo); at != std::string::npos) m.erase(at, echo.size());
  return m;
}

namespace wk = overlap::sim::workload_key;

// The kinds `pred` holds for: "every kind", or their names.
template <typename Pred>
std::vector<std::string> kinds_where(Pred pred) {
  std::vector<std::string> out;
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames)
    if (pred(kind)) out.emplace_back(name);
  return out;
}
std::string kinds_text(const std::vector<std::string>& kinds) {
  if (kinds.size() == overlap::sim::kWorkloadKindNames.size()) return "every kind";
  std::string out;
  for (const std::string& k : kinds) out += (out.empty() ? "" : ", ") + k;
  return out;
}

// A key's value when it is absent, as the reference states it.
std::string default_text(const wk::Key& k) {
  if (k.required()) return "required";
  std::string out = k.default_value.empty() ? "" : "`" + std::string(k.default_value) + "`";
  for (const wk::KindDefault& d : k.kind_defaults)
    out += fmt::format(" ({}: `{}`)", overlap::sim::workload_kind_name(d.kind), d.value);
  if (k.from_model) out += std::string(out.empty() ? "" : "; ") + "from `model`";
  if (!k.absent.empty()) out += std::string(out.empty() ? "" : "; ") + std::string(k.absent);
  return out;
}

// A rule's key as a path below workload (a workload.parallel key's rule names its leaf).
std::string rule_key_path(std::string_view key) {
  if (wk::find(key) == nullptr && wk::find("parallel." + std::string(key)) != nullptr) return "parallel." + std::string(key);
  return std::string(key);
}

// The table of every workload key and the rules between them (sim/workload_key_table.hpp).
void workload_key_table_section(std::ostringstream& o) {
  o << "\n### Every workload key\n\n"
       "The key table (`sim/workload_key_table.hpp`) the loader reads each key's range, default and choices from; "
       "`parallel.*` are the keys of `workload.parallel`. \"from `model`\": a size a named model supplies when "
       "the key is left out.\n\n"
       "| key | type | range or choices | when absent | kinds |\n| --- | --- | --- | --- | --- |\n";
  for (const wk::Key* k : wk::kAll) {
    std::string values = k->range ? overlap::range_text(*k->range) : std::string(k->choices);
    if (k == &wk::kind) values = overlap::sim::workload_kind_list();
    o << fmt::format("| `workload.{}` | {} | {} | {} | {} |\n", k->name, wk::key_type_name(k->type), cell(values),
                     cell(default_text(*k)),
                     kinds_text(kinds_where([&](overlap::sim::WorkloadKind kind) { return wk::takes(kind, *k); })) +
                         (k->only_when.empty() ? "" : "; has an effect in " + std::string(k->only_when)));
  }
  o << "\nThe rules between keys: the value must be a multiple of the divisor; the loader refuses a workload "
       "that breaks one at the key named.\n\n"
       "| key | value | divisor | why | kinds |\n| --- | --- | --- | --- | --- |\n";
  for (const wk::KindRule& r : wk::kRules)
    o << fmt::format("| `workload.{}` | {} | {} | {} | {} |\n", rule_key_path(r.rule->key),
                     r.rule->value_name.empty() ? "`" + std::string(r.rule->key) + "`" : std::string(r.rule->value_name),
                     r.rule->divisor, cell(std::string(r.rule->why)),
                     kinds_text(kinds_where([&](overlap::sim::WorkloadKind kind) { return r.kinds[static_cast<std::size_t>(kind)]; })));
  o << "\nAnd a key at most another:\n\n| key | at most | why | kinds |\n| --- | --- | --- | --- |\n";
  for (const auto& [r, kinds] : wk::kAtMostRules)
    o << fmt::format("| `workload.{}` | `{}` | {} | {} |\n", r->key, r->bound, cell(std::string(r->why)),
                     kinds_text(kinds_where([&](overlap::sim::WorkloadKind kind) { return kinds[static_cast<std::size_t>(kind)]; })));
}

// The key table as JSON (tools/make_bad_inputs.py reads it to write a value out of each key's range).
json workload_keys_json() {
  json keys = json::array();
  for (const wk::Key* k : wk::kAll) {
    json row{{"name", k->name}, {"type", wk::key_type_name(k->type)}, {"required", k->required()},
             {"default", k->default_value}, {"from_model", k->from_model},
             {"kinds", kinds_where([&](overlap::sim::WorkloadKind kind) { return wk::takes(kind, *k); })}};
    if (k->range)
      row["range"] = json{{"min", k->range->min}, {"max", k->range->max}, {"integer", k->range->integer},
                          {"unit", k->range->unit}};
    if (!k->choices.empty()) row["choices"] = k->choices;
    if (!k->only_when.empty()) row["only_when"] = k->only_when;
    keys.push_back(std::move(row));
  }
  json rules = json::array();
  for (const wk::KindRule& r : wk::kRules)
    rules.push_back(json{{"key", rule_key_path(r.rule->key)}, {"value", r.rule->value_name}, {"divisor", r.rule->divisor},
                         {"why", r.rule->why},
                         {"kinds", kinds_where([&](overlap::sim::WorkloadKind kind) { return r.kinds[static_cast<std::size_t>(kind)]; })}});
  json at_most = json::array();
  for (const auto& [r, kinds] : wk::kAtMostRules)
    at_most.push_back(json{{"key", r->key}, {"at_most", r->bound}, {"why", r->why},
                           {"kinds", kinds_where([&](overlap::sim::WorkloadKind kind) { return kinds[static_cast<std::size_t>(kind)]; })}});
  json own = json::object();
  json examples = json::object();
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames) {
    own[name] = overlap::sim::workload_keys(kind);
    examples[name] = overlap::sim::workload_kind_keys(kind).example;
  }
  return json{{"generator", "tools/docgen.cpp (overlap-docgen --keys-json)"}, {"keys", keys}, {"rules", rules}, {"at_most_rules", at_most},
              {"allowed_by_kind", own}, {"examples", examples}};
}

void scenario_section(std::ostringstream& o) {
  const std::string top = scenario_error("no_such_key: 1\n");
  const std::string fidelity = scenario_error(
      scenario_text(overlap::sim::workload_kind_keys(overlap::sim::WorkloadKind::mlp_tpsp).example, "fidelity: no_such_value\n"));
  o << "\n## Scenario keys\n\n"
       "What the scenario loader (`sim/scenario.cpp`) accepts, read from its own messages. Top-level keys: ";
  std::string list;
  for (const auto& k : listed_in(top, "allowed")) list += (list.empty() ? "`" : ", `") + k + "`";
  o << list << ". `fidelity`: " << cell(clean_probe_message(fidelity, "no_such_value")) << ".\n\n"
    << "Workload keys by `workload.kind`; the valid values are the loader's message for an impossible value "
       "(`1e300`) of that key, given with an otherwise valid workload. Sizes left out are filled from `model` "
       "where the kind takes one.\n";
  workload_key_table_section(o);
  // Each kind's example workload (it loads), then one key at a time given an impossible value.
  for (const auto& [kind, kind_name] : overlap::sim::kWorkloadKindNames) {
    const std::string base = overlap::sim::workload_kind_keys(kind).example;
    if (const std::string err = scenario_error(scenario_text(base)); !err.empty())
      throw std::runtime_error(std::string("docgen's ") + kind_name + " workload does not load: " + err);
    const std::vector<std::string> keys = overlap::sim::workload_keys(kind);
    o << "\n### `" << kind_name << "`\n\n| key | valid values (the loader's check) |\n| --- | --- |\n";
    for (const std::string& key : keys) {
      if (key == "kind") continue;
      // The base workload with this key set to the probe (replacing the base's own value).
      YAML::Node w = YAML::Load(base);
      if ((key == "batch" || key == "seq") && w["tokens"]) {  // tokens or batch x seq, not both
        w.remove("tokens");
        w[key == "batch" ? "seq" : "batch"] = key == "batch" ? 8192 : 1;
      }
      w[key] = "1e300";
      YAML::Emitter em;
      em << YAML::Flow << w;
      const std::string m = scenario_error(scenario_text(em.c_str()));
      o << fmt::format("| `workload.{}` | {} |\n", key, m.empty() ? "any (not checked)" : cell(clean_probe_message(m, "1e300")));
    }
  }
}

// The loader's own words for what a key accepts: the message for an impossible value, cut before
// the value it echoes back.
std::string accepted_values(const std::string& key, const json& value) {
  // A number far out of any range; for a string, a word no enumeration holds (free text loads: any
  // string); for a bool or a map, a value of the wrong kind.
  std::string probe;
  if (value.is_number()) probe = "1e300";
  else if (value.is_string()) probe = "no_such_value";
  else probe = "[not, a, scalar]";
  const auto msg = load_error_with(key + "=" + probe);
  if (!msg) return value.is_string() ? "any string" : "any (not checked)";
  return clean_probe_message(*msg, probe);
}

bool required_in_minimal(const std::vector<std::string>& path) {
  YAML::Node root = YAML::Load(kMinimalProfile);
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    YAML::Node next = chain.back()[path[i]];
    if (!next) return false;
    chain.push_back(next);
  }
  if (!chain.back()[path.back()]) return false;
  chain.back().remove(path.back());
  // Remove maps left empty, as a user writing the profile would not write them.
  for (std::size_t i = chain.size() - 1; i > 0 && chain[i].size() == 0; --i) chain[i - 1].remove(path[i - 1]);
  return load_error(root).has_value();
}

namespace ps = overlap::profile_schema;

// A resolved key's schema row (every key the JSON writer writes has one).
const ps::KeyInfo& schema_row(const std::string& key) {
  const ps::KeyInfo* info = ps::find_key(key);
  if (!info) throw std::runtime_error("profile key " + key + " has no row in cost_model/profile_schema.hpp");
  return *info;
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>().empty() ? "\"\"" : "`" + v.get<std::string>() + "`";
  return "`" + v.dump() + "`";
}

struct KeyRow {
  std::string key;
  json value;
  std::vector<std::string> path;
};

// Leaves of the resolved profile, in its order, without what is output only (the expanded fabric,
// the file it came from), what has no default (curves, gemm_profiles: see the range table) and
// NCCL's per-algorithm latency table (one row stands for it).
void collect(const json& j, std::vector<std::string>& path, std::vector<KeyRow>& out) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    path.push_back(it.key());
    std::string key;
    for (const auto& p : path) key += (key.empty() ? "" : ".") + p;
    const bool skip = key == "source_file" || key == ps::fabric_keys::nodes.path || key == ps::fabric_keys::edges.path ||
                      key == ps::curves.path || key == ps::gemm_profiles.path;
    if (key == ps::comm_keys::latency_us.path) {
      out.push_back({key + ".Ring.LL.base", it.value()["Ring"]["LL"]["base"], {"comm", "latency_us", "Ring", "LL", "base"}});
    } else if (!skip) {
      if (it.value().is_object() && !it.value().empty()) collect(it.value(), path, out);
      else out.push_back({key, it.value(), path});
    }
    path.pop_back();
  }
}

// Every key of a hardware profile: the resolved smallest profile's leaves by section, then the keys
// that exist only with their topology or hold measured data.
void profile_keys_section(std::ostringstream& o) {
  o << "## Hardware profile keys\n\n"
       "Every key of a hardware profile (a file under `scenarios/hardware/`, a path, or the `hardware:` map of a "
       "scenario; `--set hardware.KEY=VALUE` from the command line). The default is the value a profile gets "
       "when it does not write the key; \"required\" keys are refused when missing (the value shown is the "
       "smallest profile's). `nvlink` stands for any link class the topology uses and `bf16` for any dtype "
       "(`fp8`, `fp16`, `bf16`, `fp32`); `Ring.LL.base` stands for every NCCL algorithm, protocol and "
       "latency term (`base`, `nvlink`, `pci`, `net`). The smallest profile:\n\n```yaml\n"
    << kMinimalProfile << "```\n\n";

  YAML::Node root = YAML::Load(kMinimalProfile);
  if (auto err = load_error(root)) throw std::runtime_error("the smallest profile does not load: " + *err);
  overlap::YamlReader reader(root, "", "profile.yaml");
  const json resolved = overlap::profile_to_json(overlap::profile_from_yaml(reader, "."));
  std::vector<KeyRow> rows;
  std::vector<std::string> path;
  collect(resolved, path, rows);
  // The profile's own order of sections (scenarios/hardware/README.md); keys alphabetical within one.
  std::vector<std::pair<std::string, std::string>> sections = {{"", "Top level"}};
  for (const auto* section : {&ps::gpu, &ps::fabric, &ps::comm, &ps::launch, &ps::transports}) {
    std::string title = "`" + std::string(section->path) + "`: " + std::string(section->doc);
    if (section == &ps::comm) title += " (defaults: NCCL's constants for `" + std::string(ps::comm_keys::arch.path) + "`)";
    sections.emplace_back(section->path, title);
  }
  for (const auto& [top, title] : sections) {
    o << "\n### " << title << "\n\n| key | type | unit | default | valid values (the loader's check) | meaning | source |\n"
      << "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const KeyRow& r : rows) {
      if ((r.path.size() > 1 ? r.path.front() : std::string()) != top) continue;
      const bool required = required_in_minimal(r.path);
      const std::string def = required ? "required (" + value_text(r.value) + ")" : value_text(r.value);
      const ps::KeyInfo& info = schema_row(r.key);
      o << fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", r.key, info.type, ps::unit_of(info), cell(def),
                       cell(accepted_values(r.key, r.value)), cell(std::string(info.doc)),
                       info.source.empty() ? "-" : cell(std::string(info.source)));
    }
  }
  o << "\nSome keys exist only with their topology: `fabric.virtual_link` (`d2d` or `host`; `topology: "
       "virtual`), `fabric.rails` (bool), `fabric.nics_per_node` (0 = one NIC per GPU) and `fabric.nic_efficiency` "
       "(the share of a NIC's rate a collective reaches) with `topology: multi_node`, and `fabric.nodes` / "
       "`fabric.edges` (the graph itself; `topology: explicit`). Measured data go under `curves` (bandwidth curves per "
       "primitive or transport) and `gemm_profiles` (measured GEMMs), which have no defaults; guessed values under "
       "`placeholders` (at most " << ps::kMaxPlaceholders << ", each a numeric key this profile sets, with the range `run`'s "
       "sensitivity check re-runs the schemes at: [Profiles](../guide/profile.md#guessed-values-and-whether-they-decide-the-answer)):\n\n"
       "| key | type | unit | required | valid range | meaning | source |\n| --- | --- | --- | --- | --- | --- | --- |\n";
  for (const ps::KeyInfo& k : ps::all_keys()) {
    const std::string_view path = k.path;
    const bool listed = path.rfind("fabric.nodes[]", 0) == 0 || path.rfind("fabric.edges[]", 0) == 0 ||
                        path.rfind("curves.", 0) == 0 || path.rfind("gemm_profiles[]", 0) == 0 ||
                        path.rfind("placeholders.", 0) == 0;
    if (!listed) continue;
    o << fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", path, k.type, ps::unit_of(k), k.required ? "yes" : "no",
                     k.range ? cell(overlap::range_text(*k.range)) : "-", cell(std::string(k.doc)),
                     k.source.empty() ? "-" : cell(std::string(k.source)));
  }
}

// The one table of valid ranges (cost_model/input_ranges.hpp).
void ranges_section(std::ostringstream& o) {
  o << "\n## Ranges\n\n"
       "The valid range of every physical quantity a user can type, one table in the code "
       "(`cost_model/input_ranges.hpp`, `ranges::kAll`); the loaders check profiles, scenarios, `--set`, "
       "`--param` and `--sweep` values against it.\n\n"
       "| quantity | keys | valid range | why |\n| --- | --- | --- | --- |\n";
  for (const overlap::InputRange* r : overlap::ranges::kAll) {
    // The profile keys are the schema rows that name this range; r->keys the others.
    std::string keys;
    for (const ps::KeyInfo& k : ps::all_keys())
      if (k.range == r) keys += (keys.empty() ? "" : ", ") + std::string(k.path);
    if (!r->keys.empty()) keys += (keys.empty() ? "" : ", ") + std::string(r->keys);
    o << fmt::format("| {} | `{}` | {} | {} |\n", cell(std::string(r->quantity)), cell(keys),
                     cell(overlap::range_text(*r)), cell(std::string(r->why)));
  }
}

// Every scheme's parameters from the scheme registry.
void scheme_params_section(std::ostringstream& o) {
  o << "\n## Scheme parameters\n\n"
       "Every scheme with its source and its parameters (`schemes: [{name: S, params: {...}}]` in a scenario, "
       "or `--param KEY=VALUE`). \"tune tries\" are the values `overlap-sim tune SCENARIO` tries. Each scheme's "
       "table is one list in its source file (`sim/schemes/<scheme>.cpp`); the loader checks a given value against "
       "its valid values, which a workload can narrow further (e.g. `chunks` must divide the rows).\n";
  for (const overlap::sim::SchemeInfo& s : overlap::sim::scheme_registry()) {
    o << "\n### `" << s.name << "`\n\nSource: " << s.source << ".";
    if (!s.summary.empty()) o << " " << s.summary << (s.summary.back() == '.' ? "" : ".");
    o << "\n\n";
    if (s.params.empty()) {
      o << "No parameters.\n";
      continue;
    }
    o << "| parameter | type | default | valid values | meaning | tune tries | in production |\n"
         "| --- | --- | --- | --- | --- | --- | --- |\n";
    for (const overlap::sim::SchemeParam& p : s.params) {
      std::string tries;
      for (const auto& v : p.tune_values)
        tries += (tries.empty() ? "" : ", ") + (v.is_string() ? v.get<std::string>() : v.dump());
      if (!tries.empty() && !p.tune_when.empty()) tries += " (when " + p.tune_when + ")";
      const std::string shown = overlap::sim::default_text(p);
      o << fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", p.name, overlap::sim::param_type_name(p.type),
                       shown.empty() ? "-" : "`" + shown + "`", cell(overlap::sim::valid_values_text(p)),
                       cell(p.training_only ? "training steps only (pass backward / step; refused in a forward pass): " + p.help
                                            : p.help),
                       tries.empty() ? "-" : cell(tries), p.equivalent.empty() ? "-" : cell(p.equivalent));
    }
  }
}

std::string generate() {
  std::ostringstream o;
  o << "<!-- Generated by tools/docgen.cpp; do not edit. Regenerate: " << kRegenerate
    << " (ctest docgen_reference fails when this file differs). -->\n\n";
  o << "# Input reference (generated)\n\n"
       "This page is written by `overlap-docgen` from the code that checks inputs, so it cannot drift from "
       "what the loaders accept: the keys and defaults are the resolved form of the smallest valid profile, "
       "the valid values are the loader's own message for an impossible value, the scenario and workload keys "
       "are those the scenario loader lists, the range table is "
       "`cost_model/input_ranges.hpp`, and the scheme parameters are the scheme registry "
       "(`overlap-sim schemes`). Regenerate it with `" << kRegenerate << "`.\n\n";

  profile_keys_section(o);
  scenario_section(o);
  ranges_section(o);
  scheme_params_section(o);
  return o.str();
}

int usage(std::ostream& err) {
  err << "usage: overlap-docgen [-o FILE | --check FILE | --keys-json FILE | --check-keys-json FILE]\n"
         "  writes the generated input reference (docs/reference/inputs.md) to stdout, to FILE, or\n"
         "  compares it with FILE and exits 1 when they differ; --keys-json and --check-keys-json do the\n"
         "  same for the workload key table's JSON (tests/data/bad_inputs/workload_keys.json).\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
    usage(std::cout);
    return 0;
  }
  if (!args.empty() && args.size() != 2) return usage(std::cerr);
  try {
    const bool keys = !args.empty() && (args[0] == "--keys-json" || args[0] == "--check-keys-json");
    const std::string page = keys ? workload_keys_json().dump(1) + "\n" : generate();
    const char* regenerate = keys ? kRegenerateKeys : kRegenerate;
    if (args.empty()) {
      std::cout << page;
      return 0;
    }
    if (args[0] == "-o" || args[0] == "--output" || args[0] == "--keys-json") {
      overlap::write_file_atomically(args[1], page);
      return 0;
    }
    if (args[0] != "--check" && args[0] != "--check-keys-json") return usage(std::cerr);
    std::ifstream in(args[1], std::ios::binary);
    if (!in) {
      std::cerr << "overlap-docgen: cannot read " << args[1] << "\n";
      return 2;
    }
    std::ostringstream committed;
    committed << in.rdbuf();
    if (committed.str() == page) return 0;
    std::cerr << "overlap-docgen: " << args[1]
              << " differs from what the code generates (a range, default or scheme parameter changed).\n"
                 "Regenerate it from the repository root with:\n  cmake --build build --target overlap-docgen && "
              << regenerate << "\nand commit the result.\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "overlap-docgen: " << e.what() << "\n";
    return 2;
  }
}
