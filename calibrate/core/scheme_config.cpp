#include "calibrate/core/scheme_config.hpp"

#include <algorithm>
#include <initializer_list>
#include <set>
#include <string_view>

#include "calibrate/core/json_reader.hpp"
#include "calibrate/core/measurement.hpp"
#include "sim/schemes/knob_values.hpp"
#include "sim/workload_key_table.hpp"

namespace overlap::calibrate {
namespace {

using nlohmann::json;
namespace knobs = sim::knobs;

const std::vector<std::string> kDecodeSchemes = {"tp_baseline", "gptj_parallel", "pt_transformer",
                                                 "ladder_residual", "dtp", "no_comm"};

// The workload keys the reference kernels read for `kind`: kind and tp, then the kind's own keys in the
// simulator's order (sim/workload_key_table.hpp), but those the kernels do not run (`left_out`).
std::vector<std::string> kernel_keys(sim::WorkloadKind kind, std::initializer_list<std::string_view> left_out) {
  namespace table = sim::workload_key;
  std::vector<std::string> keys = {std::string(table::kind.name), std::string(table::tp.name)};
  for (const table::Key* key : table::own_keys(kind))
    if (std::find(left_out.begin(), left_out.end(), key->name) == left_out.end()) keys.emplace_back(key->name);
  return keys;
}

bool is_decode_scheme(const std::string& s) {
  return std::find(kDecodeSchemes.begin(), kDecodeSchemes.end(), s) != kDecodeSchemes.end();
}

std::int64_t small_param(const JsonReader& params, const std::string& key, std::int64_t fallback, std::int64_t max) {
  const std::int64_t v = params.get_positive_int(key, fallback);
  if (v > max) params.fail_at(key, "must be at most " + std::to_string(max) + " (got " + std::to_string(v) + ")");
  return v;
}

// A scheme knob the reference kernels run up to `kernel_max` (their limit, within the table's range);
// absent, the scheme table's default (sim/schemes/knob_values.hpp).
std::int64_t small_param(const JsonReader& params, const knobs::IntKnob& knob, std::int64_t kernel_max) {
  return small_param(params, knob.name, knob.default_value, kernel_max);
}

// A choice knob's value: the one given, else the table's default.
template <std::size_t N>
std::string choice(const JsonReader& params, const knobs::ChoiceKnob<N>& knob) {
  return params.get_string(knob.name, knob.default_value());
}

// "a, b or c": the choices as a complaint lists them.
template <std::size_t N>
std::string choices_text(const knobs::ChoiceKnob<N>& knob) {
  std::string out;
  for (std::size_t i = 0; i < N; ++i) out += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + knob.values[i];
  return out;
}

void check_params(const JsonReader& params, SchemeRunConfig& c) {
  params.expect_object();
  const std::string& s = c.scheme;
  if (s == "no_overlap" || s == "tp_baseline" || s == "gptj_parallel" || s == "ladder_residual" || s == "no_comm") {
    params.allow_keys({});
  } else if (s == "data_slicing") {
    params.allow_keys({"chunks"});
    const auto chunks = small_param(params, knobs::kDataSlicingChunks, 64);
    const std::int64_t div = chunks * (c.primitive == "all_reduce" ? 1 : c.ranks) * 128;
    if (c.m % div != 0) {
      params.fail_at("chunks", "workload.m = " + std::to_string(c.m) + " must divide into chunks x 128 rows" +
                                   (c.primitive == "all_reduce" ? "" : " x ranks") + " (" + std::to_string(div) + ")");
    }
  } else if (s == "async_tp") {
    params.allow_keys({"transport", "streams"});
    if (choice(params, knobs::kAsyncTpTransport) != "copy_engine") {
      params.fail_at("transport", "the reference kernels pull by copy engine only (copy_engine)");
    }
    const auto streams = small_param(params, knobs::kAsyncTpStreams, 2);
    (void)streams;
  } else if (s == "commfuse") {
    params.allow_keys({"m", "schedule", "transport"});
    // How the reference kernels exchange: copy-engine pulls (virtual ranks; a real node's ranks
    // through peer memory) or NCCL send/recv (real nodes only; the runner refuses it on virtual
    // ranks); the simulator's commfuse takes the same parameter.
    const std::string transport = choice(params, knobs::kCommFuseTransport);
    if (!knobs::is_choice(knobs::kCommFuseTransport, transport)) {
      params.fail_at("transport", "must be copy_engine (copy-engine pulls) or nccl (NCCL send/recv, real nodes) (got '" + transport + "')");
    }
    const auto m = small_param(params, knobs::kCommFuseM, 64);
    const std::string sched = choice(params, knobs::kCommFuseSchedule);
    if (!knobs::is_choice(knobs::kCommFuseSchedule, sched)) {
      params.fail_at("schedule", "must be " + choices_text(knobs::kCommFuseSchedule) + " (got '" + sched + "')");
    }
    if (c.m % (m * c.ranks * 128) != 0) {
      params.fail_at("m", "workload.m must divide into m x ranks slices of 128-row multiples");
    }
  } else if (s == "flashoverlap") {
    // The runner's signalling GEMM uses 128x128 tiles; a wave is `wave_sms` x `ctas_per_sm` of them
    // (given explicitly, so the simulator cuts the same waves: on virtual ranks communication takes
    // no SMs, so wave_sms is the rank's partition, not FlashOverlap's sm_count - 2). ctas_per_sm
    // defaults to kRunCtasPerSm (one CTA per SM), so results that do not state it read as that kernel.
    params.allow_keys({"groups", "wave_sms", "ctas_per_sm"});
    const std::int64_t wave_sms = small_param(params, "wave_sms", 0, 1024);
    if (!params.has("wave_sms")) params.fail_at("wave_sms", "missing required field (SMs per wave: the rank's partition)");
    const std::int64_t ctas = small_param(params, "ctas_per_sm", kRunCtasPerSm, 2);
    const std::int64_t tiles = (c.m / 128) * (c.n / 128);
    const std::int64_t wave_tiles = wave_sms * ctas;
    const std::int64_t waves = (tiles + wave_tiles - 1) / wave_tiles;
    const JsonReader g = params.child("groups");
    g.expect_array();
    if (g.size() == 0) g.fail("needs at least one group (sizes in waves)");
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
      const JsonReader e = g.element(i);
      const json& v = e.value();
      if (!v.is_number_integer() || v.get<std::int64_t>() < 1) e.fail("must be a positive integer (waves)");
      sum += v.get<std::int64_t>();
    }
    if (sum != waves) {
      g.fail("group sizes sum to " + std::to_string(sum) + " waves; the GEMM has " + std::to_string(waves) + " (" +
             std::to_string(tiles) + " tiles of 128x128, " + std::to_string(wave_tiles) + " per wave)");
    }
  } else if (s == "pt_transformer") {
    params.allow_keys({"t_d"});
    small_param(params, knobs::kPtTransformerTd, 64);
  } else if (s == "dtp") {
    params.allow_keys({"delta"});
    small_param(params, knobs::kDtpDelta, 64);
  }
}

void parse_workload(const JsonReader& w, SchemeRunConfig& c) {
  w.expect_object();
  const std::string kind_text = w.get_string("kind");
  const std::optional<sim::WorkloadKind> kind = sim::parse_workload_kind(kind_text);
  const std::int64_t tp = w.get_positive_int("tp");
  if (tp < 2 || tp > 16) w.fail_at("tp", "must be 2..16 ranks (got " + std::to_string(tp) + ")");
  c.ranks = static_cast<int>(tp);
  c.dtype = w.get_string("dtype", "bf16");
  if (c.dtype != "bf16") w.fail_at("dtype", "the reference kernels run bf16 only (got '" + c.dtype + "')");
  if (kind == sim::WorkloadKind::gemm_collective) {
    w.allow_keys(kernel_keys(sim::WorkloadKind::gemm_collective, {}));
    c.m = w.get_positive_int("m");
    c.n = w.get_positive_int("n");
    c.k = w.get_positive_int("k");
    for (const char* key : {"m", "n", "k"}) {
      if (w.get_positive_int(key) % 128 != 0) w.fail_at(key, "must be a multiple of 128 (the GEMM tile)");
    }
    c.primitive = w.get_string("primitive");
    if (c.primitive != "all_reduce" && c.primitive != "reduce_scatter" && c.primitive != "all_gather") {
      w.fail_at("primitive", "must be all_reduce, reduce_scatter or all_gather (got '" + c.primitive + "')");
    }
    if (c.primitive != "all_reduce" && c.m % (c.ranks * 128) != 0) {
      w.fail_at("m", "must divide into ranks x 128 rows for " + c.primitive);
    }
  } else if (kind == sim::WorkloadKind::decode_stack) {
    // The kernels build the layers from their sizes: no model config, and the all-reduce is measured.
    w.allow_keys(kernel_keys(sim::WorkloadKind::decode_stack, {"model", "allreduce_us"}));
    c.layers = static_cast<int>(w.get_positive_int("layers"));
    c.d_model = w.get_positive_int("d_model");
    c.d_ffn = w.get_positive_int("d_ffn");
    c.heads = w.get_positive_int("heads");
    c.kv_heads = w.get_positive_int("kv_heads", c.heads);
    if (c.layers > 256) w.fail_at("layers", "must be at most 256");
    if (!sim::workload_key::rule::width_by_heads.holds(c.d_model, c.heads)) w.fail_at("heads", "must divide d_model");
    // The simulator's rules (heads and the FFN split over tp), the FFN's shard in multiples of 8 (the
    // kernels' vector width).
    if (!sim::workload_key::rule::heads_by_tp.holds(c.heads, c.ranks) || c.d_ffn % (c.ranks * 8) != 0) {
      w.fail_at("tp", "must divide heads, and d_ffn into multiples of 8");
    }
  } else {
    w.fail_at("kind", "the reference kernels run gemm_collective and decode_stack (got '" + kind_text + "')");
  }
  c.kind = *kind;
}

void check_applies(const JsonReader& r, const SchemeRunConfig& c) {
  const bool decode = is_decode_scheme(c.scheme);
  if (decode && c.kind != sim::WorkloadKind::decode_stack) r.fail_at("scheme", c.scheme + " runs decode_stack workloads only");
  if (!decode && c.kind == sim::WorkloadKind::decode_stack && c.scheme != "no_overlap") {
    r.fail_at("scheme", c.scheme + " does not apply to decode_stack");
  }
  if ((c.scheme == "async_tp" || c.scheme == "commfuse") && c.primitive == "all_reduce") {
    r.fail_at("scheme", c.scheme + " decomposes all_gather or reduce_scatter, not all_reduce");
  }
  if (c.scheme == "flashoverlap" && c.primitive == "all_gather") {
    r.fail_at("scheme", "flashoverlap signals a collective after the GEMM (all_reduce, reduce_scatter)");
  }
}

SchemeRunConfig parse_run(const JsonReader& r, const std::set<std::string>& extra_keys) {
  std::vector<std::string> keys = {"id", "scheme", "params", "workload", "link"};
  keys.insert(keys.end(), extra_keys.begin(), extra_keys.end());
  r.allow_keys(keys);
  SchemeRunConfig c;
  c.id = r.get_string("id");
  c.scheme = r.get_string("scheme");
  const auto& known = runnable_schemes();
  if (std::find(known.begin(), known.end(), c.scheme) == known.end()) {
    std::string list;
    for (const auto& s : known) list += (list.empty() ? "" : ", ") + s;
    r.fail_at("scheme", "not implemented by the reference kernels: '" + c.scheme + "' (have: " + list + ")");
  }
  c.link = r.get_string("link", "d2d");
  if (c.link != "d2d" && c.link != "host") r.fail_at("link", "must be d2d or host (got '" + c.link + "')");
  parse_workload(r.child("workload"), c);
  c.workload = r.child("workload").value();
  check_applies(r, c);
  static const json empty = json::object();
  const JsonReader params = r.has("params") ? r.child("params") : JsonReader(empty, r.file(), r.key_path("params"));
  check_params(params, c);
  c.params = params.value();
  return c;
}

}  // namespace

