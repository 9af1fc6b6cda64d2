// The workload key table (sim/workload_key_table.hpp): its rows are consistent, the scenario loader
// enforces each row's range and applies each row's default, the workload structs' own defaults agree
// with the rows, and the loader and the shape validator state a cross-key rule at the same key.
#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

#include <catch2/catch.hpp>

#include "cost_model/input_error.hpp"
#include "sim/scenario.hpp"
#include "sim/workload_key_table.hpp"
#include "sim/workload_keys.hpp"
#include "sim/workload_shapes.hpp"

namespace {

namespace wk = overlap::sim::workload_key;
using overlap::InputError;
using overlap::sim::WorkloadKind;

const std::string kTableSource = OVERLAP_SOURCE_DIR;

overlap::sim::Scenario load_workload(const std::string& workload) {
  overlap::sim::ScenarioOptions o;
  o.hardware_dir = kTableSource + "/scenarios/hardware";
  return overlap::sim::load_scenario_text("hardware: h100-sxm-8x-nvswitch\nworkload: " + workload + "\n", "keys.yaml", o);
}

// The loader's error for `workload`; fails the test when it loads.
InputError workload_error(const std::string& workload) {
  try {
    (void)load_workload(workload);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("loaded: " << workload);
  throw std::logic_error("unreachable");
}

std::string flow(const YAML::Node& n) {
  YAML::Emitter em;
  em << YAML::Flow << n;
  return em.c_str();
}

}  // namespace

TEST_CASE("every workload key has one row, and every row is a key some kind takes", "[scenario][keys]") {
  std::set<std::string_view> names;
  for (const wk::Key* k : wk::kAll) {
    INFO(k->name);
    CHECK(names.insert(k->name).second);
    CHECK(wk::find(k->name) == k);
    // A number key has a range to check; any other has none.
    CHECK((k->range != nullptr) == (k->type == wk::KeyType::integer || k->type == wk::KeyType::number));
    bool taken = false;
    for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames) taken = taken || wk::takes(kind, *k);
    CHECK(taken);
  }
  // The loader's lists are the rows' names: each kind's allowed keys are rows.
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames)
    for (const std::string& key : overlap::sim::workload_keys(kind)) {
      INFO(name << "." << key);
      REQUIRE(wk::find(key) != nullptr);
      CHECK(wk::takes(kind, *wk::find(key)));
    }
  CHECK_FALSE(wk::takes(WorkloadKind::gemm_collective, wk::model));
  CHECK(wk::takes(WorkloadKind::decode_stack, wk::allreduce_us));
}

TEST_CASE("a numeric default lies in its key's range", "[scenario][keys]") {
  for (const wk::Key* k : wk::kAll) {
    if (k->range == nullptr || k->default_value.empty()) continue;
    INFO(k->name << " = " << k->default_value);
    const double v = wk::default_number(*k);
    // dense_layers' default 0 (every layer a MoE layer) is the one default a file cannot write: a given
    // count of dense layers is at least 1.
    if (k == &wk::dense_layers) {
      CHECK(v == 0);
      continue;
    }
    CHECK(v >= k->range->min);
    CHECK(v <= k->range->max);
    if (k->range->integer) CHECK(v == static_cast<double>(wk::default_int(*k)));
  }
  // The decimal reader is exact on the forms the table writes.
  STATIC_REQUIRE(wk::decimal_value("25") == 25);
  STATIC_REQUIRE(wk::decimal_value("0.5") == 0.5);
  STATIC_REQUIRE(wk::decimal_value("-1") == -1);
}

