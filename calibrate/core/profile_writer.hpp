#pragma once
// Derives a hardware profile (the YAML cost_model/profile_loader.cpp reads) from a calibration
// run's measurements, every measured field commented with the benchmark that set it. Nothing the
// run did not measure is written: a field left out keeps the loader's default (and the loader's
// README says what that is).
//
// Schema 2 (scenarios/hardware/README.md): `launch:`, `transports:`, curve keys by mechanism
// (`copy_engine.d2d`, `sm_copy.d2d`, ...), and `fabric.topology: virtual` for the single-GPU host.
//
// Which samples become profile data and which stay out for validation: transfer curves take every
// other size of the sweep (1 KiB, 4 KiB, 16 KiB, ...), so `overlap-sim validate` checks the curve's
// interpolation on the sizes in between; GEMM profiles take the whole-GPU durations, so the GEMM
// rows validate predictions on k SMs, beside copies and in the wave sweep.
#include <cstdint>
#include <string>
#include <vector>

#include "calibrate/core/measurement.hpp"

namespace overlap::calibrate {

// A curve point taken from a measurement: bytes and the median time.
struct CurvePointUs {
  std::int64_t bytes = 0;
  double time_us = 0;
};

struct ProfileOptions {
  int schema = 2;       // the only one the loader reads (1, with gpu.kernel_launch_us, is retired)
  std::string name;     // profile name ("" = "calibrated-" + environment.results_dir)
  // A virtual node (the scheme runner on one GPU): `virtual_ranks` ranks of environment.sm_count
  // SMs each, joined by `virtual_link` (d2d | host): fabric.topology virtual.
  int virtual_ranks = 0;
  std::string virtual_link = "d2d";
  // gpu.gemm_full_rate_sms from another measurement set (a virtual node's profile takes its
  // physical GPU's, fitted from the calibration's gemm_sm runs); 0 = fit from this set, if it can.
  double full_rate_sms = 0;
  std::string full_rate_source;
  // A virtual node staged through host memory (virtual_link host): the physical GPU's PCIe rate per
  // direction (its calibration's copy_engine.h2d / d2h), which every rank's pulls share; 0 = the
  // node's own largest pull stands in (what one pull, D2H then H2D, moves).
  double pcie_gbps = 0;
  std::string pcie_source;
  // A virtual node's rank-to-rank pull as its physical GPU times it alone (d2d: its copy_engine.d2d;
  // host: copy_engine.d2h then .h2d, summed per size), standing in for the node's own pulls where
  // those were timed with the host in the loop (transfer rows without derived.queued: about 13 us
  // for two ranks and 50 us for four, flat up to 16 MiB, against 7-18 us of copy). Empty: the
  // node's own.
  std::vector<CurvePointUs> physical_pull;
  std::string physical_pull_source;
  // A virtual node's memory kernels from the physical GPU's hbm_stream fit, when it measured the
  // streaming rate per SM (HbmFit::sm_gbps > 0): gpu.hbm_sm_gbps and gpu.hbm_latency_us. 0 = the
  // node's own read only (its rate, no ramp: without the per-SM cap one rank's ramp would hide
  // behind the others' streaming in the engine).
  double hbm_sm_gbps = 0;
  double hbm_latency_us = 0;
  std::string hbm_source;
};

// A memory-bound kernel's alpha-beta model from the hbm_stream runs on the whole GPU: the line
// through the smallest and the largest read (time = latency_us + bytes / gbps); the sizes between
// are left to validate. With one size (or a fit that would give a negative latency or rate) the
// largest read's rate and latency 0. ok = false without runs. And from the runs on k SMs (config
// `sms`): the smallest partition's rate per SM, bytes / (time - latency_us) / k, when that partition
// streams below 80 % of HBM's rate (SM-bound); the larger partitions are left to validate.
struct HbmFit {
  bool ok = false;
  double gbps = 0;
  double latency_us = 0;
  std::int64_t small_bytes = 0, large_bytes = 0;  // the two reads the line goes through
  double large_us = 0;                            // the largest read's median time
  double sm_gbps = 0;  // 0: no partition runs, or none SM-bound
  int sm_fit_sms = 0;  // the partition it came from
};
HbmFit fit_hbm_stream(const MeasurementSet& set);

// True for a transfer size the profile's curves are built from (even index in transfer_sizes()).
bool curve_sample_size(std::int64_t bytes);

// Points of one transfer path (config.path == path; for sm_copy, config.ctas == ctas), sorted by
// size, only the sizes curve_sample_size() accepts when `curve_samples_only`.
std::vector<CurvePointUs> transfer_points(const MeasurementSet& set, const std::string& path, int ctas,
                                          bool curve_samples_only);

// Median over the gemm_tile measurements of gemm_tile_us_from(); 0 when there are none.
double fitted_gemm_tile_us(const MeasurementSet& set, int sm_count);

// The CTA roofline (cost_model/gemm_roofline.hpp) fitted to whole-GPU GEMM durations: each
// bf16/fp16 gemm and gemm_tile run with m >= 64 (skinnier GEMMs stream their weights from HBM, a
// different limit) and the tile shape its algorithm used, predicted as
//   waves(tiles, S x ctas_per_sm) x gemm_cta_us(roofline, tile, k, 2 bytes, ctas_per_sm),
// minimising the sum of squared relative errors: overhead_us in closed form for each (tile_us,
// load_gbps) of a log-spaced grid, refined three times around the best. Deterministic. ok = false
// (nothing to write) with fewer than 6 such runs or fewer than 2 distinct tile shapes, which
// cannot tell the tensor-core rate from the load bandwidth.
struct RooflineFit {
  bool ok = false;
  double tile_us = 0, load_gbps = 0, overhead_us = 0;
  int rows = 0;
  double median_abs_error_pct = 0;  // over the fitted runs
};
RooflineFit fit_gemm_roofline(const MeasurementSet& set, int sm_count, int ctas_per_sm = 1);

// GEMM waves on `sms` SMs for a tile shape (one CTA per SM, as cuBLAS's big tiles run).
std::int64_t gemm_waves(std::int64_t m, std::int64_t n, int tile_m, int tile_n, int sms);

// gpu.gemm_full_rate_sms fitted from the gemm_sm runs (one GEMM confined to k SMs by a green
// context). Per shape, a wave's time (duration / ceil(tiles / k), one CTA per SM as cuBLAS's tiles
// run) on the two smallest partitions, t0 (their median, below S: uncontended), and the whole GPU's
// duration D, whose full waves keep R = min(sm_count, tiles) SMs busy and whose last wave holds the
// L tiles left: the S at which the engine's model (gemm_saturation_factor per wave) gives D from t0
// (S = R when D shows no contention). The median over shapes; ok = false without a shape measured
// on the whole GPU and on two partitions, and when S >= sm_count (nothing to model). Those rows
// (fit_sms per shape) are the fit's; validate scores the others.
// The SMs a gemm_sm row's GEMM could run on: config.sms, or fewer where the calibration found the
// partition hosting its thread-block clusters on fewer SMs (derived.cluster_sms_reached).
int gemm_sm_effective_sms(const Measurement& m);

struct FullRateFit {
  bool ok = false;
  double sms = 0;
  int shapes = 0;
  std::vector<int> fit_sms;  // the partition sizes the fit read (the two smallest)
};
FullRateFit fit_gemm_full_rate_sms(const MeasurementSet& set, int sm_count);
// What a virtual node's profile takes from its physical GPU's calibration in `dir`
// (measurements.json + environment.json): the memory kernels' per-SM rate and ramp where it measured
// the first (fit_hbm_stream), gemm_full_rate_sms (fit_gemm_full_rate_sms) and the PCIe
// rate per direction (the slower of copy_engine.h2d / d2h at their largest size) and, for
// o.virtual_link (set it first), the pull as the GPU times it alone (ProfileOptions::physical_pull),
// each with its source comment. Leaves `o` as it is where dir has no calibration or no such
// measurement.
void physical_gpu_options(const std::string& dir, ProfileOptions& o);

// gemm_comm_interference fitted from the interference_sm_copy runs: each run gives
//   c = (t_beside / (waves(S - k) * t_alone / waves(S) * sat) - 1) * S / k
// (the loader's model: a CTA runs 1 + c k / S times longer while k SMs run communication), where
// sat = max(F, S - k) / max(F, R) is the full-rate rescaling (F = full_rate_sms, 0 = none; R the
// SMs the GEMM alone kept busy); the median over runs, floored at 0. Returns a negative value when
// there are no runs.
double fitted_gemm_comm_interference(const MeasurementSet& set, int sm_count, double full_rate_sms = 0);

// The profile YAML text. Throws std::runtime_error when the environment lacks sm_count or the
// measurements lack what every profile needs (a GEMM rate: gemm_tile or gemm runs).
std::string write_profile_yaml(const MeasurementSet& set, const ProfileOptions& options = {});

struct VirtualNodeRecord;  // calibrate/core/scheme_config.hpp

// A virtual node's profile YAML, as the scheme runner writes it and `overlap-calibrate-profile
// --schemes` writes it again: the node's own measurements, its ranks and link, what its physical
// GPU's calibration in `physical_dir` (the results directory above schemes/) gives
// (physical_gpu_options), and the name "virtual-t<T>-<link>" unless `options` names it.
std::string write_virtual_node_profile_yaml(const VirtualNodeRecord& node, const std::string& physical_dir,
                                            ProfileOptions options = {});

}  // namespace overlap::calibrate