std::int64_t run_param(const SchemeRunConfig& c, const sim::knobs::IntKnob& knob) {
  return c.params.is_object() ? c.params.value(knob.name, knob.default_value) : knob.default_value;
}

int run_ctas_per_sm(const nlohmann::json& params) {
  return params.is_object() ? params.value("ctas_per_sm", kRunCtasPerSm) : kRunCtasPerSm;
}

const std::vector<std::string>& runnable_schemes() {
  static const std::vector<std::string> s = {"no_overlap",     "data_slicing",  "async_tp",        "commfuse",
                                             "flashoverlap",   "tp_baseline",   "gptj_parallel",   "pt_transformer",
                                             "ladder_residual", "dtp",          "no_comm"};
  return s;
}

SchemeConfigList parse_scheme_config_list(const json& doc, const std::string& file,
                                          std::shared_ptr<const std::string> text) {
  const JsonReader r(doc, file, "", std::move(text));
  r.allow_keys({"schema", "description", "warmup", "repetitions", "runs"});
  if (r.get_string("schema") != kSchemeConfigsSchema) {
    r.fail_at("schema", std::string("must be \"") + kSchemeConfigsSchema + "\"");
  }
  SchemeConfigList list;
  list.description = r.get_string("description", "");
  list.warmup = static_cast<int>(r.get_positive_int("warmup", list.warmup));
  list.repetitions = static_cast<int>(r.get_positive_int("repetitions", list.repetitions));
  if (list.warmup > 1000 || list.repetitions > 10000) r.fail("warmup / repetitions too large");
  const JsonReader runs = r.child("runs");
  runs.expect_array();
  if (runs.size() == 0) runs.fail("needs at least one run");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    SchemeRunConfig c = parse_run(runs.element(i), {});
    if (!ids.insert(c.id).second) runs.element(i).fail_at("id", "duplicate id '" + c.id + "'");
    list.runs.push_back(std::move(c));
  }
  return list;
}