TEST_CASE("the loader refuses one past each integer key's range, at that key, in the range's words", "[scenario][keys]") {
  // One past the maximum, or twice it where one past is not a double of its own (seed's 2^53: the
  // loader compares as a double, in which 2^53 + 1 is 2^53).
  int checked = 0;
  for (const auto& [kind, name] : overlap::sim::kWorkloadKindNames) {
    const std::string example = overlap::sim::workload_kind_keys(kind).example;
    for (const wk::Key* k : wk::own_keys(kind)) {
      if (k->type != wk::KeyType::integer) continue;
      // A transformer of a dense model (the example) refuses the MoE keys but experts (which makes it
      // a MoE model) as not applying, before their ranges (scenario.cpp read_transformer_moe).
      if (kind == WorkloadKind::transformer && k != &wk::experts &&
          std::find(wk::kTransformerMoe.begin(), wk::kTransformerMoe.end(), k) != wk::kTransformerMoe.end())
        continue;
      INFO(name << "." << k->name);
      YAML::Node w = YAML::Load(example);
      if ((k == &wk::batch || k == &wk::seq) && w["tokens"]) {  // tokens or batch and seq, not both
        w.remove("tokens");
        w[k == &wk::batch ? "seq" : "batch"] = k == &wk::batch ? 8192 : 1;
      }
      const auto max = static_cast<std::int64_t>(k->range->max);
      w[std::string(k->name)] = max < (std::int64_t{1} << 53) ? max + 1 : 2 * max;
      const InputError e = workload_error(flow(w));
      CHECK(e.key_path() == "workload." + std::string(k->name));
      CHECK_THAT(std::string(e.what()), Catch::Contains(overlap::range_text(*k->range)));
      ++checked;
    }
  }
  CHECK(checked >= 30);  // the kinds' size keys: a table that lost its ranges would check none
}

TEST_CASE("the loader applies the table's defaults", "[scenario][keys]") {
  using namespace overlap::sim;
  const Workload mlp = load_workload(workload_kind_keys(WorkloadKind::mlp_tpsp).example).workload;
  const auto& m = std::get<MlpTpSp>(mlp.shape);
  CHECK(m.gated == wk::default_bool(wk::gated));
  CHECK(m.gather_input == wk::default_bool(wk::gather_input));
  CHECK(dtype_name(m.dtype) == wk::dtype.default_value);
  CHECK(pass_name(mlp.training.pass) == wk::pass.default_value);
  // The one per-kind default: decode_stack's FP8 weights.
  const Workload decode = load_workload(workload_kind_keys(WorkloadKind::decode_stack).example).workload;
  CHECK(dtype_name(std::get<DecodeStack>(decode.shape).dtype) == wk::dtype.default_for(WorkloadKind::decode_stack));
  CHECK(wk::dtype.default_for(WorkloadKind::decode_stack) != wk::dtype.default_value);
  // workload.parallel given with dp alone: the rest are the rows' defaults.
  const Workload dp = load_workload("{kind: transformer, tp: 4, model: llama3-70b, batch: 1, seq: 8192, pass: step, "
                                    "parallel: {dp: 2}}").workload;
  CHECK(dp.training.parallel.bucket_mb == wk::default_number(wk::bucket_mb));
  CHECK(dp.training.parallel.prefetch == wk::default_int(wk::prefetch));
  CHECK(sharding_name(dp.training.parallel.fsdp) == wk::fsdp.default_value);
  CHECK(dtype_name(dp.training.parallel.grad_dtype) == wk::grad_dtype.default_value);
  CHECK(dp.training.job.pp == wk::default_int(wk::pp));
  CHECK(dp.training.job.cp == wk::default_int(wk::cp));
  const Workload moe = load_workload(workload_kind_keys(WorkloadKind::moe).example).workload;
  CHECK(std::get<Moe>(moe.shape).expert_tp == wk::default_int(wk::expert_tp));
  CHECK(moe_all_to_all_name(std::get<Moe>(moe.shape).all_to_all) == wk::all_to_all.default_value);
}

