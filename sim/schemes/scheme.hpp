#pragma once
// The interface between schemes and the rest: a scheme is a builder
// (Workload, HardwareProfile, params) -> TaskGraph, with its source cited (design.md "Scheme library").
// Schemes know algorithms; the engine knows resources; neither reaches into the other.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cost_model/hardware_profile.hpp"
#include "sim/task_graph.hpp"
#include "sim/workload.hpp"

namespace overlap::sim {

enum class Fidelity : std::uint8_t { curve, steps };

struct NodeConfig;  // sim/node_config.hpp

// The type of a scheme knob. `wave_groups` is FlashOverlap's partition: a named search ("auto"),
// one wave count, or a list of wave counts; its row supplies the check.
enum class ParamType : std::uint8_t { integer, number, boolean, text, wave_groups };

// One row of a scheme's parameter table: the single place a knob's type, default, valid values,
// documentation and tune grid are written. The scenario loader and `run --param` check given values
// against it (check_param_value), builders read typed values through BuildContext, and
// `overlap-sim schemes`, `tune`, the report and docs/reference/inputs.md print it.
struct SchemeParam {
  std::string name;
  ParamType type = ParamType::integer;
  nlohmann::json default_value;  // typed (int, double, bool, string); null when `hardware_default` gives it
  std::string help;
  // integer / number: the closed range [min, max]; `hardware_max`, when set, replaces max on a profile
  // (SM counts), and `max_formula` is how docs show it.
  double min = 0;
  double max = 0;
  std::function<double(const HardwareProfile&)> hardware_max = {};
  std::string max_formula = {};
  // integer: a value outside [min, max] that is also accepted, with its meaning (-1 = "the profile's").
  std::optional<std::int64_t> sentinel = {};
  std::string sentinel_meaning = {};
  // integer / text: when non-empty, the only values accepted.
  std::vector<nlohmann::json> allowed = {};
  // A default that depends on the hardware (FlashOverlap's wave_sms = sm_count - 2) and its formula
  // as docs and `overlap-sim schemes` show it.
  std::function<nlohmann::json(const HardwareProfile&)> hardware_default = {};
  std::string default_formula = {};
  // wave_groups: the complaint about a value, or nullopt when it is valid.
  std::function<std::optional<std::string>(const nlohmann::json&)> check = {};
  // The values `overlap-sim tune SCENARIO` tries for this knob (empty: the knob is not tuned).
  std::vector<nlohmann::json> tune_values = {};
  // "other=value": tune this knob only in configurations where knob `other` has that value (an SM
  // copy kernel's size means nothing for copy-engine pulls). "" = always.
  std::string tune_when = {};
  // What production systems call this knob (Megatron-LM, TransformerEngine, NCCL, PyTorch), for
  // `overlap-sim schemes`; "" = no production equivalent.
  std::string equivalent = {};
  // A knob of the training backward only (how a column-parallel linear's backward overlaps): it means
  // nothing without a backward, or without such linears (a moe layer), so there it is left out of what a
  // run reports, tunes and sweeps, and naming it is refused (param_applies, check_params_apply).
  bool training_only = false;
  // A knob whose default is another knob's value (TransformerEngine's per-GEMM-name settings fall back
  // to the scalar ones): a run reports it among its parameters only when it was given, so a report
  // never shows a formula where a value belongs.
  bool inherits = false;

