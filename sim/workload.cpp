#include "sim/workload.hpp"

#include "cost_model/enum_names.hpp"

namespace overlap::sim {

namespace {

constexpr EnumNames<Pass, 3> kPassNames{{{Pass::forward, "forward"}, {Pass::backward, "backward"}, {Pass::step, "step"}}};
constexpr EnumNames<Recompute, 3> kRecomputeNames{
    {{Recompute::none, "none"}, {Recompute::selective, "selective"}, {Recompute::full, "full"}}};
constexpr EnumNames<Sharding, 4> kShardingNames{
    {{Sharding::none, "none"}, {Sharding::zero1, "zero1"}, {Sharding::zero2, "zero2"}, {Sharding::zero3, "zero3"}}};
constexpr EnumNames<MoeAllToAll, 4> kMoeAllToAllNames{{{MoeAllToAll::nccl, "nccl"},
                                                        {MoeAllToAll::deepep, "deepep"},
                                                        {MoeAllToAll::deepep_low_latency, "deepep_low_latency"},
                                                        {MoeAllToAll::hierarchical, "hierarchical"}}};
static_assert(rows_in_enum_order(kMoeAllToAllNames));
constexpr EnumNames<AttentionImplementation, 2> kAttentionNames{
    {{AttentionImplementation::flash, "flash"}, {AttentionImplementation::unfused, "unfused"}}};
static_assert(rows_in_enum_order(kAttentionNames));
static_assert(rows_in_enum_order(kPassNames) && rows_in_enum_order(kRecomputeNames) && rows_in_enum_order(kShardingNames));

}  // namespace

const char* primitive_name(Primitive p) {
  switch (p) {
    case Primitive::all_reduce: return "all_reduce";
    case Primitive::reduce_scatter: return "reduce_scatter";
    case Primitive::all_gather: return "all_gather";
    case Primitive::all_to_all: return "all_to_all";
  }
  return "?";
}

const char* pass_name(Pass p) { return name_of(kPassNames, p); }
const char* recompute_name(Recompute r) { return name_of(kRecomputeNames, r); }
const char* sharding_name(Sharding s) { return name_of(kShardingNames, s); }
std::optional<Pass> parse_pass(const std::string& s) { return parse_name(kPassNames, s); }
std::optional<Recompute> parse_recompute(const std::string& s) { return parse_name(kRecomputeNames, s); }
std::optional<Sharding> parse_sharding(const std::string& s) { return parse_name(kShardingNames, s); }
const char* moe_all_to_all_name(MoeAllToAll a) { return name_of(kMoeAllToAllNames, a); }
std::optional<MoeAllToAll> parse_moe_all_to_all(const std::string& s) { return parse_name(kMoeAllToAllNames, s); }

const char* attention_implementation_name(AttentionImplementation a) { return name_of(kAttentionNames, a); }
std::optional<AttentionImplementation> parse_attention_implementation(const std::string& s) {
  return parse_name(kAttentionNames, s);
}

bool has_backward(const Workload& w) { return w.training.pass != Pass::forward; }
bool is_training_step(const Workload& w) { return has_backward(w) || w.training.parallel.dp > 1; }
bool has_moe_layers(const Workload& w) {
  if (w.kind == WorkloadKind::moe) return true;
  const auto* t = std::get_if<Transformer>(&w.shape);
  return t != nullptr && t->moe.has_value();
}

}  // namespace overlap::sim
