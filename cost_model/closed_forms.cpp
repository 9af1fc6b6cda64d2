#include "cost_model/closed_forms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace overlap {
namespace {
Ps pos(Ps x) { return std::max<Ps>(0, x); }
}  // namespace

WeightStreamingTimes weight_streaming_times(int layers, std::int64_t d_model, int bytes_per_weight, int tp,
                                            double hbm_gbps, Ps tau_c_ps) {
  if (layers <= 0 || d_model <= 0 || bytes_per_weight <= 0 || tp <= 0 || !(hbm_gbps > 0)) {
    throw std::invalid_argument("weight_streaming_times: all inputs must be positive");
  }
  const double d2p = static_cast<double>(d_model) * static_cast<double>(d_model) * bytes_per_weight;
  const double bytes_per_ps = bytes_per_ps_from_gbps(hbm_gbps) * tp;
  WeightStreamingTimes t;
  t.layers = layers;
  t.tau_c_ps = tau_c_ps;
  t.tau_att_ps = checked_ps(std::round(4.0 * d2p / bytes_per_ps));
  t.tau_mlp_ps = checked_ps(std::round(8.0 * d2p / bytes_per_ps));
  return t;
}

Ps exposed_tp_baseline_ps(const WeightStreamingTimes& t) { return 2 * t.layers * t.tau_c_ps; }

Ps exposed_gptj_ps(const WeightStreamingTimes& t) { return t.layers * t.tau_c_ps; }

Ps exposed_pt_transformer_ps(const WeightStreamingTimes& t, int t_d) {
  if (t_d <= 0) throw std::invalid_argument("PT-Transformer: t_d must be positive");
  return checked_ps(std::round(static_cast<double>(t.layers) * static_cast<double>(t.tau_c_ps) / t_d));
}

Ps exposed_ladder_residual_ps(const WeightStreamingTimes& t) {
  return t.tau_c_ps + (t.layers - 1) * (pos(t.tau_c_ps - t.tau_att_ps) + pos(t.tau_c_ps - t.tau_mlp_ps));
}

Ps exposed_dtp_ps(const WeightStreamingTimes& t, int delta) {
  if (delta == 1) {
    return (t.layers - 1) * pos(t.tau_c_ps - t.tau_att_ps) + t.layers * pos(t.tau_c_ps - t.tau_mlp_ps);
  }
  if (delta >= 2 && delta % 2 == 0 && delta <= 2 * t.layers) {
    const int k = delta / 2;
    return (2 * t.layers - delta) * pos(t.tau_c_ps - k * (t.tau_mlp_ps + t.tau_att_ps));
  }
  throw std::invalid_argument("DTP: delta must be 1 or even and at most 2 N_L (delayed-tp-blog derives those)");
}

Ps no_overlap_ps(Ps compute_ps, Ps comm_ps) { return compute_ps + comm_ps; }

Ps flashoverlap_bound_ps(Ps gemm_ps, Ps comm_ps, Ps first_wave_gemm_ps, Ps last_wave_comm_ps) {
  return gemm_ps >= comm_ps ? gemm_ps + last_wave_comm_ps : first_wave_gemm_ps + comm_ps;
}

}  // namespace overlap