  // Rows are written as e.g. int_param("m", 1, 1, 4096, "...").tune({1, 2, 4}).production("...").
  SchemeParam tune(std::vector<nlohmann::json> values, std::string when = {}) const;
  SchemeParam production(std::string text) const;
  SchemeParam training() const;  // training_only
};

SchemeParam int_param(std::string name, std::int64_t default_value, std::int64_t min, std::int64_t max,
                      std::string help);
SchemeParam number_param(std::string name, double default_value, double min, double max, std::string help);
SchemeParam bool_param(std::string name, bool default_value, std::string help);
SchemeParam choice_param(std::string name, std::vector<std::string> allowed, std::string help);  // default: the first

// "int", "number", "bool", "string" or "list": the type word `overlap-sim schemes` and the docs print.
std::string param_type_name(ParamType type);
// The default as `overlap-sim schemes` prints it: the literal (text unquoted) or the formula.
std::string default_text(const SchemeParam& p);
// The valid values as the docs print them ("1..4096", "ring, pairwise, circular", "-1 or 1..sm_count - 1").
std::string valid_values_text(const SchemeParam& p);
// The default on `hardware` (the formula evaluated); with no hardware, a hardware-dependent
// default is its formula as text.
nlohmann::json default_for(const SchemeParam& p, const HardwareProfile* hardware);
// THE check of a knob's value: nullopt when `value` is valid for `p` on `hardware`, else the
// complaint without the key ("must be an integer in [1, 4096] (got 0)"); callers add file, line, key.
std::optional<std::string> check_param_value(const SchemeParam& p, const nlohmann::json& value,
                                             const HardwareProfile& hardware);

// Does knob `p` mean anything for `workload`? Every knob does, except a training_only one in a
// workload without a backward (pass forward) or without column-parallel linears (kind moe).
bool param_applies(const SchemeParam& p, const Workload& workload);
// The knobs of `params` that mean nothing for `workload` refused: nullopt when every given knob
// applies, else {knob, complaint without the key}. (The knob is named so callers can point at its line.)
struct ParamRefusal {
  std::string name;
  std::string why;
};
std::optional<ParamRefusal> check_params_apply(const std::vector<SchemeParam>& table, const nlohmann::json& params,
                                               const Workload& workload);

struct BuildContext {
  const Workload& workload;
  const HardwareProfile& hardware;
  const nlohmann::json& params;  // checked against SchemeInfo::params by the loader
  Fidelity fidelity = Fidelity::curve;
  // The engine's node for `hardware` (make_node), shared by every build and run of a scenario so
  // routes are found once; nullptr: built where needed.
  const NodeConfig* node = nullptr;

  // A knob's value: the one given in `params`, else the row's default (on this hardware). A given
  // value is put through check_param_value (graphs are also built from code, not only from
  // scenarios); a bad one throws InputError with key "params.<name>".
  nlohmann::json param(const SchemeParam& p) const;
  int integer(const SchemeParam& p) const;
  double number(const SchemeParam& p) const;
  bool boolean(const SchemeParam& p) const;
  std::string text(const SchemeParam& p) const;
};

// One collective call a scheme issued through GraphBuilder::add_collective (nccl-tests' view of it):
// the member ops in the graph share `id` as their Op::collective. What the per-collective breakdown
// of a result (sim/metrics.hpp CollectiveFigure) is computed from, with the ops' start and end.
struct CollectiveCall {
  std::int64_t id = -1;
  std::string name;
  Primitive primitive = Primitive::all_reduce;
  Bytes bytes = 0;        // nccl-tests S
  int ranks = 0;
  std::string algorithm;  // what NCCL's model chose for this size (nccl_algorithm_name)
  std::string protocol;   // nccl_protocol_name
  int channels = 0;       // SMs held
  // The TP group's collectives, or the data-parallel gradient and parameter traffic of a training step.
  Communicator communicator = Communicator::tp;
};

struct BuiltScheme {
  TaskGraph graph;
  // Bytes each rank must send to each other rank for the workload's collectives (the byte
  // accounting the simulator checks against the timeline), [src][dst].
  std::vector<std::vector<Bytes>> required_bytes;
  // Latency perfect overlap would give (FlashOverlap Sec. 6.4), when the scheme can state it; < 0 =
  // the caller uses the generic bound.
  Ps bound_ps = -1;
  // Why this scheme is where it is, in one line (e.g. "tail: last chunk's RS exposed").
  std::string reason;
  // Every data-moving collective call, in the order issued (marker collectives of 0 bytes or one
  // member are left out).
  std::vector<CollectiveCall> collectives;
};

struct SchemeInfo {
  std::string name;
  std::string source;  // document and section
  std::string summary;
  std::vector<SchemeParam> params;
  // How it runs a training step's backward, in one line for `overlap-sim schemes`; "" = it has no
  // backward form and is refused for pass backward / step and data parallelism.
  std::string backward = {};
  // can this scheme run this workload? (The registry adds: a training step only with a backward form.)
  std::function<bool(const Workload&)> applies;
  std::function<BuiltScheme(const BuildContext&)> build;
};

// Every scheme, in a stable order. Defined in sim/schemes/registry.cpp.
const std::vector<SchemeInfo>& scheme_registry();
const SchemeInfo* find_scheme(const std::string& name);

}  // namespace overlap::sim