SchemeConfigList load_scheme_config_list(const std::string& file) {
  const JsonDocument doc = read_json_document(file);
  return parse_scheme_config_list(doc.value, file, doc.text);
}

json to_json(const SchemeRunConfig& c) {
  return json{{"id", c.id}, {"scheme", c.scheme}, {"params", c.params}, {"workload", c.workload}, {"link", c.link}};
}

json scheme_runs_document(const SchemeRunSet& set) {
  json doc{{"schema", kSchemeRunsSchema}, {"fixture", set.fixture},       {"host", set.host},
           {"profile", set.profile},     {"environment", set.environment}, {"runs", json::array()},
           {"virtual_nodes", json::array()}};
  for (const auto& v : set.virtual_nodes) doc["virtual_nodes"].push_back(to_json(v));
  for (const auto& r : set.runs) {
    json j = to_json(r.config);
    if (!r.profile.empty()) j["profile"] = r.profile;
    j["check"] = json{{"rel_error", r.rel_error}, {"tolerance", r.tolerance}, {"passed", r.passed}};
    j["latency_us"] = to_json(r.latency_us);
    j["compute_only_us"] = to_json(r.compute_only_us);
    if (r.host_enqueue_us > 0) j["host_enqueue_us"] = r.host_enqueue_us;
    doc["runs"].push_back(std::move(j));
  }
  return doc;
}

