#pragma once
// Closed-form latency models the simulator is checked against.
//
// Decode under weight streaming (delayed-tp-blog, "Theoretical Exposed Wait-time"): batch-1 decode is
// memory-bound; weights stream continuously from HBM and the exposed wait-time is the all-reduce
// time (tau_c) that weight streaming cannot hide. A layer has two modules (attention, MLP), so 2 N_L
// modules; streaming one takes tau_att = 4 d^2 p / (v_b L) and tau_mlp = 8 d^2 p / (v_b L).
//
// FlashOverlap (flashoverlap-paper Sec. 6.4): the theoretical latency of perfect overlap.
#include "cost_model/units.hpp"

namespace overlap {

struct WeightStreamingTimes {
  int layers = 0;     // N_L
  Ps tau_c_ps = 0;    // all-reduce latency
  Ps tau_att_ps = 0;  // streaming one attention module's weights
  Ps tau_mlp_ps = 0;  // streaming one MLP module's weights
};

// tau_att and tau_mlp from the model width d, bytes per weight p, TP degree L and HBM bandwidth v_b
// (the blog's formulas; the MI300X case uses tau_c = 0.7 us, v_b = 4 TB/s, p = 1 B).
WeightStreamingTimes weight_streaming_times(int layers, std::int64_t d_model, int bytes_per_weight, int tp,
                                            double hbm_gbps, Ps tau_c_ps);

Ps exposed_tp_baseline_ps(const WeightStreamingTimes& t);  // Delta_B = 2 N_L tau_c
Ps exposed_gptj_ps(const WeightStreamingTimes& t);         // Delta_J = N_L tau_c
// PT-Transformer keeps 1 of every t_d MLP all-reduces and none for attention: N_L tau_c / t_d
// (the blog prints N_L tau_c, its t_d = 1 case; the text says "1 out of t_d ... kept"). Rounded to ps.
Ps exposed_pt_transformer_ps(const WeightStreamingTimes& t, int t_d);
// Delta_LR = tau_c + (N_L - 1) (max(0, tau_c - tau_att) + max(0, tau_c - tau_mlp))
Ps exposed_ladder_residual_ps(const WeightStreamingTimes& t);
// delta = 1: (N_L - 1) max(0, tau_c - tau_att) + N_L max(0, tau_c - tau_mlp)
// delta = 2k: (2 N_L - delta) max(0, tau_c - k (tau_mlp + tau_att))
// The blog derives only delta = 1 and even delta; other delta throw std::invalid_argument.
Ps exposed_dtp_ps(const WeightStreamingTimes& t, int delta);

// Sequential GEMM then communication.
Ps no_overlap_ps(Ps compute_ps, Ps comm_ps);
// flashoverlap-paper Sec. 6.4: if the GEMM takes longer, GEMM + the last wave's communication; else
// the first wave's GEMM + the whole communication.
Ps flashoverlap_bound_ps(Ps gemm_ps, Ps comm_ps, Ps first_wave_gemm_ps, Ps last_wave_comm_ps);

}  // namespace overlap
