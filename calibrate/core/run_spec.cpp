#include "calibrate/core/run_spec.hpp"

#include <stdexcept>

namespace overlap::calibrate {

sim::DecodePlan decode_plan_of(const std::string& scheme, int layers, int param) {
  if (scheme == "tp_baseline" || scheme == "no_overlap") return sim::tp_baseline_plan(layers);
  if (scheme == "gptj_parallel") return sim::gptj_parallel_plan(layers);
  if (scheme == "pt_transformer") return sim::pt_transformer_plan(layers, param);
  if (scheme == "ladder_residual") return sim::ladder_residual_plan(layers);
  if (scheme == "dtp") return sim::dtp_plan(layers, param);
  if (scheme == "no_comm") return sim::no_comm_plan(layers);
  throw std::invalid_argument("decode plan: unknown scheme '" + scheme + "'");
}

cuda::RunSpec run_spec_of(const SchemeRunConfig& c) {
  cuda::RunSpec s;
  s.scheme = c.scheme;
  s.ranks = c.ranks;
  if (c.kind == sim::WorkloadKind::gemm_collective) {
    s.kind = cuda::RunKind::gemm_collective;
    s.m = c.m;
    s.n = c.n;
    s.k = c.k;
    s.primitive = c.primitive;
    s.chunks = static_cast<int>(run_param(c, sim::knobs::kDataSlicingChunks));
    s.streams = static_cast<int>(run_param(c, sim::knobs::kAsyncTpStreams));
    s.slices_per_rank = static_cast<int>(run_param(c, sim::knobs::kCommFuseM));
    s.schedule = run_param(c, sim::knobs::kCommFuseSchedule);
    s.transport = c.params.value("transport", std::string());
    if (c.scheme == "flashoverlap") {
      s.groups = c.params.at("groups").get<std::vector<int>>();
      s.wave_sms = c.params.at("wave_sms").get<int>();
    }
    s.ctas_per_sm = run_ctas_per_sm(c.params);
    return s;
  }
  s.kind = cuda::RunKind::decode_stack;
  s.layers = c.layers;
  s.d_model = c.d_model;
  s.d_ffn = c.d_ffn;
  s.heads = c.heads;
  s.kv_heads = c.kv_heads;
  // pt_transformer's t_d or dtp's delta, the table's default when not given (as the simulator takes it).
  const std::int64_t param = c.scheme == "pt_transformer" ? run_param(c, sim::knobs::kPtTransformerTd)
                             : c.scheme == "dtp"          ? run_param(c, sim::knobs::kDtpDelta)
                                                          : 0;
  s.plan = decode_plan_of(c.scheme, c.layers, static_cast<int>(param));
  return s;
}

}  // namespace overlap::calibrate
