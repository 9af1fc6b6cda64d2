#include "sim/schemes/decode_stack.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "cost_model/collective_model.hpp"
#include "sim/schemes/graph_builder.hpp"
#include "sim/workload_shapes.hpp"

namespace overlap::sim {

DecodeTimes decode_times(const DecodeStack& dec, int tp, const HardwareProfile& hw) {
  const double hbm_gbps = hw.gpu.hbm_bandwidth_gbps * hw.gpu.hbm_efficiency;
  if (!(hbm_gbps > 0))
    throw std::invalid_argument("hardware.gpu.hbm_bandwidth_gbps: decode weight streaming needs a positive HBM bandwidth");
  const DecodeShapes s = decode_shapes(dec, tp);
  DecodeTimes t;
  // delayed-tp-blog: tau_w = weight bytes of the module's shard / v_b; plus the streaming kernel's
  // fixed ramp and drain where the profile measured one (hbm_latency_us), as the engine runs it.
  t.tau_att_ps = streaming_kernel_ps(hw, s.attention_weight_bytes);
  t.tau_mlp_ps = streaming_kernel_ps(hw, s.mlp_weight_bytes);
  if (dec.allreduce_us >= 0) {
    t.tau_c_ps = ps_from_us(dec.allreduce_us);
  } else if (tp > 1) {
    t.tau_c_ps = collective_time_ps(hw, CollectivePrimitive::all_reduce, s.all_reduce_bytes, tp,
                                    collective_link_class(hw, tp), default_algorithm(hw, Primitive::all_reduce));
  }
  return t;
}

BuiltScheme build_decode_stack(const BuildContext& ctx, const DecodePlan& plan, bool collectives_only) {
  if (ctx.workload.kind != WorkloadKind::decode_stack)
    throw std::invalid_argument(fmt::format("workload.kind: the decode family needs decode_stack (got '{}')",
                                            workload_kind_name(ctx.workload.kind)));
  const DecodeStack& dec = std::get<DecodeStack>(ctx.workload.shape);
  const int tp = std::max(1, ctx.workload.tp);
  const DecodeShapes shapes = decode_shapes(dec, tp);
  const DecodeTimes times = decode_times(dec, tp, ctx.hardware);

  GraphBuilder b(ctx);
  const std::vector<StreamId> compute = b.add_streams("compute", 0);
  std::vector<std::vector<StreamId>> comm;
  const int n_comm = collectives_only ? 1 : std::max(1, plan.comm_streams);
  for (int s = 0; s < n_comm; ++s) comm.push_back(b.add_streams(fmt::format("comm{}", s), 1));

  const int ranks = b.ranks();
  std::vector<std::vector<OpId>> all_reduce(plan.modules.size());  // [module][rank]
  auto wait_deps = [&](const std::vector<int>& waits, int r) {
    std::vector<OpId> deps;
    for (int w : waits) {
      if (w < 0 || static_cast<std::size_t>(w) >= plan.modules.size() || all_reduce[static_cast<std::size_t>(w)].empty())
        throw std::logic_error(fmt::format("decode plan: waits for module {}, which has no earlier all-reduce", w));
      deps.push_back(all_reduce[static_cast<std::size_t>(w)][static_cast<std::size_t>(r)]);
    }
    return deps;
  };

  Ps streaming_ps = 0;
  int issued = 0;
  for (std::size_t i = 0; i < plan.modules.size(); ++i) {
    const DecodeModule& m = plan.modules[i];
    const int layer = m.kind == DecodeModuleKind::parallel_block ? static_cast<int>(i) : static_cast<int>(i) / 2;
    Bytes bytes = 0;
    const char* what = "";
    switch (m.kind) {
      case DecodeModuleKind::attention: bytes = shapes.attention_weight_bytes, what = "attn"; break;
      case DecodeModuleKind::mlp: bytes = shapes.mlp_weight_bytes, what = "mlp"; break;
      case DecodeModuleKind::parallel_block:
        bytes = shapes.attention_weight_bytes + shapes.mlp_weight_bytes, what = "attn+mlp";
        break;
    }
    std::vector<OpId> module_op(static_cast<std::size_t>(ranks), kNoOp);
    if (!collectives_only) {
      streaming_ps += m.kind == DecodeModuleKind::attention ? times.tau_att_ps
                      : m.kind == DecodeModuleKind::mlp     ? times.tau_mlp_ps
                                                            : streaming_kernel_ps(ctx.hardware, bytes);
      for (int r = 0; r < ranks; ++r) {
        MemoryKernel k;
        k.name = fmt::format("L{}.{}", layer, what);
        k.bytes = bytes;
        k.deps = wait_deps(m.waits_for, r);
        module_op[static_cast<std::size_t>(r)] = b.add_memory(r, compute[static_cast<std::size_t>(r)], k);
      }
    }
    if (m.all_reduce) {
      CollectiveSpec spec;
      spec.name = fmt::format("L{}.{}.all_reduce", layer, what);
      spec.primitive = Primitive::all_reduce;
      spec.bytes = shapes.all_reduce_bytes;
      spec.streams = comm[static_cast<std::size_t>(issued % n_comm)];
      if (!collectives_only)
        for (int r = 0; r < ranks; ++r) spec.deps.push_back({module_op[static_cast<std::size_t>(r)]});
      // The blog's tau_c: a measured all-reduce latency when the workload gives one.
      if (dec.allreduce_us >= 0) spec.fixed_duration_ps = times.tau_c_ps;
      all_reduce[i] = b.add_collective(spec);
      ++issued;
    }
  }
  if (!collectives_only && !plan.final_waits.empty())
    for (int r = 0; r < ranks; ++r)
      b.add_delay(r, compute[static_cast<std::size_t>(r)], 0, "lm_head.wait", wait_deps(plan.final_waits, r));
  // Perfect overlap leaves weight streaming alone (the blog's zero exposed wait-time).
  return b.finish(plan.reason, collectives_only ? -1 : streaming_ps);
}

SchemeInfo decode_stack_scheme(std::string name, std::string source, std::string summary,
                               std::function<DecodePlan(const BuildContext&, int layers)> plan,
                               std::vector<SchemeParam> params) {
  return {.name = std::move(name),
          .source = std::move(source),
          .summary = std::move(summary),
          .params = std::move(params),
          .applies = [](const Workload& w) { return w.kind == WorkloadKind::decode_stack; },
          .build = [plan = std::move(plan)](const BuildContext& ctx) {
            return build_decode_stack(ctx, plan(ctx, std::get<DecodeStack>(ctx.workload.shape).layers));
          }};
}

}  // namespace overlap::sim