TEST_CASE("a workload built in code starts from the table's defaults", "[scenario][keys]") {
  // The structs (sim/workload.hpp) are what the Python module and the tests build by hand; their
  // member initialisers must say what a scenario that leaves the key out says.
  using namespace overlap::sim;
  CHECK(GemmCollective{}.rmsnorm_after == wk::default_bool(wk::rmsnorm_after));
  CHECK(MlpTpSp{}.gated == wk::default_bool(wk::gated));
  CHECK(MlpTpSp{}.gather_input == wk::default_bool(wk::gather_input));
  CHECK(AttentionTpSp{}.causal == wk::default_bool(wk::causal));
  CHECK(AttentionUlysses{}.causal == wk::default_bool(wk::causal));
  CHECK(dtype_name(DecodeStack{}.dtype) == wk::dtype.default_for(WorkloadKind::decode_stack));
  CHECK(dtype_name(Transformer{}.dtype) == wk::dtype.default_value);
  CHECK(Moe{}.expert_tp == wk::default_int(wk::expert_tp));
  CHECK(Moe{}.shared_experts == wk::default_int(wk::shared_experts));
  CHECK(DataParallel{}.dp == wk::default_int(wk::dp));
  CHECK(DataParallel{}.bucket_mb == wk::default_number(wk::bucket_mb));
  CHECK(DataParallel{}.prefetch == wk::default_int(wk::prefetch));
  CHECK(JobParallel{}.pp == wk::default_int(wk::pp));
  CHECK(JobParallel{}.vpp == wk::default_int(wk::vpp));
  CHECK(JobParallel{}.micro_batches == wk::default_int(wk::micro_batches));
  CHECK(JobParallel{}.cp == wk::default_int(wk::cp));
}

TEST_CASE("a cross-key rule is refused in its words, by the loader and the validator at the same key", "[scenario][keys]") {
  using namespace overlap::sim;
  // d_ffn = 28673 on 8 ranks: 28673 = 8 x 3584 + 1, so TP cannot shard it.
  const InputError e = workload_error("{kind: mlp_tpsp, tp: 8, model: llama3-70b, tokens: 8192, d_ffn: 28673}");
  CHECK(e.key_path() == "workload." + std::string(wk::rule::ffn_by_tp.key));
  CHECK_THAT(std::string(e.what()), Catch::Contains("28673 is not divisible by tp = 8 (" +
                                                    std::string(wk::rule::ffn_by_tp.why) + ")"));
  Workload w = load_workload(workload_kind_keys(WorkloadKind::mlp_tpsp).example).workload;
  std::get<MlpTpSp>(w.shape).d_ffn = 28673;
  try {
    validate_workload(w);
    FAIL("validate_workload accepted d_ffn = 28673 on tp = 8");
  } catch (const std::invalid_argument& v) {
    CHECK(std::string(v.what()) == "workload.d_ffn: 28673 is not divisible by tp = 8");
  }
  // A rule names its value when it is not the key's own: 8 heads do not divide d_model = 8196.
  const InputError h = workload_error("{kind: attention_ulysses, tp: 8, batch: 1, seq: 8192, d_model: 8196, heads: 64}");
  CHECK(h.key_path() == "workload.heads");
  CHECK_THAT(std::string(h.what()), Catch::Contains("d_model = 8196 is not divisible by heads = 64 (" +
                                                    std::string(wk::rule::width_by_heads.why) + ")"));
  // A bound between keys: a token's 9 distinct experts cannot come from 8.
  const InputError k = workload_error("{kind: moe, experts: 8, top_k: 9, d_model: 4096, d_ffn_expert: 14336, tokens: 8192, ep: 4}");
  CHECK(k.key_path() == "workload.top_k");
  CHECK_THAT(std::string(k.what()), Catch::Contains("top_k = 9 is more than experts = 8 (" +
                                                    std::string(wk::rule::top_k_within_experts.why) + ")"));
  for (const auto& [r, kinds] : wk::kAtMostRules)
    for (const auto& [kind, name] : kWorkloadKindNames)
      if (kinds[static_cast<std::size_t>(kind)]) {
        INFO(r->key << " on " << name);
        CHECK(wk::takes(kind, *wk::find(r->key)));
      }
  // Every rule binds kinds that take its key (or, for a workload.parallel rule, a transformer).
  for (const wk::KindRule& r : wk::kRules)
    for (const auto& [kind, name] : kWorkloadKindNames) {
      if (!r.kinds[static_cast<std::size_t>(kind)]) continue;
      INFO(r.rule->key << " on " << name);
      const wk::Key* k = wk::find(r.rule->key);
      if (k == nullptr) k = wk::find("parallel." + std::string(r.rule->key));
      REQUIRE(k != nullptr);
      CHECK(wk::takes(kind, *k));
    }
}