json to_json(const VirtualNodeRecord& v) {
  json measurements = json::array();
  for (const auto& m : v.measurements) measurements.push_back(to_json(m));
  return json{{"profile", v.profile}, {"ranks", v.ranks},           {"link", v.link},
              {"rank_sms", v.rank_sms}, {"environment", v.environment}, {"measurements", std::move(measurements)}};
}

namespace {
SampleStats stats_from(const JsonReader& r) {
  r.allow_keys({"count", "median", "min", "max", "mean", "spread"});
  SampleStats s;
  s.count = static_cast<int>(r.get_positive_int("count"));
  s.median = r.get_positive_number("median");
  s.min = r.get_positive_number("min");
  s.max = r.get_positive_number("max");
  s.mean = r.has("mean") ? r.get_positive_number("mean") : s.median;
  s.spread = s.max / s.min;
  if (s.min > s.median || s.median > s.max) r.fail("needs min <= median <= max");
  return s;
}

// A virtual node as the runner writes it (calibrate/cuda/schemes/). `overlap-calibrate-profile
// --schemes` writes the profile file it names, so the name may not leave the schemes folder.
VirtualNodeRecord parse_virtual_node(const JsonReader& r) {
  r.allow_keys({"profile", "ranks", "link", "rank_sms", "environment", "measurements"});
  VirtualNodeRecord v;
  v.profile = r.get_string("profile");
  const bool plain = !v.profile.empty() && v.profile.find('/') == std::string::npos &&
                     v.profile.find('\\') == std::string::npos && v.profile[0] != '.';
  if (!plain || v.profile.size() < 6 || v.profile.compare(v.profile.size() - 5, 5, ".yaml") != 0)
    r.fail_at("profile", "must be a file name beside schemes.json ending in .yaml, with no directory part (got '" +
                             v.profile + "')");
  const std::int64_t ranks = r.get_positive_int("ranks");
  if (ranks < 2 || ranks > kMaxUnitCount) r.fail_at("ranks", "must be between 2 and " + std::to_string(kMaxUnitCount));
  v.ranks = static_cast<int>(ranks);
  v.link = r.get_string("link");
  if (v.link != "d2d" && v.link != "host") r.fail_at("link", "must be d2d or host (got '" + v.link + "')");
  const std::int64_t sms = r.get_positive_int("rank_sms");
  if (sms > kMaxUnitCount) r.fail_at("rank_sms", "must be at most " + std::to_string(kMaxUnitCount));
  v.rank_sms = static_cast<int>(sms);
  r.child("environment").expect_object();
  v.environment = r.child("environment").value();
  const JsonReader list = r.child("measurements");
  list.expect_array();
  for (std::size_t i = 0; i < list.size(); ++i)
    v.measurements.push_back(measurement_from_json(list.element(i).value(), r.file(), list.element(i).path(), r.text()));
  return v;
}
}  // namespace

