#pragma once
// Effective bandwidth vs message size for one path and primitive (design.md "Fabric"): the time an
// isolated transfer of s bytes takes. Time is interpolated linearly in size between calibrated samples
// (exact at the samples and on any alpha-beta stretch; monotone between two samples whose times are
// ordered); beyond the
// samples it is extended with the asymptotic bandwidth beta of an alpha-beta fit (t = alpha + s/beta),
// shifted to pass through the nearest sample so the curve stays continuous.
#include <vector>

#include "cost_model/units.hpp"

namespace overlap {

struct CurvePoint {
  Bytes bytes = 0;
  Ps time_ps = 0;
};

struct AlphaBeta {
  double alpha_us = 0;     // latency term
  double beta_gbps = 0;    // asymptotic bandwidth
  Ps time_ps(Bytes bytes) const;
};

class BandwidthCurve {
 public:
  BandwidthCurve() = default;
  // Points need not be sorted; sizes must be positive and distinct, times positive.
  // Throws std::invalid_argument otherwise.
  explicit BandwidthCurve(std::vector<CurvePoint> points);
  static BandwidthCurve from_alpha_beta(double alpha_us, double beta_gbps);

  bool empty() const { return points_.empty() && !fit_only_; }
  // Time of an isolated transfer of `bytes` (> 0; 0 bytes take 0). Exact at sample points; between
  // samples time is interpolated linearly in size, so it is monotone wherever the samples are.
  Ps time_ps(Bytes bytes) const;
  double gbps(Bytes bytes) const;  // bytes / time_ps(bytes)
  const std::vector<CurvePoint>& points() const { return points_; }
  const AlphaBeta& fit() const { return fit_; }

 private:
  std::vector<CurvePoint> points_;  // sorted by bytes
  AlphaBeta fit_;
  bool fit_only_ = false;
};

// Least-squares alpha-beta fit (Eigen) of t(s) = alpha + s/beta over the points.
AlphaBeta fit_alpha_beta(const std::vector<CurvePoint>& points);

}  // namespace overlap