SchemeRunSet parse_scheme_runs(const json& doc, const std::string& file, std::shared_ptr<const std::string> text) {
  const JsonReader r(doc, file, "", std::move(text));
  r.allow_keys({"schema", "fixture", "host", "profile", "environment", "runs", "virtual_nodes"});
  if (r.get_string("schema") != kSchemeRunsSchema) r.fail_at("schema", std::string("must be \"") + kSchemeRunsSchema + "\"");
  SchemeRunSet set;
  set.fixture = r.get_bool("fixture", false);
  set.host = r.get_string("host", "virtual");
  if (set.host != "virtual" && set.host != "nodes") r.fail_at("host", "must be virtual or nodes");
  set.profile = r.get_string("profile", "");
  if (r.has("environment")) set.environment = r.child("environment").value();
  if (r.has("virtual_nodes")) {
    const JsonReader nodes = r.child("virtual_nodes");
    nodes.expect_array();
    for (std::size_t i = 0; i < nodes.size(); ++i) set.virtual_nodes.push_back(parse_virtual_node(nodes.element(i)));
    for (std::size_t i = 0; i < set.virtual_nodes.size(); ++i)
      for (std::size_t j = 0; j < i; ++j)
        if (set.virtual_nodes[i].profile == set.virtual_nodes[j].profile)
          nodes.element(i).fail_at("profile", "'" + set.virtual_nodes[i].profile + "' is also virtual node " +
                                                  std::to_string(j) + "'s profile (each node writes its own)");
  }
  const JsonReader runs = r.child("runs");
  runs.expect_array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const JsonReader e = runs.element(i);
    SchemeRunResult res;
    res.config = parse_run(e, {"check", "latency_us", "compute_only_us", "profile", "host_enqueue_us"});
    res.profile = e.get_string("profile", "");
    const JsonReader check = e.child("check");
    check.allow_keys({"rel_error", "tolerance", "passed"});
    if (!check.child("rel_error").value().is_number()) check.fail_at("rel_error", "must be a number");
    res.rel_error = check.child("rel_error").value().get<double>();
    res.tolerance = check.get_positive_number("tolerance");
    res.passed = check.get_bool("passed", false);
    res.latency_us = stats_from(e.child("latency_us"));
    res.compute_only_us = stats_from(e.child("compute_only_us"));
    if (e.has("host_enqueue_us")) res.host_enqueue_us = e.get_positive_number("host_enqueue_us");
    set.runs.push_back(std::move(res));
  }
  return set;
}

SchemeRunSet load_scheme_runs(const std::string& file) {
  const JsonDocument doc = read_json_document(file);
  return parse_scheme_runs(doc.value, file, doc.text);
}

}  // namespace overlap::calibrate
